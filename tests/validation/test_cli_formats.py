"""Every ``validation`` command honours --format table|csv|json; JSON never has NaN/Infinity."""

import csv
import io
import json
import math

import pytest

from validation.cli import main


def _strict_json(text):
    def reject(name):
        raise AssertionError(f"JSON output contains {name}")

    return json.loads(text, parse_constant=reject)


def _check(fmt, out, header_word):
    if fmt == "json":
        return _strict_json(out)
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows and header_word in rows[0]
        return rows
    assert header_word in out.splitlines()[0] or header_word in out
    return out


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_solve_formats(fmt, capsys):
    assert main(["solve", "--d", "8", "--p", "60", "--solver", "hebbian", "--format", fmt]) == 0
    _check(fmt, capsys.readouterr().out, "status")


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("capacity")


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_capacity_and_export_formats(fmt, store_dir, capsys):
    # the first format computes the trials, the others reuse them from the store
    argv = ["capacity", "--d", "10", "--solver", "hebbian", "--trials", "4", "--rounds", "0",
            "--workers", "0", "--out", str(store_dir), "--format", fmt]
    assert main(argv) == 0
    data = _check(fmt, capsys.readouterr().out, "stored")
    if fmt == "json":
        assert data["status"] in ("ok", "separated", "unbracketed", "failed") and data["curve"]
    assert main(["export", "--out", str(store_dir), "--stdout", "--format", fmt]) == 0
    data = _check(fmt, capsys.readouterr().out, "instance_seed")
    if fmt == "json":
        assert data and {"status", "seed", "p"} <= set(data[0])
    assert main(["export", "--out", str(store_dir), "--format", fmt]) == 0
    suffix = {"csv": "csv", "json": "json", "table": "txt"}[fmt]
    assert (store_dir / f"results.{suffix}").stat().st_size > 0


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_reproduce_summary_formats(fmt, capsys):
    from validation.cli.reproduce import _write_summary
    from validation.reproduce import ReproduceResult

    result = ReproduceResult("out", "out/report.md", ("out/fig1.png",), ("out/capacity.csv",), float("nan"), 3,
                             "incomplete", False, "optimal op d=8 kappa=1: unbracketed")
    _write_summary(result, fmt)
    data = _check(fmt, capsys.readouterr().out, "path" if fmt == "csv" else "report")
    if fmt == "json":
        assert data["seconds"] is None and data["status"] == "incomplete"
    if fmt == "csv":
        assert [r["kind"] for r in data] == ["report", "figure", "table"]


@pytest.mark.parametrize("argv, word", [
    (["reproduce", "--format", "xml"], "format"),
    (["reproduce", "--seed", str(2**63)], "seed"),
    (["compare", "--format", "yaml"], "format"),
    (["compare", "--executor", "spark"], "executor"),
    (["export", "--out", ".", "--format", "xml"], "format"),
    (["solve", "--d", "4", "--p", "5", "--seed", "x"], "seed"),
])
def test_bad_shared_options_exit_2(argv, word, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and word in err


def test_largest_seed_is_accepted(capsys):
    assert main(["solve", "--d", "4", "--p", "5", "--solver", "hebbian", "--seed", str(2**63 - 1),
                 "--format", "json"]) == 0
    assert _strict_json(capsys.readouterr().out)["seed"] == 2**63 - 1


def test_compare_formats(tmp_path, capsys, monkeypatch):
    from validation.cli import compare as compare_command

    rows = [{"memory": "Hebbian OP", "d": 16, "p_c": float("nan"), "p_c_low": 1.0, "p_c_high": 2.0,
             "theory_p_c": 3.0, "rel_diff": float("inf"), "alpha": 0.1, "theory_alpha": 0.1, "trials": 4,
             "undecided": 0}]
    # the measurement is estimate_capacity (tested in test_capacity_estimation.py): only the output here
    monkeypatch.setattr(compare_command, "_measure_rows", lambda args, spec: rows)
    for fmt in ("markdown", "table", "csv", "json"):
        assert main(["compare", "--max-d", "16", "--out", str(tmp_path), "--format", fmt]) == 0
        out = capsys.readouterr().out
        if fmt == "json":
            assert _strict_json(out)[0]["p_c"] is None
        else:
            assert "Hebbian OP" in out
    assert (tmp_path / "comparison.csv").exists() and (tmp_path / "comparison.md").exists()


def test_capacity_bracket_step_places_the_second_point(capsys):
    # the bracketing design's second point is exp(+-step) x the centre (CapacityDesign), so a
    # step of 0.02 puts it 2 % from the theory p_c, not the default 5 %
    from validation.capacity import theory_capacity

    argv = ["capacity", "--d", "64", "--solver", "hebbian", "--trials", "2", "--rounds", "0", "--design",
            "bracket", "--bracket-step", "0.02", "--workers", "0", "--format", "json"]
    main(argv)
    ps = sorted(c["p"] for c in _strict_json(capsys.readouterr().out)["curve"])
    centre = theory_capacity(64, "hebbian", 1.0, "gaussian")["p_c"]
    ratios = [p / centre for p in ps]
    assert len(ps) >= 2
    assert min(abs(r - 1.0) for r in ratios) < 0.01  # the centre
    assert any(abs(abs(math.log(r)) - 0.02) < 0.01 for r in ratios)  # one step of 0.02 away


@pytest.mark.parametrize("step", ["0", "-0.1", "nan"])
def test_capacity_bad_bracket_step_exits_2(step, capsys):
    argv = ["capacity", "--d", "8", "--solver", "hebbian", "--trials", "2", "--design", "bracket",
            "--bracket-step", step, "--workers", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "bracket_step" in err
