"""Edge cases of the documented argument ranges, size guards, output paths and stores.

Every test here reproduces a break found at the edge of a documented range: a value
inside the range that crashed, an extreme that must be rejected up front, an output
path or store that must give one line and exit status 2.
"""

from __future__ import annotations

import json
import math

import pytest

import replica
from replica import saddle
from replica.cli import main as replica_main


# ------------------------------------------------------------------------------------
# 1. values inside the documented ranges
# ------------------------------------------------------------------------------------
@pytest.mark.parametrize("top_k", [300, 500])
def test_capacity_top_k_where_exp_log_rounds_down(top_k):
    # exp(log(top_k + 1)) < top_k + 1 for these values: the search started below one
    # constrained competitor and indexed an empty sample
    assert math.exp(math.log(top_k + 1.0)) < top_k + 1.0
    result = replica.capacity(16, top_k=top_k, options=replica.Tolerances(rel_tol=1e-2))
    assert result.converged and result.p_c > top_k + 1


def test_capacity_top_k_beyond_range_rejected_up_front():
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 100000\]"):
        replica.capacity(16, top_k=10**9)


def test_capacity_margin_beyond_capacity_rejected_with_range():
    with pytest.raises(ValueError, match=r"margin must lie in \[0, 15\.9"):
        replica.capacity(16, margin=100.0)
    # just inside the stated range the capacity exists (p_c >= 2)
    assert replica.capacity(16, margin=15.9, options=replica.Tolerances(rel_tol=1e-2)).p_c >= 2.0


def test_smallest_load_cost_closed_form():
    # 2 E[C_2] = E[(m + sqrt(2) Z)_+^2] = (m^2 + 2) Phi(m/sqrt2) + sqrt2 m phi(m/sqrt2)
    from scipy import stats

    from replica.optimal.capacity_equation import _smallest_load_cost

    m = 3.0
    a = m / math.sqrt(2.0)
    exact = (m * m + 2.0) * stats.norm.cdf(a) + math.sqrt(2.0) * m * stats.norm.pdf(a)
    assert _smallest_load_cost(1, m) == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("p", [1000.0, 1e4, 1e8])
def test_max_margin_far_above_capacity(p):
    result = replica.max_margin(32, p, model="block_cost", options=replica.Tolerances(rel_tol=1e-2))
    assert result.converged and not result.storable and result.margin < 0
    assert json.dumps(result.to_dict(), allow_nan=False)


def test_max_margin_beyond_underflow_rejected():
    with pytest.raises(ValueError, match="too far above the capacity"):
        replica.max_margin(32, 1e250, model="block_cost", options=replica.Tolerances(rel_tol=1e-2))


def test_control_mean_by_parts_agrees_with_quadrature_in_w():
    from replica.optimal import cost

    value, _ = cost._control_mean_by_parts(100.0, 1, 0.0)
    assert value == pytest.approx(cost.control_mean(100.0, 1, 0.0), rel=1e-10)


@pytest.mark.parametrize("ratio", [1e-20, 1e100, 1e300])
def test_hebbian_spectrum_outside_ratio_range(ratio):
    with pytest.raises(ValueError, match=r"ratio must lie in \[1e-12"):
        replica.hebbian_spectrum(ratio)


@pytest.mark.parametrize("ratio", [1e-12, 1e12])
def test_hebbian_spectrum_at_ratio_range_ends(ratio):
    law = replica.hebbian_spectrum(ratio)
    assert law.moment(2) == pytest.approx(1.0, rel=1e-9)


def test_cli_capacity_margin_one_line(capsys):
    assert replica_main(["capacity", "--d", "16", "--margin", "100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "margin must lie in" in err


# ------------------------------------------------------------------------------------
# 2. size guards: estimate before allocating
# ------------------------------------------------------------------------------------
def test_check_memory_limit_and_environment(monkeypatch):
    from replica.common.checks import check_memory, memory_limit

    monkeypatch.setenv("LINEAR_MEMORY_LIMIT_BYTES", "1000")
    assert memory_limit() == 1000
    assert check_memory(1000, "x") == 1000.0
    with pytest.raises(ValueError, match=r"x needs about 1\.95 KiB of memory, above the limit of 1000 B"):
        check_memory(2000, "x")
    monkeypatch.delenv("LINEAR_MEMORY_LIMIT_BYTES")
    assert memory_limit() > 0


@pytest.mark.parametrize("make", [
    lambda: saddle.ReplicaSample(100_000_000),
    lambda: replica.QuarterCircle().rvs(10**12),
    lambda: replica.hebbian_spectrum(2.0).rvs(10**12),
    lambda: replica.capacity(16, options=replica.Tolerances(rel_tol=1e-6)),
], ids=["replica_sample", "quarter_circle_rvs", "hebbian_rvs", "capacity_rel_tol"])
def test_size_guards_raise_before_allocating(make):
    with pytest.raises(ValueError, match="of memory, above the limit"):
        make()


def test_cli_table_huge_grid_one_line(capsys):
    assert replica_main(["table", "--kappa-grid", "0.1:1:1000000000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "above the limit" in err


# ------------------------------------------------------------------------------------
# 3. unusable output paths: one line, exit status 2, before any work
# ------------------------------------------------------------------------------------
_OUT_COMMANDS = [
    ["capacity", "--d", "4", "--trials", "1", "--rounds", "0"],
    ["reproduce", "--quick"],
    ["compare", "--max-d", "16"],
]


def _bad_outs(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    return ["/proc/foo", str(afile / "sub")]


@pytest.mark.parametrize("command", _OUT_COMMANDS, ids=lambda c: c[0])
def test_unusable_out_one_line(command, tmp_path, capsys):
    from validation.cli import main as validation_main

    for out in _bad_outs(tmp_path):
        assert validation_main(command + ["--out", out]) == 2
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1 and "cannot be used as an output folder" in captured.err
        assert captured.out == ""


def test_check_output_folder_file_and_suffix(tmp_path):
    from replica.common.cliutil import check_output_folder

    assert check_output_folder(str(tmp_path / "new")) == str(tmp_path / "new")
    assert check_output_folder(str(tmp_path / "s.sqlite"), file_suffixes=(".sqlite",)) == str(tmp_path)
    with pytest.raises(ValueError, match="Not a directory"):
        (tmp_path / "f").write_text("")
        check_output_folder(str(tmp_path / "f" / "g"))


# ------------------------------------------------------------------------------------
# 4. a store with a valid header and corrupted pages
# ------------------------------------------------------------------------------------
def test_export_of_corrupted_store_one_line_before_output(tmp_path, capsys):
    import hashlib
    import sqlite3

    from validation.cli import main as validation_main
    from validation.runtime.store import ResultStore

    with ResultStore(tmp_path) as store:
        for t in range(400):
            key = dict(experiment="e", problem="op", solver="optimal", ensemble="gaussian", d=4, p=10,
                       kappa=1.0, seed=0, trial=t, version="test")
            store.put(key, {"status": "stored", "stored": True, "pad": "y" * 200})
    path = tmp_path / "results.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 10 * page
    data[3 * page + 100:3 * page + 2100] = b"\xff" * 2000  # inside a table page, header intact
    path.write_bytes(bytes(data))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for extra in (["--stdout"], []):
        assert validation_main(["export", "--out", str(tmp_path)] + extra) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.count("\n") == 1 and "is corrupted (PRAGMA quick_check" in captured.err
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert not (tmp_path / "results.csv").exists()


# ------------------------------------------------------------------------------------
# 5. seeds: [0, 2**63 - 1] everywhere a seed enters
# ------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["capacity", "--d", "16"], ["saddle", "--d", "16", "--p", "10"]], ids=["capacity", "saddle"])
def test_replica_cli_rejects_seed_2_63(argv, capsys):
    assert replica_main(argv + ["--seed", str(2**63)]) == 2
    assert "seed must be an integer in [0, 2**63 - 1]" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["capacity", "--d", "4", "--trials", "1", "--rounds", "0"],
    ["solve", "--d", "4", "--p", "4"], ["reproduce", "--quick"], ["compare", "--max-d", "16"]],
    ids=["capacity", "solve", "reproduce", "compare"])
def test_validation_cli_rejects_seed_2_63(argv, capsys):
    from validation.cli import main as validation_main

    assert validation_main(argv + ["--seed", str(2**63)]) == 2
    assert "seed must be an integer in [0, 2**63 - 1]" in capsys.readouterr().err


def test_store_rejects_seed_2_63_with_value_error():
    from validation.runtime.store import ResultStore

    key = dict(experiment="e", problem="op", solver="optimal", ensemble="gaussian", d=4, p=10,
               kappa=1.0, seed=2**63, trial=0, version="test")
    with ResultStore(":memory:") as store, pytest.raises(ValueError, match=r"2\*\*63 - 1"):
        store.put(key, {"status": "stored", "stored": True})


def test_hebbian_rvs_seed_policy():
    law = replica.hebbian_spectrum(2.0)
    assert (law.rvs(5) == law.rvs(5, rng=replica.common.seeds.DEFAULT_SEED)).all()
    with pytest.raises(ValueError, match="rng must be"):
        law.rvs(5, rng=2**63)


# ------------------------------------------------------------------------------------
# 6. JSON without NaN/Infinity; CSV carries the summary and the seed
# ------------------------------------------------------------------------------------
def _strict_json(text):
    def reject(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=reject)


def test_replica_json_degenerate_cases_strict(capsys):
    # above capacity: no saddle point, q_stderr / free_entropy undefined
    assert replica_main(["saddle", "--d", "16", "--p", "100", "--format", "json"]) == 0
    row, = _strict_json(capsys.readouterr().out)
    assert row["status"] == "above_capacity" and row["free_entropy"] is None


def test_validation_json_degenerate_cases_strict(tmp_path, capsys):
    from validation.cli import main as validation_main
    from validation.runtime.store import ResultStore

    argv = ["capacity", "--d", "4", "--trials", "1", "--rounds", "0", "--workers", "0"]
    assert validation_main(argv + ["--format", "json"]) == 0
    assert _strict_json(capsys.readouterr().out)["status"] in ("ok", "separated", "unbracketed", "failed")
    with ResultStore(tmp_path) as store:
        key = dict(experiment="e", problem="op", solver="optimal", ensemble="gaussian", d=4, p=10,
                   kappa=1.0, seed=0, trial=0, version="test")
        store.put(key, {"status": "error", "stored": None, "seconds": float("nan"), "error": "boom"})
    assert validation_main(["export", "--out", str(tmp_path), "--stdout", "--format", "json"]) == 0
    row, = _strict_json(capsys.readouterr().out)
    assert row["seconds"] is None


def test_validation_capacity_csv_has_summary_section(capsys):
    import csv
    import io

    from validation.cli import main as validation_main

    argv = ["capacity", "--d", "4", "--trials", "1", "--rounds", "0", "--workers", "0", "--format", "csv"]
    assert validation_main(argv) == 0
    grid, summary = capsys.readouterr().out.split("\n\n")
    assert grid.splitlines()[0] == "p,alpha,trials,stored,not_stored,undecided,errors,bits_per_parameter"
    values = {r["quantity"]: r["value"] for r in csv.DictReader(io.StringIO(summary))}
    for name in ("p_c", "p_c_low", "p_c_high", "theory_p_c", "theory_alpha_c", "status", "seed"):
        assert name in values
    # no --seed: the package seed, as for seed=None everywhere (docs/tutorial, section 6)
    from replica.common.seeds import DEFAULT_SEED

    assert values["seed"] == str(DEFAULT_SEED) and float(values["p_c_low"]) <= float(values["p_c"])


def test_replica_capacity_csv_has_seed(capsys):
    assert replica_main(["capacity", "--d", "16", "--format", "csv", "--seed", "7"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split(",")[-1] == "seed" and row.split(",")[-1] == "7"


# ------------------------------------------------------------------------------------
# 7. progress on stderr with --progress (or when stderr is a terminal)
# ------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["table", "--dps", "15", "--kappa", "0.5", "1"],
    ["saddle", "--d", "16", "--p", "10", "--samples", "64"]], ids=["table", "saddle"])
def test_progress_on_stderr_only_when_asked(argv, capsys):
    assert replica_main(argv) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    assert replica_main(argv + ["--progress"]) == 0
    shown = capsys.readouterr()
    assert "it/s" in shown.err or "s/it" in shown.err
    assert shown.out == quiet.out  # the output itself is unchanged


def test_capacity_cli_exits_non_zero_when_some_trials_failed(monkeypatch, capsys):
    # A capacity run in which some trials raised prints its estimate and then fails loudly:
    # exit 1 and one line on stderr that quotes the first error (carried in the message).
    import dataclasses

    import validation.capacity as capacity_module
    from validation.cli import main as validation_main

    real = capacity_module.estimate_capacity

    def with_errors(*args, **kwargs):
        est = real(*args, **kwargs)
        return dataclasses.replace(est, errors=2, message="2/40 trials failed with an error "
                                   "(excluded; the first: p=20 trial=0: RuntimeError: boom)")

    monkeypatch.setattr(capacity_module, "estimate_capacity", with_errors)
    code = validation_main(["capacity", "--d", "8", "--solver", "hebbian", "--trials", "4",
                            "--workers", "0", "--format", "json"])
    captured = capsys.readouterr()
    assert code == 1
    assert json.loads(captured.out)["errors"] == 2
    lines = captured.err.strip().splitlines()
    assert lines[-1].startswith("validation capacity: 2 trial(s) failed") and "boom" in lines[-1]
    assert "Traceback" not in captured.err


_BITS_SCRIPT = """
import hashlib, json
from validation import make_instance, solve
sol = solve(make_instance(16, 50, problem="dp", seed=0), solver="optimal")
print(json.dumps({"status": sol.status, "margin": repr(sol.margin), "iterations": sol.iterations,
                  "W": hashlib.sha1(sol.matrix().tobytes()).hexdigest()}))
"""


_LINE_SEARCH_SCRIPT = """
import hashlib
import numpy as np
from validation.solvers.engine import _optimal_kernels as k
rng = np.random.default_rng(1)
out = []
for n in list(range(1, 100)) + [2547]:
    m0, m1, m2 = rng.normal(0.5, 0.5, n), rng.normal(0.3, 0.5, n), rng.normal(0.0, 0.1, n)
    for quadratic in (False, True):
        out.append(k.line_search(m0, m1, m2, quadratic, 0.0, np.zeros(5)))
print(hashlib.sha1(np.array(out).tobytes()).hexdigest())
"""


@pytest.mark.slow
def test_line_search_same_bits_with_a_cold_and_a_warm_numba_cache(tmp_path):
    # The fastmath hinge sums were separate kernels linked into line_search: a fresh compile
    # ran their own library's copy, a warm cache line_search's re-optimised copy (the last
    # bits of the step, then W at ~1e-7 in undecided OP and DP solves at d = 16).
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    cold, warm = (subprocess.run([sys.executable, "-c", _LINE_SEARCH_SCRIPT], capture_output=True,
                                 text=True, env=env, check=True, timeout=600).stdout.split()[-1]
                  for _ in range(2))
    assert cold == warm


@pytest.mark.slow
def test_same_bits_with_a_cold_and_a_warm_numba_cache(tmp_path):
    # The user's case: the same DP solve gave margin 0.276158 with a cold numba cache and
    # 0.276028 with a warm one (kernels compiled with another caller's fastmath flags).
    # One process compiles into an empty cache, the next one loads it: same W, same bits.
    # The mechanism (a fastmath caller compiling the DP generator first, as after a source
    # change with a partly stale cache) is reproduced directly in
    # tests/validation/test_ensembles.py; from a fully cold cache the code before the fix
    # gave equal bits too, so this end-to-end check guards the path, it does not
    # reproduce the old difference.
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    runs = [subprocess.run([sys.executable, "-c", _BITS_SCRIPT], capture_output=True, text=True,
                           env=env, check=True, timeout=600) for _ in range(2)]
    cold, warm = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert any((tmp_path / "numba-cache").rglob("*.nbi")), "the first run did not fill the cache"
    assert cold == warm
