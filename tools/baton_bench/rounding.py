# SPDX-License-Identifier: MIT
"""Directed rounding for IEEE-754 doubles, without changing the FPU mode.

Python cannot switch the hardware rounding mode, so every helper here computes
the ordinary round-to-nearest result and then *nudges* it by whole ULPs
(units in the last place) towards the safe side.  The two facts this relies on:

* IEEE-754 rounds ``+ - * /`` correctly: the computed value is within half an
  ULP of the exact one, so moving it one ULP in the chosen direction always
  lands on the safe side of the exact result.
* libm's ``log``, ``log1p`` and ``exp`` are not correctly rounded, but glibc
  documents errors of at most a few ULPs; we allow ``LIBM_ERROR_LIMIT`` (4).

Directions are written as ``+1`` (an upper bound: the returned float is >= the
exact real result) and ``-1`` (a lower bound).  The public ``*_up``/``*_down``
names are thin wrappers that make the intent readable at the call site.
"""

import math
from collections.abc import Iterable

UP = 1
DOWN = -1

#: ULPs of error we allow for libm's log, log1p and exp (glibc claims <= 3).
LIBM_ERROR_LIMIT = 4


def next_float(x: float, ulps: int = 1) -> float:
    """Return ``x`` moved ``ulps`` floats towards +inf (NaN and +inf stay)."""
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def prev_float(x: float, ulps: int = 1) -> float:
    """Return ``x`` moved ``ulps`` floats towards -inf (NaN and -inf stay)."""
    for _ in range(ulps):
        x = math.nextafter(x, -math.inf)
    return x


def nudge(x: float, direction: int, ulps: int = 1) -> float:
    """Move ``x`` by ``ulps`` ULPs up (``direction > 0``) or down (``< 0``)."""
    return next_float(x, ulps) if direction > 0 else prev_float(x, ulps)


def two_sum(a: float, b: float) -> tuple[float, float]:
    """Knuth's TwoSum: ``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b``
    exactly (barring overflow).  It is the only exact tool we need for sums."""
    s = a + b
    b_virtual = s - a
    a_virtual = s - b_virtual
    return s, (a - a_virtual) + (b - b_virtual)


def add(a: float, b: float, direction: int) -> float:
    """``a + b`` rounded in ``direction``.

    TwoSum tells us on which side of the exact sum ``fl(a + b)`` fell, so we
    only move it when it fell on the wrong side; exact sums stay exact."""
    s, err = two_sum(a, b)
    if err * direction > 0:
        return nudge(s, direction)
    return s


def sub(a: float, b: float, direction: int) -> float:
    """``a - b`` rounded in ``direction`` (negation is exact)."""
    return add(a, -b, direction)


def mul(a: float, b: float, direction: int) -> float:
    """``a * b`` rounded in ``direction``.  A product with a zero factor is
    exact; any other is moved one ULP, since we cannot cheaply tell whether
    it was exact."""
    if a == 0 or b == 0:
        return 0.0
    return nudge(a * b, direction)


def div(a: float, b: float, direction: int) -> float:
    """``a / b`` rounded in ``direction``: always one ULP (see ``mul``)."""
    return nudge(a / b, direction)


def log(x: float, direction: int) -> float:
    """Natural log of ``x > 0`` rounded in ``direction`` (libm allowance)."""
    return nudge(math.log(x), direction, LIBM_ERROR_LIMIT)


def log1p(x: float, direction: int) -> float:
    """``log(1 + x)`` for ``x > -1`` rounded in ``direction``."""
    return nudge(math.log1p(x), direction, LIBM_ERROR_LIMIT)


def exp(x: float, direction: int) -> float:
    """``e**x`` rounded in ``direction``; never negative, may be ``inf``."""
    try:
        value = math.exp(x)
    except OverflowError:
        return math.inf if direction > 0 else 1.7976931348623157e308
    return max(0.0, nudge(value, direction, LIBM_ERROR_LIMIT))


def log_up(x: float) -> float:
    """Upper bound of ``log(x)``."""
    return log(x, UP)


def log_down(x: float) -> float:
    """Lower bound of ``log(x)``."""
    return log(x, DOWN)


def log1p_up(x: float) -> float:
    """Upper bound of ``log(1 + x)``."""
    return log1p(x, UP)


def log1p_down(x: float) -> float:
    """Lower bound of ``log(1 + x)``."""
    return log1p(x, DOWN)


def compensated_sum(values: Iterable[float], direction: int) -> float:
    """Sum ``values`` with a one-sided Kahan (compensated) summation.

    Following Shewchuk's presentation: ``(acc, comp)`` always represents the
    partial sum exactly as the unevaluated real ``acc + comp``, because
    ``two_sum`` is exact.  The one step that can lose information is folding
    the compensation into the next summand, so that single addition is
    rounded in ``direction``; the final collapse of ``acc + comp`` is rounded
    the same way.  The result is therefore a bound of the exact real sum on
    the ``direction`` side, and is usually within an ULP of it, even when the
    summands are large and cancel (as in Robbins' bound)."""
    acc = 0.0
    comp = 0.0
    for value in values:
        acc, comp = two_sum(acc, add(value, comp, direction))
    return add(acc, comp, direction)


def sum_up(values: Iterable[float]) -> float:
    """Upper bound of the exact sum of ``values``."""
    return compensated_sum(values, UP)


def sum_down(values: Iterable[float]) -> float:
    """Lower bound of the exact sum of ``values``."""
    return compensated_sum(values, DOWN)
