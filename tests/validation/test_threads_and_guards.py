"""Threads per process, size guards before allocation, loud failures, time limits, solve Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from validation import estimate_capacity, make_instance, solve
from validation.capacity import CapacityDesign, CapacityOptions
from validation.solvers import check_problem, solver_bytes

_LIMIT = "LINEAR_MEMORY_LIMIT_BYTES"


def _python(code, env=None, timeout=120):
    full = dict(os.environ)
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        full.pop(var, None)
    full.update(env or {})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out.stdout


_REPORT = ("import numba, json; from threadpoolctl import threadpool_info; "
           "print(json.dumps([numba.get_num_threads(), sorted({i['num_threads'] for i in threadpool_info()})]))")


@pytest.mark.parametrize("code, env, expected", [
    ("from validation import make_instance, solve; solve(make_instance(8, 20), 'hebbian')", {}, [1, [1]]),
    ("from validation.cli import main; main(['solve', '--d', '8', '--p', '20', '--solver', 'hebbian', "
     "'--threads', '2'])", {}, [2, [2]]),
    ("from validation import make_instance, solve; solve(make_instance(8, 20), 'hebbian')",
     {"NUMBA_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}, [2, [2]]),
])
def test_thread_policy(code, env, expected):
    # default one thread each; --threads and the user's variables override (a 2-core machine)
    if (os.cpu_count() or 1) < 2 and expected[0] == 2:
        pytest.skip("needs 2 cores")
    lines = _python(code + "\n" + _REPORT, env).strip().splitlines()
    assert json.loads(lines[-1]) == expected


def test_guards_before_allocation(monkeypatch):
    monkeypatch.setenv(_LIMIT, str(10**6))
    with pytest.raises(ValueError, match=r"make_instance\(d=1000, p=1000\).*above the limit"):
        make_instance(1000, 1000)
    instance = make_instance(200, 50)  # 0.24 MB of instance, but d^2 x 32 vectors for optimal
    assert solver_bytes(200, 50) > 10**6
    with pytest.raises(ValueError, match="solver 'optimal' at d=200, p=50.*LINEAR_MEMORY_LIMIT_BYTES"):
        solve(instance, "optimal")
    with pytest.raises(ValueError, match="kappa must be 1 for solver 'lp'"):
        check_problem(16, 40, "op", "lp", 0.5)
    monkeypatch.delenv(_LIMIT)
    with pytest.raises(ValueError, match="max_nonzeros"):
        check_problem(100, 3000, "op", "lp")


@pytest.mark.parametrize("argv, message", [
    (["--d", "30000", "--p", "50"], "solver 'optimal' at d=30000, p=50"),
    (["--d", "16", "--p", "30000000"], "at d=16, p=30000000"),
])
def test_solve_cli_size_guard(argv, message):
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "validation", "solve", *argv], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
    assert time.perf_counter() - start < 30  # nothing of 7-10 GB was allocated first


@pytest.mark.parametrize("kwargs, message", [
    ({"solver": "lp", "kappa": 0.5}, "kappa must be 1"),
    ({"d": 100, "solver": "lp"}, "max_nonzeros"),
    ({"d": 1000000}, "above the limit"),
])
def test_capacity_refuses_impossible_runs_before_any_trial(kwargs, message):
    args = {"d": 16, **kwargs}
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        estimate_capacity(args.pop("d"), design=CapacityDesign(trials=2, rounds=0), **args)
    assert time.perf_counter() - start < 20


def test_capacity_raises_when_every_trial_fails():
    # a task function that fails on every task (math.sqrt of a Task): the first error is quoted
    with pytest.raises(ValueError, match=r"every trial .* failed .* first: p=\d+ trial=0: TypeError"):
        estimate_capacity(16, design=CapacityDesign(kind="grid", trials=2, rounds=0, center=100),
                          options=CapacityOptions(task_function="math:sqrt"))


def test_capacity_cli_exit_2_with_the_reason():
    out = subprocess.run([sys.executable, "-m", "validation", "capacity", "--d", "16", "--solver", "lp",
                          "--kappa", "0.5", "--workers", "0"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "kappa must be 1 for solver 'lp'" in out.stderr


@pytest.mark.parametrize("solver", ["optimal", "lp"])
def test_tiny_time_limit_is_undecided(solver):
    sol = solve(make_instance(16, 60, seed=1), solver, time_limit=1e-9)
    assert sol.status == "undecided" and not sol.converged and sol.message


def test_first_solve_in_a_fresh_numba_cache_decides(tmp_path):
    # compiling the kernels takes ~10 s on a cold cache; it must not eat the 1 s budget
    code = ("from validation import make_instance, solve\n"
            "r = solve(make_instance(16, 60, 'op', seed=1), 'optimal', time_limit=1.0)\n"
            "print(r.status, r.seconds)")
    status, seconds = _python(code, {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}, timeout=300).split()
    assert status in ("stored", "not_stored") and float(seconds) < 1.0


def test_solve_interrupt_prints_best_point_and_exits_130():
    proc = subprocess.Popen([sys.executable, "-m", "validation", "solve", "--d", "128", "--p", "2600",
                             "--format", "json", "--progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.time() + 90
    line = ""
    while time.time() < deadline and "full pass" not in line:  # the solve has started
        line = proc.stderr.readline()
        assert line or proc.poll() is None, "solve ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    row = json.loads(out)
    assert row["message"].startswith("interrupted") and row["converged"] is False
    assert row["status"] in ("undecided", "stored")
