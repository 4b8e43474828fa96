"""Exact top-k decision (validation.top_k_bound) against brute force and the search."""

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from validation import make_instance, solve
from validation.accuracy_bound import constraint_rows
from validation.top_k_bound import TopKDecision, top_k_decision


def _brute_force_stored(instance, k):
    """Reference: some choice of k - 1 exempt competitors per input leaves an LP
    ``A_keep vec(W) >= 1`` that is feasible (box-free, scipy linprog/HiGHS)."""
    A, owner = constraint_rows(instance)
    p = instance.p
    per_input = [np.flatnonzero(owner == mu) for mu in range(p)]
    choices = [list(itertools.combinations(rows, k - 1)) for rows in per_input]
    n = A.shape[1]
    for pick in itertools.product(*choices):
        keep = np.ones(A.shape[0], dtype=bool)
        keep[np.concatenate([np.asarray(c, dtype=np.int64) for c in pick])] = False
        res = linprog(np.zeros(n), A_ub=-A[keep], b_ub=-np.ones(int(keep.sum())),
                      bounds=[(None, None)] * n, method="highs")
        if res.status == 0:
            return True
    return False


CASES = [(2, 4, "dp", s) for s in range(4)] + [(2, 5, "op", s) for s in range(3)] + \
        [(3, 5, "dp", s) for s in range(3)] + [(3, 6, "op", s) for s in range(2)]


def test_decision_equals_brute_force_on_tiny_instances():
    answers = []
    for d, p, problem, seed in CASES:
        inst = make_instance(d, p, problem, seed=seed)
        dec = top_k_decision(inst, 2)
        assert dec.status in ("stored", "not_stored"), dec.message
        brute = _brute_force_stored(inst, 2)
        assert dec.stored == brute, (d, p, problem, seed, dec.message)
        answers.append(brute)
    assert any(answers) and not all(answers)  # both verdicts occur: the test can fail either way


@pytest.mark.parametrize("problem", ["dp", "op"])
def test_never_not_stored_where_the_search_stores(problem):
    seen = 0
    for seed in range(6):
        inst = make_instance(3, 8, problem, seed=seed)
        search = solve(inst, "optimal", options={"top_k": 2})
        dec = top_k_decision(inst, 2)
        if search.status == "stored":
            seen += 1
            assert dec.stored is True, dec.message
        if dec.stored is False:
            assert search.status != "stored"
    assert seen > 0


def test_search_shortcut_and_result_fields():
    inst = make_instance(3, 5, "dp", seed=0)
    dec = top_k_decision(inst, 2, W_search="search")
    assert isinstance(dec, TopKDecision)
    if dec.search_status == "stored":
        assert dec.found_by == "search" and dec.stored
    assert dec.to_dict()["top_k"] == 2


def test_budget_status_is_not_a_verdict():
    inst = make_instance(5, 24, "dp", seed=0)
    dec = top_k_decision(inst, 2, time_limit=1e-3, check_box=False)  # p = 1.5 p_c: no quick W, no quick proof
    assert dec.status == "time_limit" and dec.stored is None and not dec.converged


def test_bad_input():
    inst = make_instance(3, 5, "dp", seed=0)
    for kwargs, word in [({"top_k": 1}, "top_k"), ({"top_k": 5}, "top_k"), ({"top_k": 2, "box": 0.0}, "box"),
                         ({"top_k": 2, "time_limit": float("inf")}, "time_limit"),
                         ({"top_k": 2, "check_box": 1}, "check_box"),
                         ({"top_k": 2, "W_search": np.zeros((2, 2))}, "W_search"),
                         ({"top_k": 2, "W_search": "greedy"}, "W_search")]:
        with pytest.raises(ValueError, match=word):
            top_k_decision(inst, **kwargs)
    with pytest.raises(ValueError, match="instance"):
        top_k_decision(np.zeros((3, 3)), 2)


def test_docstring_example():
    import doctest

    import validation.top_k_bound as module

    assert doctest.testmod(module).failed == 0
