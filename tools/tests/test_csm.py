# SPDX-License-Identifier: MIT
"""The CSM: known answers, conservativeness against exact computations, and
its statistical guarantees on simulated data."""

import io
import itertools
import math
import random
from decimal import Decimal, localcontext

import pytest
from scipy.stats import binom

from baton_bench import csm as C
from baton_bench.compare import compare
from baton_bench.runner import OK

# Prior-art 3.5.  ``level`` is compared to a few ULPs where the Python
# reference gives it bitwise, else with the C test's relative 1e-10.
KNOWN = [
    ((1, 0.5, 1, -1.0), False, 9.992007221626409e-16),
    ((1, 0.5, 0, -1.0), False, 9.992007221626409e-16),
    ((100, 0.9, 98, math.log(1e-5)), False, None),
    ((100, 0.9, 98, math.log(0.2)), True, None),
    ((10 ** 9, 0.99, 990_000_000, -1e-2), False, None),
    ((10000, 0.01, 50, math.log(1e-9)), False, None),
    ((10000, 0.01, 50, math.log(1e-3)), True, None),
    ((10, 0.05, 1, -10.0), False, 1.243108442750477),
    ((100000, 0.05, 100, -10.0), True, -4624.756745998),
    ((1000000, 0.99, 990596, -10.0), False, -9.977077184266818),
    ((1000000, 0.99, 990597, -10.0), True, -10.039129993485403),
]


@pytest.mark.parametrize("args, stop, level", KNOWN)
def test_known_answers(args, stop, level):
    got_stop, got_level = C.csm(*args)
    assert got_stop == stop
    if level is not None and abs(level) < 2:
        assert got_level == pytest.approx(level, abs=4 * math.ulp(level))
    elif level is not None:
        assert got_level == pytest.approx(level, rel=1e-10)


def test_helper_known_answers():
    assert C.log_up(0.1) == -2.3025850929940437
    assert C.log_down(0.1) == -2.3025850929940472
    assert C.log_up(20) == 2.9957322735539926
    assert C.log1p_up(-0.1) == -0.10536051565782625
    assert C.MINUS_LOG_SQRT_2PI_UP == math.ldexp(-8277062471433908, -53)


def _exact_level(n, alpha, s):
    """log((n+1) C(n,s) alpha^s (1-alpha)^(n-s)) to 50 digits; alpha is the
    exact binary value of the float."""
    with localcontext() as ctx:
        ctx.prec = 50
        a = Decimal(alpha)
        return (Decimal((n + 1) * math.comb(n, s)).ln() + s * a.ln()
                + (n - s) * (1 - a).ln())


RNG = random.Random(99)
EXACT_CASES = [(n, alpha, RNG.randint(0, n)) for n in (1, 2, 5, 30, 200, 2000)
               for alpha in (0.5, 0.01, 0.99, 1 / 3, 0.7)]


@pytest.mark.parametrize("n, alpha, s", EXACT_CASES)
def test_level_is_an_upper_bound_of_the_exact_level(n, alpha, s):
    _, level = C.csm(n, alpha, s, 0.0)
    exact = _exact_level(n, alpha, s)
    assert Decimal(level) >= exact
    # ... and a tight one: Robbins' slack is below 1/(72 k**2), k = min(s, n-s).
    assert level - float(exact) < 1 / (72 * max(1, min(s, n - s)) ** 2) + 1e-9


@pytest.mark.parametrize("n, alpha", [(50, 0.5), (1000, 0.1), (100000, 0.99), (10 ** 7, 0.3)])
def test_level_is_conservative_against_scipy(n, alpha):
    for s in sorted({0, 1, n // 7, int(n * alpha), n // 2, n - 1, n}):
        _, level = C.csm(n, alpha, s, 0.0)
        reference = math.log(n + 1) + binom.logpmf(s, n, alpha)
        # scipy is approximate; allow it relative 1e-12 on the large terms.
        assert level >= reference - 1e-12 * (1 + abs(reference) + n * 1e-3)


@pytest.mark.parametrize("bad", [(-1, 0.5, 0, -1.0), (5, 0.0, 1, -1.0), (5, 1.0, 1, -1.0),
                                 (5, 0.5, 6, -1.0), (5, 0.5, 1, 0.5), (2 ** 40, 0.5, 0, -1.0)])
def test_rejects_out_of_domain_arguments(bad):
    with pytest.raises(ValueError):
        C.csm(*bad)


def bernoulli(rng, p):
    """An endless stream of Bernoulli(p) outcomes."""
    return (rng.random() < p for _ in itertools.repeat(None))


def test_driver_decides_above_below_and_gives_an_interval():
    rng = random.Random(1)
    above = C.csm_driver(bernoulli(rng, 0.9), 0.5, 1e-3)
    below = C.csm_driver(bernoulli(rng, 0.1), 0.5, 1e-3)
    assert above.decision == "above" and below.decision == "below"
    assert 0.5 < above.lo < above.hi < 1.0 and 0.0 < below.lo < below.hi < 0.5
    assert below.threshold == 0.5


def test_driver_never_reads_past_max_count():
    pulled = []

    def stream():
        for i in itertools.count():
            pulled.append(i)
            yield i % 2 == 0
    result = C.csm_driver(stream(), 0.5, 1e-3, max_count=7)
    assert result.decision == "undecided" and result.n == 7 and len(pulled) == 7


def test_driver_respects_min_count_and_a_short_stream():
    assert C.csm_driver(iter([True] * 100), 0.5, 1e-3, min_count=60).n == 60
    short = C.csm_driver(iter([True, False]), 0.5, 1e-3)
    assert short.decision == "undecided" and short.n == 2 and short.successes == 1


def test_two_thresholds_stop_between_them():
    rng = random.Random(3)
    result = C.csm_driver(bernoulli(rng, 0.97), 0.96, 1e-3, alpha_hi=0.98, max_count=200000)
    assert result.stopped
    assert (result.decision == "above") == (result.threshold == 0.96 or result.rate > 0.98)


def test_epsilon_split_is_bonferroni():
    log_eps, per_end = C.split_epsilon(3e-3, 2)
    assert math.exp(log_eps) <= 1e-3 and per_end <= 5e-4
    log_eps, per_end = C.split_epsilon(1e-3, 1)
    assert math.exp(log_eps) <= 5e-4 and per_end <= 2.5e-4
    assert math.exp(log_eps) + 2 * per_end <= 1e-3


def _false_positive_bound(runs, share):
    """Most false stops out of ``runs`` that a true rate of ``share`` allows,
    with a one-in-a-million chance of a spurious failure."""
    return binom.ppf(1 - 1e-6, runs, share)


@pytest.mark.parametrize("eps", [0.5, 0.1])
def test_false_positive_rate_at_the_threshold(eps):
    # Data exactly at the threshold (p = 1/4 from two random bits): every
    # stop is a false positive; Robbins bounds their rate by the test's share
    # of eps (eps/2 with one threshold) over an unbounded horizon.
    rng = random.Random(11)
    runs = 1000
    stops = sum(
        C.csm_driver((rng.getrandbits(2) == 0 for _ in itertools.repeat(None)), 0.25, eps,
                     max_count=1000, interval=False).stopped
        for _ in range(runs))
    assert stops <= _false_positive_bound(runs, eps / 2)


def test_ten_thousand_a_a_comparisons_stay_within_the_bound():
    # The target of the issue: at epsilon = 1e-3, 10,000 comparisons of a
    # program against itself give no more verdicts than the bound allows.
    # The full comparison runs (random order, tie coin flips, intervals)
    # on a noisy, tie-prone fake benchmark.
    rng, noise = random.Random(5), random.Random(6)

    def run():
        return OK, round(noise.lognormvariate(0.0, 0.2), 2), None
    verdicts = sum(
        compare("a", "a2", run, run, better="lower", epsilon=1e-3, budget=40,
                rng=rng).verdict != "undecided"
        for _ in range(10_000))
    assert verdicts <= _false_positive_bound(10_000, 1e-3 / 2)


def test_min_decisive_count_matches_the_criterion():
    n = C.min_decisive_count(1e-3)
    log_eps, _ = C.split_epsilon(1e-3, 1)
    assert C.csm(n, 0.5, n, log_eps)[0] and not C.csm(n - 1, 0.5, n - 1, log_eps)[0]


def test_power_is_high_far_from_the_threshold_and_low_at_it():
    strong = C.csm_power(1.0, 0.01, 10, success_rate=0.7)
    assert strong.decision == "above" and strong.rate == 1.0
    weak = C.csm_power(0.5, 0.5, 40, 1e-3, success_rate=0.5, outer_eps=1e-3, max_trials=2000)
    assert weak.decision == "below" and weak.rate < 0.05


def test_resampling_test_finds_a_shift_and_accepts_identical_samples():
    rng = random.Random(8)
    a = [rng.gauss(10, 1) for _ in range(30)]
    b = [rng.gauss(12, 1) for _ in range(30)]
    different = C.resampling_test(a, b, alpha=0.01, eps=1e-4, seed=1)
    assert different.decision == "different" and different.p_hi < 0.01
    same = C.resampling_test(a, list(a), alpha=0.01, eps=1e-4, seed=1)
    assert same.decision == "not different" and same.p_value > 0.5


def test_driver_logs_ten_points_per_decade():
    log = io.StringIO()
    C.csm_driver(iter([True, False] * 60), 0.5, 1e-3, max_count=120, file=log)
    counts = [int(line.split()[0]) for line in log.getvalue().splitlines()]
    assert counts == list(range(1, 11)) + list(range(20, 101, 10))
