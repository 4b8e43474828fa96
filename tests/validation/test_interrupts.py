"""Ctrl-C of the sweep commands: real subprocesses, real SIGINT to the process group.

Each run must end within 10 s with status 130, print no traceback, leave a store that
passes ``PRAGMA integrity_check``, and keep every finished trial: a rerun reuses the
rows committed before the interrupt (their ``created`` stamps do not change) and
records no error for the trials that were in flight.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

# a small capacity run: 5 grid points x 8 trials, about 3-6 s on 2 cores
_RUN = ["capacity", "--d", "32", "--trials", "8", "--rounds", "1", "--format", "csv"]


def _start(store, workers):
    return subprocess.Popen([sys.executable, "-m", "validation", *_RUN, "--workers", str(workers),
                             "--out", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _rows(store):
    """(integrity_check answer, {key: created} of the finished rows, number of error rows)."""
    path = os.path.join(store, "results.sqlite")
    if not os.path.exists(path):
        return "ok", {}, 0
    con = sqlite3.connect(path)
    try:
        check = con.execute("PRAGMA integrity_check").fetchone()[0]
        rows = con.execute("SELECT p, trial, status, created FROM results").fetchall()
    finally:
        con.close()
    return check, {(p, t): c for p, t, s, c in rows if s != "error"}, sum(s == "error" for *_, s, _ in rows)


def _interrupt(store, workers, delay, signals=1):
    """Start a run, SIGINT its process group after ``delay`` s; (status or None if it ended first, stderr)."""
    proc = _start(store, workers)
    time.sleep(delay)
    alive = proc.poll() is None
    sent = time.perf_counter()
    for _ in range(signals):
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:  # it ended between poll() and the signal
            break
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - the failure this test is about
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"workers={workers}: no exit within 10 s of SIGINT (sent {delay:.2f} s after start)")
    elapsed = time.perf_counter() - sent
    # CPython's own atexit hook of concurrent.futures can report a closed wake-up pipe when the
    # signal lands while the pool shuts down ("Exception ignored in: <module 'threading'>",
    # OSError in process.py _python_exit); that report, and only that one, is not the package's
    err = re.sub(r"Exception ignored in: <module 'threading'.*?OSError: \[Errno 9\] Bad file descriptor\n?", "", err,
                 flags=re.S) if "concurrent/futures/process.py" in err else err
    assert "Traceback" not in err, err
    assert elapsed < 10
    if alive and proc.returncode == 0:
        # The signal came after the command had finished its work: it ends normally, with
        # its whole output (the CSV's last summary row) and no interrupt line.
        assert out.rstrip().splitlines()[-1].startswith("theory_source"), (out, err)
        assert "interrupted" not in err, err
        return None, err
    if alive:
        # one SIGINT or two: exit status 130, never the end by the signal itself (-2; see
        # test_interrupt_inside_exec_under_python_m for how that could happen)
        allowed = (130,) if sys.version_info < (3, 14) else (130, -signal.SIGINT)
        assert proc.returncode in allowed, (proc.returncode, err)
        assert err.strip().splitlines()[-1] == "validation: interrupted", err
        return 130, err
    return None, err


def _check_resumed(store, before):
    """Integrity, no error rows, and every row finished before is still the same row."""
    check, rows, errors = _rows(store)
    assert check == "ok"
    assert errors == 0  # an interrupted trial is never recorded
    for key, created in before.items():
        assert rows.get(key) == created, key
    return rows


def _finish(store):
    done = subprocess.run([sys.executable, "-m", "validation", *_RUN, "--workers", "0", "--out", store],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Output of the run without interrupts (the interrupted-and-resumed runs must print the same)."""
    return _finish(str(tmp_path_factory.mktemp("reference")))


@pytest.fixture(scope="module")
def run_seconds(tmp_path_factory):
    """Wall time of the whole run without workers on this machine (the interrupt times scale with it)."""
    t0 = time.perf_counter()
    _finish(str(tmp_path_factory.mktemp("timed")))
    return time.perf_counter() - t0


def _cycle(tmp_path, name, schedule, reference):
    """Interrupt runs on one store at the delays of ``schedule``, then finish it and check resumption."""
    store = str(tmp_path / name)
    before = {}
    interrupted = 0
    for workers, delay, signals in schedule:
        status, _ = _interrupt(store, workers, delay, signals)
        interrupted += status == 130
        before = _check_resumed(store, before)
    assert _finish(store) == reference
    _check_resumed(store, before)
    return interrupted


def test_interrupt_with_and_without_workers(tmp_path, reference):
    # early enough that the run (about 3-6 s) is still going when the signal comes
    assert _cycle(tmp_path, "store", [(2, 2.0, 1), (0, 1.5, 1)], reference) == 2


@pytest.mark.slow
def test_repeated_interrupts_at_random_times(tmp_path, reference, run_seconds):
    # the signals come at random fractions of this machine's run time (not before 0.3 s: the
    # interpreter starts up first), so that most land while the run is going on any
    # machine; a later run on the same store resumes with fewer trials left and may end
    # before its signal (checked the same way)
    rng = np.random.default_rng(20261130)
    interrupted = 0
    for cycle in range(5):  # 5 stores x 4 interrupts, workers 2 and 0 alternating
        delays = [max(0.3, float(rng.uniform(0.1, 0.6)) * run_seconds) for _ in range(4)]
        schedule = [(2 if k % 2 == 0 else 0, delays[k], 2 if k == 3 else 1) for k in range(4)]
        interrupted += _cycle(tmp_path, f"store{cycle}", schedule, reference)
    assert interrupted >= 10


_SWALLOWED = r"""
import ctypes, ctypes.util, os, signal, sys, time
from validation.cli import install_interrupt_handling
install_interrupt_handling()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
sent = []
def cmp(a, b):  # a SIGINT that arrives while C code runs a Python callback
    if not sent:
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here and its exception cannot leave
            pass
    return 0
values = (ctypes.c_int * 8)(*range(8))
try:
    libc.qsort(values, 8, ctypes.sizeof(ctypes.c_int), CMP(cmp))
    print("sorted", flush=True)
    time.sleep(5)
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    print(f"interrupted after {time.perf_counter() - sent[0]:.3f} s", flush=True)
"""


def test_interrupt_swallowed_by_a_callback_is_raised_again():
    # numba's compiler calls Python from C (ctypes) while it loads its cache; a first
    # SIGINT that lands there must neither print "Exception ignored" nor be lost
    proc = subprocess.run([sys.executable, "-c", _SWALLOWED], capture_output=True, text=True, timeout=30)
    assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.split("\n")
    assert lines[0] == "sorted", proc.stdout
    assert lines[1].startswith("interrupted after "), proc.stdout
    assert float(lines[1].split()[2]) < 1.0, proc.stdout


# the end of a script that runs `command(args)` as the only command of `validation.cli.main()`
_ONE_COMMAND = r"""
def build_parser():
    parser = ArgumentParser(prog="validation")
    parser.set_defaults(func=command, threads=None)
    return parser
cli.build_parser = build_parser
sys.argv = ["validation"]
"""

_SWALLOWED_AT_THE_END = r"""
import ctypes, ctypes.util, os, signal, sys, time
from replica.common.cliutil import ArgumentParser
from validation import cli
libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
sent = []
def cmp(a, b):  # the first SIGINT arrives while C code runs a Python callback
    if not sent:
        sent.append(1)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here and its exception cannot leave
            pass
    return 0
def command(args):  # ends before the swallowed SIGINT can be raised again
    values = (ctypes.c_int * 8)(*range(8))
    libc.qsort(values, 8, ctypes.sizeof(ctypes.c_int), CMP(cmp))
    print("done", flush=True)
    return 0
""" + _ONE_COMMAND + r"""
status = cli.main()
time.sleep(10 * cli.REDELIVER_DELAY)  # a redelivery still pending would fire here
os.kill(os.getpid(), signal.SIGINT)  # and so would a late SIGINT
time.sleep(0.1)
sys.exit(status)
"""


def test_interrupt_swallowed_just_before_the_command_returns():
    # the first SIGINT is swallowed by a callback and the command returns before it is
    # raised again: still the line and status 130, and nothing after the command (the
    # pending redelivery, a late SIGINT, the interpreter's shutdown) ends it otherwise
    proc = subprocess.run([sys.executable, "-c", _SWALLOWED_AT_THE_END], capture_output=True, text=True,
                          timeout=30)
    assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == "done\n", proc.stdout
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert proc.stderr == "validation: interrupted\n", proc.stderr


_INTERRUPTED_IN_EXEC = r"""
import sys
from replica.common.cliutil import ArgumentParser
from validation import cli
def command(args):  # the SIGINT lands in code run by exec() of a string (as in numba's compiler)
    exec("import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)")
    print("not interrupted", flush=True)
    return 0
""" + _ONE_COMMAND + r"""
sys.exit(cli.main())
"""


def test_interrupt_inside_exec_under_python_m(tmp_path):
    # CPython notes a KeyboardInterrupt that leaves exec() of a string as unhandled even
    # when the command catches it, and a `python -m` process then ends by SIGINT after
    # finalizing (status -2); the command line clears that note and ends with the line
    # and status 130.  From CPython 3.14 (gh-128130) the note can no longer be cleared:
    # there the end by SIGINT is what the module docstring says may happen.
    (tmp_path / "interrupted_in_exec.py").write_text(_INTERRUPTED_IN_EXEC)
    proc = subprocess.run([sys.executable, "-m", "interrupted_in_exec"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == "", proc.stdout
    allowed = (130,) if sys.version_info < (3, 14) else (130, -signal.SIGINT)
    assert proc.returncode in allowed, (proc.returncode, proc.stderr)
    assert proc.stderr == "validation: interrupted\n", proc.stderr
