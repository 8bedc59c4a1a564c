#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""counters benchmark, impl "python-generators" (peer true).

Each counter is a Python generator whose private integer ``i`` is a local of
its suspended frame; one resume is ``next(g)``, which runs ``i += 1`` and
stops at the next ``yield``.  N generators are created (and not started)
outside the timed region; each of R runs times M passes over all N counters
with time.perf_counter_ns() (a monotonic clock).  The per-resume cost
includes the interpreter's loop overhead around next(), as in the seed.

Anti-optimisation: none is needed, CPython does not elide work; the final
check reads ``i`` back from each suspended frame (gi_frame.f_locals).

Usage: python3 counters.py [--counters N] [--resumes M] [--runs R]
"""

import json
import statistics
import sys
import time

USAGE = (
    "usage: counters.py [--counters N] [--resumes M] [--runs R]\n"
    "  --counters N   number of counters (default 20000)\n"
    "  --resumes M    resumes of each counter per run (default 300)\n"
    "  --runs R       timed runs, the median is reported (default 1)\n"
    "Prints one JSON line on stdout (docs/bench-format.md).\n"
)

INT_MAX = 2**31 - 1


def usage_error(msg):
    sys.stderr.write("counters.py: %s\n%s" % (msg, USAGE))
    sys.exit(2)


def parse_args(argv):
    opts = {"counters": 20000, "resumes": 300, "runs": 1}
    limits = {"counters": 100000000, "resumes": INT_MAX, "runs": 100000}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            sys.stderr.write(USAGE)
            sys.exit(0)
        if not arg.startswith("--") or arg[2:] not in opts:
            usage_error("unknown argument '%s'" % arg)
        name = arg[2:]
        if i + 1 >= len(argv):
            usage_error("%s needs a value" % arg)
        val = argv[i + 1]
        if not val.isascii() or not val.isdigit() or not 1 <= int(val) <= limits[name]:
            usage_error("%s wants an integer in [1, %d], got '%s'" % (arg, limits[name], val))
        opts[name] = int(val)
        i += 2
    if opts["runs"] * opts["resumes"] > INT_MAX:
        usage_error("--runs * --resumes must not exceed %d" % INT_MAX)
    return opts


def counter():
    i = 0
    while True:
        i += 1
        yield


def run_all(counters, m):
    # A function, so that the loop variables are fast locals (the seed's
    # module-level loop pays dict stores for them); the inner loop iterates
    # the list in order, which is the idiomatic way to visit counter j.
    for _ in range(m):
        for g in counters:
            next(g)


def main():
    opts = parse_args(sys.argv[1:])
    n, m, runs = opts["counters"], opts["resumes"], opts["runs"]

    # Construction: outside the timed region (generators start on first next()).
    counters = [counter() for _ in range(n)]

    samples = []
    ops = n * m
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        run_all(counters, m)
        t1 = time.perf_counter_ns()
        samples.append((t1 - t0) / ops)

    want = runs * m
    for j, g in enumerate(counters):
        frame = g.gi_frame
        got = frame.f_locals.get("i") if frame is not None else None
        if got != want:
            sys.stderr.write("counters.py: counter %d is %r, expected %d\n" % (j, got, want))
            return 1

    line = {
        "suite": "counters",
        "impl": "python-generators",
        "peer": True,
        "metric": "ns_per_op",
        "value": round(statistics.median(samples), 3),
        "unit": "ns",
        "params": {"counters": n, "resumes": m},
        "runs": runs,
        "min": round(min(samples), 3),
        "max": round(max(samples), 3),
        "samples": [round(s, 3) for s in samples],
    }
    sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
