# SPDX-License-Identifier: MIT
"""Timers and threads of Lua handlers (docs/httpd.md, Lua): baton.after and
baton.every run later, in a task of their own, after the request that set
them was answered; a timer costs a small record and no connection slot
(10,000 pending: the server's RSS grows by less than 1 KiB each and every
request is still served with --max-connections 20); past --lua-max-timers
baton.after returns nil and a clear error; SIGHUP cancels the old
handler's timers and SIGTERM the current one's (the server then exits at
once, 0); baton.spawn threads and baton.wait_any return the first to end,
and the loser and orphans are cancelled.

The handler is tests/http/handlers/timers.lua. Bounds are generous; every
socket and wait has a timeout."""
import json
import os
import signal
import time

from limitlib import get, rss_kib, sanitized
from test_handlers import HANDLERS, Server, stopped_cleanly
from test_httpd import _free_port

TIMERS = os.path.join(HANDLERS, "timers.lua")


def body(port, path):
    status, _, data = get(port, path)
    return status, data.split(b"\r\n\r\n", 1)[1].decode()


def wait_for(fn, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(0.02)


def start(httpd, tmp_path, *extra):
    return Server(httpd, str(tmp_path), ["lua", TIMERS], extra)


def test_after_and_every(httpd, tmp_path):
    srv = start(httpd, tmp_path, "--workers", "1")
    try:
        t0 = time.monotonic()
        assert body(srv.port, "/after?ms=100&what=a") == (200, "set\n")
        assert body(srv.port, "/fired")[1] == "\n"  # not yet
        assert wait_for(lambda: body(srv.port, "/fired")[1] == "a\n")
        assert time.monotonic() - t0 >= 0.1
        assert body(srv.port, "/every?ms=20")[0] == 200
        assert wait_for(lambda: int(body(srv.port, "/ticks")[1]) >= 5)
        assert body(srv.port, "/stop")[1] == "true\n"
        n = int(body(srv.port, "/ticks")[1])
        time.sleep(0.2)
        assert int(body(srv.port, "/ticks")[1]) == n  # no tick after the cancel
        since = len(srv.log())
        assert body(srv.port, "/timer-error")[0] == 200
        lines = srv.wait_log("timer boom", since)
        assert any("lua timer" in line and "timer boom" in line for line in lines), lines
    finally:
        stopped_cleanly(srv)


def test_pending_timers_cost_no_slots_and_little_memory(httpd, tmp_path):
    """10,000 pending timers: RSS per timer < 1 KiB, no connection slot
    held (the admin listener's /_stats shows the connections pool as
    before), requests served beside them with a cap of 20 connections;
    the 1,025th over the default bound is refused with a clear error."""
    admin = _free_port()
    srv = start(httpd, tmp_path, "--workers", "1", "--max-connections", "20",
                "--lua-max-timers", "20000", "--admin", "127.0.0.1:%d" % admin)
    try:
        assert body(srv.port, "/many?n=100")[0] == 200  # warm the state up
        before = rss_kib(srv.proc.pid)
        status, text = body(srv.port, "/many?n=10000")
        assert (status, text) == (200, "10100\n")
        after = rss_kib(srv.proc.pid)
        per = (after - before) * 1024 / 10000
        print("10,000 pending timers: %.0f bytes each of RSS (target < 1024)" % per)
        if not sanitized(httpd):  # (ASan's redzones and quarantine)
            assert per < 1024
        stats = json.loads(body(admin, "/_stats")[1])
        conns = [p for p in stats["pools"] if p["name"] == "connections"][0]
        assert conns["in_use"] <= 1, conns  # ours, at most
        for _ in range(50):  # 2.5 times the connection cap
            assert get(srv.port, "/")[0] == 200
        assert body(srv.port, "/drop")[1] == "10100\n"
    finally:
        stopped_cleanly(srv)
    srv = start(httpd, tmp_path, "--workers", "1")
    try:
        status, text = body(srv.port, "/many?n=1025")
        assert (status, text) == (503, "1025: too many pending timers (at most 1024)\n")
    finally:
        stopped_cleanly(srv)


def test_reload_and_shutdown_cancel_timers(httpd, tmp_path):
    """SIGHUP: the old handler's every-timer stops ticking (its lines stop
    in the log). SIGTERM with 10,000 timers a minute away: exit 0 at once."""
    srv = start(httpd, tmp_path, "--workers", "1")
    try:
        assert body(srv.port, "/every?ms=20&say=old")[0] == 200
        assert wait_for(lambda: srv.log().count("tick old") >= 3)
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: "reloaded" in srv.log())
        n = srv.log().count("tick old")
        time.sleep(0.3)
        assert srv.log().count("tick old") <= n + 1  # one may have begun
        assert body(srv.port, "/many?n=1000")[1] == "1000\n"
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        srv.proc.wait(timeout=10)
        print("SIGTERM with 1,000 pending timers: exit %d after %.2f s"
              % (srv.proc.returncode, time.monotonic() - t0))
        assert time.monotonic() - t0 < 2.0
        assert srv.proc.returncode == 0, srv.log()
    finally:
        stopped_cleanly(srv)


def test_threads_and_wait_any(httpd, tmp_path):
    srv = start(httpd, tmp_path, "--workers", "1", "--compute-workers", "1")
    try:
        status, took, data = get(srv.port, "/race?ms=20")
        assert status == 200, data
        assert data.endswith(b"fast true true true\n"), data
        assert took < 2.0  # not the 5 s loser
        t0 = time.monotonic()
        assert body(srv.port, "/orphan") == (200, "left\n")
        assert time.monotonic() - t0 < 2.0
    finally:
        # The orphan (30 s asleep) and the loser were cancelled: the drain
        # ends at once.
        t0 = time.monotonic()
        stopped_cleanly(srv)
        assert time.monotonic() - t0 < 5.0
