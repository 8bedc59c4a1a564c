# SPDX-License-Identifier: MIT
"""Compute workers all used: with --compute-workers 2, handlers that
compute (never wait) run on both compute workers at once, so two slow
requests finish in about the time of one and /_stats shows a handler task
started on each. The handler is tests/http/handlers/tasks.lua's /long.

The bound is generous (a busy 2-core machine shares its cores with the
client and other work); bench/http's compute_workers entry measures it."""
import json
import os
import threading
import time

from test_handlers import HANDLERS, Server, stopped_cleanly, timed_get
from test_httpd import TIMEOUT, _free_port

TASKS = os.path.join(HANDLERS, "tasks.lua")


def test_two_slow_requests_run_on_two_compute_workers(httpd, tmp_path):
    admin_port = _free_port()
    srv = Server(httpd, str(tmp_path), ["lua", TASKS],
                 ["--workers", "1", "--compute-workers", "2",
                  "--admin", "127.0.0.1:%d" % admin_port])
    try:
        results = []
        lock = threading.Lock()

        def one():
            r = timed_get(srv.port, "/long?ms=500")
            with lock:
                results.append(r)
        t0 = time.monotonic()
        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
        took = time.monotonic() - t0
        assert [r[0] for r in results] == [200, 200]
        assert all(r[2].startswith(b"long ") for r in results)
        # One after the other (one compute worker used) would take 1 s.
        assert took < 0.9, f"two 0.5 s requests took {took:.3f} s on two compute workers"
        doc = json.loads(timed_get(admin_port, "/_stats")[2])
        stage = doc["stages"][2]
        assert stage["name"] == "handle"
        assert stage["runners_started"] >= 2
    finally:
        stopped_cleanly(srv)
