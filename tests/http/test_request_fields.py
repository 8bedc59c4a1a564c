# SPDX-License-Identifier: MIT
"""The complete request and response of baton-httpd's handlers, through a
real server, in Lua and Scheme (tests/http/handlers/fields.lua, fields.scm)
and in C (the built-in hello handler for the request's framing only):
method, raw target, decoded path, query and parsed arguments (decoded,
repeats as lists), client address and port, headers looked up in any case
with repeats as lists, the body (nil / #f when there is none), 20 response
headers with 3 Set-Cookie, and streamed responses read piece by piece
(chunked framing, the first piece before the handler is done, HEAD,
HTTP/1.0, a stream that breaks, large pieces) in both the I/O-worker and
the compute-worker shapes. Every socket has a timeout.
"""
import json
import os
import socket
import time

import pytest

from test_handlers import HANDLERS, EXT, Server, stopped_cleanly, header_list
from test_httpd import TIMEOUT

SHAPES = {"io": ["--workers", "2"], "compute": ["--workers", "1", "--compute-workers", "1"]}


@pytest.fixture(scope="module", params=[(lang, shape) for lang in ("lua", "scheme")
                                        for shape in ("io", "compute")],
                ids=lambda p: "%s-%s" % p)
def server(request, httpd, tmp_path_factory):
    lang, shape = request.param
    srv = Server(httpd, str(tmp_path_factory.mktemp(lang)),
                 [lang, os.path.join(HANDLERS, "fields" + EXT[lang])], SHAPES[shape])
    srv.lang = lang
    yield srv
    stopped_cleanly(srv)


def fields(server, method, target, headers=(), body=None):
    status, hdrs, text = server.request(method, target, headers, body)
    assert status == 200, text
    return json.loads(text)


def test_every_request_field(server):
    f = fields(server, "POST", "/fields/a%20b/%C3%A9?x=1&x=2&y=%41+b&flag&e=",
               headers=[("X-Rep", "a"), ("Content-Type", "text/x"), ("x-rep", "b")],
               body=b"hi there")
    assert f["method"] == "POST"
    assert f["target"] == "/fields/a%20b/%C3%A9?x=1&x=2&y=%41+b&flag&e="
    assert f["version"] == "1.1"
    assert f["path"] == "/fields/a b/\u00e9"  # percent-decoded (UTF-8 bytes)
    assert f["query"] == "x=1&x=2&y=%41+b&flag&e="  # as sent
    assert f["args"] == {"x": ["1", "2"], "y": "A b", "flag": "", "e": ""}
    assert f["remote_addr"] == "127.0.0.1"
    assert 1024 <= f["remote_port"] <= 65535
    assert f["headers"]["x-rep"] == ["a", "b"]  # repeats as a list, in order
    assert f["headers"]["content-type"] == "text/x"
    assert f["headers"]["host"] == "127.0.0.1:%d" % server.port
    assert f["body"] == "hi there"
    if server.lang == "lua":
        assert f["body_type"] == "string"
        # any case, and '_' for '-'
        assert f["lookup"]["Content-Type"] == f["lookup"]["content_type"] == "text/x"
        assert f["lookup"]["X_REP"] == f["lookup"]["X-Rep"] == ["a", "b"]
        assert "missing" not in f["lookup"]
    else:
        assert f["body_type"] == "bytevector"
        assert f["method_is_symbol"] is True
        assert f["header_names_are_symbols"] is True
        # every name in lower case, each once
        assert list(f["headers"]) == ["host", "x-rep", "content-type", "content-length"]


def test_no_query_no_body(server):
    f = fields(server, "GET", "/fields")
    assert f["path"] == "/fields" and f.get("query") is None and f["args"] == {}
    assert f.get("body") is None and f["body_type"] == "nil"


def test_empty_query_and_empty_body(server):
    f = fields(server, "POST", "/fields?", body=b"")
    assert f["query"] == "" and f["args"] == {}
    # Content-Length: 0 is a body of no bytes, not the absence of one
    assert f["body"] == "" and f["body_type"] != "nil"


def test_client_port_is_the_clients(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
        s.sendall(b"GET /fields HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = read_all(s)
        port = s.getsockname()[1]
    f = json.loads(data.split(b"\r\n\r\n", 1)[1])
    assert f["remote_port"] == port


@pytest.mark.parametrize("target", ["/fields/%zz", "/fields/%4", "/fields/a%00b"])
def test_bad_escape_in_path_is_400(server, target):
    status, _, _ = server.request("GET", target)
    assert status == 400


def test_twenty_response_headers(server):
    status, headers, body = server.request("GET", "/many-headers")
    assert status == 200 and body == b"many"
    for i in range(1, 18):
        assert header_list(headers, "X-H%d" % i) == ["v%d" % i]
    assert header_list(headers, "set-cookie") == ["c1=1", "c2=2", "c3=3"]  # each its own


def read_all(s):
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk


class Reader:
    """A response read off a socket as it arrives."""

    def __init__(self, s):
        self.s, self.buf = s, b""

    def until(self, sep):
        while sep not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError(self.buf)
            self.buf += chunk
        out, self.buf = self.buf.split(sep, 1)
        return out

    def exactly(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError(self.buf)
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def chunk(self):
        size = int(self.until(b"\r\n"), 16)
        data = self.exactly(size)
        assert self.exactly(2) == b"\r\n"
        return data


def head_of(reader):
    lines = reader.until(b"\r\n\r\n").decode().split("\r\n")
    return lines[0], [tuple(x.split(": ", 1)) for x in lines[1:]]


def test_stream_arrives_piece_by_piece(server):
    """Three pieces, the generator computing 400 ms before the second and
    the third: the head and the first piece are read long before the
    handler is done, the body is chunked, one chunk per piece, and the
    connection stays usable."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
        t0 = time.monotonic()
        s.sendall(b"GET /stream?n=3&ms=400 HTTP/1.1\r\nHost: x\r\n\r\n")
        r = Reader(s)
        status, headers = head_of(r)
        assert status.startswith("HTTP/1.1 200")
        assert header_list(headers, "transfer-encoding") == ["chunked"]
        assert header_list(headers, "content-length") == []
        assert header_list(headers, "x-stream") == ["yes"]
        assert r.chunk() == b"piece 1\n"
        t_first = time.monotonic() - t0
        assert r.chunk() == b"piece 2\n"
        assert r.chunk() == b"piece 3\n"
        assert r.exactly(5) == b"0\r\n\r\n"
        t_all = time.monotonic() - t0
        assert t_all >= 0.75  # two computations of 400 ms
        assert t_first < t_all - 0.6, (t_first, t_all)  # the first came before them
        # keep-alive: the next request on the same connection
        s.sendall(b"GET /fields HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers = head_of(r)
        assert status.startswith("HTTP/1.1 200")


def test_head_to_a_stream(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
        s.sendall(b"HEAD /stream?n=3&ms=400 HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /many-headers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        t0 = time.monotonic()
        r = Reader(s)
        status, headers = head_of(r)
        assert status.startswith("HTTP/1.1 200")
        assert header_list(headers, "transfer-encoding") == ["chunked"]
        # no body: the next response follows the head at once (the
        # generator was not run: no 800 ms of computing)
        rest = read_all(s)
        assert (r.buf + rest).startswith(b"HTTP/1.1 200 OK\r\n")
        assert (r.buf + rest).endswith(b"\r\n\r\nmany")
        assert time.monotonic() - t0 < 0.5


def test_stream_to_http10_is_close_delimited(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
        s.sendall(b"GET /stream?n=2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        data = read_all(s)  # ends: the server closed
    head, body = data.split(b"\r\n\r\n", 1)
    assert b"Transfer-Encoding" not in head and b"Content-Length" not in head
    assert b"\r\nConnection: close\r\n" in head + b"\r\n"
    assert body == b"piece 1\npiece 2\n"


def test_large_pieces(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
        s.sendall(b"GET /stream-big?n=12 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        r = Reader(s)
        head_of(r)
        total = 0
        while True:
            piece = r.chunk()
            if not piece:
                break
            assert piece == b"x" * 262144
            total += len(piece)
    assert total == 12 * 262144


def test_stream_that_breaks_cuts_the_body(server):
    since = len(server.log())
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
        s.sendall(b"GET /stream-error HTTP/1.1\r\nHost: x\r\n\r\n")
        r = Reader(s)
        status, _ = head_of(r)
        assert status.startswith("HTTP/1.1 200")
        assert r.chunk() == b"first\n"
        rest = read_all(s)  # closed without the last chunk
        assert b"0\r\n\r\n" not in r.buf + rest
    assert any("stream broke" in line for line in server.wait_log("stream broke", since))
    # and the server goes on
    assert server.request("GET", "/fields")[0] == 200


def test_c_handler_sees_no_body_framing(httpd, tmp_path):
    """The built-in C handler answers every request; a percent-encoded
    path that does not decode is refused before it, for C as for Lua."""
    srv = Server(httpd, str(tmp_path), ["hello"])
    try:
        assert srv.request("GET", "/a%20b?x=1")[0] == 200
        assert srv.request("GET", "/a%zzb")[0] == 400
    finally:
        stopped_cleanly(srv)
