"""Tests of top-k recall: ``validation.measurements.recall.top_k_recalled`` and the top-k mode of ``optimal``.

References: a direct numpy count of the competitors that score at least the target
(ties against the target), and the float64 check of the returned W on the whole
instance.  The instances of the solver tests were chosen from measurements at d = 16
(DP, ``experiments/top_k/README.md``: top-2 p_c ~ 70, top-5 p_c ~ 87, plain p_c ~ 62).
"""

import json

import numpy as np
import pytest

from validation import FactSettings, make_instance, solve
from validation.capacity import (CapacityDesign, CapacityEstimate, CapacityOptions, CurvePoint, TrialCounts,
                                 estimate_capacity)
from validation.measurements.recall import recall_check, top_k_recalled
from validation.solvers import Solution
from validation.solvers.searches import top_k_check


def _numpy_top_k(S, k, targets):
    p = S.shape[1]
    out = np.empty(p, dtype=bool)
    for mu in range(p):
        col = S[:, mu]
        t = col[targets[mu]]
        others = np.delete(col, targets[mu])
        out[mu] = not np.isnan(col).any() and int((others >= t).sum()) < k
    return out


def test_top_k_recalled_against_numpy_with_ties_and_nan():
    rng = np.random.default_rng(5)
    S = np.round(rng.standard_normal((9, 9)), 1)  # rounding makes ties
    S[3, 4] = np.nan
    targets = np.arange(9)
    for k in (1, 2, 4, 8):
        assert np.array_equal(top_k_recalled(S, k), _numpy_top_k(S, k, targets))
    assert np.array_equal(top_k_recalled(S, 1), recall_check(S)[0])
    S2 = rng.standard_normal((4, 10))
    f = np.arange(10) % 4
    assert np.array_equal(top_k_recalled(S2, 2, f), _numpy_top_k(S2, 2, f))


def test_top_k_recalled_bad_k():
    S = np.eye(4)
    for k in (0, 4, 2.0, True):
        with pytest.raises(ValueError, match="top_k"):
            top_k_recalled(S, k)


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_top_k_stores_above_the_plain_capacity(problem):
    inst = make_instance(16, 66, problem, seed=2)
    plain = solve(inst, "optimal", refine=False)
    sol = solve(inst, "optimal", refine=False, options={"top_k": 2})
    assert plain.status == "not_stored"
    assert sol.status == "stored" and sol.stored and sol.recall_fraction == 1.0
    assert top_k_check(inst, sol.W, 2).all()   # independent float64 check
    assert sol.info["top1_fraction"] < 1.0 and sol.info["lower_bound"] is False
    json.dumps(sol.to_dict(), allow_nan=False)


def test_top_k_far_above_capacity_is_a_lower_bound_verdict():
    inst = make_instance(16, 110, "dp", seed=1)
    sol = solve(inst, "optimal", refine=False, options={"top_k": 2})
    assert sol.status == "not_found" and not sol.stored and sol.converged
    assert sol.info["lower_bound"] is True and "not a certificate" in sol.message
    assert sol.recall_fraction == top_k_check(inst, sol.W, 2).mean()
    assert sol.status in Solution.STATUSES
    json.dumps(sol.to_dict(), allow_nan=False)


def test_top_k_with_shared_outputs_and_bad_values():
    inst = make_instance(8, 60, "op", seed=2, facts=FactSettings(outputs=4))
    sol = solve(inst, "optimal", refine=False, options={"top_k": 2})
    assert sol.status in ("stored", "not_found")
    with pytest.raises(ValueError, match="top_k"):
        solve(inst, "optimal", options={"top_k": 4})   # K = 4 candidates: top_k <= 3
    with pytest.raises(ValueError, match="top_k"):
        solve(inst, "optimal", options={"top_k": 0})


def test_not_found_is_counted_as_not_stored_and_apart():
    counts = TrialCounts()
    for record in ({"status": "stored"}, {"status": "not_stored"},
                   {"status": "not_stored", "verdict": "not_found"}, {"status": "undecided"}):
        counts.add(10, counts.classify(record))
    assert counts.by_p[10] == [1, 1, 1, 0, 4, 1]
    assert counts.decided(10) == 3 and counts.frequency(10) == pytest.approx(1 / 3)
    point = CurvePoint.from_counts(16, 10, counts.by_p[10])
    assert point.not_found == 1 and point.not_stored == 1 and point.decided == 3
    assert "lower-bound" in point.message
    json.dumps(point.to_dict(), allow_nan=False)


def test_top_k_capacity_estimate_says_lower_bound():
    # the DP instances of candidate generator 1 (measured: not_found > 0)
    est = estimate_capacity(8, "dp", "optimal", design=CapacityDesign(trials=4, rounds=0),
                            options=CapacityOptions(solver_options={"top_k": 2}, progress=False, generator=1))
    assert isinstance(est, CapacityEstimate)
    assert est.theory["source"] == "replica.capacity(top_k=2)"
    assert est.not_found > 0 and est.lower_bound and "LOWER BOUND" in est.message
    assert est.to_dict()["not_found"] == est.not_found
    json.dumps(est.to_dict(), allow_nan=False)


def test_cli_flags(capsys):
    from validation.cli import main

    assert main(["solve", "--d", "16", "--p", "66", "--seed", "2", "--top-k", "2", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "stored" and data["info"]["top_k"] == 2
    assert main(["capacity", "--d", "8", "--problem", "dp", "--generator", "1", "--top-k", "2", "--trials", "2",
                 "--rounds", "0", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "not_found" in out.splitlines()[0] and "LOWER BOUND" in out
    assert main(["accuracy", "--d", "8", "--loads", "30", "--solver", "optimal", "--give-up", "--trials", "2",
                 "--problem", "dp", "--format", "csv"]) == 0
    assert "lower_bound" in capsys.readouterr().out
    for args in (["capacity", "--d", "8", "--solver", "hebbian", "--top-k", "2"],
                 ["accuracy", "--d", "8", "--loads", "30", "--give-up"],
                 ["solve", "--d", "8", "--p", "30", "--solver", "lp", "--give-up"]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "search mode of solver 'optimal'" in err


def test_restarts_store_what_the_first_run_misses():
    # d = 3, p = 11, k = 5 (DP, seed 4): the first run ends not_found; one random restart stores,
    # and the W is checked here independently of the solver's own check
    inst = make_instance(3, 11, "dp", seed=4, generator=1)
    first = solve(inst, "optimal", options={"top_k": 5})
    assert first.status == "not_found" and first.info["restart_runs"] == 0 and first.info["stored_by"] is None
    again = solve(inst, "optimal", options={"top_k": 5, "top_k_restarts": 8}, seed=0)
    assert again.status == "stored" and again.info["stored_by"] >= 1
    assert again.info["restart_runs"] == again.info["stored_by"] and "runs" in again.message
    assert top_k_recalled(inst.scores(again.W), 5).all()
    same = solve(inst, "optimal", options={"top_k": 5, "top_k_restarts": 8}, seed=0)
    assert np.array_equal(same.W, again.W)  # the restarts are seeded


def test_restarts_end_in_a_lower_bound_verdict_and_bad_values():
    inst = make_instance(3, 20, "op", seed=0)  # 2.3 times the theory's top-2 p_c (8.7): no run can store
    sol = solve(inst, "optimal", options={"top_k": 2, "top_k_restarts": 3}, seed=1)
    assert sol.status == "not_found" and sol.info["restart_runs"] == 3 and "lower-bound" in sol.message
    stored = solve(make_instance(3, 4, "dp", seed=0), "optimal", options={"top_k": 2, "top_k_restarts": 3})
    assert stored.status == "stored" and stored.info["restart_runs"] == 0  # no restart after a first run that stores
    for bad in ({"top_k_restarts": 2}, {"top_k": 2, "top_k_restarts": -1}, {"top_k": 2, "top_k_restarts": 1.5}):
        with pytest.raises(ValueError, match="top_k_restarts"):
            solve(inst, "optimal", options=bad)


def test_cli_top_k_restarts(capsys):
    from validation.cli import main

    assert main(["solve", "--d", "3", "--p", "11", "--problem", "dp", "--generator", "1", "--seed", "4",
                 "--top-k", "5", "--top-k-restarts", "8", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "stored" and data["info"]["stored_by"] >= 1
    assert main(["solve", "--d", "3", "--p", "11", "--top-k-restarts", "8"]) == 2
    assert "--top-k-restarts 8 needs --top-k" in capsys.readouterr().err


def test_restart_streams_are_apart_from_the_instance_streams():
    # the solve's seed equal to the instance seed: no restart repeats the draws of the instance's
    # streams (make_instance: SeedSequence(seed).spawn(3)); the plain spawn_key=(r,) form did
    from replica.common.seeds import restart_stream

    seed = 4
    instance_streams = np.random.SeedSequence(seed).spawn(3)
    drawn = [np.random.default_rng(ss).standard_normal(8) for ss in instance_streams]
    for r in range(3):
        start = np.random.default_rng(restart_stream(seed, r)).standard_normal(8)
        assert not any(np.array_equal(start, x) for x in drawn)
        plain = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r,))).standard_normal(8)
        assert np.array_equal(plain, drawn[r])  # the check can fail: the old streams are the instance's


def test_restarts_return_the_best_run_and_its_seed():
    inst = make_instance(3, 20, "op", seed=0)  # far above the top-2 p_c: no run stores
    first = solve(inst, "optimal", options={"top_k": 2})
    sol = solve(inst, "optimal", options={"top_k": 2, "top_k_restarts": 3}, seed=1)
    assert sol.status == "not_found" and sol.info["restarts_cut_short"] is False and sol.info["seed"] == 1
    assert sol.info["top_k_recalled"] >= first.info["top_k_recalled"]
    assert sol.info["top_k_recalled"] == int(top_k_recalled(inst.scores(sol.W), 2).sum())


def test_time_limit_between_restarts_keeps_the_first_verdict(monkeypatch):
    # the budget ends just as a restart begins (its first round finds no time left): the search
    # must not fail, and the first run's not_found stands
    import time

    from validation.solvers import searches as modes

    inst = make_instance(3, 11, "dp", seed=4, generator=1)  # the first run ends not_found (test above)
    calls = []
    original = modes._top_k_run

    def late(search, k, W0):
        calls.append(search)
        if len(calls) > 1:
            search.deadline = time.perf_counter() - 1.0
        return original(search, k, W0)

    monkeypatch.setattr(modes, "_top_k_run", late)
    sol = solve(inst, "optimal", options={"top_k": 5, "top_k_restarts": 8}, seed=0, time_limit=600)
    assert len(calls) == 2
    assert sol.status == "not_found" and sol.info["restarts_cut_short"] is True
    assert sol.info["restart_runs"] == 0 and "budget ended the restarts after 0 of 8" in sol.message


def test_ctrl_c_in_a_restart_says_interrupted(monkeypatch):
    # a Ctrl-C (under monitored) in the first restart's first iteration ends the search: the
    # message says so (the CLI's exit status 130 reads it) and the first run's verdict stands
    from validation.solvers import searches as modes
    from validation.solvers.engine import decision

    inst = make_instance(3, 11, "dp", seed=4, generator=1)
    first = solve(inst, "optimal", options={"top_k": 5})
    runs = []
    run_search, iterate = modes._top_k_run, decision.DecisionRun.iterate

    def counted(search, k, W0):
        runs.append(search)
        return run_search(search, k, W0)

    def interrupt_in_restarts(self):
        if len(runs) > 1:
            raise KeyboardInterrupt
        return iterate(self)

    monkeypatch.setattr(modes, "_top_k_run", counted)
    monkeypatch.setattr(decision.DecisionRun, "iterate", interrupt_in_restarts)
    with decision.monitored(lambda state: None):
        sol = solve(inst, "optimal", options={"top_k": 5, "top_k_restarts": 8}, seed=0)
    assert len(runs) == 2 and sol.message.startswith("interrupted")
    assert sol.info["restarts_cut_short"] is True and sol.status == "not_found"
    assert sol.info["top_k_recalled"] >= first.info["top_k_recalled"]
