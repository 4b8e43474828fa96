"""DP capacity with candidate generators 1 and 2, side by side.

Runs the DP capacity estimates of the full reproduction (``validation.reproduce.FULL``: the
same design, trials per point, seed and solver options, from
``validation.reproduce.plan.capacity_runs``) once with the instances of each generator
(``estimate_capacity(..., generator=g)``) into the result store
``experiments/capacity/dp_generators/results.sqlite`` (a stopped run resumes there), and writes the
estimates to ``experiments/capacity/dp_generators.json`` with the command, commit, date and wall time.

The trial seeds are the full run's, so every trial of generator 2 has the same inputs as
its generator-1 twin and other DP candidates; the generator-1 estimates are those of the
full reproductions made before generator 2 (the decisions are certified and the trials
seeded by their keys).  The comparison table, ``experiments/capacity/README.md``, is
written from this file by ``python -m experiments.capacity.tables`` (checked in CI with ``--check``).

Usage::

    python -m experiments.capacity.dp_generators [--dims 16 32 64] [--workers 2]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

from validation.capacity import estimate_capacity
from validation.executors import make_executor, terminate_executor
from validation.reproduce.config import FULL
from validation.reproduce.plan import capacity_runs
from validation.store import ResultStore

HERE = Path(__file__).resolve().parent
GENERATORS = (1, 2)


def dp_runs(dims) -> list:
    """``(d, settings)`` of the full reproduction's DP estimates of the optimal memory at ``dims``."""
    runs = [(d, settings) for problem, solver, d, kappa, settings in capacity_runs(FULL)
            if problem == "dp" and solver == FULL.optimal_solver and kappa == 1.0 and d in dims]
    missing = sorted(set(dims) - {d for d, _ in runs})
    if missing:
        raise SystemExit(f"experiments/capacity/dp_generators.py: the full reproduction has no DP estimate at d = {missing}")
    return runs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--store", default=str(HERE / "dp_generators"))
    parser.add_argument("--out", default=str(HERE / "dp_generators.json"))
    args = parser.parse_args(argv)
    runs = dp_runs(args.dims)
    t_start = time.perf_counter()
    estimates = []
    executor = make_executor("local", args.workers)
    try:
        with ResultStore(args.store) as store:
            for d, settings in runs:
                for generator in GENERATORS:
                    t0 = time.perf_counter()
                    est = estimate_capacity(d, "dp", FULL.optimal_solver, 1.0, "gaussian", seed=FULL.seed,
                                            executor=executor, store=store, progress=True, generator=generator,
                                            **settings)
                    estimates.append({**est.to_dict(), "wall_s": time.perf_counter() - t0})
                    print(f"d = {d}, generator {generator}: p_c = {est.p_c:.1f} [{est.p_c_low:.1f}, "
                          f"{est.p_c_high:.1f}] ({est.status}), {estimates[-1]['wall_s']:.0f} s", flush=True)
    finally:
        terminate_executor(executor)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    command = "python -m experiments.capacity.dp_generators " + " ".join(argv if argv is not None else sys.argv[1:])
    record = {"command": command.strip(), "date": datetime.date.today().isoformat(), "code_commit": commit,
              "generators": list(GENERATORS), "workers": args.workers, "seed": FULL.seed,
              "wall_seconds": time.perf_counter() - t_start, "estimates": estimates}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
