"""baton-httpd's bounds on handlers that never return.

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


def start(httpd, *extra):
    port = _free_port()
    proc = subprocess.Popen(
        [httpd, "--port", str(port), "--address", "127.0.0.1", "--handler", "lua", ENDLESS,
         "--compute-workers", "1", *extra],
        stderr=subprocess.PIPE)
    if not wait_accepting(proc, port, 10.0):
        proc.kill()
        err = proc.communicate(timeout=10)[1].decode(errors="replace")
        if "built without the lua handler" in err:
            pytest.skip("baton-httpd built without Lua")
        raise RuntimeError("baton-httpd did not start: " + err)
    return proc, port


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
