# SPDX-License-Identifier: MIT
"""Bounds of log C(n, s): known answers and one-sidedness against exact
big-integer binomials (``math.comb``) and 50-digit logs."""

import math
import random
from decimal import Decimal, localcontext

import pytest

from baton_bench.logchoose import log_choose, robbins_log_choose, robbins_log_factorial
from baton_bench.rounding import DOWN, UP

RNG = random.Random(7)


def _exact_log_choose(n, s):
    with localcontext() as ctx:
        ctx.prec = 50
        return Decimal(math.comb(n, s)).ln()


@pytest.mark.parametrize("n, s, expected", [
    (4, 2, 1.7944835223684492),
    (10000, 100, 556.7980123668373),
    (10000, 8000, 4999.416373646588),
])
def test_robbins_known_answers(n, s, expected):
    # Prior-art 3.5 (csm.c); the last bits depend on summation order and
    # libm, so a few ULPs of slack.
    assert robbins_log_choose(n, s) == pytest.approx(expected, abs=4 * math.ulp(expected))


def test_trivial_coefficients_are_exact_or_tight():
    assert robbins_log_choose(7, 0) == 0.0
    assert robbins_log_choose(7, 7) == 0.0
    assert robbins_log_choose(7, 1) >= math.log(7) >= robbins_log_choose(7, 1, DOWN)


CASES = [(n, s) for n in (2, 3, 10, 100, 1000, 5000) for s in (1, 2, n // 3, n // 2, n - 1)]
CASES += [(n, RNG.randint(0, n)) for n in (RNG.randint(2, 20000) for _ in range(40))]


@pytest.mark.parametrize("n, s", CASES)
def test_bounds_bracket_exact_log_choose(n, s):
    exact = _exact_log_choose(n, s)
    for bound in (robbins_log_choose, log_choose):
        assert Decimal(bound(n, s, DOWN)) <= exact <= Decimal(bound(n, s, UP))


def test_exact_sum_is_tighter_than_robbins_for_small_k():
    n, s = 1_000_000, 20
    exact = float(_exact_log_choose(n, s))
    assert log_choose(n, s, UP) - exact < 1e-9
    assert robbins_log_choose(n, s, UP) - exact > log_choose(n, s, UP) - exact


@pytest.mark.parametrize("n", [1, 2, 3, 10, 171, 1000, 123456, 10 ** 9])
def test_robbins_log_factorial_brackets_lgamma(n):
    with localcontext() as ctx:
        ctx.prec = 50
        if n <= 5000:
            exact = Decimal(math.factorial(n)).ln()
        else:  # lgamma is accurate to ~1e-16 relative; the bracket is far wider
            exact = Decimal(math.lgamma(n + 1))
    low, high = robbins_log_factorial(n, DOWN), robbins_log_factorial(n, UP)
    slack = Decimal(abs(float(exact)) * 4e-16) if n > 5000 else 0
    assert Decimal(low) <= exact + slack and exact - slack <= Decimal(high)
    # Width: Robbins' own gap plus the libm allowance, multiplied by n + 1/2.
    rounding = 10 * (n + 1) * math.ulp(math.log(n) + 1) + 4 * math.ulp(float(exact))
    assert high - low < 1 / (12 * n) - 1 / (12 * n + 1) + rounding
