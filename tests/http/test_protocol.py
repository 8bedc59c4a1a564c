# SPDX-License-Identifier: MIT
"""Protocol rules of baton-httpd (RFC 9110, RFC 9112) and the admin
listener, through a real server with a Lua handler
(tests/http/handlers/protocol.lua) that counts the requests reaching it:

- request targets checked against the method (RFC 9112 3.2): origin-form
  and absolute-form for ordinary methods, authority-form only for CONNECT,
  asterisk-form only for OPTIONS; anything else is a 400 that never
  reaches the handler;
- CONNECT answered 501 without reaching the handler (no tunnels);
- 1xx, 204 and 304 from a handler: no content, no Content-Length (RFC 9110
  6.4.1, 8.6);
- no content in answers to HEAD, error answers included, with the head GET
  would get;
- /_stats and /_limits only on the admin listener (--admin), loopback by
  default; the public port answers 404 there and changes nothing.

Every socket has a timeout; each server is stopped with SIGTERM and must
exit 0 without a sanitizer report.
"""
import http.client
import json
import os
import socket
import subprocess

import pytest

from test_httpd import TIMEOUT, Server, _free_port, closed_after, read_response

HERE = os.path.dirname(os.path.abspath(__file__))
HANDLER = os.path.join(HERE, "handlers", "protocol.lua")


def lua_built(httpd):
    out = subprocess.run([httpd, "--handler", "lua"], capture_output=True, timeout=TIMEOUT)
    return b"built without the lua handler" not in out.stderr


@pytest.fixture(scope="module")
def server(httpd):
    if not lua_built(httpd):
        pytest.skip("baton-httpd built without Lua")
    srv = Server(httpd, ["--workers", "1", "--handler", "lua", HANDLER])
    yield srv
    code = srv.stop()
    assert code == 0, f"baton-httpd exited {code}:\n{srv.stderr}"
    assert "ERROR: AddressSanitizer" not in srv.stderr, srv.stderr
    assert "runtime error" not in srv.stderr, srv.stderr


def calls(server):
    """How many requests reached the handler so far."""
    with server.connect() as s:
        s.sendall(b"GET /calls HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = read_response(s)
    assert status == 200
    return int(body)


def raw_until_eof(sock):
    """Everything the server sends until it closes."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def split_head(data):
    head, sep, rest = data.partition(b"\r\n\r\n")
    assert sep, data
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), fields, rest


# --- request targets against the method (RFC 9112 3.2) ----------------------

@pytest.mark.parametrize("line", [
    b"GET foo",                 # a relative reference: no form at all
    b"GET *",                   # asterisk-form, not OPTIONS
    b"HEAD *",
    b"POST *",
    b"DELETE *",
    b"GET example.org:80",      # authority-form, not CONNECT
    b"OPTIONS example.org:80",
    b"PURGE x",                 # an unknown method with no form either
    b"OPTIONS *x",
    b"GET http:///path",        # absolute-form without a host
    b"CONNECT /",               # CONNECT wants authority-form
    b"CONNECT *",
    b"CONNECT http://example.org:443/",
    b"CONNECT example.org",     # no port
    b"CONNECT user@example.org:443",
])
def test_target_in_the_wrong_form_is_400_before_the_handler(server, line):
    before = calls(server)
    with server.connect() as s:
        s.sendall(line + b" HTTP/1.1\r\nHost: example.org\r\n\r\n")
        status, h, _ = read_response(s)
        assert status == 400 and h.get("connection") == "close"
        assert closed_after(s)
    assert calls(server) == before


@pytest.mark.parametrize("line,target", [
    (b"GET /a?b=1", "/a?b=1"),
    (b"GET http://example.org/a?b=1", "http://example.org/a?b=1"),   # absolute-form
    (b"POST https://example.org", "https://example.org"),
    (b"OPTIONS *", "*"),                                             # asterisk-form
    (b"OPTIONS /x", "/x"),
])
def test_allowed_forms_reach_the_handler(server, line, target):
    before = calls(server)
    with server.connect() as s:
        s.sendall(line + b" HTTP/1.1\r\nHost: example.org\r\nContent-Length: 0\r\n\r\n")
        status, h, body = read_response(s)
    assert status == 200 and body == b"target " + target.encode() + b"\n"
    assert calls(server) == before + 1


def test_connect_is_501_and_never_reaches_the_handler(server):
    """CONNECT asks for a tunnel, which no handler can give: 501, the
    connection closed (what follows would be the tunnel's bytes)."""
    before = calls(server)
    with server.connect() as s:
        s.sendall(b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n"
                  b"\x16\x03\x01 tunnel bytes")
        status, h, body = read_response(s)
        assert status == 501 and h.get("connection") == "close"
        assert body == b"501 Not Implemented\n"
        assert closed_after(s)
    assert calls(server) == before


# --- responses without content: 1xx, 204, 304 ---------------------------------

@pytest.mark.parametrize("code", [204, 304])
def test_204_and_304_have_no_content_and_no_length(server, code):
    """The head ends the message: the next pipelined response starts right
    after it, and neither Content-Length nor Transfer-Encoding is sent."""
    with server.connect() as s:
        s.sendall(b"GET /status/%d HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n" % code)
        data = b""
        while data.count(b"\r\n\r\n") < 2 or not data.endswith(b"target /next\n"):
            chunk = s.recv(65536)
            assert chunk, data
            data += chunk
    status, fields, rest = split_head(data)
    assert status == code and fields["x-from"] == "handler"
    assert "content-length" not in fields and "transfer-encoding" not in fields
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n"), rest


def test_a_handlers_1xx_is_refused(server):
    """A handler's response is final: a 1xx would leave the client waiting
    for the final one. The server answers 500 instead."""
    with server.connect() as s:
        s.sendall(b"GET /status/101 HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, _ = read_response(s)
    assert status == 500


# --- HEAD: no content, errors included ---------------------------------------

def test_head_has_the_head_of_get_without_content(server):
    with server.connect() as s:
        s.sendall(b"GET /missing HTTP/1.1\r\nHost: x\r\n\r\n")
        g_status, g_fields, g_body = read_response(s)
    with server.connect() as s:
        s.sendall(b"HEAD /missing HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while not data.endswith(b"target /next\n"):
            chunk = s.recv(65536)
            assert chunk, data
            data += chunk
    status, fields, rest = split_head(data)
    assert g_status == status == 404 and g_body == b"no such thing\n"
    g_fields.pop("date")
    fields.pop("date")
    assert fields == g_fields and fields["content-length"] == str(len(g_body))
    assert rest.startswith(b"HTTP/1.1 200 OK\r\n"), rest  # no body in between


@pytest.mark.parametrize("raw,code", [
    (b"HEAD /" + b"a" * 400 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),          # from the parser
    (b"HEAD / HTTP/1.1\r\nHost: x\r\nX: " + b"v" * 3000 + b"\r\n\r\n", 431),
    (b"HEAD * HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"HEAD / HTTP/1.1\r\n\r\n", 400),                                       # no Host
    (b"HEAD / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413),
    (b"HEAD / HTTP/1.1\r\nHost: x\r\nExpect: nothing\r\n\r\n", 417),
    (b"HEAD / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n", 400),
])
def test_head_error_answers_have_no_content(server, raw, code):
    """An error answer to HEAD has the head of the GET answer, its
    Content-Length included, and nothing after it before the close."""
    with server.connect() as s:
        s.sendall(raw)
        data = raw_until_eof(s)
    status, fields, rest = split_head(data)
    assert status == code and fields["connection"] == "close"
    assert int(fields["content-length"]) > 0 and rest == b"", data


# --- the admin listener -------------------------------------------------------

def admin_request(port, method, target):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        c.request(method, target)
        r = c.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        c.close()


def handle_stage(port):
    doc = json.loads(admin_request(port, "GET", "/_stats")[2])
    return next(s for s in doc["stages"] if s["name"] == "handle")


@pytest.mark.parametrize("method,target", [
    ("GET", "/_stats"), ("HEAD", "/_stats"), ("GET", "/_stats?x=1"),
    ("POST", "/_limits?handler_concurrency=1&handler_queue=1"), ("GET", "/_limits"),
    ("POST", "/_limits"),
])
def test_public_port_answers_404_for_the_operator(server, method, target):
    """No client of the public port can read or change the limits: 404,
    and the handle stage's limits are as they were."""
    before = handle_stage(server.admin_port)
    status, _, _ = admin_request(server.port, method, target)
    assert status == 404
    after = handle_stage(server.admin_port)
    assert (after["concurrency"], after["queue_limit"]) == \
        (before["concurrency"], before["queue_limit"])


def test_admin_listener_answers_only_its_endpoints(server):
    status, h, body = admin_request(server.admin_port, "GET", "/_stats")
    assert status == 200 and h["content-type"] == "application/json"
    assert [s["name"] for s in json.loads(body)["stages"]] == ["accept", "read", "handle", "write"]
    status, h, _ = admin_request(server.admin_port, "POST", "/_stats")
    assert status == 405 and h["allow"] == "GET, HEAD"
    status, h, _ = admin_request(server.admin_port, "GET", "/_limits?handler_queue=5")
    assert status == 405 and h["allow"] == "POST"
    assert admin_request(server.admin_port, "GET", "/")[0] == 404
    assert admin_request(server.admin_port, "GET", "/calls")[0] == 404
    status, _, body = admin_request(server.admin_port, "POST", "/_limits?handler_queue=500")
    assert status == 200
    assert next(s for s in json.loads(body)["stages"] if s["name"] == "handle")["queue_limit"] == 500


def listening_addresses(pid):
    """(address, port) of the process's IPv4 listening sockets."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    found = set()
    with open(f"/proc/{pid}/net/tcp") as f:
        next(f)
        for line in f:
            parts = line.split()
            local, state, inode = parts[1], parts[3], parts[9]
            if state == "0A" and inode in inodes:  # LISTEN
                addr, port = local.split(":")
                found.add((socket.inet_ntoa(bytes.fromhex(addr)[::-1]), int(port, 16)))
    return found


def test_admin_defaults_to_loopback_and_any_port(httpd):
    """--admin 0: loopback, a free port, printed at start-up."""
    port = _free_port()
    proc = subprocess.Popen([httpd, "--port", str(port), "--address", "0.0.0.0",
                             "--admin", "0"], stderr=subprocess.PIPE)
    try:
        line = proc.stderr.readline().decode()
        assert "admin (/_stats, /_limits) on 127.0.0.1:" in line, line
        admin = int(line.rsplit(":", 1)[1])
        assert admin != 0
        assert proc.stderr.readline().startswith(b"baton-httpd: listening on")
        assert listening_addresses(proc.pid) == {("0.0.0.0", port), ("127.0.0.1", admin)}
        assert admin_request(admin, "GET", "/_stats")[0] == 200
        assert admin_request(port, "GET", "/_stats")[0] == 404
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err


@pytest.mark.parametrize("args,code,why", [
    (["--stats"], 2, b"--admin"),
    (["--admin", "127.0.0.1:x"], 1, b"--admin wants [ADDR:]PORT"),
    (["--admin", ":80"], 1, b"--admin wants [ADDR:]PORT"),
    (["--admin", "127.0.0.1:70000"], 1, b"--admin wants [ADDR:]PORT"),
    (["--admin", "not-an-address:0"], 1, b"cannot start the admin listener"),
])
def test_bad_admin_options_are_refused(httpd, args, code, why):
    p = subprocess.run([httpd, "--port", "0", "--address", "127.0.0.1", *args],
                       capture_output=True, timeout=TIMEOUT)
    assert p.returncode == code and why in p.stderr, p.stderr
    assert b"listening on" not in p.stderr
