# SPDX-License-Identifier: MIT
"""The Confidence Sequence Method (CSM): anytime-valid stopping for Bernoulli data.

Robbins (1970) showed that, for i.i.d. Bernoulli(p) outcomes with ``s``
successes out of ``n``, the event

    (n + 1) * C(n, s) * alpha**s * (1 - alpha)**(n - s) <= eps

happens *even once*, over an unbounded sequence of looks, with probability at
most ``eps`` when ``p == alpha``.  Ding, Gandy and Hahn (2017) add that when it
does happen, ``s / n`` lies on the same side of ``alpha`` as ``p`` with
probability at least ``1 - eps``.  So we may look after every observation and
stop as soon as the criterion holds, without a multiple-testing penalty.

Everything is computed in the log domain, and every rounding is directed so
that the computed ``log_level`` is never *below* the exact one: rounding can
make us stop later, never wrongly earlier.

This module is the one import users need: it defines ``csm``, the
two-threshold ``csm_driver``, ``csm_power`` and the exact ``resampling_test``,
and re-exports the directed-rounding helpers (``log_up``, ``next_float``...),
``robbins_log_choose`` and ``beta_icdf``.
"""

import functools
import itertools
import math
import random
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Optional, TextIO

from .beta import beta_icdf
from .logchoose import (
    MINUS_LOG_SQRT_2PI_DOWN, MINUS_LOG_SQRT_2PI_UP, log_choose, robbins_log_choose,
    robbins_log_factorial,
)
from .rounding import (
    DOWN, LIBM_ERROR_LIMIT, UP, compensated_sum, div, log1p_down, log1p_up,
    log_down, log_up, mul, next_float, nudge, prev_float, sum_down, sum_up,
    two_sum,
)

__all__ = [
    # defined here
    "csm", "csm_driver", "csm_power", "reach_probability", "resampling_test", "split_epsilon",
    "credible_interval", "min_decisive_count", "mean_difference",
    "DriverResult", "ResamplingResult", "ABOVE", "BELOW", "UNDECIDED", "MAX_N",
    # re-exported
    "beta_icdf", "robbins_log_factorial", "robbins_log_choose", "log_choose", "MINUS_LOG_SQRT_2PI_UP",
    "MINUS_LOG_SQRT_2PI_DOWN", "UP", "DOWN", "LIBM_ERROR_LIMIT", "next_float",
    "prev_float", "nudge", "two_sum", "compensated_sum", "sum_up", "sum_down",
    "log_up", "log_down", "log1p_up", "log1p_down", "mul", "div",
]

#: ``csm`` is only specified (and its rounding only argued) for n < 2**40.
MAX_N = 1 << 40

ABOVE = "above"
BELOW = "below"
UNDECIDED = "undecided"


def csm(n: int, alpha: float, s: int, log_eps: float) -> tuple[bool, float]:
    """Robbins' stopping criterion: may we conclude that the rate != ``alpha``?

    ``n`` trials with ``s`` successes; ``log_eps`` is the log of the false
    positive rate we accept over the whole (unbounded) sequence of looks.
    Returns ``(stop, log_level)`` where ``log_level`` is an upper bound of
    ``log((n + 1) * C(n, s) * alpha**s * (1 - alpha)**(n - s))`` and
    ``stop`` is ``log_level < log_eps``.

    Rounding, term by term, all towards a *larger* ``log_level``:
    ``log(n + 1)`` is rounded up; ``log C(n, s)`` is Robbins' upper bound;
    ``log alpha`` and ``log1p(-alpha)`` are rounded up and multiplied by the
    non-negative counts with the product rounded up; the four upper bounds
    are added with a one-sided compensated sum that rounds up.  A larger
    ``log_level`` can only delay stopping.
    """
    _check_csm_args(n, alpha, s, log_eps)
    terms = [
        log_up(n + 1),
        robbins_log_choose(n, s, UP),
        mul(s, log_up(alpha), UP),
        mul(n - s, log1p_up(-alpha), UP),
    ]
    log_level = sum_up(terms)
    return log_level < log_eps, log_level


def _check_csm_args(n: int, alpha: float, s: int, log_eps: float) -> None:
    """Reject inputs outside the domain where ``csm``'s bounds were argued."""
    if not 0 <= n < MAX_N:
        raise ValueError(f"csm: need 0 <= n < 2**40, got {n}")
    if not 0 <= s <= n:
        raise ValueError(f"csm: need 0 <= s <= n, got s={s}, n={n}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"csm: need 0 < alpha < 1, got {alpha}")
    if not log_eps <= 0.0:
        raise ValueError(f"csm: need log_eps <= 0, got {log_eps}")


#: ``csm`` is pure and drivers ask the same (n, s) questions over and over
#: (every simulated run of a power estimate does), so they share this cache.
_csm_cached = functools.lru_cache(maxsize=1 << 16)(csm)


@dataclass
class DriverResult:
    """What ``csm_driver`` concluded.

    ``decision`` is ``"above"`` (the rate is above ``alpha_lo``), ``"below"``
    (the rate is below ``alpha_hi``) or ``"undecided"`` (the stream or the
    iteration limit ran out first).  With one threshold the two claims are
    the plain "above/below alpha".  ``lo``/``hi`` bound the credible interval
    of the rate (``None`` when the interval was not asked for).
    """

    decision: str
    n: int
    successes: int
    lo: Optional[float] = None
    hi: Optional[float] = None
    threshold: Optional[float] = None

    @property
    def rate(self) -> float:
        """Empirical success rate ``s / n`` (NaN before any observation)."""
        return self.successes / self.n if self.n else math.nan

    @property
    def stopped(self) -> bool:
        """Whether the CSM decided (as opposed to running out of data)."""
        return self.decision != UNDECIDED


def split_epsilon(eps: float, tests: int) -> tuple[float, float]:
    """Bonferroni split of the total error ``eps`` between ``tests`` CSM tests
    and the two ends of the credible interval: ``eps / (tests + 1)`` per test
    and half of that per interval end (``eps/3`` and ``eps/6`` for two
    thresholds, ``eps/2`` and ``eps/4`` for one).  Both shares are rounded
    down, so the parts never add up to more than ``eps``.
    Returns ``(log_eps_per_test, alpha_per_interval_end)``."""
    if not 0.0 < eps < 1.0:
        raise ValueError(f"need 0 < eps < 1, got {eps}")
    per_test = div(eps, tests + 1, DOWN)
    return log_down(per_test), div(per_test, 2, DOWN)


def csm_driver(stream: Iterable[object], alpha: float, eps: float, *,
               alpha_hi: Optional[float] = None, max_count: Optional[int] = None,
               min_count: int = 0, interval: bool = True,
               file: Optional[TextIO] = None) -> DriverResult:
    """Consume Bernoulli outcomes from ``stream`` until the CSM decides.

    ``alpha`` (and optionally ``alpha_hi >= alpha``) are the thresholds: with
    two, the driver stops as soon as the rate is confidently on one side of
    *either*, so any rate can be told apart in bounded time (rates between
    the two may go either way).  ``eps`` is the total error budget, split by
    ``split_epsilon`` between the tests and the credible interval.  At most
    ``max_count`` outcomes are pulled (the stream is never read past it, so
    it may be expensive, e.g. a benchmark); no decision is taken before
    ``min_count``.  ``file``, if given, gets a progress line ten times per
    decade (n, rate, interval, -log10 level).  Returns a ``DriverResult``.
    """
    thresholds = [alpha] if alpha_hi is None or alpha_hi == alpha else [alpha, alpha_hi]
    if any(not 0.0 < t < 1.0 for t in thresholds) or thresholds != sorted(thresholds):
        raise ValueError(f"need 0 < alpha <= alpha_hi < 1, got {thresholds}")
    log_eps, ci_alpha = split_epsilon(eps, len(thresholds))
    n = successes = 0
    threshold: Optional[float]
    decision, threshold = UNDECIDED, None
    outcomes = iter(stream)
    while max_count is None or n < max_count:
        try:
            outcome = next(outcomes)
        except StopIteration:
            break
        n += 1
        successes += 1 if outcome else 0
        if n >= min_count:
            decision, threshold = _decide(n, successes, thresholds, log_eps)
        if file is not None and _is_log_point(n):
            _log_progress(file, n, successes, ci_alpha, thresholds, log_eps)
        if decision != UNDECIDED:
            break
    result = DriverResult(decision, n, successes, threshold=threshold)
    if interval:
        result.lo, result.hi = credible_interval(successes, n, ci_alpha)
    return result


def _decide(n: int, successes: int, thresholds: Sequence[float],
            log_eps: float) -> tuple[str, Optional[float]]:
    """First threshold whose CSM test rejects, and the side the rate is on."""
    for threshold in thresholds:
        stop, _ = _csm_cached(n, threshold, successes, log_eps)
        if stop:
            return (ABOVE if successes > n * threshold else BELOW), threshold
    return UNDECIDED, None


def credible_interval(successes: int, n: int, alpha_per_end: float) -> tuple[float, float]:
    """Equal-tailed credible interval of the rate: conservative ends of the
    ``Beta(s + 1, n - s + 1)`` posterior (uniform prior), ``alpha_per_end``
    left out on each side."""
    a, b = successes + 1, n - successes + 1
    return beta_icdf(a, b, alpha_per_end), beta_icdf(a, b, alpha_per_end, upper=True)


def _is_log_point(n: int) -> bool:
    """1..10, then 10 points per decade: 20, 30.. 100, 200..."""
    scale: int = 10 ** max(0, len(str(n)) - 1)  # int ** int is Any to mypy
    return n % scale == 0


def _log_progress(file: TextIO, n: int, successes: int, ci_alpha: float,
                  thresholds: Sequence[float], log_eps: float) -> None:
    """One progress line: n, rate, interval, and -log10 of the best level."""
    lo, hi = credible_interval(successes, n, ci_alpha)
    level = min(_csm_cached(n, t, successes, log_eps)[1] for t in thresholds)
    print(f"{n:>10} {successes / n:.3e} {lo:.3e} {hi:.3e} {-level / math.log(10):.3e}",
          file=file)


def min_decisive_count(eps: float, alpha: float = 0.5, tests: int = 1) -> int:
    """Smallest ``n`` at which ``n`` straight successes let the CSM stop at
    threshold ``alpha`` with the per-test share of ``eps``.  Below this
    iteration limit a driver can never decide "above": useful to pick a
    benchmark budget."""
    log_eps, _ = split_epsilon(eps, tests)
    n = 1
    while not csm(n, alpha, n, log_eps)[0]:
        n += 1
    return n


def csm_power(p: float, alpha: float, max_count: Optional[int], eps: float = 1e-5, *,
              alpha_hi: Optional[float] = None, success_rate: float = 0.99,
              outer_eps: float = 1e-9, max_trials: Optional[int] = 10_000, seed: int = 0,
              file: Optional[TextIO] = None) -> DriverResult:
    """Monte Carlo estimate of the driver's power at true rate ``p``.

    Simulates ``csm_driver(Bernoulli(p), alpha, eps, alpha_hi=..., max_count=...)``
    and counts the runs that stopped on a correct side (``"above"`` is correct
    when ``p > alpha``, ``"below"`` when ``p < alpha_hi``; undecided is a
    failure).  Those successes are themselves a Bernoulli stream, fed to an
    outer ``csm_driver`` with threshold ``success_rate`` and error ``outer_eps``
    (at most ``max_trials`` simulations).  The outer result's decision says
    whether the power is confidently above/below ``success_rate``, and its
    rate and interval estimate the power.  Seeded, hence reproducible.
    """
    rng = random.Random(seed)
    hi = alpha if alpha_hi is None else alpha_hi

    def correct_stops() -> Iterator[bool]:
        while True:
            inner = csm_driver((rng.random() < p for _ in itertools.repeat(None)), alpha, eps,
                               alpha_hi=alpha_hi, max_count=max_count, interval=False)
            yield ((inner.decision == ABOVE and p > alpha)
                   or (inner.decision == BELOW and p < hi))

    return csm_driver(correct_stops(), success_rate, outer_eps,
                      max_count=max_trials, file=file)


def reach_probability(p: Optional[float], n: int, successes: int, max_count: int,
                      eps: float, tests: int = 1) -> float:
    """Probability that a ``csm_driver`` at threshold 1/2, not yet decided
    after ``successes`` out of ``n``, decides by ``max_count`` outcomes if
    the true rate is ``p``: the power of what is left of a comparison.

    With ``p`` None the rate is unknown, and the answer is the predictive
    probability under a uniform prior: averaged over the rate's posterior
    given the outcomes so far.  That is the same walk with each step's
    success probability ``(s + 1) / (k + 2)`` at ``s`` successes out of
    ``k`` (Laplace's rule of succession: a Polya urn), which neither trusts
    a short unanimous start nor gives up on it.

    ``csm_power`` estimates the same thing from the start by simulation; here
    the question is asked mid-run, many times, so it is computed exactly by
    carrying the distribution of the success count forward one outcome at a
    time and removing the mass that crosses a stopping boundary (the same
    ``csm`` test the driver applies, with the same share of ``eps``).
    O((max_count - n) ** 2) cached ``csm`` calls."""
    if p is not None and not 0.0 <= p <= 1.0:
        raise ValueError(f"reach_probability: need 0 <= p <= 1, got {p}")
    log_eps, _ = split_epsilon(eps, tests)
    mass = {successes: 1.0}
    reached = 0.0
    for count in range(n + 1, max_count + 1):
        step: dict[int, float] = {}
        for s, weight in mass.items():
            rate = (s + 1) / (count + 1) if p is None else p  # count - 1 outcomes so far
            step[s + 1] = step.get(s + 1, 0.0) + weight * rate
            step[s] = step.get(s, 0.0) + weight * (1.0 - rate)
        mass = {}
        for s, weight in step.items():
            if _csm_cached(count, 0.5, s, log_eps)[0]:
                reached += weight
            elif weight > 1e-12:
                mass[s] = weight
        if not mass:
            break
    return min(1.0, reached)


@dataclass
class ResamplingResult:
    """Outcome of ``resampling_test``.

    ``p_value`` is the fraction of resamples at least as extreme as the
    observed statistic, ``p_lo``/``p_hi`` its credible interval, and
    ``decision`` is ``"different"`` (p-value confidently below ``alpha``),
    ``"not different"`` (confidently above) or ``"undecided"``."""

    observed: float
    p_value: float
    p_lo: float
    p_hi: float
    resamples: int
    decision: str


def mean_difference(x: Sequence[float], y: Sequence[float]) -> float:
    """Default statistic of ``resampling_test``: ``mean(x) - mean(y)``."""
    return statistics.fmean(x) - statistics.fmean(y)


def resampling_test(a: Sequence[float], b: Sequence[float], *,
                    statistic: Callable[[Sequence[float], Sequence[float]], float]
                    = mean_difference,
                    alpha: float = 1e-3, eps: float = 1e-6,
                    max_resamples: Optional[int] = 100_000, two_sided: bool = True,
                    seed: int = 0) -> ResamplingResult:
    """Exact (permutation) test of "``a`` and ``b`` come from one distribution".

    Under that null hypothesis, every split of the pooled values into groups
    of ``len(a)`` and ``len(b)`` is equally likely.  Each resample shuffles
    the pool, splits it, and succeeds when its statistic is at least as
    extreme as the observed one (``abs`` values when ``two_sided``; exact
    ties within 1e-12 relative count as extreme, the conservative choice).
    These successes are i.i.d. Bernoulli with rate equal to the exact
    p-value, so ``csm_driver`` at threshold ``alpha`` decides when enough
    resamples were drawn: the conclusion "different" is wrong with
    probability at most ``alpha + eps``.
    """
    if len(a) < 1 or len(b) < 1:
        raise ValueError("resampling_test needs two non-empty samples")
    observed = statistic(a, b)
    limit = abs(observed) if two_sided else observed
    limit -= abs(limit) * 1e-12
    pool = list(a) + list(b)
    rng = random.Random(seed)

    def extreme_resamples() -> Iterator[bool]:
        while True:
            rng.shuffle(pool)
            value = statistic(pool[:len(a)], pool[len(a):])
            yield (abs(value) if two_sided else value) >= limit

    result = csm_driver(extreme_resamples(), alpha, eps, max_count=max_resamples)
    decision = {BELOW: "different", ABOVE: "not different"}.get(result.decision, UNDECIDED)
    assert result.lo is not None and result.hi is not None  # interval=True sets them
    return ResamplingResult(observed, result.rate, result.lo, result.hi, result.n, decision)
