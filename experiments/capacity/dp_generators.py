"""DP capacity with candidate generators 1 and 2, side by side.

Runs the DP capacity estimates of the full reproduction (``validation.reproduce.FULL``: the
same design, trials per point, seed and solver options, from
``validation.reproduce.plan.capacity_runs``) once with the instances of each generator
(``estimate_capacity(..., generator=g)``), and writes the estimates to
``experiments/capacity/dp_generators.json`` and its provenance record (command, code commit, date,
wall time) to ``experiments/capacity/dp_generators.provenance.json``.  The trials go to a
temporary result store, or to ``--store DIR`` (kept there; a stopped run resumes from it).

The trial seeds are the full run's, so every trial of generator 2 has the same inputs as
its generator-1 twin and other DP candidates; the generator-1 estimates are those of the
full reproductions made before generator 2 (the decisions are certified and the trials
seeded by their keys).  The comparison table, ``experiments/capacity/README.md``, is
written from this file by ``python -m experiments.capacity.headline`` (checked by ``python -m experiments check``).

Usage::

    python -m experiments.capacity.dp_generators [--dims 16 32 64] [--workers 2] [--store DIR] [--out DIR]
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from pathlib import Path

from validation.capacity import estimate_capacity
from validation.runtime.executors import make_executor, terminate_executor
from validation.reproduce.config import FULL
from validation.reproduce.plan import capacity_runs
from validation.runtime.store import ResultStore
from experiments.runner import run

HERE = Path(__file__).resolve().parent
DATA = HERE / "dp_generators.json"
GENERATORS = (1, 2)


def dp_runs(dims) -> list:
    """``(d, design, options)`` of the full reproduction's DP estimates of the optimal memory at ``dims``."""
    runs = [(d, design, options) for problem, solver, d, kappa, design, options in capacity_runs(FULL)
            if problem == "dp" and solver == FULL.optimal_solver and kappa == 1.0 and d in dims]
    missing = sorted(set(dims) - {d for d, _, _ in runs})
    if missing:
        raise SystemExit(f"experiments/capacity/dp_generators.py: the full reproduction has no DP estimate at d = {missing}")
    return runs


def _arguments(parser) -> None:
    parser.add_argument("--dims", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--store", default=None, metavar="DIR",
                        help="result store of the trials (default: a temporary one, removed after the run)")


def _measure(job) -> int:
    args = job.args
    runs = dp_runs(args.dims)
    estimates = []
    executor = make_executor("local", args.workers)
    with tempfile.TemporaryDirectory(prefix="dp_generators_") as scratch:
        try:
            with ResultStore(args.store or scratch) as store:
                for d, design, options in runs:
                    for generator in GENERATORS:
                        t0 = time.perf_counter()
                        run_options = dataclasses.replace(options, executor=executor, store=store, progress=True,
                                                          generator=generator)
                        est = estimate_capacity(d, "dp", FULL.optimal_solver, 1.0, "gaussian", seed=FULL.seed,
                                                design=design, options=run_options)
                        estimates.append({**est.to_dict(), "wall_s": time.perf_counter() - t0})
                        print(f"d = {d}, generator {generator}: p_c = {est.p_c:.1f} [{est.p_c_low:.1f}, "
                              f"{est.p_c_high:.1f}] ({est.status}), {estimates[-1]['wall_s']:.0f} s", flush=True)
        finally:
            terminate_executor(executor)
    data = job.path(DATA)
    data.write_text(json.dumps({"generators": list(GENERATORS), "workers": args.workers, "seed": FULL.seed,
                                "estimates": estimates}, indent=1) + "\n")
    job.record(data, seed=FULL.seed, workers=args.workers, generators=list(GENERATORS))
    print(f"wrote {data}")
    return 0


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, argv=argv, arguments=_arguments, seed=FULL.seed)


if __name__ == "__main__":
    raise SystemExit(main())
