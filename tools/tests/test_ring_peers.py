# SPDX-License-Identifier: MIT
"""The C++, CAF and Erlang peers of the ring benchmark (docs/ring.md), run
with tiny workloads: their output is the two JSON lines of docs/bench-format.md and
every round's message came back intact (the programs check it and print a
``"status": "failed"`` line otherwise). Correctness only: no figure is
compared with anything.

The programs come from the bench build (``cmake --preset bench``), which
``make test`` does not make: the tests skip, saying so, when it is absent.
``BATON_BENCH_BUILD`` names another build directory."""
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("BATON_BENCH_BUILD", ROOT / "build" / "bench"))
RING = BUILD / "bench" / "ring"
# Not a timing: a peer that deadlocks must fail the test, not hang it.
HANG_S = 120

PEERS = {
    "boost-fiber-1t": ["ring-boost-fiber", "--sched", "round-robin"],
    "boost-fiber": ["ring-boost-fiber", "--sched", "work-stealing"],
    "cpp20-1t": ["ring-cpp20"],
    "cpp20-pool": ["ring-cpp20-pool"],
    "caf-1t": ["ring-caf", "--threads", "1"],
    "caf": ["ring-caf", "--threads", "0"],
    "erlang-1t": ["ring-erlang", "--schedulers", "1"],
    "erlang": ["ring-erlang", "--schedulers", "0"],
}


SOURCES = {
    "ring-boost-fiber": "boost_fiber.cpp",
    "ring-cpp20": "cpp20.cpp",
    "ring-cpp20-pool": "cpp20_pool.cpp",
    "ring-caf": "caf/ring_caf.cpp",
    "ring-erlang": "erlang/ring_erlang.erl",
}
PEERS_SRC = ROOT / "bench" / "ring" / "peers"


def program(name):
    path = RING / name
    if name == "ring-erlang" and shutil.which("erl") is None:
        pytest.skip("erl not on PATH (erlang-base)")
    if not path.exists():
        pytest.skip(f"{path} not built (cmake --preset bench && cmake --build build/bench)")
    # The script's program is the module it runs.
    built = RING / "ring_erlang.beam" if name == "ring-erlang" else path
    newer = [src for src in (PEERS_SRC / SOURCES[name], PEERS_SRC / "ring_common.h")
             if src.stat().st_mtime > built.stat().st_mtime]
    if newer:
        pytest.skip(f"{path} is older than {newer[0].name}: rebuild (cmake --build build/bench)")
    return path


def run(args):
    exe = program(args[0])
    proc = subprocess.run([str(exe), *args[1:]], capture_output=True, text=True,
                          timeout=HANG_S)
    return proc


def check_line(line, impl, params, runs):
    assert line["suite"] == "ring" and line["impl"] == impl and line["peer"] is True
    assert line["params"] == params
    assert "status" not in line or line["status"] == "ok", line
    for key in ("value", "min", "max"):
        assert isinstance(line[key], (int, float)) and math.isfinite(line[key]), (key, line)
    assert line["min"] <= line["value"] <= line["max"]
    assert isinstance(line["runs"], int) and line["runs"] == runs


@pytest.mark.parametrize("impl", sorted(PEERS))
@pytest.mark.parametrize("n", [2, 8])
def test_peer_prints_two_valid_lines(impl, n):
    coroutines, rounds, runs = 4 * n, 50, 2
    proc = run(PEERS[impl] + ["--n", str(n), "--coroutines", str(coroutines),
                              "--rounds", str(rounds), "--runs", str(runs)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(s) for s in proc.stdout.splitlines()]
    assert [x["metric"] for x in lines] == ["msgs_per_s", "rss_bytes_per_coro"]
    params = {"n": n, "coroutines": coroutines, "rounds": rounds}
    rate, rss = lines
    check_line(rate, impl, params, runs)
    assert rate["unit"] == "msgs/s" and rate["value"] > 0
    assert len(rate["samples"]) == runs and all(s > 0 for s in rate["samples"])
    check_line(rss, impl, params, 1)
    assert rss["unit"] == "bytes"


def test_boost_fiber_hop_is_one_switch():
    """Boost's unbuffered_channel makes the sender wait until the value is
    taken: two switches per hop from N = 3 on. The peer's inboxes must not,
    at N = 2 or N = 8 (one switch per hop, plus about one per ring and
    sweep of the ready queue)."""
    for n in (2, 8):
        proc = run(["ring-boost-fiber", "--sched", "round-robin", "--count-switches",
                    "--n", str(n), "--coroutines", str(32 * n), "--rounds", "50"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        counts = [float(s.split()[1]) for s in proc.stderr.splitlines()
                  if s.startswith("switches_per_hop ")]
        assert len(counts) == 1, proc.stderr
        assert 1.0 <= counts[0] < 1.5, (n, counts[0])


def test_cpp20_pool_threads_and_bad_arguments():
    for threads in ("1", "3"):
        proc = run(["ring-cpp20-pool", "--threads", threads, "--n", "3",
                    "--coroutines", "30", "--rounds", "20"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert json.loads(proc.stdout.splitlines()[0])["value"] > 0
    proc = run(["ring-cpp20-pool", "--threads", "0", "--n", "2", "--coroutines", "4",
                "--rounds", "1"])
    assert proc.returncode == 2 and proc.stdout == ""
    proc = run(["ring-cpp20-pool", "--n", "3", "--coroutines", "4", "--rounds", "1"])
    assert proc.returncode == 2 and "multiple" in proc.stderr


def test_ring_manifest_names_the_pool_peer():
    """bench/ring/suite.json loads, and the pool peer is in it with its pair
    and target (no build needed)."""
    from baton_bench.manifest import load_suite

    suite = load_suite(ROOT / "bench" / "ring" / "suite.json")
    impl = suite.impls["cpp20-pool"]
    assert impl.peer is True and impl.cmd[0] == "{build}/bench/ring/ring-cpp20-pool"
    assert ["baton-mt-stackful", "cpp20-pool"] in suite.pairs
    assert {"a": "baton-mt-stackful", "b": "cpp20-pool", "at_least": 1.5} in suite.targets


@pytest.mark.parametrize("args", [["ring-caf", "--threads", "1"],
                                  ["ring-erlang", "--schedulers", "1"]])
def test_actor_peers_refuse_bad_arguments(args):
    """A ring size that does not divide the coroutines, or a ring of one,
    exits 2 and prints no JSON line."""
    for bad in (["--n", "3", "--coroutines", "4", "--rounds", "1"],
                ["--n", "1", "--coroutines", "4", "--rounds", "1"]):
        proc = run(args + bad)
        assert proc.returncode == 2 and proc.stdout == "", (bad, proc.stdout, proc.stderr)


def test_ring_manifest_names_the_actor_peers():
    """caf-1t, caf, erlang-1t and erlang close the impls, each paired with
    baton on as many threads (no build needed)."""
    from baton_bench.manifest import load_suite

    suite = load_suite(ROOT / "bench" / "ring" / "suite.json")
    assert list(suite.impls)[-4:] == ["caf-1t", "caf", "erlang-1t", "erlang"]
    assert suite.impls["erlang"].requires == ["erl"]
    for pair in (["baton-1t-stackful", "caf-1t"], ["baton-mt-stackful", "caf"],
                 ["baton-1t-stackful", "erlang-1t"], ["baton-mt-stackful", "erlang"]):
        assert pair in suite.pairs
