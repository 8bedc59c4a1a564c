# SPDX-License-Identifier: MIT
"""Conservative quantiles of the Beta distribution (credible interval ends).

After ``s`` successes in ``n`` Bernoulli trials, the posterior of the success
rate under a uniform prior is ``Beta(s + 1, n - s + 1)``; the ends of an
equal-tailed credible interval are its ``alpha`` and ``1 - alpha`` quantiles,
i.e. inverses of the regularised incomplete beta function ``I_x(a, b)``.

We never need those quantiles exactly, only *safely*: the lower end must not
be above the true quantile, the upper end not below it.  So instead of
evaluating ``I_x`` approximately, ``IncompleteBeta.at_most(x, alpha)`` tries to
*prove* ``I_x(a, b) <= alpha`` with directed rounding, and ``beta_icdf``
bisects for the largest ``x`` it can prove that for.  A failed proof (slow
series, term limit) only moves the bound towards the conservative side.

Two proofs are tried, from the hypergeometric series (integer ``a, b >= 1``)

    I_x(a, b) = C(a+b-1, a) x**a (1-x)**b * sum_k t_k,
    t_0 = 1,  t_k = t_(k-1) * r_k,  r_k = x * (1 + (b - 1) / (a + k)):

* directly: the partial sum plus a geometric bound of the tail (the ratios
  ``r_k`` decrease with ``k``, so the tail after ``t_(k-1)`` is at most
  ``t_(k-1) r_k / (1 - r_k)``) stays below the budget;
* by symmetry, ``I_x(a, b) = 1 - I_(1-x)(b, a)``: a *lower* bound of the
  mirrored series reaches ``1 - alpha``.  This one converges fast exactly
  where the direct series crawls (``x`` close to 1 with ``b`` small).
"""

import functools
import struct
from collections.abc import Callable

from .logchoose import log_choose
from .rounding import (
    DOWN, UP, add, div, exp, log1p_down, log1p_up, log_down, log_up, mul, sub,
    sum_down, sum_up,
)

#: Most series terms one proof attempt may add before giving up.
SERIES_TERM_LIMIT = 2000

#: Bisection stops once the bracket is this narrow relative to its top.
RELATIVE_PRECISION = 1e-10

#: A direct-series ratio above this means the mirrored series goes first.
_SLOW_RATIO = 0.9

#: Relative margins below which a proof's failure is blamed on rounding
#: (so the other proof still gets a chance), and below which a term no
#: longer changes a sum.
_ROUNDING_SLACK = 1e-9
_NEGLIGIBLE = 1e-17


def _refuted(larger: float, smaller: float) -> bool | None:
    """False (refuted: skip the other proof) if ``larger`` clearly exceeds
    ``smaller``; None (undecided) if the gap is within rounding slack, where
    the other proof, with different rounding errors, may still succeed."""
    return False if larger > smaller * (1.0 + _ROUNDING_SLACK) else None


@functools.lru_cache(maxsize=1 << 14)
def beta_icdf(a: int, b: int, alpha: float, upper: bool = False) -> float:
    """Conservative bound of the ``alpha`` quantile of ``Beta(a, b)``.

    With ``upper=False``, returns ``x`` with ``I_x(a, b) <= alpha``: a lower
    bound of the ``alpha`` quantile (the left end of a credible interval that
    leaves ``alpha`` on the left).  With ``upper=True``, returns an upper
    bound of the ``1 - alpha`` quantile (the right end), through
    ``1 - lower(b, a, alpha)`` rounded up.  ``a`` and ``b`` are integers
    >= 1 (``successes + 1``, ``failures + 1``); ``0 <= alpha < 1``.
    The result is within ~``RELATIVE_PRECISION`` of the true quantile where
    one of the series converges in ``SERIES_TERM_LIMIT`` terms (as in the
    tails, where credible intervals live), and only looser, never wrong,
    elsewhere.  Results are cached: drivers ask for the same few shapes
    again and again.
    """
    _check_beta_args(a, b, alpha)
    if upper:
        return sub(1.0, _lower_quantile(b, a, alpha), UP)
    return _lower_quantile(a, b, alpha)


def _check_beta_args(a: int, b: int, alpha: float) -> None:
    """The series identity needs integer shapes; alpha is a probability."""
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"beta_icdf: {name} must be an integer >= 1, got {value!r}")
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"beta_icdf: need 0 <= alpha < 1, got {alpha}")


def _lower_quantile(a: int, b: int, alpha: float) -> float:
    """Largest ``x`` (to ``RELATIVE_PRECISION``) proven to have ``I_x <= alpha``."""
    if alpha == 0.0:
        return 0.0
    cdf = IncompleteBeta(a, b)
    return _bisect_largest(lambda x: cdf.at_most(x, alpha), 0.0, 1.0)


def _bits(x: float) -> int:
    """Bit pattern of a non-negative float, as an integer that orders like x."""
    bits: int = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits


def _from_bits(bits: int) -> float:
    """Inverse of ``_bits``."""
    x: float = struct.unpack("<d", struct.pack("<q", bits))[0]
    return x


def _bisect_largest(accept: Callable[[float], bool], lo: float, hi: float) -> float:
    """Bisect ``[lo, hi]`` for the largest accepted float; ``lo`` must be
    accepted.  Bisecting the bit patterns rather than the values finds tiny
    quantiles (1e-300) as quickly as large ones: every step halves the number
    of floats in the bracket.  The result is always an accepted point, so it
    is safe even if ``accept`` is not perfectly monotone."""
    lo_bits, hi_bits = _bits(lo), _bits(hi)
    while hi_bits - lo_bits > 1 and hi - lo > RELATIVE_PRECISION * hi:
        mid_bits = (lo_bits + hi_bits) // 2
        mid = _from_bits(mid_bits)
        if accept(mid):
            lo_bits, lo = mid_bits, mid
        else:
            hi_bits, hi = mid_bits, mid
    return lo


class IncompleteBeta:
    """Proofs of ``I_x(a, b) <= alpha`` for fixed integer shapes ``a, b``.

    The binomial coefficients of both series do not depend on ``x`` and are
    computed once, each rounded in the direction its proof needs.
    """

    def __init__(self, a: int, b: int) -> None:
        self.a = a
        self.b = b
        self.log_choose_up = log_choose(a + b - 1, a, UP)
        self.log_choose_mirror_down = log_choose(a + b - 1, b, DOWN)

    def at_most(self, x: float, alpha: float) -> bool:
        """True only if ``I_x(a, b) <= alpha`` is proven; False means "not
        proven", which callers must treat as "maybe larger".

        The proof whose series converges faster at ``x`` goes first.  Each
        answers True (proven), False (its bound lands clearly on the wrong
        side of ``alpha``, beyond any rounding slack: the other proof is
        skipped) or None (out of terms, or too close to call: the other
        proof, with different rounding errors, may still succeed)."""
        if x <= 0.0:
            return True
        if x >= 1.0:
            return False
        proofs = (self._direct, self._mirrored)
        if x * (self.a + self.b) / (self.a + 1) >= _SLOW_RATIO:
            proofs = proofs[::-1]
        for proof in proofs:
            verdict = proof(x, alpha)
            if verdict is not None:
                return verdict
        return False

    def _direct(self, x: float, alpha: float) -> bool | None:
        """Upper bound of the series for ``I_x(a, b)`` stays within ``alpha``.

        Everything is rounded up: the log of the prefix, then the allowance
        ``budget = alpha / prefix`` is rounded *down* (a smaller budget is
        harder to meet), and terms, partial sums and the geometric tail bound
        are rounded up."""
        a, b = self.a, self.b
        log_prefix = sum_up([self.log_choose_up, mul(a, log_up(x), UP),
                             mul(b, log1p_up(-x), UP)])
        budget = exp(sub(log_down(alpha), log_prefix, DOWN), DOWN)
        total = term = 1.0
        if total > budget:
            return _refuted(total, budget)
        for k in range(1, SERIES_TERM_LIMIT + 1):
            ratio = mul(x, add(1.0, div(b - 1, a + k, UP), UP), UP)
            if ratio < 1.0:
                tail = div(mul(term, ratio, UP), sub(1.0, ratio, DOWN), UP)
                if add(total, tail, UP) <= budget:
                    return True
            term = mul(term, ratio, UP)
            total = add(total, term, UP)
            if total > budget:
                return _refuted(total, budget)
        return None

    def _mirrored(self, x: float, alpha: float) -> bool | None:
        """Lower bound of ``I_y(b, a)`` reaches ``1 - alpha``, ``y <= 1 - x``.

        ``I_x(a, b) = 1 - I_(1-x)(b, a)`` and ``I_y`` grows with ``y``, so
        rounding ``y = 1 - x`` down keeps the proof valid.  Here everything is
        rounded down (prefix, terms, partial sums) and the ``target = (1 -
        alpha) / prefix`` the sum must reach is rounded up.  All terms are
        positive, so any partial sum is a lower bound: no tail bound needed.
        Giving up is always safe, so the early refutation (the ratios
        decrease, so the tail is at most geometric) need not be rigorous.
        """
        a, b = self.a, self.b
        y = sub(1.0, x, DOWN)
        if y <= 0.0:
            return False
        log_prefix = sum_down([self.log_choose_mirror_down, mul(b, log_down(y), DOWN),
                               mul(a, log1p_down(-y), DOWN)])
        need = sub(1.0, alpha, UP)
        target = exp(sub(log_up(need), log_prefix, UP), UP)
        total = term = 1.0
        for k in range(1, SERIES_TERM_LIMIT + 1):
            if total >= target:
                return True
            ratio = mul(y, add(1.0, div(a - 1, b + k, DOWN), DOWN), DOWN)
            term = mul(term, ratio, DOWN)
            total = add(total, term, DOWN)
            if ratio < 1.0:
                estimate = total + term * ratio / (1.0 - ratio)
                if estimate < target:
                    return _refuted(target, estimate)
                if term <= total * _NEGLIGIBLE:
                    return None  # converged, but too close to call
        return True if total >= target else None
