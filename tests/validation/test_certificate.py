"""The aggregated not-stored bound (validation.solvers.engine.certificate)."""

import numpy as np
import pytest

from validation.instances.ensembles import make_instance
from validation.solvers import solve
from validation.solvers.engine.certificate import AggregatedBound
from validation.solvers.engine.problem import ConstraintProblem, DecisionWorkingSet


def _working_set(d, p, problem, seed):
    """All constraints of a small instance as one working set."""
    prob = ConstraintProblem(make_instance(d, p, problem, seed=seed))
    rows, cols = np.meshgrid(np.arange(p), np.arange(prob.n_cand), indexing="ij")
    keep = cols != prob.target_index[rows]
    return prob, DecisionWorkingSet(prob, rows[keep], cols[keep])


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_value_is_the_bound_of_the_rebuilt_weights(problem):
    # provenance: the combination's value is ||sum_k w_k g_k||; the same number must come
    # out of sum_i lam_i a_i computed directly from the rebuilt weights lam (float64)
    prob, ws = _working_set(8, 30, problem, 1)
    rng = np.random.default_rng(0)
    agg = AggregatedBound(size=5)
    agg.reset(ws)
    singles = []
    for _ in range(7):
        r = np.maximum(rng.standard_normal(ws.size), 0.0)
        A = ws.combine(r, exact=True)
        agg.add(r, A)
        singles.append(np.linalg.norm(A) / r.sum())
    value, w = agg.best()
    assert len(w) == 5 and np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    lam = agg.weights(w)
    direct = np.linalg.norm(ws.combine(lam, exact=True)) / lam.sum()
    # g_k and r^(k) are kept in float32 (the search's precision)
    assert direct == pytest.approx(value, rel=1e-4)
    # the best combination is no longer than any of the last five iterates alone
    assert value <= min(singles[-5:]) * (1 + 1e-5)


def test_combination_cancels_opposite_gradients():
    # two residual vectors whose combinations are g and -g (up to scale): the best
    # combination is 0, while each alone has norm ||g||
    agg = AggregatedBound(size=4)
    agg.reset(None)
    g = np.arange(1.0, 7.0).reshape(2, 3)
    agg.add(np.array([1.0, 0.0]), g)
    agg.add(np.array([0.0, 2.0]), -2.0 * g)
    value, w = agg.best()
    assert value < 1e-3 * np.linalg.norm(g)
    assert w == pytest.approx([0.5, 0.5], abs=1e-3)
    assert agg.weights(w) == pytest.approx([0.5, 0.5], abs=1e-3)  # 0.5 g + 0.25 (-2 g) = 0


def test_bound_never_below_a_stored_margin():
    # weak duality: for any lam >= 0, d ||sum lam_i a_i|| / sum lam_i >= the normalised
    # margin of every W, in particular of a W the solver stored (independent solver output)
    d, p = 8, 20
    instance = make_instance(d, p, "op", seed=3)
    sol = solve(instance, "optimal", refine=False)
    assert sol.status == "stored"
    prob, ws = _working_set(d, p, "op", 3)
    rng = np.random.default_rng(1)
    agg = AggregatedBound(size=8)
    agg.reset(ws)
    for _ in range(8):
        r = rng.exponential(size=ws.size) * (rng.random(ws.size) < 0.3)
        agg.add(r, ws.combine(r, exact=True))
    value, w = agg.best()
    lam = agg.weights(w)
    bound = d * np.linalg.norm(ws.combine(lam, exact=True)) / lam.sum()
    assert bound >= sol.margin * (1 - 1e-9)


def test_not_stored_decisions_agree_with_the_lp():
    # provenance: the exact LP (HiGHS) decides these instances independently
    for seed in range(3):
        instance = make_instance(10, 48, "op", seed=seed)
        assert solve(instance, "optimal", refine=False).status == solve(instance, "lp").status
