# SPDX-License-Identifier: MIT
"""One-sided bounds of ``log C(n, s)``, the log of a binomial coefficient.

``robbins_log_choose`` is the constant-time bound ``csm`` needs on every look;
``log_choose`` is tighter for small ``min(s, n - s)`` (where Robbins' bound is
loosest) and is what the incomplete-beta bounds use, since there the binomial
coefficient multiplies a probability we compare against tiny thresholds.
"""

import math

from .rounding import DOWN, UP, compensated_sum, div, log, mul

#: ``-log(sqrt(2*pi))`` rounded up (= -8277062471433908 * 2**-53) and down.
#: The exact value is -0.918938533204672741780...; the upper constant is
#: 7.2e-17 above it, the lower one an ULP below that.
MINUS_LOG_SQRT_2PI_UP = math.ldexp(-8277062471433908, -53)
MINUS_LOG_SQRT_2PI_DOWN = math.ldexp(-8277062471433909, -53)

#: ``log_choose`` sums ``min(s, n - s)`` logs exactly up to this many terms.
EXACT_LOG_CHOOSE_LIMIT = 4096


def robbins_log_factorial(n: int, direction: int = UP) -> float:
    """Bound of ``log n!`` (n >= 1) from Robbins' form of Stirling's formula,
    ``log n! = log sqrt(2 pi) + (n + 1/2) log n - n + r_n`` with
    ``1/(12n + 1) < r_n < 1/(12n)``; every term rounded in ``direction``."""
    if n < 1:
        raise ValueError(f"need n >= 1, got {n}")
    log_sqrt_2pi = -(MINUS_LOG_SQRT_2PI_DOWN if direction > 0 else MINUS_LOG_SQRT_2PI_UP)
    return compensated_sum([log_sqrt_2pi, mul(n + 0.5, log(n, direction), direction),
                            -float(n), _robbins_correction(n, direction)], direction)


def robbins_log_choose(n: int, s: int, direction: int = UP) -> float:
    """Bound of ``log C(n, s)`` from Robbins' two-sided Stirling bounds.

    Robbins: ``log sqrt(2 pi) + (k + 1/2) log k - k + 1/(12k + 1)
    < log k! < log sqrt(2 pi) + (k + 1/2) log k - k + 1/(12k)``.
    For an upper bound of ``log n! - log s! - log (n-s)!`` we take the upper
    bound of ``log n!`` and the lower bounds of the other two (a lower bound
    swaps the roles).  The ``-k`` terms cancel exactly (``-n + s + (n - s)``)
    and are left out, which removes the worst cancellation.  Each remaining
    term is rounded in the direction that keeps the total on the requested
    side (the subtracted terms are computed rounded the *other* way, then
    negated exactly), and the terms are added with a one-sided compensated
    sum.

    ``C(n, 0) = 1`` and ``C(n, 1) = n`` are handled exactly: Robbins' bound is
    only valid for k >= 1 and is loosest for tiny k.
    """
    _check_choose_args(n, s)
    if min(s, n - s) == 0:
        return 0.0
    if min(s, n - s) == 1:
        return log(n, direction)
    d = direction
    minus_log_sqrt_2pi = MINUS_LOG_SQRT_2PI_UP if d > 0 else MINUS_LOG_SQRT_2PI_DOWN
    terms = [
        minus_log_sqrt_2pi,
        mul(n + 0.5, log(n, d), d),
        -mul(s + 0.5, log(s, -d), -d),
        -mul(n - s + 0.5, log(n - s, -d), -d),
        _robbins_correction(n, d),
        -_robbins_correction(s, -d),
        -_robbins_correction(n - s, -d),
    ]
    return compensated_sum(terms, d)


def _robbins_correction(k: int, direction: int) -> float:
    """The ``1/(12k)`` (upper) or ``1/(12k + 1)`` (lower) term of Robbins'
    bound on ``log k!``, itself rounded in ``direction``."""
    if direction > 0:
        return div(1.0, 12.0 * k, UP)
    return div(1.0, 12.0 * k + 1.0, DOWN)


def log_choose(n: int, s: int, direction: int = UP) -> float:
    """Bound of ``log C(n, s)``, tight for small ``k = min(s, n - s)``.

    For ``k <= EXACT_LOG_CHOOSE_LIMIT`` this sums ``log((n - k + i) / i)`` for
    ``i = 1..k``, each quotient and log rounded in ``direction``: the error is
    a few ULPs per term, where Robbins' bound is off by up to ``1/(72 k**2)``
    plus the libm allowance multiplied by ``n`` (1.5e-8 for n = 1e6).  Larger
    ``k`` falls back on Robbins.
    """
    _check_choose_args(n, s)
    k = min(s, n - s)
    if k > EXACT_LOG_CHOOSE_LIMIT:
        return robbins_log_choose(n, s, direction)
    terms = (log(div(n - k + i, i, direction), direction) for i in range(1, k + 1))
    return compensated_sum(terms, direction)


def _check_choose_args(n: int, s: int) -> None:
    """Both functions need integers with ``0 <= s <= n``."""
    if not 0 <= s <= n:
        raise ValueError(f"need 0 <= s <= n, got n={n}, s={s}")
