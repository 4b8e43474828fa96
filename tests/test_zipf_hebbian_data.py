"""The committed Hebbian Zipf measurement (experiments/zipf/zipf_hebbian) and its scoreboard points.

Reference: the committed data ``experiments/zipf/zipf_hebbian.json``; one of its records is
measured again from scratch (the same seed, the first ``RECOMPUTE`` instances of the
committed run) with ``validation.measurements.zipf.measure_zipf``, and the two means must agree within
5 standard errors of their difference.
"""

import importlib
import math
from pathlib import Path

import pytest

from experiments import pages

ROOT = Path(__file__).resolve().parents[1]
POINT_KEYS = {"quantity", "experiment", "regime", "params", "kind", "measured", "low", "high", "trials",
              "measured_text", "error_kind"}
RECOMPUTE = 30


@pytest.fixture(scope="module")
def script():
    return importlib.import_module("experiments.zipf.zipf_hebbian")


def test_every_record_is_a_point_of_the_contract(script):
    data = script.read_data()
    points = script.zipf_hebbian_points()
    grid = {(d, a, e, w) for d in script.DIMENSIONS for a in script.EXPONENTS for e in script.ENSEMBLES
            for w in (None, "frequency")}
    assert len(points) == len(data["records"]) == len(grid)
    assert {(r["d"], r["a"], r["ensemble"], r["weights"]) for r in data["records"]} == grid
    for r, p in zip(data["records"], points):
        assert set(p) == POINT_KEYS
        assert p["quantity"] == "zipf_error" and p["experiment"] == "experiments/zipf"
        assert p["kind"] == "interval" and p["error_kind"] == "absolute"
        assert p["low"] <= p["measured"] <= p["high"]
        assert p["trials"] >= 200 and p["trials"] == r["instances"]
        assert p["measured"] == r["mean"]
        half = 1.96 * r["stderr"]
        assert p["low"] == pytest.approx(r["mean"] - half, abs=1e-4)
        assert p["high"] == pytest.approx(r["mean"] + half, abs=1e-4)
        expected = {"d": r["d"], "N": 1000, "a": r["a"], "memory": "hebbian", "problem": r["problem"]}
        if r["weights"] is not None:
            expected["weights"] = "frequency"
        if r["ensemble"] != "gaussian":
            expected["ensemble"] = r["ensemble"]
        assert p["params"] == expected
        assert p["regime"].startswith("Hebbian memory, N = 1000, ")
        assert p["measured_text"] == (f"{p['measured']:.3f} [{p['low']:.3f}, {p['high']:.3f}] "
                                      f"(mean, 95 % normal interval, n = {p['trials']})")
    assert data["problem"] == "op" and isinstance(data["seed"], int)


def test_the_committed_page_is_what_the_data_give(script):
    from experiments.provenance import read_record

    data, record = script.with_current_theory(script.read_data()), read_record(script.PROVENANCE)
    committed = pages.read_block((ROOT / "experiments" / "zipf" / "README.md").read_text(), "zipf_hebbian")
    assert committed == "\n".join(script.page_block(data, record)).strip("\n")
    data["records"][0]["mean"] += 0.1  # negative control: a changed mean changes the page
    assert committed != "\n".join(script.page_block(data, record)).strip("\n")


def test_a_record_measured_again_agrees(script):
    data = script.read_data()
    (committed,) = [r for r in data["records"]
                    if (r["d"], r["a"], r["ensemble"], r["weights"]) == (32, 2.0, "gaussian", "frequency")]
    again = {r["solver"]: r for r in script.measure_cell(32, 2.0, "gaussian", instances=RECOMPUTE,
                                                          seed=data["seed"])}
    fresh = again["hebbian_frequency"]
    assert fresh["instances"] == RECOMPUTE
    se = math.hypot(fresh["stderr"], committed["stderr"])
    assert abs(fresh["mean"] - committed["mean"]) <= 5 * se
