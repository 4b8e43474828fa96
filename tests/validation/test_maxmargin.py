"""Tests of the certified max-margin solver (validation.solvers.maxmargin, notes/max_margin.md).

The reference optimum is an independent solve of the primal QP
``min ||W||_F^2 / 2 s.t. m_i(W) >= 1`` over all constraints with scipy's SLSQP on
tiny instances (d <= 5): the best normalised margin is ``d / ||W*||_F``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from validation.instances.ensembles import FactSettings, make_instance
from validation.solvers.maxmargin import MaxMarginOptions, MaxMarginResult, solve_max_margin

settings.register_profile("maxmargin", deadline=None, derandomize=True, max_examples=8)


def _constraint_rows(instance):
    """All constraint matrices a_i = (t_mu - u_rho) e_mu^T, flattened (row-major W)."""
    rows = []
    for mu in range(instance.p):
        cand = instance.candidates(mu)
        target = instance.target_index[mu]
        for rho in range(instance.n_candidates):
            if rho != target:
                rows.append(np.outer(cand[target] - cand[rho], instance.inputs[mu]).ravel())
    return np.array(rows)


def _qp_margin(instance):
    """Best normalised margin d / ||W*||_F: SLSQP on the primal (all constraints) finds the active
    set, and the minimum-norm W on it, ``W = A_S^T lam`` with ``A_S A_S^T lam = 1``, is the optimum
    when it passes the KKT conditions checked here (feasible, ``lam >= 0``).  SLSQP alone sometimes
    stops at its line search ("Positive directional derivative") a little short of the optimum."""
    A = _constraint_rows(instance)
    d = instance.d
    w0 = np.linalg.lstsq(A, np.full(A.shape[0], 2.0), rcond=None)[0]  # a start near feasibility
    if (A @ w0).min() > 0:
        w0 = w0 / (A @ w0).min()
    res = minimize(lambda w: 0.5 * w @ w, w0, jac=lambda w: w, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda w: A @ w - 1.0, "jac": lambda w: A}],
                   options={"ftol": 1e-12, "maxiter": 5000})
    active = A[A @ res.x <= 1.0 + 1e-6]
    lam = np.linalg.lstsq(active @ active.T, np.ones(len(active)), rcond=None)[0]
    w = active.T @ lam
    assert (A @ w).min() >= 1.0 - 1e-8 and lam.min() >= -1e-10, res.message   # KKT
    return d / np.linalg.norm(w)


TINY = [
    dict(d=3, p=4, problem="op", seed=1),
    dict(d=5, p=8, problem="op", seed=2),
    dict(d=4, p=6, problem="dp", seed=3),
    dict(d=5, p=8, problem="dp", seed=4),
    dict(d=5, p=8, problem="op", seed=5, outputs=3),
    dict(d=4, p=8, problem="dp", seed=6, outputs=4),
]


@pytest.mark.parametrize("spec", TINY, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_agrees_with_independent_qp(spec):
    args = {k: v for k, v in spec.items() if k != "outputs"}
    instance = make_instance(**args, facts=FactSettings(outputs=spec.get("outputs")))
    best = _qp_margin(instance)
    r = solve_max_margin(instance, tol=1e-9, max_iter=200000)
    assert r.status == "converged" and r.converged
    assert r.margin == pytest.approx(best, rel=1e-6)
    assert r.margin_bound == pytest.approx(best, rel=1e-6)
    # the certificates bracket the optimum (up to the QP solver's accuracy)
    assert r.margin <= best * (1 + 1e-7) and best <= r.margin_bound * (1 + 1e-7)
    # W is the minimum-norm W with all margins >= 1 (up to the gap)
    margins = _constraint_rows(instance) @ r.W.ravel()
    assert margins.min() == pytest.approx(1.0, abs=1e-5)


@settings(settings.get_profile("maxmargin"))
@given(seed=st.integers(0, 2**31), problem=st.sampled_from(["op", "dp"]))
def test_certificates_bracket_the_optimum(seed, problem):
    instance = make_instance(4, 6, problem, seed=seed)
    best = _qp_margin(instance) if _storable(instance) else None
    r = solve_max_margin(instance, tol=0.3, max_iter=50)   # stopped early: a loose pair
    assert r.status in MaxMarginResult.STATUSES
    if best is not None:
        assert r.margin <= best * (1 + 1e-7)
        assert best <= r.margin_bound * (1 + 1e-7)
    json.dumps(r.to_dict(), allow_nan=False)


def _storable(instance):
    from validation.solvers import solve

    return solve(instance, "lp").status == "stored"


def test_gap_reaches_tol_and_warm_start_is_used():
    from validation.solvers import solve

    instance = make_instance(16, 50, "op", seed=1)
    decision = solve(instance, "optimal", refine=False)
    for tol in (0.05, 0.01):
        r = solve_max_margin(instance, decision.W, tol=tol)
        assert r.status == "converged" and r.gap <= tol
        assert r.gap == pytest.approx((r.margin_bound - r.margin) / r.margin_bound)
        assert r.margin >= decision.margin
    # reference: notes/optimal_solver.md records the optimum of this instance in [0.18562, 0.1867]
    assert r.margin <= 0.1867 and r.margin_bound >= 0.18562
    # the warm start's working set is where the sweeps start: without W0 (the Hebbian start)
    # the same seed takes another path (the two solves were identical when a first full pass
    # at W(lam = 0) = 0 discarded it)
    cold = solve_max_margin(instance, None, tol=0.01, seed=0)
    warm = solve_max_margin(instance, decision.W, tol=0.01, seed=0)
    assert cold.status == warm.status == "converged"
    assert (cold.iterations, cold.margin) != (warm.iterations, warm.margin)


def test_not_storable_reports_no_gap():
    instance = make_instance(2, 12, "op", seed=0)   # far above capacity (p_c(2) ~ 3)
    r = solve_max_margin(instance, max_iter=200)
    assert r.status == "no_margin" and not r.converged and r.gap is None
    assert r.margin <= 0
    out = r.to_dict()
    json.dumps(out, allow_nan=False)
    assert out["status"] in MaxMarginResult.STATUSES and "W" not in out


def test_tiny_time_limit_returns_the_warm_start():
    from validation.solvers import solve

    instance = make_instance(8, 20, "dp", seed=2)
    decision = solve(instance, "optimal", refine=False)
    seen = []
    r = solve_max_margin(instance, decision.W, time_limit=1e-9, callback=seen.append)
    assert r.status in ("time_limit", "converged")
    assert r.margin >= decision.margin * (1 - 1e-12)
    assert seen and {"iterations", "full_passes", "bound", "gap"} <= set(seen[-1])
    json.dumps(r.to_dict(), allow_nan=False)


@pytest.mark.parametrize("kwargs, name", [
    (dict(tol=0.0), "tol"), (dict(tol=1.0), "tol"), (dict(max_iter=0), "max_iter"),
    (dict(time_limit=-1.0), "time_limit"), (dict(W0=np.zeros((3, 3))), "W0"),
    (dict(W0=np.full((4, 4), np.nan)), "W0"), (dict(callback=3), "callback"),
    (dict(options={"omega": 2.0}), "omega"), (dict(options={"sweeps_per_pass": 0}), "sweeps_per_pass"),
    (dict(options={"nonsense": 1}), "nonsense"),
])
def test_bad_input(kwargs, name):
    instance = make_instance(4, 6, "op", seed=0)
    with pytest.raises(ValueError, match=name):
        solve_max_margin(instance, **kwargs)


def test_options_coerce():
    assert MaxMarginOptions.coerce({"omega": 1.2}).omega == 1.2
    with pytest.raises(ValueError, match="max_active"):
        MaxMarginOptions(max_active=0)


def test_interrupt_returns_the_best_verified_state():
    instance = make_instance(8, 20, "op", seed=3)
    calls = []

    def stop_on_second(state):
        calls.append(state)
        if len(calls) == 2:
            raise KeyboardInterrupt

    r = solve_max_margin(instance, tol=1e-6, callback=stop_on_second)
    assert r.status == "interrupted" and not r.converged
    assert r.message.startswith("interrupted")
    json.dumps(r.to_dict(), allow_nan=False)


def test_seed_reproduces_the_result():
    instance = make_instance(6, 12, "dp", seed=4)
    a, b = (solve_max_margin(instance, tol=0.05, seed=7) for _ in range(2))
    assert np.array_equal(a.W, b.W) and a.iterations == b.iterations


def test_repair_projects_onto_the_working_set_and_keeps_only_verified_margins():
    # the repaired candidate is W(lam) / (1 - eps) projected onto the working set's
    # constraints: its working-set margins are >= 1 - eps / 4 up to the float32 images
    # (1e-3 here) when the projection stopped early, and whatever the solve keeps as its
    # margin is the float64 margin of the W it returns (recomputed here over all constraints)
    from validation.solvers.engine import dual_ascent as da
    from validation.solvers import solve
    from validation.solvers.engine.problem import exact_min_margins

    instance = make_instance(32, 160, "op", seed=3)
    decision = solve(instance, "optimal", refine=False)
    args = da.checked_max_margin_arguments(instance, decision.W, 0.02, 100000, None, None, None)
    run = da.DualAscentRun(instance, seed=0, **args)
    result = run.run()
    assert result.status == "converged"
    W = run.ws.memory()
    candidate = run.repair(W)
    margins = np.empty(run.ws.size)
    da._k.set_margins(instance.inputs @ candidate.T, run.ws.vecs, run.ws.ptr, margins)
    eps = da._REPAIR_SLACK * run.tol
    assert margins.min() >= 1.0 - 0.25 * eps - 1e-3
    assert not np.allclose(candidate, W / (1.0 - eps))    # the projection moved it
    margin, kept = run.best
    low = float(exact_min_margins(run.data, kept, 1 << 20).min())
    assert margin == pytest.approx(run.data.normalised(kept, low), rel=1e-12)
    assert run.best[0] <= run.bound


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_memories_of_several_dual_vectors_equal_their_direct_sums(problem):
    """DualWorkingSet.memories builds W(lam) for several lam in one read of the working set,
    in groups when the C blocks would be large: each equals the direct float64 sum
    sum_i lam_i a_i (a different order of summation: equal to rounding, 1e-12 relative)."""
    from validation.solvers.engine import dual_working_set as dual_ascent

    inst = make_instance(6, 12, problem, seed=3)
    data = dual_ascent.MaxMarginData(inst)
    rows, cols, _ = data.scan(np.eye(6), np.inf, 4, 1 << 20)
    ws = dual_ascent.DualWorkingSet.empty(data).merged(rows, cols)
    rng = np.random.default_rng(0)
    lams = rng.exponential(size=(5, ws.size)) * (rng.random((5, ws.size)) < 0.6)   # zeros too
    keys = ws.keys
    direct = np.array([sum(lam[i] * np.outer(ws.vecs[i], inst.inputs[keys[i] // data.n_cand])
                           for i in range(ws.size)) for lam in lams])
    together = ws.memories(lams)
    assert np.allclose(together, direct, rtol=1e-12, atol=1e-12 * np.abs(direct).max())
    # one vector at a time: the same bits as its row of the batch's combine
    assert np.allclose(np.array([ws.memory(lam) for lam in lams]), together, rtol=1e-12, atol=0)
    # float32 GEMM (the line search's directions): float32 rounding, 1e-5 relative to the largest entry
    single = ws.memories(lams, dtype=np.float32)
    assert single.dtype == np.float32
    assert np.allclose(single, direct, rtol=0, atol=1e-5 * np.abs(direct).max())
    saved = dual_ascent._COMBINE_BYTES
    try:   # groups of one row each
        dual_ascent._COMBINE_BYTES = 8 * inst.p * 6
        assert np.array_equal(ws.memories(lams), np.array([ws.memory(lam) for lam in lams]))
    finally:
        dual_ascent._COMBINE_BYTES = saved
