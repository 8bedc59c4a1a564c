# SPDX-License-Identifier: MIT
"""beta_icdf against scipy's inverse incomplete beta (the oracle): the lower
end never above the true quantile, the upper end never below, and close."""

import pytest
from scipy.special import betaincinv, betainccinv

from baton_bench.csm import beta_icdf


@pytest.mark.parametrize("a, b, alpha, lower, upper, lower_gap, upper_gap", [
    # Exact references and relative gaps from prior-art 3.5.
    (5, 5, 0.01, 0.1709651054824590931911, 0.8290348945175409068089, 1e-2, 1e-2),
    (10000, 10, 1e-4, 0.9973853034151490539281, 0.9997803648233339942553, 1e-4, 1e-4),
    (100, 1000000, 1e-8, 5.36173569850883957903e-5, 1.666077240191560021563e-4, 1e-6, 2e-2),
])
def test_known_answers(a, b, alpha, lower, upper, lower_gap, upper_gap):
    lo = beta_icdf(a, b, alpha)
    hi = beta_icdf(a, b, alpha, upper=True)
    assert lower * (1 - lower_gap) <= lo <= lower
    assert upper <= hi <= upper * (1 + upper_gap)


def test_alpha_zero_gives_the_whole_range():
    assert beta_icdf(4, 4, 0.0) == 0.0
    assert beta_icdf(4, 4, 0.0, upper=True) == 1.0


SHAPES = [1, 2, 3, 7, 20, 41, 150, 1000, 10000]
ALPHAS = [0.05, 2.5e-4, 1e-6, 1e-10]
GRID = [(a, b, alpha) for a in SHAPES for b in SHAPES for alpha in ALPHAS
        if (a * 7 + b * 3) % 4 == 0 or max(a, b) <= 41]


@pytest.mark.parametrize("a, b, alpha", GRID)
def test_conservative_and_close_to_scipy(a, b, alpha):
    lo = beta_icdf(a, b, alpha)
    hi = beta_icdf(a, b, alpha, upper=True)
    true_lo = betaincinv(a, b, alpha)
    true_hi = betainccinv(a, b, alpha)  # accurate near 1, unlike betaincinv(1 - alpha)
    # scipy is itself a float computation: allow it a few ULPs.
    assert lo <= true_lo * (1 + 1e-13)
    assert hi >= true_hi * (1 - 1e-13)
    # The bisection aims at 1e-10; bench-sized shapes must be that tight.
    gap = 1e-8 if max(a, b) <= 1000 else 1e-4
    assert (true_lo - lo) <= gap * true_lo
    assert (hi - true_hi) <= gap * true_hi


@pytest.mark.parametrize("bad", [(0, 1, 0.1), (1, 0, 0.1), (1.5, 2, 0.1), (1, 1, 1.0), (1, 1, -0.1)])
def test_rejects_bad_arguments(bad):
    with pytest.raises(ValueError):
        beta_icdf(*bad)
