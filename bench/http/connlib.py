# SPDX-License-Identifier: MIT
"""What the connection rows of the http suite share (idle_conns.py,
many_conns.py, pipeline.py): the servers they alternate, the descriptor
limit, the server's memory, and a client that holds thousands of idle
keep-alive connections and checks that each still answers.

The servers: baton-httpd with the hello handler and one I/O worker, once
per reactor backend (``--io epoll|io_uring`` and ``BATON_IO_BACKEND``, and
checked in /proc afterwards: the backend's descriptor must be there), and
the peers nginx and h2o with the suite's own configurations
(tools/baton_bench/httpbench.py), all pinned to CPU 1 (``taskset``).
Standard library only.
"""

import argparse
import json
import os
import resource
import selectors
import signal
import socket
import sys
import tempfile
import time

# The runner (tools/baton_bench/httpbench.py): server handling and parsers.
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))
from baton_bench import httpbench as run_http  # noqa: E402

BACKENDS = ("epoll", "io_uring")
#: The descriptor that shows a backend is in use (/proc/PID/fd).
BACKEND_FD = {"epoll": "anon_inode:[eventpoll]", "io_uring": "anon_inode:[io_uring]"}
REQUEST = b"GET / HTTP/1.1\r\nHost: idle\r\n\r\n"
#: Descriptors a process keeps for itself besides its connections.
RESERVE_FDS = 1000
#: Connections per loopback source address: well below the ephemeral port
#: range (/proc/sys/net/ipv4/ip_local_port_range, 28,232 ports by default,
#: half of them the even ones connect() tries first).  connect()'s search
#: for a free port slows down as one address's ports fill up (6 s for 15,000
#: from one address here, most of it in the kernel), so the connections are
#: spread over 127.0.0.1, .2, ... round-robin, this many per address at most;
#: past 64K ports per address it is a necessity, not only speed.
PER_ADDRESS = 4000
IP_BIND_ADDRESS_NO_PORT = 24     # linux/in.h


class Server:
    """One of the rows' servers: ``name`` is what the JSON lines call it
    (``baton-c`` for both backends, ``nginx``, ``h2o``), ``backend`` the
    reactor of baton-httpd (None for the peers)."""

    def __init__(self, name, backend=None):
        self.name = name
        self.backend = backend

    def __str__(self):
        return f"{self.name}/{self.backend}" if self.backend else self.name

    def params(self):
        return {"backend": self.backend} if self.backend else {}

    def peer(self):
        return not self.name.startswith("baton-")


def servers(names):
    """``baton-c`` gives one server per backend; peers one each."""
    out = []
    for name in names:
        if name == "baton-c":
            out += [Server("baton-c", b) for b in BACKENDS]
        else:
            out.append(Server(name))
    return out


def find_httpd(build):
    return next((os.path.abspath(c) for c in (os.path.join(build, d, "baton-httpd")
                                               for d in run_http.HTTPD_DIRS)
                 if os.access(c, os.X_OK)), None)


def missing_reason(server, build):
    """Why ``server`` cannot run here, or None."""
    if server.name == "baton-c":
        return None if find_httpd(build) else "baton-httpd not built"
    if not run_http.find_tool(server.name):
        return f"{server.name} not installed"
    return None


def raise_nofile():
    """The soft descriptor limit raised to the hard one, in this process
    and so in the servers and clients it starts; returns the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def rss_bytes(pid):
    """The resident memory of the server: the process and its children
    (nginx answers from worker processes under its master)."""
    total = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return total
    return total + sum(rss_bytes(c) for c in children)


def fd_links(pid):
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    links = []
    for name in names:
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{name}"))
        except OSError:
            pass
    return links


def start(server, port, tmp, build, max_conns=10000):
    """Start ``server`` on 127.0.0.1:port pinned to CPU 1, wait until it
    accepts, check the body and (baton) the backend; the httpbench.Server
    (stop it in a finally).  ``max_conns``: connections it must hold."""
    room = max_conns + RESERVE_FDS
    if server.name == "baton-c":
        argv = [find_httpd(build), "--address", "127.0.0.1", "--port", str(port),
                "--workers", "1", "--handler", "hello", "--io", server.backend,
                "--max-connections", str(room)]
        env = dict(os.environ, BATON_IO_BACKEND=server.backend)
    else:
        argv, env = run_http.server_command(argparse.Namespace(
            impl=server.name, cores=1, port=port, build=build, src=REPO, httpd=None,
            # Twice the connections held: nginx closes idle keep-alive
            # connections to make room once fewer than 1/16 of its
            # worker_connections are free (ngx_drain_connections), which at
            # 19,000 held and wrk's 100 beside them it did to 192 of them.
            worker_connections=max(16384, 2 * room)), tmp)
    if run_http.port_in_use(port):
        raise run_http.Failed(f"port {port} on 127.0.0.1 is already in use")
    proc = run_http.Server(argv, env if env is not None else dict(os.environ), tmp, pin=True)
    try:
        proc.wait_ready(port, run_http.START_TIMEOUT)
        run_http.check_body(port)
        if server.backend:
            links = fd_links(proc.proc.pid)
            if BACKEND_FD[server.backend] not in links:
                raise run_http.Failed(f"baton-httpd --io {server.backend}: no "
                                      f"{BACKEND_FD[server.backend]} among its descriptors")
    except BaseException:
        proc.stop()
        raise
    return proc


def rounds(items, runs):
    """``runs`` rounds over ``items``, each round rotated by one, so that
    every server runs before and after every other (alternation)."""
    for r in range(runs):
        k = r % len(items)
        yield r, items[k:] + items[:k]


def run_rounds(todo, runs, measure, prog, prefix, pause, keep_going=False):
    """Measure every server of ``todo`` in ``runs`` alternating rounds
    (rounds()), each in a scratch directory: ``measure(server, tmp)`` gives
    one run's result or raises run_http.Failed. A failed server is left out
    of the later rounds, unless ``keep_going`` (its other rounds still
    count). Returns (results: str(server) -> runs, failures: str(server) ->
    "round R: reason; ...", interrupted: bool); an Interrupted (the alarm
    of bound()) ends the rounds and fails every server with no run."""
    results = {str(s): [] for s in todo}
    failures = {}
    try:
        for r, order in rounds(todo, runs):
            for server in order:
                if str(server) in failures and not keep_going:
                    continue
                with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
                    try:
                        results[str(server)].append(measure(server, tmp))
                    except run_http.Failed as err:
                        failures[str(server)] = "; ".join(
                            filter(None, (failures.get(str(server)), f"round {r + 1}: {err}")))
                        print(f"{prog}: {server}: round {r + 1}: {err}", file=sys.stderr)
                time.sleep(pause)
    except Interrupted as err:
        print(f"{prog}: interrupted ({err})", file=sys.stderr)
        failures.update({str(s): f"interrupted ({err})" for s in todo if not results[str(s)]})
        return results, failures, True
    return results, failures, False


def _read_answers(pending, buffers, deadline, answered, closed):
    """Read from the sockets in ``pending`` (fd -> socket) until each has a
    complete hello answer, closed, or ``deadline``; moves them to
    ``answered`` or ``closed``."""
    sel = selectors.DefaultSelector()
    try:
        for fd, s in pending.items():
            sel.register(s, selectors.EVENT_READ)
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=max(0.0, min(1.0, deadline - time.monotonic()))):
                s = key.fileobj
                fd = s.fileno()
                try:
                    chunk = s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    closed.append(pending.pop(fd))
                    sel.unregister(s)
                    continue
                buffers[fd] = buffers.get(fd, b"") + chunk
                if run_http.BODY in buffers[fd]:
                    buffers[fd] = b""
                    answered.append(pending.pop(fd))
                    sel.unregister(s)
    finally:
        sel.close()


def open_idle(port, n, deadline):
    """``n`` keep-alive connections to 127.0.0.1:port, each after one
    complete request and its answer; source addresses 127.0.0.1, .2, ...
    (PER_ADDRESS each, round-robin).  Failed if any cannot connect or is not
    answered by ``deadline`` (monotonic)."""
    socks, pending, buffers = [], {}, {}
    answered, closed = [], []
    addresses = max(1, -(-n // PER_ADDRESS))
    try:
        for i in range(n):
            if time.monotonic() > deadline:
                raise run_http.Failed(f"opened only {i} of {n} connections in time")
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            source = i % addresses
            if source:
                s.setsockopt(socket.SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1)
                s.bind((f"127.0.0.{1 + source}", 0))
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", port))
                s.sendall(REQUEST)
            except OSError as err:
                raise run_http.Failed(f"connection {i + 1} of {n}: {err}") from err
            s.setblocking(False)
            pending[s.fileno()] = s
            if len(pending) >= 1000:
                _read_answers(pending, buffers, min(deadline, time.monotonic() + 10),
                              answered, closed)
                if closed or pending:
                    break
        _read_answers(pending, buffers, deadline, answered, closed)
        if closed or pending or len(answered) != n:
            raise run_http.Failed(f"of {n} new connections, {len(answered)} answered, "
                                  f"{len(closed)} were closed, {len(pending)} got no answer")
        return socks
    except BaseException:
        close_all(socks)
        raise


def still_answering(socks, deadline):
    """A second request on every idle connection: ``(answered, closed,
    silent)`` counts by ``deadline``."""
    pending, buffers, answered, closed = {}, {}, [], []
    failed_send = 0
    for s in socks:
        try:
            s.send(REQUEST)
            pending[s.fileno()] = s
        except OSError:
            failed_send += 1
    _read_answers(pending, buffers, deadline, answered, closed)
    return len(answered), len(closed) + failed_send, len(pending)


def close_all(socks):
    """Close with a reset (SO_LINGER 0): no TIME_WAIT left on the
    client's ports for the next run."""
    linger = b"\x01\x00\x00\x00\x00\x00\x00\x00"
    for s in socks:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
        except OSError:
            pass
        s.close()


def line(server, metric, unit, params, values=None, status="ok", error=None, **extra):
    """A JSON line (docs/bench-format.md) for ``server`` with its backend
    among the params."""
    out = run_http.line(server.name, metric, unit, {**server.params(), **params},
                        values, status, error)
    out.update(extra)
    return out


def emit(obj):
    print(json.dumps(obj), flush=True)


class Interrupted(BaseException):
    pass


def _interrupt(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def bound(seconds):
    """The whole script bounded: an alarm after ``seconds``, and SIGTERM /
    SIGINT unwinding through every ``finally`` (servers stopped)."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
        signal.signal(sig, _interrupt)
    signal.alarm(max(1, int(seconds)))
