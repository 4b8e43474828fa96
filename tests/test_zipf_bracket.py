"""The Zipf bracket (experiments/zipf/zipf_bracket) and the verdict the scoreboard reads from it.

Reference: the committed per-instance data ``experiments/zipf/zipf_bracket.csv``; the
negative controls move the brackets in a copy of it and the verdict must follow the rule
of ``replica.common.validity.point_verdict`` (a bracket within 0.03 of the theory: checked;
more than 0.03 outside: off; a wider bracket that holds the theory within 0.03: unchecked),
for the default model of these points, ``hull_knapsack``.
"""

import csv
import importlib
import shutil
import warnings
from pathlib import Path

import pytest

import replica
from experiments import pages

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "experiments" / "zipf" / "zipf_bracket.csv"


def _verdicts(measurements):
    scoreboard = importlib.import_module("experiments.scoreboard.scoreboard")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", replica.TheoryOffWarning)
        table = scoreboard.build(measurements.zipf_bracket(), only={"hull_knapsack"})
    (regime,) = table["quantities"]["zipf_error"]["models"]["hull_knapsack"]["regimes"]
    return {(p["d"], p["N"], p["a"]): (p["verdict"], p["error"], p["low"], p["high"], p["theory"])
            for p in regime["points"]}


def test_the_committed_page_is_what_the_data_give():
    bracket = importlib.import_module("experiments.zipf.zipf_bracket")
    from experiments.provenance import read_record

    rows = bracket.read_rows()
    committed = pages.read_block((ROOT / "experiments" / "zipf" / "README.md").read_text(), "zipf_bracket")
    seconds = read_record(bracket.PROVENANCE)["wall_time_s"]
    assert committed == "\n".join(bracket.page_block(rows, seconds)).strip("\n")
    rows[0]["upper_mass"] -= 0.1  # negative control: a changed bound changes the page
    assert committed != "\n".join(bracket.page_block(rows, seconds)).strip("\n")


def test_the_bracket_is_the_mean_of_the_instances():
    bracket = importlib.import_module("experiments.zipf.zipf_bracket")
    rows = bracket.read_rows()
    for c in bracket.case_summaries(rows):
        at = [r for r in rows if (r["d"], r["N"], r["a"]) == (c["d"], c["N"], c["a"])]
        assert c["instances"] == len(at) == bracket.INSTANCES
        assert c["low"] == pytest.approx(sum(1 - r["upper_mass"] for r in at) / len(at), abs=1e-12)
        assert c["high"] == pytest.approx(sum(1 - r["lower_mass"] for r in at) / len(at), abs=1e-12)
        assert all(r["lower_mass"] <= r["upper_mass"] for r in at)  # certified: never crossed
        # the best W of any box recalls at least the search's W and the best W of the box
        assert all(r["any_mass"] >= max(r["search_mass"], r["lower_mass"]) - 1e-12 for r in at)
        # the hull control variate: each instance's non-vertex mass at the counted mean fraction
        counted = sum(r["nonvertex_count"] for r in at) / (len(at) * c["N"])
        assert c["counted"] == pytest.approx(counted, abs=1e-12)
        lost = sum(r["nonvertex_mass"] for r in at) / len(at)
        floor = sum(max(1 - r["upper_mass"], r["nonvertex_mass"]) for r in at) / len(at)
        assert c["cv_low"] == pytest.approx(floor - lost + counted, abs=1e-12)
        assert c["cv_high"] == pytest.approx(c["high"] - lost + counted, abs=1e-12)
        # a non-vertex fact is never recalled: every found memory leaves it out
        assert all(r["lower_mass"] <= 1 - r["nonvertex_mass"] + 1e-9 for r in at)


def test_a_moved_bracket_changes_the_verdict(tmp_path, monkeypatch):
    from replica.common.validity import point_verdict

    measurements = importlib.import_module("experiments.scoreboard.measurements")
    before = _verdicts(measurements)
    for verdict, error, low, high, theory in before.values():
        expected_error, expected = point_verdict(theory, "bracket", None, low, high, 0.03, "absolute")
        assert verdict == expected and error == pytest.approx(expected_error, abs=1e-9)
    assert before[(6, 30, 1.5)][0] == "unchecked"  # the committed data: bracket wider than 0.03

    def moved(shift):
        (tmp_path / "zipf").mkdir(exist_ok=True)
        with DATA.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        for r in rows:  # every instance's bracket 0.01 wide around theory + shift, no non-vertex fact
            e = float(r["theory_error"]) + shift
            r["lower_mass"], r["upper_mass"] = repr(1 - e - 0.005), repr(1 - e + 0.005)
            r["nonvertex_mass"], r["nonvertex_count"] = "0", "0"
        with (tmp_path / "zipf" / "zipf_bracket.csv").open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        monkeypatch.setattr(measurements, "EXPERIMENTS", tmp_path)
        return _verdicts(measurements)

    assert {v[0] for v in moved(0.0).values()} == {"checked"}
    far = moved(0.05)
    assert {v[0] for v in far.values()} == {"off"}
    assert all(v[1] == pytest.approx(-0.045, abs=1e-6) for v in far.values())  # theory - (theory + 0.05 - 0.005)
    shutil.rmtree(tmp_path / "zipf")
