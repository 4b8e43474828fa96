"""``replica table`` command line."""

import json
import subprocess
import sys

import pytest

import replica
from replica.cli import main


def run_cli(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_default_table(capsys):
    code, out, err = run_cli(capsys, "table")
    assert code == 0 and err == ""
    lines = out.strip().splitlines()
    assert lines[0].split() == ["kappa", "s_kappa", "alpha_c", "alpha_c_hebbian"]
    assert len(lines) >= 2 + 10  # header, rule, a useful grid
    assert lines[-1].split() == ["1.000000", "0.000000", "0.500000", "0.125000"]


def test_json_keys_and_values(capsys):
    code, out, _ = run_cli(capsys, "table", "--kappa", "0.25", "1", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and [set(r) for r in rows] == [{"kappa", "s_kappa", "alpha_c", "alpha_c_hebbian"}] * 2
    assert rows[0]["alpha_c"] == replica.alpha_c(0.25)
    assert rows[1]["alpha_c"] == 0.5 and rows[1]["alpha_c_hebbian"] == 0.125


def test_grid_csv_and_dps(capsys):
    code, out, _ = run_cli(capsys, "table", "--kappa-grid", "0.5:1:3", "--format", "csv")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0] == "kappa,s_kappa,alpha_c,alpha_c_hebbian" and len(lines) == 4
    assert [float(line.split(",")[0]) for line in lines[1:]] == [0.5, 0.75, 1.0]
    code, out, _ = run_cli(capsys, "table", "--kappa", "0.5", "--dps", "30")
    value = out.strip().splitlines()[-1].split()[2]
    assert code == 0 and len(value.replace("0.", "", 1)) >= 29  # 30 significant digits printed
    assert float(value) == pytest.approx(replica.alpha_c(0.5), rel=1e-15)


@pytest.mark.parametrize("argv", [
    ["table", "--kappa", "1.5"],
    ["table", "--kappa", "nan"],
    ["table", "--kappa", "abc"],
    ["table", "--kappa-grid", "0:1"],
    ["table", "--kappa-grid", "0:1:5"],  # includes kappa = 0
    ["table", "--dps", "3"],
    ["table", "--format", "xml"],
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("replica")


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "replica", "table", "--kappa", "2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "kappa" in proc.stderr
