"""``replica capacity``: finite-size capacity p_c(d) and alpha(d) of the optimal memory.

Theory: ``notes/finite_size_capacity.md`` (``replica.optimal.finite_size.capacity``); ``--outputs``
and ``--problem``: ``notes/many_to_one.md``; ``--ensemble sphere``: ``notes/sphere_ensemble.md``
(and ``notes/hebbian_finite_size.md`` for ``--hebbian``).
"""

from __future__ import annotations

import sys

from ..common.cliutil import add_command, render

COLUMNS = ["d", "kappa", "margin", "top_k", "model", "p_c", "stderr", "alpha", "alpha_stderr", "alpha_c",
           "converged", "bits_per_parameter", "validity"]
HEBBIAN_COLUMNS = ["hebbian_p_c", "hebbian_alpha", "hebbian_alpha_c", "hebbian_converged", "hebbian_bits_per_parameter"]
MODEL_COLUMNS = ["outputs", "problem", "ensemble", "effective_weights"]  # shown when a model option is given


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "capacity", run,
        help="finite-size capacity p_c(d) and alpha(d) = p_c ln p_c / d^2 (water-filling theory)",
        description=(
            "Solve p E[C_p] = F(kappa) d^2 for the finite-size capacity p_c of an optimal "
            "rank-kappa*d memory (E[C_p]: expected water-filling cost, Monte Carlo with "
            "common random numbers; stderr from the Monte-Carlo error).  alpha = p_c ln p_c / d^2 "
            "tends to alpha_c = F(kappa)/2 as d grows; bits_per_parameter = p_c log2 p_c / (free "
            "parameters: d^2 at full rank, m (2 d - m) at rank m), 1/(2 ln 2) ~= 0.72 at alpha = 1/2.  "
            "See notes/finite_size_capacity.md.  With "
            "--outputs K (K distinct answers) the block has K fields and p_c E[C_K] = F d min(K-1, d) "
            "(--problem op) or F d^2 (--problem dp), notes/many_to_one.md; --ensemble sphere uses the "
            "exact law of unit-vector projections, notes/sphere_ensemble.md."
        ),
        seed=True, seed_help="seed of the common random numbers (default: replica.common.seeds.DEFAULT_SEED)",
        theory=True,
    )
    parser.add_argument("--kappa", type=float, default=1.0, metavar="K",
                        help="rank fraction in (0, 1] (default %(default)g)")
    parser.add_argument("--top-k", type=int, default=1, metavar="K",
                        help="target among the K best (default %(default)s)")
    parser.add_argument("--hebbian", action="store_true",
                        help="add the finite-size Hebbian capacity (replica.hebbian.hebbian_capacity)")
    parser.add_argument("--ensemble", choices=["gaussian", "sphere"], default="gaussian",
                        help="embedding ensemble of the optimal memory and of --hebbian (default gaussian)")
    parser.add_argument("--outputs", type=int, default=None, metavar="K",
                        help="number K >= 2 of distinct answers (default: one per fact)")
    parser.add_argument("--problem", choices=["op", "dp"], default="dp",
                        help="original (shared outputs) or decoupled problem (default dp; the OP stores about 0.1 d "
                             "more facts, and differs more with --outputs and --d-out)")
    parser.add_argument("--d-out", type=int, default=None, metavar="N",
                        help="output dimension of a d_out x d memory (default: square)")
    parser.add_argument("--model", default=None, metavar="NAME",
                        help="the capacity model: finite_size, budget or hull_budget (default: the one the "
                             "certified measurements support at each d; 'replica models' lists them)")
    parser.add_argument("--rel-tol", type=float, default=1e-3, metavar="R",
                        help="relative Monte-Carlo standard error of E[C] (default %(default)g)")


def _hebbian_row(d, kappa, ensemble, d_out=None):
    from ..asymptotic.quarter_circle import alpha_c_hebbian
    from ..quantities import hebbian_capacity

    result = hebbian_capacity(d, ensemble, kappa, d_out=d_out)
    return {"hebbian_p_c": float(result.p_c), "hebbian_alpha": float(result.alpha),
            "hebbian_alpha_c": float(alpha_c_hebbian(kappa)), "hebbian_converged": bool(result.converged),
            "hebbian_bits_per_parameter": result.bits_per_parameter, "ensemble": ensemble}


def _options(args, model: str):
    """The model's settings from ``--rel-tol`` and ``--seed`` (``hull_budget`` reads tables and takes neither)."""
    from ..optimal.capacity_equation import Tolerances

    if model == "hull_budget":
        return None
    return Tolerances(rel_tol=args.rel_tol, seed=args.seed)


def run(args) -> int:
    from ..common.validity import choose_model as choose
    from ..quantities import capacity

    rows = []
    model = args.outputs is not None or args.ensemble != "gaussian" or args.problem != "dp"
    for d in args.d:
        params = {"d": d, "kappa": args.kappa, "margin": args.margin, "top_k": args.top_k, "d_out": args.d_out,
                  "outputs": args.outputs, "problem": args.problem, "ensemble": args.ensemble}
        chosen = choose("capacity", params, args.model).name
        result = capacity(d, args.kappa, args.margin, args.top_k, d_out=args.d_out, outputs=args.outputs,
                          problem=args.problem, ensemble=args.ensemble, model=chosen, options=_options(args, chosen))
        row = {"d": d, "kappa": getattr(result, "kappa", args.kappa), "margin": getattr(result, "margin", args.margin),
               "top_k": getattr(result, "top_k", args.top_k), "model": result.model,
               "p_c": result.p_c, "stderr": result.stderr, "alpha": result.alpha,
               "alpha_stderr": getattr(result, "alpha_stderr", None), "alpha_c": getattr(result, "alpha_c", None),
               "converged": result.converged, "bits_per_parameter": getattr(result, "bits_per_parameter", None),
               "validity": result.validity.summary(), "seed": getattr(result, "seed", None)}
        if model:
            row.update({name: getattr(result, name, None) for name in MODEL_COLUMNS})
        if args.hebbian:
            row.update(_hebbian_row(d, args.kappa, args.ensemble, args.d_out))
        rows.append(row)
    columns = (COLUMNS + (MODEL_COLUMNS if model else []) + (HEBBIAN_COLUMNS if args.hebbian else [])
               + (["seed"] if args.format == "csv" else []))
    render(rows, columns, args.format, digits=6, stream=sys.stdout)
    if not all(row["converged"] and row.get("hebbian_converged", True) for row in rows):
        sys.stderr.write("replica capacity: warning: some roots did not converge (see 'converged')\n")
        return 1
    return 0
