"""The experiments: every generated page matches its committed data, and the check can fail."""

from __future__ import annotations

import csv
import importlib
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the experiments live beside the package, not in it
    sys.path.insert(0, str(ROOT))

import experiments  # noqa: E402
from experiments import pages  # noqa: E402
from experiments.__main__ import check  # noqa: E402


def _tables_module():
    return importlib.import_module("experiments.capacity.headline")


def test_committed_tables_are_what_the_data_give():
    tables = _tables_module()
    for path, text in tables.generated().items():
        assert path.read_text() == text, (f"{path.relative_to(ROOT)} is stale: "
                                          "run python -m experiments run headline --render")


def test_a_changed_result_changes_the_table(tmp_path, monkeypatch):
    # negative control: one p_c changed in a copy of the run's capacity table must show up
    tables = _tables_module()
    run = tmp_path / "full"
    shutil.copytree(ROOT / "experiments" / "reproduction" / "full", run,
                    ignore=shutil.ignore_patterns("*.png", "results.csv"))
    rows = list(csv.DictReader(open(run / "capacity.csv", newline="")))
    target = next(r for r in rows if (r["problem"], r["solver"], r["d"], r["status"]) == ("dp", "optimal", "64", "ok"))
    target["p_c"] = str(float(target["p_c"]) + 10.0)
    with open(run / "capacity.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    monkeypatch.setattr(tables, "FULL_RUN", run)
    changed = tables.generated()[tables.README]
    assert changed != (ROOT / "README.md").read_text()
    assert f"{float(target['p_c']):.1f}" in changed


def test_interval_labels_follow_the_fit_status():
    tables = _tables_module()
    row = {"p_c": "100", "p_c_low": "90", "p_c_high": "110"}
    assert "95 % PL" in tables.interval_text(dict(row, status="ok"))
    assert "bracket" in tables.interval_text(dict(row, status="separated"))
    assert "95 %" not in tables.interval_text(dict(row, status="separated"))
    assert "no interval" in tables.interval_text(dict(row, status="unbracketed"))


def test_a_changed_zipf_result_changes_the_slope_table(tmp_path, monkeypatch):
    # negative control: one measured Zipf error changed in a copy of experiments/zipf/zipf.json must move its slope
    import json

    tables = _tables_module()
    data = json.loads((ROOT / "experiments" / "zipf" / "zipf.json").read_text())
    before = tables.zipf_table()
    point = next(pt for m in data["measurements"] if m["d"] == 16 and m["a"] == 1.5 for pt in m["points"]
                 if pt["solver"] == "optimal")
    point["error"] *= 4.0
    copy = tmp_path / "zipf.json"
    copy.write_text(json.dumps(data))
    monkeypatch.setattr(tables, "ZIPF_DATA", copy)
    after = tables.zipf_table()
    assert after != before
    changed = [line for line in after if line not in before]
    assert any(line.startswith("| 1.5 | optimal") for line in changed)


def test_accuracy_verdict_reads_the_bracket():
    tables = _tables_module()
    # (mean, s.e.) of the search and of the bound; the theory 2 s.e. above the bound's mean is "above"
    assert tables.accuracy_verdict((16.0, 0.2), (16.5, 0.3), 17.2) == "above the bound"
    assert tables.accuracy_verdict((16.0, 0.2), (16.5, 0.3), 17.0) == "inside"
    assert tables.accuracy_verdict((16.0, 0.2), (18.0, 0.3), 15.5) == "below the search"


def test_a_changed_bound_changes_the_accuracy_verdict(tmp_path, monkeypatch):
    # negative control: raising every certified bound of one case above the theory in a copy of
    # experiments/accuracy/accuracy_search.csv must turn its verdict from "above the bound" to "inside"
    tables = _tables_module()
    with (ROOT / "experiments" / "accuracy" / "accuracy_search.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    before = tables.accuracy_table()
    assert any(line.startswith("| DP | 6 | 1.25 |") and "above the bound" in line for line in before)
    for r in rows:
        if (r["problem"], r["d"], r["ratio"]) == ("dp", "6", "1.25"):
            r["bound_upper"] = str(int(r["p"]) - 1)
            r["bound_status"] = "time_limit"
    copy = tmp_path / "accuracy_search.csv"
    with copy.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    monkeypatch.setattr(tables, "ACCURACY_DATA", copy)
    after = tables.accuracy_table()
    line = next(line for line in after if line.startswith("| DP | 6 | 1.25 |"))
    assert line.endswith("| inside |") and "| 0/8 |" in line


def test_committed_zipf_page_is_what_its_data_give():
    # experiments/zipf/README.md's block is rendered from experiments/zipf/zipf.json
    page = importlib.import_module("experiments.zipf.zipf")
    data = page.read_data()  # zipf.json with the run's command, time and commit from zipf.provenance.json
    committed = pages.read_block((ROOT / "experiments" / "zipf" / "README.md").read_text(), "zipf")
    assert committed == pages.demote_headings(page.markdown(data)).strip("\n")
    data["measurements"][0]["points"][0]["error"] *= 2.0  # negative control: a changed result changes the page
    assert committed != pages.demote_headings(page.markdown(data)).strip("\n")


def test_a_changed_top_k_result_changes_its_table(tmp_path, monkeypatch):
    # negative control: the theory moved above the exact interval in a copy of the summary
    import json

    tables = _tables_module()
    records = json.loads((ROOT / "experiments" / "top_k" / "top_k_exact.json").read_text())
    before = tables.top_k_table()
    target = next(r for r in records if r["verdict"].startswith("inside the interval"))
    target["verdict"], target["theory_vs_exact"] = "above the interval by +9.9 %", 0.099
    copy = tmp_path / "top_k_exact.json"
    copy.write_text(json.dumps(records))
    monkeypatch.setattr(tables, "TOP_K_DATA", copy)
    after = tables.top_k_table()
    assert after != before
    assert any("above the interval by +9.9 %" in line for line in after)

def test_a_changed_sweep_record_changes_the_headline_page(tmp_path, monkeypatch):
    # negative control: the single-sweep rows of experiments/capacity/README.md come from the records in
    # benchmarks/goals/; a p_c moved in a copy of one record must show up, with its interval kind
    import json

    tables = _tables_module()
    records = tmp_path / "goals"
    shutil.copytree(ROOT / "benchmarks" / "goals", records)
    path = records / "sweep_dp128.json"
    record = json.loads(path.read_text())
    record["estimate"].update(p_c=1900.25, p_c_low=1890.0, p_c_high=1910.5, status="ok")
    path.write_text(json.dumps(record))
    monkeypatch.setattr(tables, "SWEEP_RECORDS", records)
    page = tables.generated()[tables.CAPACITY_PAGE]
    assert page != (ROOT / "experiments" / "capacity" / "README.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| optimal DP | 128 | 1900.2"))
    assert "[1890.0, 1910.5] (95 % PL)" in row
    theory = record["estimate"]["theory"]["p_c"]
    assert f"{100 * (1900.25 - theory) / theory:+.1f} %" in row


def _copy_experiment(tmp_path, topic):
    """A tree with one experiment folder and the package's pages module, to change data safely."""
    (tmp_path / "experiments").mkdir()
    for name in ("__init__.py", "__main__.py", "pages.py", "provenance.py", "runner.py"):
        shutil.copy(ROOT / "experiments" / name, tmp_path / "experiments" / name)
    shutil.copytree(ROOT / "experiments" / topic, tmp_path / "experiments" / topic,
                    ignore=shutil.ignore_patterns("*.png", "__pycache__"))
    return tmp_path


def test_the_check_passes_on_a_committed_experiment_and_fails_on_changed_data(tmp_path):
    root = _copy_experiment(tmp_path, "accuracy")
    experiment = experiments.find("accuracy_search", root)
    ok, diff = check(experiment, root)
    assert ok, diff
    # one number of the committed data changed: the rendered page differs, the check says where
    data = root / "experiments" / "accuracy" / "accuracy_search.csv"
    with data.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[0]["bound_upper"] = str(int(rows[0]["bound_upper"]) - 3)
    with data.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    page = (root / "experiments" / "accuracy" / "README.md").read_bytes()
    ok, diff = check(experiment, root)
    assert not ok
    assert "--- experiments/accuracy/README.md (committed)" in diff and "+++" in diff
    # the check puts the committed page back
    assert (root / "experiments" / "accuracy" / "README.md").read_bytes() == page


def test_the_command_line_check_exits_1_with_a_diff(tmp_path):
    import subprocess

    root = _copy_experiment(tmp_path, "accuracy")
    data = root / "experiments" / "accuracy" / "accuracy_search.csv"
    text = data.read_text().splitlines()
    header, first = text[0].split(","), text[1].split(",")
    column = header.index("bound_upper")
    first[column] = str(int(first[column]) - 1)
    data.write_text("\n".join([text[0], ",".join(first), *text[2:]]) + "\n")
    done = subprocess.run([sys.executable, "-m", "experiments", "check", "accuracy_search"], cwd=root,
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DIFFERS accuracy/accuracy_search" in done.stdout and "@@" in done.stdout


def test_every_topic_has_a_page_and_is_in_the_results_navigation():
    index = (ROOT / "docs" / "results" / "index.md").read_text()
    for topic in experiments.topics():
        assert (ROOT / "experiments" / topic.name / "README.md").exists(), topic.name
        assert index.count(f"\n{topic.name}\n") == 1, f"{topic.name} is not listed once in docs/results/index.md"
    names = [e.name for e in experiments.experiments()]
    assert len(names) == len(set(names)), "two experiments share a name"
    for e in experiments.experiments():
        assert (e.folder() / f"{e.name}.py").exists(), e.name


def test_every_generated_block_names_an_experiment_that_writes_it():
    names = {e.name for e in experiments.experiments()}
    import re

    for page in [ROOT / "README.md", *ROOT.glob("notes/*.md"), *ROOT.glob("experiments/*/README.md")]:
        for m in re.finditer(r"<!-- BEGIN generated: (\S+) \(python -m experiments run (\S+)\) -->", page.read_text()):
            assert m.group(2) in names, f"{page.relative_to(ROOT)}: block {m.group(1)} names {m.group(2)}"


def test_pages_refuse_a_missing_or_doubled_block():
    with pytest.raises(ValueError, match="0 opening markers"):
        pages.replace_block("no markers", "x", "body", "headline")
    twice = pages.begin_marker("x", "e") + "\n" + pages.end_marker("x") + "\n"
    with pytest.raises(ValueError, match="2 opening markers"):
        pages.replace_block(twice * 2, "x", "body", "e")
    once = "head\n" + twice + "tail\n"
    assert pages.replace_block(once, "x", ["a", "b"], "e") == (
        "head\n" + pages.begin_marker("x", "e") + "\na\nb\n" + pages.end_marker("x") + "\ntail\n")
    assert pages.demote_headings("# A\n```\n# not a heading\n```\n## B\n") == "## A\n```\n# not a heading\n```\n### B\n"


def _scoreboard_verdicts(points, quantity, model):
    """Verdicts of ``model`` at ``points`` (scoreboard.build on these points only)."""
    import warnings

    import replica

    scoreboard = importlib.import_module("experiments.scoreboard.scoreboard")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", replica.TheoryOffWarning)
        table = scoreboard.build(points, only={model})
    return [pt for r in table["quantities"][quantity]["models"][model]["regimes"] for pt in r["points"]]


def test_a_changed_measurement_changes_the_verdict_of_the_scoreboard(tmp_path, monkeypatch):
    # the DP rectangular memory at d_in = 32, d_out = 16 against the budget model; moved 20 % away from the
    # theory in a copy of the data, the same point is off, with the error the rule gives
    import json

    measurements = importlib.import_module("experiments.scoreboard.measurements")

    def point():
        (found,) = [p for p in measurements.rectangular()
                    if (p["params"]["d"], p["params"].get("d_out"), p["params"].get("problem", "dp")) == (32, 16, "dp")]
        (entry,) = _scoreboard_verdicts([found], "capacity", "budget")
        return entry

    before = point()
    assert before["verdict"] in ("checked", "unchecked")
    (tmp_path / "rectangular").mkdir()
    data = json.loads((ROOT / "experiments" / "rectangular" / "rectangular.json").read_text())
    row = next(r for r in data["rows"] if (r["problem"], r["d_in"], r["d_out"]) == ("dp", 32, 16))
    for key in ("p_c", "p_c_low", "p_c_high"):
        row[key] *= 1.2
    (tmp_path / "rectangular" / "rectangular.json").write_text(json.dumps(data))
    monkeypatch.setattr(measurements, "EXPERIMENTS", tmp_path)
    after = point()
    assert after["verdict"] == "off"
    assert after["error"] == pytest.approx((1 + before["error"]) / 1.2 - 1, rel=1e-9)  # theory / (1.2 p_c) - 1


def test_the_shipped_validity_table_is_what_the_committed_data_give():
    # the measured side of every point equals the committed data (measurements.all_measurements), every verdict
    # follows the rule of one point from the stored theory, and the theory of the cheap models is recomputed;
    # the whole table (every model at every point, a few minutes) is rebuilt by `python -m experiments check`
    import json
    import warnings

    import replica
    from replica.common import registry
    from replica.common.validity import point_verdict

    measurements = importlib.import_module("experiments.scoreboard.measurements")
    scoreboard = importlib.import_module("experiments.scoreboard.scoreboard")
    shipped = json.loads((ROOT / "replica" / "common" / "validity_table.json").read_text())
    measured = {}
    for m in measurements.all_measurements():
        fixed, continuous = registry.coordinates(m["quantity"], m["params"])
        key = (m["quantity"], m["experiment"], json.dumps(fixed, sort_keys=True),
               tuple((n, float(f"{v:.9g}")) for n, v in continuous.items()), m["measured_text"])  # 9 digits kept
        measured[key] = m
    cheap = {("capacity", "finite_size"), ("hebbian_capacity", "finite_size"), ("capacity", "budget"),
             ("capacity", "shared_outputs")}
    recomputed = 0
    for qn, q in shipped["quantities"].items():
        names = registry.quantity(qn).continuous
        for mn, model in q["models"].items():
            for regime in model["regimes"]:
                for pt in regime["points"]:
                    key = (qn, pt["experiment"], json.dumps(regime["fixed"], sort_keys=True),
                           tuple((n, float(f"{float(pt[n]):.9g}")) for n in names), pt["measured_text"])
                    assert key in measured, ("a point of the table is not in the committed data", key)
                    m = measured[key]
                    assert (pt["trials"], pt["kind"]) == (m["trials"], m["kind"]), key
                    if m["kind"] == "ks" and pt["theory"] is None:
                        continue
                    kind, error_kind = ("interval", "absolute") if m["kind"] == "ks" else (m["kind"], q["error_kind"])
                    error, verdict = point_verdict(pt["theory"], kind, m["measured"], m["low"], m["high"],
                                                   regime["tolerance"], error_kind, pt["theory_stderr"])
                    assert verdict == pt["verdict"], (key, mn)
                    # the table keeps 9 significant digits of the theory and the measurement: a relative
                    # error recomputed from them is good to about 1e-8
                    assert error == pytest.approx(pt["error"], rel=1e-6, abs=2e-8), (key, mn)
                    if (qn, mn) in cheap and m["params"]["d"] <= 64 and recomputed < 40:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", replica.TheoryOffWarning)
                            theory = scoreboard.theory_value(qn, mn, m["params"])
                        # float64 with BLAS reductions: equal to 1e-7 relative on any kernel
                        assert theory == pytest.approx(pt["theory"], rel=1e-7), (key, mn)
                        recomputed += 1
    assert recomputed >= 20
    covered = {(pt["experiment"], qn) for qn, q in shipped["quantities"].items() for m in q["models"].values()
               for r in m["regimes"] for pt in r["points"]}
    assert sorted(map(list, covered)) == shipped["coverage"]


def test_provenance_marks_uncommitted_code_and_not_uncommitted_pages(tmp_path):
    from experiments.provenance import code_commit

    def git(*args):
        import subprocess

        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "page.md").write_text("a\n")
    (tmp_path / "script.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    assert not code_commit(tmp_path).endswith("+dirty")
    (tmp_path / "page.md").write_text("b\n")  # a page an earlier measurement rewrote
    assert not code_commit(tmp_path).endswith("+dirty")
    (tmp_path / "script.py").write_text("x = 2\n")
    assert code_commit(tmp_path).endswith("+dirty")


def test_the_rank_spectrum_verdict_follows_the_ks_tolerance(tmp_path, monkeypatch):
    # three rows of made-up rank-m data at d = 32: storing memories whose singular values are the top half of
    # Gaussian matrices (limit law: the prediction; KS about 0.03, below the 0.05 tolerance) are checked; memories
    # with d / 2 equal singular values (KS about 0.4) are off; a row with 2 of 24 stored is not at capacity
    import json

    import numpy as np

    measurements = importlib.import_module("experiments.scoreboard.measurements")
    rng = np.random.default_rng(3)
    d = 32

    def rows(problem, stored, trials, values):
        out = []
        for t in range(trials):
            row = {"problem": problem, "d": d, "p": 167, "trial": t, "restarts": 8, "seconds_search": 0.0,
                   "status": "stored" if t < stored else "not_found"}
            if t < stored:
                s = values()
                row.update(sv_decision=s, sv_refined=s, margin_decision=0.01, margin_refined=0.01)
            out.append(row)
        return out

    def gaussian():
        s = np.linalg.svd(rng.standard_normal((d, d)), compute_uv=False)
        return np.concatenate([s[:d // 2], np.zeros(d // 2)]).tolist()

    def flat():
        return [1.0] * (d // 2) + [0.0] * (d // 2)

    data = {"kappa": 0.5, "seed": 1, "plan": [["dp", d, 167, "test", 8, 24], ["op", d, 167, "test", 8, 12]],
            "rows": rows("dp", 12, 24, gaussian) + rows("op", 6, 12, flat)}
    (tmp_path / "spectra").mkdir()
    (tmp_path / "spectra" / "rank_spectra_at_capacity.json").write_text(json.dumps(data))
    monkeypatch.setattr(measurements, "EXPERIMENTS", tmp_path)

    def verdicts():
        points = measurements.rank_spectra_at_capacity()
        return {p["params"].get("problem", "dp"): e for p in points
                for e in _scoreboard_verdicts([p], "spectrum", "quarter_circle")}

    by_problem = verdicts()
    assert by_problem["dp"]["verdict"] == "checked" and by_problem["dp"]["error"] < 0.05
    assert by_problem["op"]["verdict"] == "off" and by_problem["op"]["error"] > 0.3
    data["rows"] = rows("dp", 2, 24, gaussian) + rows("op", 6, 12, flat)
    (tmp_path / "spectra" / "rank_spectra_at_capacity.json").write_text(json.dumps(data))
    assert verdicts()["dp"]["verdict"] == "unchecked"


def test_a_rendered_table_may_differ_in_the_last_bits_only():
    # sums of the same data differ in the last bits between CPUs (op_vs_dp_d64's moments: 1.787461587756108
    # against 1.7874615877561073); a digit that matters, a changed word or a changed shape is a difference
    same_table = importlib.import_module("experiments.__main__").same_table
    head = "problem,sv_m2\n"
    assert same_table(head + "op,1.787461587756108\n", head + "op,1.7874615877561073\n")
    assert not same_table(head + "op,1.787461587756108\n", head + "op,1.787461587856108\n")
    assert not same_table(head + "op,1.0\n", head + "dp,1.0\n")
    assert not same_table(head + "op,1.0\n", head + "op,1.0\nop,1.0\n")
