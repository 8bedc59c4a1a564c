#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cache misses per ring hop, simulated by valgrind (docs/sched.md).

This machine's processor counters are out of reach (a VM: perf has software
events only), so the misses come from valgrind's cache simulator, set to
the geometry of this machine's first-level data cache and of its per-core
L2 as the last level (``/sys/devices/system/cpu/cpu0/cache``). The program
is one ring impl of ``bench/ring/suite.json``, run twice under ``valgrind
--tool=callgrind --cache-sim=yes`` with R1 and R2 rounds; spawning and
teardown are the same in both runs, so

    misses per hop = (misses(R2) - misses(R1)) / (C * (R2 - R1))

(C coroutines: C messages per round, docs/ring.md). Baton's programs are
cut before ``baton_sched_destroy`` (callgrind dumps its counters there and
the run is stopped): valgrind deregisters baton's registered stacks one by
one through a list, which at 400,000 stackful tasks takes minutes. With
``--lines``, baton's programs are also traced under lackey and the distinct
64-byte lines of one hop are counted (``hop_lines.py``).

Prints JSON lines in the bench format (docs/bench-format.md), metrics
``d1_misses_per_hop``, ``l2_misses_per_hop``, ``instructions_per_hop`` and
``lines_per_hop``:

    python3 tools/hop_cache.py --build build/bench --impl baton-1t-stackful \\
        --n 8 --coroutines 400000 [--rounds 1,2] [--lines]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hop_lines import load_base, symbol_address, trace_hop_lines  # noqa: E402

SRC = Path(__file__).resolve().parent.parent
#: baton's programs stop here: callgrind dumps the counters of spawn and rounds.
CUT = "baton_sched_destroy"
#: Guarded stacks cost two mappings each, and valgrind's table of mappings
#: holds far fewer than the kernel's default budget; past this many, baton
#: makes canary stacks (at 4000 tasks all are guarded, as without valgrind).
GUARD_BUDGET = "8000"
#: Used where sysfs does not say: this machine's D1 and per-core L2.
DEFAULT_GEOMETRY = {"I1": (32768, 8, 64), "D1": (32768, 8, 64), "LL": (1048576, 8, 64)}


def _size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1:], 1)
    return int(text.rstrip("KM")) * scale


def cache_geometry(sysdir: str = "/sys/devices/system/cpu/cpu0/cache") -> dict:
    """(size, ways, line) of I1, D1 and the per-core L2 (as valgrind's LL),
    from sysfs; defaults for what it does not say."""
    found = dict(DEFAULT_GEOMETRY)
    names = {("1", "Instruction"): "I1", ("1", "Data"): "D1", ("2", "Unified"): "LL"}
    for index in sorted(Path(sysdir).glob("index*")):
        try:
            key = ((index / "level").read_text().strip(), (index / "type").read_text().strip())
            geometry = (_size((index / "size").read_text()),
                        int((index / "ways_of_associativity").read_text()),
                        int((index / "coherency_line_size").read_text()))
        except (OSError, ValueError):
            continue
        if key in names:
            found[names[key]] = geometry
    return found


def parse_counts(text: str) -> dict:
    """Event totals of a cachegrind or callgrind output file: the names of
    its ``events:`` line against the numbers of its ``summary:`` line (or
    ``totals:``, callgrind's)."""
    events: Optional[list] = None
    totals: Optional[list] = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            totals = [int(word) for word in line.split()[1:]]
    if events is None or totals is None:
        raise ValueError("no events: or summary: line")
    if len(totals) > len(events):
        raise ValueError(f"{len(totals)} totals for {len(events)} events")
    # Trailing zero events may be left out.
    return {name: (totals[i] if i < len(totals) else 0) for i, name in enumerate(events)}


def per_hop(first: dict, second: dict, hops: int) -> dict:
    """Misses and instructions per hop from two runs ``hops`` hops apart."""
    if hops <= 0:
        raise ValueError("the second run must make more hops")

    def diff(*names: str) -> float:
        return sum(second.get(n, 0) - first.get(n, 0) for n in names) / hops
    return {"d1_misses_per_hop": diff("D1mr", "D1mw"),
            "l2_misses_per_hop": diff("DLmr", "DLmw"),
            "instructions_per_hop": diff("Ir")}


def _complete(path: Path) -> bool:
    try:
        return "\ntotals:" in path.read_text(errors="replace")
    except OSError:
        return False


def simulate(argv: list, geometry: dict, cut: Optional[str], timeout: float,
             env: dict) -> dict:
    """Counters of one run of ``argv`` under callgrind's cache simulator, up
    to the first call of ``cut`` when given (the run is then stopped)."""
    with tempfile.TemporaryDirectory(prefix="hop-cache-") as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--cache-sim=yes",
               *(f"--{name}={','.join(map(str, geometry[name]))}" for name in ("I1", "D1", "LL")),
               f"--callgrind-out-file={out}"]
        if cut:
            cmd.append(f"--dump-before={cut}")
        proc = subprocess.Popen(cmd + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=env, start_new_session=True)
        dump = Path(f"{out}.1")
        deadline = time.monotonic() + timeout
        while proc.poll() is None and not (cut and _complete(dump)):
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise RuntimeError(f"{argv[0]} under valgrind: timed out after {timeout:g} s")
            time.sleep(0.2)
        # The dump at the cut is all we need: the teardown is not waited for.
        cut_reached = bool(cut) and _complete(dump)
        if cut_reached and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        if not cut_reached and proc.returncode != 0:
            last = (err or b"").decode(errors="replace").strip().splitlines()[-1:]
            raise RuntimeError(f"{argv[0]} under valgrind: exit {proc.returncode}: "
                               f"{last[0] if last else ''}")
        if cut and not cut_reached:
            raise RuntimeError(f"{argv[0]} under valgrind: never reached {cut}")
        return parse_counts((dump if cut_reached else out).read_text(errors="replace"))


def line(impl: str, peer: bool, params: dict, metric: str, value: Optional[float],
         unit: str, extra: dict) -> str:
    record = {"suite": "ring", "impl": impl, "peer": peer, "metric": metric,
              "value": None if value is None else round(value, 3), "unit": unit,
              "params": params, "runs": 1, **extra}
    if value is None:
        record["status"] = "missing"
    return json.dumps(record)


UNITS = {"d1_misses_per_hop": "misses", "l2_misses_per_hop": "misses",
         "instructions_per_hop": "instructions", "lines_per_hop": "lines"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="the CMake build directory")
    ap.add_argument("--suite", default=str(SRC / "bench" / "ring" / "suite.json"))
    ap.add_argument("--impl", required=True, help="an impl of the suite")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--coroutines", type=int, required=True)
    ap.add_argument("--rounds", default="1,2", help="R1,R2: the two runs' rounds")
    ap.add_argument("--lines", action="store_true",
                    help="also count the distinct lines of a hop (baton only, lackey)")
    ap.add_argument("--lines-rounds", type=int, default=6,
                    help="rounds of the lackey run that --lines traces (a hop is a hop: "
                         "few rounds do, and lackey is slow)")
    ap.add_argument("--timeout", type=float, default=100.0, help="seconds per valgrind run")
    a = ap.parse_args()
    r1, r2 = (int(r) for r in a.rounds.split(","))
    impl = json.loads(Path(a.suite).read_text())["impls"][a.impl]
    params = {"n": a.n, "coroutines": a.coroutines}

    def argv(rounds: int) -> list:
        values = {"build": a.build, "src": str(SRC), "n": a.n, "coroutines": a.coroutines,
                  "rounds": rounds}
        return [word.format(**values) for word in impl["cmd"]] + ["--runs", "1"]

    metrics = ["d1_misses_per_hop", "l2_misses_per_hop", "instructions_per_hop"]
    metrics += ["lines_per_hop"] if a.lines else []
    peer = bool(impl.get("peer"))
    if shutil.which("valgrind") is None or not os.path.isfile(argv(r1)[0]):
        why = "valgrind not installed" if shutil.which("valgrind") is None else "not built"
        for metric in metrics:
            print(line(a.impl, peer, params, metric, None, UNITS[metric], {"error": why}))
        return 0
    geometry = cache_geometry()
    env = {**os.environ, "BATON_STACK_GUARD_BUDGET": GUARD_BUDGET}
    binary = argv(r1)[0]
    cut = CUT if CUT in subprocess.run(["nm", binary], capture_output=True,
                                       text=True).stdout.split() else None
    started = time.monotonic()
    try:
        first = simulate(argv(r1), geometry, cut, a.timeout, env)
        second = simulate(argv(r2), geometry, cut, a.timeout, env)
    except (RuntimeError, ValueError, OSError) as err:
        print(err, file=sys.stderr)
        return 1
    values = per_hop(first, second, a.coroutines * (r2 - r1))
    if a.lines:
        switch = symbol_address(binary, "baton__arch_switch_ret") + load_base(binary)
        counts = trace_hop_lines(argv(a.lines_rounds), switch, env=env)
        hops = (counts or [])[len(counts or []) // 2:]
        if len(hops) < 10:
            print(f"{binary}: too few hops traced under lackey", file=sys.stderr)
            return 1
        values["lines_per_hop"] = statistics.median(hops)
    extra = {"valgrind": {"rounds": [r1, r2], "cut": cut, "seconds": round(
        time.monotonic() - started, 1), **{k: ",".join(map(str, v)) for k, v in geometry.items()}}}
    for metric in metrics:
        print(line(a.impl, peer, params, metric, values[metric], UNITS[metric], extra))
    return 0


if __name__ == "__main__":
    sys.exit(main())
