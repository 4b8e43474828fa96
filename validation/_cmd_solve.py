"""``validation solve``: build one random instance, solve it, print the verdict.

See ``notes/simulation.md``.
"""

from __future__ import annotations

import sys

from replica.common.cliutil import add_command, render

_COLUMNS = ["d", "p", "problem", "ensemble", "seed", "solver", "kappa", "rank", "status", "stored",
            "recall_fraction", "margin", "converged", "iterations", "seconds"]


def register(subparsers) -> None:
    from .ensembles import ENSEMBLES, PROBLEMS
    from .solvers import SOLVERS

    parser = add_command(
        subparsers, "solve", run, help="solve one random instance with a chosen solver",
        description="Build a random memory problem (original 'op' or decoupled 'dp') from a seed, "
                    "solve it and report whether it is stored, the recall fraction and the "
                    "normalised margin (units of ||W||_F / d).",
        seed=True, seed_default=0, seed_help="instance seed, an integer in [0, 2**63 - 1] (default 0)")
    parser.add_argument("--d", type=int, required=True, help="dimension (>= 2)")
    parser.add_argument("--p", type=int, required=True, help="number of associations (>= 2)")
    parser.add_argument("--problem", choices=PROBLEMS, default="op", help="op (original) or dp (decoupled)")
    parser.add_argument("--solver", choices=SOLVERS, default="optimal", help="the solver (default optimal)")
    parser.add_argument("--kappa", type=float, default=1.0, help="rank fraction in (0, 1]")
    parser.add_argument("--ensemble", choices=ENSEMBLES, default="gaussian", help="embedding ensemble")


def run(args) -> int:
    from replica.common.checks import check_int, check_kappa

    from .ensembles import make_instance
    from .solvers import solve

    check_int(args.d, "d", low=2)
    check_int(args.p, "p", low=2)
    kappa = float(check_kappa(args.kappa))
    instance = make_instance(args.d, args.p, args.problem, args.ensemble, args.seed)
    solution = solve(instance, solver=args.solver, kappa=kappa)
    row = dict(instance.to_dict())
    row.update(solution.to_dict())
    if args.format == "json":
        render(row, _COLUMNS, "json", stream=sys.stdout)
        return 0
    render([row], _COLUMNS, args.format, stream=sys.stdout)
    if args.format == "table":
        sys.stdout.write(f"message: {solution.message}\n")
    return 0
