"""The generated tables of the README and the docs match the committed result files."""

from __future__ import annotations

import csv
import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tables_module():
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "docs" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_tables_are_what_the_data_give():
    tables = _tables_module()
    for path, text in tables.generated().items():
        assert path.read_text() == text, f"{path.relative_to(ROOT)} is stale: run python docs/tables.py"


def test_a_changed_result_changes_the_table(tmp_path, monkeypatch):
    # negative control: one p_c changed in a copy of the run's capacity table must show up
    tables = _tables_module()
    run = tmp_path / "full"
    shutil.copytree(ROOT / "docs" / "full", run, ignore=shutil.ignore_patterns("*.png", "results.csv"))
    rows = list(csv.DictReader(open(run / "capacity.csv", newline="")))
    target = next(r for r in rows if (r["problem"], r["solver"], r["d"], r["status"]) == ("dp", "optimal", "64", "ok"))
    target["p_c"] = str(float(target["p_c"]) + 10.0)
    with open(run / "capacity.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    monkeypatch.setattr(tables, "DOCS", tmp_path)
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
    # negative control: one measured Zipf error changed in a copy of docs/zipf.json must move its slope
    import json

    tables = _tables_module()
    data = json.loads((ROOT / "docs" / "zipf.json").read_text())
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
    # docs/accuracy_search.csv must turn its verdict from "above the bound" to "inside"
    tables = _tables_module()
    with (ROOT / "docs" / "accuracy_search.csv").open(newline="") as fh:
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
    # docs/zipf.md is rendered from docs/zipf.json (python docs/zipf.py --from-data); --check in CI
    import json

    spec = importlib.util.spec_from_file_location("docs_zipf", ROOT / "docs" / "zipf.py")
    page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(page)
    data = json.loads((ROOT / "docs" / "zipf.json").read_text())
    assert (ROOT / "docs" / "zipf.md").read_text() == page.markdown(data)
    data["measurements"][0]["points"][0]["error"] *= 2.0  # negative control: a changed result changes the page
    assert (ROOT / "docs" / "zipf.md").read_text() != page.markdown(data)


def test_a_changed_top_k_result_changes_its_table_and_summary(tmp_path, monkeypatch):
    # negative control: the theory moved above the exact interval in a copy of the summary
    import json

    tables = _tables_module()
    records = json.loads((ROOT / "docs" / "results" / "top_k_exact.json").read_text())
    before_table, before_summary = tables.top_k_table(), tables.top_k_summary()
    target = next(r for r in records if r["verdict"].startswith("inside the interval"))
    target["verdict"], target["theory_vs_exact"] = "above the interval by +9.9 %", 0.099
    copy = tmp_path / "top_k_exact.json"
    copy.write_text(json.dumps(records))
    monkeypatch.setattr(tables, "TOP_K_DATA", copy)
    assert tables.top_k_table() != before_table
    summary = tables.top_k_summary()[0]
    assert summary != before_summary[0] and f"{target['problem'].upper()} d = {target['d']} (+9.9 %)" in summary


def test_a_changed_sweep_record_changes_the_headline_page(tmp_path, monkeypatch):
    # negative control: the single-sweep rows of docs/results/headline.md come from the records in
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
    page = tables.generated()[tables.HEADLINE_PAGE]
    assert page != (ROOT / "docs" / "results" / "headline.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| optimal DP | 128 | 1900.2"))
    assert "[1890.0, 1910.5] (95 % PL)" in row
    theory = record["estimate"]["theory"]["p_c"]
    assert f"{100 * (1900.25 - theory) / theory:+.1f} %" in row
