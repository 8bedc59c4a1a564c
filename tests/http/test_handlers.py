# SPDX-License-Identifier: MIT
"""The Lua and Scheme handlers of baton-httpd, through a real server: the
request as the handler sees it (method, target, version, every header,
the body), large bodies both ways, custom statuses and headers, every rule
a response can break (500, one log line, the server still serving), errors
raised in the handler, Lua's state per worker and --lua-shared, and
Scheme's compiled, interpreted (--scheme-eval) and shared-object paths.

The handlers are tests/http/handlers/echo.lua and echo.scm, which answer
the same paths. Each server runs on a free loopback port with its stderr in
a file, is stopped with SIGTERM and must exit 0 without a sanitizer report.
Every socket and every wait has a timeout.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from test_httpd import TIMEOUT, _free_port, wait_accepting

HERE = os.path.dirname(os.path.abspath(__file__))
HANDLERS = os.path.join(HERE, "handlers")
EXT = {"lua": ".lua", "scheme": ".scm"}
START_TIMEOUT = 60.0  # a Scheme file is compiled by csc first
MAX_BODY = 2 << 20
MAX_RESPONSE_BODY = 5000000


def pattern(n):
    unit = b"0123456789abcdef"
    return unit * (n // 16) + unit[:n % 16]


class Server:
    """baton-httpd with a handler; stderr goes to a file read by log()."""

    def __init__(self, binary, tmp, handler, extra=()):
        self.port = _free_port()
        self.errpath = os.path.join(tmp, "stderr-%d.log" % self.port)
        self.errfile = open(self.errpath, "wb")
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--address", "127.0.0.1",
             "--max-body", str(MAX_BODY), "--max-response-body", str(MAX_RESPONSE_BODY),
             "--handler", *handler, *extra],
            stderr=self.errfile)
        if wait_accepting(self.proc, self.port, START_TIMEOUT):
            return
        self.stop()
        raise RuntimeError("baton-httpd did not start:\n" + self.log())

    def log(self):
        with open(self.errpath, "rb") as f:
            return f.read().decode(errors="replace")

    def wait_log(self, text, since):
        """The log lines past offset `since` once one contains text."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            new = self.log()[since:]
            if text in new or time.monotonic() > deadline:
                return new.splitlines()
            time.sleep(0.02)

    def request(self, method, target, headers=(), body=None):
        """(status, [(name, value)...], body) over a fresh connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            conn.putrequest(method, target, skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()

    def get(self, target):
        return self.request("GET", target)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)
        self.errfile.close()
        return self.proc.returncode


def stopped_cleanly(srv):
    code = srv.stop()
    log = srv.log()
    assert code == 0, f"baton-httpd exited {code}:\n{log}"
    assert "ERROR: AddressSanitizer" not in log, log
    assert "ERROR: LeakSanitizer" not in log, log
    assert "runtime error" not in log, log


@pytest.fixture(scope="module", params=["lua", "scheme"])
def server(request, httpd, tmp_path_factory):
    lang = request.param
    # Two workers: Lua then has two states, Scheme two callers of its one.
    srv = Server(httpd, str(tmp_path_factory.mktemp(lang)),
                 [lang, os.path.join(HANDLERS, "echo" + EXT[lang])], ["--workers", "2"])
    srv.lang = lang
    yield srv
    stopped_cleanly(srv)


def header_list(headers, name):
    return [v for n, v in headers if n.lower() == name.lower()]


# --- the request as the handler sees it ----------------------------------------

def test_request_echoed(server):
    body = b"hello \x00 body"
    status, headers, text = server.request(
        "POST", "/echo?x=1&y=%20", body=body,
        headers=[("X-Rep", "a"), ("Mixed-Case", "M"), ("x-rep", "b")])
    assert status == 200
    assert header_list(headers, "content-type") == ["text/plain"]
    lines = text.decode().splitlines()
    assert lines[:3] == ["method POST", "target /echo?x=1&y=%20", "version 1.1"]
    sent = [line for line in lines if line.startswith("header ")]
    if server.lang == "lua":
        # every field, in order, names as sent (repeats and case kept)
        assert sent == ["header Host: 127.0.0.1:%d" % server.port, "header X-Rep: a",
                        "header Mixed-Case: M", "header x-rep: b",
                        "header Content-Length: %d" % len(body)]
        assert "lookup x-rep: list a, b" in lines
        assert "lookup host: 127.0.0.1:%d" % server.port in lines
    else:
        # lower-case symbols, each once, in order; a repeat's values as a list
        assert sent == ["header host: 127.0.0.1:%d" % server.port, "header x-rep: a, b",
                        "header mixed-case: M", "header content-length: %d" % len(body)]
    assert lines[-1] == "body %d" % len(body)


def test_body_bytes_round_trip(server):
    body = bytes(range(256)) * 4
    status, headers, got = server.request("PUT", "/body", body=body)
    assert status == 200 and got == body
    assert header_list(headers, "content-type") == ["application/octet-stream"]


def test_chunked_request_body(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
        s.sendall(b"POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        resp = http.client.HTTPResponse(s)
        resp.begin()
        assert resp.status == 200 and resp.read() == b"hello world"


def test_http10_version(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as s:
        s.sendall(b"GET /echo HTTP/1.0\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 200 ")
    assert b"\r\n\r\nmethod GET\ntarget /echo\nversion 1.0\n" in data


def test_large_request_body(server):
    body = os.urandom(1 << 20)  # 1 MiB, under --max-body 2 MiB
    status, _, got = server.request("POST", "/body", body=body)
    assert status == 200 and got == body


def test_large_response_body(server):
    n = 4 << 20  # 4 MiB, under --max-response-body
    status, headers, got = server.get("/big?n=%d" % n)
    assert status == 200
    assert header_list(headers, "content-length") == [str(n)]
    assert got == pattern(n)


# --- what the handler answers -----------------------------------------------------

@pytest.mark.parametrize("code", [201, 418, 503])
def test_custom_status_and_headers(server, code):
    status, headers, body = server.get("/status/%d" % code)
    assert status == code and body == b"custom"
    assert header_list(headers, "content-type") == ["text/plain; charset=utf-8"]
    assert header_list(headers, "x-custom") == ["yes"]
    assert header_list(headers, "set-cookie") == ["a=1", "b=2"]  # repeated, in order
    assert header_list(headers, "x-number") == ["42"]
    if server.lang == "lua":  # a list value: one field per element
        assert header_list(headers, "x-list") == ["l1", "l2"]
    else:                     # Guile's style: the elements joined
        assert header_list(headers, "x-list") == ["l1, l2"]
    # the server's own framing is still there, once
    assert header_list(headers, "content-length") == ["6"]


def test_no_content(server):
    status, _, body = server.get("/empty")
    assert status == 204 and body == b""


def test_scheme_status_key_and_blob(server):
    if server.lang != "scheme":
        pytest.skip("Scheme only")
    status, headers, body = server.get("/created")
    assert status == 201 and body == b"created"
    assert header_list(headers, "content-type") == ["text/plain"]
    assert server.get("/blob")[2] == b"a blob"


# --- rules and errors: 500, one log line, still serving ------------------------------

RULES = {
    "status-low": "the status 99 is not in 100-599",
    "status-high": "the status 600 is not in 100-599",
    "status-1xx": "the status 101 is interim",
    "status-type": "the status must be",
    "header-crlf": "control byte 0x0d",
    "header-nul": "control byte 0x00",
    "header-name": "is not a token character",
    "content-length": "is the server's to write",
    "transfer-encoding": "is the server's to write",
    "connection": "is the server's to write",
    "headers-type": "the headers must be",
    "header-value-type": "the value must be a string",
    "body-type": "the body must be a string",
    "stream-204": "a 204 response has no body, so it cannot be streamed",
    "body-204": "a 204 response has no body",
    "too-big": "more than the limit of %d (--max-response-body)" % MAX_RESPONSE_BODY,
    "nothing": "returned",
}


def assert_500_logged(server, target, text, kind):
    since = len(server.log())
    status, headers, _ = server.get(target)
    assert status == 500
    assert header_list(headers, "x-injected") == []
    new = server.wait_log(text, since)
    name = os.path.join(HANDLERS, "echo" + EXT[server.lang])
    mine = [line for line in new if line.startswith("baton-httpd: %s handler %s: " %
                                                     (server.lang, name))]
    assert len(mine) == 1, new
    assert kind + ": " in mine[0] and text in mine[0], mine[0]
    # and the server goes on
    assert server.get("/status/201")[0] == 201


@pytest.mark.parametrize("rule", sorted(RULES))
def test_broken_rule_is_500(server, rule):
    assert_500_logged(server, "/bad/" + rule, RULES[rule], "broke a rule")


def test_error_is_500(server):
    text = "boom: 1" if server.lang == "scheme" else "echo.lua:"
    assert_500_logged(server, "/error", text, "error")


def test_runtime_error_is_500(server):
    text = "(car) bad argument type" if server.lang == "scheme" else "attempt to index a nil"
    assert_500_logged(server, "/runtime-error", text, "error")


def test_errors_under_concurrency(server):
    """Errors and good requests at once, from several clients."""
    failures = []

    def client(i):
        try:
            for j in range(10):
                target = "/error" if (i + j) % 3 == 0 else "/status/201"
                want = 500 if target == "/error" else 201
                got = server.get(target)[0]
                if got != want:
                    failures.append((target, got))
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(repr(e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 3)
    assert not failures


# --- Lua: a state per worker, or one shared ----------------------------------------------

def lua_states(httpd, tmp, extra, n=400, clients=8, spin_ms=1):
    """Send n /state requests from parallel clients: {state: [counts]}."""
    srv = Server(httpd, tmp, ["lua", os.path.join(HANDLERS, "echo.lua")], extra)
    seen, lock, failures = {}, threading.Lock(), []

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=TIMEOUT)
        try:
            for _ in range(n // clients):
                conn.request("GET", "/state?spin=%d" % spin_ms)
                resp = conn.getresponse()
                state, count = resp.read().decode().rsplit(" ", 1)
                with lock:
                    seen.setdefault(state, []).append(int(count))
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(repr(e))
        finally:
            conn.close()

    try:
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT * 3)
    finally:
        stopped_cleanly(srv)
    assert not failures
    return seen


def test_lua_state_per_worker(httpd, tmp_path):
    seen = lua_states(httpd, str(tmp_path), ["--workers", "2"])
    # Each state counts only the requests it served: no count twice.
    for counts in seen.values():
        assert sorted(counts) == list(range(1, len(counts) + 1))
    assert sum(len(c) for c in seen.values()) == 400
    assert len(seen) == 2, "both workers' states should have served: %r" % {
        k: len(v) for k, v in seen.items()}


def test_lua_shared_state(httpd, tmp_path):
    seen = lua_states(httpd, str(tmp_path), ["--workers", "2", "--lua-shared"])
    assert len(seen) == 1
    assert sorted(next(iter(seen.values()))) == list(range(1, 401))


def test_lua_load_errors_stop_start_up(httpd, tmp_path):
    for text, why in [("return function(", "expected"),
                      ("return 42", "must return a function, not a number"),
                      ("error('at load')", "at load")]:
        path = tmp_path / "bad.lua"
        path.write_text(text)
        proc = subprocess.run([httpd, "--port", "0", "--handler", "lua", str(path)],
                              stderr=subprocess.PIPE, timeout=TIMEOUT)
        assert proc.returncode == 1 and why in proc.stderr.decode(), proc.stderr


# --- Scheme: compiled, interpreted, a shared object --------------------------------------

def test_scheme_compiled_by_default(server):
    if server.lang != "scheme":
        pytest.skip("Scheme only")
    assert server.get("/mode")[2] == b"compiled"


@pytest.fixture(scope="module")
def scheme_eval(httpd, tmp_path_factory):
    srv = Server(httpd, str(tmp_path_factory.mktemp("eval")),
                 ["scheme", os.path.join(HANDLERS, "echo.scm")], ["--scheme-eval"])
    yield srv
    stopped_cleanly(srv)


def test_scheme_eval_mode(scheme_eval):
    srv = scheme_eval
    assert srv.get("/mode")[2] == b"interpreted"
    status, _, text = srv.request("POST", "/echo", headers=[("X-Rep", "a"), ("x-rep", "b")],
                                  body=b"abc")
    assert status == 200 and b"header x-rep: a, b\n" in text
    body = os.urandom(1 << 20)
    assert srv.request("POST", "/body", body=body)[2] == body
    since = len(srv.log())
    assert srv.get("/runtime-error")[0] == 500
    assert any("error: (car) bad argument type" in line
               for line in srv.wait_log("bad argument", since))
    assert srv.get("/bad/header-crlf")[0] == 500
    assert srv.get("/status/418")[0] == 418


def test_scheme_shared_object(httpd, tmp_path):
    csc = os.environ.get("BATON_HTTPD_CSC") or shutil.which("csc")
    if csc is None:
        pytest.skip("no csc")
    src = tmp_path / "direct.scm"
    src.write_text('(define baton-httpd-handler\n'
                   '  (lambda (request body)\n'
                   '    (values 202 \'((content-type . "text/plain")) "from a .so")))\n')
    so = tmp_path / "direct.so"
    subprocess.run([csc, "-shared", "-o", str(so), str(src)], check=True, timeout=120)
    srv = Server(httpd, str(tmp_path), ["scheme", str(so)])
    try:
        assert srv.get("/")[0:3:2] == (202, b"from a .so")
    finally:
        stopped_cleanly(srv)


@pytest.mark.parametrize("text,why", [
    ("(lambda (request body)\n", "csc could not compile"),       # unbalanced
    ("(define-record-type p (make-p x y) p? (x p-x))\n(lambda (r b) (values '() \"\"))\n",
     "csc could not compile"),                                   # a syntax error
    ("(define x 1)\n42\n", "the handler must be a procedure, not 42"),
    ("(error \"at load\")\n(lambda (r b) (values '() \"\"))\n", "at load"),
])
@pytest.mark.parametrize("mode", [[], ["--scheme-eval"]])
def test_scheme_load_errors_stop_start_up(httpd, tmp_path, text, why, mode):
    path = tmp_path / "bad.scm"
    path.write_text(text)
    proc = subprocess.run([httpd, "--port", "0", "--handler", "scheme", str(path), *mode],
                          stderr=subprocess.PIPE, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    if mode and why == "csc could not compile":
        why = "baton-httpd: scheme: "  # the reader's or expander's message instead
    assert why in err, err
    assert "listening" not in err


# --- compute workers: handlers on workers of their own ---------------------------

def timed_get(port, target, timeout=TIMEOUT):
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", target)
        r = c.getresponse()
        return r.status, r.getheaders(), r.read(), time.monotonic() - t0
    finally:
        c.close()


@pytest.mark.parametrize("lang", ["lua", "scheme"])
def test_compute_workers_keep_io_going(httpd, tmp_path, lang):
    """With --compute-workers 1, handlers computing for 400 ms each keep
    the compute worker busy while the I/O worker still answers /_stats
    (the admin listener's, on the I/O worker) at once; every slow request
    gets its answer; /_stats shows the handle stage with what went
    through it."""
    admin = _free_port()
    srv = Server(httpd, str(tmp_path), [lang, os.path.join(HANDLERS, "echo" + EXT[lang])],
                 ["--workers", "1", "--compute-workers", "1", "--admin", "127.0.0.1:%d" % admin])
    try:
        results = []
        threads = [threading.Thread(target=lambda: results.append(
            timed_get(srv.port, "/spin?ms=400"))) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.2)  # the first is computing, the others queue
        worst = 0.0
        for _ in range(10):
            status, _, body, took = timed_get(admin, "/_stats")
            assert status == 200
            worst = max(worst, took)
        for t in threads:
            t.join(TIMEOUT)
        assert [r[0] for r in results] == [200, 200, 200]
        assert all(r[2].startswith(b"spun ") for r in results)
        # A stalled I/O worker would make these wait for a 400 ms handler.
        assert worst < 0.2, f"/_stats took {worst:.3f} s while handlers computed"
        # The stage counts a job completed once its handler task is back
        # from it, which may be just after the client has read the
        # response the job posted: look again for a moment.
        for _ in range(100):
            doc = json.loads(timed_get(admin, "/_stats")[2])
            stage = doc["stages"][2]
            if stage["completed"] >= 3:
                break
            time.sleep(0.02)
        assert stage["name"] == "handle" and stage["completed"] >= 3
        assert stage["submitted"] == stage["completed"] + stage["running"] + stage["queued"]
        assert stage["handler_ns"] >= 3 * 350_000_000
    finally:
        stopped_cleanly(srv)


def test_compute_queue_full_gets_503_with_retry_after(httpd, tmp_path):
    """The handle stage's queue is bounded: with one handler at a time, a
    queue of 1 and a 100 ms queue timeout, the requests that find it full
    past the timeout get 503 with Retry-After; the rest are answered."""
    admin = _free_port()
    srv = Server(httpd, str(tmp_path), ["lua", os.path.join(HANDLERS, "echo.lua")],
                 ["--workers", "1", "--compute-workers", "1", "--admin", "127.0.0.1:%d" % admin,
                  "--handler-concurrency", "1", "--handler-queue", "1",
                  "--queue-timeout", "100"])
    try:
        results = []
        lock = threading.Lock()

        def one():
            r = timed_get(srv.port, "/spin?ms=300")
            with lock:
                results.append(r)
        threads = [threading.Thread(target=one) for _ in range(5)]
        for t in threads:
            t.start()
            time.sleep(0.02)
        for t in threads:
            t.join(TIMEOUT)
        statuses = sorted(r[0] for r in results)
        assert statuses.count(200) >= 2 and statuses.count(503) >= 1, statuses
        assert set(statuses) <= {200, 503}
        for status, headers, _, _ in results:
            if status == 503:
                assert dict((k.lower(), v) for k, v in headers)["retry-after"] == "1"
        doc = json.loads(timed_get(admin, "/_stats")[2])
        assert doc["stages"][2]["rejected"] == statuses.count(503)
        # and it still serves once the burst is over
        assert timed_get(srv.port, "/spin?ms=1")[0] == 200
    finally:
        stopped_cleanly(srv)


def test_limits_endpoint_changes_the_stage(httpd, tmp_path):
    """POST /_limits changes the handle stage's concurrency and queue limit
    while serving and answers the new snapshot; a bad name or value is a
    400 that changes nothing. The public port answers 404 there."""
    admin = _free_port()
    srv = Server(httpd, str(tmp_path), ["lua", os.path.join(HANDLERS, "echo.lua")],
                 ["--workers", "1", "--compute-workers", "1", "--admin", "127.0.0.1:%d" % admin])
    try:
        assert srv.request("POST", "/_limits?handler_concurrency=1")[0] == 404
        assert srv.request("GET", "/_stats")[0] == 404
        c = http.client.HTTPConnection("127.0.0.1", admin, timeout=TIMEOUT)
        c.request("POST", "/_limits?handler_concurrency=3&handler_queue=7&max_inflight=99")
        r = c.getresponse()
        doc = json.loads(r.read())
        assert r.status == 200
        stage = doc["stages"][2]
        assert stage["concurrency"] == 3 and stage["queue_limit"] == 7
        assert {p["name"]: p["capacity"] for p in doc["pools"]}["in-flight"] == 99
        for bad in ["/_limits?handler_queue=0", "/_limits?nope=1", "/_limits?handler_queue=x",
                    "/_limits?handler_queue=5000"]:
            c.request("POST", bad)
            r = c.getresponse()
            r.read()
            assert r.status == 400, bad
        c.request("GET", "/_stats")
        stage = json.loads(c.getresponse().read())["stages"][2]
        assert stage["concurrency"] == 3 and stage["queue_limit"] == 7
        c.close()
    finally:
        stopped_cleanly(srv)


def test_bad_handler_queue_is_refused(httpd):
    """A handler queue of 0 is refused at start with a message."""
    p = subprocess.run([httpd, "--port", "0", "--workers", "1", "--compute-workers", "0",
                        "--handler-queue", "0"], capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 2 and b"--handler-queue" in p.stderr


def test_lua_request_kept_past_its_call_has_no_headers(httpd, tmp_path):
    """request.headers is built when first read, during the call; a
    request table a handler keeps for later, its headers unread, reads
    them as nil instead of another request's (or freed memory)."""
    srv = Server(httpd, str(tmp_path), ["lua", os.path.join(HANDLERS, "echo.lua")],
                 ["--workers", "1"])
    try:
        assert srv.get("/kept")[2] == b"nil"   # nothing kept yet
        assert srv.get("/kept")[2] == b"nil"   # the first one's: its call is over
        assert b"header Host:" in srv.get("/echo")[2]  # read during the call
    finally:
        stopped_cleanly(srv)
