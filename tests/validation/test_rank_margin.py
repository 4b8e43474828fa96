"""Tests of the rank-m max-margin alternation (``validation/solvers/rank_margin.py``).

Independent references on tiny instances with every constraint written out: the
subspace QPs by ``scipy.optimize.nnls`` (distance of the origin to the convex hull of the
constraint vectors), the rank-m problem by ``scipy.optimize.minimize(method="SLSQP")`` on
the factors, and the full-rank optimum with
``solve_max_margin`` (certified by its own tests, ``tests/validation/test_maxmargin.py``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import minimize, nnls

from validation import FactSettings, make_instance, solve
from validation.solvers.engine.memories import truncated_svd
from validation.solvers.maxmargin import solve_max_margin
from validation.solvers.rank_margin import (
    RankMarginOptions,
    RankMarginResult,
    _Alternation,
    rank_relaxation_bound,
    solve_rank_max_margin,
)


def _constraints(inst):
    """Every constraint vector ``t_mu - u_rho`` (rows of V) with its input ``e_mu`` (rows of E)."""
    V, E = [], []
    for mu in range(inst.p):
        cands = inst.candidates(mu)
        for rho in range(cands.shape[0]):
            if rho != inst.target_index[mu]:
                V.append(inst.targets[mu] - cands[rho])
                E.append(inst.inputs[mu])
    return np.array(V), np.array(E)


def _margin(V, E, W):
    return float(np.einsum("ij,ij->i", V @ W, E).min() * W.shape[0] / np.linalg.norm(W))


def _stored(inst):
    sol = solve(inst, "optimal", kappa=0.5, refine=False)
    assert sol.status == "stored"
    return sol.W


def _subspace_optimum(inst, W, rank, side):
    """Best normalised margin in S_Q (columns of W) or S_R (rows), independently: ``d`` times
    the distance of the origin to the convex hull of the constraint vectors ``b_i`` in
    orthonormal coordinates of the subspace (``W = U X^T``: ``b_i = e_mu (U^T v_i)^T``;
    ``W = X V^T``: ``b_i = v_i (V^T e_mu)^T``), by ``scipy.optimize.nnls`` with the simplex
    constraint as a heavily weighted row."""
    V, E = _constraints(inst)
    U, _, Vr = truncated_svd(W, rank)
    if side == "columns":
        B = np.einsum("ij,ik->ijk", E, V @ U).reshape(len(V), -1)
    else:
        B = np.einsum("ij,ik->ijk", V, E @ Vr).reshape(len(V), -1)
    weight = 1e4
    A = np.vstack([B.T, weight * np.ones(len(V))])
    w, _ = nnls(A, np.concatenate([np.zeros(B.shape[1]), [weight]]), maxiter=10000)
    return inst.d * float(np.linalg.norm(B.T @ (w / w.sum())))


def _factor_search(inst, rank, starts):
    """Best rank-m normalised margin of ``starts`` SLSQP searches on the factors
    (maximise t subject to every margin >= t and ||Q R^T||_F <= 1), random starts (seed 0)."""
    d, m = inst.d, rank
    V, E = _constraints(inst)
    rng = np.random.default_rng(0)

    def memory(x):
        return x[:d * m].reshape(d, m) @ x[d * m:2 * d * m].reshape(d, m).T

    cons = [{"type": "ineq", "fun": lambda x: np.einsum("ij,ij->i", V @ memory(x), E) - x[-1]},
            {"type": "ineq", "fun": lambda x: 1.0 - np.sum(memory(x) ** 2)}]
    best = -np.inf
    for _ in range(starts):
        x0 = np.concatenate([rng.standard_normal(2 * d * m) / np.sqrt(d), [0.0]])
        res = minimize(lambda x: -x[-1], x0, constraints=cons, method="SLSQP", options={"maxiter": 500})
        best = max(best, _margin(V, E, memory(res.x)))
    return best


@pytest.mark.parametrize("side", ["columns", "rows"])
def test_half_step_gap_is_certified(side):
    # the half-step's verified margin <= the subspace optimum (SLSQP) <= its certified bound
    inst = make_instance(8, 12, "op", seed=3)
    W0 = _stored(inst)
    alt = _Alternation(inst, 4, W0, tol=1e-3, max_iter=1, time_limit=None, seed=0,
                       options=RankMarginOptions(full_rank=False, step_tol=1e-3))
    start = alt.W.copy()
    res = alt.half_step(side)
    best = _subspace_optimum(inst, start, 4, side)
    assert res.margin <= best * (1 + 1e-5)
    assert best <= res.margin_bound * (1 + 1e-5)
    assert res.gap is not None and 0 <= res.gap <= 1e-3
    assert np.linalg.matrix_rank(res.W, tol=1e-9 * np.linalg.norm(res.W)) <= 4


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_alternation_never_lowers_the_margin(problem):
    inst = make_instance(10, 16, problem, seed=1)
    r = solve_rank_max_margin(inst, 0.5, _stored(inst), options={"full_rank": False})
    margins = [r.start_margin] + [h["margin"] for h in r.half_steps]
    assert np.all(np.diff(margins) >= -1e-12 * max(margins))
    assert r.margin >= r.start_margin - 1e-9
    assert r.margin > r.start_margin          # the decision W is not max-margin
    V, E = _constraints(inst)
    assert r.margin == pytest.approx(_margin(V, E, r.W), rel=1e-9)   # verified on every constraint
    Q, R = r.factors
    np.testing.assert_allclose(Q @ R.T, r.W, atol=1e-12 * np.linalg.norm(r.W))
    assert Q.shape == (10, 5) and r.rank == 5
    assert all(g is not None and g <= 0.005 for g in r.gaps)


def test_few_answers():
    # K = 4 distinct answers: the rank-6 constraint barely binds, so the alternation ends
    # at the certified bound (measured: 1.6114 against 1.6131)
    inst = make_instance(12, 16, "op", seed=0, facts=FactSettings(outputs=4))
    r = solve_rank_max_margin(inst, 0.5, _stored(inst))
    assert r.status == "converged"
    assert r.start_margin < r.margin <= r.rank_bound
    assert r.margin >= 0.99 * r.rank_bound


def test_full_rank_kappa_reproduces_the_full_rank_max_margin():
    inst = make_instance(8, 14, "op", seed=2)
    W0 = solve(inst, "optimal", refine=False).W
    full = solve_max_margin(inst, W0, tol=0.002)
    r = solve_rank_max_margin(inst, 1.0, W0, options={"step_tol": 0.002, "full_rank_tol": 0.002})
    assert r.rank == 8
    assert r.margin <= full.margin_bound * (1 + 1e-9)
    assert r.margin >= full.margin * (1 - 0.005)
    assert r.full_rank_bound == pytest.approx(full.margin_bound, rel=0.005)


def test_bounds_hold_against_an_independent_rank_search():
    # SLSQP on the factors (max t s.t. margins >= t, ||Q R^T||_F <= 1) from 10 random starts:
    # its best rank-m margin must lie below the certified rank-m bound
    inst = make_instance(6, 8, "op", seed=0)
    r = solve_rank_max_margin(inst, 0.5, _stored(inst))
    best = _factor_search(inst, 3, 10)
    assert r.margin <= r.rank_bound <= r.full_rank_bound * (1 + 1e-12)
    assert best <= r.rank_bound * (1 + 1e-6)
    assert r.rank_bound < r.full_rank_bound       # the rank-m bound is tighter here


@pytest.mark.slow
def test_many_starts_come_close_to_a_brute_force_search():
    # 16 alternation starts against 30 SLSQP factor starts on a tiny instance: measured
    # (6 instances, d = 6, p = 8, OP and DP) 0.5-10 % below the SLSQP best; one start alone
    # lands 2-46 % below it (partial optima: notes/max_margin.md, section 9).  The test
    # guards against a regression, it does not claim the optimum.
    inst = make_instance(6, 8, "op", seed=0)
    best = _factor_search(inst, 3, 30)
    r = solve_rank_max_margin(inst, 0.5, _stored(inst), options={"starts": 16})
    assert len(r.start_margins) == 16 and r.margin == pytest.approx(max(r.start_margins), rel=1e-9)
    assert 0.85 * best <= r.margin <= r.rank_bound


def test_rank_relaxation_bound_is_valid():
    rng = np.random.default_rng(5)
    G = rng.standard_normal((7, 7))
    for _ in range(50):
        W = rng.standard_normal((7, 3)) @ rng.standard_normal((3, 7))
        assert np.vdot(G, W) / np.linalg.norm(W) <= rank_relaxation_bound(G, 7.0, 7, 3) + 1e-12
    assert rank_relaxation_bound(G, 0.0, 7, 3) == np.inf


def test_result_contract_normal_and_failed():
    inst = make_instance(8, 12, "dp", seed=0)
    ok = solve_rank_max_margin(inst, 0.5, _stored(inst), options={"starts": 2})
    assert ok.status in RankMarginResult.STATUSES and ok.status == "converged" and ok.converged
    assert len(ok.start_margins) == 2
    data = json.loads(json.dumps(ok.to_dict(), allow_nan=False))
    assert "W" not in data and "full_rank_W" not in data and data["status"] == "converged"
    assert "stationary point" in ok.message and "not a certified" in ok.message
    # unstorable at rank 2 (and at full rank): no storing W anywhere
    bad = make_instance(4, 40, "op", seed=0)
    W0 = np.random.default_rng(0).standard_normal((4, 4))
    failed = solve_rank_max_margin(bad, 0.5, W0, options={"step_max_iter": 50, "full_rank": False})
    assert failed.status == "no_margin" and not failed.converged
    assert failed.status in RankMarginResult.STATUSES
    json.dumps(failed.to_dict(), allow_nan=False)
    cut = solve_rank_max_margin(inst, 0.5, _stored(inst), max_iter=1, tol=1e-9,
                                options={"full_rank": False})
    assert cut.status == "max_iter" and not cut.converged
    json.dumps(cut.to_dict(), allow_nan=False)


@pytest.mark.parametrize("kwargs, word", [
    ({"kappa": 0.0}, "kappa"), ({"kappa": float("nan")}, "kappa"), ({"tol": 1.5}, "tol"),
    ({"max_iter": 0}, "max_iter"), ({"time_limit": -1.0}, "time_limit"),
    ({"W0": np.zeros((3, 3))}, "W0"), ({"options": {"starts": 0}}, "starts"),
    ({"options": {"step_tol": 0.0}}, "step_tol"), ({"options": {"nonsense": 1}}, "nonsense"),
    ({"options": {"full_rank": 1}}, "full_rank"),
])
def test_bad_input(kwargs, word):
    inst = make_instance(4, 3, "op", seed=0)
    args = {"kappa": 0.5, "W0": np.eye(4)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=word):
        solve_rank_max_margin(inst, args.pop("kappa"), args.pop("W0"), **args)
