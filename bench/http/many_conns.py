#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Keep-alive throughput with 10,000 connections against 100, for
baton-httpd on both reactor backends beside nginx (the issue's target:
within 20% of the 100-connection throughput, with bounded memory).

    many_conns.py --build DIR [--impls baton-c,nginx] [--port P] [--duration S]
                  [--runs R] [--many N] [--no-rss]

Each server - baton-httpd (hello handler, one worker) with ``--io epoll``
and with ``--io io_uring``, nginx with one worker and the same constant
answer (``--impl nginx`` alone: the old form) - is pinned to CPU 1 and
started afresh in every round, the rounds alternating the servers
(connlib.rounds).  In each: ``wrk -t1 -c100`` for S seconds, then
``wrk -t1 -cN`` (N = --many, 10000) for --many-duration seconds (default
S), pinned to CPU 0; the 100-connection load is also the server's warm-up.
wrk opens its N connections inside the timed run, in one burst from
127.0.0.1 (the listen queues overflow and connects are retried), so that
run needs longer than the 100-connection one.  A round that fails (wrk
completed no request, say) is named in ``failed_rounds`` and on standard
error, the exit status is 1, and the other rounds still count.  Unless ``--no-rss`` (the suite's
idle_conns.py measures that at 15,000), before the loads it opens N idle
keep-alive connections that each made one request and reads the server's
RSS before and after: the difference over N is the cost of an idle
connection.  The soft descriptor limit is raised to the hard one first
(the server and wrk inherit it).

Prints JSON lines (docs/bench-format.md), medians over the rounds: suite
``http``, impl ``baton-c`` (params ``backend``) or ``nginx``, ``req_per_s``
with params {"connections": 100 or N}, ``many_conns_ratio`` (N over 100,
the median of each round's ratio) and ``rss_bytes_per_conn``.  Bounded in
time; the server is always stopped.
"""

import argparse
import os
import signal
import sys
import time

import connlib
from connlib import run_http


def wrk_rate(port, connections, seconds):
    argv = ["taskset", "-c", run_http.CLIENT_CPU, run_http.find_tool("wrk"), "-t1",
            f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "--latency",
            f"http://127.0.0.1:{port}/"]
    return run_http.run_load(argv, run_http.parse_wrk, seconds)[0]


def measure_one(server, args, tmp):
    """One round: ``(req/s at 100, req/s at N, rss per idle conn or None)``."""
    proc = connlib.start(server, args.port, tmp, args.build, max_conns=2 * args.many + 100)
    try:
        per_conn = None
        if args.rss:
            pid = proc.proc.pid
            base = connlib.rss_bytes(pid)
            idle = connlib.open_idle(args.port, args.many, time.monotonic() + 20 + args.many / 1000)
            time.sleep(0.5)
            per_conn = (connlib.rss_bytes(pid) - base) / args.many
            connlib.close_all(idle)
            time.sleep(0.5)
        rates = []
        for n, seconds in ((100, args.duration), (args.many, args.many_duration)):
            rates.append(wrk_rate(args.port, n, seconds))
            proc.check_alive()
            time.sleep(0.5)
    finally:
        proc.stop()
    return rates[0], rates[1], per_conn


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--impl", choices=("baton-c", "nginx"),
                   help="one server only (the old form of --impls)")
    p.add_argument("--impls", default="baton-c,nginx",
                   help="comma-separated: baton-c (both backends), nginx")
    p.add_argument("--port", type=int, default=18465)
    p.add_argument("--duration", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--many", type=int, default=10000)
    p.add_argument("--many-duration", type=int, default=0, metavar="S",
                   help="seconds of the N-connection load (default: --duration); wrk "
                        "opens its N connections inside them")
    p.add_argument("--no-rss", dest="rss", action="store_false",
                   help="skip the idle-connection memory (idle_conns.py measures it)")
    p.add_argument("--limit", type=int, default=0, metavar="S",
                   help="seconds for the whole run (the driver's timeout less room); "
                        "at the limit the servers are stopped and the rounds so far reported")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    args.many_duration = args.many_duration or args.duration
    os.sched_setaffinity(0, {int(run_http.CLIENT_CPU)})   # our idle clients: CPU 0
    hard = connlib.raise_nofile()
    servers = connlib.servers([args.impl] if args.impl else args.impls.split(","))
    todo = []
    for server in servers:
        reason = (connlib.missing_reason(server, args.build)
                  or (None if run_http.find_tool("wrk") else "wrk missing")
                  or (None if hard >= args.many + connlib.RESERVE_FDS else
                      f"the descriptor hard limit ({hard}) is below "
                      f"{args.many + connlib.RESERVE_FDS}"))
        if reason:
            connlib.emit(connlib.line(server, "many_conns_ratio", "ratio",
                                      {"connections": args.many}, status="missing",
                                      error=reason))
        else:
            todo.append(server)
    per_run = 15 + args.duration + args.many_duration + 62 + (30 + args.many / 1000 if args.rss else 0)
    connlib.bound(min(per_run * args.runs * max(1, len(todo)) + 30, args.limit or 1 << 30))
    results, failures, interrupted = connlib.run_rounds(
        todo, args.runs, lambda server, tmp: measure_one(server, args, tmp),
        "many_conns.py", "baton-many-", 0.5, keep_going=True)
    signal.alarm(0)
    status = 1 if interrupted else 0
    for server in todo:
        runs = results[str(server)]
        if str(server) in failures:
            status = 1
        if not runs:
            connlib.emit(connlib.line(server, "many_conns_ratio", "ratio",
                                      {"connections": args.many}, status="failed",
                                      error=failures.get(str(server))))
            continue
        connlib.emit(connlib.line(server, "req_per_s", "req/s", {"connections": 100},
                                  [r[0] for r in runs]))
        connlib.emit(connlib.line(server, "req_per_s", "req/s", {"connections": args.many},
                                  [r[1] for r in runs]))
        ratio = connlib.line(server, "many_conns_ratio", "ratio",
                             {"connections": args.many}, [r[1] / r[0] for r in runs])
        if str(server) in failures:
            ratio["failed_rounds"] = failures[str(server)]
        connlib.emit(ratio)
        if args.rss:
            connlib.emit(connlib.line(server, "rss_bytes_per_conn", "bytes",
                                      {"connections": args.many, "state": "idle keep-alive"},
                                      [r[2] for r in runs]))
    return status


if __name__ == "__main__":
    sys.exit(main())
