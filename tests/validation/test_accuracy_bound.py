"""Tests of the certified bracket on the best recall count (validation.accuracy_bound).

Reference: brute force on tiny instances, independent of the MILP.  For every subset of
inputs, largest first, a box-free LP (``scipy.optimize.linprog``: is there a W with
``(t_mu - c_rho)^T W e_mu >= 1`` for every mu of the subset and every competitor rho?)
decides whether one W recalls all of it; the largest feasible subset size is the best
count.  The rows are built here from ``instance.candidates`` (not from the module).
The weighted bound has the same reference: the largest recalled weight is the weight
of the heaviest storable subset (all subsets, heaviest first, the same LP).
"""

import itertools
import json

import numpy as np
import pytest
from scipy.optimize import linprog

from validation import FactSettings, make_instance, solve
from validation.bounds.accuracy import AccuracyBound, accuracy_bound, constraint_rows

_TINY = [(d, p, problem, seed) for d, p in ((2, 4), (2, 6), (3, 6), (3, 8), (4, 8))
         for problem in ("op", "dp") for seed in (0, 1)]


def _rows(inst, mu):
    cand = np.asarray(inst.candidates(mu))
    t = inst.target_index[mu]
    diffs = cand[t] - np.delete(cand, t, axis=0)
    return np.einsum("ri,j->rij", diffs, inst.inputs[mu]).reshape(len(diffs), -1)


def _storable(rows_of, subset) -> bool:
    A = np.vstack([rows_of[mu] for mu in subset])
    res = linprog(np.zeros(A.shape[1]), A_ub=-A, b_ub=-np.ones(len(A)),
                  bounds=[(None, None)] * A.shape[1], method="highs")
    assert res.status in (0, 2), res.message
    return res.status == 0


def _best(inst) -> int:
    rows_of = [_rows(inst, mu) for mu in range(inst.p)]
    for size in range(inst.p, 0, -1):
        if any(_storable(rows_of, s) for s in itertools.combinations(range(inst.p), size)):
            return size
    return 0


def test_rows_are_the_margins():
    inst = make_instance(3, 5, "dp", seed=4)
    A, owner = constraint_rows(inst)
    W = np.random.default_rng(0).standard_normal((3, 3))
    S = inst.scores(W)
    expected = np.concatenate([S[mu, mu] - np.delete(S[:, mu], mu) for mu in range(5)])
    np.testing.assert_allclose(A @ W.ravel(), expected, atol=1e-12)
    assert owner.tolist() == np.repeat(np.arange(5), 4).tolist()


@pytest.mark.parametrize("case", _TINY, ids=lambda c: "-".join(map(str, c)))
def test_bound_brackets_the_brute_force_optimum(case):
    d, p, problem, seed = case
    inst = make_instance(d, p, problem, seed=seed, generator=1)  # the DP instances of the measurement
    truth = _best(inst)
    r = accuracy_bound(inst, time_limit=5.0, check_box=False)
    assert r.recalled_lower <= truth <= r.recalled_upper, (case, truth, r.message)
    if r.status == "exact":
        assert r.recalled_lower == r.recalled_upper == truth
    assert r.status == "exact", r.message  # measured: every tiny case closes


@pytest.mark.parametrize("case", [(4, 12, "op", 0), (5, 16, "dp", 1), (6, 24, "op", 2), (6, 24, "dp", 0)],
                         ids=lambda c: "-".join(map(str, c)))
def test_bound_is_never_below_the_give_up_search(case):
    d, p, problem, seed = case  # all above the all-stored capacity (p_c(4) = 8.7, p_c(6) = 14.8)
    inst = make_instance(d, p, problem, seed=seed)
    sol = solve(inst, "optimal", options={"give_up": True})
    found = round(sol.recall_fraction * p)
    r = accuracy_bound(inst, W_search=sol.matrix(), time_limit=1.0, check_box=False)
    assert r.search_recalled >= found and r.recalled_any >= found
    assert r.recalled_upper >= found, (case, r.message)
    assert r.recalled_lower <= r.recalled_upper
    if r.search_box <= r.box:
        assert r.recalled_lower >= found  # the search count is the MILP's cut


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_box_check_same_count_at_ten_times_the_box(problem):
    inst = make_instance(4, 10, problem, seed=0)
    r = accuracy_bound(inst, W_search="give_up", time_limit=5.0)
    assert r.status == "exact"
    assert r.check_lower == r.check_upper == r.recalled_upper
    assert r.box_binding is False and "evidence, not a proof" in r.message


def test_a_small_box_is_reported_binding():
    inst = make_instance(6, 19, "op", seed=0)
    W = solve(inst, "optimal", options={"give_up": True}).matrix()
    r = accuracy_bound(inst, W_search=W, box=1.0, time_limit=2.0, check_box=False)
    assert r.search_recalled > r.recalled_upper  # the search W does not fit a box of 1
    assert r.box_binding is True and "box binds" in r.message


def test_budget_and_json():
    inst = make_instance(8, 40, "dp", seed=3)
    r = accuracy_bound(inst, time_limit=0.05, check_box=False)
    assert r.status in AccuracyBound.STATUSES
    assert 0 <= r.recalled_lower <= r.recalled_upper <= inst.p
    if r.status == "time_limit":
        assert not r.converged and "budget ran out" in r.message
    data = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert data["status"] == r.status and data["box_binding"] == r.box_binding
    tiny = accuracy_bound(make_instance(3, 6, "op", seed=0), time_limit=5.0)
    json.dumps(tiny.to_dict(), allow_nan=False)


def test_shared_outputs():
    inst = make_instance(3, 8, "op", seed=1, facts=FactSettings(outputs=3))
    r = accuracy_bound(inst, time_limit=5.0, check_box=False)
    assert r.status == "exact" and r.recalled_lower == _best(inst)


def test_bad_input():
    inst = make_instance(3, 5, "op", seed=0)
    with pytest.raises(ValueError, match="instance"):
        accuracy_bound(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="box"):
        accuracy_bound(inst, box=0.0)
    with pytest.raises(ValueError, match="box"):
        accuracy_bound(inst, box=float("inf"))
    with pytest.raises(ValueError, match="time_limit"):
        accuracy_bound(inst, time_limit=0.0)
    with pytest.raises(ValueError, match="mip_rel_gap"):
        accuracy_bound(inst, mip_rel_gap=1.0)
    with pytest.raises(ValueError, match="W_search"):
        accuracy_bound(inst, W_search=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="W_search"):
        accuracy_bound(inst, W_search="best")
    with pytest.raises(ValueError, match="W_search"):
        accuracy_bound(inst, W_search=np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="check_box"):
        accuracy_bound(inst, check_box="yes")


_WEIGHTED = [(d, p, problem, kind, seed) for d, p in ((2, 5), (3, 6), (3, 8), (4, 8))
             for problem in ("op", "dp") for kind, seed in (("zipf", 0), ("random", 1))]


def _weights(kind, p, seed):
    if kind == "zipf":
        return np.arange(1.0, p + 1.0) ** -1.0
    return np.random.default_rng(seed).uniform(0.1, 1.0, p)


def _best_weight(inst, w, among=None) -> float:
    """Heaviest storable subset of ``among`` (default: all inputs), by exhaustive enumeration."""
    rows_of = [_rows(inst, mu) for mu in range(inst.p)]
    among = list(range(inst.p)) if among is None else list(among)
    subsets = [s for size in range(len(among), 0, -1) for s in itertools.combinations(among, size)]
    for s in sorted(subsets, key=lambda s: -sum(w[mu] for mu in s)):
        if _storable(rows_of, s):
            return float(sum(w[mu] for mu in s))
    return 0.0


@pytest.mark.parametrize("case", _WEIGHTED, ids=lambda c: "-".join(map(str, c)))
def test_weighted_bound_brackets_the_brute_force_optimum(case):
    d, p, problem, kind, seed = case
    w = _weights(kind, p, seed)
    inst = make_instance(d, p, problem, seed=seed, generator=1, facts=FactSettings(weights=w))
    truth = _best_weight(inst, w / w.sum())
    r = accuracy_bound(inst, time_limit=5.0, check_box=False)
    assert r.weighted and r.top == p
    assert r.mass_lower - 1e-9 <= truth <= r.mass_upper + 1e-9, (case, truth, r.message)
    assert r.status == "exact", r.message  # measured: every tiny case closes
    assert abs(r.mass_lower - truth) <= 1e-5 and r.mass_upper - truth <= 1e-5
    assert r.recalled_upper == p and r.recalled_lower <= p


@pytest.mark.parametrize("case", [(3, 8, "dp", "zipf", 0), (3, 8, "op", "random", 1), (4, 8, "dp", "random", 2)],
                         ids=lambda c: "-".join(map(str, c)))
def test_top_counts_the_light_inputs_as_recalled(case):
    d, p, problem, kind, seed = case
    w = _weights(kind, p, seed)
    w = w / w.sum()
    inst = make_instance(d, p, problem, seed=seed, generator=1, facts=FactSettings(weights=w))
    top = 4
    heavy = np.argsort(-w, kind="stable")[:top]
    tail = 1.0 - w[heavy].sum()
    truth = _best_weight(inst, w)
    r = accuracy_bound(inst, time_limit=5.0, check_box=False, top=top)
    assert r.top == top and f"{p - top} lightest" in r.message
    assert r.mass_lower - 1e-9 <= truth <= r.mass_upper + 1e-9, (case, truth, r.message)
    # the MILP over the heaviest inputs is solved to the end: its optimum plus the light weight
    assert r.status in ("exact", "bracket"), r.message
    assert abs(r.mass_upper - (_best_weight(inst, w, among=heavy) + tail)) <= 1e-5, r.message


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_equal_weights_are_the_count_bit_for_bit(problem):
    def fields(r):
        return {k: v for k, v in r.to_dict().items() if k != "seconds"}
    plain = make_instance(3, 8, problem, seed=1)
    W = solve(plain, "optimal", options={"give_up": True}).matrix()  # one search W for all (the Zipf one differs)
    count = accuracy_bound(plain, W_search=W, time_limit=5.0)
    equal = make_instance(3, 8, problem, seed=1, facts=FactSettings(weights=np.full(8, 0.3)))
    zipf = make_instance(3, 8, problem, seed=1, facts=FactSettings(weights=_weights("zipf", 8, 0)))
    np.testing.assert_array_equal(equal.inputs, plain.inputs)
    np.testing.assert_array_equal(zipf.inputs, plain.inputs)
    for r in (accuracy_bound(equal, W_search=W, time_limit=5.0),
              accuracy_bound(plain, W_search=W, time_limit=5.0, weights=np.full(8, 2.0)),
              accuracy_bound(zipf, W_search=W, time_limit=5.0, weights=None)):
        assert fields(r) == fields(count)
    assert not count.weighted and count.mass_upper == count.recalled_upper / 8
    # the weighted MILP itself, on weights equal up to 1e-7, finds the count bound / p
    nearly = 1.0 + 1e-7 * np.random.default_rng(0).uniform(size=8)
    r = accuracy_bound(plain, time_limit=5.0, weights=nearly)
    assert r.weighted and r.status == count.status == "exact"
    assert abs(r.mass_upper - count.recalled_upper / 8) <= 2e-5 and abs(r.mass_lower - count.recalled_lower / 8) <= 2e-5


def test_weighted_search_is_the_cut():
    w = _weights("zipf", 24, 0)
    inst = make_instance(6, 24, "dp", seed=0, facts=FactSettings(weights=w))
    sol = solve(inst, "optimal", options={"give_up": True})
    r = accuracy_bound(inst, W_search=sol.matrix(), time_limit=2.0, check_box=False, top=12)
    assert abs(r.search_mass - sol.info["recalled_mass"]) <= 1e-12
    assert r.mass_any >= r.search_mass and r.mass_upper >= r.search_mass
    if r.search_box <= r.box:
        assert r.mass_lower >= r.search_mass - 1e-12
    json.dumps(r.to_dict(), allow_nan=False)


def test_bad_weights():
    inst = make_instance(3, 5, "op", seed=0)
    for bad, match in ((np.array([1.0, -1.0, 1.0, 1.0, 1.0]), "non-negative"),
                       (np.array([1.0, np.nan, 1.0, 1.0, 1.0]), "finite"),
                       (np.ones(4), "length p = 5"), (np.zeros(5), "positive sum"), ("zipf", "weights"),
                       ([[1.0] * 5], "length")):
        with pytest.raises(ValueError, match=match):
            accuracy_bound(inst, weights=bad)
    zipf = np.arange(1.0, 6.0) ** -1.0
    for top in (0, 6, 2.5, True, "all"):
        with pytest.raises(ValueError, match="top"):
            accuracy_bound(inst, weights=zipf, top=top)
    with pytest.raises(ValueError, match="unequal weights"):
        accuracy_bound(inst, top=3)


def test_bound_message_counts_and_weights():
    from validation.bounds.milp import BoundUnits, bound_message, count_units

    # counts: integers out of p; the box check at ten times the box was inconclusive
    msg = bound_message("bracket", (3, 5), 2.0, (None, True, 3, 6), ["n1"], count_units(8))
    assert msg == ("3 <= best count <= 5 of 8 (certified for the box), for W in [-2, 2]^(d x d) at margin 1; "
                   "box check inconclusive (3..6 at 20); n1")
    # weights: six decimals out of 1, the closing tolerance named on an exact result
    msg = bound_message("exact", (0.25, 0.25), 1.0, (False, True, 0.25, 0.25), [],
                        BoundUnits("recalled weight", "weight", "1", ".6f", " (to 1e-05)"))
    assert msg == ("best recalled weight in the box: 0.250000 of 1 (to 1e-05), for W in [-1, 1]^(d x d) at margin 1; "
                   "same weight at 10 (evidence, not a proof, for unbounded W)")
    assert bound_message("failed", (2, 7), 1.0, (None, False, None, None), [], count_units(7)).startswith(
        "no certified bound: 2 <= best count <= 7 (trivial)")
