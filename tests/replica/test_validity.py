"""The validity record: verdicts read from a validity table, the rule of one point, the warning of ``off``.

The tables here are small hand-made ones (a tmp file), so every branch of the lookup is
exercised against a known answer; the shipped table is tested in
``tests/test_experiments.py`` (it is what the committed data give).
"""

from __future__ import annotations

import json
import math
import warnings

import pytest

from replica.common.validity import (MESSAGE_LIMIT, TheoryOffWarning, Validity, point_verdict, validity,
                                     validity_table, warn_if_off)

FIXED = {"problem": "dp", "kappa": 1.0, "margin": 0.0, "top_k": 1, "outputs": None, "ensemble": "gaussian",
         "ratio": 1.0}


def _table(tmp_path, points, tolerance=0.02, fixed=FIXED, model="finite_size"):
    table = {"quantities": {"capacity": {"error_kind": "relative", "models": {model: {"tolerance": tolerance,
             "regimes": [{"label": "optimal memory, DP, full rank", "fixed": fixed,
                          "range": {"d": [min(p["d"] for p in points), max(p["d"] for p in points)]},
                          "tolerance": tolerance, "points": points}]}}}}}
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    return path


def _point(d, error, verdict, trials=40, experiment="experiments/capacity"):
    return {"d": d, "theory": 100.0 * (1 + error), "measured": 100.0, "low": 99.0, "high": 101.0,
            "measured_text": "100.0 [99.0, 101.0] (95 % PL)", "trials": trials, "error": error, "verdict": verdict,
            "experiment": experiment, "kind": "interval"}


def test_a_call_inside_the_measured_range_takes_the_verdict_of_its_nearest_point(tmp_path):
    path = _table(tmp_path, [_point(16, 0.05, "off", 96), _point(64, -0.002, "checked", 96),
                             _point(256, 0.001, "checked", 12)])
    near_16 = validity("capacity", model="finite_size", table=path, d=24)  # log-nearer to 16 than to 64
    assert (near_16.verdict, near_16.error, near_16.sample_size) == ("off", 0.05, 96)
    assert near_16.distance == pytest.approx(math.log(24 / 16))
    near_64 = validity("capacity", model="finite_size", table=path, d=40)
    assert near_64.verdict == "checked" and near_64.measured_at == {"d": 64}
    assert near_64.experiment == "experiments/capacity" and near_64.tolerance == 0.02
    assert near_64.model == "finite_size" and near_64.prediction == "capacity"


def test_two_measurements_at_one_point_off_wins(tmp_path):
    path = _table(tmp_path, [_point(64, 0.001, "checked", 96), _point(64, 0.05, "off", 8, "experiments/op_vs_dp")])
    record = validity("capacity", model="finite_size", table=path, d=64)
    assert record.verdict == "off" and record.experiment == "experiments/op_vs_dp" and record.sample_size == 8


def test_outside_the_range_or_another_regime_is_unchecked_and_names_the_nearest_point(tmp_path):
    path = _table(tmp_path, [_point(64, 0.0, "checked"), _point(256, 0.0, "checked")])
    far = validity("capacity", model="finite_size", table=path, d=4096)
    assert far.verdict == "unchecked" and far.measured_at == {"d": 256}
    assert far.distance == pytest.approx(math.log(16))
    assert validity("capacity", model="finite_size", table=path, d=32).verdict == "unchecked"
    other = validity("capacity", model="finite_size", table=path, d=128, problem="op")
    assert other.verdict == "unchecked" and other.error is None and "no certified measurement" in other.message
    assert validity("no_such_prediction", table=path, d=128).verdict == "unchecked"


def test_every_message_is_short(tmp_path):
    path = _table(tmp_path, [_point(16, 0.05, "off", 96), _point(64, -0.002, "checked", 96)])
    for d in (8, 16, 24, 64, 10**6):
        for problem in ("dp", "op"):
            record = validity("capacity", model="finite_size", table=path, d=d, problem=problem)
            assert 0 < len(record.message) <= MESSAGE_LIMIT, record.message
    # the shipped table: every measured point of every model, and far outside
    import replica

    for kwargs in ({"d": 64}, {"d": 16, "problem": "op"}, {"d": 4096}, {"d": 32, "d_out": 8},
                   {"d": 64, "ensemble": "sphere"}, {"d": 3, "top_k": 2}):
        assert len(replica.validity("capacity", **kwargs).message) <= MESSAGE_LIMIT


def test_an_off_verdict_warns_with_a_filterable_category(tmp_path):
    path = _table(tmp_path, [_point(32, 0.54, "off")], tolerance=0.08)
    record = validity("capacity", model="finite_size", table=path, d=32)
    with pytest.warns(TheoryOffWarning, match=r"\+54.0 %"):
        warn_if_off(record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", TheoryOffWarning)
        warn_if_off(record)  # filtered: no error
    checked = validity("capacity", model="finite_size", table=_table(tmp_path, [_point(32, 0.0, "checked")]), d=32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_off(checked)  # a checked verdict does not warn


def test_the_record_is_json_safe_and_says_its_verdict(tmp_path):
    record = validity("capacity", model="finite_size", table=_table(tmp_path, [_point(64, -0.002, "checked")]), d=64)
    out = json.loads(json.dumps(record.to_dict(), allow_nan=False))
    assert out["verdict"] == "checked" and out["sample_size"] == 40 and out["measured_at"] == {"d": 64}
    assert record.summary() == "checked (-0.2 %)"
    with pytest.raises(ValueError, match="verdict"):
        Validity("fine", "capacity")


# --- the rule of one point (closed forms: the band of a relative tolerance t around theory T is
# [T / (1 + t), T / (1 - t)] in the measured value) ---------------------------------------------

def test_checked_only_when_the_whole_interval_lies_within_the_tolerance():
    # the two examples of a wide measurement: a 6 % bracket against 2 %, an interval of +-20 % against 8 %
    assert point_verdict(564.2, "bracket", None, 564.0, 598.0, 0.02) == (0.0, "unchecked")
    error, verdict = point_verdict(6.5, "interval", 6.1, 4.6, 7.3, 0.08)
    assert verdict == "unchecked" and error == pytest.approx(6.5 / 6.1 - 1)
    assert point_verdict(100.0, "interval", 100.5, 99.0, 101.5, 0.02)[1] == "checked"
    assert point_verdict(100.0, "interval", 100.5, 99.0, 102.5, 0.02)[1] == "unchecked"  # 102.5 > 100 / 0.98


def test_off_when_outside_the_interval_and_beyond_the_tolerance():
    error, verdict = point_verdict(130.0, "interval", 100.0, 98.0, 102.0, 0.08)
    assert verdict == "off" and error == pytest.approx(0.3)
    assert point_verdict(101.0, "interval", 110.0, 101.5, 120.0, 0.08)[1] == "off"  # -8.2 %, outside
    assert point_verdict(104.0, "interval", 110.0, 100.0, 120.0, 0.08)[1] == "unchecked"  # inside the interval
    error, verdict = point_verdict(50.0, "bracket", None, 60.0, 70.0, 0.05)
    assert verdict == "off" and error == pytest.approx(50 / 60 - 1)  # to the nearer end


def test_bounds_never_check():
    assert point_verdict(100.0, "lower_bound", 105.0, 105.0, None, 0.02)[1] == "off"  # theory 4.8 % below a bound
    assert point_verdict(100.0, "lower_bound", 101.0, 101.0, None, 0.02)[1] == "unchecked"
    assert point_verdict(100.0, "lower_bound", 90.0, 90.0, None, 0.02)[1] == "unchecked"
    assert point_verdict(100.0, "upper_bound", 90.0, None, 90.0, 0.02)[1] == "off"


def test_the_theory_standard_error_widens_the_measured_interval():
    # the theory's 95 % interval (1.96 s.e.) in quadrature about the point: 100.5 - hypot(1.5, 1.96) = 98.03 lies
    # below the band's lower end 100 / 1.02 = 98.04, so a check that held without it no longer does
    assert point_verdict(100.0, "interval", 100.5, 99.0, 101.5, 0.02, theory_stderr=0.0)[1] == "checked"
    assert point_verdict(100.0, "interval", 100.5, 99.0, 101.5, 0.02, theory_stderr=1.0)[1] == "unchecked"
    # +6 % against 5 %: off while 106 lies outside 100 + hypot(1, 1.96 s), i.e. up to s = 3.0; then unchecked
    assert point_verdict(106.0, "interval", 100.0, 99.0, 101.0, 0.05, theory_stderr=2.9)[1] == "off"
    error, verdict = point_verdict(106.0, "interval", 100.0, 99.0, 101.0, 0.05, theory_stderr=3.1)
    assert verdict == "unchecked" and error == pytest.approx(0.06)   # the error stays against the point
    # against a bound the theory moves towards it by 1.96 s.e.: 101.96 / 105 - 1 = -2.9 % (still off);
    # 103.92 / 105 - 1 = -1.03 % (unchecked); the error stays that of the theory itself
    assert point_verdict(100.0, "lower_bound", 105.0, 105.0, None, 0.02, theory_stderr=1.0)[1] == "off"
    error, verdict = point_verdict(100.0, "lower_bound", 105.0, 105.0, None, 0.02, theory_stderr=2.0)
    assert verdict == "unchecked" and error == pytest.approx(100 / 105 - 1)
    # upper bound 100, tolerance 5 %: s.e. 2 moves 110 to 106.08, +6.1 % (off); s.e. 3 to 104.12, +4.1 % (unchecked)
    assert point_verdict(110.0, "upper_bound", 100.0, None, 100.0, 0.05, theory_stderr=2.0)[1] == "off"
    assert point_verdict(110.0, "upper_bound", 100.0, None, 100.0, 0.05, theory_stderr=3.0)[1] == "unchecked"
    # a large error never pushes a relative bound through zero into "off"
    assert point_verdict(0.99, "lower_bound", 1.0, 1.0, None, 0.05, theory_stderr=1.0)[1] == "unchecked"
    # an unknown error (inf) decides nothing; NaN, negative or non-numbers are refused
    assert point_verdict(130.0, "interval", 100.0, 98.0, 102.0, 0.08, theory_stderr=math.inf)[1] == "unchecked"
    assert point_verdict(0.5, "lower_bound", 1.0, 1.0, None, 0.05, theory_stderr=math.inf)[1] == "unchecked"
    for bad in (math.nan, -1.0, "1", True, None):
        with pytest.raises(ValueError, match="theory_stderr"):
            point_verdict(1.0, "interval", 1.0, 0.99, 1.01, 0.05, theory_stderr=bad)
    # a bracket's ends move outwards: [0.054 - 0.0196, 0.066 + 0.0196] still leaves 0.02 off by 0.0144 < 0.03
    assert point_verdict(0.02, "bracket", None, 0.054, 0.066, 0.03, "absolute", 0.01)[1] == "unchecked"
    assert point_verdict(0.02, "bracket", None, 0.054, 0.066, 0.03, "absolute", 0.001)[1] == "off"


def test_absolute_errors_and_ks_distances():
    assert point_verdict(0.50, "bracket", None, 0.49, 0.51, 0.03, "absolute")[1] == "checked"
    assert point_verdict(0.50, "bracket", None, 0.45, 0.55, 0.03, "absolute")[1] == "unchecked"
    error, verdict = point_verdict(0.02, "bracket", None, 0.054, 0.066, 0.03, "absolute")
    assert verdict == "off" and error == pytest.approx(-0.034)
    assert point_verdict(None, "ks", 0.03, 0.02, 0.045, 0.05)[1] == "checked"
    assert point_verdict(None, "ks", 0.09, 0.07, 0.11, 0.05) == (0.09, "off")
    assert point_verdict(None, "ks", 0.05, 0.04, 0.06, 0.05)[1] == "unchecked"
    with pytest.raises(ValueError, match="kind"):
        point_verdict(1.0, "estimate", 1.0, 1.0, 1.0, 0.1)


def test_the_shipped_table_names_a_tolerance_and_an_experiment_for_every_point():
    table = validity_table()
    assert table["coverage"]
    for name, entry in table["quantities"].items():
        assert entry["error_kind"] in ("relative", "absolute"), name
        for model, m in entry["models"].items():
            for regime in m["regimes"]:
                assert regime["tolerance"] > 0, (name, model)
                for point in regime["points"]:
                    assert point["verdict"] in ("checked", "off", "unchecked")
                    assert point["trials"] > 0 and point["experiment"].startswith("experiments/")
