#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What 1,000 slow clients cost a normal client (the target: at most
10% of its throughput).

    slow_clients.py --build DIR [--port P] [--duration S] [--slow N] [--runs R]

Starts baton-httpd (hello handler, one worker, pinned to CPU 1) and measures
keep-alive throughput with ``wrk -t1 -c100`` pinned to CPU 0, alternately
without and with N connections that each sent half a request head and then
stall (the server must hold them until its header deadline, 10 s, longer
than a run). Prints JSON lines (docs/bench-format.md): suite ``http``, impl
``baton-c``, metric ``req_per_s`` with params {"slow_clients": 0 or N}, and
metric ``slow_clients_ratio`` (the with/without ratio of the medians).
Bounded in time; the server's process group is always stopped.
"""

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time

# The runner (tools/baton_bench/httpbench.py): server handling and parsers.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from baton_bench import httpbench as run_http  # noqa: E402


def open_slow(port, n):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: slow\r\nX-Slow: ")
        socks.append(s)
    return socks


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--port", type=int, default=18460)
    p.add_argument("--duration", type=int, default=3)
    p.add_argument("--slow", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    httpd = None
    for d in run_http.HTTPD_DIRS:
        cand = os.path.join(args.build, d, "baton-httpd")
        if os.access(cand, os.X_OK):
            httpd = os.path.abspath(cand)  # the server runs in a temporary directory
            break
    if httpd is None:
        print(json.dumps({"suite": "http", "impl": "baton-c", "metric": "slow_clients_ratio",
                          "value": None, "status": "missing", "error": "baton-httpd not built"}))
        return 0
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    with tempfile.TemporaryDirectory() as tmp:
        server = run_http.Server([httpd, "--port", str(args.port), "--address", "127.0.0.1",
                                  "--workers", "1", "--handler", "hello"],
                                 dict(os.environ), tmp, pin=True)
        try:
            server.wait_ready(args.port, 10)
            url = f"http://127.0.0.1:{args.port}/"
            wrk = ["taskset", "-c", run_http.CLIENT_CPU, "wrk", "-t1", "-c100",
                   f"-d{args.duration}s", "--latency", url]
            samples = {0: [], args.slow: []}
            for _ in range(args.runs):
                for n in (0, args.slow):
                    socks = open_slow(args.port, n) if n else []
                    try:
                        time.sleep(0.2)
                        samples[n].append(run_http.run_load(wrk, run_http.parse_wrk,
                                                            args.duration)[0])
                        server.check_alive()
                    finally:
                        for s in socks:
                            s.close()
                    time.sleep(0.3)
        finally:
            server.stop()
    med = {n: statistics.median(v) for n, v in samples.items()}
    for n, v in samples.items():
        print(json.dumps(run_http.line("baton-c", "req_per_s", "req/s", {"slow_clients": n}, v)))
    print(json.dumps({"suite": "http", "impl": "baton-c", "peer": False,
                      "metric": "slow_clients_ratio", "unit": "ratio",
                      "value": med[args.slow] / med[0], "params": {"slow_clients": args.slow},
                      "runs": args.runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
