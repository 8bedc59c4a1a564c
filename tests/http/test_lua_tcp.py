# SPDX-License-Identifier: MIT
"""Non-blocking calls from Lua handlers: baton.sleep, the TCP client
(baton.tcp, shaped like OpenResty's ngx.socket.tcp) and the HTTP client on
top of it (baton.http_get) park the request's task, not its worker. The
upstreams are Python servers in the test that answer after 100 ms; the
handler is tests/http/handlers/tasks.lua. Bounds are generous (a busy
2-core machine); bench/http's lua_upstream entry measures the p99."""
import os
import socket
import socketserver
import threading
import time

import pytest

from test_handlers import HANDLERS, Server, stopped_cleanly, timed_get
from test_httpd import TIMEOUT

TASKS = os.path.join(HANDLERS, "tasks.lua")
DELAY = 0.1


class SlowLines(socketserver.StreamRequestHandler):
    """Reads a line, waits 100 ms, answers "pong <line>" and closes; for
    "patterns" it sends bytes the receive patterns split."""

    def handle(self):
        line = self.rfile.readline().strip()
        if line == b"silent":
            time.sleep(1.0)  # never answers within the handler's timeout
            return
        time.sleep(DELAY)
        if line == b"patterns":
            self.wfile.write(b"12345line one\r\nthe rest")
        else:
            self.wfile.write(b"pong " + line + b"\n")


class SlowHttp(socketserver.StreamRequestHandler):
    """An HTTP/1.1 origin that answers after 100 ms: /chunked in chunks,
    anything else with Content-Length, echoing the request's X-From."""

    def handle(self):
        head = []
        while True:
            line = self.rfile.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            head.append(line.decode().strip())
        time.sleep(DELAY)
        target = head[0].split()[1] if head else "/"
        xfrom = next((h.split(":", 1)[1].strip() for h in head
                      if h.lower().startswith("x-from:")), "")
        body = ("hello %s from %s" % (xfrom, target)).encode()
        if target == "/chunked":
            self.wfile.write(b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        else:
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
                             + body)


class Upstream(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


@pytest.fixture
def upstream():
    servers = [Upstream(("127.0.0.1", 0), h) for h in (SlowLines, SlowHttp)]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    yield [s.server_address[1] for s in servers]
    for s in servers:
        s.shutdown()
        s.server_close()


@pytest.fixture
def srv(httpd, tmp_path):
    s = Server(httpd, str(tmp_path), ["lua", TASKS], ["--workers", "1"])
    yield s
    stopped_cleanly(s)


def test_sleep_waits_without_holding_the_worker(srv):
    status, _, body, took = timed_get(srv.port, "/sleep?ms=100")
    assert status == 200 and body.startswith(b"slept 0.1")
    assert took >= 0.1


def test_tcp_client_gets_the_slow_answer(srv, upstream):
    status, _, body, took = timed_get(srv.port, "/upstream?port=%d&say=hi" % upstream[0])
    assert (status, body) == (200, b"pong hi")
    assert took >= DELAY


def test_receive_patterns(srv, upstream):
    status, _, body, _ = timed_get(srv.port, "/patterns?port=%d" % upstream[0])
    # 5 bytes, a line without its CR LF, the rest until the end, then
    # nothing more: nil and "closed".
    assert (status, body) == (200, b"12345|line one|the rest|nil|closed")


def test_tcp_errors_are_returned(srv, upstream):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    free = s.getsockname()[1]
    s.close()  # nobody listens there now
    status, _, body, _ = timed_get(srv.port, "/upstream?port=%d" % free)
    assert status == 502 and body.startswith(b"connect: ") and b"refused" in body.lower()
    status, _, body, took = timed_get(srv.port, "/upstream?port=%d&say=silent&timeout=200"
                                      % upstream[0])
    assert (status, body) == (504, b"receive: timeout ")
    assert 0.15 < took < 0.9
    status, _, body, _ = timed_get(srv.port, "/upstream?port=1&host=no.such.host.invalid")
    assert status == 502 and body.startswith(b"connect: ")


def test_http_client(srv, upstream):
    status, headers, body, _ = timed_get(srv.port, "/http?port=%d&path=/x%%3Fy" % upstream[1])
    assert (status, body) == (200, b"hello baton from /x%3Fy")
    assert dict((k.lower(), v) for k, v in headers)["x-upstream-status"] == "200"
    status, headers, body, _ = timed_get(srv.port, "/http?port=%d&path=/chunked" % upstream[1])
    assert (status, body) == (200, b"hello world")
    assert dict((k.lower(), v) for k, v in headers)["x-upstream-status"] == "201"


def test_cheap_route_fast_while_20_wait_on_upstream(srv, upstream):
    """20 requests wait 100 ms each on the upstream through the TCP client,
    over and over, on the server's one worker; meanwhile /cheap, on the
    same worker, answers fast (a worker blocked in the upstream calls
    would make it wait 100 ms or more)."""
    stop = threading.Event()
    answers = []
    lock = threading.Lock()

    def waiting_client():
        while not stop.is_set():
            r = timed_get(srv.port, "/upstream?port=%d" % upstream[0])
            with lock:
                answers.append((r[0], r[2]))
    clients = [threading.Thread(target=waiting_client) for _ in range(20)]
    for c in clients:
        c.start()
    try:
        time.sleep(0.05)
        lat = []
        for _ in range(50):
            status, _, _, took = timed_get(srv.port, "/cheap")
            assert status == 200
            lat.append(took)
            time.sleep(0.005)
    finally:
        stop.set()
        for c in clients:
            c.join(TIMEOUT)
    assert answers and set(answers) == {(200, b"pong ping")}
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print("cheap p99 %.2f ms with 20 upstream waits in flight" % (p99 * 1000))
    assert p99 < 0.1, f"/cheap p99 {p99 * 1000:.1f} ms while requests waited on an upstream"
