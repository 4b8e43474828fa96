"""The certified measurements of the scoreboard (``experiments/scoreboard/measurements.py``) and the coverage check."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the experiments live beside the package, not in it
    sys.path.insert(0, str(ROOT))

import experiments  # noqa: E402
from experiments.__main__ import coverage_problems  # noqa: E402
from experiments.scoreboard import measurements  # noqa: E402

KEYS = {"quantity", "experiment", "regime", "params", "kind", "measured", "low", "high", "trials", "measured_text",
        "error_kind"}
# the folders the scoreboard did not read before the measurement-first list
NEWLY_COUNTED = ("sphere", "many_to_one", "covariance", "embeddings", "rank", "zipf", "capacity", "ce_protocol",
                 "op_vs_dp")


@pytest.fixture(scope="module")
def points():
    return measurements.all_measurements()


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def test_every_measurement_keeps_the_contract(points):
    assert points
    for p in points:
        where = f"{p.get('experiment')} {p.get('regime')} {p.get('params')}"
        extra = set(p) - KEYS
        assert KEYS <= set(p) and extra <= ({"at_capacity"} if p["quantity"] == "spectrum" else set()), where
        assert p["quantity"] in measurements.THEORY_QUANTITIES, where
        assert p["error_kind"] == measurements.ERROR_KIND[p["quantity"]], where
        assert p["kind"] in measurements.KINDS, where
        assert re.fullmatch(r"experiments/\w+", p["experiment"]) and (ROOT / p["experiment"]).is_dir(), where
        assert isinstance(p["regime"], str) and p["regime"] and isinstance(p["measured_text"], str), where
        assert isinstance(p["trials"], int) and p["trials"] > 0, where
        assert all(v is None or _number(v) for v in (p["measured"], p["low"], p["high"])), where
        # params: JSON-safe scalars, the quantity's parameters, none at its default
        assert json.loads(json.dumps(p["params"], allow_nan=False)) == p["params"], where
        assert all(isinstance(v, (int, float, str)) for v in p["params"].values()), where
        defaults = measurements.DEFAULTS[p["quantity"]]
        assert all(k not in defaults or v != defaults[k] for k, v in p["params"].items()), where
        assert "d" in p["params"], where
        if p["quantity"] in ("max_margin", "accuracy"):
            assert "p" in p["params"], where
        if p["quantity"] == "zipf_error":
            assert {"N", "a"} <= set(p["params"]), where


def test_the_kind_says_which_sides_are_known(points):
    for p in points:
        where = f"{p['experiment']} {p['regime']} {p['params']}"
        kind, measured, low, high = p["kind"], p["measured"], p["low"], p["high"]
        if kind in ("interval", "ks"):
            assert None not in (measured, low, high), where
        elif kind == "bracket":
            assert measured is None and None not in (low, high), where
        elif kind == "lower_bound":
            assert low is not None and high is None and measured is not None, where
        else:
            assert high is not None and low is None and measured is not None, where
        if low is not None and high is not None:
            assert low <= high, where
        if measured is not None:
            assert (low is None or low <= measured) and (high is None or measured <= high), where
        if kind == "ks":
            assert p["quantity"] == "spectrum" and isinstance(p["at_capacity"], bool), where


def test_every_declared_quantity_has_a_measurement(points):
    measured = measurements.coverage(points)
    declared = {(f"experiments/{e.topic}", q) for e in experiments.experiments() for q in e.measures}
    assert declared, "no experiment declares measures"
    assert declared <= measured, sorted(declared - measured)
    assert {q for _, q in declared} == set(measurements.THEORY_QUANTITIES)
    # every folder with measurements has its extractors, and reading one folder reads only it
    assert {e for e, _ in measured} == {f"experiments/{f}" for f in measurements.SOURCES}
    assert {p["experiment"] for p in measurements.all_measurements({"sphere", "rank"})} \
        == {"experiments/sphere", "experiments/rank"}


def test_the_folders_not_counted_before_now_contribute(points):
    by_folder = {}
    for p in points:
        by_folder.setdefault(p["experiment"].split("/")[1], []).append(p)
    for folder in NEWLY_COUNTED:
        assert by_folder.get(folder), folder
    rank_dp = [p for p in by_folder["rank"] if p["params"].get("problem", "dp") == "dp"]
    assert rank_dp and all(p["kind"] == "lower_bound" for p in rank_dp)
    hebbian_zipf = [p for p in by_folder["zipf"] if p["params"].get("memory") == "hebbian"]
    assert {"samples" in p["params"] for p in hebbian_zipf} == {True, False}     # zipf_samples.csv and zipf.json
    large = {p["params"]["d"]: p["kind"] for p in by_folder["capacity"] if p["params"].get("problem") == "op"}
    assert large == {256: "interval", 512: "bracket"}
    assert {p["quantity"] for p in by_folder["op_vs_dp"]} == {"capacity", "hebbian_capacity"}
    assert {p["kind"] for p in by_folder["ce_protocol"]} == {"lower_bound"}
    assert {p["params"].get("ensemble") for p in by_folder["sphere"]} == {"sphere", None}
    assert any("input_exponent" in p["params"] for p in by_folder["covariance"])


def test_the_ported_extractors_give_what_the_scoreboard_read(points):
    # the points of the scoreboard before the measurement-first list, spot-checked
    def one(**match):
        found = [p for p in points if all(p.get(k) == v for k, v in match.items() if k != "params")
                 and p["params"] == match.get("params", p["params"])]
        assert len(found) == 1, (match, found)
        return found[0]

    dp64 = one(experiment="experiments/reproduction", quantity="capacity", params={"d": 64})
    assert (round(dp64["measured"], 1), round(dp64["low"], 1), round(dp64["high"], 1)) == (564.0, 556.9, 571.2)
    op64 = one(experiment="experiments/reproduction", quantity="capacity", params={"d": 64, "problem": "op"})
    assert (op64["kind"], op64["measured"], op64["low"], op64["high"]) == ("bracket", None, 564.0, 598.0)
    rank = one(experiment="experiments/reproduction", quantity="capacity",
               params={"d": 32, "kappa": 0.5, "problem": "op"})
    assert rank["kind"] == "lower_bound"
    assert one(experiment="experiments/reproduction", quantity="hebbian_capacity", params={"d": 128})["trials"] == 60
    top = one(experiment="experiments/top_k", quantity="capacity", params={"d": 4, "top_k": 2}, trials=50)
    assert (top["low"], top["high"]) == (min(11.1, 11.044339482372903), 12.43374765109132)   # widened: 1 undecided
    kinds = {(p["experiment"], p["quantity"], p["kind"]) for p in points}
    assert ("experiments/accuracy", "accuracy", "bracket") in kinds
    assert ("experiments/zipf", "zipf_error", "bracket") in kinds
    assert ("experiments/spectra", "spectrum", "ks") in kinds
    assert len([p for p in points if p["experiment"] == "experiments/margins"]) == 30


def test_separation_bracket_is_validations(points):
    from validation.capacity.fit import separation_bracket

    curves = [r["curve"] for r in measurements.read_run(measurements.FULL_RUN)]
    curves += [r["curve"] for r in measurements.read_run(ROOT / "experiments" / "op_vs_dp" / "op_vs_dp_d64")]
    for path in (ROOT / "experiments" / "many_to_one").glob("many_to_one_d*[0-9].json"):
        curves += [r["curve"] for r in json.loads(path.read_text())["rows"]]
    curves += [r["curve"] for r in json.loads((ROOT / "experiments" / "embeddings" / "embeddings.json").read_text())
               ["rows"]]
    curves.append(measurements.capacity_output((ROOT / "experiments" / "capacity" / "capacity_d512_op.md")
                                               .read_text())["curve"])
    assert len(curves) > 40 and any(separation_bracket(c) is not None for c in curves)
    for curve in curves:
        assert measurements.separation_bracket(curve) == separation_bracket(curve)


def test_the_constants_copied_from_scripts_are_theirs():
    def constant(path, pattern):
        m = re.search(pattern, (ROOT / path).read_text(), re.M)
        assert m is not None, (path, pattern)
        return m.group(1)

    assert int(constant("experiments/zipf/zipf_samples.py", r"^N = (\d+)$")) == measurements.ZIPF_SAMPLES_N
    assert int(constant("experiments/ce_protocol/ce_capacity.py", r"^OPTIMAL_TRIALS, OPTIMAL_ROUNDS = (\d+),")) \
        == measurements.CE_OPTIMAL_TRIALS
    spectra = "experiments/spectra/rank_spectra_at_capacity.py"
    assert int(constant(spectra, r"^BOOTSTRAP = (\d+)")) == measurements.SPECTRA_BOOTSTRAP
    assert eval(constant(spectra, r"^AT_CAPACITY = (\([\d., ]+\))")) == measurements.SPECTRA_AT_CAPACITY
    assert constant(spectra, r'^MEMORIES = \("(\w+)"') == "refined"      # index 0 of the bootstrap seeds


def test_t_quantiles():
    assert measurements.t975(39) == pytest.approx(2.0227, abs=2e-4)
    assert measurements.t975(99) == pytest.approx(1.9842, abs=2e-4)
    assert measurements.t975(5) == 2.571


def test_no_theory_is_imported_except_for_the_spectrum():
    code = ("import sys; from experiments.scoreboard import measurements as m; "
            "[f() for f in m.EXTRACTORS if f is not m.rank_spectra_at_capacity]; "
            "print(sorted(n for n in sys.modules if n.split('.')[0] in ('replica', 'validation', 'scipy')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def _table(tmp_path, pairs) -> Path:
    path = tmp_path / "validity_table.json"
    path.write_text(json.dumps({"generated_by": "test", "coverage": [list(p) for p in pairs]}))
    return path


def test_the_coverage_check_fails_on_a_missing_pair_and_passes_on_all(tmp_path, points):
    declared = sorted({(f"experiments/{e.topic}", q) for e in experiments.experiments() for q in e.measures})
    assert coverage_problems(_table(tmp_path, declared), points=points) == []
    missing = ("experiments/sphere", "capacity")
    problems = coverage_problems(_table(tmp_path, [p for p in declared if p != missing]), points=points)
    assert len(problems) == 1, problems
    assert problems[0].startswith("sphere/sphere_optimal: declares measures 'capacity', but ")
    assert problems[0].endswith("validity_table.json has no 'capacity' point from experiments/sphere "
                                "(not on the scoreboard)")
    # a table without the coverage key covers nothing: every declared pair is missing
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"predictions": {}}))
    assert len(coverage_problems(bare, points=points)) == sum(len(e.measures) for e in experiments.experiments())


def test_a_declaration_without_an_extractor_fails(tmp_path, points):
    declared = sorted({(f"experiments/{e.topic}", q) for e in experiments.experiments() for q in e.measures})
    table = _table(tmp_path, declared + [("experiments/margins", "accuracy")])
    margins = experiments.find("margins")
    drifted = [experiments.Experiment(**{**margins.__dict__, "measures": ("max_margin", "accuracy")})]
    problems = coverage_problems(table, chosen=drifted, points=points)
    assert len(problems) == 1 and "no 'accuracy' measurement from experiments/margins" in problems[0]


def test_measures_must_be_a_list_of_names(tmp_path):
    folder = tmp_path / "experiments" / "demo"
    folder.mkdir(parents=True)
    head = 'title = "Demo"\nquestion = "capacity"\n\n[[experiment]]\nname = "demo"\nwall_time = "1 s"\n'
    (folder / "experiment.toml").write_text(head + 'measures = ["capacity"]\n')
    assert experiments.find("demo", tmp_path).measures == ("capacity",)
    (folder / "experiment.toml").write_text(head + 'measures = "capacity"\n')
    with pytest.raises(ValueError, match="measures of 'demo'"):
        experiments.experiments(tmp_path)
    (folder / "experiment.toml").write_text(head + 'measured = ["capacity"]\n')   # unknown keys: as before
    with pytest.raises(TypeError):
        experiments.experiments(tmp_path)


@pytest.mark.slow
def test_the_spectrum_ks_is_the_experiments_own():
    from experiments.spectra import rank_spectra_at_capacity as spectra

    data = json.loads(spectra.DATA.read_text())
    theirs = [s for s in spectra.summarise(data, reference=False) if "refined" in s]
    ours = measurements.rank_spectra_at_capacity()
    assert len(theirs) == len(ours)
    for s, p in zip(theirs, ours):
        assert (p["params"]["d"], p["params"].get("problem", "dp")) == (s["d"], s["problem"])
        ks = s["refined"]
        assert (p["measured"], p["low"], p["high"]) == pytest.approx((ks["ks"], ks["ks_low"], ks["ks_high"]),
                                                                      rel=1e-12)
        assert p["at_capacity"] == s["at_capacity"] and p["trials"] == s["memories"]
