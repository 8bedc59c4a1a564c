# SPDX-License-Identifier: MIT
"""The select suite's programs (docs/select.md), run with small workloads:
each prints its msgs_per_s line with the suite's parameters, having checked
that every message arrived once (the count and the sum of the values
received; a "status": "failed" line and exit 1 otherwise). Correctness
only: no figure is compared with anything.

select-baton comes from the bench build (``cmake --preset bench``, or the
ci-bench-peers workflow of ``make test``), select-go from the same build
where Go is installed; a test skips, saying so, when its program is absent.
``BATON_BENCH_BUILD`` names another build directory."""
import json
import math
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("BATON_BENCH_BUILD", ROOT / "build" / "bench"))
SELECT = BUILD / "bench" / "select"
HANG_S = 120  # not a timing: a program that deadlocks fails the test
SOURCES = {"select-baton": [ROOT / "bench" / "select" / "select_baton.c",
                            ROOT / "bench" / "select" / "select_common.h"],
           "select-go": [ROOT / "bench" / "select" / "peers" / "go" / "main.go"]}


def run(name, *args):
    path = SELECT / name
    if not path.exists():
        pytest.skip(f"{path} not built (cmake --preset bench && cmake --build build/bench)")
    if any(src.stat().st_mtime > path.stat().st_mtime for src in SOURCES[name]):
        pytest.skip(f"{path} is older than its sources: rebuild (cmake --build build/bench)")
    return subprocess.run([str(path), *args], capture_output=True, text=True, timeout=HANG_S)


@pytest.mark.parametrize("name,impl,peer", [("select-baton", "baton", False),
                                            ("select-go", "go", True)])
@pytest.mark.parametrize("capacity", [64, 0])
def test_program_prints_its_line(name, impl, peer, capacity):
    proc = run(name, "--messages", "3000", "--capacity", str(capacity), "--runs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (line,) = [json.loads(s) for s in proc.stdout.splitlines()]
    assert line["suite"] == "select" and line["impl"] == impl and line["peer"] is peer
    assert line["metric"] == "msgs_per_s" and line["unit"] == "msgs/s"
    assert line["params"] == {"workers": 2, "producers": 8, "consumers": 2, "channels": 4,
                              "messages": 3000, "capacity": capacity}
    assert line["runs"] == 2 and len(line["samples"]) == 2
    assert all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in line["samples"])
    assert line["min"] <= line["value"] <= line["max"]


def test_baton_shapes_and_timeouts():
    """Other shapes than the suite's (one worker, more consumers than
    channels, a select that times out while the producers are slow to
    start) still deliver every message; --verbose reports each run."""
    proc = run("select-baton", "--workers", "1", "--producers", "3", "--consumers", "5",
               "--channels", "2", "--messages", "500", "--capacity", "1", "--verbose")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "run 0:" in proc.stderr and "dispatches" in proc.stderr
    proc = run("select-baton", "--producers", "2", "--messages", "10", "--timeout-ms", "1",
               "--capacity", "0")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_baton_refuses_bad_arguments():
    for bad in (["--channels", "65"], ["--messages", "0"], ["--capacity", "x"], ["--bogus", "1"]):
        proc = run("select-baton", *bad)
        assert proc.returncode == 2 and proc.stdout == "", (bad, proc.stderr)


def test_select_manifest():
    """bench/select/suite.json loads: baton against its Go twin, the 2x
    target on the buffered set (no build needed)."""
    from baton_bench.manifest import load_suite

    suite = load_suite(ROOT / "bench" / "select" / "suite.json")
    assert set(suite.impls) == {"baton", "go"} and suite.pairs == [["baton", "go"]]
    assert suite.targets == [{"a": "baton", "b": "go", "at_least": 2.0,
                              "params": {"capacity": 64}}]
