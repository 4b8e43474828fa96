"""Tests of the predicted singular-value laws (replica.asymptotic.spectra).

Reference values: closed forms (Fuss-Catalan numbers, the quarter circle), scipy
quadrature of the density (independent of the cumulative table used by cdf/ppf),
and singular values of sampled Gaussian matrices.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from replica import QuarterCircle, TruncatedQuarterCircle, tail_second_moment
from replica.asymptotic.spectra import hebbian_spectrum, normalized_singular_values, spectrum


def _sampled_hebbian_singular_values(d, p, instances, rng):
    out = []
    for _ in range(instances):
        u = rng.standard_normal((d, p)) / math.sqrt(d)
        e = rng.standard_normal((d, p)) / math.sqrt(d)
        out.append(normalized_singular_values(np.linalg.svd(u @ e.T, compute_uv=False)))
    return out


# ----------------------------------------------------------------------------- optimal memory
def test_spectrum_objects():
    law = spectrum(1.0)
    assert isinstance(law, QuarterCircle)
    assert law.moment(2) == pytest.approx(1.0, rel=1e-14)
    trunc = spectrum(0.25)
    assert isinstance(trunc, TruncatedQuarterCircle) and trunc.kappa == 0.25
    # Second moment F(kappa)/kappa: the units are those of the truncated full-rank matrix.
    assert trunc.moment(2) == pytest.approx(float(tail_second_moment(0.25)) / 0.25, rel=1e-12)


def test_normalized_singular_values_units():
    rng = np.random.default_rng(1)
    d = 400
    values = np.linalg.svd(rng.standard_normal((d, d)) / math.sqrt(d), compute_uv=False)
    full = normalized_singular_values(values)
    assert np.mean(full ** 2) == pytest.approx(1.0, rel=1e-12)
    assert stats.kstest(full, QuarterCircle().cdf).statistic < 0.03
    # Best rank-m approximation of a Gaussian matrix: its non-zero singular values, in the
    # units of spectrum(kappa), follow the truncated quarter circle.
    kappa = 0.25
    m = int(kappa * d)
    truncated = np.concatenate([np.sort(values)[::-1][:m], np.zeros(d - m)])
    kept = normalized_singular_values(truncated, kappa)
    assert kept.size == m
    ks = stats.kstest(kept, spectrum(kappa).cdf).statistic
    assert ks < 0.06
    # Normalising by ||W||_F / sqrt(d) alone (without sqrt(F)) would be clearly wrong.
    wrong = kept / math.sqrt(float(tail_second_moment(kappa)))
    assert stats.kstest(wrong, spectrum(kappa).cdf).statistic > 0.3


# ----------------------------------------------------------------------------- Hebbian spectrum
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_fuss_catalan_moments_at_ratio_one(n):
    law = hebbian_spectrum(1.0)
    fuss_catalan = math.comb(3 * n, n) / (2 * n + 1)  # 1, 3, 12, 55, 273
    assert law.moment(2 * n) == pytest.approx(fuss_catalan, rel=1e-14)
    # Independent check of the density: scipy quadrature of sigma^(2n) pdf.
    lo, hi = law.support()
    quad = integrate.quad(lambda s: s ** (2 * n) * law.pdf(s), lo, hi, limit=200, points=[0.01, 0.1])[0]
    assert quad == pytest.approx(fuss_catalan, rel=1e-7)


@pytest.mark.parametrize("ratio", [0.25, 0.5, 2.0, 3.0, 10.0])
def test_density_mass_and_moments(ratio):
    law = hebbian_spectrum(ratio)
    lo, hi = law.support()
    pts = [lo + (hi - lo) * t for t in (1e-4, 1e-2)]
    mass = integrate.quad(law.pdf, lo, hi, limit=200, points=pts)[0]
    assert mass == pytest.approx(min(1.0, ratio), rel=1e-8)
    assert law.atom == pytest.approx(max(0.0, 1.0 - ratio), abs=1e-15)
    for k in (2, 4, 6):
        quad = integrate.quad(lambda s, k=k: s ** k * law.pdf(s), lo, hi, limit=200, points=pts)[0]
        assert quad == pytest.approx(law.moment(k), rel=1e-7)
    assert law.moment(2) == pytest.approx(1.0, rel=1e-14)
    assert law.moment(4) == pytest.approx(2.0 + 1.0 / ratio, rel=1e-14)


def test_density_continuous_across_ratio_one():
    # c = 1 uses the Penson-Zyczkowski closed form; c = 1 +- 1e-9 the cubic. They must agree.
    s = np.linspace(0.05, 2.55, 60)
    exact = hebbian_spectrum(1.0).pdf(s)
    for ratio in (1.0 - 1e-9, 1.0 + 1e-9):
        assert np.allclose(hebbian_spectrum(ratio).pdf(s), exact, rtol=1e-6)


def test_density_near_zero():
    # c > 1: the pair of roots leaves the double root -1/c, f(0+) = (2/pi) sqrt(c/(c-1)) (-> 2/pi, QC).
    for ratio in (1.5, 4.0, 16.0):
        assert hebbian_spectrum(ratio).pdf(1e-6) == pytest.approx(2 / math.pi * math.sqrt(ratio / (ratio - 1)),
                                                                  rel=1e-6)
    # c = 1: triple root, f(s) ~ (sqrt(3)/pi) s^(-1/3).
    assert hebbian_spectrum(1.0).pdf(1e-9) * 1e-3 == pytest.approx(math.sqrt(3) / math.pi, rel=1e-4)
    # c < 1: gap [0, s_minus) with s_minus^2 = (1 - c)^3 / (c^2 x_plus).
    law = hebbian_spectrum(0.25)
    lo, hi = law.support()
    assert lo ** 2 == pytest.approx(0.75 ** 3 / (0.25 ** 2 * hi ** 2), rel=1e-12)
    assert law.pdf(0.99 * lo) == 0.0 and law.pdf(1.01 * lo) > 0


def test_cdf_ppf_rvs():
    for ratio in (0.5, 1.0, 4.0):
        law = hebbian_spectrum(ratio)
        lo, hi = law.support()
        assert law.cdf(-1.0) == 0.0 and law.cdf(hi + 1) == 1.0
        assert law.cdf(0.0) == pytest.approx(law.atom, abs=1e-12)
        q = np.linspace(law.atom + 1e-3, 1 - 1e-3, 41)
        assert np.allclose(law.cdf(law.ppf(q)), q, atol=1e-7)
        sample = law.rvs(200_000, np.random.default_rng(2))
        for k in (2, 4):
            m = np.mean(sample ** k)
            se = np.std(sample ** k) / math.sqrt(sample.size)
            assert abs(m - law.moment(k)) < 5 * se
        if ratio < 1:
            assert np.mean(sample == 0.0) == pytest.approx(law.atom, abs=0.005)


@pytest.mark.parametrize("ratio", [0.5, 1.0, 2.0, 4.0])
def test_against_sampled_matrices(ratio):
    d = 300
    p = int(ratio * d)
    law = hebbian_spectrum(p / d)
    samples = _sampled_hebbian_singular_values(d, p, 2, np.random.default_rng(int(10 * ratio)))
    if p < d:
        # Rank deficiency: exactly d - p zero singular values (atom 1 - c).
        for s in samples:
            assert np.sum(s < 1e-8 * s.max()) == d - p
    values = np.concatenate([s[s > 1e-8 * s.max()] for s in samples])
    conditional = lambda x: (law.cdf(x) - law.atom) / law.continuous_mass  # noqa: E731
    # Measured KS statistics are 0.004-0.008 (eigenvalue rigidity makes them smaller than for i.i.d. data).
    assert stats.kstest(values, conditional).statistic < 0.02
    assert np.mean(np.concatenate(samples) ** 4) == pytest.approx(law.moment(4), rel=0.03)


def test_sampled_matrices_reject_quarter_circle_at_finite_ratio():
    d, p = 300, 1200
    values = np.concatenate(_sampled_hebbian_singular_values(d, p, 2, np.random.default_rng(5)))
    assert stats.kstest(values, hebbian_spectrum(4.0).cdf).statistic < 0.02
    assert stats.kstest(values, QuarterCircle().cdf).statistic > 0.03


def test_tends_to_quarter_circle():
    qc = QuarterCircle()
    s = np.linspace(0.0, 2.7, 1500)
    distances = []
    for ratio in (1.0, 4.0, 16.0, 64.0, 256.0, 1024.0):
        law = hebbian_spectrum(ratio)
        distances.append(np.max(np.abs(law.cdf(s) - qc.cdf(np.minimum(s, 2.0)))))
    # Measured: sup |F_c - F_QC| is about 0.16 / c.
    assert all(a > b for a, b in zip(distances, distances[1:]))
    assert distances[-1] < 1e-3
    assert hebbian_spectrum(1e6).mean() == pytest.approx(qc.mean(), rel=1e-5)


def test_bad_input():
    for bad in (0.0, -1.0, float("nan"), float("inf"), "2"):
        with pytest.raises(ValueError, match="ratio"):
            hebbian_spectrum(bad)
    with pytest.raises(ValueError, match="kappa"):
        spectrum(0.0)
    with pytest.raises(ValueError, match="kappa"):
        spectrum(1.5)
    with pytest.raises(ValueError, match="singular_values"):
        normalized_singular_values([1.0, -1.0])
    with pytest.raises(ValueError, match="order"):
        hebbian_spectrum(2.0).moment(-1)
    with pytest.raises(ValueError, match="q"):
        hebbian_spectrum(2.0).ppf(1.5)
