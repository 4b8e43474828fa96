"""``validation reproduce``: run the experiments and write figures, CSV tables and report.md.

See ``notes/reproduce.md``.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from ._cmd_capacity import add_executor_arguments, executor_from_args


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "reproduce", help="theory against simulation: figures, CSV tables and report.md",
        description="Run the capacity, spectrum and score experiments (resumable: finished trials are "
                    "kept in OUT/results.sqlite) and write PNG figures, CSV tables and OUT/report.md.")
    parser.add_argument("--quick", action="store_true", help="small d and few trials (< 5 min on 2 cores)")
    parser.add_argument("--out", default="reproduce-out", help="output folder (default: reproduce-out)")
    parser.add_argument("--trials", type=int, default=None, help="override the trials per grid point")
    parser.add_argument("--seed", type=int, default=None, help="override the base seed")
    parser.add_argument("--optimal-solver", default="optimal",
                        help="solver for the optimal memories: optimal (default) | lp (exact, small d only)")
    add_executor_arguments(parser)
    parser.add_argument("--format", default="table", help="table | json (summary of what was written)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from replica.common.checks import check_choice, check_int

    from .reproduce import FULL, QUICK, reproduce

    check_choice(args.format, "format", ("table", "json"))
    check_choice(args.executor, "executor", ("local", "dask"))
    check_choice(args.optimal_solver, "optimal-solver", ("optimal", "lp"))
    config = QUICK if args.quick else FULL
    changes = {"optimal_solver": args.optimal_solver}
    if args.trials is not None:
        changes["trials"] = check_int(args.trials, "trials", low=1)
    if args.seed is not None:
        changes["seed"] = check_int(args.seed, "seed", low=0)
    config = dataclasses.replace(config, **changes)
    executor = executor_from_args(args)
    try:
        result = reproduce(args.out, config, executor=executor, progress=True, log=sys.stderr)
    finally:
        executor.shutdown()
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(f"report: {result.report}\nfigures: {', '.join(result.figures)}\n"
                         f"tables: {', '.join(result.tables)}\n"
                         f"{result.trials_run} trials in {result.seconds:.0f} s\n")
    return 0
