#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Keep-alive throughput with 10,000 connections against 100, and the
memory a connection costs (the issue's target: within 20% of the
100-connection throughput, with bounded memory).

    many_conns.py --build DIR [--impl baton-c|nginx] [--port P] [--duration S]
                  [--runs R] [--many N]

Starts baton-httpd (hello handler, one worker, pinned to CPU 1), or nginx
with one worker and the same constant answer (--impl nginx: the peer at the
same two connection counts), and runs
``wrk -t1 -c100`` and ``wrk -t1 -cN`` (N = --many, 10000) pinned to CPU 0,
alternately. Before the loads it opens N idle keep-alive connections that
each made one request, and reads the server's RSS before and after: the
difference over N is the cost of an idle connection. Prints JSON lines
(docs/bench-format.md): suite ``http``, impl ``baton-c`` or ``nginx``, ``req_per_s`` with
params {"connections": 100 or N}, ``many_conns_ratio`` (N over 100) and
``rss_bytes_per_conn``. Bounded in time; the server is always stopped.
"""

import argparse
import json
import os
import resource
import socket
import statistics
import sys
import tempfile
import time

# The runner (tools/baton_bench/httpbench.py): server handling and parsers.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from baton_bench import httpbench as run_http  # noqa: E402


def rss_bytes(pid):
    """The resident memory of the server: the process and its children
    (nginx answers from worker processes under its master)."""
    total = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return total
    return total + sum(rss_bytes(c) for c in children)


def open_idle(port, n):
    """n connections, each after one complete request and its response."""
    socks = []
    req = b"GET / HTTP/1.1\r\nHost: idle\r\n\r\n"
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(req)
        socks.append(s)
    for s in socks:
        got = b""
        while b"Hello, World!\n" not in got:
            chunk = s.recv(4096)
            if not chunk:
                raise run_http.Failed("an idle connection was closed")
            got += chunk
    return socks


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < want:
        raise run_http.Missing(f"the descriptor limit ({hard}) is below {want}")
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--impl", choices=("baton-c", "nginx"), default="baton-c")
    p.add_argument("--port", type=int, default=18465)
    p.add_argument("--duration", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--many", type=int, default=10000)
    args = p.parse_args()
    httpd = next((os.path.abspath(c) for c in (os.path.join(args.build, d, "baton-httpd")
                              for d in run_http.HTTPD_DIRS) if os.access(c, os.X_OK)), None)
    wrk = run_http.find_tool("wrk")
    missing = ("wrk missing" if wrk is None else
               "baton-httpd not built" if args.impl == "baton-c" and httpd is None else
               "nginx not installed" if args.impl == "nginx" and not run_http.find_tool("nginx")
               else None)
    if missing:
        print(json.dumps({"suite": "http", "impl": args.impl, "metric": "many_conns_ratio",
                          "value": None, "status": "missing", "error": missing}))
        return 0
    raise_fd_limit(args.many + 1000)  # each process: ours, the server, wrk
    with tempfile.TemporaryDirectory() as tmp:
        if args.impl == "nginx":
            argv, env = run_http.server_command(argparse.Namespace(
                impl="nginx", cores=1, port=args.port, build=args.build,
                src=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                httpd=None), tmp)
        else:
            argv, env = [httpd, "--port", str(args.port), "--address", "127.0.0.1",
                         "--workers", "1", "--handler", "hello",
                         "--max-connections", str(2 * args.many + 100)], None
        server = run_http.Server(argv, env if env is not None else dict(os.environ), tmp,
                                 pin=True)
        try:
            server.wait_ready(args.port, 10)
            base = rss_bytes(server.proc.pid)
            idle = open_idle(args.port, args.many)
            time.sleep(0.5)
            per_conn = (rss_bytes(server.proc.pid) - base) / args.many
            for s in idle:
                s.close()
            time.sleep(1.0)
            url = f"http://127.0.0.1:{args.port}/"
            samples = {100: [], args.many: []}
            for _ in range(args.runs):
                for n in (100, args.many):
                    argv = ["taskset", "-c", run_http.CLIENT_CPU, wrk, "-t1", f"-c{n}",
                            f"-d{args.duration}s", "--timeout", "10s", "--latency", url]
                    samples[n].append(run_http.run_load(argv, run_http.parse_wrk,
                                                        args.duration)[0])
                    server.check_alive()
                    time.sleep(1.0)
        finally:
            server.stop()
    med = {n: statistics.median(v) for n, v in samples.items()}
    for n, v in samples.items():
        print(json.dumps(run_http.line(args.impl, "req_per_s", "req/s", {"connections": n}, v)))
    print(json.dumps(run_http.line(args.impl, "many_conns_ratio", "ratio",
                                   {"connections": args.many}, [med[args.many] / med[100]])))
    print(json.dumps(run_http.line(args.impl, "rss_bytes_per_conn", "bytes",
                                   {"connections": args.many, "state": "idle keep-alive"},
                                   [per_conn])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
