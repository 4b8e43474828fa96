"""``validation accuracy``: measured recall accuracy against the load, beside the theory curve.

See ``notes/recall_accuracy.md`` ("In simulation").
"""

from __future__ import annotations

import sys

from replica.common.cliutil import add_command, render

from .common import executor_from_args, mode_options

_COLUMNS = ["d", "ensemble", "p", "alpha", "trials", "accuracy", "ci_low", "ci_high", "theory", "z",
            "theory_inside", "bound", "status"]


def register(subparsers) -> None:
    from ..capacity import ENSEMBLES, PROBLEMS, SOLVERS

    parser = add_command(
        subparsers, "accuracy", run, help="measure the recall accuracy against p, beside the theory",
        description="Mean fraction of the p inputs that the memory recalls, over independent instances, "
                    "with a 95 % interval (mean +- t sd/sqrt(n) between instances; Wilson interval of "
                    "the pooled inputs when every instance has the same accuracy), beside "
                    "replica.hebbian_accuracy (hebbian) or the replica-symmetric replica.variants.optimal_accuracy "
                    "(optimal, lp).  For optimal, lp and adam the measurement is the accuracy of the "
                    "returned W: a lower bound on the best accuracy where not every input is stored.  "
                    "Formats: table, csv (one row per load), json (the whole curves).",
        seed=True, seed_help="base seed, an integer in [0, 2**63 - 1] (default: the package seed)",
        executor=True)
    parser.add_argument("--d", type=int, nargs="+", required=True, metavar="D", help="dimensions (>= 2)")
    loads = parser.add_mutually_exclusive_group(required=True)
    loads.add_argument("--loads", type=int, nargs="+", metavar="P", help="loads p (integers >= 2)")
    loads.add_argument("--alpha", type=float, nargs="+", metavar="A",
                       help="loads as alpha = p ln p / d^2 (> 0), rounded to the nearest integer p per d")
    parser.add_argument("--problem", choices=PROBLEMS, default="op", help="op (original) or dp (decoupled)")
    parser.add_argument("--solver", choices=SOLVERS, default="hebbian", help="the solver (default hebbian)")
    parser.add_argument("--kappa", type=float, default=1.0, help="rank fraction in (0, 1]")
    parser.add_argument("--ensemble", choices=ENSEMBLES, nargs="+", default=["gaussian"],
                        help="embedding ensembles (default gaussian)")
    parser.add_argument("--trials", type=int, default=20, help="instances per load (>= 2, default %(default)s)")
    parser.add_argument("--give-up", action="store_true",
                        help="optimal only: the give-up search (give up the costliest inputs, re-solve) "
                             "instead of the decision W; still a lower bound on the best accuracy")


def _curves(args, executor) -> list:
    from ..measurements.accuracy import loads_from_alpha, measure_accuracy

    options = mode_options(args.solver, args.give_up)
    curves = []
    for d in args.d:
        ps = args.loads if args.alpha is None else loads_from_alpha(d, args.alpha)
        for ensemble in args.ensemble:
            curves.append(measure_accuracy(d, ps, problem=args.problem, solver=args.solver, ensemble=ensemble,
                                           kappa=args.kappa, seed=args.seed, trials=args.trials,
                                           executor=executor, progress=True, solver_options=options))
    return curves


def run(args) -> int:
    executor = executor_from_args(args)
    try:
        curves = _curves(args, executor)
    finally:
        executor.shutdown()
    if args.format == "json":
        render([c.to_dict() for c in curves], _COLUMNS, "json", stream=sys.stdout)
        return 0
    if args.format == "table":
        for c in curves:
            sys.stdout.write(f"d={c.d} problem={c.problem} solver={c.solver} ensemble={c.ensemble} "
                             f"kappa={c.kappa:g} trials/load={c.trials} seed={c.seed}\n"
                             f"  measured: {c.measures}\n  theory:   {c.theory_source}\n"
                             f"  status: {c.status}; {c.message}\n")
        sys.stdout.write("\n")
    render([row for c in curves for row in c.rows()], _COLUMNS, args.format, digits=4, stream=sys.stdout)
    return 0
