"""``validation compare``: the table "theory against simulation" (:mod:`validation.capacity.compare`).

Rows: the memories of :data:`validation.capacity.TABLE_ROWS` (optimal OP and DP, rank-
constrained optimal and Hebbian memories).  Columns: measured p_c with its 95 %
interval, the finite-size theory p_c, the relative difference, measured and theory
alpha.  Trials are kept in OUT/results.sqlite, so an interrupted run resumes.
See ``notes/capacity_estimation.md``.
"""

from __future__ import annotations

import os
import sys

from replica.common.cliutil import FORMATS, add_command, check_output_folder, render

from ..solvers.engine.registry import solver_spec
from .common import executor_from_args

_COLUMNS = ["memory", "d", "p_c", "p_c_low", "p_c_high", "theory_p_c", "rel_diff", "alpha", "theory_alpha",
            "trials", "undecided"]


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "compare", run,
        help="measure p_c of a fixed set of memories and print it beside the finite-size theory",
        description="Measure p_c with its 95 % interval for each memory of validation.capacity.TABLE_ROWS "
                    "(optimal OP and DP, rank-constrained optimal and Hebbian memories; --max-d keeps the small "
                    "ones) and print one row per memory: measured p_c and interval, the finite-size theory "
                    "p_c, the relative difference, measured and theory alpha, trials (undecided).  "
                    "OUT/comparison.md and OUT/comparison.csv are written in every format.",
        formats=("markdown", *FORMATS), format_default="markdown",
        seed=True, seed_help="base seed, an integer in [0, 2**63 - 1] (default: the package seed, "
             "replica.common.seeds.DEFAULT_SEED)", executor=True)
    parser.add_argument("--trials", type=int, default=40, help="instances per grid point per round (>= 1)")
    parser.add_argument("--rounds", type=int, default=2, help="refinement rounds (>= 0)")
    parser.add_argument("--out", default="compare-out",
                        help="folder for results.sqlite, comparison.csv and comparison.md (default compare-out)")
    parser.add_argument("--time-limit", type=float, default=600.0,
                        help="wall-time budget (s) of one optimal solve; past it the trial is undecided")
    parser.add_argument("--max-d", type=int, default=None, help="only rows with d <= MAX_D (a cheap subset)")


def _measure_rows(args, rows_spec) -> list:
    """One comparison row per table row (capacity estimates through one store and executor)."""
    from ..capacity import CapacityDesign, CapacityOptions, comparison_row, estimate_capacity
    from ..runtime.store import ResultStore

    store = ResultStore(args.out)
    executor = executor_from_args(args)
    design = CapacityDesign(trials=args.trials, rounds=args.rounds)
    rows = []
    try:
        for problem, solver, d, kappa, ensemble in rows_spec:
            sys.stderr.write(f"compare: {problem} {solver} d={d} kappa={kappa:g}\n")
            options = CapacityOptions(solver_options=solver_spec(solver).time_limited_options(args.time_limit),
                                      executor=executor, store=store, progress=True, experiment="compare")
            est = estimate_capacity(d, problem, solver, kappa, ensemble, seed=args.seed, design=design,
                                    options=options)
            rows.append(comparison_row(est))
    finally:
        executor.shutdown()
        store.close()
    return rows


def run(args) -> int:
    from replica.common.checks import check_int, check_real

    from ..capacity import TABLE_ROWS, comparison_markdown
    from ..runtime.store import STORE_SUFFIXES

    check_int(args.trials, "trials", low=1)
    check_real(args.time_limit, "time-limit", low=0.0, low_open=True)
    max_d = None if args.max_d is None else check_int(args.max_d, "max-d", low=2)
    rows_spec = [r for r in TABLE_ROWS if max_d is None or r[2] <= max_d]
    if not rows_spec:
        raise ValueError(f"max-d = {args.max_d} leaves no rows (smallest d is {min(r[2] for r in TABLE_ROWS)})")
    check_output_folder(args.out, file_suffixes=STORE_SUFFIXES)
    rows = _measure_rows(args, rows_spec)
    md = comparison_markdown(rows)
    folder = args.out if os.path.isdir(args.out) else os.path.dirname(os.path.abspath(args.out))
    with open(os.path.join(folder, "comparison.md"), "w") as fh:
        fh.write(md)
    with open(os.path.join(folder, "comparison.csv"), "w") as fh:
        render(rows, list(rows[0]), "csv", stream=fh)
    if args.format == "markdown":
        sys.stdout.write(md)
    else:
        render(rows, _COLUMNS, args.format, digits=4, stream=sys.stdout)
    return 0
