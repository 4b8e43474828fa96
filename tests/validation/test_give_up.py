"""Tests of the give-up mode of the ``optimal`` solver (validation.solvers.searches.solve_give_up).

Reference: brute force on tiny instances.  The best accuracy of an instance is the
largest |S| such that the inputs S can all be recalled by one W; "S storable" is
decided exactly by a small dense LP (maximise t subject to
``(u_rho - u_f(mu))^T W e_mu + t <= 0`` for mu in S, ``|W_jk| <= 1``, ``t <= 1``;
storable iff ``t* > 1e-9``, the LP of ``notes/simulation.md`` restricted to S, with
the constraint rows of ``validation.solvers.lp``), enumerating the subsets from the
largest size down.  Give-up is a lower bound, so it must never exceed the brute
force.  Measured on the 24 instances below (d = 3, 4; p = 8..12, all above the
all-stored capacity; OP and DP; seeds 0, 1, 2): give-up equals the brute-force
optimum on 16 of 24 and is one input short on the other 8 (seed 0 alone: 5 of 8); the DP
instances are those of candidate generator 1, on which this was measured.  The
slow test asserts equality on at least 14 of 24, the fast one on 4 of the 8 with seed 0,
and both that give-up is never above the optimum nor more than one input below it.
"""

import itertools
import json

import numpy as np
import pytest
from scipy.optimize import linprog

from validation import FactSettings, make_instance, solve
from validation.solvers import Solution, assess
from validation.solvers import lp as lp_module

_CASES = [(d, p, problem, seed) for d, p in ((3, 8), (3, 10), (4, 10), (4, 12))
          for problem in ("op", "dp") for seed in (0, 1, 2)]


def _storable(inst, subset) -> bool:
    """Exact LP decision: can one W recall every input of ``subset``?"""
    d = inst.d
    target = inst.target_index
    mus = np.array([mu for mu in subset for rho in range(inst.n_candidates) if rho != target[mu]], dtype=np.int64)
    rhos = np.array([rho for mu in subset for rho in range(inst.n_candidates) if rho != target[mu]], dtype=np.int64)
    diffs = lp_module._differences(inst, mus, rhos)  # u_rho - u_f(mu), shape (n, d)
    rows = (diffs[:, :, None] * inst.inputs[mus][:, None, :]).reshape(len(mus), d * d)
    A = np.hstack([rows, np.ones((len(mus), 1))])
    c = np.zeros(d * d + 1)
    c[-1] = -1.0
    res = linprog(c, A_ub=A, b_ub=np.zeros(len(mus)), bounds=[(-1, 1)] * (d * d) + [(None, 1)], method="highs")
    assert res.status == 0
    return -res.fun > 1e-9


def _best(inst) -> int:
    for size in range(inst.p, 0, -1):
        if any(_storable(inst, s) for s in itertools.combinations(range(inst.p), size)):
            return size
    return 0


def _compare(cases):
    """(instances where give-up equals the brute force, instances); asserts give-up <= brute force."""
    equal = 0
    for d, p, problem, seed in cases:
        inst = make_instance(d, p, problem, seed=seed, generator=1)  # the measured instances
        sol = solve(inst, "optimal", refine=False, options={"give_up": True})
        best = _best(inst)
        assert sol.info["recalled"] <= best, (d, p, problem, seed)
        assert sol.status in ("stored", "not_found")
        assert sol.info["recalled"] >= best - 1, (d, p, problem, seed)  # measured: never more than 1 short
        equal += sol.info["recalled"] == best
    return equal, len(cases)


def test_give_up_against_brute_force_fast():
    equal, n = _compare([c for c in _CASES if c[3] == 0])  # measured: 5 of 8 equal
    assert equal >= 4, f"give-up equals the brute force on only {equal} of {n} instances"


@pytest.mark.slow
def test_give_up_against_brute_force():
    equal, n = _compare(_CASES)  # measured: 16 of 24 equal, the other 8 one input short
    assert equal >= 14, f"give-up equals the brute force on only {equal} of {n} instances"


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_give_up_recalls_more_and_is_labelled_a_lower_bound(problem):
    inst = make_instance(16, 110, problem, seed=2)
    plain = solve(inst, "optimal", refine=False)
    sol = solve(inst, "optimal", refine=False, options={"give_up": True})
    assert plain.status == "not_stored"
    assert sol.status == "not_found" and not sol.stored and sol.converged
    assert sol.info["lower_bound"] is True and sol.info["first_status"] == "not_stored"
    stored, fraction, margin, recalled = assess(inst, sol.W)  # independent float64 check
    assert fraction == sol.recall_fraction and int(recalled.sum()) == sol.info["recalled"]
    assert sol.info["recalled"] >= inst.p - sol.info["given_up"]  # every kept input is recalled
    assert sol.recall_fraction > plain.recall_fraction + 0.2
    assert "lower bound" in sol.message
    json.dumps(sol.to_dict(), allow_nan=False)
    assert sol.status in Solution.STATUSES


def test_give_up_below_capacity_stores_everything():
    inst = make_instance(16, 40, "op", seed=3)
    sol = solve(inst, "optimal", refine=False, options={"give_up": True})
    assert sol.status == "stored" and sol.stored and sol.info["given_up"] == 0 and sol.info["rounds"] == 1
    assert sol.info["lower_bound"] is False


def test_give_up_with_shared_outputs_and_low_rank():
    inst = make_instance(8, 80, "op", seed=1, facts=FactSettings(outputs=4))
    sol = solve(inst, "optimal", refine=False, options={"give_up": True})
    assert sol.status in ("stored", "not_found")
    assert assess(inst, sol.W)[1] == sol.recall_fraction
    low = solve(make_instance(8, 30, "op", seed=1), "optimal", kappa=0.5, refine=False, max_iter=500,
                options={"give_up": True, "max_rounds": 3})
    assert low.status in Solution.STATUSES and 0.0 <= low.recall_fraction <= 1.0


def test_give_up_bad_options():
    inst = make_instance(8, 20, "op", seed=0)
    with pytest.raises(ValueError, match="give_up"):
        solve(inst, "optimal", options={"give_up": "yes"})
    with pytest.raises(ValueError, match="give_up_fraction"):
        solve(inst, "optimal", options={"give_up": True, "give_up_fraction": 0.0})
    with pytest.raises(ValueError, match="cannot be combined"):
        solve(inst, "optimal", options={"give_up": True, "top_k": 2})


def test_give_up_off_is_unchanged():
    """The default path does not go through the search (same numbers as before the option existed)."""
    inst = make_instance(16, 70, "dp", seed=4)
    a = solve(inst, "optimal", refine=False)
    b = solve(inst, "optimal", refine=False, options={"give_up": False})
    assert a.status == b.status and a.iterations == b.iterations and np.array_equal(a.W, b.W)
    assert "mode" not in a.info


@pytest.mark.parametrize("block_elements", [1 << 23, 5 * 41])
def test_op_full_pass_with_given_up_inputs_has_finite_minimum(block_elements):
    """OP full pass with whole rows left out (given-up inputs, target column included).

    Reference: the margins of ``ConstraintProblem.block_margins`` (float32 scores, left-out
    constraints set to +inf, no kernel).  The pass once set the target score of a given-up
    row to -inf as well, so the row's minimum was -inf - (-inf) = NaN and ``min`` dropped
    the minimum of the whole block: ``min_margin`` came out +inf on an unstored W.
    """
    from validation.solvers.engine.problem import ConstraintProblem, full_pass

    inst = make_instance(8, 41, "op", seed=0)
    blocked = np.zeros((inst.p, inst.n_candidates), dtype=bool)
    # three inputs given up, as solve_give_up leaves them; 31 shares its block of 5 inputs (the
    # second case) with input 30, which has the smallest margin of the Hebbian W
    blocked[[3, 17, 31]] = True
    prob = ConstraintProblem(inst, blocked)
    W = prob.hebbian()
    M = prob.block_margins(prob.search_images(W), 0, inst.p, exact=False)
    fp = full_pass(prob, W, np.inf, inst.p, block_elements)
    assert np.isfinite(fp.min_margin) and fp.min_margin < 0
    assert fp.min_margin == pytest.approx(float(M.min()), rel=1e-5, abs=1e-5)
    below = M < 1.0
    assert fp.loss == pytest.approx(float(np.square(1.0 - M[below]).sum()), rel=1e-5)
    assert np.array_equal(fp.violated, below.sum(axis=1))
    assert fp.violated[[3, 17, 31]].sum() == 0 and not np.isin(fp.ws.rows, [3, 17, 31]).any()


# The stronger search: add-back, swaps and restarts on top of the greedy give-up.  Measured on
# the 24 instances of _CASES and four at d = 2 (p = 5, 6): the greedy search equals the brute
# force on 20 of 28, the stronger search (STRONG) on all 28; swaps alone raise the greedy
# count on 4 of 28 (the instances of _SWAP_GAINS among them).  The DP instances are those of
# candidate generator 1; on the generator-2 instance (3, 10, "dp", 0) the stronger search is one
# input short of the brute force (6 of 7).
_STRONG = {"give_up": True, "give_up_readd": 20, "give_up_swaps": 30, "give_up_restarts": 4}
_SWAP_GAINS = [(3, 8, "op", 1), (4, 10, "op", 1), (4, 10, "dp", 2)]


def test_stronger_give_up_against_brute_force():
    cases = [c for c in _CASES if c[3] == 0] + [(2, 5, "op", 0), (2, 6, "dp", 1), (3, 10, "dp", 2)]
    gains = 0
    for d, p, problem, seed in cases:
        inst = make_instance(d, p, problem, seed=seed, generator=1)  # the measured instances
        greedy = solve(inst, "optimal", refine=False, options={"give_up": True}).info["recalled"]
        strong = solve(inst, "optimal", refine=False, options=_STRONG)
        best = _best(inst)
        assert greedy <= strong.info["recalled"] <= best, (d, p, problem, seed)
        assert strong.info["recalled"] == best, (d, p, problem, seed)  # measured: equal on all 28
        assert strong.info["restart_runs"] == 4 and set(strong.info["moves"]) == {"add_back", "swaps", "restarts"}
        gains += strong.info["recalled"] > greedy
    assert gains >= 3  # measured: 4 of these 11 (3-8-op-0, 3-10-op-0, 3-10-dp-0, 3-10-dp-2)


@pytest.mark.parametrize("case", _SWAP_GAINS)
def test_swaps_improve_and_stay_a_stored_subset(case):
    d, p, problem, seed = case
    inst = make_instance(d, p, problem, seed=seed)
    greedy = solve(inst, "optimal", refine=False, options={"give_up": True})
    sol = solve(inst, "optimal", refine=False, options={"give_up": True, "give_up_swaps": 30})
    assert sol.info["moves"] == {"add_back": None, "swaps": sol.info["moves"]["swaps"], "restarts": None}
    assert sol.info["moves"]["swaps"] >= 1 and 1 <= sol.info["swap_attempts"] <= 30
    assert sol.info["recalled"] > greedy.info["recalled"]
    assert sol.status == "not_found" and sol.info["lower_bound"] is True
    _, fraction, _, recalled = assess(inst, sol.W)  # float64 check of the returned W
    assert fraction == sol.recall_fraction and int(recalled.sum()) == sol.info["recalled"]
    assert _storable(inst, np.flatnonzero(recalled))  # an independent LP: the recalled set is storable
    assert sol.info["recalled"] <= _best(inst)
    json.dumps(sol.to_dict(), allow_nan=False)


def test_give_up_moves_default_off_and_restarts_reproducible():
    inst = make_instance(4, 12, "dp", seed=2)
    plain = solve(inst, "optimal", refine=False, options={"give_up": True})
    assert plain.info["moves"] == {"add_back": None, "swaps": None, "restarts": None}
    assert plain.info["swap_attempts"] == 0 and plain.info["restart_runs"] == 0
    opts = {"give_up": True, "give_up_restarts": 3, "give_up_swaps": 5}
    a = solve(inst, "optimal", refine=False, seed=7, options=opts)
    b = solve(inst, "optimal", refine=False, seed=7, options=opts)
    c = solve(inst, "optimal", refine=False, options=opts)  # seed None: DEFAULT_SEED
    untimed = [{key: v for key, v in sol.info.items() if key != "run_seconds"} for sol in (a, b)]
    assert np.array_equal(a.W, b.W) and untimed[0] == untimed[1]
    assert a.info["restart_runs"] == 3 and c.info["restart_runs"] == 3
    assert min(a.info["recalled"], c.info["recalled"]) >= plain.info["recalled"]
    assert a.info["seed"] == 7 and len(a.info["run_scores"]) == 4 and a.info["recalled"] == max(a.info["run_scores"])
    one = solve(inst, "optimal", refine=False, seed=7, options={**opts, "give_up_restarts": 1})
    assert one.info["run_scores"] == a.info["run_scores"][:2]  # restart r does not depend on how many follow


def test_weighted_swaps_and_restarts_never_lose_mass():
    for seed in (0, 1, 2):
        inst = make_instance(4, 12, "op", seed=seed, facts=FactSettings(weights=np.arange(12, 0, -1.0)))
        greedy = solve(inst, "optimal", refine=False, options={"give_up": True})
        strong = solve(inst, "optimal", refine=False, options={**_STRONG, "give_up_swap_size": 1})
        assert strong.info["weighted"] and strong.info["recalled_mass"] >= greedy.info["recalled_mass"]
        _, _, _, recalled = assess(inst, strong.W)
        assert strong.info["recalled_mass"] == pytest.approx(float(inst.weights[recalled].sum()), rel=1e-12)


@pytest.mark.parametrize("name, value", [("give_up_swaps", -1), ("give_up_swaps", 1.5), ("give_up_restarts", -2),
                                         ("give_up_restarts", True), ("give_up_swap_size", 0),
                                         ("give_up_jitter", 0.0), ("give_up_jitter", float("inf"))])
def test_give_up_move_options_checked(name, value):
    inst = make_instance(4, 12, "op", seed=0)
    with pytest.raises(ValueError, match=name):
        solve(inst, "optimal", options={"give_up": True, name: value})


def test_give_up_restarts_bad_seed():
    with pytest.raises(ValueError, match="seed"):
        solve(make_instance(4, 12, "op", seed=0), "optimal", seed=-1, options={"give_up": True, "give_up_restarts": 1})
