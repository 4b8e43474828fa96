"""Quarter-circle laws and alpha_c(kappa).

Reference values come from (a) the independent mpmath quadrature path
``alpha_c_mp`` (tanh-sinh quadrature + root finding, no closed form), (b) the
Catalan numbers (even moments of the quarter-circle law: E s^(2k) = C_k, the
moments of the Marchenko-Pastur law with ratio 1), and (c) sympy (test_sympy_algebra.py).
"""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

import replica
from replica import QuarterCircle, TruncatedQuarterCircle, alpha_c, alpha_c_hebbian, alpha_c_mp
from replica import tail_second_moment, truncation_point

kappas = st.floats(min_value=1e-12, max_value=1.0, allow_nan=False, exclude_min=False)


def test_alpha_c_one_is_exactly_one_half():
    assert alpha_c(1.0) == 0.5
    assert alpha_c() == 0.5
    assert alpha_c_hebbian(1.0) == 0.125
    assert truncation_point(1.0) == 0.0


def test_alpha_c_agrees_with_mpmath_on_1000_kappas():
    # Grid of 1000+ values in (0, 1], with points within 1e-9 of 0 and of 1.
    rng = np.random.default_rng(20261130)
    grid = np.concatenate([
        np.linspace(1e-3, 1.0, 910),
        10.0 ** rng.uniform(-12, -3, 60),
        1.0 - 10.0 ** rng.uniform(-12, -3, 30),
        [1e-300, 1e-15, 1e-9, 5e-10, 1 - 1e-9, 1 - 5e-10, 1 - 2 ** -52, 0.5, np.nextafter(0.5, 1)],
    ])
    assert grid.size >= 1000 and grid.min() > 0 and grid.max() <= 1
    fast = alpha_c(grid)
    s_fast = truncation_point(grid)
    ref = np.array([float(v) for v in alpha_c_mp(grid, dps=25)])
    rel = np.abs(fast / ref - 1.0)
    assert rel.max() <= 1e-13, (grid[rel.argmax()], rel.max())
    # The truncation point too, on a subset (relative to 2 - s near kappa -> 0 is not needed;
    # s itself is compared relative to max(s, 1e-300)).
    sub = grid[::25]
    s_ref = np.array([float(v) for v in replica.truncation_point_mp(sub, dps=25)])
    assert np.all(np.abs(truncation_point(sub) - s_ref) <= 1e-13 * np.maximum(s_ref, 1e-300))
    assert s_fast.shape == grid.shape


def test_mpmath_precision_is_left_unchanged():
    before = mpmath.mp.dps
    alpha_c_mp(0.3, dps=60)
    replica.truncation_point_mp([0.2, 0.7], dps=40)
    assert mpmath.mp.dps == before


def test_mp_path_is_accurate_beyond_float64():
    # kappa = 1/2 at 40 digits against 60 digits: the reference path is self-consistent.
    a40 = alpha_c_mp(0.5, dps=40)
    a60 = alpha_c_mp(0.5, dps=60)
    with mpmath.workdps(60):
        assert abs(a40 - a60) < mpmath.mpf(10) ** -38


def test_theory_brief_reference_table():
    # Six-decimal table of notes/alpha_c_kappa.md; recomputed here from the closed form.
    table = {0.1: (1.610767, 0.156784), 0.25: (1.269409, 0.311456), 0.5: (0.807946, 0.446865),
             0.75: (0.395288, 0.493524), 1.0: (0.0, 0.5)}
    for kappa, (s_ref, a_ref) in table.items():
        assert round(truncation_point(kappa), 6) == pytest.approx(s_ref, abs=1e-12)
        assert round(alpha_c(kappa), 6) == pytest.approx(a_ref, abs=1e-12)


@given(st.lists(kappas, min_size=3, max_size=3, unique=True))
def test_alpha_c_increasing_and_concave(values):
    k1, k2, k3 = sorted(values)
    a1, a2, a3 = (alpha_c(k) for k in (k1, k2, k3))
    assert a1 <= a2 <= a3
    # concavity: a2 lies above the chord through (k1, a1) and (k3, a3)
    chord = a1 + (a3 - a1) * (k2 - k1) / (k3 - k1)
    assert a2 >= chord - 4e-16 * max(a3, 1e-300)


@given(kappas)
def test_tail_second_moment_bounds(kappa):
    f = tail_second_moment(kappa)
    assert 0 < f <= min(1.0, 4.0 * kappa) * (1 + 1e-15)


@given(st.floats(min_value=1e-6, max_value=0.999))
def test_derivative_of_F_is_s_kappa_squared(kappa):
    # dF/dkappa = s_kappa^2 (moving the cut by ds adds s^2 rho ds to F and rho ds to kappa);
    # the central difference needs kappa +- h inside (0, 1].
    h = 1e-6 * kappa
    slope = (tail_second_moment(kappa + h) - tail_second_moment(kappa - h)) / (2 * h)
    assert slope == pytest.approx(truncation_point(kappa) ** 2, rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("order,catalan", [(0, 1), (2, 1), (4, 2), (6, 5), (8, 14)])
def test_quarter_circle_even_moments_are_catalan_numbers(order, catalan):
    assert QuarterCircle().moment(order) == pytest.approx(catalan, rel=1e-14)


def test_quarter_circle_mean_and_var():
    law = QuarterCircle()
    mean = 8 / (3 * math.pi)  # Int_0^2 s sqrt(4-s^2)/pi ds = 8/(3 pi)
    assert law.mean() == pytest.approx(mean, rel=1e-14)
    assert law.var() == pytest.approx(1 - mean ** 2, rel=1e-13)
    assert law.pdf(0.0) == pytest.approx(2 / math.pi)
    assert law.pdf(2.5) == 0.0 and law.cdf(-1) == 0.0 and law.cdf(3) == 1.0


@given(st.floats(min_value=1e-12, max_value=1 - 1e-12))
def test_cdf_ppf_roundtrip(u):
    law = QuarterCircle()
    assert law.cdf(law.ppf(u)) == pytest.approx(u, rel=1e-12, abs=1e-15)
    assert law.sf(law.isf(u)) == pytest.approx(u, rel=1e-12, abs=1e-15)


@given(st.floats(min_value=1e-6, max_value=1.0), st.floats(min_value=1e-9, max_value=1 - 1e-9))
def test_truncated_cdf_ppf_roundtrip(kappa, u):
    law = TruncatedQuarterCircle(kappa)
    assert law.cdf(law.ppf(u)) == pytest.approx(u, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("kappa", [1e-6, 0.1, 0.25, 0.5, 0.9, 1.0])
def test_truncated_law_integrates_to_one(kappa):
    law = TruncatedQuarterCircle(kappa)
    lo, hi = law.support()
    assert lo == pytest.approx(truncation_point(kappa)) and hi == 2.0
    mass, err = integrate.quad(law.pdf, lo, hi, epsabs=1e-13)
    assert mass == pytest.approx(1.0, abs=1e-9)
    assert law.moment(0) == pytest.approx(1.0, rel=1e-13)
    # second moment times kappa is F(kappa): incomplete-beta path against the angle closed form
    assert law.moment(2) * kappa == pytest.approx(tail_second_moment(kappa), rel=1e-12)
    assert law.cdf(lo) == pytest.approx(0.0, abs=1e-12) and law.cdf(2.0) == 1.0


def test_rvs_matches_law_and_is_reproducible():
    for law in (QuarterCircle(), TruncatedQuarterCircle(0.3)):
        a = law.rvs(size=4000, rng=np.random.default_rng(5))
        b = law.rvs(size=4000, rng=np.random.default_rng(5))
        np.testing.assert_array_equal(a, b)
        assert stats.kstest(a, law.cdf).pvalue > 1e-3


def test_sampled_gaussian_matrix_follows_quarter_circle():
    # Singular values of a 400 x 400 N(0, 1/d) matrix (finite-d law; loose KS bound).
    rng = np.random.default_rng(11)
    d = 400
    s = np.linalg.svd(rng.standard_normal((d, d)) / np.sqrt(d), compute_uv=False)
    assert stats.kstest(s, QuarterCircle().cdf).statistic < 0.03


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.0000001, float("nan"), float("inf"), "0.5", None, [0.5, 2.0]])
def test_bad_kappa_raises_value_error_naming_argument(bad):
    for func in (alpha_c, alpha_c_hebbian, truncation_point, tail_second_moment):
        with pytest.raises(ValueError, match="kappa"):
            func(bad)
    with pytest.raises(ValueError, match="kappa"):
        alpha_c_mp(bad)


def test_bad_truncated_kappa():
    with pytest.raises(ValueError, match=r"kappa must lie in \(0, 1\], got 1.5"):
        TruncatedQuarterCircle(1.5)


def test_vectorised_shapes():
    k = np.array([[0.1, 0.2], [0.3, 1.0]])
    assert alpha_c(k).shape == (2, 2)
    assert isinstance(alpha_c(0.3), float)


def test_even_moments_of_the_full_law_are_catalan_numbers_exactly():
    # E s^(2k) = C_k = binom(2k, k) / (k + 1) (closed form, notes/alpha_c_kappa.md);
    # exact in float64, so moment(4) == 2.0, not 1.9999999999999998.
    import math

    law = QuarterCircle()
    for k in range(8):
        assert law.moment(2 * k) == math.comb(2 * k, k) // (k + 1)
    # odd moments keep the beta-function form, checked against quadrature
    from scipy import integrate
    value, _ = integrate.quad(lambda s: s ** 3 * math.sqrt(4 - s * s) / math.pi, 0, 2)
    assert law.moment(3) == pytest.approx(value, rel=1e-13)
