"""Tests of replica.asymptotic.finite_size_spectra (notes/spectra.md, section 7)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import integrate, stats

from replica.asymptotic.finite_size_spectra import FiniteRatioSpectrum, finite_ratio_spectrum, pooled_ks
from replica.asymptotic.quarter_circle import tail_second_moment, truncation_point
from replica.asymptotic.spectra import hebbian_spectrum, spectrum


def test_pooled_ks_is_scipys_statistic():
    # reference: scipy.stats.kstest on the same sample
    rng = np.random.default_rng(0)
    law = spectrum(0.5)
    for n in (1, 7, 200):
        sample = law.rvs(size=n, random_state=rng) * rng.uniform(0.9, 1.1, n)
        assert pooled_ks(law.cdf(sample)) == pytest.approx(stats.kstest(sample, law.cdf).statistic, abs=1e-14)


def test_units_and_shape():
    costs = np.random.default_rng(1).exponential(size=(3, 50))
    r = finite_ratio_spectrum(20, costs, 0.5, seed=3)
    assert isinstance(r, FiniteRatioSpectrum) and r.values.shape == (3, 10) and r.rank == 10
    # normalized_singular_values: the m kept values have mean square F(kappa) / kappa
    assert np.allclose(np.mean(r.values ** 2, axis=1), tail_second_moment(0.5) / 0.5, rtol=1e-12)
    assert np.all(np.diff(r.values, axis=1) <= 0)
    assert r.truncation_point == pytest.approx(truncation_point(0.5), rel=1e-15)
    assert r.below == pytest.approx(np.mean(r.values < r.truncation_point))
    assert r.cdf(r.truncation_point) == pytest.approx(r.below)
    assert r.ratio == 2.5 and r.fourth_moment == pytest.approx(2.0 + r.cost_ratio / 2.5)
    json.dumps(r.to_dict(), allow_nan=False)


def test_seed_reproduces_and_is_stored():
    costs = np.ones((2, 30))
    a = finite_ratio_spectrum(12, costs, 0.5, seed=5)
    b = finite_ratio_spectrum(12, costs, 0.5, seed=5)
    c = finite_ratio_spectrum(12, costs, 0.5, seed=6)
    assert a.seed == 5 and np.array_equal(a.values, b.values) and not np.array_equal(a.values, c.values)


def test_ks_of_the_whole_pool_is_the_pooled_statistic():
    r = finite_ratio_spectrum(16, np.ones((4, 64)), 0.5, seed=2)
    whole = pooled_ks(spectrum(0.5).cdf(r.values))
    assert np.allclose(r.ks_distances(4, draws=3), whole, atol=1e-15)
    assert np.allclose(r.below_fractions(4, draws=3), r.below, atol=1e-15)


def test_fourth_moment_closed_form_is_the_hebbian_moment_at_unit_costs():
    # reference: the Fuss-Catalan closed form of HebbianSpectrum.moment (notes/spectra.md, section 2)
    for d, p in ((10, 40), (8, 100)):
        r = finite_ratio_spectrum(d, np.ones((2, p)), 1.0, seed=0)
        assert r.cost_ratio == 1.0
        assert r.fourth_moment == pytest.approx(hebbian_spectrum(p / d).moment(4), rel=1e-14)


def test_unit_costs_follow_the_hebbian_law():
    # independent reference: the free-probability law of U E^T (the cubic of HebbianSpectrum);
    # same threshold as tests/replica/test_spectra.py::test_against_sampled_matrices
    r = finite_ratio_spectrum(300, np.ones((3, 1200)), 1.0, seed=11)
    pooled = r.values.ravel()
    assert stats.kstest(pooled, hebbian_spectrum(4.0).cdf).statistic < 0.02
    # ... and the test can fail: the quarter circle is rejected by the same sample
    assert stats.kstest(pooled, spectrum(1.0).cdf).statistic > 0.03


def test_weighted_fourth_moment():
    # costs 1/2 and 3/2 in equal numbers: r = E C^2 / E C^2 = 1.25, c = 2, 2 + r / c = 2.625
    # (unit costs would give 2.5); finite-d corrections are O(1/d) = 0.003 here
    costs = np.tile(np.repeat([0.5, 1.5], 300), (8, 1))
    r = finite_ratio_spectrum(300, costs, 1.0, seed=4)
    assert r.cost_ratio == pytest.approx(1.25) and r.fourth_moment == pytest.approx(2.625)
    m4 = np.mean(r.values ** 4, axis=1)
    assert abs(m4.mean() - 2.625) < 4 * m4.std(ddof=1) / np.sqrt(m4.size) + 0.01


def test_asymptotic_below_is_the_truncated_hebbian_law():
    # independent path: the truncated, renormalised HebbianSpectrum by direct quadrature
    r = finite_ratio_spectrum(16, np.ones((2, 128)), 0.5, seed=0)
    law = hebbian_spectrum(8.0)
    cut = law.ppf(0.5)
    kept = integrate.quad(lambda s: s * s * law.pdf(s), cut, law.upper, limit=200)[0]
    x = truncation_point(0.5) * np.sqrt(kept / tail_second_moment(0.5))
    assert r.asymptotic_below() == pytest.approx((law.cdf(x) - 0.5) / 0.5, rel=1e-9)
    assert 0.03 < r.asymptotic_below() < 0.06
    assert finite_ratio_spectrum(16, np.ones((2, 128)), 1.0).asymptotic_below() == 0.0


@pytest.mark.slow
def test_below_tends_to_the_leading_order_at_large_d():
    # d = 256, unit costs, c = 8: the sampled mass below s_kappa against the d -> infinity law
    # at the same ratio; the finite number of kept values moves it by O(1/m) = 0.008
    r = finite_ratio_spectrum(256, np.ones((12, 2048)), 0.5, seed=9)
    assert abs(r.below - r.asymptotic_below()) < 0.008 + 3 * r.below_stderr


@pytest.mark.parametrize("d, costs, kappa", [
    (1, np.ones((2, 5)), 0.5),
    (8, np.ones(5), 0.5),
    (8, np.ones((1, 5)), 0.5),
    (8, -np.ones((2, 5)), 0.5),
    (8, np.zeros((2, 5)), 0.5),
    (8, np.full((2, 5), np.nan), 0.5),
    (8, np.ones((2, 5)), 0.0),
    (8, np.ones((2, 5)), 1.5),
])
def test_bad_input(d, costs, kappa):
    with pytest.raises(ValueError):
        finite_ratio_spectrum(d, costs, kappa)


def test_bad_pool_size():
    r = finite_ratio_spectrum(8, np.ones((3, 20)), 0.5)
    with pytest.raises(ValueError):
        r.ks_distances(4)
    with pytest.raises(ValueError):
        r.below_fractions(0)


def test_the_optimal_memory_model_is_the_dual_sum_of_water_filling_costs():
    # reference: finite_ratio_spectrum on the costs drawn by the documented call, same streams
    import replica
    from replica.optimal import sample_optimal_scores
    from replica.optimal.finite_spectrum import optimal_finite_spectrum

    law = optimal_finite_spectrum(16, 40, 0.5, memories=6, seed=4)
    costs = sample_optimal_scores(40, 0.0, size=6 * 40, seed=np.random.SeedSequence([4, 16, 40])).cost
    direct = finite_ratio_spectrum(16, costs.reshape(6, 40), 0.5, seed=np.random.SeedSequence([4, 16, 40, 1]))
    # LAPACK SVDs of the same matrices: equal to rounding
    assert np.allclose(law.values, direct.values, rtol=1e-10, atol=1e-12)
    assert optimal_finite_spectrum(16, None, 0.5, memories=2).p == round(replica.capacity(16, 0.5).p_c)
    with pytest.raises(ValueError, match="problem"):
        optimal_finite_spectrum(16, 40, 0.5, problem="xp")
    with pytest.raises(ValueError, match="memories"):
        optimal_finite_spectrum(16, 40, 0.5, memories=1)


def test_spectrum_front_end_picks_the_law():
    import replica

    assert type(replica.spectrum(0.5)).__name__ == "TruncatedQuarterCircle"
    law = replica.spectrum(0.5, d=24, p=60, model="finite_ratio", options={"memories": 4, "seed": 1})
    assert isinstance(law, FiniteRatioSpectrum) and (law.d, law.p, law.memories) == (24, 60, 4)
    with pytest.raises(ValueError, match="finite memory size"):
        replica.spectrum(0.5, model="finite_ratio")
    with pytest.raises(ValueError, match="not settings of model 'finite_ratio'"):
        replica.spectrum(0.5, d=24, model="finite_ratio", options={"blocks": 10})
    with pytest.raises(ValueError, match="not settings of model 'quarter_circle'"):
        replica.spectrum(0.5, options={"memories": 10})


def test_finite_d_spectrum_carries_its_validity():
    import warnings

    import replica

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", replica.TheoryOffWarning)
        law = replica.spectrum(0.5, d=64, p=513, options={"memories": 4})
    assert law.model == "finite_ratio" and law.validity.model == "finite_ratio"
    assert law.validity.sample_size > 0 and law.validity.experiment == "experiments/spectra"
    assert json.loads(json.dumps(law.to_dict()))["validity"]["verdict"] == law.validity.verdict


def test_spectrum_front_end_defaults_and_refusals():
    import warnings

    import replica
    from replica.optimal.finite_spectrum import optimal_finite_spectrum

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", replica.TheoryOffWarning)
        # at a finite d the default is the finite-d law, in either problem and at any rank
        for kappa, problem in ((0.5, "dp"), (1.0, "op"), (0.25, "op")):
            law = replica.spectrum(kappa, d=16, problem=problem, options={"memories": 2})
            assert isinstance(law, FiniteRatioSpectrum), (kappa, problem)
        # the measurements are at capacity: far from it the record is unchecked
        far = replica.spectrum(0.5, d=64, p=60, options={"memories": 2})
        assert far.validity.verdict == "unchecked" and "only at capacity" in far.validity.message
    with pytest.raises(ValueError, match="problem must be one of"):
        replica.spectrum(0.5, d=16, problem="xx")
    with pytest.raises(ValueError, match="problem must be one of"):
        replica.spectrum(0.5, problem="xx")
    with pytest.raises(ValueError, match="p needs d"):
        replica.spectrum(0.5, p=30)
    # the stored seed reproduces the law
    a = optimal_finite_spectrum(16, 40, 0.5, memories=3, seed=np.random.SeedSequence(8))
    b = optimal_finite_spectrum(16, 40, 0.5, memories=3, seed=a.seed)
    assert np.array_equal(a.values, b.values)
