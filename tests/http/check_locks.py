#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A keep-alive request on the I/O path takes no lock that another worker
takes: no gate (or stage) enter or leave, no pool acquire or release, no
mutex.

Run by CTest (test `http_keepalive_locks`):
    check_locks.py BATON_HTTPD [--requests N] [--max-per-request X]

Starts baton-httpd (hello handler, two workers) under valgrind's callgrind,
which counts every call, and serves keep-alive requests over a few
connections twice: N/6 and then N more. The calls of each shared-lock
function per request are the difference between the two dumps over the
difference in requests; the acceptor's and the sweeper's calls, which
come with time and not with requests, are left out. Fails naming each function called more
than --max-per-request times per request (default 0.02). Standard library
and valgrind only; bounded in time (every wait has a timeout). The check
shows it can fail first: its parser must count a known call file right.
"""
import argparse
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

# The calls that take a lock every worker may take: a gate's, a stage's or
# a pool's spinlock, a mutex (the server's connection list, reclamation
# domains...).
SHARED = ("baton_gate_enter", "baton_gate_leave", "baton_stage_enter",
          "baton_stage_leave", "baton_pool_acquire", "baton_pool_release",
          "pthread_mutex_lock")
NAMED = re.compile(r"^c?fn=\((\d+)\)(?: (.*))?$")


# Callers whose calls are timed, not per request: the acceptor waits for a
# connection unit and an accept 200 ms at a time, the sweeper ticks.
TIMED_CALLERS = ("acceptor", "sweeper", "open_listener", "start_sweeper")


def calls_by_function(path):
    """{function name: calls made to it, but by TIMED_CALLERS} from a
    callgrind output file."""
    names, counts, caller, callee = {}, {}, None, None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = NAMED.match(line)
            if m:
                ident, name = m.group(1), m.group(2)
                if name:
                    names[ident] = name.split("@")[0]  # pthread_mutex_lock@@GLIBC_2.2.5
                if line.startswith("cfn="):
                    callee = names.get(ident)
                else:
                    caller, callee = names.get(ident), None
                continue
            if line.startswith("calls=") and callee is not None:
                if caller not in TIMED_CALLERS:
                    counts[callee] = counts.get(callee, 0) + int(line[6:].split()[0])
                callee = None
    return counts


def self_test():
    sample = ("fn=(1) main\ncfn=(2) baton_stage_enter@@V1\ncalls=3 0\n0 5\n"
              "cfn=(2)\ncalls=4 0\n0 5\nfn=(3) other\ncfn=(2)\ncalls=1 0\n0 1\n"
              "fn=(4) acceptor\ncfn=(2)\ncalls=9 0\n0 1\n")
    with tempfile.NamedTemporaryFile("w", suffix=".out", delete=False) as f:
        f.write(sample)
    try:
        got = calls_by_function(f.name)
    finally:
        os.unlink(f.name)
    assert got == {"baton_stage_enter": 8}, f"self-test: parser counted {got}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(port, n, conns=4, deadline=120.0):
    """n keep-alive requests over `conns` connections, each answered."""
    req = b"GET / HTTP/1.1\r\nHost: locks\r\n\r\n"
    end = time.monotonic() + deadline
    socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(conns)]
    try:
        for i in range(n):
            s = socks[i % conns]
            s.sendall(req)
            got = b""
            while b"Hello, World!\n" not in got:
                if time.monotonic() > end:
                    raise SystemExit(f"check_locks: no answer within {deadline:.0f} s")
                chunk = s.recv(4096)
                if not chunk:
                    raise SystemExit("check_locks: the server closed a keep-alive connection")
                got += chunk
    finally:
        for s in socks:
            s.close()


def dump(pid, tmp, tag):
    """Have callgrind write its counts so far; the file it wrote."""
    before = set(os.listdir(tmp))
    subprocess.run(["callgrind_control", "--dump=" + tag, str(pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    for _ in range(600):
        new = [f for f in set(os.listdir(tmp)) - before if f.startswith("callgrind.out")]
        if new:
            time.sleep(0.5)  # let it finish writing
            return os.path.join(tmp, sorted(new)[-1])
        time.sleep(0.1)
    raise SystemExit("check_locks: callgrind wrote no dump within 60 s")


@contextlib.contextmanager
def callgrind_httpd(httpd, workers, who):
    """baton-httpd (hello handler, `workers` workers, epoll) under
    callgrind, listening; yields a function that dumps the counts since the
    last dump under a tag and returns calls_by_function's map of them (its
    `port` attribute is the server's port). The server is stopped on the
    way out, whatever happened."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/callgrind.out.%p",
             os.path.abspath(httpd), "--port", str(port), "--address", "127.0.0.1",
             "--workers", str(workers), "--handler", "hello"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp,
            # valgrind does not follow io_uring's shared rings; what is
            # counted is the server's, the same on either backend.
            env=dict(os.environ, BATON_IO_BACKEND="epoll"))
        try:
            for _ in range(600):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                raise SystemExit(f"{who}: the server did not listen within 60 s")

            def dump_counts(tag):
                return calls_by_function(dump(server.pid, tmp, tag))
            dump_counts.port = port
            yield dump_counts
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("httpd")
    p.add_argument("--requests", type=int, default=1200)
    p.add_argument("--max-per-request", type=float, default=0.02)
    args = p.parse_args()
    self_test()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("check_locks: valgrind not installed: skipped")
        return 77
    with callgrind_httpd(args.httpd, 2, "check_locks") as dump_counts:
        first = args.requests // 6
        serve(dump_counts.port, first)
        a = dump_counts("a")
        serve(dump_counts.port, args.requests)
        b = dump_counts("b")
    # Each dump holds the counts since the one before it (callgrind zeroes
    # them at a dump): b covers the N requests alone, a the first N/6
    # with start-up. Per request: b over N.
    bad = []
    for name in SHARED:
        per = b.get(name, 0) / args.requests
        print(f"check_locks: {name}: {per:.4f} calls per keep-alive request "
              f"({b.get(name, 0)} in {args.requests}; {a.get(name, 0)} at start-up "
              f"and the first {first})")
        if per > args.max_per_request:
            bad.append(name)
    if bad:
        print(f"check_locks: called on the keep-alive path: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
