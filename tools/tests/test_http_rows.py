# SPDX-License-Identifier: MIT
"""The http suite's connection rows (bench/http/idle_conns.py,
many_conns.py, pipeline.py): what the manifest runs in each mode, the
alternation of servers, and the idle-connection client against a small
server on loopback that answers some connections and drops others."""

import socket
import sys
import threading
from pathlib import Path

import pytest

from baton_bench.manifest import load_suite

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "http"))
import connlib  # noqa: E402


def _once(mode):
    suite = load_suite(ROOT / "bench" / "http" / "suite.json")
    return suite.once_for(mode)


def _script(entry):
    return next((Path(word).name for word in entry["cmd"] if word.endswith(".py")), None)


def _arg(entry, name):
    cmd = entry["cmd"]
    return cmd[cmd.index(name) + 1] if name in cmd else None


@pytest.mark.parametrize("mode", ["quick", "default", "full"])
def test_every_mode_runs_the_three_rows_bounded_below_their_timeout(mode):
    once = _once(mode)
    scripts = [_script(e) for e in once]
    for name in ("idle_conns.py", "many_conns.py", "pipeline.py"):
        assert name in scripts, f"{mode}: no {name}"
    for entry in once:
        if _script(entry) in ("idle_conns.py", "many_conns.py", "pipeline.py"):
            # The script stops itself and reports before the driver kills it.
            assert int(_arg(entry, "--limit")) < entry["timeout"]
    idle = [e for e in once if _script(e) == "idle_conns.py"]
    assert any(_arg(e, "--connections") == "15000" and _arg(e, "--want") is None
               for e in idle)
    assert any(_arg(e, "--many") == "10000" for e in once if _script(e) == "many_conns.py")
    assert any(_arg(e, "--pipeline") == "16" and _arg(e, "--connections") == "100"
               for e in once if _script(e) == "pipeline.py")
    assert any(_arg(e, "--want") == "1000000" for e in idle) == (mode == "full")
    if mode != "quick":
        assert {_arg(e, "--runs") for e in once if _script(e) in
                ("idle_conns.py", "many_conns.py", "pipeline.py")} == {"3"}


def test_both_backends_of_baton_and_each_peer_once():
    servers = connlib.servers(["baton-c", "nginx", "h2o"])
    assert [str(s) for s in servers] == ["baton-c/epoll", "baton-c/io_uring", "nginx", "h2o"]
    assert servers[0].params() == {"backend": "epoll"} and servers[2].params() == {}
    assert not servers[0].peer() and servers[3].peer()


def test_the_rounds_alternate_so_each_server_runs_before_and_after_each_other():
    orders = [order for _, order in connlib.rounds(["a", "b", "c"], 3)]
    assert orders == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    for x in "abc":
        for y in "abc":
            if x != y:
                assert any(o.index(x) < o.index(y) for o in orders)


def test_the_soft_descriptor_limit_is_raised_to_the_hard_one():
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
        got = connlib.raise_nofile()
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == got
        if hard != resource.RLIM_INFINITY:
            assert got == hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class _Hello:
    """A loopback server answering each ``GET`` with the hello body; the
    connections numbered in ``drop`` are closed at their second request."""

    def __init__(self, drop=()):
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self.listener.getsockname()[1]
        self.drop = set(drop)
        self.threads = []
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            index = self.accepted
            self.accepted += 1
            t = threading.Thread(target=self._serve, args=(conn, index), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, conn, index):
        answer = (b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n" + connlib.run_http.BODY)
        seen = 0
        with conn:
            buf = b""
            while True:
                try:
                    chunk = conn.recv(4096)
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                while b"\r\n\r\n" in buf:
                    _, buf = buf.split(b"\r\n\r\n", 1)
                    seen += 1
                    if seen == 2 and index in self.drop:
                        return
                    conn.sendall(answer)

    def close(self):
        self.listener.close()


def test_idle_connections_are_opened_answered_and_counted():
    server = _Hello()
    try:
        socks = connlib.open_idle(server.port, 40, connlib.time.monotonic() + 20)
        try:
            assert len(socks) == 40
            assert connlib.still_answering(socks, connlib.time.monotonic() + 10) == (40, 0, 0)
        finally:
            connlib.close_all(socks)
    finally:
        server.close()


def test_an_idle_connection_that_is_closed_is_counted_not_ignored():
    server = _Hello(drop={3, 7})
    try:
        socks = connlib.open_idle(server.port, 10, connlib.time.monotonic() + 20)
        try:
            answered, closed, silent = connlib.still_answering(
                socks, connlib.time.monotonic() + 10)
        finally:
            connlib.close_all(socks)
    finally:
        server.close()
    assert (answered, closed, silent) == (8, 2, 0)
