"""The LP feasibility solver (validation.solvers.lp)."""

import json

import numpy as np
import pytest

from validation import make_instance, solve
from validation.instances.ensembles import Instance
from validation.solvers.lp import MAX_NONZEROS, lp_nonzeros


def _custom(inputs, targets):
    inputs = np.asarray(inputs, dtype=float)
    targets = np.asarray(targets, dtype=float)
    p, d = inputs.shape
    return Instance(d=d, p=p, problem="op", ensemble="gaussian", seed=0, inputs=inputs,
                    targets=targets, dp_key=np.uint64(0))


def test_hand_example_feasible():
    # e = u = standard basis of R^2.  Constraints: W10 - W00 <= -t, W01 - W11 <= -t, |W_jk| <= 1,
    # so t* = 2 at W = [[1, -1], [-1, 1]].
    sol = solve(_custom(np.eye(2), np.eye(2)), solver="lp")
    assert sol.status == "stored" and sol.stored and sol.converged
    assert sol.info["lp_optimum"] == pytest.approx(2.0, abs=1e-7)
    np.testing.assert_allclose(sol.W, [[1, -1], [-1, 1]], atol=1e-7)
    # normalised margin: raw margin 2 over ||W||_F / d = 2 / 2 = 1
    assert sol.margin == pytest.approx(2.0, rel=1e-6)


def test_hand_example_identical_inputs_infeasible():
    # e_0 = e_1 -> W e_0 = W e_1 must favour u_0 and u_1 at once: impossible, t* = 0.
    sol = solve(_custom([[1.0, 0.5], [1.0, 0.5]], [[1.0, 0.0], [0.0, 1.0]]), solver="lp")
    assert sol.status == "not_stored" and not sol.stored and sol.converged
    assert abs(sol.info["lp_optimum"]) < 1e-7


def test_hand_example_interior_target_infeasible():
    # u_2 is the midpoint of u_0 and u_1: u_2 . y = (u_0 . y + u_1 . y)/2 never beats both.
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((3, 3))
    targets = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0]])
    sol = solve(_custom(inputs, targets), solver="lp")
    assert sol.status == "not_stored"


@pytest.mark.parametrize("problem", ["op", "dp"])
@pytest.mark.parametrize("d", [4, 6, 8])
def test_few_patterns_always_stored(problem, d):
    # p <= d + 1 outputs in general position are vertices of their convex hull and
    # p <= d inputs are independent, so some W stores them.
    for seed in range(3):
        sol = solve(make_instance(d, d, problem, seed=seed), solver="lp")
        assert sol.status == "stored" and sol.stored and sol.margin > 0


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_many_patterns_never_stored(problem):
    # alpha = p ln p / d^2 = 60 ln 60 / 36 = 6.8, far above any capacity
    sol = solve(make_instance(6, 60, problem, seed=1), solver="lp")
    assert sol.status == "not_stored" and not sol.stored


def test_consistent_with_hebbian_and_adam():
    """What Hebbian or Adam store, the LP must call storable; an LP 'not_stored' binds Adam."""
    counts = {"stored": 0, "not_stored": 0}
    for d, p, seed in [(6, 10, 0), (6, 14, 1), (6, 18, 2), (6, 24, 3), (8, 16, 4), (8, 24, 5), (8, 30, 6)]:
        for problem in ("op", "dp"):
            inst = make_instance(d, p, problem, seed=seed)
            lp = solve(inst, solver="lp")
            assert lp.status in ("stored", "not_stored")
            counts[lp.status] += 1
            adam = solve(inst, solver="adam", max_iter=1000)
            hebb = solve(inst, solver="hebbian")
            if adam.stored or hebb.stored:
                assert lp.stored
            if lp.status == "not_stored":
                assert not adam.stored and adam.status == "undecided"
            if lp.stored:  # the LP's W is verified
                S = inst.scores(lp.W)
                assert np.all(np.diag(S) > np.max(S - np.diag(np.full(p, np.inf)), axis=0))
    assert counts["stored"] > 0 and counts["not_stored"] > 0  # the grid spans the threshold


def test_rank_constraint_rejected():
    with pytest.raises(ValueError, match="kappa"):
        solve(make_instance(4, 5), solver="lp", kappa=0.5)


def test_too_large_says_use_optimal():
    inst = make_instance(64, 500, seed=0)
    assert lp_nonzeros(64, 500) > MAX_NONZEROS
    with pytest.raises(ValueError, match="optimal"):
        solve(inst, solver="lp")
    with pytest.raises(ValueError, match="optimal"):
        solve(make_instance(4, 10), solver="lp", options={"max_nonzeros": 10})


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_working_set_agrees_with_full_lp(problem):
    for p, seed in [(12, 0), (18, 1), (24, 2)]:
        inst = make_instance(8, p, problem, seed=seed)
        full = solve(inst, solver="lp")
        ws = solve(inst, solver="lp", options={"working_set": True, "optimum": True})
        assert full.status == ws.status
        assert full.info["exact_optimum"] and ws.info["exact_optimum"]
        assert ws.info["lp_optimum"] == pytest.approx(full.info["lp_optimum"], abs=1e-7)
        assert ws.info["constraints"] <= p * (p - 1)


def test_time_limit_gives_undecided():
    sol = solve(make_instance(12, 60, seed=0), solver="lp", time_limit=1e-3)
    assert sol.status in ("undecided", "stored", "not_stored")
    assert sol.converged == (sol.status != "undecided")
    data = json.loads(json.dumps(sol.to_dict(), allow_nan=False))
    if sol.status == "undecided":
        assert "time limit" in sol.message
        assert data["info"]["lp_optimum"] is None or np.isfinite(data["info"]["lp_optimum"])


def test_max_iter_caps_constraint_generation():
    inst = make_instance(8, 24, seed=1)  # not stored; constraint generation needs 2 rounds (measured)
    free = solve(inst, solver="lp", options={"working_set": True})
    assert free.status == "not_stored" and free.info["rounds"] == 2
    capped = solve(inst, solver="lp", max_iter=1, options={"working_set": True})
    assert capped.info["rounds"] == 1
    assert capped.status == "undecided" and not capped.converged
    assert "max_iter=1" in capped.message
    json.dumps(capped.to_dict(), allow_nan=False)
