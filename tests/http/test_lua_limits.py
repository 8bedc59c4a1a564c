# SPDX-License-Identifier: MIT
"""A Lua handler's limits (docs/httpd.md, Limits): the request's deadline
(--handler-timeout), its CPU budget (--handler-cpu) and its memory budget
(--handler-memory), per route (--route-limits); and --lua-slice as a time.

The handler is tests/http/handlers/limits.lua: loops that never end (plain,
in a sort comparator, in a coroutine of its own, behind pcall), one that
allocates without bound. A stopped handler must be stopped, not only
answered for: the server spends no CPU on it afterwards, the next request
of the same state is served, and SIGTERM ends the server by itself (exit
0: nothing left running). Bounds are generous (twice the targets, which
bench/http prints); every socket and wait has a timeout."""
import os
import subprocess

import pytest

from limitlib import get, idle_after, rss_kib, sanitized
from test_handlers import HANDLERS, Server, stopped_cleanly
from test_httpd import TIMEOUT

LIMITS = os.path.join(HANDLERS, "limits.lua")

SHAPES = {"io": ["--workers", "1"],
          "compute": ["--workers", "1", "--compute-workers", "1"]}

TIMEOUT_MS = 500
LATE_S = 1.0  # how late a 504 may be on a loaded machine (target: 100 ms)
IDLE_CPU_S = 0.3  # CPU a second may cost after a stop (a loop left running: 1.0)


def start(httpd, tmp_path, *extra):
    return Server(httpd, str(tmp_path), ["lua", LIMITS], extra)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("route", ["/spin", "/spin-in-sort", "/spin-in-coroutine", "/stubborn"])
def test_endless_loops_are_stopped_at_the_deadline(httpd, tmp_path, shape, route):
    srv = start(httpd, tmp_path, *SHAPES[shape], "--handler-timeout", str(TIMEOUT_MS))
    try:
        for _ in range(2):  # and a second one the same way: nothing was left behind
            status, took, _ = get(srv.port, route)
            print("%s: %d after %.0f ms (target <= %d ms)" % (route, status, took * 1000,
                                                             TIMEOUT_MS + 100))
            assert status == 504
            assert TIMEOUT_MS / 1000 - 0.05 <= took <= TIMEOUT_MS / 1000 + LATE_S
            spent = idle_after(srv.proc.pid, 1.0)
            print("CPU spent in the second after: %.2f s" % spent)
            assert spent < IDLE_CPU_S, "the handler was answered for, not stopped"
            assert get(srv.port, "/")[0] == 200
    finally:
        stopped_cleanly(srv)


@pytest.mark.parametrize("shape", SHAPES)
def test_cpu_budget(httpd, tmp_path, shape):
    """Past --handler-cpu the handler is stopped and the request gets 504,
    as past --handler-timeout; waiting is not computing; a route may have
    a budget of its own."""
    srv = start(httpd, tmp_path, *SHAPES[shape], "--handler-cpu", "300",
                "--route-limits", "/compute", "cpu=2000")
    try:
        since = len(srv.log())
        status, took, _ = get(srv.port, "/spin")
        print("/spin: %d after %.0f ms (budget 300 ms)" % (status, took * 1000))
        assert status == 504
        assert 0.25 <= took <= 0.3 + LATE_S
        lines = srv.wait_log("CPU budget", since)
        assert any("its CPU budget (300 ms) is used up" in line for line in lines), lines
        assert idle_after(srv.proc.pid, 0.5) < IDLE_CPU_S
        # /compute computes 500 ms within its route's 2 s.
        status, _, data = get(srv.port, "/compute?ms=500")
        assert status == 200 and data.endswith(b"\n")
    finally:
        stopped_cleanly(srv)


def test_memory_budget(httpd, tmp_path):
    """An allocation over --handler-memory fails: the handler gets "not
    enough memory", the client a 500 with one log line, the state serves
    the next request; a route's own budget; and what the runaways held
    goes back: the server's RSS after 100 of them is within 10% of what it
    was after the first few. (The I/O-worker shape: the compute workers'
    handler tasks leave freed stacks dirty in baton's stack pools, up to
    their bound, which is not the handler's memory.)"""
    srv = start(httpd, tmp_path, "--workers", "1", "--handler-memory", "4M",
                "--route-limits", "/some", "memory=512k")
    try:
        since = len(srv.log())
        status, _, _ = get(srv.port, "/hog")
        assert status == 500
        lines = srv.wait_log("memory budget", since)
        assert sum("memory budget (4194304 bytes) is used up" in line for line in lines) == 1
        assert get(srv.port, "/")[0] == 200
        assert get(srv.port, "/some")[0] == 500  # 1 MB over its route's 512 KiB
        for _ in range(20):
            assert get(srv.port, "/hog")[0] == 500
        before = rss_kib(srv.proc.pid)
        for _ in range(100):
            assert get(srv.port, "/hog")[0] == 500
        after = rss_kib(srv.proc.pid)
        print("RSS %d KiB after 20 runaways, %d KiB after 100 more (%.1f%%, target <= 10%%)"
              % (before, after, (after - before) * 100.0 / before))
        if not sanitized(httpd):  # (ASan's quarantine keeps what was freed)
            assert after <= before * 1.10 + 256
        assert get(srv.port, "/")[0] == 200
    finally:
        stopped_cleanly(srv)


def test_stream_stopped_at_the_deadline(httpd, tmp_path):
    """A generator that loops is stopped too: the head and the first piece
    went out, then the connection closes without the last chunk."""
    srv = start(httpd, tmp_path, "--workers", "1", "--handler-timeout", str(TIMEOUT_MS))
    try:
        status, took, data = get(srv.port, "/stream-spin")
        assert status == 200
        assert data.split(b"\r\n\r\n", 1)[1] == b"6\r\nfirst\n\r\n"
        assert took <= TIMEOUT_MS / 1000 + LATE_S
        assert idle_after(srv.proc.pid, 0.5) < IDLE_CPU_S
        assert get(srv.port, "/")[0] == 200
    finally:
        stopped_cleanly(srv)


def test_sigterm_drains_after_stops(httpd, tmp_path):
    """Endless handlers stopped at their deadline leave nothing running:
    SIGTERM then ends the server within the drain timeout, exit 0."""
    srv = start(httpd, tmp_path, "--workers", "1", "--compute-workers", "1",
                "--handler-timeout", str(TIMEOUT_MS), "--drain-timeout", "2000")
    try:
        assert get(srv.port, "/spin")[0] == 504
        assert get(srv.port, "/stubborn")[0] == 504
    finally:
        stopped_cleanly(srv)


@pytest.mark.parametrize("value", ["1", "0.5", "250us", "2ms", "off", "1000"])
def test_lua_slice_is_a_time(httpd, tmp_path, value):
    srv = start(httpd, tmp_path, "--workers", "1", "--lua-slice", value)
    try:
        assert get(srv.port, "/")[0] == 200
        assert get(srv.port, "/compute?ms=20")[0] == 200
    finally:
        stopped_cleanly(srv)


def test_old_lua_slice_is_refused_with_a_word(httpd):
    proc = subprocess.run([httpd, "--port", "0", "--lua-slice", "10000", "--handler", "lua",
                           LIMITS], capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 2
    assert b"no longer a count of VM instructions" in proc.stderr, proc.stderr
    for bad in ("5us", "2s", "1x", "-1"):
        proc = subprocess.run([httpd, "--port", "0", "--lua-slice", bad, "--handler", "lua",
                               LIMITS], capture_output=True, timeout=TIMEOUT)
        assert proc.returncode == 2 and b"--lua-slice wants a time" in proc.stderr, bad


@pytest.mark.parametrize("args, text", [
    (["--handler-cpu", "x"], b"--handler-cpu wants a time"),
    (["--handler-memory", "12Q"], b"--handler-memory wants a size"),
    (["--route-limits", "api", "cpu=1"], b"--route-limits wants a path prefix"),
    (["--route-limits", "/api", "disk=1"], b"is not cpu=TIME or memory=BYTES"),
    (["--route-limits", "/api"], b"'--handler' is not cpu=TIME or memory=BYTES"),
])
def test_bad_limits_are_refused(httpd, args, text):
    proc = subprocess.run([httpd, "--port", "0", *args, "--handler", "lua", LIMITS],
                          capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 2 and text in proc.stderr, proc.stderr
