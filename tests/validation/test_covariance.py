"""Correlated embeddings: make_instance(input_covariance=, output_covariance=) and the solvers on them.

Reference facts: for invertible covariances the map W -> Sigma_out^(1/2) W Sigma_in^(1/2) is a
bijection between the memories of the isotropic instance (draws g) and of the correlated
one (vectors Sigma^(1/2) g) with the same margins, so storability is unchanged; the Hebbian
rule is not invariant; a covariance of rank r confines the vectors to r dimensions.
"""

import numpy as np
import pytest

from validation import EmbeddingModel, make_instance, solve
from validation.instances.ensembles import covariance_root, power_law_spectrum


def _rotated(d, exponent, seed):
    """A full covariance: a random rotation of the power-law spectrum (trace d)."""
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return (Q * power_law_spectrum(d, exponent)) @ Q.T


def test_power_law_spectrum_contract():
    lam = power_law_spectrum(50, 1.5)
    assert lam.shape == (50,) and lam.mean() == pytest.approx(1.0, rel=1e-14)
    np.testing.assert_allclose(lam / lam[0], np.arange(1, 51) ** -1.5, rtol=1e-13)
    assert np.all(np.diff(lam) < 0)
    np.testing.assert_array_equal(power_law_spectrum(7, 0.0), np.ones(7))
    for args, name in (((1, 1.0), "d"), ((5, -0.5), "exponent"), ((5, float("nan")), "exponent")):
        with pytest.raises(ValueError, match=name):
            power_law_spectrum(*args)


@pytest.mark.parametrize("side", ["input_covariance", "output_covariance"])
@pytest.mark.parametrize("bad, pattern", [
    (np.eye(5), "must be a"), (np.ones(4), "must be a"), (np.ones((6, 6, 1)), "must be a"),
    (np.diag([1.0, 2.0, np.nan, 1.0, 1.0, 1.0]), "finite"), (np.array([1.0, np.inf, 1, 1, 1, 1]), "finite"),
    (np.triu(np.ones((6, 6))), "symmetric"), (np.diag([2.0, 2, 2, 1, 1, -1]), "semi-definite"),
    (np.array([1.0, 1, 1, 1, 1, -0.5]), "semi-definite"), (np.zeros(6), "zero"),
])
def test_bad_covariances_name_the_argument(side, bad, pattern):
    with pytest.raises(ValueError, match=side) as info:
        make_instance(6, 10, "dp", embeddings=EmbeddingModel(**{side: bad}))
    assert pattern in str(info.value)


def test_normalised_to_trace_dimension_and_recorded():
    inst = make_instance(6, 10, "op", seed=1,
                         embeddings=EmbeddingModel(input_covariance=3.0 * np.eye(6),
                                                   output_covariance=power_law_spectrum(6, 1.0)))
    assert inst.input_covariance_factor == pytest.approx(1.0 / 3.0)
    assert inst.output_covariance_factor == 1.0
    np.testing.assert_allclose(inst.input_root, np.eye(6), atol=1e-14)
    assert inst.input_spectrum.sum() == pytest.approx(6.0) and inst.output_spectrum.sum() == pytest.approx(6.0)
    meta = inst.to_dict()
    assert meta["input_covariance"]["trace_factor"] == pytest.approx(1.0 / 3.0)
    assert meta["output_covariance"]["trace"] == pytest.approx(6.0)
    iso = make_instance(6, 10, "op", seed=1)
    np.testing.assert_allclose(inst.inputs, iso.inputs, rtol=1e-13, atol=1e-15)
    assert "input_covariance" not in iso.to_dict() and iso.input_root is None


def test_vectors_are_the_root_times_the_isotropic_draws():
    cov_in, cov_out = _rotated(5, 1.0, 0), _rotated(4, 2.0, 1)
    for problem in ("op", "dp"):
        iso = make_instance(None, 30, problem, seed=7, embeddings=EmbeddingModel(d_in=5, d_out=4))
        inst = make_instance(None, 30, problem, seed=7,
                             embeddings=EmbeddingModel(d_in=5, d_out=4, input_covariance=cov_in,
                                                       output_covariance=cov_out))
        root_in, _, _ = covariance_root(cov_in, 5)
        root_out, _, _ = covariance_root(cov_out, 4)
        np.testing.assert_allclose(root_in @ root_in, cov_in, atol=1e-12)
        np.testing.assert_array_equal(inst.inputs, iso.inputs @ root_in)
        np.testing.assert_allclose(inst.targets, iso.targets @ root_out, atol=1e-15)
        np.testing.assert_allclose(inst.candidates(3), iso.candidates(3) @ root_out, atol=1e-15)
        np.testing.assert_allclose(inst.targets[3], inst.candidates(3)[3], atol=1e-15)
        W = np.random.default_rng(2).standard_normal((4, 5))
        S = inst.scores(W)
        for mu in (0, 11, 29):
            np.testing.assert_allclose(S[:, mu], inst.candidates(mu) @ (W @ inst.inputs[mu]), rtol=1e-12, atol=1e-14)


def test_second_moment_of_the_inputs_is_the_covariance():
    # E[e e^T] = Sigma_in / d for e = Sigma_in^(1/2) g, g ~ N(0, I/d): 20000 draws in d = 4
    cov = _rotated(4, 1.0, 3)
    inst = make_instance(4, 20000, "op", seed=0, embeddings=EmbeddingModel(input_covariance=cov))
    np.testing.assert_allclose(4.0 * inst.inputs.T @ inst.inputs / 20000, cov, atol=0.05)


def _recalls(inst, W):
    """Every input recalled, from the explicit float64 products u^T (W e) of the candidates."""
    for mu in range(inst.p):
        s = inst.candidates(mu) @ (W @ inst.inputs[mu])
        if not np.all(np.delete(s, mu) < s[mu]):
            return False
    return True


def _decision(inst):
    sol = solve(inst, "optimal", refine=False)
    assert sol.status in ("stored", "not_stored"), sol.message
    assert _recalls(inst, sol.W) == (sol.status == "stored")
    return sol


# loads around p_c (measured: 4 seeds per load, optimal): d = 10 square, and d_in = 8, d_out = 16
INVARIANCE = [((10, 10), p, s) for p in (28, 30, 32, 34) for s in range(3)] + \
             [((8, 16), p, s) for p in (38, 42) for s in range(2)]


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_storability_is_invariant_under_invertible_covariances(problem):
    verdicts = []
    for (d_in, d_out), p, seed in INVARIANCE:
        cov_in, cov_out = _rotated(d_in, 1.0, seed), _rotated(d_out, 1.0, seed + 50)
        iso = make_instance(None, p, problem, seed=seed, embeddings=EmbeddingModel(d_in=d_in, d_out=d_out))
        inst = make_instance(None, p, problem, seed=seed,
                             embeddings=EmbeddingModel(d_in=d_in, d_out=d_out, input_covariance=cov_in,
                                                       output_covariance=cov_out))
        a, b = _decision(iso), _decision(inst)
        assert a.status == b.status, ((d_in, d_out), p, seed, a.message, b.message)
        if a.status == "stored":  # the bijection itself: Sigma_out^(-1/2) W Sigma_in^(-1/2) stores inst
            W = np.linalg.solve(inst.output_root, a.W) @ np.linalg.inv(inst.input_root)
            S = inst.scores(W)
            assert np.all(S[np.arange(p), np.arange(p)] > np.where(np.eye(p, dtype=bool), -np.inf, S).max(axis=0))
        verdicts.append(a.status)
    assert len(verdicts) >= 10 and set(verdicts) == {"stored", "not_stored"}


def test_optimal_agrees_with_the_lp_on_correlated_instances():
    # the LP builds the constraint rows from the candidates Sigma_out^(1/2) g; the optimal
    # solver scores the generator's g against Sigma_out^(1/2) W e: two independent paths
    verdicts = []
    for problem in ("dp", "op"):
        for p, seed in ((26, 0), (30, 1), (32, 2), (36, 3)):
            inst = make_instance(10, p, problem, seed=seed,
                                 embeddings=EmbeddingModel(input_covariance=power_law_spectrum(10, 1.0),
                                                           output_covariance=_rotated(10, 2.0, seed)))
            a, b = _decision(inst), solve(inst, "lp")
            assert a.status == b.status, (problem, p, seed, a.message, b.message)
            verdicts.append(a.status)
    assert set(verdicts) == {"stored", "not_stored"}


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_refined_margin_on_a_correlated_instance_is_verified(problem):
    inst = make_instance(8, 20, problem, seed=4,
                         embeddings=EmbeddingModel(input_covariance=_rotated(8, 1.0, 4),
                                                   output_covariance=_rotated(8, 1.0, 5)))
    sol = solve(inst, "optimal")
    assert sol.status == "stored" and sol.info["refined"]
    S = inst.scores(sol.W)
    margins = [S[mu, mu] - np.max(np.delete(S[:, mu], mu)) for mu in range(inst.p)]
    assert sol.margin == pytest.approx(8 * min(margins) / np.linalg.norm(sol.W), rel=1e-9)


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_hebbian_recall_drops_under_a_strongly_anisotropic_covariance(problem):
    # d = p = 32, power-law spectra with exponent 2 on both sides, 10 instances each
    # (measured: isotropic 0.92-0.97, anisotropic 0.07-0.09 mean recall)
    d, p, n = 32, 32, 10
    spectrum = power_law_spectrum(d, 2.0)
    iso = np.array([solve(make_instance(d, p, problem, seed=s), "hebbian").recall_fraction for s in range(n)])
    skewed = EmbeddingModel(input_covariance=spectrum, output_covariance=spectrum)
    aniso = np.array([solve(make_instance(d, p, problem, seed=s, embeddings=skewed), "hebbian").recall_fraction
                      for s in range(n)])
    assert np.any(iso != aniso)
    se = np.sqrt(iso.var(ddof=1) / n + aniso.var(ddof=1) / n)
    assert iso.mean() - aniso.mean() > 10 * se


@pytest.mark.parametrize("problem, side", [("op", "input_covariance"), ("dp", "output_covariance"),
                                           ("dp", "input_covariance"), ("op", "output_covariance")])
def test_a_degenerate_covariance_lowers_capacity(problem, side):
    # rank-4 covariance in d = 16 (effective rank 4): p = 30 is stored isotropically and
    # certified not stored under it (the vectors span 4 dimensions)
    spectrum = np.r_[np.ones(4), np.zeros(12)]
    for seed in range(3):
        iso = _decision(make_instance(16, 30, problem, seed=seed))
        low = _decision(make_instance(16, 30, problem, seed=seed, embeddings=EmbeddingModel(**{side: spectrum})))
        assert iso.status == "stored" and low.status == "not_stored", (seed, iso.message, low.message)
