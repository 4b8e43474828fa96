"""``validation zipf``: measured recall error of facts with Zipf frequencies, beside ``replica.zipf_error``.

See ``notes/zipf.md`` and :mod:`validation.measurements.zipf`.
"""

from __future__ import annotations

import sys

from replica.common.cliutil import add_command, render

_COLUMNS = ["d", "N", "a", "solver", "trials", "error", "stderr", "recalled", "theory", "theory_stderr", "bound",
            "budget_ended", "status"]


def register(subparsers) -> None:
    from ..instances.ensembles import ENSEMBLES, PROBLEMS
    from ..measurements.zipf import ZIPF_SOLVERS

    parser = add_command(
        subparsers, "zipf", run, help="measure the recall error E of facts with Zipf frequencies, beside the theory",
        description="N facts with N distinct outputs, asked with frequencies f_mu = mu^-a / H_{N,a}; the error "
                    "of a memory is E = sum_mu f_mu 1{mu not recalled} (float64 recall).  Mean and standard "
                    "error over independent instances per solver, beside replica.zipf_error (optimal: the "
                    "replica-symmetric knapsack; hebbian: the finite-size model; hebbian_frequency: the Gaussian "
                    "model of W = sum f_mu u_mu e_mu^T).  optimal is the weighted give-up search, an upper bound "
                    "on the error of the best memory; adam is the W trained for --adam-steps steps on the "
                    "cross-entropy, adam_frequency the same on the frequency-weighted cross-entropy.  Formats: "
                    "table, csv (one row per d and solver), json (the whole measurements).",
        seed=True, seed_help="base seed, an integer in [0, 2**63 - 1] (default: the package seed)")
    parser.add_argument("--d", type=int, nargs="+", required=True, metavar="D", help="dimensions (>= 2)")
    parser.add_argument("--exponent", type=float, nargs="+", required=True, metavar="A",
                        help="Zipf exponents a (>= 0)")
    parser.add_argument("--facts", type=int, required=True, metavar="N", help="number of facts N (>= 2)")
    parser.add_argument("--trials", type=int, default=4, help="instances per (d, a) (>= 2, default %(default)s)")
    parser.add_argument("--solvers", choices=ZIPF_SOLVERS, nargs="+", default=["optimal", "hebbian", "adam"],
                        help="solvers (default optimal hebbian adam)")
    parser.add_argument("--problem", choices=PROBLEMS, default="op", help="op (original) or dp (decoupled)")
    parser.add_argument("--ensemble", choices=ENSEMBLES, default="gaussian", help="embedding ensemble")
    parser.add_argument("--adam-steps", type=int, default=300, help="Adam steps per instance (default %(default)s)")
    parser.add_argument("--give-up-fraction", type=float, default=0.05,
                        help="optimal: fraction of the unrecalled kept facts given up per round (default %(default)s)")


def run(args) -> int:
    from ..measurements.zipf import ZipfSettings, measure_zipf

    settings = ZipfSettings(ensemble=args.ensemble, adam_steps=args.adam_steps,
                            give_up_fraction=args.give_up_fraction, progress=True)
    results = [measure_zipf(d, args.facts, a, solvers=tuple(args.solvers), trials=args.trials,
                            problem=args.problem, seed=args.seed, settings=settings)
               for a in args.exponent for d in args.d]
    if args.format == "json":
        render([r.to_dict() for r in results], _COLUMNS, "json", stream=sys.stdout)
        return 0
    if args.format == "table":
        r0 = results[0]
        sys.stdout.write(f"N={r0.N} problem={r0.problem} ensemble={r0.ensemble} trials={r0.trials} seed={r0.seed}"
                         f" adam_steps={r0.adam_steps} give_up_fraction={r0.give_up_fraction:g}\n")
        for pt in r0.points:
            sys.stdout.write(f"  {pt.solver}: {pt.measures}; theory {pt.theory_source}\n")
        sys.stdout.write("  error: mean of E over the instances, stderr: sd/sqrt(trials)\n\n")
    render([row for r in results for row in r.rows()], _COLUMNS, args.format, digits=4, stream=sys.stdout)
    return 0
