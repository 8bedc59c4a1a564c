# SPDX-License-Identifier: MIT
"""Deciding "is A faster than B?" from paired runs, with the CSM.

Each step runs A once and B once (in random order), and A *wins* the pair
when its value is better (lower or higher, per the suite).  If A and B
perform alike, wins are fair coin flips whatever the noise looks like, so
the win rate is a Bernoulli rate and the CSM tells us, after every pair,
whether it is confidently above or below 1/2.  See docs/reading-verdicts.md.

The error budget ``epsilon`` is split as in ``csm.split_epsilon`` with one
test: ``epsilon/2`` for the CSM, ``epsilon/4`` for each end of the intervals
(the win rate's credible interval, and the median ratio's distribution-free
confidence interval, whose tail probabilities are Beta quantiles too).
"""

import random
import statistics
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, cast

from .csm import ABOVE, BELOW, DriverResult, beta_icdf, csm_driver, split_epsilon
from .runner import OK, RunOutcome

FASTER = "faster"
SLOWER = "slower"
UNDECIDED = "undecided"


@dataclass
class Comparison:
    """The outcome of one A-vs-B comparison at one parameter set."""

    a: str
    b: str
    wins: int = 0
    n: int = 0
    verdict: str = UNDECIDED
    win_lo: Optional[float] = None
    win_hi: Optional[float] = None
    ratio: Optional[float] = None
    ratio_lo: Optional[float] = None
    ratio_hi: Optional[float] = None
    stopped: str = "budget"
    status: str = OK
    error: Optional[str] = None
    pairs: list[tuple[float, float]] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        """The verdict-line fields this comparison contributes."""
        out: dict[str, Any] = {
            "a": self.a, "b": self.b, "ratio": self.ratio, "ratio_lo": self.ratio_lo,
            "ratio_hi": self.ratio_hi, "wins": self.wins, "n": self.n,
            "win_rate": self.wins / self.n if self.n else None,
            "win_lo": self.win_lo, "win_hi": self.win_hi,
            "verdict": self.verdict, "stopped": self.stopped, "status": self.status}
        if self.error:
            out["error"] = self.error
        return out


def a_wins(a: float, b: float, better: str, rng: random.Random) -> bool:
    """Whether value ``a`` beats ``b``; exact ties are settled by a coin flip
    so that identical programs still win exactly half the time."""
    if a == b:
        return rng.random() < 0.5
    return a < b if better == "lower" else a > b


def compare(a: str, b: str, run_a: Callable[[], RunOutcome], run_b: Callable[[], RunOutcome],
            *, better: str, epsilon: float, budget: int, rng: random.Random,
            stop_reason: Optional[Callable[[int, int], Optional[str]]] = None) -> Comparison:
    """Alternate runs of ``a`` and ``b`` until the CSM decides or ``budget``
    pairs are done, or ``stop_reason(pairs, wins)`` - asked before each pair
    - names a reason to stop (``budget.PairBudget``: out of time, or out of
    reach).  ``run_a()``/``run_b()`` return ``(status, value, error)``;
    a failed run ends the comparison (status and error are kept, and the
    verdict so far stands: the CSM's guarantee holds at any stopping time).
    The order within each pair is random so that a systematic "second run
    is faster" effect cannot masquerade as a difference."""
    result = Comparison(a, b)

    def outcomes() -> Iterator[bool]:
        wins = 0
        while True:
            reason = stop_reason(len(result.pairs), wins) if stop_reason else None
            if reason:
                result.stopped = reason
                return
            pair = _run_pair(((a, run_a), (b, run_b)), rng, result)
            if pair is None:
                return
            result.pairs.append(pair)
            won = a_wins(pair[0], pair[1], better, rng)
            wins += won
            yield won

    decided = csm_driver(outcomes(), 0.5, epsilon, max_count=budget)
    return _conclude(result, decided, epsilon)


def compare_pairs(a: str, b: str, pairs: Sequence[tuple[float, float]], *, better: str,
                  epsilon: float, rng: random.Random, stopped: str = "budget",
                  status: str = OK, error: Optional[str] = None) -> Comparison:
    """A comparison decided from pairs that were already run: another
    metric of the runs ``compare`` alternated for the suite's own (the
    server's CPU per request beside its requests per second).  The CSM reads
    ``pairs`` (``(a's value, b's value)``) in their order and stops at its
    first decision, as it would have live; its guarantee does not depend on
    why the runs stopped.  ``stopped``, ``status`` and ``error`` are those of
    the comparison that ran them."""
    result = Comparison(a, b, stopped=stopped, status=status, error=error)

    def outcomes() -> Iterator[bool]:
        for pair in pairs:
            result.pairs.append(pair)
            yield a_wins(pair[0], pair[1], better, rng)

    return _conclude(result, csm_driver(outcomes(), 0.5, epsilon), epsilon)


def _conclude(result: Comparison, decided: DriverResult, epsilon: float) -> Comparison:
    """``result`` with the CSM's decision over its pairs, the win rate's
    interval and the median ratio with its interval."""
    result.wins, result.n = decided.successes, decided.n
    if decided.n:
        result.win_lo, result.win_hi = decided.lo, decided.hi
    if decided.stopped:
        result.stopped = "csm"
    result.verdict = {ABOVE: FASTER, BELOW: SLOWER}.get(decided.decision, UNDECIDED)
    _, alpha_per_end = split_epsilon(epsilon, 1)
    ratios = [x / y for x, y in result.pairs if y != 0]
    if ratios:
        result.ratio = statistics.median(ratios)
        result.ratio_lo, result.ratio_hi = median_interval(ratios, alpha_per_end)
    return result


def _run_pair(runners: Sequence[tuple[str, Callable[[], RunOutcome]]], rng: random.Random,
              result: Comparison) -> Optional[tuple[float, float]]:
    """Run both ``(name, run)`` in random order; their values in the given
    order, or None after recording the first failure in ``result``."""
    order = [0, 1] if rng.random() < 0.5 else [1, 0]
    values: list[Optional[float]] = [None, None]
    for index in order:
        name, run = runners[index]
        status, value, error = run()
        if status != OK:
            result.status, result.error, result.stopped = status, f"{name}: {error}", "failure"
            return None
        values[index] = value
    # Both runs succeeded, and a successful run has a value.
    return cast(tuple[float, float], tuple(values))


def median_interval(values: Iterable[float],
                    alpha_per_end: float) -> tuple[Optional[float], Optional[float]]:
    """Distribution-free confidence interval of the median ``m`` of the
    distribution ``values`` were drawn from, as ``(lo, hi)`` (``None`` =
    unbounded: too few values to exclude anything on that side).

    The classical order-statistic interval: the k-th smallest value is above
    ``m`` only if at most k - 1 values fall at or below ``m``, which has
    probability at most ``P(Binomial(n, 1/2) <= k - 1) = I_(1/2)(n - k + 1, k)``
    (ties only lower it).  So ``lo`` is the largest order statistic whose
    probability is at most ``alpha_per_end``, and ``hi`` symmetrically.  The
    Beta quantiles come from the conservative ``beta_icdf``: the ``1 - alpha``
    quantile of ``Beta(k, n - k + 1)`` being at most 1/2 proves the tail is
    at most ``alpha``."""
    xs = sorted(values)
    n = len(xs)
    k_lo = _last_true(lambda k: beta_icdf(k, n - k + 1, alpha_per_end, upper=True) <= 0.5, n)
    # Mirror image: the j-th largest value is below m with the same bound.
    j_hi = _last_true(lambda j: beta_icdf(n - j + 1, j, alpha_per_end) >= 0.5, n)
    lo = xs[k_lo - 1] if k_lo >= 1 else None
    hi = xs[n - j_hi] if j_hi >= 1 else None
    return lo, hi


def _last_true(predicate: Callable[[int], bool], n: int) -> int:
    """Largest k in 1..n with ``predicate(k)`` true, for a predicate that is
    true then false as k grows; 0 if it is false at 1."""
    lo, hi = 0, n + 1  # predicate(lo) is true (vacuously), predicate(hi) false
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if predicate(mid):
            lo = mid
        else:
            hi = mid
    return lo
