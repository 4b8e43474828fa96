"""The validity record: verdicts read from a validity table, the warning of an ``off`` verdict.

The tables here are small hand-made ones (a tmp file), so every branch of the lookup is
exercised against a known answer; the shipped table is tested in
``tests/test_experiments.py`` (it is what the committed data give).
"""

from __future__ import annotations

import json
import warnings

import pytest

from replica.common.validity import TheoryOffWarning, Validity, validity, validity_table, warn_if_off


def _table(tmp_path, points, tolerance=0.02, kind="relative"):
    table = {"predictions": {"capacity": {"error_kind": kind, "regimes": [{
        "label": "optimal memory, DP, full rank", "experiment": "experiments/capacity",
        "match": {"problem": "dp", "kappa": 1.0},
        "range": {"d": [min(p["d"] for p in points), max(p["d"] for p in points)]},
        "tolerance": tolerance, "points": points}]}}}
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    return path


def _point(d, error, verdict, trials=40):
    return {"d": d, "theory": 100.0 * (1 + error), "measured": 100.0, "low": 99.0, "high": 101.0,
            "measured_text": "100.0 [99.0, 101.0] (95 % PL)", "trials": trials, "error": error, "verdict": verdict}


def test_a_call_inside_the_measured_range_takes_the_verdict_of_its_nearest_point(tmp_path):
    path = _table(tmp_path, [_point(16, 0.05, "off", 96), _point(64, -0.002, "checked", 96),
                             _point(256, 0.001, "checked", 12)])
    near_16 = validity("capacity", table=path, d=24, problem="dp", kappa=1.0)  # log-nearer to 16 than to 64
    assert (near_16.verdict, near_16.error, near_16.sample_size) == ("off", 0.05, 96)
    near_64 = validity("capacity", table=path, d=40, problem="dp", kappa=1.0)
    assert near_64.verdict == "checked" and near_64.measured_at == {"d": 64}
    assert near_64.experiment == "experiments/capacity" and near_64.tolerance == 0.02


def test_outside_the_range_or_another_regime_is_unchecked(tmp_path):
    path = _table(tmp_path, [_point(64, 0.0, "checked"), _point(256, 0.0, "checked")])
    assert validity("capacity", table=path, d=4096, problem="dp", kappa=1.0).verdict == "unchecked"
    assert validity("capacity", table=path, d=32, problem="dp", kappa=1.0).verdict == "unchecked"
    other = validity("capacity", table=path, d=128, problem="op", kappa=1.0)
    assert other.verdict == "unchecked" and other.error is None and "outside every regime" in other.message
    assert validity("no_such_prediction", table=path, d=128).verdict == "unchecked"


def test_an_off_verdict_warns_with_a_filterable_category(tmp_path):
    path = _table(tmp_path, [_point(32, 0.54, "off")], tolerance=0.08)
    record = validity("capacity", table=path, d=32, problem="dp", kappa=1.0)
    with pytest.warns(TheoryOffWarning, match=r"\+54.0 %"):
        warn_if_off(record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", TheoryOffWarning)
        warn_if_off(record)  # filtered: no error
    checked = validity("capacity", table=_table(tmp_path, [_point(32, 0.0, "checked")]), d=32, problem="dp",
                       kappa=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_off(checked)  # a checked verdict does not warn


def test_the_record_is_json_safe_and_says_its_verdict(tmp_path):
    record = validity("capacity", table=_table(tmp_path, [_point(64, -0.002, "checked")]), d=64, problem="dp",
                      kappa=1.0)
    out = json.loads(json.dumps(record.to_dict(), allow_nan=False))
    assert out["verdict"] == "checked" and out["sample_size"] == 40 and out["measured_at"] == {"d": 64}
    assert record.summary() == "checked (-0.2 %)"
    with pytest.raises(ValueError, match="verdict"):
        Validity("fine", "capacity")


def test_the_shipped_table_names_a_tolerance_and_an_experiment_for_every_regime():
    table = validity_table()
    for name, entry in table["predictions"].items():
        assert entry["error_kind"] in ("relative", "absolute"), name
        for regime in entry["regimes"]:
            assert regime["tolerance"] > 0 and regime["experiment"].startswith("experiments/"), name
            for point in regime["points"]:
                assert point["verdict"] in ("checked", "off", "unchecked")
                assert point["trials"] > 0
