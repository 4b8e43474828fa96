"""Wall time of the default test suite, serial and with pytest-xdist, measured in one run.

Runs the README's test command twice in a row on the same tree, each in a fresh numba
cache (so both pay the same compilation): ``pytest`` (one process) and ``pytest -n auto``
(one worker per core), and writes ``benchmarks/test_suite.md`` with both wall times, the
ratio, the number of tests and the machine.  Each run pins numba, OpenMP and BLAS to one
thread per process (``NUMBA_NUM_THREADS=1``, ``OMP_NUM_THREADS=1``,
``OPENBLAS_NUM_THREADS=1``) so that the parallel run does not oversubscribe the cores.

With ``--baseline REV`` the same run first times the serial suite of an older commit
(checked out into a temporary git worktree, run from there with ``PYTHONPATH`` pointing at
it), so the tree of today and the tree of REV are compared in one run on one machine.

Usage::

    python benchmarks/bench_test_suite.py                      # about 10 min on 2 cores
    python benchmarks/bench_test_suite.py --baseline 9c7d76a   # plus the old tree, about 8 min more
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "test_suite.md"
RUNS = (("serial", ["-p", "no:cacheprovider"]), ("parallel (-n auto)", ["-n", "auto", "-p", "no:cacheprovider"]))


def run(args, tree=ROOT) -> tuple[float, str]:
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               NUMBA_CACHE_DIR=tempfile.mkdtemp(prefix="numba-cache-"))
    if tree != ROOT:
        env["PYTHONPATH"] = str(tree)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=tree, env=env, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ passed", line)), "")
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed (status {done.returncode}):\n{done.stdout[-3000:]}")
    return seconds, summary.strip("= ")


def baseline_rows(rev: str) -> list:
    """The serial suite of commit ``rev``, run from a temporary worktree: ``[(name, seconds, summary)]``."""
    commit = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    tree = Path(tempfile.mkdtemp(prefix="suite-baseline-")) / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), commit], cwd=ROOT, check=True)
    try:
        seconds, summary = run(RUNS[0][1], tree)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=True)
    print(f"serial, tree of {commit}: {seconds:.0f} s ({summary})", flush=True)
    return [(f"serial, tree of {commit} (baseline)", seconds, summary)]


def main() -> int:
    sys.path.insert(0, str(HERE))
    from _machine import cpu_target

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="REV", help="also time the serial suite of this older commit")
    options = parser.parse_args()
    rows = baseline_rows(options.baseline) if options.baseline else []
    for name, args in RUNS:
        seconds, summary = run(args)
        print(f"{name}: {seconds:.0f} s ({summary})", flush=True)
        rows.append((name, seconds, summary))
    serial = next(seconds for name, seconds, _ in rows if name == "serial")
    lines = ["# Wall time of the default test suite", "",
             f"Measured by `python benchmarks/bench_test_suite.py` on {datetime.date.today().isoformat()}, "
             f"{os.cpu_count()} cores ({cpu_target()}), one after the other in one run, each with an empty numba "
             "cache and one numba/OpenMP/BLAS thread per process.", "",
             "The ratio is to the serial run of today's tree."
             + (" The baseline row is the serial suite of an older commit, with that commit's own tests."
                if options.baseline else ""), "",
             "| run | wall time | ratio to serial | pytest summary |", "|---|---|---|---|"]
    lines += [f"| {name} | {seconds:.0f} s ({seconds / 60:.1f} min) | {seconds / serial:.2f} | {summary} |"
              for name, seconds, summary in rows]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
