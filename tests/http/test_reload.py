# SPDX-License-Identifier: MIT
"""Reloading the handler with SIGHUP (include/baton/http.h rule 9): under
load, a Lua file rewritten and reloaded many times loses no request; a
request in flight finishes on the handler it began with while new ones get
the new one; a file that no longer loads leaves the running handler in
place; and the server still drains and exits 0 (under ASan: the replaced
handlers' states were all released, nothing used after its release)."""
import os
import signal
import socket
import threading
import time

import pytest

from test_limits import start_lua, stop_clean

HANDLER = """-- version {v}
return function(request, body)
  if request.path == "/slow" then
    baton.sleep(0.4)
    return 200, {{ ["Content-Type"] = "text/plain" }}, "{v}-slow\\n"
  end
  return 200, {{ ["Content-Type"] = "text/plain" }}, "{v}\\n"
end
"""

LAYOUTS = {"io": ["--workers", "2"],
           "compute": ["--workers", "2", "--compute-workers", "1"]}


def write_handler(path, version):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(HANDLER.format(v=version))
    os.replace(tmp, path)


def start(httpd, path, layout):
    return start_lua(httpd, path, *LAYOUTS[layout])


def get(port, path, sock=None):
    """Status line and body of one request (on `sock` if given, kept open)."""
    own = sock is None
    s = sock or socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: t\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        length = int([h.split(b":")[1] for h in head.split(b"\r\n")
                      if h.lower().startswith(b"content-length:")][0])
        while len(rest) < length:
            chunk = s.recv(4096)
            if not chunk:
                raise ConnectionError("closed")
            rest += chunk
        return head.split(b"\r\n", 1)[0], rest[:length]
    finally:
        if own:
            s.close()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reload_under_load_loses_nothing(httpd, tmp_path, layout):
    path = str(tmp_path / "handler.lua")
    write_handler(path, "v0")
    proc, port = start(httpd, path, layout)
    stop = threading.Event()
    counts = {"ok": 0, "failed": []}
    lock = threading.Lock()

    def client():
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            while not stop.is_set():
                try:
                    status, body = get(port, "/", sock)
                    ok = status.startswith(b"HTTP/1.1 200") and body.startswith(b"v")
                except OSError as e:
                    status, body, ok = str(e).encode(), b"", False
                with lock:
                    if ok:
                        counts["ok"] += 1
                    else:
                        counts["failed"].append((status, body))
                if not ok:
                    sock.close()
                    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        finally:
            sock.close()

    threads = [threading.Thread(target=client) for _ in range(8)]
    try:
        for t in threads:
            t.start()
        reloads = 100
        for i in range(1, reloads + 1):
            write_handler(path, f"v{i}")
            proc.send_signal(signal.SIGHUP)
            time.sleep(0.02)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(20)
        assert counts["failed"] == [], counts["failed"][:5]
        assert counts["ok"] > 100
        # Settled: the last version answers.
        deadline = time.monotonic() + 10
        while get(port, "/")[1] != f"v{reloads}\n".encode():
            assert time.monotonic() < deadline, "the last reload never took effect"
            time.sleep(0.05)
    finally:
        stop.set()
        err = stop_clean(proc)
    assert err.count("reloaded") >= 1, err


def test_request_in_flight_finishes_on_its_handler(httpd, tmp_path):
    path = str(tmp_path / "handler.lua")
    write_handler(path, "old")
    proc, port = start(httpd, path, "io")
    try:
        result = {}
        slow = threading.Thread(target=lambda: result.update(r=get(port, "/slow")))
        slow.start()
        time.sleep(0.15)  # it is asleep inside the old handler now
        write_handler(path, "new")
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while get(port, "/")[1] != b"new\n":
            assert time.monotonic() < deadline, "the reload never took effect"
            time.sleep(0.02)
        slow.join(10)
        assert result["r"] == (b"HTTP/1.1 200 OK", b"old-slow\n")
    finally:
        stop_clean(proc)


def test_reload_of_a_broken_file_keeps_the_handler(httpd, tmp_path):
    path = str(tmp_path / "handler.lua")
    write_handler(path, "good")
    proc, port = start(httpd, path, "io")
    try:
        with open(path, "w") as f:
            f.write("return function(request, body\n")  # a syntax error
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert get(port, "/") == (b"HTTP/1.1 200 OK", b"good\n")
    finally:
        err = stop_clean(proc)
    assert "reload failed" in err, err
