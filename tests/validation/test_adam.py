"""The Adam cross-entropy baseline (validation.solvers.adam)."""

import numpy as np
import pytest
from scipy.special import logsumexp

from validation import FactSettings, make_instance, solve
from validation.measurements.recall import recall_check
from validation.solvers import AdamOptions
from validation.solvers.adam import _Scorer, _softmax_gradient, solve_adam


def _cross_entropy(inst, W):
    """Reference: mean over inputs of -S[mu, mu] + logsumexp_rho S[rho, mu] (dense float64, scipy)."""
    S = inst.scores(W)
    return float(np.mean(logsumexp(S, axis=0) - np.diag(S)))


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_gradient_matches_finite_differences(problem):
    inst = make_instance(5, 8, problem, seed=2)
    W = np.random.default_rng(0).standard_normal((5, 5))
    scorer = _Scorer(inst)
    S = scorer.scores((scorer.inputs @ W.T.astype(scorer.dtype)))
    G, loss = _softmax_gradient(np.asarray(S, dtype=np.float64))
    assert loss == pytest.approx(_cross_entropy(inst, W), rel=1e-5)
    grad = np.asarray(scorer.weight_gradient(G.astype(scorer.dtype)), dtype=np.float64)
    h = 1e-6
    numeric = np.zeros((5, 5))
    for j in range(5):
        for k in range(5):
            step = np.zeros((5, 5))
            step[j, k] = h
            numeric[j, k] = (_cross_entropy(inst, W + step) - _cross_entropy(inst, W - step)) / (2 * h)
    rtol = 1e-4 if problem == "op" else 1e-7  # OP trains in float32
    np.testing.assert_allclose(grad, numeric, rtol=rtol, atol=rtol * np.abs(numeric).max())


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_stores_easy_instance_and_verifies(problem):
    inst = make_instance(12, 20, problem, seed=1)
    sol = solve(inst, solver="adam")
    assert sol.status == "stored" and sol.stored and sol.converged and sol.recall_fraction == 1.0
    assert sol.iterations % 10 == 0 and sol.iterations > 0  # checked every 10 steps
    S = inst.scores(sol.W)
    comp = S.copy()
    np.fill_diagonal(comp, -np.inf)
    assert np.all(np.diag(S) > comp.max(axis=0))
    assert sol.margin > 0


def test_reproducible_and_seeded():
    inst = make_instance(8, 14, "op", seed=3)
    a = solve(inst, solver="adam", kappa=0.5)
    b = solve(inst, solver="adam", kappa=0.5)
    assert a.iterations == b.iterations
    np.testing.assert_array_equal(a.W, b.W)
    # seed=None is the instance's seed; other seeds give other initial factors
    assert a.info["seed"] == inst.seed == 3
    same = solve(inst, solver="adam", kappa=0.5, seed=3)
    np.testing.assert_array_equal(same.W, a.W)
    other = solve_adam(inst, kappa=0.5, seed=np.random.SeedSequence(11), max_iter=10)
    assert other.info["seed"] != 3
    assert not np.array_equal(other.W, solve_adam(inst, kappa=0.5, max_iter=10).W)


def test_budget_exhausted_is_undecided_never_not_stored():
    inst = make_instance(4, 40, seed=0)  # alpha = 9.2: far beyond capacity
    sol = solve(inst, solver="adam", max_iter=200)
    assert sol.status == "undecided" and not sol.stored and not sol.converged
    assert sol.iterations == 200
    assert "cannot certify" in sol.message and "step budget 200" in sol.message


def test_time_limit_is_undecided():
    inst = make_instance(4, 40, seed=0)
    sol = solve(inst, solver="adam", max_iter=10**7, time_limit=0.05)
    assert sol.status == "undecided" and not sol.converged
    assert sol.iterations < 10**7
    assert "time limit" in sol.message


def test_factor_form():
    inst = make_instance(12, 16, seed=4)
    sol = solve(inst, solver="adam", kappa=0.25)
    assert sol.rank == 3
    Q, R = sol.factors
    assert Q.shape == R.shape == (12, 3)
    np.testing.assert_allclose(Q @ R.T, sol.W, rtol=1e-6, atol=1e-6)
    assert np.linalg.matrix_rank(sol.W) <= 3
    # the stored flag against an independent float64 recall check of the factors' W
    recalled, _ = recall_check(inst.scores(Q @ R.T))
    assert sol.stored == bool(recalled.all())
    assert sol.recall_fraction == pytest.approx(recalled.mean())


def test_options_dataclass_and_mapping_agree():
    inst = make_instance(6, 10, seed=5)
    a = solve(inst, solver="adam", options={"learning_rate": 0.05, "check_every": 5})
    b = solve_adam(inst, options=AdamOptions(learning_rate=0.05, check_every=5))
    assert a.iterations == b.iterations and a.iterations % 5 == 0
    np.testing.assert_array_equal(a.W, b.W)


def test_bad_options():
    inst = make_instance(4, 5)
    with pytest.raises(ValueError, match="max_iter"):
        solve(inst, solver="adam", max_iter=0)
    with pytest.raises(ValueError, match="time_limit"):
        solve(inst, solver="adam", time_limit=-1.0)
    for options, name in [({"steps": 10}, "steps"), ({"learning_rate": -1.0}, "learning_rate"),
                          ({"check_every": 0}, "check_every"), ({"beta1": 1.0}, "beta1")]:
        with pytest.raises(ValueError, match=name):
            solve(inst, solver="adam", options=options)


@pytest.mark.parametrize("problem, p", [("op", 24), ("dp", 60)])
def test_k_outputs_below_capacity_stored(problem, p):
    # K = 4, d = 12: theory p_c = 33 (OP) and 132 (DP), replica.capacity(12, outputs=4, problem=...)
    inst = make_instance(12, p, problem, seed=1, facts=FactSettings(outputs=4))
    sol = solve_adam(inst)
    assert sol.status == "stored" and sol.stored and sol.recall_fraction == 1.0
    S = inst.scores(sol.W)  # float64 recall against the K candidates, targets f(mu) = mu mod 4
    assert S.shape == (4, p)
    target = S[inst.target_index, np.arange(p)]
    comp = S.copy()
    comp[inst.target_index, np.arange(p)] = -np.inf
    assert np.all(target > comp.max(axis=0))


def _check_gradient_against(inst, W, loss, weights=None):
    """The loss and W-gradient of ``_softmax_gradient`` against ``loss(W)`` and its central differences."""
    scorer = _Scorer(inst)
    S = scorer.scores(scorer.inputs @ W.T.astype(scorer.dtype))
    G, value = _softmax_gradient(np.asarray(S, dtype=np.float64), scorer.target, weights)
    assert value == pytest.approx(loss(W), rel=1e-5)
    grad = np.asarray(scorer.weight_gradient(G.astype(scorer.dtype)), dtype=np.float64)
    d, h = W.shape[0], 1e-6
    numeric = np.array([[(loss(W + h * e) - loss(W - h * e)) / (2 * h)
                         for e in np.eye(d * d)[d * j:d * j + d].reshape(d, d, d)] for j in range(d)])
    rtol = 1e-4 if inst.problem == "op" else 1e-7  # OP trains in float32
    np.testing.assert_allclose(grad, numeric, rtol=rtol, atol=rtol * np.abs(numeric).max())


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_k_outputs_gradient_matches_finite_differences(problem):
    inst = make_instance(5, 9, problem, seed=2, facts=FactSettings(outputs=3))
    f = inst.target_index

    def loss(M):
        S = inst.scores(M)
        return float(np.mean(logsumexp(S, axis=0) - S[f, np.arange(9)]))

    _check_gradient_against(inst, np.random.default_rng(1).standard_normal((5, 5)), loss)


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_weighted_gradient_matches_finite_differences(problem):
    # reference: sum_mu f_mu CE_mu with scipy's logsumexp on dense float64 scores
    f = np.array([0.4, 0.2, 0.1, 0.1, 0.08, 0.06, 0.04, 0.02])
    inst = make_instance(5, 8, problem, seed=3, facts=FactSettings(weights=f))

    def loss(M):
        S = inst.scores(M)
        return float(np.dot(f, logsumexp(S, axis=0) - np.diag(S)))

    _check_gradient_against(inst, np.random.default_rng(2).standard_normal((5, 5)), loss, inst.weights)


def test_weighted_with_uniform_weights_is_the_mean_loss():
    # w_mu = 1/p is the unweighted loss: the same decisions and, up to float32 rounding of
    # G / p against G * (1/p), the same W
    inst = make_instance(8, 20, "op", seed=4, facts=FactSettings(weights=np.full(20, 0.05)))
    plain = solve(inst, "adam", max_iter=200)
    weighted = solve(inst, "adam", max_iter=200, options={"weighted": True})
    assert weighted.info["weighted"] and not plain.info["weighted"]
    assert weighted.status == plain.status and weighted.iterations == plain.iterations
    np.testing.assert_allclose(weighted.W, plain.W, rtol=1e-4, atol=1e-4 * np.abs(plain.W).max())


def test_weighted_needs_weights_and_a_bool():
    with pytest.raises(ValueError, match="weights"):
        solve(make_instance(6, 10, seed=0), "adam", options={"weighted": True})
    with pytest.raises(ValueError, match="weighted"):
        AdamOptions(weighted="yes")
