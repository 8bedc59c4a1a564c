# SPDX-License-Identifier: MIT
"""Time budgets: the power of what is left of a comparison, the stop rule,
the shares of the run's time, the modes of a manifest, and the driver
keeping a run inside its budget."""

import json
import random
import sys
import textwrap
import time

import pytest

from baton_bench import budget as bb
from baton_bench import manifest
from baton_bench.csm import csm_driver, min_decisive_count, reach_probability
from baton_bench.driver import Config, describe_plan, estimate, run
from baton_bench.manifest import ManifestError, Suite, load_suite


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# reach_probability ----------------------------------------------------------

@pytest.mark.parametrize("p", [0.7, 0.85, 1.0])
def test_reach_probability_agrees_with_simulating_the_driver(p):
    rng = random.Random(11)
    trials = 4000
    stopped = sum(
        csm_driver((rng.random() < p for _ in iter(int, 1)), 0.5, 1e-3,
                   max_count=30, interval=False).stopped
        for _ in range(trials))
    exact = reach_probability(p, 0, 0, 30, 1e-3)
    # Four standard errors of the simulated rate.
    assert abs(stopped / trials - exact) <= 4 * max(exact * (1 - exact), 1e-4) ** 0.5 / trials ** 0.5 + 1e-3


def test_predictive_reach_averages_the_power_over_the_posterior():
    rng = random.Random(5)
    n, wins, cap, trials = 6, 5, 30, 4000
    stopped = 0
    for _ in range(trials):
        p = rng.betavariate(wins + 1, n - wins + 1)
        prefix = [True] * wins + [False] * (n - wins)
        stream = iter(prefix + [rng.random() < p for _ in range(cap - n)])
        stopped += csm_driver(stream, 0.5, 1e-3, max_count=cap, interval=False).stopped
    exact = reach_probability(None, n, wins, cap, 1e-3)
    assert 0.05 < exact < 0.95
    assert abs(stopped / trials - exact) < 4 * (exact * (1 - exact) / trials) ** 0.5


def test_reach_probability_shape():
    fewest = min_decisive_count(1e-3)
    assert reach_probability(1.0, 0, 0, fewest, 1e-3) == pytest.approx(1.0)
    assert reach_probability(1.0, 0, 0, fewest - 1, 1e-3) == 0.0
    # More pairs or a clearer rate can only help.
    assert (reach_probability(0.8, 0, 0, 20, 1e-3) < reach_probability(0.8, 0, 0, 60, 1e-3)
            < reach_probability(0.9, 0, 0, 60, 1e-3))
    # From a balanced start, 40 pairs are hopeless at a rate near 1/2.
    assert reach_probability(0.55, 10, 5, 40, 1e-3) < 0.01
    # Symmetric: a clear loser decides as surely as a clear winner.
    assert reach_probability(0.1, 0, 0, 40, 1e-3) == pytest.approx(
        reach_probability(0.9, 0, 0, 40, 1e-3), abs=1e-9)
    with pytest.raises(ValueError):
        reach_probability(1.5, 0, 0, 10, 1e-3)


# PairBudget -------------------------------------------------------------------

def test_pair_budget_runs_the_minimum_then_stops_at_the_deadline():
    clock = FakeClock()
    pb = bb.PairBudget(cap=40, deadline=clock.now + 10.0, epsilon=1e-3, clock=clock)
    clock.now += 30.0  # far past the deadline already
    assert all(pb.stop_reason(n, n) is None for n in range(bb.MIN_PAIRS))
    assert pb.stop_reason(bb.MIN_PAIRS, bb.MIN_PAIRS) == bb.STOP_TIME


def test_pair_budget_gives_up_on_a_tie_but_not_on_a_clear_lead():
    clock = FakeClock()
    pb = bb.PairBudget(cap=40, deadline=None, epsilon=1e-3, clock=clock)
    assert pb.stop_reason(6, 3) == bb.STOP_OUT_OF_REACH      # 3 of 6: a coin
    assert pb.stop_reason(6, 6) is None                      # unanimous so far
    assert pb.stop_reason(6, 0) is None                      # unanimous the other way


def test_pair_budget_counts_the_pairs_time_allows():
    clock = FakeClock()
    pb = bb.PairBudget(cap=40, deadline=clock.now + 20.0, epsilon=1e-3, clock=clock)
    clock.now += 10.0           # 5 pairs took 10 s: 5 more fit in the 10 s left
    assert pb.affordable(5) == 10
    # 5 of 5 won, but 10 pairs cannot reach the 15 a verdict needs: the
    # comparison stops, and says it is for lack of time.
    assert pb.stop_reason(5, 5) == bb.STOP_TIME
    roomy = bb.PairBudget(cap=40, deadline=None, epsilon=1e-3, clock=clock)
    assert roomy.affordable(5) == 40 and roomy.stop_reason(5, 5) is None


# Planner ----------------------------------------------------------------------

def test_planner_shares_time_by_weight_and_passes_leftovers_on():
    clock = FakeClock()
    planner = bb.Planner(10.0, {"a": 1.0, "b": 3.0, "c": 1.0}, clock=clock)
    assert planner.suite_deadline("a") == pytest.approx(clock.now + 120.0)   # 1/5 of 600 s
    clock.now += 20.0                                                        # a used 20 s
    assert planner.suite_deadline("b") == pytest.approx(clock.now + 580.0 * 3 / 4)
    assert planner.comparison_deadline(clock.now + 100.0, 4) == pytest.approx(clock.now + 25.0)
    # A comparison whose fewest decisive pairs cost more than an even share
    # may take that much, as far as the suite has it.
    assert planner.comparison_deadline(clock.now + 100.0, 4, need=60.0) == \
        pytest.approx(clock.now + 60.0)
    assert planner.comparison_deadline(clock.now + 100.0, 4, need=500.0) == \
        pytest.approx(clock.now + 100.0)
    clock.now += 1000.0
    assert planner.suite_deadline("c") == pytest.approx(clock.now)           # nothing left
    unlimited = bb.Planner(None, {"a": 1.0}, clock=clock)
    assert unlimited.suite_deadline("a") is None
    assert unlimited.comparison_deadline(None, 3) is None


def test_timings_persist_and_survive_a_corrupt_file(tmp_path):
    path = tmp_path / "t.json"
    t = bb.Timings(path)
    t.record("ring", "go", {"n": 2}, 1.23456)
    t.save()
    again = bb.Timings(path)
    assert again.get("ring", "go", {"n": 2}) == pytest.approx(1.2346)
    assert again.get("ring", "go", {"n": 8}) is None
    path.write_text("{not json")
    assert bb.Timings(path).seconds == {}


# Manifest modes ---------------------------------------------------------------

def _suite(**extra):
    return Suite(name="x", metric="m", better="lower", impls={}, pairs=[], **{
        "params": {"quick": [{"n": 1}], "default": [{"n": 2}], "full": [{"n": 2}, {"n": 3}]},
        "once": [{"cmd": ["a"]}, {"cmd": ["b"], "modes": ["full"]}], **extra})


def test_modes_choose_parameter_sets_once_commands_and_budgets():
    s = _suite(budget={"quick": 8, "default": 30})
    assert s.param_sets("quick") == [{"n": 1}]
    assert s.param_sets("default") == [{"n": 2}]
    assert s.param_sets("full") == [{"n": 2}, {"n": 3}]
    assert [e["cmd"] for e in s.once_for("quick")] == [["a"]]
    assert [e["cmd"] for e in s.once_for("full")] == [["a"], ["b"]]
    assert s.budget_for("quick", 20) == 8 and s.budget_for("full", 100) == 30
    slow = _suite(median_runs={"default": 3})
    assert slow.median_runs_for("default", 5) == 3 and slow.median_runs_for("full", 5) == 3
    assert slow.median_runs_for("quick", 2) == 2
    # A manifest with only quick and full sets: the default run uses "full".
    old = Suite(name="y", metric="m", better="lower", impls={}, pairs=[], once=[],
                params={"quick": [{"n": 1}], "full": [{"n": 9}]})
    assert old.param_sets("default") == [{"n": 9}]
    with pytest.raises(ValueError):
        s.param_sets("fast")
    # Pairs compared on some sets only, in one mode.
    per_mode = _suite(pair_params={"quick": [{"n": 1}]})
    per_mode.pairs = [["a", "b"]]
    assert per_mode.pairs_for({"n": 2}, "quick") == []
    assert per_mode.pairs_for({"n": 1}, "quick") == [["a", "b"]]
    assert per_mode.pairs_for({"n": 2}, "default") == [["a", "b"]]


def test_manifest_weight_and_impl_scale_are_checked(tmp_path):
    path = tmp_path / "suite.json"
    base = {"suite": "w", "metric": "m", "impls": {
        "a": {"cmd": ["prog", "{rounds}"], "scale": {"rounds": 0.02}}}}
    path.write_text(json.dumps({**base, "weight": 2.5}))
    suite = load_suite(path)
    assert suite.weight == 2.5 and suite.impls["a"].scale == {"rounds": 0.02}
    # Rounded, never below 1; other and non-numeric parameters untouched.
    assert suite.impls["a"].params_for({"rounds": 1000, "n": 8}) == {"rounds": 20, "n": 8}
    assert suite.impls["a"].params_for({"rounds": 10}) == {"rounds": 1}
    assert suite.impls["a"].params_for({"rounds": True}) == {"rounds": True}
    for bad in (0, -1, "heavy", True):
        path.write_text(json.dumps({**base, "weight": bad}))
        with pytest.raises(ManifestError, match="weight"):
            load_suite(path)
    for bad in ([1], {"rounds": 0}, {"rounds": "half"}):
        path.write_text(json.dumps({**base, "impls": {"a": {"cmd": ["p"], "scale": bad}}}))
        with pytest.raises(ManifestError, match="scale"):
            load_suite(path)


# The driver within its budget -------------------------------------------------

SLEEPER = textwrap.dedent("""
    import argparse, json, random, time
    p = argparse.ArgumentParser()
    p.add_argument("--name"); p.add_argument("--value", type=float)
    p.add_argument("--sleep", type=float); p.add_argument("--runs", type=int)
    p.add_argument("--rounds", type=int, default=0)
    a = p.parse_args()
    time.sleep(a.sleep)
    v = a.value * random.uniform(0.9, 1.1)
    print(json.dumps({"impl": a.name, "metric": "ns_per_op", "value": v,
                      "rounds": a.rounds, "params": {}}))
""")


def _sleeper(name, value, sleep, peer=True, **extra):
    return {"peer": peer, "cmd": [sys.executable, "{src}/bench/t/impl.py", "--name", name,
                                  "--value", str(value), "--sleep", str(sleep)], **extra}


@pytest.fixture
def timed_tree(tmp_path):
    src, build = tmp_path / "src", tmp_path / "build"
    (src / "bench" / "t").mkdir(parents=True)
    build.mkdir()
    (src / "bench" / "t" / "impl.py").write_text(SLEEPER)
    (src / "bench" / "t" / "suite.json").write_text(json.dumps({
        "suite": "t", "metric": "ns_per_op", "better": "lower",
        "params": {"quick": [{"n": 1, "rounds": 70}], "full": [{"n": 1, "rounds": 70}, {"n": 2, "rounds": 70}]},
        "impls": {
            "ours": _sleeper("ours", 1.0, 0.05, peer=False),
            # Same speed as "ours": a coin flip that no budget can decide.
            "twin": _sleeper("twin", 1.0, 0.05),
            # Clearly slower, and slow to run.
            "slowpoke": _sleeper("slowpoke", 5.0, 0.2),
            "fixed": {"peer": True, "scale": {"rounds": 0.1},
                      "cmd": [sys.executable, "{src}/bench/t/impl.py", "--name", "fixed",
                              "--value", "2", "--sleep", "0", "--rounds", "{rounds}"]},
        },
        "pairs": [["ours", "twin"], ["ours", "slowpoke"]],
        "targets": [{"a": "ours", "b": "slowpoke", "at_least": 2.0}],
    }))
    return src, build


def _config(src, build, **options):
    return Config(src=src, build=build, out=build / "results.jsonl", report=build / "report",
                  timeout=10.0, **options)


def test_a_tie_is_given_up_early_and_the_run_keeps_its_time_budget(timed_tree, capsys):
    src, build = timed_tree
    started = time.monotonic()
    lines = run(_config(src, build, mode="quick", minutes=0.2, budget=40))
    took = time.monotonic() - started
    out = capsys.readouterr().out
    assert "time budget 0.2 min" in out
    # The pair a target is decided from runs first.
    assert out.index("ours vs slowpoke:") < out.index("ours vs twin:")
    # 12 s of budget; the slack covers the probes, top-ups and the report.
    assert took < 12.0 + 6.0
    verdicts = {line["b"]: line for line in lines if line.get("kind") == "verdict"}
    tie = verdicts["twin"]
    assert tie["verdict"] == "undecided"
    assert tie["stopped"] in (bb.STOP_OUT_OF_REACH, bb.STOP_TIME)
    assert bb.MIN_PAIRS <= tie["n"] < 40
    clear = verdicts["slowpoke"]
    assert clear["n"] >= bb.MIN_PAIRS
    assert clear["stopped"] in ("csm", bb.STOP_TIME)
    # The impl in no pair still gets its median from the probe and top-ups,
    # run with its workload scaled down.
    fixed = next(line for line in lines
                 if line.get("kind") == "summary" and line["impl"] == "fixed")
    assert fixed["runs"] == 3 and fixed["run_params"] == {"n": 1, "rounds": 7}
    raw = [line for line in lines if line.get("kind") == "raw" and line["impl"] == "fixed"]
    assert raw and all(line["rounds"] == 7 for line in raw)


def test_a_full_run_prints_its_expected_duration_from_earlier_timings(timed_tree, capsys):
    src, build = timed_tree
    run(_config(src, build, mode="quick", minutes=0.1, budget=20))
    capsys.readouterr()
    timings = json.loads((build / "bench-timings.json").read_text())
    assert any(key.startswith("t|slowpoke|") for key in timings)
    config = _config(src, build, mode="full", budget=20, minutes=0)
    path = src / "bench" / "t" / "suite.json"
    suites = {path: load_suite(path)}
    known = bb.Timings(build / "bench-timings.json")
    text = describe_plan(config, suites, known)
    assert "no time budget" in text and "expected duration:" in text
    # With its default budget a full run names both the budget and what
    # the work would take without it.
    bounded = describe_plan(_config(src, build, mode="full", budget=20), suites, known)
    assert f"time budget {bb.MODE_MINUTES['full']:g} min" in bounded
    assert "without the budget" in bounded and "have no timing" in bounded
    # The n=2 set never ran in quick mode: its invocations are unknown.
    assert "have no timing" in text
    least, most, unknown = estimate(config, list(suites.values()), known)

    def t(impl):
        return timings[bb.Timings.key("t", impl, {"n": 1, "rounds": 70})]

    pairs = t("ours") + t("twin") + t("ours") + t("slowpoke")
    assert most - least == pytest.approx((20 - min_decisive_count(1e-3)) * pairs, rel=1e-6)
    assert unknown == 4 + 4   # four impls' probes, four pair members at n=2


def test_a_once_command_needing_more_memory_than_the_machine_has_is_skipped(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24684096 kB\nMemFree: 1 kB\n")
    assert manifest.memory_gib(meminfo) == pytest.approx(23.54, abs=0.01)
    assert manifest.memory_reason(None, meminfo) is None
    assert manifest.memory_reason(22, meminfo) is None
    reason = manifest.memory_reason(32, meminfo)
    assert reason == "needs 32 GiB of memory, this machine has 23.5 GiB"
    # No /proc/meminfo: the command runs (the OOM killer is then the judge).
    assert manifest.memory_reason(32, tmp_path / "none") is None


def _one_value_suite(tmp_path, suite):
    """A source tree whose one suite's commands all print value 1; the
    manifest is ``suite`` with "{fake}" standing for that command."""
    src, build = tmp_path / "src", tmp_path / "build"
    folder = src / "bench" / suite["suite"]
    folder.mkdir(parents=True)
    build.mkdir()
    fake = build / "fake"
    fake.write_text("#!/bin/sh\necho '{\"metric\": \"x\", \"value\": 1}'\n")
    fake.chmod(0o755)
    path = folder / "suite.json"
    path.write_text(json.dumps(suite).replace("{fake}", str(fake)))
    return src, build, path


def test_the_driver_reports_a_once_command_past_the_memory_as_missing(tmp_path, capsys):
    src, build, path = _one_value_suite(tmp_path, {
        "suite": "m", "metric": "x", "impls": {"a": {"cmd": ["{fake}"]}}, "pairs": [],
        "once": [{"impl": "a", "cmd": ["{fake}"], "memory_gib": 1e6},
                 {"impl": "a", "cmd": ["{fake}"], "memory_gib": 0.001}]})
    bad = json.loads(path.read_text())
    bad["once"][0]["memory_gib"] = "lots"
    broken = tmp_path / "bad.json"
    broken.write_text(json.dumps(bad))
    with pytest.raises(ManifestError, match="memory_gib must be a positive number"):
        load_suite(broken)
    lines = run(_config(src, build, mode="quick", minutes=0.2, budget=3))
    once = [line for line in lines if line.get("kind") == "once"]
    assert once[0]["status"] == "missing" and "needs 1e+06 GiB of memory" in once[0]["error"]
    assert once[1]["value"] == 1
    # The log says why the entry was skipped, not only the results file.
    assert "fake: missing (needs 1e+06 GiB of memory" in capsys.readouterr().out


def test_a_once_entry_may_allow_itself_more_than_the_run_timeout(tmp_path):
    # The http suite's connection rows alternate several servers in one
    # process: one such command takes longer than one run of an impl.
    src, build, path = _one_value_suite(tmp_path, {
        "suite": "t", "metric": "x", "impls": {"a": {"cmd": ["{fake}"]}}, "pairs": [],
        "once": [{"impl": "slow", "cmd": ["{slow}"]},
                 {"impl": "slow-allowed", "cmd": ["{slow}"], "timeout": 30}]})
    slow = build / "slow"
    slow.write_text("#!/bin/sh\nsleep 1.5\necho '{\"metric\": \"y\", \"value\": 2}'\n")
    slow.chmod(0o755)
    path.write_text(path.read_text().replace("{slow}", str(slow)))
    bad = json.loads(path.read_text())
    bad["once"][1]["timeout"] = "long"
    broken = tmp_path / "bad.json"
    broken.write_text(json.dumps(bad))
    with pytest.raises(ManifestError, match="timeout must be a positive number"):
        load_suite(broken)
    config = Config(src=src, build=build, out=build / "results.jsonl",
                    report=build / "report", timeout=1.0, mode="quick", minutes=0.2, budget=3)
    lines = run(config)
    once = [line for line in lines if line.get("kind") == "once"]
    assert once[0]["impl"] == "slow" and once[0]["status"] == "failed"
    assert "timed out after 1 s" in once[0]["error"]
    assert [line.get("value") for line in once[1:]] == [2]
    # Never shorter than --timeout: the entry's own figure only adds time.
    from baton_bench.driver import once_timeout
    assert once_timeout({"timeout": 30}, 120.0) == 120.0
    assert once_timeout({"timeout": 300}, 120.0) == 300.0
    assert once_timeout({}, 120.0) == 120.0


def test_a_parameter_set_kept_to_medians_decides_no_target(tmp_path, capsys):
    src, build, _ = _one_value_suite(tmp_path, {
        "suite": "p", "metric": "x",
        "params": {"quick": [{"k": True}, {"k": False}]},
        "impls": {"a": {"cmd": ["{fake}"]}, "b": {"cmd": ["{fake}"]}},
        "pairs": [["a", "b"]], "pair_params": [{"k": True}],
        "targets": [{"a": "a", "b": "b", "at_least": 2.0}]})
    lines = run(_config(src, build, mode="quick", minutes=0.1, budget=3))
    targets = [line for line in lines if line.get("kind") == "target"]
    # Judged where the pair runs (k=True); nothing at all, not "not measured",
    # where the manifest asks for medians only.
    assert [t["params"] for t in targets] == [{"k": True}]
    assert "not measured" not in capsys.readouterr().out
