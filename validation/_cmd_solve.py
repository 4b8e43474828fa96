"""``validation solve``: build one random instance, solve it, print the verdict.

See ``notes/simulation.md``.
"""

from __future__ import annotations

import json
import sys

_COLUMNS = ["d", "p", "problem", "ensemble", "seed", "solver", "kappa", "rank", "status", "stored",
            "recall_fraction", "margin", "converged", "iterations", "seconds"]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "solve", help="solve one random instance with a chosen solver",
        description="Build a random memory problem (original 'op' or decoupled 'dp') from a seed, "
                    "solve it and report whether it is stored, the recall fraction and the "
                    "normalised margin (units of ||W||_F / d).")
    parser.add_argument("--d", type=int, required=True, help="dimension (>= 2)")
    parser.add_argument("--p", type=int, required=True, help="number of associations (>= 2)")
    parser.add_argument("--problem", default="op", help="op (original) | dp (decoupled)")
    parser.add_argument("--solver", default="optimal", help="hebbian | optimal | lp | adam")
    parser.add_argument("--kappa", type=float, default=1.0, help="rank fraction in (0, 1]")
    parser.add_argument("--ensemble", default="gaussian", help="gaussian | sphere")
    parser.add_argument("--seed", type=int, default=0, help="instance seed (>= 0)")
    parser.add_argument("--format", default="table", help="table | csv | json")
    parser.set_defaults(func=run)


def run(args) -> int:
    from replica.common.checks import check_choice, check_int, check_kappa
    from replica.common.cliutil import render

    from .ensembles import ENSEMBLES, PROBLEMS, make_instance
    from .solvers import SOLVERS, solve

    fmt = check_choice(args.format, "format", ("table", "csv", "json"))
    check_int(args.d, "d", low=2)
    check_int(args.p, "p", low=2)
    check_choice(args.problem, "problem", PROBLEMS)
    check_choice(args.solver, "solver", SOLVERS)
    check_choice(args.ensemble, "ensemble", ENSEMBLES)
    kappa = float(check_kappa(args.kappa))
    check_int(args.seed, "seed", low=0)
    instance = make_instance(args.d, args.p, args.problem, args.ensemble, args.seed)
    solution = solve(instance, solver=args.solver, kappa=kappa)
    row = dict(instance.to_dict())
    row.update(solution.to_dict())
    if fmt == "json":
        sys.stdout.write(json.dumps(row, indent=2, default=float) + "\n")
        return 0
    render([row], _COLUMNS, fmt, stream=sys.stdout)
    if fmt == "table":
        sys.stdout.write(f"message: {solution.message}\n")
    return 0
