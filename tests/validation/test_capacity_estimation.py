"""Capacity estimation on a known-answer task, the logistic fit, and the CLI's bad input."""

import dataclasses
import json
import math

import numpy as np
import pytest

from replica.common.cliutil import dispatch
from validation.capacity import (
    CapacityDesign,
    CapacityOptions,
    CurvePoint,
    LogisticFit,
    SweepSettings,
    estimate_capacity,
    fit_logistic,
    load,
)
from validation.runtime.store import ResultStore

SYNTH = "validation.runtime.sweep:synthetic_trial"
MODULES = ["validation.cli.capacity", "validation.cli.compare", "validation.cli.export",
           "validation.cli.reproduce"]


def _synthetic(**solver_options) -> CapacityOptions:
    """Options of an estimate on the known-answer task: ``solver_options`` of ``synthetic_trial``."""
    return CapacityOptions(task_function=SYNTH, solver_options=solver_options)


def test_fit_recovers_exact_logistic_counts():
    # noiseless "counts" from the model itself: the MLE must return its parameters
    p = np.array([50, 70, 90, 110, 130, 160])
    prob = 1 / (1 + np.exp(6.0 * (np.log(p) - np.log(100.0))))
    n = np.full(p.size, 10_000)
    fit = fit_logistic(p, np.round(prob * n), n)
    assert fit.status == "ok"
    assert math.exp(fit.log_p_c) == pytest.approx(100.0, rel=2e-3)
    assert fit.slope == pytest.approx(6.0, rel=2e-2)
    assert fit.log_p_c_low < fit.log_p_c < fit.log_p_c_high


def test_fit_separated_counts_give_the_gap():
    fit = fit_logistic([40, 60, 80, 100], [10, 10, 0, 0], [10, 10, 10, 10])
    assert fit.status == "separated"
    assert 60 <= math.exp(fit.log_p_c) <= 80
    assert math.exp(fit.log_p_c_low) <= 61 and math.exp(fit.log_p_c_high) >= 79


def test_fit_unbracketed_is_flagged():
    fit = fit_logistic([40, 60], [10, 9], [10, 10])
    assert fit.status == "unbracketed"


def test_estimate_recovers_known_p_c_with_nominal_coverage():
    """Synthetic task with P(stored) = logistic(ln p; p_c = 100, slope = 8): coverage over 20 seeds.

    With a 95 % interval the number of misses in 20 independent runs is Binomial(20, 0.05)
    (P(misses >= 4) = 0.016); a biased estimator or too-narrow interval fails this.
    """
    misses, estimates = 0, []
    for seed in range(20):
        est = estimate_capacity(16, seed=seed, design=CapacityDesign(trials=15, rounds=2, center=70.0),
                                options=_synthetic(p_c=100.0, slope=8.0))
        assert est.status in ("ok", "separated")
        misses += not (est.p_c_low <= 100.0 <= est.p_c_high)
        estimates.append(est.p_c)
    assert misses <= 3
    assert abs(np.median(estimates) - 100.0) < 5.0


def test_estimate_counts_undecided_separately(tmp_path):
    undecided = tuple((p, t) for p in range(2, 400) for t in (0, 1))
    design = CapacityDesign(trials=6, rounds=1, center=100.0)
    options = _synthetic(p_c=100.0, slope=8.0, undecided_on=undecided)
    est = estimate_capacity(16, seed=3, design=design,
                            options=dataclasses.replace(options, store=ResultStore(tmp_path)))
    total = sum(c.trials for c in est.curve)
    assert est.undecided == sum(c.undecided for c in est.curve) > 0
    for c in est.curve:
        assert c.stored + c.not_stored + c.undecided + c.errors == c.trials
        assert c.undecided == 2 * (c.trials // 6)
    assert "undecided" in est.message and "WARNING" in est.message  # 1/3 excluded
    d = est.to_dict()
    assert set(d) >= {"d", "problem", "solver", "kappa", "ensemble", "p_c", "p_c_low", "p_c_high", "alpha",
                      "curve", "theory"}
    assert d["alpha"] == pytest.approx(load(16, est.p_c))
    assert sum(c["trials"] for c in d["curve"]) == total
    # rerun from the store: nothing recomputed, identical answer
    again = estimate_capacity(16, seed=3, design=design,
                              options=dataclasses.replace(options, store=ResultStore(tmp_path)))
    assert again.p_c == est.p_c and again.curve == est.curve


def _fisher_se(curve, p_c=100.0, slope=8.0):
    """Asymptotic standard error of ln p_c at the measured points under the known-answer model.

    The Fisher information of the location of a logistic in ln p is
    ``sum_i n_i slope^2 P_i (1 - P_i)`` (slope known); its inverse square root is the
    standard error of the maximum-likelihood ln p_c.
    """
    prob = [1 / (1 + math.exp(slope * (math.log(c.p) - math.log(p_c)))) for c in curve]
    info = sum(c.decided * slope ** 2 * q * (1 - q) for c, q in zip(curve, prob))
    return 1 / math.sqrt(info)


def _assert_near_known_p_c(est, p_c=100.0, slope=8.0):
    # 3 standard errors: P(|z| > 3) = 0.27 % for an unbiased, asymptotically normal estimate
    assert est.status in ("ok", "separated")
    assert abs(math.log(est.p_c / p_c)) < 3 * _fisher_se(est.curve, p_c, slope)
    assert min(c.p for c in est.curve) < p_c < max(c.p for c in est.curve)  # the points bracket p_c


def test_grid_expands_to_bracket():
    est = estimate_capacity(16, seed=0, design=CapacityDesign(trials=10, rounds=1, center=20.0),
                            options=_synthetic(p_c=100.0, slope=8.0))
    assert max(c.p for c in est.curve[:5]) < 30  # the initial grid around 20 is all stored ...
    _assert_near_known_p_c(est)  # ... and the expansion reached the threshold


def test_bracket_design_recovers_known_p_c_with_nominal_coverage():
    """Same known-answer check as above for design="bracket" (centre 8 % off, steep curve)."""
    misses, estimates = 0, []
    for seed in range(20):
        est = estimate_capacity(16, seed=seed, design=CapacityDesign(kind="bracket", trials=8, rounds=2, center=92.0),
                                options=_synthetic(p_c=100.0, slope=40.0))
        assert est.design == "bracket" and est.status in ("ok", "separated")
        misses += not (est.p_c_low <= 100.0 <= est.p_c_high)
        estimates.append(est.p_c)
        # the first point is the centre, and no point lies beyond 1.5 x p_c
        assert min(c.p for c in est.curve) >= 80 and max(c.p for c in est.curve) <= 150
    assert misses <= 3
    assert abs(np.median(estimates) - 100.0) < 2.0


@pytest.mark.parametrize("center", [20.0, 400.0])
def test_bracket_design_walks_to_a_far_threshold(center):
    est = estimate_capacity(16, seed=1, design=CapacityDesign(kind="bracket", trials=8, rounds=1, center=center),
                            options=_synthetic(p_c=100.0, slope=8.0))
    assert est.design == "bracket"
    _assert_near_known_p_c(est)


def test_design_auto_chooses_by_dimension():
    design = CapacityDesign(trials=2, rounds=0, center=100.0)
    options = _synthetic(p_c=100.0, slope=8.0)
    assert estimate_capacity(64, design=design, options=options).design == "grid"
    assert estimate_capacity(128, design=design, options=options).design == "bracket"
    with pytest.raises(ValueError, match="design"):
        estimate_capacity(64, design=dataclasses.replace(design, kind="wide"), options=options)


@pytest.mark.parametrize("argv, word", [
    (["capacity", "--d", "16", "--solver", "hebbian", "--trials", "0"], "trials"),
    (["capacity", "--d", "1", "--solver", "hebbian", "--trials", "3"], "d"),
    (["capacity", "--d", "16", "--solver", "magic", "--trials", "3"], "solver"),
    (["capacity", "--d", "16", "--problem", "xx", "--trials", "3"], "problem"),
    (["capacity", "--d", "16", "--kappa", "1.5", "--trials", "3"], "kappa"),
    (["capacity", "--d", "16", "--ensemble", "cube", "--trials", "3"], "ensemble"),
    (["capacity", "--d", "16", "--trials", "3", "--executor", "spark"], "executor"),
    (["capacity", "--d", "16", "--trials", "3", "--design", "wide"], "design"),
    (["compare", "--trials", "0"], "trials"),
    (["reproduce", "--workers", "-1"], "workers"),
    (["export", "--out", "/nonexistent/folder/x"], "does not exist"),
])
def test_cli_bad_input_exits_2(argv, word, capsys):
    assert dispatch("validation", "test", MODULES, argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and word in err


def test_cli_capacity_json_hebbian(capsys):
    code = dispatch("validation", "test", MODULES,
                    ["capacity", "--d", "12", "--solver", "hebbian", "--trials", "6", "--seed", "2",
                     "--rounds", "1", "--workers", "0", "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["solver"] == "hebbian" and out["d"] == 12
    assert set(out["theory"]) == {"p_c", "alpha", "alpha_c"} and out["theory"]["alpha_c"] == 0.125
    assert out["p_c_low"] <= out["p_c"] <= out["p_c_high"]
    assert all(set(c) >= {"p", "alpha", "trials", "stored"} for c in out["curve"])
    assert out["alpha"] == pytest.approx(out["p_c"] * math.log(out["p_c"]) / 144)


def test_export_round_trip(tmp_path, capsys):
    estimate_capacity(16, seed=1, design=CapacityDesign(trials=3, rounds=0, center=100.0),
                      options=CapacityOptions(task_function=SYNTH, store=ResultStore(tmp_path)))
    assert dispatch("validation", "test", MODULES, ["export", "--out", str(tmp_path)]) == 0
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert lines[0].startswith("experiment,") and len(lines) - 1 == ResultStore(tmp_path).summary().rows


def test_undecided_counted_as_not_stored_recovers_threshold():
    # A solver that can only certify "stored" (every failure is "undecided"): counting the
    # undecided trials as not stored gives exactly the estimate of the certifying solver on
    # the same seeds; excluding them leaves nothing on the failing side of the transition.
    from validation.capacity import estimate_capacity

    design = CapacityDesign(trials=12, rounds=1, center=90.0)
    plain = estimate_capacity(16, seed=3, design=design, options=_synthetic(p_c=100.0))
    undecided = _synthetic(p_c=100.0, undecided_when_not_stored=True)
    counted = estimate_capacity(16, seed=3, design=design,
                                options=dataclasses.replace(undecided, undecided_as_not_stored=True))
    excluded = estimate_capacity(16, seed=3, design=design,
                                 options=dataclasses.replace(undecided, undecided_as_not_stored=False))
    assert counted.p_c == pytest.approx(plain.p_c, rel=1e-12)
    assert counted.undecided > 0 and "lower bound" in counted.message
    assert excluded.status == "unbracketed" and not excluded.converged


def test_settings_objects_and_keywords_agree():
    # the deprecated flat keywords (tests/test_capacity_options.py: their warnings)
    common = dict(seed=4, task_function=SYNTH, solver_options={"p_c": 100.0, "slope": 8.0})
    design = CapacityDesign(kind="grid", trials=5, rounds=1, center=90.0, initial_points=3)
    by_objects = estimate_capacity(16, seed=4, design=design, options=_synthetic(p_c=100.0, slope=8.0))
    with pytest.warns(DeprecationWarning, match="is deprecated"):
        by_keywords = estimate_capacity(16, trials=5, rounds=1, center=90.0, initial_points=3, **common)
    with pytest.warns(DeprecationWarning, match="is deprecated"):
        by_sweep = estimate_capacity(16, design=design, sweep=SweepSettings(experiment="capacity"), **common)
    assert by_objects.curve == by_keywords.curve == by_sweep.curve
    assert by_objects.p_c == by_keywords.p_c == by_sweep.p_c
    with pytest.raises(TypeError, match="trails"):
        estimate_capacity(16, trails=5, **common)
    with pytest.raises(ValueError, match="max_expansions"), pytest.warns(DeprecationWarning):
        estimate_capacity(16, max_expansions=-1, **common)
    with pytest.raises(ValueError, match="max_expansions"):
        estimate_capacity(16, design=CapacityDesign(max_expansions=-1), options=_synthetic(p_c=100.0))


# ---------------------------------------------------------------------------------
# Result contract: JSON-safe to_dict and a documented status, failed cases included
# ---------------------------------------------------------------------------------
def _check_contract(result):
    assert result.status in type(result).STATUSES
    assert isinstance(result.converged, bool) and isinstance(result.message, str)
    return json.loads(json.dumps(result.to_dict(), allow_nan=False))


def test_logistic_fit_contract():
    ok = fit_logistic([50, 100, 200], [9, 5, 1], [10, 10, 10])
    assert ok.status == "ok" and ok.converged and ok.bracketed
    _check_contract(ok)
    failed = LogisticFit.with_status("failed")
    data = _check_contract(failed)
    assert not failed.converged and not failed.bracketed and data["log_p_c"] is None
    assert not fit_logistic([40, 60], [10, 9], [10, 10]).converged


def test_curve_point_contract():
    ok = CurvePoint.from_counts(16, 100, [3, 4, 1, 0, 8])
    assert ok.status == "ok" and ok.decided == 7 and ok.alpha == pytest.approx(load(16, 100))
    _check_contract(ok)
    empty = CurvePoint.from_counts(16, 100, [0, 0, 5, 3, 8])
    assert empty.status == "undecided" and not empty.converged
    _check_contract(empty)


def test_failed_capacity_estimate_is_json_safe():
    # every trial undecided: nothing to fit, p_c is NaN and to_dict must still be valid JSON
    undecided = tuple((p, t) for p in range(2, 2000) for t in range(3))
    est = estimate_capacity(16, seed=0, design=CapacityDesign(trials=3, rounds=1, center=100.0),
                            options=_synthetic(p_c=100.0, undecided_on=undecided))
    assert est.status == "failed" and not est.converged and math.isnan(est.p_c)
    assert "nothing to fit" in est.message
    data = _check_contract(est)
    assert data["p_c"] is None and data["alpha"] is None and data["theory"]["p_c"] is None
    ok = estimate_capacity(16, seed=0, design=CapacityDesign(trials=3, rounds=0, center=100.0),
                           options=_synthetic(p_c=100.0))
    _check_contract(ok)


# ---------------------------------------------------------------------------------
# --criterion accuracy:A
# ---------------------------------------------------------------------------------
def test_accuracy_criterion_counts_trials_by_recall_fraction(tmp_path):
    """Same instances (same seed) under both criteria: an accuracy-0.9 trial count is >= the all-stored one.

    Each trial is re-counted from its stored recall_fraction, so the accuracy-stored count at
    every p equals the number of store records with recall_fraction >= 0.9.
    """
    store = ResultStore(tmp_path / "s")
    design = CapacityDesign(kind="grid", trials=6, rounds=0)
    est_all = estimate_capacity(32, solver="hebbian", seed=3, design=design, options=CapacityOptions(store=store))
    est_acc = estimate_capacity(32, solver="hebbian", seed=3, design=design,
                                options=CapacityOptions(criterion="accuracy:0.9", store=store))
    rows = store.rows()
    for point in est_acc.curve:
        fractions = [r["result"]["recall_fraction"] for r in rows if r["p"] == point.p]
        assert point.stored == sum(f >= 0.9 for f in fractions)
        assert point.stored + point.not_stored == point.trials
    by_p = {c.p: c.stored for c in est_all.curve}
    assert all(c.stored >= by_p[c.p] for c in est_acc.curve if c.p in by_p)
    assert est_acc.criterion == "accuracy:0.9" and est_all.criterion == "all"
    assert est_acc.to_dict()["criterion"] == "accuracy:0.9"
    assert est_acc.theory["source"].startswith("replica.accuracy_capacity")
    assert "exact for the Hebbian memory" in est_acc.message
    store.close()


def test_accuracy_criterion_is_a_lower_bound_for_the_optimal_solver():
    est = estimate_capacity(8, solver="optimal", seed=0, design=CapacityDesign(trials=3, rounds=0),
                            options=CapacityOptions(criterion="accuracy:0.9"))
    assert "LOWER BOUND" in est.message
    json.dumps(est.to_dict(), allow_nan=False)


def test_bad_criterion_is_a_value_error():
    with pytest.raises(ValueError, match="accuracy:A"):
        estimate_capacity(16, solver="hebbian", options=CapacityOptions(criterion="accuracy:2"))


@pytest.mark.parametrize("criterion", ["accuracy:0", "accuracy:1.01", "most", "accuracy:"])
def test_cli_bad_criterion_exits_2(criterion, capsys):
    argv = ["capacity", "--d", "16", "--solver", "hebbian", "--workers", "0", "--criterion", criterion]
    assert dispatch("validation", "test", MODULES, argv) == 2
    err = capsys.readouterr().err
    assert "accuracy:A" in err and len(err.strip().splitlines()) == 1


def test_cli_accuracy_criterion_json(capsys):
    argv = ["capacity", "--d", "16", "--solver", "hebbian", "--ensemble", "sphere", "--trials", "4",
            "--rounds", "0", "--workers", "0", "--criterion", "accuracy:0.9", "--format", "json"]
    assert dispatch("validation", "test", MODULES, argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["criterion"] == "accuracy:0.9" and "accuracy criterion" in out["message"]


def test_separation_bracket_is_the_pair_of_loads_around_the_jump():
    from validation.capacity.fit import interval_text, separation_bracket

    curve = [{"p": 10, "stored": 4, "not_stored": 0}, {"p": 12, "stored": 4, "not_stored": 0},
             {"p": 15, "stored": 0, "not_stored": 4}, {"p": 18, "stored": 0, "not_stored": 4}]
    assert separation_bracket(curve) == (12.0, 15.0)
    # a point in the transition: no clean jump above the last all-stored load
    transition = [{"p": 10, "stored": 4, "not_stored": 0}, {"p": 12, "stored": 2, "not_stored": 2}]
    assert separation_bracket(transition) is None
    assert separation_bracket([{"p": 10, "stored": 0, "not_stored": 4}]) is None
    assert interval_text(13.4, 12.0, 15.0, "separated") == "between 12.0 and 15.0 (bracket)"
    assert interval_text(13.4, 12.9, 14.0, "ok") == "13.4 [12.9, 14.0] (95 % PL)"


def test_cli_summary_calls_a_separated_fit_a_bracket():
    from types import SimpleNamespace

    from validation.cli.capacity import _measured

    curve = [SimpleNamespace(p=20295, stored=4, not_stored=0), SimpleNamespace(p=20499, stored=0, not_stored=4)]
    est = SimpleNamespace(status="separated", curve=curve, p_c=20396.74, alpha=0.7721, p_c_low=20292.6,
                          p_c_high=20501.4, alpha_low=0.7678, alpha_high=0.7765)
    text = _measured(est)
    assert "between p = 20295 (all stored) and 20499 (none stored)" in text and "95%" not in text
    assert "95% PL [20292.60, 20501.40]" in _measured(SimpleNamespace(**{**vars(est), "status": "ok"}))
