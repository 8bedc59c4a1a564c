# SPDX-License-Identifier: MIT
"""Magnitude targets ("A at least X times as fast as B") decided from the
comparison's interval: met, missed, undecided, not measured."""
import json

import pytest

from baton_bench.compare import Comparison
from baton_bench.manifest import ManifestError, load_suite
from baton_bench.targets import MET, MISSED, NOT_MEASURED, UNDECIDED, applies, judge


def comp(a, b, ratio, lo, hi):
    c = Comparison(a, b)
    c.ratio, c.ratio_lo, c.ratio_hi = ratio, lo, hi
    return c


def test_higher_is_better():
    t = {"a": "baton", "b": "nginx", "at_least": 1.3}
    assert judge(t, [comp("baton", "nginx", 1.5, 1.4, 1.6)], "higher").verdict == MET
    assert judge(t, [comp("baton", "nginx", 0.95, 0.9, 1.0)], "higher").verdict == MISSED
    r = judge(t, [comp("baton", "nginx", 1.3, 1.2, 1.4)], "higher")
    assert r.verdict == UNDECIDED and r.speed == pytest.approx(1.3)


def test_lower_is_better_inverts():
    # ns per op: baton 10, boost 20 -> ratio 0.5 -> speed 2.
    t = {"a": "baton", "b": "boost", "at_least": 1.6}
    r = judge(t, [comp("baton", "boost", 0.5, 0.45, 0.55)], "lower")
    assert r.verdict == MET and r.speed == pytest.approx(2.0)
    assert r.speed_lo == pytest.approx(1 / 0.55) and r.speed_hi == pytest.approx(1 / 0.45)
    assert judge(t, [comp("baton", "boost", 0.9, 0.8, 1.0)], "lower").verdict == MISSED


def test_pair_listed_the_other_way():
    t = {"a": "baton", "b": "go", "at_least": 5}
    r = judge(t, [comp("go", "baton", 0.1, 0.09, 0.11)], "higher")  # go/baton
    assert r.verdict == MET and r.speed == pytest.approx(10.0)


def test_unbounded_interval_is_undecided_and_absent_is_not_measured():
    t = {"a": "x", "b": "y", "at_least": 2}
    assert judge(t, [comp("x", "y", 3.0, None, 4.0)], "higher").verdict == UNDECIDED
    assert judge(t, [comp("x", "z", 3.0, 2.5, 4.0)], "higher").verdict == NOT_MEASURED
    assert judge(t, [], "higher").verdict == NOT_MEASURED


def test_params_subset():
    t = {"a": "x", "b": "y", "at_least": 1, "params": {"cores": 1}}
    assert applies(t, {"cores": 1, "keepalive": True})
    assert not applies(t, {"cores": 2})
    assert applies({"a": "x", "b": "y", "at_least": 1}, {"n": 8})


def write(tmp_path, targets):
    p = tmp_path / "suite.json"
    p.write_text(json.dumps({"suite": "s", "metric": "m", "better": "higher",
                             "impls": {"x": {"cmd": ["true"]}, "y": {"cmd": ["true"]}},
                             "targets": targets}))
    return p


def test_manifest_targets_checked(tmp_path):
    s = load_suite(write(tmp_path, [{"a": "x", "b": "y", "at_least": 1.3}]))
    assert s.targets == [{"a": "x", "b": "y", "at_least": 1.3}]
    for bad in ([{"a": "x", "b": "nope", "at_least": 1}], [{"a": "x", "b": "y"}],
                [{"a": "x", "b": "y", "at_least": 0}], {"a": "x"},
                [{"a": "x", "b": "y", "at_least": 1, "params": 3}]):
        with pytest.raises(ManifestError):
            load_suite(write(tmp_path, bad))


def test_report_shows_targets(tmp_path):
    from baton_bench.report import write_report

    lines = [
        {"suite": "s", "kind": "suite", "metric": "m", "better": "higher"},
        {"suite": "s", "kind": "target", "params": {"n": 1}, "a": "x", "b": "y",
         "at_least": 1.3, "speed": 1.5, "speed_lo": 1.4, "speed_hi": 1.6, "verdict": "met"},
        {"suite": "s", "kind": "target", "params": {"n": 1}, "a": "x", "b": "z",
         "at_least": 2, "speed": None, "speed_lo": None, "speed_hi": None,
         "verdict": "not measured"},
        {"suite": "s", "kind": "verdict", "params": {"n": 1}, "a": "x", "b": "y",
         "verdict": "faster", "ratio": 1.5, "n": 10, "wins": 10},
        # A set with no pairs at all (medians only): its target row is noise.
        {"suite": "s", "kind": "target", "params": {"n": 2}, "a": "x", "b": "y",
         "at_least": 1.3, "speed": None, "speed_lo": None, "speed_hi": None,
         "verdict": "not measured"},
    ]
    text = write_report(lines, tmp_path / "r").read_text()
    assert "Targets" in text
    assert "| n=1 | x >= 1.3x y | 1.5 [1.4, 1.6] | met |" in text
    assert "| n=1 | x >= 2x z | - | not measured |" in text
    assert "n=2 | x >= 1.3x y" not in text
