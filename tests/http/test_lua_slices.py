# SPDX-License-Identifier: MIT
"""Lua handlers run in slices: each request's handler is a coroutine of its
worker's Lua state, yielded back to baton every --lua-slice VM
instructions, so a cheap route keeps its latency beside long computations
on the same compute worker and the same state. The handler is
tests/http/handlers/tasks.lua.

Bounds are generous (a busy 2-core machine); bench/http's lua_slices entry
measures the p99 beside nginx+Lua."""
import http.client
import os
import subprocess
import threading

from test_handlers import HANDLERS, Server, stopped_cleanly, timed_get
from test_httpd import TIMEOUT

TASKS = os.path.join(HANDLERS, "tasks.lua")


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


def test_cheap_route_keeps_its_latency_beside_long_ones(httpd, tmp_path):
    """--workers 1 --compute-workers 1: four clients keep /long (0.5 s of
    computing each) going while one client asks /cheap 50 times; /cheap's
    p99 stays far below a slice of 0.5 s (one handler that held its worker
    would make it wait up to 2 s)."""
    srv = Server(httpd, str(tmp_path), ["lua", TASKS],
                 ["--workers", "1", "--compute-workers", "1"])
    try:
        stop = threading.Event()
        long_status = []

        def long_client():
            while not stop.is_set():
                long_status.append(timed_get(srv.port, "/long?ms=500")[0])
        clients = [threading.Thread(target=long_client) for _ in range(4)]
        for c in clients:
            c.start()
        try:
            lat = []
            timed_get(srv.port, "/long?ms=1")  # the long ones are under way
            for _ in range(50):
                status, _, body, took = timed_get(srv.port, "/cheap")
                assert status == 200 and body == b"cheap\n"
                lat.append(took)
        finally:
            stop.set()
            for c in clients:
                c.join(TIMEOUT)
        assert long_status and set(long_status) == {200}
        print("cheap p99 %.2f ms" % (p99(lat) * 1000))
        assert p99(lat) < 0.1, f"/cheap p99 {p99(lat) * 1000:.1f} ms beside long handlers"
    finally:
        stopped_cleanly(srv)


def test_request_fields_survive_other_requests_slices(httpd, tmp_path):
    """Requests whose handlers read request.headers only after many slices,
    while the other requests' slices ran on the same state, each see their
    own headers; a small --lua-slice makes the slices many."""
    srv = Server(httpd, str(tmp_path), ["lua", TASKS],
                 ["--workers", "1", "--lua-slice", "50us"])
    try:
        results = {}

        def one(i):
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=TIMEOUT)
            c.request("GET", "/late-header?ms=30", headers={"X-Id": "req-%d" % i})
            r = c.getresponse()
            results[i] = (r.status, r.read())
            c.close()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
        assert results == {i: (200, b"req-%d" % i) for i in range(6)}
    finally:
        stopped_cleanly(srv)


def test_wait_where_lua_cannot_yield_is_an_error(httpd, tmp_path):
    """baton.sleep inside table.sort's comparator (a C call) cannot yield:
    the request gets a 500 with one log line, and the server goes on."""
    srv = Server(httpd, str(tmp_path), ["lua", TASKS], ["--workers", "1"])
    try:
        since = len(srv.log())
        assert timed_get(srv.port, "/sleep-in-sort")[0] == 500
        lines = srv.wait_log("cannot wait inside a C call", since)
        assert any("cannot wait inside a C call" in line for line in lines), lines
        assert timed_get(srv.port, "/cheap")[0] == 200
    finally:
        stopped_cleanly(srv)


def test_bad_lua_slice_is_refused(httpd):
    for bad in ("0", "-1", "x"):
        proc = subprocess.run([httpd, "--port", "0", "--lua-slice", bad,
                               "--handler", "lua", TASKS],
                              capture_output=True, timeout=TIMEOUT)
        assert proc.returncode == 2 and b"--lua-slice" in proc.stderr
