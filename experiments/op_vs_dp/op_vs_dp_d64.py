"""OP against DP near capacity at d = 64: capacity, spectra, scores.

A reproduce run (:func:`validation.reproduce.reproduce`) with the configuration ``CONFIG``:
optimal-memory capacity estimates of OP and DP at d = 64 (8 trials per grid point), the
Hebbian estimate at d = 64, and spectra and scores of 3 instances per problem at the
measured p_c (full rank and kappa = 0.5), in one process: figures 1 to 5 of the reproduction.  It writes figures, CSV tables,
``report.md`` and the saved data ``reproduce_data.json`` into
``experiments/op_vs_dp/op_vs_dp_d64/``, with a provenance record.  Finished trials are kept
in ``results.sqlite`` there (not committed), so an interrupted run resumes.

Usage::

    python -m experiments.op_vs_dp.op_vs_dp_d64            # measure (about 3 min on one core)
    python -m experiments.op_vs_dp.op_vs_dp_d64 --render   # the report, tables and figures from the saved data
"""

from __future__ import annotations

import pathlib
import sys
from dataclasses import replace

from validation.reproduce import FULL, render_saved, reproduce
from validation.runtime.sweep import make_executor
from experiments.runner import run
from experiments.provenance import write_record

OUT = pathlib.Path(__file__).resolve().parent / "op_vs_dp_d64"
# figures 1 to 5 only: no large-d estimates, accuracy curves, K-answer estimates or Zipf errors
CONFIG = replace(FULL, name="op-vs-dp-d64", optimal_dims=(64,), hebbian_dims=(64,), kappa_dim=64,
                 kappas=(), trials=8, rounds=1, initial_points=4, spectra_dim=64, spectra_instances=3,
                 spectra_kappa=0.5, theory_dims=(16, 32, 64, 128, 256), time_limit=120.0, scale_runs=(),
                 accuracy_dims=(), accuracy_optimal_dims=(), accuracy_adam_dims=(), outputs_grid=(), zipf_dims=())


def _measure(job) -> int:
    executor = make_executor("local", workers=1)
    try:
        result = reproduce(str(OUT), CONFIG, executor=executor, progress=False, log=sys.stderr)
    finally:
        executor.shutdown()
    write_record(OUT / "provenance.json", command=job.command, seed=CONFIG.seed, seconds=result.seconds,
                 trials=result.trials_run, status=result.status)
    print(result, file=sys.stderr)
    return 0 if result.converged else 1


def _render(job) -> None:
    render_saved(str(OUT))


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=CONFIG.seed)


if __name__ == "__main__":
    sys.exit(main())
