# SPDX-License-Identifier: MIT
"""python -m baton_bench compare: two results files, quantity by quantity,
with verdicts from the permutation test, and the machines' differences."""
import json
import random

from baton_bench.__main__ import main
from baton_bench.machine import describe_machine, machine_differences
from baton_bench.runs import FASTER, ONLY_NEW, ONLY_OLD, SAME, SLOWER, UNDECIDED, compare_runs


def summary(suite, impl, samples, params=None, metric="ns_per_op"):
    return {"kind": "summary", "suite": suite, "impl": impl, "metric": metric,
            "params": params or {"n": 1}, "samples": samples}


def suite_line(name, better):
    return {"kind": "suite", "suite": name, "better": better}


def noisy(center, n=30, spread=0.01, seed=1):
    rng = random.Random(seed)
    return [center * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def test_verdicts_follow_the_metric_direction():
    old = [suite_line("lat", "lower"), suite_line("thr", "higher"),
           summary("lat", "a", noisy(10)), summary("thr", "b", noisy(100))]
    new = [suite_line("lat", "lower"), suite_line("thr", "higher"),
           summary("lat", "a", noisy(12, seed=2)), summary("thr", "b", noisy(120, seed=3))]
    rows = {r.suite: r for r in compare_runs(old, new)}
    assert rows["lat"].verdict == SLOWER          # higher latency
    assert rows["thr"].verdict == FASTER          # higher throughput
    assert abs(rows["lat"].ratio - 1.2) < 0.02


def test_same_and_undecided():
    old = [summary("s", "a", noisy(10, n=60, spread=0.2, seed=4)), summary("s", "b", [1.0])]
    new = [summary("s", "a", noisy(10, n=60, spread=0.2, seed=5)), summary("s", "b", [1.5])]
    rows = {r.impl: r for r in compare_runs(old, new)}
    assert rows["a"].verdict in (SAME, UNDECIDED)  # one distribution
    assert rows["a"].verdict != SLOWER and rows["a"].verdict != FASTER
    assert rows["b"].verdict == UNDECIDED          # one sample each: no test


def test_rows_only_in_one_run():
    old = [summary("s", "gone", [1.0, 1.0])]
    new = [summary("s", "new", [2.0, 2.0])]
    rows = {r.impl: r for r in compare_runs(old, new)}
    assert rows["gone"].verdict == ONLY_OLD and rows["gone"].new is None
    assert rows["new"].verdict == ONLY_NEW and rows["new"].old is None


def test_cli_exit_status_gates_a_regression(tmp_path, capsys):
    old, new, same = tmp_path / "old.jsonl", tmp_path / "new.jsonl", tmp_path / "same.jsonl"
    old.write_text(json.dumps(summary("s", "a", noisy(10))) + "\n")
    new.write_text(json.dumps(summary("s", "a", noisy(20, seed=9))) + "\n")
    same.write_text(json.dumps(summary("s", "a", noisy(10, seed=1))) + "\n")
    assert main(["compare", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "slower" in out and "machines differ" in out  # no machine lines
    assert main(["compare", str(old), str(same)]) == 0


def test_machine_line_and_differences(tmp_path):
    m = describe_machine(tmp_path)
    assert m["kind"] == "machine" and m["cores"] >= 1 and m["kernel"]
    assert "versions" in m and "cc" in m["versions"]
    other = dict(m, cores=m["cores"] + 1, versions=dict(m["versions"], cc="cc 99"))
    diffs = machine_differences(m, other)
    assert any(d.startswith("cores:") for d in diffs)
    assert any(d.startswith("cc:") for d in diffs)
    assert machine_differences(m, m) == []
