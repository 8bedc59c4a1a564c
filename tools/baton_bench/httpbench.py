#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The http suite's runner: one server, one load generator, JSON lines out.

    python3 tools/baton_bench/httpbench.py --impl NAME --keepalive true|false --cores 1|2 --duration S
                --connections C --port P --build DIR --src DIR [--runs R]
                [--warmup S] [--httpd PATH]

It starts the server of ``--impl`` on 127.0.0.1:P (configuration generated
into a temporary directory from the templates beside this file), waits until
the port accepts, checks the body with one plain GET, runs a warm-up and then
``--runs`` timed loads, stops the server and prints five JSON lines
(docs/bench-format.md): ``req_per_s``, ``p50_ms``, ``p99_ms``,
``cpu_us_per_req`` (the server's CPU time over a load, all its processes
and threads, divided by the requests the load generator completed) and
``client_cpu_share`` (the load generator's CPU time over its wall time:
near 1, the client's core bounds the rate and req/s cannot tell a cheaper
server), each the median of the runs with min, max and samples.

Load: ``wrk -t1 -cC -dSs --latency`` for keep-alive, ``ab -c C -t S`` (one
connection per request, HTTP/1.0) without.  With ``--cores 1`` the server is
pinned to CPU 1 and the load generator to CPU 0 (``taskset``), one worker;
with ``--cores 2`` the server gets two workers and nothing is pinned.

A server or tool that is not installed (or baton-httpd not built) gives the
five lines with ``"status": "missing"`` and the reason, exit status 0: the
driver passes that status on.  Any other failure (server does not start,
wrong body, load generator errors) is one line on standard error and exit
status 1.  Every step is bounded in time (an alarm covers the whole run) and
the server's process group is always stopped: SIGTERM, then SIGKILL.

Python 3 standard library only; see docs/http-bench.md.
"""

import argparse
import ctypes
import http.client
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from types import FrameType
from typing import Any, Callable, NamedTuple, Optional

# The repository (this file is tools/baton_bench/httpbench.py) and the suite's
# folder, which holds the servers' configuration templates and handlers.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(REPO, "bench", "http")
BODY = b"Hello, World!\n"
IMPLS = ("baton-c", "baton-c-epoll", "baton-lua", "baton-scheme", "nginx", "nginx-lua", "guile",
         "h2o")
#: The baton impls' handlers, and the reactor backend each asks for (None:
#: baton-httpd's default, io_uring where the kernel has it).
BATON_HANDLERS = {"baton-c": (["hello"], None), "baton-c-epoll": (["hello"], "epoll"),
                  "baton-lua": (["lua", "bench/http/baton-hello.lua"], None),
                  "baton-scheme": (["scheme", "bench/http/baton-hello.scm"], None)}
#: How each backend shows among the server's descriptors (/proc/PID/fd).
BACKEND_FD = {"epoll": "anon_inode:[eventpoll]", "io_uring": "anon_inode:[io_uring]"}
START_TIMEOUT = 10.0      # seconds for a server to accept on its port
STOP_TIMEOUT = 5.0        # seconds between SIGTERM and SIGKILL
SERVER_CPU, CLIENT_CPU = "1", "0"
NGINX_MODULE_DIRS = ("/usr/share/nginx/modules", "/usr/lib/nginx/modules")
SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")
HTTPD_DIRS = (".", "bin", "httpd", "apps/httpd")   # where under --build to look
NGINX_WORKER_CONNECTIONS = 16384   # room for many_conns.py's 10,000 beside the rest


class Missing(Exception):
    """The impl cannot run here (not installed, not built); the message is
    the reason the report shows."""


class Failed(Exception):
    """The impl could run but this measurement failed; one-line reason."""


class Interrupted(BaseException):
    """SIGTERM, SIGINT or the run's alarm: unwind so the server is stopped."""


def _interrupt(signum: int, frame: Optional[FrameType]) -> None:
    raise Interrupted(signal.Signals(signum).name)


def find_tool(name: str) -> Optional[str]:
    """``name`` on PATH, or in an sbin directory (nginx lives in /usr/sbin,
    which a non-root PATH may lack); None if absent."""
    path = shutil.which(name)
    if path:
        return path
    for directory in SBIN:
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def need_tool(name: str, package: str) -> str:
    path = find_tool(name)
    if not path:
        raise Missing(f"{name} not installed (Debian package {package})")
    return path


def fill(template: str, values: dict[str, Any]) -> str:
    """The template file with every ``@NAME@`` replaced from ``values``."""
    with open(os.path.join(HERE, template)) as f:
        text = f.read()
    for key, value in values.items():
        text = text.replace(f"@{key}@", str(value))
    leftover = re.search(r"@[A-Z_]+@", text)
    if leftover:
        raise Failed(f"{template}: no value for {leftover.group(0)}")
    return text


def write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def find_guile() -> str:
    """guile-3.0, or a ``guile`` that is version 3."""
    path = find_tool("guile-3.0")
    if path:
        return path
    path = find_tool("guile")
    if path:
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True,
                                 timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        if re.search(r"\b3\.\d+", out.splitlines()[0] if out else ""):
            return path
    raise Missing("guile-3.0 not installed (Debian package guile-3.0)")


def server_command(args: argparse.Namespace, tmp: str) -> tuple[list[str], Optional[dict[str, str]]]:
    """``(argv, env)`` that runs the server of ``args.impl``; writes its
    configuration into ``tmp``.  Raises Missing when it cannot run here."""
    workers = args.cores
    port = args.port
    if args.impl.startswith("baton-"):
        httpd = args.httpd or next(
            (path for path in (os.path.join(args.build, d, "baton-httpd") for d in HTTPD_DIRS)
             if os.access(path, os.X_OK)), None)
        if not httpd or not os.access(httpd, os.X_OK):
            print(f"baton_bench.httpbench: no baton-httpd {'at ' + httpd if httpd else 'under ' + args.build}",
                  file=sys.stderr)
            raise Missing("baton-httpd not built")
        words, backend = BATON_HANDLERS[args.impl]
        handler = [words[0], *(os.path.join(args.src, w) for w in words[1:])]
        argv = [os.path.abspath(httpd), "--address", "127.0.0.1", "--port", str(port),
                "--workers", str(workers), "--handler", *handler]
        if backend is None:
            return argv, None
        # The environment's choice overrides --io (docs/io.md): set both.
        return argv + ["--io", backend], dict(os.environ, BATON_IO_BACKEND=backend)
    if args.impl in ("nginx", "nginx-lua"):
        nginx = need_tool("nginx", "nginx")
        modules, content = "", 'return 200 "Hello, World!\\n";'
        if args.impl == "nginx-lua":
            modules = _lua_modules()
            content = 'content_by_lua_block { ngx.say("Hello, World!") }'
        conf = os.path.join(tmp, "nginx.conf")
        # Connections one worker may hold: the suite's default, or more for
        # the idle-connection rows (bench/http/idle_conns.py).
        conns = int(getattr(args, "worker_connections", None) or NGINX_WORKER_CONNECTIONS)
        write(conf, fill("nginx.conf.in", {"LOAD_MODULES": modules, "WORKERS": workers,
                                           "TMP": tmp, "PORT": port, "CONTENT": content,
                                           "WORKER_CONNECTIONS": conns}))
        return [nginx, "-p", tmp, "-c", conf, "-e", "stderr"], None
    if args.impl == "h2o":
        h2o = need_tool("h2o", "h2o")
        with open(os.path.join(tmp, "hello.txt"), "wb") as f:
            f.write(BODY)
        conf = os.path.join(tmp, "h2o.conf")
        user = "user: root" if os.geteuid() == 0 else ""
        write(conf, fill("h2o.conf.in", {"USER": user, "WORKERS": workers, "TMP": tmp,
                                         "PORT": port}))
        return [h2o, "-c", conf], None
    if args.impl == "guile":
        guile = find_guile()
        if workers != 1:
            raise Missing("Guile's web server is single-threaded: no 2-worker form")
        # Auto-compile the script into the temporary directory, not ~/.cache.
        env = dict(os.environ, XDG_CACHE_HOME=tmp)
        return [guile, os.path.join(HERE, "guile-hello.scm"), str(port)], env
    raise Failed(f"unknown impl {args.impl}")


def _lua_modules() -> str:
    """``load_module`` lines for the NDK and lua-nginx-module."""
    for directory in NGINX_MODULE_DIRS:
        lua = os.path.join(directory, "ngx_http_lua_module.so")
        ndk = os.path.join(directory, "ndk_http_module.so")
        if os.path.isfile(lua) and os.path.isfile(ndk):
            return f"load_module {ndk};\nload_module {lua};"
    raise Missing("lua-nginx-module not installed (Debian package libnginx-mod-http-lua)")


def _server_preexec() -> None:
    """In the server child: a process group of its own (in the runner's
    session, so the guard below may join it), and SIGKILL when the runner
    dies (PR_SET_PDEATHSIG; the guard covers the server's own children)."""
    os.setpgid(0, 0)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Server:
    """A server process in its own process group, its output in a log file."""

    def __init__(self, argv: list[str], env: Optional[dict[str, str]], tmp: str, pin: bool) -> None:
        self.log_path = os.path.join(tmp, "server.log")
        self.log = open(self.log_path, "wb")
        if pin:
            argv = ["taskset", "-c", SERVER_CPU, *argv]
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=tmp, env=env,
                                     preexec_fn=_server_preexec)
        self.guard = self._start_guard()

    def _start_guard(self) -> "subprocess.Popen[bytes]":
        """A shell in the server's process group that reads a pipe only the
        runner holds open, and SIGKILLs that group when it reads end of file:
        if the runner is SIGKILLed (the driver's timeout kills the runner's
        group, which the server left), the server and its workers go too."""
        read_end, self.guard_pipe = os.pipe()
        pgid = self.proc.pid
        try:
            return subprocess.Popen(["sh", "-c", "read x; kill -KILL 0"], stdin=read_end,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    preexec_fn=lambda: os.setpgid(0, pgid))
        except (OSError, subprocess.SubprocessError):
            _signal_group(pgid, signal.SIGKILL)
            self.proc.wait()
            raise
        finally:
            os.close(read_end)

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                lines = [l.strip() for l in f.read().decode(errors="replace").splitlines()]
        except OSError:
            return ""
        lines = [l for l in lines if l]
        return lines[-1][:200] if lines else ""

    def wait_ready(self, port: int, timeout: float) -> None:
        """Return when 127.0.0.1:port accepts; Failed if the server exits or
        does not accept within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.proc.poll()
            if status is not None:
                raise Failed(f"server exited with status {status} before accepting: "
                             f"{self.log_tail() or 'no output'}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise Failed(f"server did not accept on port {port} within {timeout:g} s: "
                             f"{self.log_tail() or 'no output'}")
            time.sleep(0.05)

    def check_alive(self) -> None:
        """Failed if the server has ended (it must run until stopped)."""
        status = self.proc.poll()
        if status is None:
            return
        how = (f"was killed by {signal.Signals(-status).name}" if status < 0
               else f"exited with status {status}")
        raise Failed(f"server {how} during the load: {self.log_tail() or 'no output'}")

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL it after STOP_TIMEOUT."""
        try:
            if self.proc.poll() is None:
                _signal_group(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    pass
            # The leader may be gone while its workers linger: kill the group.
            _signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=STOP_TIMEOUT)
            self.guard.wait(timeout=STOP_TIMEOUT)
        finally:
            os.close(self.guard_pipe)
            self.log.close()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def port_in_use(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def check_body(port: int) -> None:
    """One plain HTTP/1.1 GET; Failed unless 200 with the hello body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/")
        resp = conn.getresponse()
        body = resp.read()
    except (OSError, http.client.HTTPException) as err:
        raise Failed(f"GET / failed: {err}") from err
    finally:
        conn.close()
    if resp.status != 200 or body.rstrip(b"\r\n") != BODY.rstrip(b"\n"):
        raise Failed(f"GET / gave {resp.status} {body[:60]!r}, want 200 {BODY!r}")


_TIME_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def parse_wrk(text: str) -> tuple[float, float, float]:
    """``(req_per_s, p50_ms, p99_ms)`` from ``wrk --latency`` output."""
    rate = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    total = re.search(r"^\s*(\d+) requests in", text, re.M)
    pct = {m.group(1): float(m.group(2)) * _TIME_UNITS[m.group(3)]
           for m in re.finditer(r"^\s*(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m|h)\s*$", text, re.M)}
    if not rate or not total or "50" not in pct or "99" not in pct:
        raise Failed(f"cannot parse wrk output: {_last(text)}")
    requests = int(total.group(1))
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    if bad and int(bad.group(1)):
        raise Failed(f"wrk: {bad.group(1)} of {requests} responses were not 2xx/3xx")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                       text)
    if errors and sum(map(int, errors.groups())) > max(1, requests // 100):
        raise Failed(f"wrk: {errors.group(0)} over {requests} requests")
    if requests == 0:
        raise Failed("wrk: no request completed")
    return float(rate.group(1)), pct["50"], pct["99"]


def parse_ab(text: str) -> tuple[float, float, float]:
    """``(req_per_s, p50_ms, p99_ms)`` from ``ab`` output (ms percentiles
    are whole milliseconds there)."""
    rate = re.search(r"^Requests per second:\s+([\d.]+)", text, re.M)
    complete = re.search(r"^Complete requests:\s+(\d+)", text, re.M)
    failed = re.search(r"^Failed requests:\s+(\d+)", text, re.M)
    pct = {m.group(1): float(m.group(2))
           for m in re.finditer(r"^\s*(50|99)%\s+(\d+)\s*$", text, re.M)}
    if not rate or not complete or "50" not in pct or "99" not in pct:
        raise Failed(f"cannot parse ab output: {_last(text)}")
    done = int(complete.group(1))
    bad = re.search(r"^Non-2xx responses:\s+(\d+)", text, re.M)
    if bad and int(bad.group(1)):
        raise Failed(f"ab: {bad.group(1)} of {done} responses were not 2xx")
    if failed and int(failed.group(1)) > max(1, done // 100):
        raise Failed(f"ab: {failed.group(1)} of {done} requests failed")
    if done == 0:
        raise Failed("ab: no request completed")
    return float(rate.group(1)), pct["50"], pct["99"]


def parse_requests(text: str) -> int:
    """The requests a load completed: wrk's ``N requests in``, ab's
    ``Complete requests``."""
    found = (re.search(r"^\s*(\d+) requests in", text, re.M)
             or re.search(r"^Complete requests:\s+(\d+)", text, re.M))
    if not found:
        raise Failed(f"no request count in the load generator's output: {_last(text)}")
    return int(found.group(1))


#: Clock ticks per second, the unit of /proc/PID/stat's times.
CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(stat: str) -> tuple[int, float]:
    """``(process group, user + system CPU seconds)`` from the text of
    /proc/PID/stat (all the process's threads, those that ended included)."""
    # The command (field 2) is in parentheses and may hold spaces or ")".
    fields = stat[stat.rindex(")") + 1:].split()
    # fields[0] is field 3 (state): pgrp is field 5, utime and stime 14 and 15.
    return int(fields[2]), (int(fields[11]) + int(fields[12])) / CLK_TCK


def group_cpu_seconds(pgid: int, exclude: tuple[int, ...] = (), proc: str = "/proc") -> float:
    """The CPU seconds of the live processes of group ``pgid`` (a server and
    its workers) but ``exclude``."""
    total = 0.0
    for name in os.listdir(proc):
        if not name.isdigit() or int(name) in exclude:
            continue
        try:
            with open(os.path.join(proc, name, "stat")) as f:
                group, seconds = proc_cpu(f.read())
        except (OSError, ValueError, IndexError):
            continue    # ended meanwhile, or not a process's stat
        if group == pgid:
            total += seconds
    return total


class Sample(NamedTuple):
    """One timed load: what the load generator printed, and the CPU."""

    req_per_s: float
    p50_ms: float
    p99_ms: float
    #: The server's CPU time over the load per completed request, in us.
    cpu_us_per_req: float
    #: The load generator's CPU time over its wall time (1: a whole core).
    client_cpu_share: float


def sample(parsed: tuple[float, float, float], requests: int, server_cpu_s: float,
           client_cpu_s: float, wall_s: float) -> Sample:
    """A Sample from a parsed load and the CPU seconds measured around it."""
    if requests <= 0 or wall_s <= 0:
        raise Failed(f"no CPU per request: {requests} requests in {wall_s:g} s")
    return Sample(*parsed, cpu_us_per_req=server_cpu_s * 1e6 / requests,
                  client_cpu_share=client_cpu_s / wall_s)


def _last(text: str) -> str:
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return lines[-1][:200] if lines else "no output"


def load_command(args: argparse.Namespace, seconds: int, tools: dict[str, str]) -> tuple[list[str], Callable[[str], tuple[float, float, float]]]:
    """The load generator's argv for ``seconds`` of load, and its parser."""
    url = f"http://127.0.0.1:{args.port}/"
    if args.keepalive:
        argv = [tools["wrk"], "-t1", f"-c{args.connections}", f"-d{seconds}s", "--latency", url]
        parse = parse_wrk
    else:
        # -t bounds the time; -n (after -t, which would set 50000) sizes
        # ab's per-request table above what S seconds can complete; -r keeps
        # going on a receive error (counted in "Failed requests"); -s bounds
        # one request's wait.
        requests = max(1000, 60000 * seconds)
        argv = [tools["ab"], "-q", "-r", "-s", "5", "-c", str(args.connections),
                "-t", str(seconds), "-n", str(requests), url]
        parse = parse_ab
    if args.cores == 1:
        argv = [tools["taskset"], "-c", CLIENT_CPU, *argv]
    return argv, parse


def _run_tool(argv: list[str], seconds: float) -> tuple[str, float, float]:
    """Run the load generator (bounded: ``seconds`` + 30 s): its output, its
    CPU seconds (user + system, from its rusage once reaped) and the wall
    seconds it ran."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    # In the runner's process group, so that the driver's timeout reaches it.
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    try:
        out, _ = proc.communicate(timeout=seconds + 30)
    except subprocess.TimeoutExpired:
        raise Failed(f"{os.path.basename(argv[0])} did not finish in {seconds + 30} s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    wall = time.monotonic() - started
    # The only child reaped meanwhile: the server and the guard still run.
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise Failed(f"{' '.join(argv[:4])}... exit {proc.returncode}: {_last(out)}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, cpu, wall


def run_load(argv: list[str], parse: Callable[[str], tuple[float, float, float]], seconds: float) -> tuple[float, float, float]:
    """Run the load generator (bounded: ``seconds`` + 30 s) and parse it."""
    return parse(_run_tool(argv, seconds)[0])


def run_measured_load(argv: list[str], parse: Callable[[str], tuple[float, float, float]],
                      seconds: float, server_cpu: Callable[[], float]) -> Sample:
    """``run_load`` with the CPU: ``server_cpu()`` (the server's CPU
    seconds so far) is read just before and after the load generator."""
    start = server_cpu()
    out, client, wall = _run_tool(argv, seconds)
    server = server_cpu() - start
    return sample(parse(out), parse_requests(out), server, client, wall)


def line(impl: str, metric: str, unit: str, params: dict[str, Any], values: Optional[list[float]] = None, status: str = "ok", error: Optional[str] = None) -> dict[str, Any]:
    """One JSON line of the http suite: the median of ``values`` with
    runs/min/max/samples, or a null value with a status and reason."""
    out = {"suite": "http", "impl": impl, "peer": not impl.startswith("baton-"),
           "metric": metric, "unit": unit, "params": params}
    if values:
        out.update(value=statistics.median(values), runs=len(values),
                   min=min(values), max=max(values), samples=values)
    else:
        out.update(value=None, runs=0, status=status, error=error)
    return out


#: The metrics of a run's lines, in the order of Sample's fields.
METRICS = (("req_per_s", "req/s"), ("p50_ms", "ms"), ("p99_ms", "ms"),
           ("cpu_us_per_req", "us"), ("client_cpu_share", "fraction"))


def lines(args: argparse.Namespace, samples: Optional[list[Sample]] = None, status: str = "ok", error: Optional[str] = None) -> list[dict[str, Any]]:
    """The JSON lines: per metric, median/min/max/samples, or null values
    with a status and reason.  A baton impl's lines name the backend its
    server ran on (``backend``)."""
    params = {"keepalive": args.keepalive, "cores": args.cores}
    out = [line(args.impl, metric, unit, params,
                [s[i] for s in samples] if samples else None, status, error)
           for i, (metric, unit) in enumerate(METRICS)]
    if getattr(args, "backend", None):
        for each in out:
            each["backend"] = args.backend
    return out


def server_backend(pid: int) -> Optional[str]:
    """The reactor backend among a baton-httpd's descriptors, or None."""
    try:
        links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except OSError:
        return None
    return next((name for name in ("io_uring", "epoll") if BACKEND_FD[name] in links), None)


def measure(args: argparse.Namespace, tmp: str) -> list[Sample]:
    """Start, check, load, stop: a Sample per timed load.  Sets
    ``args.backend`` for a baton impl."""
    tools = {}
    need = ["wrk"] if args.keepalive else ["ab"]
    if args.cores == 1:
        need.append("taskset")
    package = {"wrk": "wrk", "ab": "apache2-utils", "taskset": "util-linux"}
    for tool in need:
        tools[tool] = need_tool(tool, package[tool])
    argv, env = server_command(args, tmp)
    if args.cores == 1:
        cpus = os.sched_getaffinity(0)
        if not {int(SERVER_CPU), int(CLIENT_CPU)} <= cpus:
            raise Failed(f"cores=1 pins to CPUs {CLIENT_CPU} and {SERVER_CPU}; "
                         f"allowed here: {sorted(cpus)}")
    if port_in_use(args.port):
        raise Failed(f"port {args.port} on 127.0.0.1 is already in use")
    server = Server(argv, env, tmp, pin=args.cores == 1)
    try:
        server.wait_ready(args.port, START_TIMEOUT)
        check_body(args.port)
        if args.impl.startswith("baton-"):
            args.backend = server_backend(server.proc.pid)
            wanted = BATON_HANDLERS[args.impl][1]
            if wanted and args.backend != wanted:
                raise Failed(f"baton-httpd --io {wanted}: no {BACKEND_FD[wanted]} among "
                             f"its descriptors")
        # The server's processes (nginx: master and workers), not the guard.
        def server_cpu() -> float:
            return group_cpu_seconds(server.proc.pid, exclude=(server.guard.pid,))

        def load(seconds: int) -> Sample:
            try:
                result = run_measured_load(*load_command(args, seconds, tools), seconds,
                                           server_cpu)
            except Failed:
                server.check_alive()    # a crash explains the load's errors
                raise
            server.check_alive()
            return result

        if args.warmup > 0:
            load(args.warmup)
        return [load(args.duration) for _ in range(args.runs)]
    finally:
        server.stop()


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value in ("true", "1", "yes")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", required=True, choices=IMPLS)
    p.add_argument("--keepalive", type=_bool, required=True, metavar="true|false")
    p.add_argument("--cores", type=int, required=True, choices=(1, 2))
    p.add_argument("--duration", type=_positive, default=5, metavar="S",
                   help="seconds of load per run (whole seconds; default 5)")
    p.add_argument("--connections", type=_positive, default=100, metavar="C")
    p.add_argument("--port", type=_positive, default=18480, metavar="P")
    p.add_argument("--build", default="build", metavar="DIR",
                   help="CMake build directory holding baton-httpd")
    p.add_argument("--src", default=REPO, metavar="DIR",
                   help="repository root (handler files)")
    p.add_argument("--runs", type=_positive, default=1, metavar="R",
                   help="timed loads against one server start (default 1)")
    p.add_argument("--warmup", type=int, default=1, metavar="S",
                   help="seconds of untimed load first (0: none; default 1)")
    p.add_argument("--httpd", metavar="PATH",
                   help="baton-httpd (default: the first of BUILD/baton-httpd, "
                        "BUILD/bin/, BUILD/httpd/, BUILD/apps/httpd/)")
    args = p.parse_args(argv)
    if args.port > 65535:
        p.error("--port must be <= 65535")
    # The server runs in a temporary directory: make every path absolute.
    args.build, args.src = os.path.abspath(args.build), os.path.abspath(args.src)
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
        signal.signal(sig, _interrupt)
    # The whole run is bounded: start, warm-up, loads, stop, with slack.
    budget = START_TIMEOUT + 2 * STOP_TIMEOUT + 30 + args.warmup + args.runs * (args.duration + 5)
    signal.alarm(int(budget))
    try:
        with tempfile.TemporaryDirectory(prefix="baton-http-") as tmp:
            result = lines(args, measure(args, tmp))
    except Missing as err:
        result = lines(args, status="missing", error=str(err))
    except Failed as err:
        print(f"baton_bench.httpbench: {args.impl}: {err}", file=sys.stderr)
        return 1
    except Interrupted as err:
        print(f"baton_bench.httpbench: {args.impl}: interrupted ({err}; budget {budget:g} s)",
              file=sys.stderr)
        return 1
    finally:
        signal.alarm(0)
    for line in result:
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
