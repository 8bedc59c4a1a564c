#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Count the distinct cache lines a ring hop touches (docs/sched.md).

Runs ``ring-baton`` under ``valgrind --tool=lackey --trace-mem=yes`` and
cuts the trace at every entry of ``baton__arch_switch_ret`` (the hand-off's
switch: one per hop in both coroutine models). Between two cuts it counts
the distinct 64-byte lines of every instruction fetch, load and store, and
prints the median and the 10th and 90th percentiles over the hops of the
timed part (the first half of the cuts is skipped: spawning and the first
round).

    python3 tools/hop_lines.py build/bench/bench/ring/ring-baton \\
        --impl 1t-stackful [--coroutines 800] [--rounds 8] [--data-only]
"""
import argparse
import os
import statistics
import subprocess
import sys
from typing import Optional


def symbol_address(binary: str, name: str) -> int:
    out = subprocess.run(["nm", binary], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise SystemExit(f"{binary}: no symbol {name}")


def load_base(binary: str) -> int:
    """ring-baton is a PIE: valgrind maps it at 0x108000."""
    out = subprocess.run(["readelf", "-h", binary], check=True, capture_output=True,
                         text=True).stdout
    return 0x108000 if "DYN" in out else 0


def trace_hop_lines(argv: list, cut: int, data_only: bool = False,
                    env: Optional[dict] = None) -> Optional[list]:
    """Run ``argv`` under lackey and return, for every stretch between two
    entries of the instruction at ``cut``, the distinct 64-byte lines it
    touched (instruction fetches too unless ``data_only``); None if the
    program failed."""
    # lackey writes its trace to its log: read it through a pipe.
    r, w = os.pipe()
    cmd = ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-fd={w}", *argv]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            pass_fds=(w,), env=env)
    os.close(w)
    counts = []
    lines: set = set()
    with os.fdopen(r, "r", buffering=1 << 20) as trace:
        for row in trace:
            if len(row) < 4 or row[0] == "=":
                continue
            kind = row[:2].strip()
            try:
                addr = int(row[3:].split(",", 1)[0], 16)
            except ValueError:
                continue
            if kind == "I":
                if addr == cut:
                    counts.append(len(lines))
                    lines = set()
                if data_only:
                    continue
            lines.add(addr >> 6)
    return counts if proc.wait() == 0 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--impl", default="1t-stackful")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--coroutines", type=int, default=800)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--data-only", action="store_true",
                    help="count loads and stores only, not instruction fetches")
    a = ap.parse_args()
    cut = symbol_address(a.binary, "baton__arch_switch_ret") + load_base(a.binary)
    counts = trace_hop_lines([a.binary, "--impl", a.impl, "--n", str(a.n), "--coroutines",
                              str(a.coroutines), "--rounds", str(a.rounds), "--runs", "1"],
                             cut, a.data_only)
    if counts is None:
        print(f"{a.binary} failed under valgrind", file=sys.stderr)
        return 1
    hops = counts[len(counts) // 2:]
    if len(hops) < 10:
        print("too few hops traced", file=sys.stderr)
        return 1
    q = statistics.quantiles(hops, n=10)
    print(f"{a.impl}: {statistics.median(hops):.0f} distinct cache lines per hop "
          f"(p10 {q[0]:.0f}, p90 {q[-1]:.0f}; {len(hops)} hops"
          f"{', loads and stores only' if a.data_only else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
