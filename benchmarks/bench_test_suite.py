"""Wall time of the default test suite, serial and with pytest-xdist, measured in one run.

Runs the README's test command twice in a row on the same tree, each in a fresh numba
cache (so both pay the same compilation): ``pytest`` (one process) and ``pytest -n auto``
(one worker per core), and writes ``benchmarks/test_suite.md`` with both wall times, the
ratio, the number of tests and the machine.  Each run pins numba, OpenMP and BLAS to one
thread per process (``NUMBA_NUM_THREADS=1``, ``OMP_NUM_THREADS=1``,
``OPENBLAS_NUM_THREADS=1``) so that the parallel run does not oversubscribe the cores.

Usage::

    python benchmarks/bench_test_suite.py            # about 12 min on 2 cores
"""

from __future__ import annotations

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


def run(args) -> tuple[float, str]:
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               NUMBA_CACHE_DIR=tempfile.mkdtemp(prefix="numba-cache-"))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ passed", line)), "")
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed (status {done.returncode}):\n{done.stdout[-3000:]}")
    return seconds, summary.strip("= ")


def main() -> int:
    sys.path.insert(0, str(HERE))
    from _machine import cpu_target

    rows = []
    for name, args in RUNS:
        seconds, summary = run(args)
        print(f"{name}: {seconds:.0f} s ({summary})", flush=True)
        rows.append((name, seconds, summary))
    serial = rows[0][1]
    lines = ["# Wall time of the default test suite", "",
             f"Measured by `python benchmarks/bench_test_suite.py` on {datetime.date.today().isoformat()}, "
             f"{os.cpu_count()} cores ({cpu_target()}), one after the other in one run, each with an empty numba "
             "cache and one numba/OpenMP/BLAS thread per process.", "",
             "| run | wall time | ratio to serial | pytest summary |", "|---|---|---|---|"]
    lines += [f"| {name} | {seconds:.0f} s ({seconds / 60:.1f} min) | {seconds / serial:.2f} | {summary} |"
              for name, seconds, summary in rows]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
