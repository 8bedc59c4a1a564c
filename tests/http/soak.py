#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A soak of baton-httpd: two workers under mixed load for a given time,
then checks that nothing was lost or leaked.

    python3 tests/http/soak.py --httpd build/native/baton-httpd --seconds 600
    make soak-http MINUTES=10       (the same, on the release build)

The time is split between three servers, one per handler kind: C (the
built-in hello), Lua and Scheme (tests/http/handlers/echo.lua and echo.scm).
Against each, client threads run until the deadline:

  keepalive   sequential GETs on one connection (a new one now and then)
  pipelined   three requests in one write, three responses read
  post        a POST with a body the handler echoes the length of
  slow        a request sent a few bytes at a time
  malformed   garbage: the answer must be a 400, the server must go on
  reset       half a request, then a reset (SO_LINGER 0)

Checks, per server: it never crashed; every well-formed request got its
full, correct response; its open descriptors after the load and a pause
equal those before it; its RSS after the load is within a bound of the RSS
after a warm-up load (allocator caches and the workers' buffer caches fill
once, so idle RSS at start is not the baseline; not checked under
AddressSanitizer, whose quarantine holds freed memory, but LeakSanitizer
reports at exit fail the soak); SIGTERM with idle
keep-alive connections open ends it with status 0 within 5 s. One JSON
object with the figures per server is printed; exit status 0 if every
check passed, 1 otherwise.

Standard library only (pytest runs a 60 s form: tests/http/test_soak.py).
"""

import argparse
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
HANDLERS = {
    "c": [],
    "lua": ["--handler", "lua", os.path.join(HERE, "handlers", "echo.lua")],
    "scheme": ["--handler", "scheme", os.path.join(HERE, "handlers", "echo.scm")],
}
IO_TIMEOUT = 10.0          # a response slower than this is a failure
RSS_SLACK_KIB = 16 * 1024  # RSS may grow this much past the warm baseline...
RSS_SLACK_RATIO = 1.25     # ...or by this factor, whichever is larger
STOP_TIMEOUT = 5.0
SETTLE = 2.5               # lingering closes (2 s) end, idle buffers go back


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def read_response(sock: socket.socket, buf: bytearray) -> tuple[int, bytes]:
    """One response from sock (bytes past it stay in buf): (status, body)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response head")
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed inside a response body")
        rest += chunk
    del buf[:]
    buf += rest[length:]
    return status, rest[:length]


class Tally:
    """Counts shared by the client threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent = 0
        self.answered = 0
        self.errors: dict[str, int] = {}
        self.first_errors: list[str] = []

    def ok(self, n: int = 1) -> None:
        with self.lock:
            self.sent += n
            self.answered += n

    def fail(self, kind: str, what: str, n: int = 1) -> None:
        with self.lock:
            self.sent += n
            self.errors[kind] = self.errors.get(kind, 0) + 1
            if len(self.first_errors) < 5:
                self.first_errors.append(f"{kind}: {what}")

    def other(self, kind: str) -> None:
        """A request that is not well-formed on purpose (not counted sent)."""
        with self.lock:
            self.errors[kind] = self.errors.get(kind, 0)


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def expect_ok(kind: str, status: int, body: bytes) -> str:
    if status != 200:
        return f"status {status}"
    if kind in ("c",) and not body.startswith(b"Hello"):
        return f"body {body[:40]!r}"
    return ""


def get(handler: str, path: str = "/echo") -> bytes:
    target = "/" if handler == "c" else path
    return f"GET {target} HTTP/1.1\r\nHost: soak\r\n\r\n".encode()


def sessions(port: int, deadline: float, t: Tally, kind: str, per_conn: int,
             step: Callable[[socket.socket, bytearray], None]) -> None:
    """Connections one after another until the deadline, each running
    `step` up to per_conn times; a socket error counts against `kind`."""
    while time.monotonic() < deadline:
        try:
            with connect(port) as s:
                buf = bytearray()
                for _ in range(random.randint(1, per_conn)):
                    if time.monotonic() >= deadline:
                        break
                    step(s, buf)
        except OSError as e:
            t.fail(kind, repr(e))


def answered(t: Tally, kind: str, handler: str, status: int, body: bytes) -> None:
    why = expect_ok(handler, status, body)
    if why:
        t.fail(kind, why)
    else:
        t.ok()


def client_keepalive(port: int, handler: str, deadline: float, t: Tally) -> None:
    def step(s: socket.socket, buf: bytearray) -> None:
        s.sendall(get(handler))
        answered(t, "keepalive", handler, *read_response(s, buf))

    sessions(port, deadline, t, "keepalive", 200, step)


def client_pipelined(port: int, handler: str, deadline: float, t: Tally) -> None:
    def step(s: socket.socket, buf: bytearray) -> None:
        s.sendall(get(handler) * 3)
        for _ in range(3):
            answered(t, "pipelined", handler, *read_response(s, buf))

    sessions(port, deadline, t, "pipelined", 50, step)


def client_post(port: int, handler: str, deadline: float, t: Tally) -> None:
    target = "/" if handler == "c" else "/body"

    def step(s: socket.socket, buf: bytearray) -> None:
        n = random.randint(0, 20000)
        s.sendall(f"POST {target} HTTP/1.1\r\nHost: soak\r\nContent-Length: {n}"
                  f"\r\n\r\n".encode() + b"x" * n)
        status, _ = read_response(s, buf)
        if status != 200:
            t.fail("post", f"status {status}")
        else:
            t.ok()

    sessions(port, deadline, t, "post", 50, step)


def client_slow(port: int, handler: str, deadline: float, t: Tally) -> None:
    while time.monotonic() < deadline:
        try:
            with connect(port) as s:
                req = get(handler)
                for i in range(0, len(req), 5):
                    s.sendall(req[i:i + 5])
                    time.sleep(0.01)
                status, body = read_response(s, bytearray())
                why = expect_ok(handler, status, body)
                if why:
                    t.fail("slow", why)
                else:
                    t.ok()
        except OSError as e:
            t.fail("slow", repr(e))


GARBAGE = [
    b"NOT HTTP AT ALL\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
]


def client_malformed(port: int, handler: str, deadline: float, t: Tally) -> None:
    while time.monotonic() < deadline:
        try:
            with connect(port) as s:
                s.sendall(random.choice(GARBAGE))
                status, _ = read_response(s, bytearray())
                with t.lock:
                    key = "malformed_answered_400" if status == 400 else f"malformed_{status}"
                    t.errors[key] = t.errors.get(key, 0) + 1
                if status != 400:
                    t.fail("malformed", f"status {status}", n=0)
        except OSError as e:
            t.fail("malformed", repr(e), n=0)
        time.sleep(0.005)


def client_reset(port: int, handler: str, deadline: float, t: Tally) -> None:
    while time.monotonic() < deadline:
        try:
            s = connect(port)
            s.sendall(b"GET / HTTP/1.1\r\nHost: so")
            time.sleep(random.random() * 0.01)
            # SO_LINGER 0: close sends a reset, mid-request.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
            with t.lock:
                t.errors["resets_sent"] = t.errors.get("resets_sent", 0) + 1
        except OSError as e:
            t.fail("reset", repr(e), n=0)
        time.sleep(0.005)


CLIENTS = [client_keepalive] * 4 + [client_pipelined, client_post, client_slow,
                                    client_malformed, client_reset]


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def load(port: int, handler: str, seconds: float) -> Tally:
    t = Tally()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=c, args=(port, handler, deadline, t), daemon=True)
               for c in CLIENTS]
    for th in threads:
        th.start()
    for th in threads:
        th.join(seconds + 60)
    return t


def soak_one(httpd: str, handler: str, seconds: float) -> dict[str, object]:
    port = free_port()
    proc = subprocess.Popen([httpd, "--port", str(port), "--address", "127.0.0.1",
                             "--workers", "2", *HANDLERS[handler]],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    result: dict[str, object] = {"handler": handler, "seconds": seconds}
    # Under AddressSanitizer freed memory waits in a quarantine of up to
    # 256 MiB: RSS says nothing there (LeakSanitizer at exit does).
    with open(httpd, "rb") as f:
        sanitized = b"__asan_init" in f.read()
    problems: list[str] = []
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("baton-httpd exited at start")
                time.sleep(0.05)
        warm = load(port, handler, min(3.0, seconds / 10))
        time.sleep(SETTLE)
        fds_start = fds(proc.pid)
        rss_warm = rss_kib(proc.pid)
        t = load(port, handler, seconds)
        time.sleep(SETTLE)
        if proc.poll() is not None:
            problems.append(f"crashed (status {proc.returncode})")
        fds_end = fds(proc.pid) if proc.poll() is None else -1
        rss_end = rss_kib(proc.pid) if proc.poll() is None else -1
        bound = max(rss_warm + RSS_SLACK_KIB, int(rss_warm * RSS_SLACK_RATIO))
        result.update({
            "requests_sent": t.sent + warm.sent, "requests_answered": t.answered + warm.answered,
            "errors_by_kind": {**warm.errors, **t.errors}, "first_errors": t.first_errors,
            "fds_before": fds_start, "fds_after": fds_end,
            "rss_kib_warm": rss_warm, "rss_kib_after": rss_end, "rss_kib_bound": bound,
        })
        if t.sent != t.answered or warm.sent != warm.answered:
            problems.append(f"{t.sent - t.answered} well-formed request(s) not answered "
                            f"correctly: {t.first_errors}")
        if fds_end != fds_start:
            problems.append(f"descriptors {fds_start} -> {fds_end}")
        if rss_end > bound and not sanitized:
            problems.append(f"RSS {rss_warm} -> {rss_end} KiB (bound {bound})")
        # SIGTERM with idle keep-alive connections open: drains, status 0.
        idle = [connect(port) for _ in range(20)]
        for s in idle:
            s.sendall(get(handler))
            read_response(s, bytearray())
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            problems.append(f"SIGTERM did not end it within {STOP_TIMEOUT} s")
        result["sigterm_s"] = round(time.monotonic() - t0, 3)
        for s in idle:
            s.close()
        if proc.returncode not in (0, None):
            problems.append(f"exit status {proc.returncode} after SIGTERM")
    except (OSError, RuntimeError) as e:
        problems.append(repr(e))
    finally:
        if proc.poll() is None:
            proc.kill()
        err = proc.communicate()[1].decode(errors="replace")
        if "ERROR: AddressSanitizer" in err or "runtime error" in err or "LeakSanitizer" in err:
            problems.append("sanitizer report: " + err[-2000:])
    result["problems"] = problems
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--httpd", required=True, help="the baton-httpd binary")
    p.add_argument("--seconds", type=float, default=60.0,
                   help="total load time, split between the three handler kinds")
    p.add_argument("--handlers", default="c,lua,scheme")
    args = p.parse_args(argv)
    kinds = [h for h in args.handlers.split(",") if h]
    results = [soak_one(args.httpd, h, args.seconds / len(kinds)) for h in kinds]
    print(json.dumps(results, indent=1))
    return 0 if all(not r["problems"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
