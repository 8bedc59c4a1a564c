# SPDX-License-Identifier: MIT
"""The depth bound of the ring-depth suite and the 400,000-task rows of the
ring suite (docs/ring.md, docs/sched.md), and the seq suite's CHICKEN
target (docs/seq.md).

The manifest checks need no build. The ``ring-baton`` runs come from the
bench build (``cmake --preset bench``) and skip, saying so, when it is
absent or older than its source; tiny workloads, correctness only: no
figure is compared with a machine's."""
import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest

from baton_bench.manifest import load_suite

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("BATON_BENCH_BUILD", ROOT / "build" / "bench"))
RING_BATON = BUILD / "bench" / "ring" / "ring-baton"
# Not a timing: a ring that deadlocks must fail the test, not hang it.
HANG_S = 120


def bias_after():
    """The uses after which a channel is biased (src/chan/chan_internal.h)."""
    text = (ROOT / "src" / "chan" / "chan_internal.h").read_text()
    return int(re.search(r"#define BATON_CHAN_BIAS_AFTER (\d+)", text).group(1))


def test_bound_rows_and_targets():
    """Each copy-stack depth row is paired with its bound, run by the same
    program at the same depth with factor 1.2, and the target is the D row
    at least as fast as its bound; the seed's ratio targets are gone."""
    suite = load_suite(ROOT / "bench" / "ring-depth" / "suite.json")
    for depth in (1000, 10000):
        row, bound = f"baton-1t-copystack-d{depth}", f"bound-1t-copystack-d{depth}"
        cmd = suite.impls[bound].cmd
        assert cmd[0] == "{build}/bench/ring/ring-baton"
        assert cmd[cmd.index("--depth") + 1] == str(depth)
        assert cmd[cmd.index("--bound") + 1] == "1.2"
        assert cmd[cmd.index("--impl") + 1] == "1t-copystack"
        assert [row, bound] in suite.pairs
        assert {"a": row, "b": bound, "at_least": 1.0} in suite.targets
        assert not any(t["a"] == row and t["b"] == "baton-1t-copystack"
                       for t in suite.targets)
        assert any(o["impl"] == bound and "--bound" in o["cmd"] for o in suite.once)


def test_400k_rows_are_mostly_past_the_bias_candidacy():
    """At 400,000 tasks the full sweep runs enough rounds that two thirds of
    the hops come after every channel's candidacy (two uses a round), and
    once entries print the cold rounds apart."""
    cold = math.ceil(bias_after() / 2)
    suite = load_suite(ROOT / "bench" / "ring" / "suite.json")
    big = [p for p in suite.params["full"] if p["coroutines"] == 400000]
    assert {p["n"] for p in big} == {2, 8}
    for p in big:
        assert (p["rounds"] - cold) / p["rounds"] >= 2 / 3, p
    split = [o for o in suite.once if "--cold-rounds" in o["cmd"]]
    assert {(o["impl"], o["params"]["n"]) for o in split} == {
        (i, n) for i in ("baton-1t-stackful", "baton-1t-copystack") for n in (2, 8)}
    for o in split:
        assert o["cmd"][o["cmd"].index("--cold-rounds") + 1] == str(cold)
        assert o["params"] in big and o["modes"] == ["full"]


def test_chicken_target_is_1_25x():
    suite = load_suite(ROOT / "bench" / "seq" / "suite.json")
    assert {"a": "chicken-baton", "b": "chicken-plain", "at_least": 0.8} in suite.targets


def ring_baton(*args):
    if not RING_BATON.exists():
        pytest.skip(f"{RING_BATON} not built (cmake --preset bench && cmake --build build/bench)")
    src = ROOT / "bench" / "ring" / "ring_baton.c"
    if src.stat().st_mtime > RING_BATON.stat().st_mtime:
        pytest.skip(f"{RING_BATON} is older than ring_baton.c: rebuild (cmake --build build/bench)")
    return subprocess.run([str(RING_BATON), *args], capture_output=True, text=True,
                          timeout=HANG_S)


def lines_by_metric(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(s) for s in proc.stdout.splitlines()]
    return {x["metric"]: x for x in lines}


def test_bound_is_the_d0_hop_plus_the_copies():
    """--bound prints the bound first, as a rate, and its parts: per run,
    bound = t(D=0) + 1.2 * t_memcpy(D) ns per hop, rate = 1e9 / bound."""
    proc = ring_baton("--impl", "1t-copystack", "--n", "4", "--coroutines", "16",
                      "--rounds", "50", "--depth", "1000", "--bound", "1.2", "--runs", "3")
    first = json.loads(proc.stdout.splitlines()[0])
    assert first["metric"] == "msgs_per_s" and first["impl"] == "bound-1t-copystack-d1000"
    m = lines_by_metric(proc)
    assert m["msgs_per_s"]["factor"] == 1.2
    for i in range(3):
        t0, tm = m["ns_per_hop_d0"]["samples"][i], m["memcpy_ns_per_hop"]["samples"][i]
        bound = m["bound_ns_per_hop"]["samples"][i]
        assert bound == pytest.approx(t0 + 1.2 * tm, abs=0.02)
        assert m["msgs_per_s"]["samples"][i] == pytest.approx(1e9 / bound, rel=1e-3)
        assert m["ns_per_hop_over_bound"]["samples"][i] == pytest.approx(
            m["ns_per_hop"]["samples"][i] / bound, abs=2e-3)
    # Out and back in: over twice the depth a hop.
    assert m["copied_bytes_per_hop"]["value"] > 2000


@pytest.mark.parametrize("bad", [["--impl", "1t-stackful", "--depth", "1000"],
                                 ["--impl", "1t-copystack"],
                                 ["--impl", "mt-copystack", "--depth", "1000"],
                                 ["--impl", "1t-copystack", "--depth", "1000",
                                  "--cold-rounds", "2"]])
def test_bound_refuses_what_it_cannot_measure(bad):
    proc = ring_baton(*bad, "--bound", "1.2", "--n", "2", "--coroutines", "4",
                      "--rounds", "10")
    assert proc.returncode == 2 and proc.stdout == "" and "--bound" in proc.stderr


def test_cold_rounds_print_the_first_rounds_apart():
    proc = ring_baton("--impl", "1t-stackful", "--n", "2", "--coroutines", "8",
                      "--rounds", "40", "--cold-rounds", "32", "--runs", "2")
    m = lines_by_metric(proc)
    assert m["msgs_per_s"]["params"]["rounds"] == 40
    for name in ("msgs_per_s_first_rounds", "msgs_per_s_after_first_rounds"):
        line = m[name]
        assert line["first_rounds"] == 32 and line["runs"] == 2 and line["unit"] == "msgs/s"
        assert len(line["samples"]) == 2
    assert all(v > 0 for v in m["msgs_per_s_first_rounds"]["samples"])
    proc = ring_baton("--impl", "1t-stackful", "--n", "2", "--coroutines", "8",
                      "--rounds", "32", "--cold-rounds", "32")
    assert proc.returncode == 2 and "below --rounds" in proc.stderr
