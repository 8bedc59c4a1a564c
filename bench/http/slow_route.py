#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A compute-heavy route beside a fast one: what a slow handler costs the
other requests.

    slow_route.py --build DIR --src DIR [--port P] [--duration S] [--runs R]
                  [--slow-ms MS] [--impl NAME ...]

Each server answers /slow by computing for --slow-ms (20) milliseconds of
CPU in Lua and /fast from a static file. Two load generators run at once
for S seconds: ``wrk -t1 -c4`` on /slow keeps the compute busy, and
``wrk -t1 -c2 --latency`` on /fast measures its latency. The impls, run
alternately R times each:

  baton-lua-compute  baton-httpd --workers 1 --compute-workers 1 --static
                     (handlers on their own worker, files on the I/O one)
  baton-lua-inline   baton-httpd --workers 2 --static (handlers in the
                     connection's task, as without compute workers)
  nginx-lua          nginx, 2 worker processes, content_by_lua_block for
                     /slow and a static location for /fast

Prints JSON lines (docs/bench-format.md), suite ``http``, params
{"route": "fast"|"slow", "slow_ms": MS}: per impl ``p99_ms`` and
``req_per_s`` of /fast and ``req_per_s`` of /slow (medians over the runs).
The machine has two cores and all of this shares them: the figures show
how the load is split, not a peak. Bounded in time; servers are always
stopped.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# The runner (tools/baton_bench/httpbench.py): server handling and parsers.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from baton_bench import httpbench as run_http  # noqa: E402

# The same CPU work on every server: a loop of a fixed number of steps,
# sized at start-up (while nothing else runs) to take SLOW_MS there. Timing
# each request with os.clock() would not do: it is the process's CPU time,
# which in a threaded server also counts the other threads.
LUA_SLOW = """
local function steps(n)
  local x = 0
  for i = 1, n do x = (x + i) % 1000003 end
  return x
end
local function calibrate(ms)
  local n = 1000
  while true do
    local t0 = os.clock()
    steps(n)
    local took = (os.clock() - t0) * 1000
    if took > 50 then return math.floor(n * ms / took) end
    n = n * 2
  end
end
"""

IMPLS = ("baton-lua-compute", "baton-lua-inline", "nginx-lua")


def write_files(tmp, slow_ms):
    # nginx's workers run as nobody: the file must be readable to them
    os.chmod(tmp, 0o755)
    www = os.path.join(tmp, "www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "fast"), "wb") as f:
        f.write(b"fast\n")
    handler = os.path.join(tmp, "slow.lua")
    run_http.write(handler, LUA_SLOW + f"""
local N = calibrate({slow_ms})
return function(request, body)
  return 200, {{["Content-Type"] = "text/plain"}}, "slow " .. steps(N) .. "\\n"
end
""")
    return www, handler


def server_argv(impl, args, tmp, www, handler):
    if impl.startswith("baton-"):
        httpd = next((p for p in (os.path.join(args.build, d, "baton-httpd")
                                  for d in run_http.HTTPD_DIRS) if os.access(p, os.X_OK)), None)
        if httpd is None:
            raise run_http.Missing("baton-httpd not built")
        split = (["--workers", "1", "--compute-workers", "1"] if impl == "baton-lua-compute"
                 else ["--workers", "2"])
        return [os.path.abspath(httpd), "--address", "127.0.0.1", "--port", str(args.port),
                *split, "--static", www, "--handler", "lua", handler]
    nginx = run_http.need_tool("nginx", "nginx")
    conf = os.path.join(tmp, "nginx.conf")
    run_http.write(conf, run_http.fill("nginx-slow.conf.in", {
        "LOAD_MODULES": run_http._lua_modules(), "WORKERS": 2, "TMP": tmp,
        "PORT": args.port, "WWW": www, "SLOW_MS": args.slow_ms,
        "LUA_SLOW": " ".join(LUA_SLOW.split())}))
    return [nginx, "-p", tmp, "-c", conf, "-e", "stderr"]


def one_run(impl, args, tools):
    with tempfile.TemporaryDirectory() as tmp:
        www, handler = write_files(tmp, args.slow_ms)
        argv = server_argv(impl, args, tmp, www, handler)
        srv = run_http.Server(argv, None, tmp, pin=False)
        try:
            srv.wait_ready(args.port, run_http.START_TIMEOUT)
            base = f"http://127.0.0.1:{args.port}"
            slow = subprocess.Popen([tools["wrk"], "-t1", "-c4", f"-d{args.duration + 1}s",
                                     "--latency", base + "/slow"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(0.5)  # the compute is busy before we measure
            fast = run_http.run_load([tools["wrk"], "-t1", "-c2", f"-d{args.duration}s",
                                      "--latency", base + "/fast"],
                                     run_http.parse_wrk, args.duration)
            out, _ = slow.communicate(timeout=args.duration + 30)
            srv.check_alive()
            slow_rate = run_http.parse_wrk(out)[0]
            return fast[0], fast[2], slow_rate
        finally:
            srv.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True)
    p.add_argument("--src", required=True)
    p.add_argument("--port", type=int, default=18470)
    p.add_argument("--duration", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--slow-ms", type=int, default=20)
    p.add_argument("--impl", action="append", choices=IMPLS)
    args = p.parse_args()
    impls = args.impl or list(IMPLS)
    tools = {"wrk": run_http.need_tool("wrk", "wrk")}
    samples = {i: [] for i in impls}
    missing = {}
    for _ in range(args.runs):
        for impl in impls:  # alternating
            if impl in missing:
                continue
            try:
                samples[impl].append(one_run(impl, args, tools))
            except run_http.Missing as err:
                missing[impl] = str(err)
            except run_http.Failed as err:
                print(f"slow_route: {impl}: {err}", file=sys.stderr)
                return 1
    for impl in impls:
        for route, metric, unit, k in (("fast", "p99_ms", "ms", 1), ("fast", "req_per_s", "req/s", 0),
                                       ("slow", "req_per_s", "req/s", 2)):
            params = {"route": route, "slow_ms": args.slow_ms}
            values = [s[k] for s in samples[impl]]
            print(json.dumps(run_http.line(impl, metric, unit, params, values or None,
                                           "missing", missing.get(impl))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
