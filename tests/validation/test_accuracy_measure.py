"""Measured recall accuracy (validation.measurements.accuracy), the capacity criterion parser, the accuracy CLI."""

import csv
import io
import json
import math

import pytest

import replica
from validation.measurements.accuracy import AccuracyCurve, AccuracyPoint, loads_from_alpha, measure_accuracy
from validation.capacity import parse_criterion
from validation.cli import main


@pytest.fixture(scope="module")
def sphere_d32():
    # 30 instances at alpha = 1/8, 1/2, 1 (p = 36, 109, 194) with the package default seed
    return measure_accuracy(32, loads_from_alpha(32, [0.125, 0.5, 1.0]), ensemble="sphere", trials=30)


def test_loads_from_alpha_inverts_the_load():
    ps = loads_from_alpha(64, [0.125, 0.5, 1.0])
    assert ps == [109, 350, 635]  # the p of the notes/recall_accuracy.md table, section 3
    for a, p in zip([0.125, 0.5, 1.0], ps):
        assert abs(p * math.log(p) / 64**2 - a) < (math.log(p) + 1) / 64**2  # nearest integer p


@pytest.mark.parametrize("ensemble", ["gaussian", "sphere"])
def test_measured_hebbian_accuracy_matches_theory(ensemble):
    """Mean over 30 instances within 4 between-instance standard errors of replica.hebbian_accuracy.

    The reference is the exact finite-size expectation 1 - f(d, p) (notes/recall_accuracy.md,
    section 2); 4 s.e. at 3 loads gives a false-failure probability below 1e-3 (the model's
    known bias, about 0.002 in A, is under 1 s.e. here).
    """
    curve = measure_accuracy(32, [36, 109, 194], ensemble=ensemble, trials=30, seed=7)
    assert curve.status == "ok" and curve.converged
    for pt in curve.points:
        assert pt.status == "ok" and pt.bound == "exact"
        assert pt.theory == pytest.approx(replica.hebbian_accuracy(32, pt.p, ensemble), abs=0)
        assert abs(pt.accuracy - pt.theory) <= 4 * pt.stderr, pt
        assert pt.ci_low < pt.accuracy < pt.ci_high


def test_the_tolerance_separates_the_two_ensembles(sphere_d32):
    # negative control: at alpha = 1/8 the Gaussian theory (0.8658) is far outside the sphere interval
    pt = sphere_d32.points[0]
    assert pt.theory_inside
    wrong = float(replica.hebbian_accuracy(32, pt.p, "gaussian"))
    assert abs(pt.accuracy - wrong) > 4 * pt.stderr


def test_interval_is_a_t_interval(sphere_d32):
    from scipy import stats

    pt = sphere_d32.points[1]
    half = stats.t.ppf(0.975, pt.trials - 1) * pt.stderr
    assert pt.ci_low == pytest.approx(pt.accuracy - half) and pt.ci_high == pytest.approx(pt.accuracy + half)


def test_zero_spread_is_degenerate_with_a_wilson_interval():
    # d = 16, p = 20 < p_c(16) = 61.6: every optimal solve stores all inputs
    curve = measure_accuracy(16, [20], solver="optimal", trials=3, seed=1)
    pt = curve.points[0]
    assert (pt.status, pt.accuracy, pt.bound, pt.ci_high) == ("degenerate", 1.0, "exact", 1.0)
    assert 0.9 < pt.ci_low < 1.0
    assert curve.status == "ok" and "replica-symmetric" in curve.theory_source


def test_optimal_above_capacity_is_a_lower_bound():
    curve = measure_accuracy(16, [120], solver="optimal", trials=2, seed=1)
    assert curve.status == "lower_bound" and "lower bound" in curve.message
    assert curve.points[0].bound == "lower_bound" and "lower bound" in curve.measures


def test_result_contract_on_normal_and_failed_results(sphere_d32):
    # every trial fails (unknown solver option): points and curve are "failed", JSON strict
    failed = measure_accuracy(8, [5, 9], trials=2, solver_options={"bogus": 1})
    assert failed.status == "failed" and not failed.converged
    for r in (sphere_d32, failed, *sphere_d32.points, *failed.points):
        json.dumps(r.to_dict(), allow_nan=False)
        assert r.status in type(r).STATUSES
    assert all(pt.status == "failed" and pt.errors == 2 for pt in failed.points)
    assert failed.to_dict()["points"][0]["accuracy"] is None
    with pytest.raises(ValueError, match="status"):
        AccuracyPoint(5, 0.1, 2, 0, 0, 0.5, 0.1, 0.3, 0.7, 0.5, 0.0, 0.0, "exact", "bogus", True, "")
    assert AccuracyCurve.STATUSES == ("ok", "lower_bound", "failed")


def test_from_dict_reads_a_saved_curve_back(sphere_d32):
    # through JSON text, as the experiment scripts save and re-read their curves; NaN survives as NaN
    failed = measure_accuracy(8, [5, 9], trials=2, solver_options={"bogus": 1})
    for curve in (sphere_d32, failed):
        back = AccuracyCurve.from_dict(json.loads(json.dumps(curve.to_dict())))
        assert back.to_dict() == curve.to_dict()
        assert [pt.theory_inside for pt in back.points] == [pt.theory_inside for pt in curve.points]
    assert math.isnan(AccuracyCurve.from_dict(failed.to_dict()).points[0].accuracy)
    assert sphere_d32.points[0].accuracy == AccuracyCurve.from_dict(sphere_d32.to_dict()).points[0].accuracy


@pytest.mark.parametrize("bad", [dict(loads=[1]), dict(loads=[]), dict(trials=1), dict(solver="sgd"),
                                 dict(kappa=0.0), dict(ensemble="cube")])
def test_bad_arguments_raise(bad):
    args = dict(d=8, loads=[5], trials=2) | bad
    with pytest.raises(ValueError):
        measure_accuracy(args.pop("d"), args.pop("loads"), **args)


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="bogus"):
        measure_accuracy(8, [5], bogus=1)


# ---------------------------------------------------------------------------------
# --criterion parser
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text, value", [("all", None), ("accuracy:0.99", 0.99), ("accuracy:1", 1.0),
                                         (" accuracy:0.5 ", 0.5)])
def test_parse_criterion(text, value):
    assert parse_criterion(text) == value


@pytest.mark.parametrize("text", ["accuracy:0", "accuracy:1.5", "accuracy:-0.1", "accuracy:nan", "accuracy:x",
                                  "accuracy", "acc:0.9", "", "ALL", "accuracy:0.9:1"])
def test_parse_criterion_rejects(text):
    with pytest.raises(ValueError, match=r"'all' or 'accuracy:A' with A in \(0, 1\]"):
        parse_criterion(text)


# ---------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------
_BASE = ["accuracy", "--d", "16", "--alpha", "0.125", "0.5", "--trials", "3", "--workers", "0", "--seed", "5"]


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_cli_formats(fmt, capsys):
    assert main(_BASE + ["--ensemble", "gaussian", "sphere", "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        curves = json.loads(out, parse_constant=lambda name: pytest.fail(f"JSON has {name}"))
        assert [c["ensemble"] for c in curves] == ["gaussian", "sphere"]
        assert curves[0]["seed"] == 5 and len(curves[0]["points"]) == 2
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == 4 and {"accuracy", "ci_low", "ci_high", "theory", "bound"} <= set(rows[0])
    else:
        assert "replica.hebbian_accuracy" in out and "seed=5" in out and "theory_inside" in out


def test_cli_loads_give_the_same_rows_as_alpha(capsys):
    assert main(["accuracy", "--d", "16", "--loads", *map(str, loads_from_alpha(16, [0.125, 0.5])),
                 "--trials", "3", "--workers", "0", "--seed", "5", "--format", "csv"]) == 0
    by_loads = capsys.readouterr().out
    assert main(_BASE + ["--format", "csv"]) == 0
    assert capsys.readouterr().out == by_loads


@pytest.mark.parametrize("extra", [["--d", "16", "--loads", "1"], ["--d", "16", "--alpha", "-1"],
                                   ["--d", "1", "--loads", "5"], ["--d", "16", "--loads", "5", "--trials", "1"],
                                   ["--d", "16", "--loads", "5", "--alpha", "0.5"], ["--d", "16"],
                                   ["--d", "16", "--loads", "5", "--kappa", "2"]])
def test_cli_bad_input_exits_2_with_one_line(extra, capsys):
    assert main(["accuracy", "--workers", "0", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err and len(err.splitlines()) == 1 and "Traceback" not in err
