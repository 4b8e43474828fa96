"""``validation solve`` command line."""

import json
import subprocess
import sys

import pytest

from validation.cli import main


def test_json_output(capsys):
    assert main(["solve", "--d", "6", "--p", "6", "--solver", "lp", "--problem", "dp",
                 "--seed", "3", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("stored", "recall_fraction", "margin", "converged", "iterations", "seconds", "status",
                "solver", "kappa", "rank", "message", "seed", "d", "p", "problem", "ensemble"):
        assert key in data
    assert data["stored"] is True and data["status"] == "stored"
    assert (data["d"], data["p"], data["problem"], data["seed"], data["solver"]) == (6, 6, "dp", 3, "lp")


def test_table_output(capsys):
    assert main(["solve", "--d", "8", "--p", "100", "--solver", "hebbian", "--kappa", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "not_stored" in out and "status" in out and "message:" in out


def test_outputs_option(capsys):
    # K = 2 answers on the OP is a perceptron: p = 6 < 2d = 16 is below Cover's capacity, and the
    # exact LP decides it (same instance as make_instance(8, 6, outputs=2, seed=1)).
    assert main(["solve", "--d", "8", "--p", "6", "--solver", "lp", "--outputs", "2", "--seed", "1",
                 "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["outputs"] == 2 and data["status"] == "stored"


@pytest.mark.parametrize("args, word", [
    (["--d", "8", "--p", "6", "--outputs", "7"], "outputs"),
    (["--d", "1", "--p", "5"], "d"),
    (["--d", "4", "--p", "1"], "p"),
    (["--d", "4", "--p", "5", "--problem", "xp"], "problem"),
    (["--d", "4", "--p", "5", "--solver", "sgd"], "solver"),
    (["--d", "4", "--p", "5", "--ensemble", "cube"], "ensemble"),
    (["--d", "4", "--p", "5", "--kappa", "0"], "kappa"),
    (["--d", "4", "--p", "5", "--kappa", "1.5"], "kappa"),
    (["--d", "4", "--p", "5", "--seed", "-2"], "seed"),
    (["--d", "4", "--p", "5", "--solver", "lp", "--kappa", "0.5"], "kappa"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, word):
    assert main(["solve", "--solver", "hebbian", *args] if "--solver" not in args else ["solve", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and word in err and "Traceback" not in err


def test_subprocess_exit_status():
    proc = subprocess.run([sys.executable, "-m", "validation", "solve", "--d", "1", "--p", "5",
                           "--solver", "hebbian"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "d must be" in proc.stderr
