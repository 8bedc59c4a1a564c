#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Lua handlers as tasks: what a long handler, or one waiting on an upstream,
costs the other requests of its worker; and compute workers used together.

    lua_tasks.py --build DIR --src DIR --scenario slices|upstream|compute
                 [--port P] [--duration S] [--runs R] [--impl NAME ...]

slices    ``--workers 1 --compute-workers 1``: ``wrk -t1 -c4`` keeps a Lua
          route computing 0.5 s per request busy, ``wrk -t1 -c1 --latency``
          asks a cheap route of the same Lua file; prints the cheap route's
          p99 (``p99_ms``, target <= 10 ms) for baton-lua-slices and, beside
          it, nginx-lua (2 worker processes, the same handler in
          content_by_lua_block).
upstream  ``--workers 1``: ``wrk -t1 -c50`` keeps 50 requests waiting 100 ms
          each on a local upstream through the Lua TCP client (baton.tcp /
          ngx.socket.tcp), ``wrk -t1 -c2 --latency`` asks a static file on the
          same worker; prints the static route's p99 (target <= 5 ms) for
          baton-lua-upstream and nginx-lua (1 worker process).
compute   ``--workers 1 --compute-workers 2``: two 0.5 s requests at once;
          prints the time until both are answered (``both_ms``, target
          <= 600 ms) for baton-lua-compute. Then the same calibrated loop
          (its size calibrated once, by a server of its own, so that both
          rows run the same work) alone, one request at a time, on a server
          pinned to one CPU (``taskset``), with slices
          (baton-lua-loop-slices, the default 1 ms) and without
          (baton-lua-loop-off, ``--lua-slice off``):
          ``loop_ms`` each, and ``slice_cost_pct``, how much slower the
          sliced loop is (target <= 3 %). Slices cost nothing while they
          run (no hook is set: a timer ends them), so this is what the
          1,000 slice ends a second cost.

The upstream is a server in this process (asyncio) that answers each line
after 100 ms. JSON lines (docs/bench-format.md), suite ``http``, medians over
R alternating runs. The machine has two cores and everything shares them:
rough figures. Bounded in time; servers are always stopped.
"""

import argparse
import asyncio
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from baton_bench import httpbench as run_http  # noqa: E402

# The same calibrated loop as slow_route.py (a fixed number of steps sized
# at start-up with os.clock, while nothing else runs).
from slow_route import LUA_SLOW as LUA_COMMON  # noqa: E402

LONG_MS = 500
DELAY = 0.1
SCENARIOS = {"slices": ("baton-lua-slices", "nginx-lua"),
             "upstream": ("baton-lua-upstream", "nginx-lua"),
             "compute": ("baton-lua-compute", "baton-lua-loop-slices", "baton-lua-loop-off")}
LOOP_REQUESTS = 5  # sequential /long requests per loop run; their median


def baton_handler(up_port, steps_n=None):
    """The handler; steps_n fixes the loop's size (else calibrated as the
    server starts)."""
    n = str(steps_n) if steps_n else f"calibrate({LONG_MS})"
    return LUA_COMMON + f"""
local N = {n}
return function(request, body)
  if request.target == "/long" then return 200, nil, "long " .. steps(N) .. "\\n" end
  if request.target == "/n" then return 200, nil, tostring(N) end
  if request.target == "/up" then
    local sock = baton.tcp()
    sock:settimeout(5000)
    assert(sock:connect("127.0.0.1", {up_port}))
    assert(sock:send("ping\\n"))
    local line = assert(sock:receive("*l"))
    sock:close()
    return 200, nil, line .. "\\n"
  end
  return 200, nil, "cheap\\n"
end
"""


def nginx_conf(tmp, port, www, workers, up_port):
    lua = " ".join(LUA_COMMON.split())
    return f"""{run_http._lua_modules()}
worker_processes {workers};
daemon off;
master_process on;
pid {tmp}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  default_type text/plain;
  keepalive_requests 1000000;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  init_by_lua_block {{ {lua} long_steps, long_n = steps, calibrate({LONG_MS}) }}
  server {{
    listen 127.0.0.1:{port};
    location = /static {{ root {www}; }}
    location = /long {{ content_by_lua_block {{ ngx.say("long " .. long_steps(long_n)) }} }}
    location = /cheap {{ content_by_lua_block {{ ngx.say("cheap") }} }}
    location = /up {{ content_by_lua_block {{
      local sock = ngx.socket.tcp()
      sock:settimeout(5000)
      assert(sock:connect("127.0.0.1", {up_port}))
      assert(sock:send("ping\\n"))
      local line = assert(sock:receive("*l"))
      sock:close()
      ngx.say(line)
    }} }}
  }}
}}
"""


class Upstream:
    """Answers each line with "pong" after DELAY seconds, many at once."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        if not ready.wait(10):
            raise run_http.Failed("the upstream did not start")

    async def _serve(self, reader, writer):
        try:
            while await reader.readline():
                await asyncio.sleep(DELAY)
                writer.write(b"pong\n")
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=512))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _shutdown(self):
        self.server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self):
        asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def server_argv(impl, args, tmp, www, handler, up_port):
    if impl.startswith("baton-"):
        httpd = next((p for p in (os.path.join(args.build, d, "baton-httpd")
                                  for d in run_http.HTTPD_DIRS) if os.access(p, os.X_OK)), None)
        if httpd is None:
            raise run_http.Missing("baton-httpd not built")
        split = {"slices": ["--workers", "1", "--compute-workers", "1"],
                 "upstream": ["--workers", "1"],
                 "compute": ["--workers", "1", "--compute-workers", "2"]}[args.scenario]
        if impl.startswith("baton-lua-loop-"):
            split = ["--workers", "1", "--compute-workers", "1"]
            if impl == "baton-lua-loop-off":
                split += ["--lua-slice", "off"]
        return [os.path.abspath(httpd), "--address", "127.0.0.1", "--port", str(args.port),
                *split, "--static", www, "--handler", "lua", handler]
    nginx = run_http.need_tool("nginx", "nginx")
    conf = os.path.join(tmp, "nginx.conf")
    run_http.write(conf, nginx_conf(tmp, args.port, www, 2 if args.scenario == "slices" else 1,
                                    up_port))
    return [nginx, "-p", tmp, "-c", conf, "-e", "stderr"]


def two_at_once(port):
    """Wall time until two /long requests sent together are both answered."""
    done = []

    def one():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            c.request("GET", "/long")
            r = c.getresponse()
            r.read()
            done.append(r.status)
        finally:
            c.close()
    threads = [threading.Thread(target=one) for _ in range(2)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    took = (time.monotonic() - t0) * 1000
    if done != [200, 200]:
        raise run_http.Failed(f"/long answered {done}")
    return took


def cpu_ms(pid):
    """CPU time the process has used (user + system), in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def one_at_a_time(port, pid):
    """The median wall time of LOOP_REQUESTS /long requests made one after
    the other (the loop alone on its CPU), and the server's CPU time per
    request over them (what a busy machine disturbs least)."""
    took = []
    c0 = cpu_ms(pid)
    for _ in range(LOOP_REQUESTS):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            t0 = time.monotonic()
            c.request("GET", "/long")
            r = c.getresponse()
            r.read()
            took.append((time.monotonic() - t0) * 1000)
            if r.status != 200:
                raise run_http.Failed(f"/long answered {r.status}")
        finally:
            c.close()
    return sorted(took)[len(took) // 2], (cpu_ms(pid) - c0) / LOOP_REQUESTS


def calibrate_steps(args, up_port):
    """The loop's size for 0.5 s, calibrated once by a server of its own
    (pinned, slices off), so that the sliced and unsliced servers of the
    loop rows run the very same work."""
    with tempfile.TemporaryDirectory() as tmp:
        handler = os.path.join(tmp, "tasks.lua")
        run_http.write(handler, baton_handler(up_port))
        argv = server_argv("baton-lua-loop-off", args, tmp, tmp, handler, up_port)
        srv = run_http.Server(argv, None, tmp, pin=True)
        try:
            srv.wait_ready(args.port, run_http.START_TIMEOUT)
            c = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
            try:
                c.request("GET", "/n")
                return int(c.getresponse().read())
            finally:
                c.close()
        finally:
            srv.stop()


def one_run(impl, args, tools, up_port, steps_n=None):
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # nginx's workers run as nobody
        www = os.path.join(tmp, "www")
        os.makedirs(www)
        run_http.write(os.path.join(www, "static"), "static\n")
        handler = os.path.join(tmp, "tasks.lua")
        loop = impl.startswith("baton-lua-loop-")
        run_http.write(handler, baton_handler(up_port, steps_n if loop else None))
        srv = run_http.Server(server_argv(impl, args, tmp, www, handler, up_port), None, tmp,
                              pin=loop)
        try:
            srv.wait_ready(args.port, run_http.START_TIMEOUT)
            base = f"http://127.0.0.1:{args.port}"
            if loop:
                return one_at_a_time(args.port, srv.proc.pid)
            if args.scenario == "compute":
                return two_at_once(args.port)
            busy, conns, probe, probe_conns = (("/long", 4, "/cheap", 1)
                                               if args.scenario == "slices" else
                                               ("/up", 50, "/static", 2))
            load = subprocess.Popen([tools["wrk"], "-t1", f"-c{conns}", f"-d{args.duration + 1}s",
                                     "--timeout", "10s", "--latency", base + busy],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                time.sleep(0.5)  # the busy route is under way before we measure
                fast = run_http.run_load([tools["wrk"], "-t1", f"-c{probe_conns}",
                                          f"-d{args.duration}s", "--latency", base + probe],
                                         run_http.parse_wrk, args.duration)
                load.communicate(timeout=args.duration + 30)
            finally:
                if load.poll() is None:
                    load.kill()
                    load.wait()
            srv.check_alive()
            return fast[2]
        finally:
            srv.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--src", required=True)
    p.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    p.add_argument("--port", type=int, default=18490)
    p.add_argument("--duration", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--impl", action="append")
    args = p.parse_args()
    impls = args.impl or list(SCENARIOS[args.scenario])
    tools = {} if args.scenario == "compute" else {"wrk": run_http.need_tool("wrk", "wrk")}
    samples = {i: [] for i in impls}
    missing = {}
    up = Upstream()
    steps_n = None
    try:
        if any(i.startswith("baton-lua-loop-") for i in impls):
            try:
                steps_n = calibrate_steps(args, up.port)
            except run_http.Missing as err:
                missing.update({i: str(err) for i in impls})
        for _ in range(args.runs):
            for impl in impls:  # alternating
                if impl in missing:
                    continue
                try:
                    samples[impl].append(one_run(impl, args, tools, up.port, steps_n))
                except run_http.Missing as err:
                    missing[impl] = str(err)
                except run_http.Failed as err:
                    print(f"lua_tasks: {impl}: {err}", file=sys.stderr)
                    return 1
    finally:
        up.stop()
    metric, params = (("both_ms", {"scenario": "compute", "long_ms": LONG_MS})
                      if args.scenario == "compute" else
                      ("p99_ms", {"scenario": args.scenario,
                                  "route": "cheap" if args.scenario == "slices" else "static"}))
    loop_params = {"scenario": "compute", "long_ms": LONG_MS, "requests": LOOP_REQUESTS,
                   "pinned": True}
    for impl in impls:
        if not impl.startswith("baton-lua-loop-"):
            print(json.dumps(run_http.line(impl, metric, "ms", params, samples[impl] or None,
                                           "missing", missing.get(impl))))
            continue
        for i, m in enumerate(("loop_ms", "loop_cpu_ms")):
            print(json.dumps(run_http.line(impl, m, "ms", loop_params,
                                           [x[i] for x in samples[impl]] or None,
                                           "missing", missing.get(impl))))
    on, off = samples.get("baton-lua-loop-slices"), samples.get("baton-lua-loop-off")
    if on and off:
        # Runs alternate: pair them, so that a slow moment hits both. The
        # CPU time is the figure of record; the wall time is printed too.
        for i, m in enumerate(("slice_cost_wall_pct", "slice_cost_pct")):
            pct = [(a[i] - b[i]) * 100.0 / b[i] for a, b in zip(on, off)]
            print(json.dumps(run_http.line("baton-lua-loop-slices", m, "%",
                                           {"scenario": "compute", "target_pct": 3,
                                            "slice_ms": 1}, pct)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
