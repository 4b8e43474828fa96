"""Extreme-value threshold, exact mean of the Gaussian maximum, Gumbel expansion.

References: closed forms E M_2 = 1/sqrt(pi), E M_3 = 3/(2 sqrt(pi)),
E M_4 = 3/(2 sqrt(pi)) (1 + 2 asin(1/3)/pi), E M_5 = 5/(4 sqrt(pi)) (1 + 6 asin(1/3)/pi)
(order statistics of the normal; confirmed with mpmath at 30 digits), and
``expected_max_mp`` (mpmath tanh-sinh quadrature of m n phi Phi^(n-1), dps 30).
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from replica import MaximumOfGaussians, expected_max, expected_max_mp, extreme_value_threshold
from replica import gumbel_expansion, order_statistics_from_uniforms, top_order_statistics

ASIN_THIRD = math.asin(1 / 3)
CLOSED_FORMS = {
    1: 0.0,
    2: 1 / math.sqrt(math.pi),
    3: 3 / (2 * math.sqrt(math.pi)),
    4: 3 / (2 * math.sqrt(math.pi)) * (1 + 2 * ASIN_THIRD / math.pi),
    5: 5 / (4 * math.sqrt(math.pi)) * (1 + 6 * ASIN_THIRD / math.pi),
}


@pytest.mark.parametrize("n,value", sorted(CLOSED_FORMS.items()))
def test_expected_max_small_n_closed_forms(n, value):
    assert expected_max(n) == pytest.approx(value, rel=1e-14, abs=1e-15)


@pytest.mark.parametrize("n", [10, 1e3, 1e5, 1e8, 1e10, 1e12, 1e15])
def test_expected_max_against_mpmath(n):
    assert expected_max(n) == pytest.approx(float(expected_max_mp(n, dps=30)), rel=1e-12)


def test_expected_max_vectorised_and_threshold():
    n = np.array([2.0, 100.0, 1e12])
    np.testing.assert_allclose(expected_max(n), [expected_max(v) for v in n], rtol=0)
    assert extreme_value_threshold(1e6) == pytest.approx(math.sqrt(2 * math.log(1e6)))
    assert extreme_value_threshold(1) == 0.0


@given(st.floats(min_value=1.0, max_value=1e12), st.floats(min_value=1.001, max_value=100.0))
def test_expected_max_increasing(n, factor):
    assert expected_max(n * factor) > expected_max(n)


@given(st.floats(min_value=10.0, max_value=1e15))
def test_gumbel_expansion_within_its_error_order(n):
    exact = expected_max(n)
    g = gumbel_expansion(n)
    # First order: the error is of the size of the first neglected term (order (ln ln n)^2/b^3).
    assert abs(exact - g.mean(1)) <= g.error_scale()
    # Second order: strictly better for n >= 100, where the expansion is asymptotic.
    if n >= 100:
        assert abs(exact - g.mean(2)) <= 0.1 * g.error_scale()
    # the leading threshold sqrt(2 ln n) overestimates the mean
    assert exact < g.threshold


def test_maximum_law_is_consistent():
    law = MaximumOfGaussians(1e6)
    assert law.mean() == pytest.approx(expected_max(1e6), rel=1e-13)
    u = np.array([1e-12, 1e-3, 0.5, 0.999, 1 - 1e-12])
    np.testing.assert_allclose(law.cdf(law.ppf(u)), u, rtol=1e-9)
    np.testing.assert_allclose(law.sf(law.isf(u)), u, rtol=1e-9)
    # exact law of the max of 50 normals against direct simulation
    small = MaximumOfGaussians(50)
    sims = np.random.default_rng(3).standard_normal((20000, 50)).max(axis=1)
    assert stats.kstest(sims, small.cdf).pvalue > 1e-3
    assert small.var() == pytest.approx(sims.var(), rel=0.05)


def test_top_order_statistics_law():
    rng = np.random.default_rng(4)
    n, k = 300, 4
    fast = top_order_statistics(n, k, 20000, rng)
    assert fast.shape == (20000, k)
    assert np.all(np.diff(fast, axis=1) <= 0)
    brute = -np.sort(-rng.standard_normal((20000, n)), axis=1)[:, :k]
    for j in range(k):
        assert stats.ks_2samp(fast[:, j], brute[:, j]).pvalue > 1e-3
    # the largest order statistic has the exact law of the maximum
    assert stats.kstest(fast[:, 0], MaximumOfGaussians(n).cdf).pvalue > 1e-3
    # common random numbers: the map is monotone in n
    u = np.random.default_rng(1).random((5, 3))
    assert np.all(order_statistics_from_uniforms(1e6, u) > order_statistics_from_uniforms(1e3, u))


@pytest.mark.parametrize("bad", [0.5, 0, -3, float("nan"), float("inf"), "10"])
def test_bad_n(bad):
    with pytest.raises(ValueError, match="n"):
        expected_max(bad)
    with pytest.raises(ValueError, match="n"):
        extreme_value_threshold(bad)


def test_bad_order_statistics_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="k"):
        top_order_statistics(10, 0, 5, rng)
    with pytest.raises(ValueError, match="n"):
        top_order_statistics(3, 5, 5, rng)
    with pytest.raises(ValueError, match="seed"):
        top_order_statistics(10, 2, 5, "42")
    # the seed policy: an int seed, a Generator (consumed as it is), None = DEFAULT_SEED
    assert np.array_equal(top_order_statistics(10, 2, 5, 42), top_order_statistics(10, 2, 5, 42))
    assert np.array_equal(top_order_statistics(10, 2, 5), top_order_statistics(10, 2, 5, 20261130))
    assert np.array_equal(top_order_statistics(10, 2, 5, np.random.default_rng(4)),
                          order_statistics_from_uniforms(10, np.random.default_rng(4).random((5, 2))))
    with pytest.raises(ValueError, match="n"):
        gumbel_expansion(2)
