#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A keep-alive request allocates nothing: no malloc, calloc, realloc or
free per request, with many connections busy at once.

Run by CTest (test `http_keepalive_allocs`):
    check_allocs.py BATON_HTTPD [--requests N] [--connections C] [--max-per-request X]

Starts baton-httpd (hello handler, one worker) under valgrind's callgrind
and drives C keep-alive connections in lock step: a request on every one,
then every answer, again and again, so that the worker serves many
connections in each turn and a connection's next request is often there
before it parks (the case that used to hold its three buffers across the
yield between requests: more of them than the worker's cache keeps, freed
and allocated again every request). The calls per request are those of
the second of two runs (callgrind zeroes its counts at each dump), the
acceptor's and the sweeper's left out (tests/http/check_locks.py, whose
parser this shares). Fails naming each function called more than
--max-per-request times per request (default 0.02). Standard library and
valgrind only; bounded in time.
"""
import argparse
import os
import shutil
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_locks import callgrind_httpd, self_test  # noqa: E402

ALLOC = ("malloc", "calloc", "realloc", "free")


def serve(socks, n, deadline=300.0):
    """n keep-alive requests over the connections `socks` in lock step."""
    req = b"GET / HTTP/1.1\r\nHost: allocs\r\n\r\n"
    end = time.monotonic() + deadline
    done = 0
    while done < n:
        batch = socks[:min(len(socks), n - done)]
        for s in batch:
            s.sendall(req)
        for s in batch:
            got = b""
            while b"Hello, World!\n" not in got:
                if time.monotonic() > end:
                    raise SystemExit(f"check_allocs: no answer within {deadline:.0f} s")
                chunk = s.recv(4096)
                if not chunk:
                    raise SystemExit("check_allocs: the server closed a keep-alive connection")
                got += chunk
        done += len(batch)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("httpd")
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--max-per-request", type=float, default=0.02)
    args = p.parse_args()
    self_test()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("check_allocs: valgrind not installed: skipped")
        return 77
    # The path allocates the same on either backend (epoll, as check_locks).
    with callgrind_httpd(args.httpd, 1, "check_allocs") as dump_counts:
        # The first run opens the connections (a record and a handle
        # each) and fills the caches; the second reuses them.
        socks = [socket.create_connection(("127.0.0.1", dump_counts.port), timeout=60)
                 for _ in range(args.connections)]
        try:
            serve(socks, args.requests // 3)
            dump_counts("a")
            serve(socks, args.requests)
            b = dump_counts("b")
        finally:
            for s in socks:
                s.close()
    bad = []
    for name in ALLOC:
        per = b.get(name, 0) / args.requests
        print(f"check_allocs: {name}: {per:.4f} calls per keep-alive request "
              f"({b.get(name, 0)} in {args.requests}, {args.connections} connections)")
        if per > args.max_per_request:
            bad.append(name)
    if bad:
        print(f"check_allocs: called on the keep-alive path: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
