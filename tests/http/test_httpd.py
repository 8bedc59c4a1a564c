# SPDX-License-Identifier: MIT
"""Robustness tests of baton-httpd: RFC 9112 behaviour, limits with their
statuses, smuggling attempts, slow clients, overload, and no leaks.

The binary comes from --httpd (or $BATON_HTTPD). Each test module starts
one server with small limits on a free loopback port and stops it with
SIGTERM at the end, asserting a clean exit (under ASan, LeakSanitizer runs
at exit and makes the exit status non-zero on a leak). Every socket has a
timeout, so nothing here can hang past it.
"""
import http.client
import json
import os
import resource
import signal
import socket
import subprocess
import time

import pytest

TIMEOUT = 10.0


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 8192)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def wait_accepting(proc, port, timeout):
    """True once the server accepts on port; False if it exits first or
    the timeout passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            if proc.poll() is not None:
                return False
            time.sleep(0.05)
    return False


class Server:
    def __init__(self, binary, extra=()):
        _raise_fd_limit()
        self.port = _free_port()
        self.admin_port = _free_port()  # /_stats and /_limits
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--address", "127.0.0.1",
             "--admin", "127.0.0.1:%d" % self.admin_port,
             "--max-target", "256", "--max-header-bytes", "2048", "--max-body", "4096",
             "--header-timeout", "700", "--idle-timeout", "1500", *extra],
            stderr=subprocess.PIPE, preexec_fn=_raise_fd_limit)
        if wait_accepting(self.proc, self.port, TIMEOUT):
            return
        self.stop()
        raise RuntimeError("baton-httpd did not start: " + self.stderr)

    def connect(self, port=None):
        return Conn(socket.create_connection(("127.0.0.1", port or self.port), timeout=TIMEOUT))

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        self.stderr = err.decode(errors="replace")
        return self.proc.returncode


@pytest.fixture(scope="module")
def server(httpd):
    srv = Server(httpd)
    yield srv
    code = srv.stop()
    assert code == 0, f"baton-httpd exited {code}:\n{srv.stderr}"
    assert "ERROR: AddressSanitizer" not in srv.stderr, srv.stderr
    assert "runtime error" not in srv.stderr, srv.stderr


class Conn:
    """A client socket plus the bytes read past the last response."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        sock.settimeout(TIMEOUT)

    def sendall(self, data):
        self.sock.sendall(data)

    def recv(self, n):
        if self.buf:
            data, self.buf = self.buf[:n], self.buf[n:]
            return data
        return self.sock.recv(n)

    def settimeout(self, t):
        self.sock.settimeout(t)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_response(sock, head_only=False):
    """One response: (status, headers dict lower-case, body bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response head: %r" % data)
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = 0 if head_only or status in (100, 204, 304) else int(headers.get("content-length", 0))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    sock.buf = rest[length:] + sock.buf
    return status, headers, rest[:length]


def exchange(server, raw, head_only=False, port=None):
    with server.connect(port) as s:
        s.sendall(raw)
        return read_response(s, head_only)


def closed_after(sock):
    """True if the server closed the connection (EOF, or reset)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


# --- ordinary requests ------------------------------------------------------

def test_get(server):
    status, h, body = exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200 and body == b"Hello, World!\n"
    assert h["content-length"] == "14" and "date" in h and h["connection"] == "keep-alive"


def test_head_has_no_body(server):
    with server.connect() as s:
        s.sendall(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        status, h, body = read_response(s, head_only=True)
        assert status == 200 and h["content-length"] == "14" and body == b""
        # the next response starts right after the head: no body was sent
        status, _, body = read_response(s)
        assert status == 200 and body == b"Hello, World!\n"


def test_http10_closes(server):
    with server.connect() as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        status, h, _ = read_response(s)
        assert status == 200 and h["connection"] == "close"
        assert closed_after(s)


def test_pipelining(server):
    reqs = b"".join(b"GET /%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(20))
    with server.connect() as s:
        s.sendall(reqs)
        buf = b""
        while buf.count(b"Hello, World!\n") < 20:
            chunk = s.recv(65536)
            assert chunk, "closed during pipelined responses"
            buf += chunk
        assert buf.count(b"HTTP/1.1 200 OK") == 20


def test_content_length_body(server):
    status, _, _ = exchange(server, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
    assert status == 200


def test_chunked_body_then_next_request(server):
    with server.connect() as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: t\r\n\r\n"
                  b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[0] == 200
        assert read_response(s)[0] == 200


def test_expect_continue(server):
    with server.connect() as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
        status, _, _ = read_response(s)
        assert status == 100
        s.sendall(b"abc")
        assert read_response(s)[0] == 200


def test_stats_json(server):
    """Every step of a request is a stage, listed in request order with its
    counters; the pools that stages declare follow."""
    status, h, body = exchange(server, b"GET /_stats HTTP/1.1\r\nHost: x\r\n\r\n",
                               port=server.admin_port)
    assert status == 200 and h["content-type"] == "application/json"
    doc = json.loads(body)
    names = [s["name"] for s in doc["stages"]]
    assert names == ["accept", "read", "handle", "write"]
    assert {p["name"] for p in doc["pools"]} == {"connections", "in-flight"}
    for s in doc["stages"]:
        assert s["submitted"] == s["completed"] + s["running"] + s["queued"], s
    accept, read, handle, write = doc["stages"]
    assert accept["completed"] >= 1 and accept["concurrency"] == 1
    # The module's earlier requests went through every step. (/_stats
    # is on the admin listener, a server of its own: these are the public
    # port's stages.)
    assert read["completed"] >= 1 and handle["completed"] >= 1
    assert write["completed"] >= 1 and read["runners"] == 0


def _stage(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    c.request("GET", "/_stats")
    doc = json.loads(c.getresponse().read())
    c.close()
    return next(s for s in doc["stages"] if s["name"] == name)


def test_read_stage_limit_holds_requests(httpd):
    """The read stage's concurrency is a real limit: with one reader, a
    client that sends half a head holds the slot, and a second request
    waits in the stage's queue (not read further) until the first head is
    complete; then both are answered."""
    srv = Server(httpd, ["--workers", "1"])
    try:
        c = http.client.HTTPConnection("127.0.0.1", srv.admin_port, timeout=TIMEOUT)
        c.request("POST", "/_limits?read_concurrency=1&read_queue=4")
        r = c.getresponse()
        r.read()
        assert r.status == 200
        c.close()
        slow = srv.connect()
        slow.sendall(b"GET / HTTP/1.1\r\nHost:")
        time.sleep(0.1)
        other = srv.connect()
        other.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        other.settimeout(0.3)
        with pytest.raises(socket.timeout):
            other.recv(1)
        # The admin listener has stages of its own: it answers meanwhile.
        assert _stage(srv.admin_port, "read")["concurrency"] == 1
        slow.sendall(b" x\r\n\r\n")
        assert read_response(slow)[0] == 200
        other.settimeout(TIMEOUT)
        assert read_response(other)[0] == 200
        read = _stage(srv.admin_port, "read")
        assert read["concurrency"] == 1 and read["wait_ns"] >= 200_000_000
        slow.close()
        other.close()
    finally:
        assert srv.stop() == 0, srv.stderr


def test_limits_for_every_stage(server):
    """POST /_limits sets any stage's concurrency and queue; out of range
    or unknown is a 400 that changes nothing."""
    c = http.client.HTTPConnection("127.0.0.1", server.admin_port, timeout=TIMEOUT)
    c.request("POST", "/_limits?write_concurrency=50&write_queue=60&read_queue=70")
    r = c.getresponse()
    doc = json.loads(r.read())
    assert r.status == 200
    st = {s["name"]: s for s in doc["stages"]}
    assert st["write"]["concurrency"] == 50 and st["write"]["queue_limit"] == 60
    assert st["read"]["queue_limit"] == 70
    for bad in ["/_limits?accept_concurrency=2", "/_limits?parse_queue=1",
                "/_limits?write_concurrency=0", "/_limits?read_queue=100000000",
                "/_limits?_queue=1"]:
        c.request("POST", bad)
        r = c.getresponse()
        r.read()
        assert r.status == 400, bad
    c.request("POST", "/_limits?write_concurrency=10000&write_queue=10000&read_queue=10000")
    r = c.getresponse()
    r.read()
    assert r.status == 200
    c.close()


# --- limits -------------------------------------------------------------------

@pytest.mark.parametrize("raw,status", [
    (b"GET /" + b"a" * 400 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"v" * 3000 + b"\r\n\r\n", 431),
    (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X%d: v\r\n" % i for i in range(150)) + b"\r\n", 431),
    (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413),
    (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1000\r\n" + b"x" * 4096
     + b"\r\n1000\r\n" + b"x" * 4096 + b"\r\n0\r\n\r\n", 413),
    (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
])
def test_limits(server, raw, status):
    with server.connect() as s:
        s.sendall(raw)
        got, h, _ = read_response(s)
        assert got == status and h.get("connection") == "close"
        assert closed_after(s)


# --- smuggling and malformed input: 400, then close -----------------------------

@pytest.mark.parametrize("raw", [
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 4\r\n\r\nabcd",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n folded\r\n\r\n",
    b"GET / HTTP/1.1\nHost: x\n\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost : x\r\n\r\n",
    b"GET / HTTP/1.1\r\n\r\n",
    b"\x00\x01\x02 garbage\r\n\r\n",
    b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
])
def test_smuggling_and_garbage_get_400(server, raw):
    with server.connect() as s:
        s.sendall(raw)
        status, h, _ = read_response(s)
        assert status == 400 and h.get("connection") == "close"
        assert closed_after(s)
    # and the server still serves others
    assert exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 200


# --- timeouts ---------------------------------------------------------------------

def test_slow_header_gets_408(server):
    with server.connect() as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never finished
        status, h, _ = read_response(s)
        assert status == 408 and h.get("connection") == "close"


def test_idle_keepalive_is_closed(server):
    with server.connect() as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[0] == 200
        t0 = time.monotonic()
        assert closed_after(s)
        assert 1.0 < time.monotonic() - t0 < 8.0


# --- many clients ------------------------------------------------------------------

def test_slow_clients_do_not_stop_others(server):
    """1,000 connections that send half a head and stall; a normal client is
    still served while they wait (they get 408 when the head deadline hits)."""
    slow = []
    try:
        for _ in range(1000):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
            s.sendall(b"GET / HTTP/1.1\r\nHo")
            slow.append(s)
        t0 = time.monotonic()
        for _ in range(50):
            assert exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 200
        assert time.monotonic() - t0 < 5.0
    finally:
        for s in slow:
            s.close()


def test_overload_memory_bounded_and_no_fd_leak(server):
    time.sleep(0.5)
    base_fds = server.fds()
    rss0 = server.rss_kib()
    for _ in range(5):
        socks = []
        for _ in range(300):
            s = server.connect()
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\n" + b"y" * 4000)
            socks.append(s)
        for s in socks:
            assert read_response(s)[0] == 200
            s.close()
    deadline = time.monotonic() + 5
    while server.fds() > base_fds and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.fds() <= base_fds, "file descriptors leaked"
    assert server.rss_kib() - rss0 < 64 * 1024, "memory grew by more than 64 MiB"


def test_connection_cap_pauses_accept(httpd):
    srv = Server(httpd, ["--max-connections", "8"])
    try:
        held = [srv.connect() for _ in range(8)]
        for s in held:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(s)[0] == 200
        extra = srv.connect()  # the kernel accepts it; the server does not yet
        extra.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        extra.settimeout(0.5)
        with pytest.raises(socket.timeout):
            extra.recv(1)
        held[0].close()  # a slot frees: the waiting connection is served
        extra.settimeout(TIMEOUT)
        assert read_response(extra)[0] == 200
        for s in held[1:] + [extra]:
            s.close()
    finally:
        assert srv.stop() == 0, srv.stderr


def test_sigterm_drains_in_flight(httpd):
    srv = Server(httpd)
    s = srv.connect()
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab")  # half a body
    time.sleep(0.2)
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    s.sendall(b"cd")
    status, h, _ = read_response(s)
    assert status == 200 and h["connection"] == "close"
    assert srv.stop() == 0, srv.stderr


def _threads(pid):
    """The names of the process's threads (/proc/PID/task/*/comm)."""
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # it ended meanwhile
    return names


@pytest.mark.parametrize("backend", ["epoll", "io_uring"])
def test_one_worker_one_thread(httpd, backend, monkeypatch):
    """With one worker the process has one thread on either backend:
    signals are read from a signalfd by the worker's reactor, not by a
    thread of their own (a process with more than one pays a file reference
    on every recv and send). A SIGHUP's reload runs on a thread that ends
    with it; the server still serves, and SIGTERM still drains (exit 0)."""
    monkeypatch.setenv("BATON_IO_BACKEND", backend)
    srv = Server(httpd, ["--workers", "1"])
    try:
        s = srv.connect()
        for _ in range(3):
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(s)[0] == 200
        assert len(_threads(srv.proc.pid)) == 1, _threads(srv.proc.pid)
        srv.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + TIMEOUT
        time.sleep(0.1)
        while len(_threads(srv.proc.pid)) != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_threads(srv.proc.pid)) == 1, _threads(srv.proc.pid)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(s)[0] == 200
        s.close()
    finally:
        code = srv.stop()
    assert code == 0, srv.stderr
    assert "SIGHUP: reloading" in srv.stderr and "reloaded" in srv.stderr, srv.stderr
    assert "SIGTERM: draining" in srv.stderr, srv.stderr


# --- lingering close (RFC 9112 section 9.6) --------------------------------------

BIG = 4 * 1024 * 1024  # far more than the socket buffers hold unread


@pytest.mark.parametrize("head,status", [
    (b"GET /" + b"a" * BIG + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"v" * BIG + b"\r\n\r\n", 431),
    (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % BIG + b"x" * BIG, 413),
])
def test_lingering_close_lets_the_client_read_the_status(server, head, status):
    """A client that sends everything before it reads (as curl does) gets
    the status: the server answers early, then drains instead of closing
    with unread bytes (which would reset the connection and drop the
    answer from the client's buffer)."""
    with server.connect() as s:
        s.sendall(head)  # completes only if the server keeps reading
        got, h, _ = read_response(s)
        assert got == status and h.get("connection") == "close"
        assert closed_after(s)
    assert exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")[0] == 200


def test_lingering_close_is_bounded(httpd):
    """A client that never closes is dropped after --linger."""
    srv = Server(httpd, ["--linger", "300"])
    try:
        with srv.connect() as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert read_response(s)[0] == 200
            t0 = time.monotonic()
            assert s.recv(1) == b""  # our FIN at once: the response ended
            s.sendall(b"more bytes the server drops")
            # the server's read side closes within the linger time
            s.settimeout(5)
            with pytest.raises((ConnectionResetError, BrokenPipeError, socket.timeout)):
                for _ in range(200):
                    s.sendall(b"x" * 65536)
                    time.sleep(0.02)
            assert time.monotonic() - t0 < 4
    finally:
        assert srv.stop() == 0, srv.stderr
