"""validation.measurements.spectra_and_scores: normalised singular values and scores of a memory.

References: the definition of the units (mean square 1 over all d values; competitor
standard deviation ||W||_F / d), replica.normalized_singular_values (the one
implementation of the units) and replica.optimal.summarize_scores (the one sample summary).
"""

import json
import math

import numpy as np
import pytest

from replica import normalized_singular_values
from replica.optimal import summarize_scores
from validation import FactSettings, make_instance
from validation.measurements.spectra_and_scores import ScoreDistribution, Spectrum, score_distribution, spectrum


def test_spectrum_units_and_moments():
    rng = np.random.default_rng(1)
    W = rng.standard_normal((40, 40)) / math.sqrt(40)
    spec = spectrum(W)
    singular = np.linalg.svd(W, compute_uv=False)
    np.testing.assert_array_equal(spec.values, normalized_singular_values(singular))
    assert spec.second_moment == pytest.approx(1.0, rel=1e-14)
    np.testing.assert_allclose(spec.values, singular / (np.linalg.norm(W) / math.sqrt(40)), rtol=1e-14)
    np.testing.assert_allclose(spectrum(3.0 * W).values, spec.values, rtol=1e-14)  # scale-free
    assert spec.numerical_rank == 40 and np.all(np.diff(spec.values) <= 0)
    low = spectrum(np.outer(np.arange(1.0, 6.0), np.ones(5)))
    assert low.numerical_rank == 1 and low.values[0] == pytest.approx(math.sqrt(5.0))


def test_score_distribution_units_and_seed():
    inst = make_instance(12, 40, seed=2)
    W = np.random.default_rng(3).standard_normal((12, 12))
    dist = score_distribution(inst, W)
    assert dist.seed == 20261130 and not dist.competitors_subsampled
    assert dist.unit == pytest.approx(np.linalg.norm(W) / 12)
    S = inst.scores(W) / dist.unit
    np.testing.assert_allclose(dist.targets, np.diag(S))
    np.testing.assert_allclose(dist.margins, dist.targets - dist.top_competitors)
    assert dist.competitors.size == 40 * 39
    small = score_distribution(inst, W, max_competitors=100, seed=7)
    again = score_distribution(inst, W, max_competitors=100, seed=7)
    assert small.competitors_subsampled and small.competitors.size == 100 and small.seed == 7
    np.testing.assert_array_equal(small.competitors, again.competitors)
    assert set(small.competitors) <= set(dist.competitors)


def test_results_follow_the_result_contract():
    inst = make_instance(8, 20, seed=1)
    W = np.eye(8)
    spec, dist = spectrum(W), score_distribution(inst, W)
    degenerate = Spectrum(values=np.array([math.nan]), d=1, numerical_rank=0, second_moment=math.nan,
                          fourth_moment=math.inf)
    empty = ScoreDistribution(unit=math.nan, targets=np.empty(0), top_competitors=np.empty(0),
                              competitors=np.empty(0), competitors_subsampled=False, margins=np.empty(0),
                              seed=0)
    for res in (spec, dist, degenerate, empty):
        assert res.status in type(res).STATUSES
        json.dumps(res.to_dict(), allow_nan=False)
    record = dist.to_dict()
    assert record["targets"] == summarize_scores(dist.targets).to_dict()
    assert record["targets"]["std"] == pytest.approx(np.std(dist.targets, ddof=1))
    assert empty.to_dict()["targets"] is None and degenerate.to_dict()["second_moment"] is None


@pytest.mark.parametrize("W", [np.zeros((4, 4)), np.ones((3, 4)), np.full((2, 2), np.nan)])
def test_bad_memories(W):
    with pytest.raises(ValueError, match="W"):
        spectrum(W)


def test_bad_score_arguments():
    inst = make_instance(8, 20, seed=1)
    with pytest.raises(ValueError, match="max_competitors"):
        score_distribution(inst, np.eye(8), max_competitors=0)
    with pytest.raises(ValueError, match="seed"):
        score_distribution(inst, np.eye(8), seed=-1)
    with pytest.raises(ValueError, match="W is zero"):
        score_distribution(inst, np.zeros((8, 8)))


def test_score_distribution_with_k_answers_uses_the_target_rows():
    # With K shared answers the score matrix is (K, p) and the target of input mu sits in
    # row target_index[mu], not on a diagonal; compare with a direct computation.
    import numpy as np

    from validation import FactSettings, make_instance
    from validation.measurements.spectra_and_scores import score_distribution
    from validation.measurements.recall import competitor_scale

    inst = make_instance(8, 20, problem="op", seed=3, facts=FactSettings(outputs=4))
    W = np.random.default_rng(0).standard_normal((8, 8))
    dist = score_distribution(inst, W)
    S = inst.scores(W) / competitor_scale(W)
    assert S.shape == (4, 20)
    idx = inst.target_index
    np.testing.assert_array_equal(dist.targets, S[idx, np.arange(20)])
    masked = S.copy()
    masked[idx, np.arange(20)] = -np.inf
    np.testing.assert_array_equal(dist.top_competitors, masked.max(axis=0))
    assert dist.competitors.size == 20 * 3


def _answer_instance(problem, p, K, shuffled):
    """An instance with K shared answers; its map f is ``mu mod K`` or a shuffle of it."""
    f = np.random.default_rng(K).permutation(np.arange(p) % K) if shuffled else None
    return make_instance(8, p, problem=problem, seed=11, facts=FactSettings(outputs=K, targets=f))


@pytest.mark.parametrize("problem", ["op", "dp"])
@pytest.mark.parametrize("p, K, shuffled", [(30, 3, False), (30, 3, True), (12, 12, True)])
def test_score_distribution_with_k_answers_against_the_score_matrix(problem, p, K, shuffled):
    # Every sample read off S = scores / (||W||_F / d) through the target map f, element by
    # element.  With K = p and a shuffled map S is square and its diagonal holds
    # competitors: a diagonal reading would pass the shapes and get the values wrong.
    inst = _answer_instance(problem, p, K, shuffled)
    f = np.asarray(inst.target_index)
    assert shuffled == bool(np.any(f[:K] != np.arange(K)))
    W = np.random.default_rng(4).standard_normal((8, 8))
    dist = score_distribution(inst, W)
    S = inst.scores(W) / (np.linalg.norm(W) / 8)
    assert S.shape == (K, p) and dist.unit == np.linalg.norm(W) / 8
    np.testing.assert_array_equal(dist.targets, [S[f[mu], mu] for mu in range(p)])
    top = [max(S[r, mu] for r in range(K) if r != f[mu]) for mu in range(p)]
    np.testing.assert_array_equal(dist.top_competitors, top)
    np.testing.assert_array_equal(dist.margins, dist.targets - np.asarray(top))
    competitors = [S[r, mu] for r in range(K) for mu in range(p) if r != f[mu]]  # row-major
    np.testing.assert_array_equal(dist.competitors, competitors)
    if shuffled and K == p:
        assert not np.array_equal(dist.targets, np.diag(S))
    sub = score_distribution(inst, W, max_competitors=10, seed=3)
    assert sub.competitors_subsampled and set(sub.competitors) <= set(competitors)


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_spectrum_of_a_k_answer_memory_against_its_singular_values(problem):
    # The Hebbian memory of a K-answer instance (OP: rank K): the values against numpy's
    # singular values in units of ||W||_F / sqrt(d), and with kappa < 1 the round(kappa d)
    # largest of them times sqrt(F(kappa))
    from replica.asymptotic.quarter_circle import tail_second_moment
    from validation import solve

    inst = _answer_instance(problem, 30, 3, True)
    W = solve(inst, solver="hebbian").matrix()
    s = np.linalg.svd(W, compute_uv=False)
    full = spectrum(W)
    np.testing.assert_allclose(full.values, s / (np.linalg.norm(W) / math.sqrt(8)), rtol=1e-12)
    assert full.d == 8 and full.numerical_rank == (3 if problem == "op" else 8)
    half = spectrum(W, kappa=0.5)
    np.testing.assert_array_equal(half.values, normalized_singular_values(s, 0.5))
    np.testing.assert_allclose(half.values, full.values[:4] * math.sqrt(tail_second_moment(0.5)), rtol=1e-12)
    assert half.d == 8 and half.fourth_moment == pytest.approx(np.mean(half.values ** 4))
    with pytest.raises(ValueError, match="kappa"):
        spectrum(W, kappa=1.5)
