# SPDX-License-Identifier: MIT
"""baton-httpd's bounds on handlers that never return.

--handler-timeout: a request not answered in time gets 504 and its handler
is cancelled (below, with the C routes of --handler debug).

--drain-timeout: SIGTERM drains the requests in flight for at most that
long, then the server exits anyway, with one stderr line saying what it
dropped. The endless handler is a Lua loop (tests/http/handlers/endless.lua)
on a compute worker, so the I/O worker keeps serving meanwhile. Every
socket and wait here has a timeout.
"""
import os
import signal
import socket
import subprocess
import time

import pytest

from test_httpd import _free_port, wait_accepting

HERE = os.path.dirname(os.path.abspath(__file__))
ENDLESS = os.path.join(HERE, "handlers", "endless.lua")


def start_lua(httpd, path, *extra):
    """baton-httpd with the Lua handler `path` on a free port (skips the
    test where the server was built without Lua)."""
    port = _free_port()
    proc = subprocess.Popen(
        [httpd, "--port", str(port), "--address", "127.0.0.1", "--handler", "lua", path,
         *extra],
        stderr=subprocess.PIPE)
    if not wait_accepting(proc, port, 10.0):
        proc.kill()
        err = proc.communicate(timeout=10)[1].decode(errors="replace")
        if "built without the lua handler" in err:
            pytest.skip("baton-httpd built without Lua")
        raise RuntimeError("baton-httpd did not start: " + err)
    return proc, port


def start(httpd, *extra):
    return start_lua(httpd, ENDLESS, "--compute-workers", "1", *extra)


def send_spin(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /spin HTTP/1.1\r\nHost: t\r\n\r\n")
    return s


def get(port, path):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        return data


def test_drain_timeout_exits_with_endless_handler(httpd):
    drain_ms = 1500
    proc, port = start(httpd, "--drain-timeout", str(drain_ms))
    spin = send_spin(port)
    try:
        time.sleep(0.3)  # the handler is looping now
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=drain_ms / 1000 + 5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=10)
            pytest.fail("SIGTERM with an endless handler did not exit")
        took = time.monotonic() - t0
        err = err.decode(errors="replace")
        assert took <= drain_ms / 1000 + 1.0, f"exited after {took:.2f} s"
        assert took >= drain_ms / 1000 - 0.1, f"did not drain first ({took:.2f} s)"
        assert "drain timeout after 1500 ms" in err, err
        assert "1 handler(s) running" in err, err
        assert proc.returncode != 0
    finally:
        spin.close()


def test_drain_without_stuck_handler_exits_clean(httpd):
    proc, port = start(httpd, "--drain-timeout", "5000")
    assert get(port, "/").startswith(b"HTTP/1.1 200")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 5.0
    assert proc.returncode == 0, err.decode(errors="replace")
    assert b"drain timeout" not in err


def test_drain_timeout_rejects_bad_value(httpd):
    r = subprocess.run([httpd, "--drain-timeout", "-1"], capture_output=True, timeout=10)
    assert r.returncode == 2
    assert b"--drain-timeout wants an integer" in r.stderr


# --- --handler-timeout --------------------------------------------------------
#
# The routes of `--handler debug` (apps/httpd/hello.c) that never answer:
# /spin computes for ever, /spin-check until its deadline, /spin-cancel
# until its task is cancelled (yielding every millisecond), /block sleeps
# until cancelled, /stream-block streams a piece and then sleeps. Each shape
# runs them: the I/O-worker one (handler in the connection's task, cancelled
# by the watchdog) and the compute one (handler in a task of its own,
# abandoned by the connection at the deadline). Under ASan a use of the
# abandoned job's memory would abort the server, and a leak fails its exit.

TIMEOUT_MS = 500
# How late a 504 may be: the watchdog looks every tenth of the timeout, and
# a loaded machine (ASan, other tests) is slow to schedule us.
LATE_S = 1.0

SHAPES = {
    "io1": ["--workers", "1"],
    "io2": ["--workers", "2"],
    "compute": ["--workers", "1", "--compute-workers", "1"],
}


def start_debug(httpd, *extra, timeout_ms=TIMEOUT_MS):
    port = _free_port()
    admin = _free_port()
    proc = subprocess.Popen(
        [httpd, "--port", str(port), "--address", "127.0.0.1", "--handler", "debug",
         "--admin", str(admin), "--handler-timeout", str(timeout_ms), *extra],
        stderr=subprocess.PIPE)
    if not wait_accepting(proc, port, 10.0):
        proc.kill()
        raise RuntimeError("baton-httpd did not start: " +
                           proc.communicate(timeout=10)[1].decode(errors="replace"))
    return proc, port, admin


def stop_clean(proc):
    """SIGTERM, and the drain must end by itself: every cancelled handler
    returned. The exit status is 0 (under ASan: no error, no leak).
    Returns the server's stderr."""
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=10)
        pytest.fail("the server did not drain")
    err = err.decode(errors="replace")
    assert proc.returncode == 0, err
    assert "AddressSanitizer" not in err and "drain timeout" not in err, err
    return err


def timed_get(port, path):
    """(status line, seconds, response) of one request on a fresh connection."""
    t0 = time.monotonic()
    data = get(port, path)
    return data.split(b"\r\n", 1)[0], time.monotonic() - t0, data


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("route", ["/block", "/spin-cancel", "/spin-check"])
def test_handler_timeout_answers_504(httpd, shape, route):
    proc, port, _ = start_debug(httpd, *SHAPES[shape])
    try:
        status, took, data = timed_get(port, route)
        assert status == b"HTTP/1.1 504 Gateway Timeout", data
        assert TIMEOUT_MS / 1000 - 0.05 <= took <= TIMEOUT_MS / 1000 + LATE_S, took
        # The connection closes after it, as after every error answer.
        assert b"Connection: close" in data
        # The worker goes on: the next requests are answered.
        for _ in range(3):
            assert get(port, "/").startswith(b"HTTP/1.1 200")
    finally:
        stop_clean(proc)


@pytest.mark.parametrize("shape", SHAPES)
def test_handler_timeout_frees_the_slot(httpd, shape):
    """With one handler slot, a cancelled handler must give it back: the
    requests after the 504 would otherwise wait for it and get 503."""
    proc, port, _ = start_debug(httpd, *SHAPES[shape], "--handler-concurrency", "1",
                                "--queue-timeout", "3000")
    try:
        for _ in range(2):
            assert get(port, "/block").startswith(b"HTTP/1.1 504")
            t0 = time.monotonic()
            assert get(port, "/").startswith(b"HTTP/1.1 200")
            assert time.monotonic() - t0 < 2.5, "the slot stayed held"
    finally:
        stop_clean(proc)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("route", ["/block", "/spin-cancel"])
def test_others_served_while_a_handler_overstays(httpd, shape, route):
    """Handlers that block or yield leave their worker to the others: cheap
    requests are answered before the slow one's deadline has come."""
    proc, port, _ = start_debug(httpd, *SHAPES[shape], timeout_ms=3000)
    slow = []
    try:
        t0 = time.monotonic()
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET " + route.encode() + b" HTTP/1.1\r\nHost: t\r\n\r\n")
            slow.append(s)
        for _ in range(5):
            assert get(port, "/").startswith(b"HTTP/1.1 200")
        # Before the slow ones' deadline: they did not wait for them.
        assert time.monotonic() - t0 < 2.5, "cheap requests waited for the slow ones"
        for s in slow:
            assert s.recv(4096).startswith(b"HTTP/1.1 504")
        assert time.monotonic() - t0 <= 3.0 + LATE_S
        assert get(port, "/").startswith(b"HTTP/1.1 200")
    finally:
        for s in slow:
            s.close()
        stop_clean(proc)


@pytest.mark.parametrize("shape", ["io1", "compute"])
def test_streamed_response_cut_at_deadline(httpd, shape):
    """A stream whose handler stops sending is cut at the deadline: the
    head and the first chunk arrive, then the connection closes without
    the last chunk (the status was sent already); the piece the handler
    tries after its cancel is not sent."""
    proc, port, _ = start_debug(httpd, *SHAPES[shape])
    try:
        t0 = time.monotonic()
        data = get(port, "/stream-block")
        took = time.monotonic() - t0
        assert data.startswith(b"HTTP/1.1 200"), data
        assert b"Transfer-Encoding: chunked" in data
        body = data.split(b"\r\n\r\n", 1)[1]
        assert body == b"6\r\nfirst\n\r\n", body
        assert took <= TIMEOUT_MS / 1000 + LATE_S
        assert get(port, "/").startswith(b"HTTP/1.1 200")
    finally:
        stop_clean(proc)


def test_endless_c_handler_on_compute_worker(httpd):
    """A C handler that computes for ever cannot be stopped: it keeps its
    compute worker. Its client still gets 504 in time, and the I/O worker
    (here the admin listener's /_stats) answers during and after."""
    proc, port, admin = start_debug(httpd, "--workers", "1", "--compute-workers", "1",
                                    "--drain-timeout", "1000")
    try:
        spin = socket.create_connection(("127.0.0.1", port), timeout=10)
        t0 = time.monotonic()
        spin.sendall(b"GET /spin HTTP/1.1\r\nHost: t\r\n\r\n")
        time.sleep(0.1)
        assert get(admin, "/_stats").startswith(b"HTTP/1.1 200")
        assert spin.recv(4096).startswith(b"HTTP/1.1 504")
        assert time.monotonic() - t0 <= TIMEOUT_MS / 1000 + LATE_S
        stats = get(admin, "/_stats")
        assert stats.startswith(b"HTTP/1.1 200")
        # The handler is still counted as running: it holds its slot.
        assert b'"running":1' in stats.replace(b" ", b""), stats
        spin.close()
    finally:
        # It never returns: the drain ends by its timeout.
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        assert b"1 handler(s) running" in err, err


def test_endless_lua_handler_on_compute_worker(httpd):
    """The same with the Lua loop of endless.lua: 504 in time."""
    proc, port = start(httpd, "--handler-timeout", str(TIMEOUT_MS), "--drain-timeout", "1000")
    spin = send_spin(port)
    try:
        t0 = time.monotonic()
        assert spin.recv(4096).startswith(b"HTTP/1.1 504")
        assert time.monotonic() - t0 <= TIMEOUT_MS / 1000 + LATE_S
    finally:
        spin.close()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)


@pytest.mark.parametrize("layout", [["--workers", "1"],
                                    ["--workers", "1", "--compute-workers", "1"]],
                         ids=["io", "compute"])
def test_endless_lua_handler_is_stopped(httpd, layout):
    """A Lua loop is stopped between two slices once its deadline has
    passed: the client gets 504, the worker serves the next request of the
    same Lua state, and the drain ends by itself (exit 0): nothing is left
    running."""
    proc, port = start_lua(httpd, ENDLESS, *layout, "--handler-timeout", str(TIMEOUT_MS),
                           "--drain-timeout", "5000")
    try:
        spin = send_spin(port)
        t0 = time.monotonic()
        assert spin.recv(4096).startswith(b"HTTP/1.1 504")
        assert time.monotonic() - t0 <= TIMEOUT_MS / 1000 + LATE_S
        spin.close()
        t0 = time.monotonic()
        assert get(port, "/").startswith(b"HTTP/1.1 200")
        assert time.monotonic() - t0 <= LATE_S
    finally:
        stop_clean(proc)


def test_handler_timeout_rejects_bad_value(httpd):
    r = subprocess.run([httpd, "--handler-timeout", "-5"], capture_output=True, timeout=10)
    assert r.returncode == 2
    assert b"--handler-timeout wants an integer" in r.stderr
