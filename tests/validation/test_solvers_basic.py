"""solve() dispatch, Solution, the Hebbian solver and the measurements (validation.measurements.spectra_and_scores)."""

import dataclasses
import json

import numpy as np
import pytest

from validation import EmbeddingModel, Solution, make_instance, solve
from validation.measurements.spectra_and_scores import score_distribution, spectrum
from validation.solvers import AdamOptions, LPOptions, OptimalOptions, assess, rank_for, solve_arguments
from validation.solvers.engine import registry
from validation.solvers.engine.registry import EntryPoint, solver_spec
from validation.solvers.hebbian import hebbian_matrix


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(solver="newton"), "solver"),
    (dict(solver="hebbian", kappa=0.0), "kappa"),
    (dict(solver="hebbian", kappa=1.5), "kappa"),
    (dict(solver="hebbian", kappa=float("nan")), "kappa"),
    (dict(solver="hebbian", options={"bogus": 1}), "option"),
    (dict(solver="adam", options={"bogus": 1}), "bogus"),
    (dict(solver="hebbian", refine=True), "refine"),
    (dict(solver="hebbian", max_iter=3), "max_iter"),
    (dict(solver="adam", tol=0.1), "tol"),
    (dict(solver="adam", options=[1, 2]), "options"),
    (dict(solver="optimal", options={"max_iter": 3}), "solve"),
    (dict(solver="optimal", options=LPOptions()), "OptimalOptions"),
    (dict(solver="lp", options={"steps": 3}), "max_nonzeros"),
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


@pytest.mark.parametrize("solver, cls", [("optimal", OptimalOptions), ("lp", LPOptions), ("adam", AdamOptions)])
def test_unknown_option_is_named_with_the_valid_ones(solver, cls):
    with pytest.raises(ValueError) as err:
        solve(make_instance(4, 5), solver=solver, options={"no_such_setting": 1})
    text = str(err.value)
    assert "no_such_setting" in text and solver in text
    assert all(name in text for name in cls.names())


def test_options_are_frozen_and_checked():
    opts = OptimalOptions(max_active=8)
    with pytest.raises(AttributeError):
        opts.max_active = 9
    assert OptimalOptions.from_mapping({"max_active": 8}) == opts
    assert OptimalOptions.coerce(None) == OptimalOptions()
    with pytest.raises(ValueError, match="method"):
        LPOptions(method="simplex")


def test_solve_arguments_splits_and_maps_the_deprecated_spelling():
    flat = {"max_iter": 5, "refine": False, "time_limit": 2.0, "max_active": 8}
    assert solve_arguments(flat) == {"max_iter": 5, "refine": False, "time_limit": 2.0,
                                     "options": {"max_active": 8}}
    assert solve_arguments(None) == {}
    with pytest.warns(DeprecationWarning, match="max_iter"):
        args = solve_arguments({"max_iterations": 7, "tol": 0.01})
    assert args == {"max_iter": 7, "tol": 0.01}
    with pytest.raises(ValueError, match="max_iter"), pytest.warns(DeprecationWarning):
        solve_arguments({"max_iterations": 7, "max_iter": 8})
    # an old stored task still runs, with the same result as the new spelling
    inst = make_instance(8, 20, seed=1)
    with pytest.warns(DeprecationWarning):
        old = solve(inst, "optimal", **solve_arguments({"max_iterations": 3, "refine": False}))
    new = solve(inst, "optimal", max_iter=3, refine=False)
    assert old.status == new.status and old.iterations == new.iterations
    np.testing.assert_array_equal(old.W, new.W)


def test_solve_rejects_non_instance():
    with pytest.raises(ValueError, match="instance"):
        solve(np.eye(3), solver="hebbian")


def test_missing_solver_module_is_explained(monkeypatch):
    spec = solver_spec("optimal")
    monkeypatch.setitem(registry._SPECS, "optimal",
                        dataclasses.replace(spec, entry=EntryPoint("validation.solvers._no_such_module", "f")))
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
    easy = solve(make_instance(64, 4, seed=1, embeddings=EmbeddingModel("sphere")), solver="hebbian")
    assert easy.stored and easy.status == "stored" and easy.recall_fraction == 1.0 and easy.margin > 0
    hard = solve(make_instance(8, 200, seed=1), solver="hebbian")
    assert not hard.stored and hard.status == "not_stored" and hard.margin < 0
    assert "this rule's W only" in hard.message


def test_solution_to_dict_is_json_and_consistent():
    inst = make_instance(6, 9, "dp", seed=4)
    sol = solve(inst, solver="hebbian")
    assert isinstance(sol, Solution)
    assert sol.status in Solution.STATUSES
    data = sol.to_dict()
    assert set(data) == {"stored", "recall_fraction", "margin", "converged", "iterations", "seconds",
                         "status", "solver", "kappa", "rank", "message", "info"}
    json.dumps(data, allow_nan=False)
    assert json.loads(json.dumps(inst.to_dict(), allow_nan=False)) == inst.to_dict()
    stored, fraction, margin, recalled = assess(inst, sol.W)
    assert (stored, fraction) == (sol.stored, sol.recall_fraction)
    assert margin == pytest.approx(sol.margin)
    # margin definition, computed densely
    S = np.array([[inst.candidates(mu)[rho] @ sol.W @ inst.inputs[mu] for mu in range(9)] for rho in range(9)])
    comp = S.copy()
    np.fill_diagonal(comp, -np.inf)
    expected = np.min(np.diag(S) - comp.max(axis=0)) / (np.linalg.norm(sol.W) / 6)
    assert sol.margin == pytest.approx(expected, rel=1e-10)


def test_undecided_solution_to_dict_is_json_safe():
    # an undecided solve with non-finite numbers (margin NaN, an infinite bound in info)
    sol = Solution(solver="optimal", kappa=1.0, rank=4, W=None, factors=None, stored=False,
                   recall_fraction=float("nan"), margin=float("nan"), converged=False, iterations=0,
                   seconds=0.0, status="undecided", message="budget ended",
                   info={"margin_bound": float("inf"), "loss": np.float64("nan")})
    assert sol.status in Solution.STATUSES
    data = json.loads(json.dumps(sol.to_dict(), allow_nan=False))
    assert data["margin"] is None and data["recall_fraction"] is None
    assert data["info"] == {"margin_bound": None, "loss": None}
    # a real undecided solve (budget cut-off)
    real = solve(make_instance(16, 66, seed=0), "optimal", max_iter=1, refine=False)
    assert real.status == "undecided" and not real.converged
    json.dumps(real.to_dict(), allow_nan=False)
    with pytest.raises(ValueError, match="status"):
        Solution(solver="x", kappa=1.0, rank=1, W=None, factors=None, stored=False, recall_fraction=0.0,
                 margin=0.0, converged=False, iterations=0, seconds=0.0, status="maybe")


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
