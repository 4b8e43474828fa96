"""``validation capacity``: measured p_c with a 95 % interval, against the finite-size theory.

See ``notes/capacity_estimation.md``.
"""

from __future__ import annotations

import json
import sys

from replica.common.checks import check_int

_COLUMNS = ["p", "alpha", "trials", "stored", "not_stored", "undecided", "errors"]


def add_executor_arguments(parser) -> None:
    """``--workers``, ``--executor``, ``--scheduler`` (shared by the sweep commands)."""
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes (default: number of CPUs; 0 = run in this process)")
    parser.add_argument("--executor", default="local", help="local (process pool) | dask")
    parser.add_argument("--scheduler", default=None,
                        help="address of a running dask scheduler (with --executor dask)")


def executor_from_args(args):
    """Build the executor of ``args`` (serial for ``--workers 0``)."""
    from .sweep import make_executor

    if args.workers is not None:
        check_int(args.workers, "workers", low=0)
    if args.workers == 0:
        if args.executor != "local":
            raise ValueError(f"--workers 0 (in-process) only works with --executor local, got {args.executor!r}")
        return make_executor("serial")
    return make_executor(args.executor, workers=args.workers, scheduler=args.scheduler)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "capacity", help="measure P(stored) against p and locate p_c (with a 95%% interval)",
        description="Measure the success probability P(stored) on an adaptive grid of p around the "
                    "theory's p_c, fit a logistic in ln p and report p_c where P = 1/2 with its 95 % "
                    "profile-likelihood interval, next to the finite-size theory.")
    parser.add_argument("--d", type=int, required=True, help="dimension (>= 2)")
    parser.add_argument("--problem", default="op", help="op (original) | dp (decoupled)")
    parser.add_argument("--solver", default="optimal", help="hebbian | optimal | lp | adam")
    parser.add_argument("--kappa", type=float, default=1.0, help="rank fraction in (0, 1]")
    parser.add_argument("--ensemble", default="gaussian", help="gaussian | sphere")
    parser.add_argument("--trials", type=int, default=20, help="instances per grid point per round (>= 1)")
    parser.add_argument("--seed", type=int, default=0, help="base seed (>= 0)")
    parser.add_argument("--rounds", type=int, default=2, help="refinement rounds (>= 0)")
    parser.add_argument("--design", default="auto",
                        help="first points: grid (5 points over +-25%% in p) | bracket (the theory "
                             "p_c, then single points 5%%, 10%%, 20%%, ... away until P = 1/2 is "
                             "bracketed) | auto (bracket for d >= 128, grid below)")
    parser.add_argument("--out", default=None,
                        help="folder of a result store: trials are saved there and reused on a rerun")
    add_executor_arguments(parser)
    parser.add_argument("--format", default="table", help="table | csv | json")
    parser.set_defaults(func=run)


def run(args) -> int:
    from replica.common.cliutil import render
    from replica.common.checks import check_choice

    from .capacity import ENSEMBLES, PROBLEMS, SOLVERS, estimate_capacity
    from .store import ResultStore

    check_choice(args.format, "format", ("table", "csv", "json"))
    check_int(args.d, "d", low=2)
    check_choice(args.problem, "problem", PROBLEMS)
    check_choice(args.solver, "solver", SOLVERS)
    check_choice(args.ensemble, "ensemble", ENSEMBLES)
    check_int(args.trials, "trials", low=1)
    check_int(args.seed, "seed", low=0)
    check_choice(args.executor, "executor", ("local", "dask"))
    check_choice(args.design, "design", ("auto", "grid", "bracket"))
    store = ResultStore(args.out) if args.out else None
    executor = executor_from_args(args)
    try:
        est = estimate_capacity(args.d, args.problem, args.solver, args.kappa, args.ensemble,
                                trials=args.trials, seed=args.seed, rounds=args.rounds,
                                design=args.design, executor=executor, store=store, progress=True)
    finally:
        executor.shutdown()
        if store is not None:
            store.close()
    result = est.to_dict()
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2, default=float) + "\n")
        return 0
    rows = [c.to_dict() for c in est.curve]
    if args.format == "csv":
        render(rows, _COLUMNS, "csv", stream=sys.stdout)
        return 0
    th = result["theory"]
    sys.stdout.write(
        f"d={est.d} problem={est.problem} solver={est.solver} kappa={est.kappa:g} "
        f"ensemble={est.ensemble} trials/point={est.trials} seed={est.seed} design={est.design}\n"
        f"measured  p_c = {est.p_c:.2f}  95% [{est.p_c_low:.2f}, {est.p_c_high:.2f}]  "
        f"alpha = {est.alpha:.4f} [{est.alpha_low:.4f}, {est.alpha_high:.4f}]\n"
        f"theory    p_c = {th['p_c']:.2f}  alpha = {th['alpha']:.4f}  alpha_c(d->inf) = {th['alpha_c']:.4f}"
        f"  ({result['theory_source']})\n"
        f"status: {est.status}; {est.message}\n\n")
    render(rows, _COLUMNS, "table", digits=4, stream=sys.stdout)
    return 0
