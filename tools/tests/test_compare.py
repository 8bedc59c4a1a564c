# SPDX-License-Identifier: MIT
"""Pair comparisons without processes: verdicts, failures, the median-ratio
interval (against scipy's binomial, the oracle) and the run order."""

import random

import pytest
from scipy.stats import binom

from baton_bench.compare import a_wins, compare, median_interval
from baton_bench.runner import FAILED, OK

NOISE = random.Random(42)


@pytest.mark.parametrize("n", range(1, 61))
def test_median_interval_is_the_exact_order_statistic_interval(n):
    alpha = 2.5e-4
    values = [float(v) for v in random.Random(n).sample(range(1000), n)]
    lo, hi = median_interval(values, alpha)
    xs = sorted(values)
    ks = [k for k in range(1, n + 1) if binom.cdf(k - 1, n, 0.5) <= alpha]
    assert lo == (xs[max(ks) - 1] if ks else None)
    assert hi == (xs[n - max(ks)] if ks else None)


def test_ties_are_coin_flips():
    rng = random.Random(0)
    wins = sum(a_wins(1.0, 1.0, "lower", rng) for _ in range(2000))
    assert 850 < wins < 1150
    assert a_wins(1.0, 2.0, "lower", rng) and a_wins(2.0, 1.0, "higher", rng)


def _fake(value, log=None, name=None, fail_after=None):
    calls = []

    def run():
        calls.append(1)
        if log is not None:
            log.append(name)
        if fail_after is not None and len(calls) > fail_after:
            return FAILED, None, "crashed"
        return OK, value * NOISE.uniform(0.99, 1.01), None
    return run


@pytest.mark.parametrize("better, verdict", [("lower", "faster"), ("higher", "slower")])
def test_clear_difference_is_decided_early(better, verdict):
    order = []
    result = compare("a", "b", _fake(1.0, order, "a"), _fake(2.0, order, "b"), better=better,
                     epsilon=1e-3, budget=40, rng=random.Random(1))
    assert result.verdict == verdict and result.stopped == "csm" and result.n == 15
    assert result.ratio == pytest.approx(0.5, rel=0.03)
    assert result.ratio_lo <= result.ratio <= result.ratio_hi
    firsts = {order[i] for i in range(0, len(order), 2)}
    assert firsts == {"a", "b"}  # the order within pairs varies


def test_a_failure_midway_keeps_the_pairs_so_far():
    result = compare("a", "b", _fake(1.0), _fake(2.0, fail_after=5), better="lower",
                     epsilon=1e-3, budget=40, rng=random.Random(2))
    assert result.status == FAILED and result.error == "b: crashed"
    assert result.stopped == "failure" and result.n == 5 and result.verdict == "undecided"


def test_budget_caps_the_number_of_pairs():
    result = compare("a", "b", _fake(1.0), _fake(1.0), better="lower", epsilon=1e-3,
                     budget=12, rng=random.Random(3))
    assert result.n == 12 and result.verdict == "undecided" and result.stopped == "budget"
