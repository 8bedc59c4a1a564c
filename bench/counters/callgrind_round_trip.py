#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Simulated costs of one resume/yield round trip of a counters program.

Runs the program twice under ``valgrind --tool=callgrind --cache-sim=yes
--branch-sim=yes`` (D1 and I1 32 KiB 8-way, LL 512 KiB 8-way: this
machine's L1 and per-core L2) with R1 and R2 resumes per counter, and
divides the difference of the totals by N * (R2 - R1), so that creation
and teardown cancel out. Prints instructions (Ir), data reads and writes,
D1 and LL misses, conditional and indirect branches and their simulated
mispredicts, per round trip:

    python3 bench/counters/callgrind_round_trip.py N R1 R2 PROGRAM [ARGS...]
    python3 bench/counters/callgrind_round_trip.py 100 100 300 \\
        build/bench/bench/counters/counters-baton --model stackful

baton's stackful programs past about 8000 counters need
BATON_STACK_GUARD_BUDGET=8000 in the environment (valgrind's table of
mappings is smaller than the kernel's); the stacks past the budget then
have canaries, which the native run at 20000 does not.
"""
import subprocess
import sys
import tempfile
from pathlib import Path


def totals(argv: list) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes",
               "--I1=32768,8,64", "--D1=32768,8,64", "--LL=524288,8,64",
               f"--callgrind-out-file={out}"] + argv
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        events, counts = [], []
        for line in out.read_text().splitlines():
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                counts = [int(word) for word in line.split()[1:]]
        return {e: (counts[i] if i < len(counts) else 0) for i, e in enumerate(events)}


def main() -> int:
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    n, r1, r2 = (int(x) for x in sys.argv[1:4])
    prog = sys.argv[4:]
    a = totals(prog + ["--counters", str(n), "--resumes", str(r1), "--runs", "1"])
    b = totals(prog + ["--counters", str(n), "--resumes", str(r2), "--runs", "1"])
    d = {e: (b[e] - a[e]) / (n * (r2 - r1)) for e in a}
    print(f"Ir {d['Ir']:.2f}  Dr {d['Dr']:.2f}  Dw {d['Dw']:.2f}  "
          f"D1 misses {d['D1mr'] + d['D1mw']:.3f}  LL misses {d['DLmr'] + d['DLmw']:.3f}  "
          f"branches {d['Bc']:.2f} (mispredicted {d['Bcm']:.3f})  "
          f"indirect {d['Bi']:.2f} (mispredicted {d['Bim']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
