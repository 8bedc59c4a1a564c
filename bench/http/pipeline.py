#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pipelined keep-alive throughput: baton-httpd on both reactor backends
beside nginx and h2o, each on one core.

    pipeline.py --build DIR [--impls baton-c,nginx,h2o] [--pipeline D]
                [--connections C] [--duration S] [--warmup S] [--runs R]
                [--port P]

Each server (one worker; baton-httpd with ``--io epoll`` and with
``--io io_uring``) is pinned to CPU 1 and started afresh in every round,
the rounds alternating the servers (connlib.rounds).  In each: a warm-up of
``--warmup`` seconds, then ``wrk -t1 -cC -dSs -s bench/http/pipeline.lua
URL -- D`` pinned to CPU 0: every connection sends D requests in one write
and waits for their D answers (C = 100, D = 16).  Prints JSON lines
(docs/bench-format.md), medians over the rounds: ``req_per_s`` and
``p99_ms`` (of a batch) with params {"connections": C, "pipeline": D} and
``backend`` for baton.  Bounded in time; the server is always stopped.
"""

import argparse
import os
import signal
import sys

import connlib
from connlib import run_http

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pipeline.lua")


def load(args, seconds):
    argv = ["taskset", "-c", run_http.CLIENT_CPU, run_http.find_tool("wrk"), "-t1",
            f"-c{args.connections}", f"-d{seconds}s", "--timeout", "10s", "--latency",
            "-s", SCRIPT, f"http://127.0.0.1:{args.port}/", "--", str(args.pipeline)]
    return run_http.run_load(argv, run_http.parse_wrk, seconds)


def measure_one(server, args, tmp):
    """One round: ``(req/s, p99 ms)``."""
    proc = connlib.start(server, args.port, tmp, args.build,
                         max_conns=args.connections + 100)
    try:
        if args.warmup:
            load(args, args.warmup)
            proc.check_alive()
        rate, _, p99 = load(args, args.duration)
        proc.check_alive()
    finally:
        proc.stop()
    return rate, p99


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--src", help="unused; accepted like the other scripts")
    p.add_argument("--impls", default="baton-c,nginx,h2o",
                   help="comma-separated: baton-c (both backends), nginx, h2o")
    p.add_argument("--pipeline", type=int, default=16)
    p.add_argument("--connections", type=int, default=100)
    p.add_argument("--duration", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--port", type=int, default=18467)
    p.add_argument("--limit", type=int, default=0, metavar="S",
                   help="seconds for the whole run (the driver's timeout less room); "
                        "at the limit the servers are stopped and the rounds so far reported")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    connlib.raise_nofile()
    params = {"connections": args.connections, "pipeline": args.pipeline}
    todo = []
    for server in connlib.servers(args.impls.split(",")):
        reason = (connlib.missing_reason(server, args.build)
                  or (None if run_http.find_tool("wrk") else "wrk missing"))
        if reason:
            connlib.emit(connlib.line(server, "req_per_s", "req/s", params,
                                      status="missing", error=reason))
        else:
            todo.append(server)
    per_run = 15 + args.warmup + args.duration + 2 * 30
    connlib.bound(min(per_run * args.runs * max(1, len(todo)) + 30, args.limit or 1 << 30))
    results, failures, interrupted = connlib.run_rounds(
        todo, args.runs, lambda server, tmp: measure_one(server, args, tmp),
        "pipeline.py", "baton-pipe-", 0.3)
    signal.alarm(0)
    status = 1 if interrupted else 0
    for server in todo:
        runs = results[str(server)]
        if str(server) in failures:
            status = 1
        if not runs:
            connlib.emit(connlib.line(server, "req_per_s", "req/s", params,
                                      status="failed", error=failures.get(str(server))))
            continue
        connlib.emit(connlib.line(server, "req_per_s", "req/s", params, [r[0] for r in runs]))
        # wrk records a latency per batch; now and then it prints a p99 of
        # 0.00us (seen once here with 296k req/s): impossible, so left out.
        p99 = [r[1] for r in runs if r[1] > 0]
        tail = connlib.line(server, "p99_ms", "ms", params, p99 or None,
                            status="ok" if p99 else "failed",
                            error=None if p99 else "wrk reported a p99 of 0 in every round")
        if len(p99) < len(runs):
            tail["left_out"] = f"{len(runs) - len(p99)} round(s) where wrk reported a p99 of 0"
        connlib.emit(tail)
    return status


if __name__ == "__main__":
    sys.exit(main())
