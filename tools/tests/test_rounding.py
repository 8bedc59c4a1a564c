# SPDX-License-Identifier: MIT
"""One-sidedness of the directed-rounding helpers, checked against exact
rationals (``fractions``) and 50-digit ``decimal`` logs and exps."""

import math
import random
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest

from baton_bench import rounding as r
from baton_bench.logchoose import MINUS_LOG_SQRT_2PI_DOWN, MINUS_LOG_SQRT_2PI_UP

RNG = random.Random(20240611)


def _floats(count, lo_exp=-300, hi_exp=300):
    """Positive floats spread over many binades, plus awkward ones."""
    values = [0.1, 0.5, 1.0, 2.0, 1e-300, 5e-324, 1.7976931348623157e308, 20.0]
    values += [math.ldexp(RNG.random() + 0.5, RNG.randint(lo_exp, hi_exp)) for _ in range(count)]
    return values


def _exact_ln(x):
    with localcontext() as ctx:
        ctx.prec = 50
        return Decimal(x).ln()


def test_next_and_prev_float_move_one_ulp():
    assert r.next_float(1.0) == 1.0 + 2 ** -52
    assert r.prev_float(1.0) == 1.0 - 2 ** -53
    assert r.next_float(0.0) == 5e-324
    assert r.prev_float(0.0) == -5e-324
    assert r.next_float(1.0, 4) == 1.0 + 4 * 2 ** -52
    assert r.next_float(math.inf) == math.inf
    assert math.isnan(r.prev_float(math.nan))


@pytest.mark.parametrize("x", _floats(300))
def test_log_bounds_bracket_exact_log(x):
    exact = _exact_ln(x)
    assert Decimal(r.log_down(x)) <= exact <= Decimal(r.log_up(x))


@pytest.mark.parametrize("x", [-0.5, -0.1, -1e-20, 1e-10, 0.25, 3.0, 1e100]
                         + [-RNG.random() * 0.999 for _ in range(100)])
def test_log1p_bounds_bracket_exact(x):
    with localcontext() as ctx:
        ctx.prec = 60
        exact = (Decimal(1) + Decimal(x)).ln()
    assert Decimal(r.log1p_down(x)) <= exact <= Decimal(r.log1p_up(x))


@pytest.mark.parametrize("y", [-700.0, -1.0, -1e-9, 0.0, 1e-9, 0.5, 700.0]
                         + [RNG.uniform(-700, 700) for _ in range(100)])
def test_exp_bounds_bracket_exact(y):
    with localcontext() as ctx:
        ctx.prec = 400
        exact = Decimal(y).exp()
    assert Decimal(r.exp(y, r.DOWN)) <= exact <= Decimal(r.exp(y, r.UP))


def test_arithmetic_is_one_sided_on_random_operands():
    for _ in range(3000):
        a = math.ldexp(RNG.uniform(-1, 1), RNG.randint(-60, 60))
        b = math.ldexp(RNG.uniform(-1, 1), RNG.randint(-60, 60))
        fa, fb = Fraction(a), Fraction(b)
        assert Fraction(r.add(a, b, r.DOWN)) <= fa + fb <= Fraction(r.add(a, b, r.UP))
        assert Fraction(r.sub(a, b, r.DOWN)) <= fa - fb <= Fraction(r.sub(a, b, r.UP))
        assert Fraction(r.mul(a, b, r.DOWN)) <= fa * fb <= Fraction(r.mul(a, b, r.UP))
        if b:
            assert Fraction(r.div(a, b, r.DOWN)) <= fa / fb <= Fraction(r.div(a, b, r.UP))


def test_exact_sums_and_products_are_not_nudged():
    assert r.add(1.0, 2.0, r.UP) == 3.0
    assert r.add(1.0, 2.0, r.DOWN) == 3.0
    assert r.mul(0.0, -5.0, r.UP) == 0.0


def test_two_sum_is_exact():
    for _ in range(1000):
        a, b = RNG.uniform(-1e10, 1e10), RNG.uniform(-1e-5, 1e-5)
        s, e = r.two_sum(a, b)
        assert Fraction(s) + Fraction(e) == Fraction(a) + Fraction(b)


def test_compensated_sum_bounds_exact_sum_with_cancellation():
    for _ in range(300):
        values = [RNG.uniform(-1e8, 1e8) for _ in range(10)]
        values.append(-sum(values) + RNG.uniform(-1e-3, 1e-3))  # heavy cancellation
        exact = sum(Fraction(v) for v in values)
        low, high = r.sum_down(values), r.sum_up(values)
        assert Fraction(low) <= exact <= Fraction(high)
        # Kahan's bound: error of order one ULP of the sum of magnitudes.
        assert high - low <= 4 * 2 ** -52 * sum(abs(v) for v in values)


def test_log_sqrt_2pi_constants_bracket_the_exact_value():
    with localcontext() as ctx:
        ctx.prec = 50
        pi = Decimal("3.14159265358979323846264338327950288419716939937510")
        exact = -(2 * pi).ln() / 2
    assert Decimal(MINUS_LOG_SQRT_2PI_DOWN) < exact < Decimal(MINUS_LOG_SQRT_2PI_UP)
    assert MINUS_LOG_SQRT_2PI_UP == -0.9189385332046727
