"""Fuzz both command lines: hypothesis-generated argument lists for every sub-command.

Every run must exit 0 or 2 (an interrupt is 130, which a fuzz run never sends), must
never print a traceback, must say what is wrong in one line on stderr when it exits 2,
and runs in a child process whose address space is capped with ``resource.setrlimit``.
Sizes are small so that the valid runs finish in seconds; ``validation reproduce`` and
``validation compare`` are only fuzzed with argument lists that hold at least one bad
value, because their valid runs take minutes (the quick reproduction runs in CI).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MEMORY_LIMIT = 4 << 30  # bytes of address space per child (numba and LLVM need ~1.5 GiB)
TIMEOUT = 120.0  # seconds per run: a run that takes longer counts as a hang

NAN = "nan"
SEEDS = ["0", "1", "-1", str(2**63), str(2**63 - 1), "abc", "1.5"]
KAPPAS = ["1", "0.5", "0.25", "0", "-1", "1.5", NAN, "x"]
FORMATS = ["table", "csv", "json", "xml"]

# option -> candidate values (None: a flag without value)
VOCABULARY = {
    ("replica", "table"): {
        "--kappa": KAPPAS, "--kappa-grid": ["0.1:1:5", "a:b:c", "0.1:1:0", "0.1:1:1000000000000"],
        "--dps": ["15", "30", "0", "-3", "x"], "--format": FORMATS, "--progress": None},
    ("replica", "capacity"): {
        "--d": ["2", "8", "16", "0", "-1", "x", "1000000000000"], "--margin": ["0", "0.5", "-1", "100", NAN],
        "--kappa": KAPPAS, "--top-k": ["1", "2", "0", "300", "1000000000"], "--hebbian": None,
        "--ensemble": ["gaussian", "sphere", "cube"], "--outputs": ["2", "4", "1", "0"],
        "--problem": ["op", "dp", "xp"], "--rel-tol": ["1e-2", "1e-3", "0", "1e-12", "-1"],
        "--d-out": ["4", "8", "32", "1", "0", "x"], "--model": ["finite_size", "budget", "hull_budget", "best"],
        "--seed": SEEDS, "--format": FORMATS},
    ("replica", "models"): {"--format": FORMATS},
    ("replica", "saddle"): {
        "--d": ["8", "16", "1", "x"], "--p": ["10", "30", "1", "0", "1000000000000"],
        "--fraction": ["0.5", "0.9", "1.5", "-1", NAN], "--samples": ["2000", "0", "1000000000000"],
        "--exact-competitors": ["0", "4", "-1"], "--margin": ["0", "0.3", "-2"], "--seed": SEEDS,
        "--format": FORMATS},
    ("validation", "solve"): {
        "--d": ["2", "4", "8", "12", "0", "1000000"], "--p": ["1", "2", "10", "30", "0", "1000000000"],
        "--problem": ["op", "dp", "xp"], "--solver": ["hebbian", "optimal", "lp", "adam", "newton"],
        "--kappa": KAPPAS, "--ensemble": ["gaussian", "sphere", "cube"], "--seed": SEEDS,
        "--threads": ["1", "2", "0", "-1"], "--format": FORMATS},
    ("validation", "capacity"): {
        "--d": ["4", "6", "1", "0", "1000000"], "--problem": ["op", "dp"],
        "--solver": ["hebbian", "optimal", "lp", "newton"], "--kappa": KAPPAS,
        "--trials": ["1", "2", "0", "-1"], "--rounds": ["1", "0"], "--design": ["grid", "bracket", "auto", "x"],
        "--criterion": ["all", "accuracy:0.9", "accuracy:2", "accuracy:", "most"],
        "--workers": ["0", "-1"], "--seed": SEEDS, "--format": FORMATS},
    ("validation", "accuracy"): {
        "--d": ["6", "8", "1"], "--loads": ["5", "10", "0", "-3"], "--alpha": ["0.125", "0.5", "0", "-1"],
        "--solver": ["hebbian", "newton"], "--trials": ["2", "3", "1", "0"],
        "--ensemble": ["gaussian", "sphere", "cube"], "--workers": ["0"], "--seed": SEEDS,
        "--format": FORMATS},
    ("validation", "export"): {
        "--out": ["{tmp}/missing", "/proc/nonexistent", "{tmp}/afile/sub", "{tmp}"], "--stdout": None,
        "--format": FORMATS},
}

# Commands whose valid runs are too long to fuzz: each list gets one of these bad pairs.
LONG = {
    ("validation", "compare"): (
        {"--trials": ["1", "2"], "--rounds": ["1"], "--time-limit": ["1", "10"], "--max-d": ["16"],
         "--workers": ["0"], "--format": ["markdown", "table", "csv", "json"]},
        [["--trials", "0"], ["--max-d", "8"], ["--time-limit", "-1"], ["--rounds", "x"],
         ["--format", "xml"], ["--out", "/proc/nonexistent"], ["--seed", str(2**63)]]),
    ("validation", "reproduce"): (
        {"--quick": None, "--trials": ["1", "2"], "--optimal-solver": ["optimal", "lp"], "--workers": ["0"]},
        [["--trials", "0"], ["--optimal-solver", "newton"], ["--out", "/proc/nonexistent"],
         ["--seed", "-1"], ["--format", "xml"], ["--threads", "0"]]),
}


@st.composite
def argument_lists(draw, commands):
    program, command = draw(st.sampled_from(sorted(commands)))
    vocabulary, bad = (VOCABULARY[(program, command)], None) if (program, command) in VOCABULARY \
        else LONG[(program, command)]
    options = draw(st.lists(st.sampled_from(sorted(vocabulary)), max_size=5, unique=True))
    argv = [command]
    for option in options:
        argv.append(option)
        if vocabulary[option] is not None:
            argv.append(draw(st.sampled_from(vocabulary[option])))
    if bad is not None:
        argv += draw(st.sampled_from(bad))
    if draw(st.booleans()) and draw(st.booleans()):
        argv.append(draw(st.sampled_from(["--bogus", "17", "--d"])))
    return program, argv


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run(program, argv, tmp):
    argv = [a.replace("{tmp}", str(tmp)) for a in argv]
    (tmp / "afile").write_text("a file, not a folder\n")
    env = dict(os.environ, LINEAR_MEMORY_LIMIT_BYTES=str(1 << 30))
    code = f"import sys; from {program}.cli import main; sys.exit(main(sys.argv[1:]))"
    try:
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                              timeout=TIMEOUT, preexec_fn=_limit_memory, env=env, cwd=tmp, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{program} {' '.join(argv)}: no answer within {TIMEOUT} s")
    where = f"{program} {' '.join(argv)}\nexit {proc.returncode}\nstderr:\n{proc.stderr[-2000:]}"
    assert proc.returncode in (0, 2), where
    assert "Traceback" not in proc.stderr, where
    if proc.returncode == 2:
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith(f"{program}") and "error" in last, where
    return proc


def _fuzz(commands, examples):
    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(case=argument_lists(sorted(commands)))
    def check(tmp_path_factory, case):
        _run(*case, tmp_path_factory.mktemp("fuzz"))

    return check


ALL = set(VOCABULARY) | set(LONG)


def test_cli_fuzz_every_command_once(tmp_path):
    # One malformed call per sub-command: the fuzz below must not miss a command.
    for program, command in sorted(ALL):
        proc = _run(program, [command, "--bogus"], tmp_path)
        assert proc.returncode == 2


def test_cli_fuzz_quick(tmp_path_factory):
    _fuzz(ALL, 12)(tmp_path_factory)


@pytest.mark.slow
def test_cli_fuzz_long(tmp_path_factory):
    _fuzz(ALL, 150)(tmp_path_factory)
