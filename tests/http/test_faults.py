# SPDX-License-Identifier: MIT
"""baton-httpd under the allocation-failure mode (docs/testing.md): the
library's allocations fail on purpose, chosen by BATON_FAIL_EVERY=N (every
N-th fails) and BATON_FAIL_AFTER=K (none of the first K does).

First the start-up: with every allocation after the K-th failing, for K =
0, 1, 2... the server either refuses to start (exit 1, "cannot start: out
of memory") or starts and stops on SIGTERM, until the K from which it
starts. Then traffic with every 2nd, 3rd, 5th or 11th allocation failing
after that start-up: each request gets its correct response or a 5xx, or
its connection is closed; the server never crashes and exits 0 on
SIGTERM; under ASan, LeakSanitizer finds nothing at exit.

Needs a binary built with BATON_FAULT_INJECTION (the asan preset); with
another (native) the module is skipped. Every socket has a timeout.
"""
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from test_httpd import _free_port

TIMEOUT = 5.0
HELLO = b"Hello, World!\n"
REPORTS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error")
MAX_STARTUP = 200  # allocations before the server listens, at most


class Faulty:
    """baton-httpd with allocations failing: every `every`-th after the
    `after`-th. started is True once it listens, False if it exited."""

    def __init__(self, binary, every, after, extra=()):
        self.port = _free_port()
        env = dict(os.environ, BATON_FAIL_EVERY=str(every), BATON_FAIL_AFTER=str(after))
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--address", "127.0.0.1", "--linger", "0",
             "--header-timeout", "2000", "--idle-timeout", "2000", *extra],
            stderr=subprocess.PIPE, env=env)
        self.lines = []
        self.listening = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        deadline = time.monotonic() + 30
        while not self.listening.wait(0.02):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                break
        self.reader.join(0.5 if self.proc.poll() is not None else 0)
        self.started = self.listening.is_set()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.decode(errors="replace"))
            if "listening on" in self.lines[-1]:
                self.listening.set()

    def stop(self):
        """SIGTERM, wait, and the exit code; stderr in self.log."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(10)
        self.log = "".join(self.lines)
        return self.proc.returncode

    def assert_clean(self, code):
        for r in REPORTS:
            assert r not in self.log, self.log
        assert code == 0, "baton-httpd exited %d:\n%s" % (code, self.log)


@pytest.fixture(scope="module")
def startup(httpd):
    """The number of allocations the start-up makes (K from which the
    server starts with every later allocation failing), each K below it
    checked for a clean refusal."""
    probe = Faulty(httpd, 1, 0)
    code = probe.stop()
    if probe.started:
        probe.assert_clean(code)
        pytest.skip("baton-httpd built without BATON_FAULT_INJECTION")
    for k in range(MAX_STARTUP):
        srv = Faulty(httpd, 1, k)
        code = srv.stop()
        if srv.started:
            srv.assert_clean(code)
            return k
        for r in REPORTS:
            assert r not in srv.log, srv.log
        assert code == 1 and "cannot start: out of memory" in srv.log, \
            "allocation %d failing: exit %d\n%s" % (k + 1, code, srv.log)
    pytest.fail("baton-httpd did not start within %d allocations" % MAX_STARTUP)


def responses(sock):
    """Every response until the server closes: (status, body) each; a
    reset ends the list as a close does."""
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            out.append((None, head))  # cut short
            break
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        out.append((status, rest[:length]))
        data = rest[length:]
    return out


def exchange(port, raw, expect):
    """Send raw, read until closed; each response must be a 200 with
    `expect` or a 5xx (the last one). Returns how many were 200."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    except OSError:
        return 0  # refused: the backlog was full of unaccepted connections
    with sock:
        try:
            sock.sendall(raw)
        except OSError:
            return 0  # closed on us: an allocation for this connection failed
        got = responses(sock)
    ok = 0
    for i, (status, body) in enumerate(got):
        if status == 200 and body == expect:
            ok += 1
            continue
        assert status is not None and 500 <= status < 600 and i == len(got) - 1, got
    assert ok <= expect_count(raw)
    return ok


def expect_count(raw):
    return raw.count(b" HTTP/1.1\r\n")


def traffic(port):
    """The request mix: single, pipelined, long head, bodies. Returns the
    200s and the requests sent."""
    get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    close = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    long_head = (b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Long: " +
                 b"a" * 10000 + b"\r\n\r\n")
    body = (b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Length: 20000\r\n\r\n" + b"b" * 20000)
    chunked = (b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n2710\r\n" + b"c" * 10000 + b"\r\n0\r\n\r\n")
    mix = [close] * 10 + [get * 4 + close] * 5 + [long_head, body, chunked] * 2
    ok = sent = 0
    for raw in mix:
        ok += exchange(port, raw, HELLO)
        sent += expect_count(raw)
    return ok, sent


@pytest.mark.parametrize("every,workers,clients", [
    (2, 1, 1), (3, 1, 1), (4, 1, 2), (5, 2, 4), (7, 2, 4), (11, 1, 1), (23, 2, 4)])
def test_traffic_with_failing_allocations(httpd, startup, every, workers, clients):
    srv = Faulty(httpd, every, startup, ["--workers", str(workers)])
    results, errors = [], []

    def client():
        try:
            results.append(traffic(srv.port))
        except BaseException as e:  # re-raised below, on the test's thread
            errors.append(e)

    try:
        assert srv.started, "".join(srv.lines)
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        code = srv.stop()
    srv.assert_clean(code)
    if errors:
        raise errors[0]
    assert len(results) == clients
    ok, sent = sum(r[0] for r in results), sum(r[1] for r in results)
    print("every %d: %d of %d requests answered 200" % (every, ok, sent))
    # A server that still serves: with every 5th or rarer allocation
    # failing, some requests get their answer.
    assert every < 5 or ok > 0
