# SPDX-License-Identifier: MIT
"""A Scheme handler's limits (docs/httpd.md, Limits): an endless handler is
stopped, not only answered for. CHICKEN's timer interrupt reaches the
host's hook (scheme_host.scm) every 10,000 procedure calls; past the
request's deadline, its CPU budget or its memory budget the hook leaves the
handler by an escape continuation, past the handler's own exception
handlers. So the client gets its 504 (or 500) within --handler-timeout, the
runtime and the compute worker are free a moment later (no CPU spent), a
second such request is answered the same way, and SIGTERM ends the server
within the drain timeout.

The handler is tests/http/handlers/endless.scm, compiled and interpreted.
Bounds are generous (twice the targets, which bench/http prints)."""
import os
import signal
import threading
import time

import pytest

from limitlib import get, idle_after
from test_handlers import HANDLERS, Server, stopped_cleanly

ENDLESS = os.path.join(HANDLERS, "endless.scm")

TIMEOUT_MS = 500
LATE_S = 1.0  # how late a 504 may be on a loaded machine (target: 100 ms)
IDLE_CPU_S = 0.3  # CPU a second may cost after a stop (a loop left running: 1.0)
MODES = {"compiled": [], "eval": ["--scheme-eval"]}
SHAPES = {"io": ["--workers", "1"],
          "compute": ["--workers", "1", "--compute-workers", "1"]}


def start(httpd, tmp_path, *extra):
    try:
        return Server(httpd, str(tmp_path), ["scheme", ENDLESS], extra)
    except RuntimeError as err:
        if "built without the scheme handler" in str(err):
            pytest.skip("baton-httpd built without Scheme")
        raise


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
def test_endless_handler_is_stopped(httpd, tmp_path, mode, shape):
    srv = start(httpd, tmp_path, *SHAPES[shape], *MODES[mode],
                "--handler-timeout", str(TIMEOUT_MS), "--drain-timeout", "3000")
    try:
        for route in ("/spin", "/stubborn", "/spin"):
            status, took, _ = get(srv.port, route)
            print("%s: %d after %.0f ms (target <= %d ms)" % (route, status, took * 1000,
                                                             TIMEOUT_MS + 100))
            assert status == 504
            assert TIMEOUT_MS / 1000 - 0.05 <= took <= TIMEOUT_MS / 1000 + LATE_S
            spent = idle_after(srv.proc.pid, 1.0)
            print("CPU spent in the second after: %.2f s" % spent)
            assert spent < IDLE_CPU_S, "the handler was answered for, not stopped"
            status, took, _ = get(srv.port, "/")
            assert status == 200 and took < LATE_S
        # Nothing left running: SIGTERM drains at once, exit 0.
        t0 = time.monotonic()
        stopped_cleanly(srv)
        assert time.monotonic() - t0 < 3.0 + 1.0
    finally:
        srv.stop()


def test_sigterm_while_looping_exits_within_the_drain(httpd, tmp_path):
    """SIGTERM while an endless handler loops: the drain waits for it,
    its deadline stops it, and the server exits by itself (0) within the
    drain timeout."""
    drain_ms = 2000
    srv = start(httpd, tmp_path, "--workers", "1", "--compute-workers", "1",
                "--handler-timeout", "1000", "--drain-timeout", str(drain_ms))
    answer = []

    def client():  # reads its answer and closes, as a client does
        answer.append(get(srv.port, "/spin")[0])
    t = threading.Thread(target=client)
    try:
        t.start()
        time.sleep(0.3)  # looping now
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        srv.proc.wait(timeout=drain_ms / 1000 + 5)
        took = time.monotonic() - t0
        print("exit %d after %.2f s (drain %d ms)" % (srv.proc.returncode, took, drain_ms))
        assert took <= drain_ms / 1000 + 1.0
        assert srv.proc.returncode == 0, srv.log()
        t.join(10)
        assert answer == [504]
    finally:
        t.join(10)
        srv.stop()


@pytest.mark.parametrize("shape", SHAPES)
def test_cpu_and_memory_budgets(httpd, tmp_path, shape):
    """--handler-cpu: 504 with a line naming the budget; --handler-memory
    (what the heap grew by during the call, after a full collection): 500;
    the runtime serves the next request either way."""
    srv = start(httpd, tmp_path, *SHAPES[shape], "--handler-cpu", "300",
                "--handler-memory", "32M")
    try:
        since = len(srv.log())
        status, took, _ = get(srv.port, "/spin")
        assert status == 504 and 0.25 <= took <= 0.3 + LATE_S
        lines = srv.wait_log("CPU budget", since)
        assert any("its CPU budget (300 ms) is used up" in line for line in lines), lines
        assert idle_after(srv.proc.pid, 0.5) < IDLE_CPU_S
        since = len(srv.log())
        status, _, _ = get(srv.port, "/hog")
        lines = srv.wait_log("budget", since)
        # The compiled loop allocates faster than it computes: memory
        # first; either budget stops it.
        assert status in (500, 504), lines
        assert any("memory budget (33554432 bytes)" in line or "CPU budget" in line
                   for line in lines), lines
        assert get(srv.port, "/")[0] == 200
    finally:
        stopped_cleanly(srv)


def test_route_limits_apply_to_scheme(httpd, tmp_path):
    srv = start(httpd, tmp_path, "--workers", "1", "--handler-cpu", "0",
                "--route-limits", "/spin", "cpu=200")
    try:
        status, took, _ = get(srv.port, "/spin")
        assert status == 504 and took <= 0.2 + LATE_S
    finally:
        stopped_cleanly(srv)
