#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Memory per idle keep-alive connection, and whether every idle connection
still answers, for baton-httpd on both reactor backends beside nginx.

    idle_conns.py --build DIR [--connections N] [--want M] [--runs R]
                  [--load S] [--impls baton-c,nginx] [--port P]

For each server (baton-httpd ``--io epoll`` and ``--io io_uring``, nginx:
one worker each, pinned to CPU 1), in rounds that alternate them: start it,
read its RSS, open N connections that each make one request and get the
answer, wait half a second, read the RSS again - the difference over N is
the cost of an idle keep-alive connection - then (``--load S``) serve
``wrk -t1 -c100`` for S seconds (pinned to CPU 0) while they are held, then
send a second request on every idle connection and count the answers, and
stop the server.  Prints JSON lines (docs/bench-format.md), the median over
the rounds per server: ``rss_bytes_per_conn`` (bytes; params ``connections``,
``backend`` for baton), ``idle_answered`` (how many of the N answered the
second request: a shortfall is a line with ``"status": "failed"`` and the
counts, and exit status 1), ``idle_unanswered`` (closed or silent: 0 when
all is well), with ``--load`` ``req_per_s`` (params
``connections: 100``, ``idle: N``).

The descriptor limit: this process raises its soft RLIMIT_NOFILE to the
hard one, which the servers inherit.  One server process holds every
connection, and this client holds the other end of each, so N is at most
the hard limit less 1000 descriptors of room.  ``--want M`` (FULL=1 asks for
1,000,000) measures at min(M, that); when M is more, a line with
``"status": "missing"`` at ``connections: M`` says it is not reachable here
and why.  More than 25,000 connections would take their source addresses
from 127.0.0.2, .3, ... (64K ports per address); below the limit here one
address is enough.

Bounded in time (an alarm over the whole run); the server is always stopped.
"""

import argparse
import os
import signal
import sys
import time

import connlib
from connlib import run_http


def measure_one(server, args, n, tmp):
    """One round for one server: ``(rss per conn, answered, closed,
    silent, req/s or None)``."""
    proc = connlib.start(server, args.port, tmp, args.build, max_conns=n + 200)
    try:
        pid = proc.proc.pid
        base = connlib.rss_bytes(pid)
        socks = connlib.open_idle(args.port, n, time.monotonic() + 20 + n / 1000)
        try:
            time.sleep(0.5)
            proc.check_alive()
            per_conn = (connlib.rss_bytes(pid) - base) / n
            rate = None
            if args.load:
                argv = ["taskset", "-c", run_http.CLIENT_CPU, run_http.find_tool("wrk"),
                        "-t1", "-c100", f"-d{args.load}s", "--timeout", "10s", "--latency",
                        f"http://127.0.0.1:{args.port}/"]
                rate = run_http.run_load(argv, run_http.parse_wrk, args.load)[0]
                proc.check_alive()
            answered, closed, silent = connlib.still_answering(socks, time.monotonic() + 20)
            proc.check_alive()
        finally:
            connlib.close_all(socks)
    finally:
        proc.stop()
    return per_conn, answered, closed, silent, rate


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--src", help="unused; accepted like the other scripts")
    p.add_argument("--impls", default="baton-c,nginx",
                   help="comma-separated: baton-c (both backends), nginx")
    p.add_argument("--connections", type=int, default=15000)
    p.add_argument("--want", type=int, default=0,
                   help="idle connections wanted; measured at most the limit allows")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--load", type=int, default=0, metavar="S",
                   help="seconds of wrk -c100 while the idle connections are held")
    p.add_argument("--port", type=int, default=18466)
    p.add_argument("--limit", type=int, default=0, metavar="S",
                   help="seconds for the whole run (the driver's timeout less room); "
                        "at the limit the servers are stopped and the rounds so far reported")
    args = p.parse_args()
    args.build = os.path.abspath(args.build)
    os.sched_setaffinity(0, {int(run_http.CLIENT_CPU)})   # the idle clients: CPU 0
    hard = connlib.raise_nofile()
    allowed = hard - connlib.RESERVE_FDS
    wanted = max(args.connections, args.want)
    n = min(wanted, allowed)
    servers = connlib.servers(args.impls.split(","))
    todo = []
    for server in servers:
        reason = connlib.missing_reason(server, args.build)
        if reason:
            connlib.emit(connlib.line(server, "rss_bytes_per_conn", "bytes",
                                      {"connections": wanted}, status="missing", error=reason))
        else:
            todo.append(server)
    if args.load and not run_http.find_tool("wrk"):
        args.load = 0
        print("idle_conns.py: wrk missing: no load through the idle connections",
              file=sys.stderr)
    if wanted > n:
        why = (f"{wanted} idle connections are not reachable here: the descriptor hard "
               f"limit is {hard} per process and one server process (baton-httpd, one "
               f"nginx worker) holds every connection, so measured at {n}")
        print(f"idle_conns.py: note: {why}", file=sys.stderr)
        for server in todo:
            connlib.emit(connlib.line(server, "rss_bytes_per_conn", "bytes",
                                      {"connections": wanted, "state": "idle keep-alive"},
                                      status="missing", error=why,
                                      reachable=n, fd_hard_limit=hard))
    if n < 1:
        print(f"idle_conns.py: descriptor limit {hard}: no room for connections",
              file=sys.stderr)
        return 1
    per_run = 15 + n / 1000 + 2 * (n / 2000 + 10) + args.load + 30
    connlib.bound(min(per_run * args.runs * max(1, len(todo)) + 30, args.limit or 1 << 30))
    results, failures, interrupted = connlib.run_rounds(
        todo, args.runs, lambda server, tmp: measure_one(server, args, n, tmp),
        "idle_conns.py", "baton-idle-", 0.5)
    signal.alarm(0)
    status = 1 if interrupted else 0
    params = {"connections": n, "state": "idle keep-alive"}
    for server in todo:
        runs = results[str(server)]
        failure = failures.get(str(server))
        if not runs:
            connlib.emit(connlib.line(server, "rss_bytes_per_conn", "bytes", params,
                                      status="failed", error=failure))
            status = 1
            continue
        connlib.emit(connlib.line(server, "rss_bytes_per_conn", "bytes", params,
                                  [r[0] for r in runs]))
        answered = connlib.line(server, "idle_answered", "connections",
                                {"connections": n, "request": "second"},
                                [float(r[1]) for r in runs])
        short = [(i + 1, r) for i, r in enumerate(runs) if r[1] != n]
        if short:
            answered["status"] = "failed"
            answered["error"] = "; ".join(
                f"round {i}: {a} of {n} idle connections answered a second request, "
                f"{c} closed, {s} silent" for i, (_, a, c, s, _) in short)
            print(f"idle_conns.py: {server}: {answered['error']}", file=sys.stderr)
            status = 1
        connlib.emit(answered)
        # The shortfall as a count of its own: the report rounds 15000 to
        # "15k", but shows 0 as 0.
        connlib.emit(connlib.line(server, "idle_unanswered", "connections",
                                  {"connections": n, "request": "second"},
                                  [float(r[2] + r[3]) for r in runs] or None))
        if args.load:
            connlib.emit(connlib.line(server, "req_per_s", "req/s",
                                      {"connections": 100, "idle": n},
                                      [r[4] for r in runs if r[4] is not None]))
        if failure:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
