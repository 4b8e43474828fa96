"""solve() dispatch, Solution, the Hebbian solver and the measurements (validation.measure)."""

import json
import math

import numpy as np
import pytest

from validation import Solution, make_instance, solve
from validation import solvers as solvers_module
from validation.measure import score_distribution, spectrum
from validation.solvers import assess, rank_for
from validation.solvers.hebbian import hebbian_matrix


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(solver="newton"), "solver"),
    (dict(solver="hebbian", kappa=0.0), "kappa"),
    (dict(solver="hebbian", kappa=1.5), "kappa"),
    (dict(solver="hebbian", kappa=float("nan")), "kappa"),
    (dict(solver="hebbian", options={"bogus": 1}), "option"),
    (dict(solver="adam", options={"bogus": 1}), "bogus"),
    (dict(solver="hebbian", refine=True), "refine"),
    (dict(solver="adam", options=[1, 2]), "options"),
])
def test_solve_bad_input(kwargs, pattern):
    inst = make_instance(4, 5)
    with pytest.raises(ValueError, match=pattern):
        solve(inst, **kwargs)


def test_solve_unknown_keyword_is_a_type_error():
    # A misspelt keyword of solve() itself is a call error (TypeError, as for any Python
    # function); unknown *solver settings* go through ``options`` and raise ValueError.
    with pytest.raises(TypeError, match="bogus"):
        solve(make_instance(4, 5), solver="hebbian", bogus=1)


def test_solve_rejects_non_instance():
    with pytest.raises(ValueError, match="instance"):
        solve(np.eye(3), solver="hebbian")


def test_missing_solver_module_is_explained(monkeypatch):
    monkeypatch.setitem(solvers_module._DISPATCH, "optimal", ("validation.solvers._no_such_module", "f"))
    with pytest.raises(ImportError, match="optimal"):
        solve(make_instance(4, 5), solver="optimal")


def test_rank_for():
    assert rank_for(32, 0.25) == 8
    assert rank_for(10, 0.01) == 1
    assert rank_for(10, 1.0) == 10
    assert rank_for(10, 0.25) == 2  # round(2.5) = 2 (half to even)
    with pytest.raises(ValueError, match="kappa"):
        rank_for(10, 0.0)


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_hebbian_matrix_is_sum_of_outer_products(problem):
    inst = make_instance(5, 7, problem, seed=3)
    expected = sum(np.outer(inst.candidates(mu)[mu], inst.inputs[mu]) for mu in range(7))
    sol = solve(inst, solver="hebbian")
    np.testing.assert_allclose(sol.W, expected, rtol=1e-12, atol=1e-14)
    assert sol.factors is None and sol.rank == 5 and sol.converged and sol.iterations == 0


def test_hebbian_truncation_is_best_rank_m():
    inst = make_instance(10, 30, seed=2)
    full = inst.targets.T @ inst.inputs
    s = np.linalg.svd(full, compute_uv=False)
    W, (Q, R) = hebbian_matrix(inst, kappa=0.3)
    assert Q.shape == R.shape == (10, 3)
    np.testing.assert_allclose(Q @ R.T, W, atol=1e-12)
    assert np.linalg.matrix_rank(W) == 3
    # Eckart-Young: the error is the discarded singular values
    assert np.linalg.norm(full - W) ** 2 == pytest.approx(np.sum(s[3:] ** 2), rel=1e-10)
    sol = solve(inst, solver="hebbian", kappa=0.3)
    assert sol.rank == 3 and sol.kappa == 0.3
    np.testing.assert_allclose(sol.matrix(), W, atol=1e-12)


def test_hebbian_stores_few_patterns_and_fails_many():
    easy = solve(make_instance(64, 4, ensemble="sphere", seed=1), solver="hebbian")
    assert easy.stored and easy.status == "stored" and easy.recall_fraction == 1.0 and easy.margin > 0
    hard = solve(make_instance(8, 200, seed=1), solver="hebbian")
    assert not hard.stored and hard.status == "not_stored" and hard.margin < 0
    assert "this rule's W only" in hard.message


def test_solution_to_dict_is_json_and_consistent():
    inst = make_instance(6, 9, "dp", seed=4)
    sol = solve(inst, solver="hebbian")
    assert isinstance(sol, Solution)
    data = sol.to_dict()
    for key in ("stored", "recall_fraction", "margin", "converged", "iterations", "seconds", "status",
                "solver", "kappa", "rank", "message"):
        assert key in data
    json.dumps(data)
    stored, fraction, margin, recalled = assess(inst, sol.W)
    assert (stored, fraction) == (sol.stored, sol.recall_fraction)
    assert margin == pytest.approx(sol.margin)
    # margin definition, computed densely
    S = np.array([[inst.candidates(mu)[rho] @ sol.W @ inst.inputs[mu] for mu in range(9)] for rho in range(9)])
    comp = S.copy()
    np.fill_diagonal(comp, -np.inf)
    expected = np.min(np.diag(S) - comp.max(axis=0)) / (np.linalg.norm(sol.W) / 6)
    assert sol.margin == pytest.approx(expected, rel=1e-10)


def test_spectrum_of_gaussian_matrix_is_quarter_circle_like():
    d = 200
    W = np.random.default_rng(0).standard_normal((d, d)) / np.sqrt(d)
    spec = spectrum(W)
    assert spec.second_moment == pytest.approx(1.0, rel=1e-12)
    # E mean(s^4) = 2 + 1/d for a Ginibre matrix (E tr (X X^T)^2 = d^2 (2d + 1) for standard X)
    assert abs(spec.fourth_moment - 2.0) < 0.15
    assert spec.numerical_rank == d
    assert spec.values.max() < 2.2
    json.dumps(spec.to_dict())


def test_spectrum_low_rank():
    W, _ = hebbian_matrix(make_instance(12, 40, seed=0), kappa=0.25)
    spec = spectrum(W)
    assert spec.numerical_rank == 3
    assert spec.second_moment == pytest.approx(1.0)
    with pytest.raises(ValueError, match="zero"):
        spectrum(np.zeros((3, 3)))


def test_score_distribution_units():
    inst = make_instance(32, 200, "dp", seed=5)
    W = np.random.default_rng(1).standard_normal((32, 32))
    dist = score_distribution(inst, W)
    assert dist.unit == pytest.approx(np.linalg.norm(W) / 32)
    assert dist.competitors.size == 200 * 199 and not dist.competitors_subsampled
    # random W: every score is a competitor-like score, mean 0 and variance 1 in these units
    assert abs(dist.competitors.mean()) < 0.05
    assert abs(dist.competitors.var() - 1.0) < 0.1
    S = inst.scores(W) / dist.unit
    np.testing.assert_allclose(dist.targets, np.diag(S))
    np.fill_diagonal(S, -np.inf)
    np.testing.assert_allclose(dist.top_competitors, S.max(axis=0))
    np.testing.assert_allclose(dist.margins, dist.targets - dist.top_competitors)
    small = score_distribution(inst, W, max_competitors=1000)
    assert small.competitors.size == 1000 and small.competitors_subsampled
    data = dist.to_dict()
    json.dumps(data)
    assert set(data["targets"]) >= {"mean", "std"}
