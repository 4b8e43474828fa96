"""The ``svp`` solver: gradient, projection, statuses, bad input (``notes/rank_search.md``)."""

import json

import numpy as np
import pytest

from validation import make_instance, solve
from validation.solvers import SVPOptions
from validation.solvers.svp import _SVP, project_rank, solve_svp


def _loss(inst, W):
    """Squared hinge over all p (p - 1) constraints, float64, by brute force."""
    S = inst.targets @ W @ inst.inputs.T  # S[rho, mu] = u_rho . W e_mu
    M = np.diag(S)[None, :] - S
    np.fill_diagonal(M, np.inf)
    return float(np.square(np.maximum(1.0 - M, 0.0)).sum())


@pytest.mark.parametrize("problem", ["op"])
def test_gradient_matches_finite_differences(problem):
    inst = make_instance(6, 14, problem, seed=3)
    run = _SVP(inst, 0.5, tol=1e-3, max_iter=10, time_limit=None, options=SVPOptions(max_active=13))
    _, G = run.gradient()
    rng = np.random.default_rng(0)
    for _ in range(3):
        D = rng.standard_normal((6, 6))
        h = 1e-6
        fd = (_loss(inst, run.W + h * D) - _loss(inst, run.W - h * D)) / (2 * h)
        # the working set holds every violated constraint (max_active = p - 1); float32 margins
        assert fd == pytest.approx(float(np.sum(G * D)), rel=1e-3, abs=1e-3)


def test_project_rank_is_the_truncated_svd():
    W = np.random.default_rng(1).standard_normal((7, 7))
    W3, (Q, R) = project_rank(W, 3)
    assert np.linalg.matrix_rank(W3) == 3
    assert np.allclose(Q @ R.T, W3)
    s = np.linalg.svd(W, compute_uv=False)
    assert np.linalg.norm(W - W3) == pytest.approx(np.sqrt(np.sum(s[3:] ** 2)))


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_stores_an_easy_rank_m_instance(problem):
    # p = 8 at d = 12, rank 6: far below replica.capacity(12, kappa=0.5) (about 38)
    inst = make_instance(12, 8, problem, seed=5)
    sol = solve(inst, "svp", kappa=0.5)
    assert sol.status == "stored" and sol.stored and sol.converged
    assert np.linalg.matrix_rank(sol.W) <= 6
    Q, R = sol.factors
    assert np.allclose(Q @ R.T, sol.W)
    assert json.dumps(sol.to_dict(), allow_nan=False)
    assert sol.status in type(sol).STATUSES


def test_full_rank_is_gradient_descent_and_stores():
    sol = solve(make_instance(10, 12, "op", seed=2), "svp", kappa=1.0)
    assert sol.status == "stored" and sol.factors is None


def test_undecided_on_budget_with_message():
    # above capacity (replica.capacity(8, kappa=0.5) is about 22): a budget of 3 steps cannot decide
    sol = solve_svp(make_instance(8, 30, "op", seed=0), 0.5, max_iter=3)
    assert sol.status == "undecided" and not sol.converged
    assert "max_iter" in sol.message
    assert json.dumps(sol.to_dict(), allow_nan=False)
    assert sol.status in type(sol).STATUSES


def test_not_stored_certificate_far_above_capacity():
    # p = 60 at d = 4: far above the full-rank p_c (about 12); the Gordan bound closes
    sol = solve_svp(make_instance(4, 60, "op", seed=0), 1.0, tol=1e-2, max_iter=2000)
    assert sol.status == "not_stored", sol.message
    assert sol.info["margin_bound"] <= 1e-2 and sol.converged


@pytest.mark.parametrize("kappa", [0.0, 1.5, float("nan")])
def test_bad_kappa(kappa):
    with pytest.raises(ValueError, match="kappa"):
        solve(make_instance(8, 10, seed=0), "svp", kappa=kappa)


@pytest.mark.parametrize("solver", ["svp", "optimal", "hebbian", "adam"])
def test_small_kappa_is_rank_one_for_every_solver(solver):
    # one rank rule: max(1, round(kappa d)); kappa d = 0.08 rounds to 0 and gives rank 1
    sol = solve(make_instance(8, 10, seed=0), solver, kappa=0.01, max_iter=50) if solver != "hebbian" else \
        solve(make_instance(8, 10, seed=0), solver, kappa=0.01)
    assert sol.rank == 1


def test_bad_options_and_shared_arguments():
    inst = make_instance(8, 10, seed=0)
    with pytest.raises(ValueError, match="max_backtracks"):
        solve(inst, "svp", options={"max_backtracks": 0})
    with pytest.raises(ValueError, match="restarts"):
        solve(inst, "svp", restarts=2)
    with pytest.raises(ValueError, match="initial"):
        solve(inst, "svp", options={"initial": np.zeros((3, 3))})
