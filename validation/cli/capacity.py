"""``validation capacity``: measured p_c with a 95 % interval, against the finite-size theory.

See ``notes/capacity_estimation.md``.
"""

from __future__ import annotations

import sys

from replica.common.cliutil import add_command, check_output_folder, render

from ..capacity.settings import BRACKET_FROM_D, CapacityDesign, CapacityOptions
from ..solvers.engine.registry import solver_spec
from .common import add_restarts_option, add_top_k_restarts_option, executor_from_args, mode_options, restarts_setting

_COLUMNS = ["p", "alpha", "trials", "stored", "not_stored", "undecided", "errors", "bits_per_parameter"]


def register(subparsers) -> None:
    from ..instances._candidate_kernels import DEFAULT_GENERATOR, GENERATORS
    from ..capacity import DESIGNS, ENSEMBLES, PROBLEMS, SOLVERS

    design = CapacityDesign()

    parser = add_command(
        subparsers, "capacity", run, help="measure P(stored) against p and locate p_c (with a 95%% interval)",
        description="Measure the success probability P(stored) on an adaptive grid of p around the "
                    "theory's p_c, fit a logistic in ln p and report p_c where P = 1/2 with its 95 % "
                    "profile-likelihood interval, next to the finite-size theory.  Formats: table (summary "
                    "and grid), csv (the grid, then a blank line and a second section 'quantity,value' "
                    "with the summary: p_c and its interval, alpha, the theory, status, seed), json (the "
                    "whole estimate).",
        seed=True, seed_help="base seed, an integer in [0, 2**63 - 1] (default: the package seed, "
             "replica.common.seeds.DEFAULT_SEED)", executor=True)
    parser.add_argument("--d", type=int, default=None, help="dimension (>= 2); required unless --embeddings")
    parser.add_argument("--embeddings", default=None, metavar="FILE.npz",
                        help="measure the capacity of given embeddings instead of a Gaussian ensemble: a .npz with "
                             "arrays inputs (N x d_in), outputs (K x d_out) and optionally answers (length N; "
                             "default fact i answers output i); each trial samples p of the N facts (seeded) and "
                             "solves their original problem; theory: the Gaussian replica.capacity(d) or "
                             "replica.rectangular_capacity(d_in, d_out) of the same shape")
    parser.add_argument("--problem", choices=PROBLEMS, default="op", help="op (original) or dp (decoupled)")
    parser.add_argument("--solver", choices=SOLVERS, default="optimal", help="the solver (default optimal)")
    parser.add_argument("--kappa", type=float, default=1.0, help="rank fraction in (0, 1]")
    parser.add_argument("--ensemble", choices=ENSEMBLES, default="gaussian", help="embedding ensemble")
    parser.add_argument("--trials", type=int, default=20, help="instances per grid point per round (>= 1)")
    parser.add_argument("--rounds", type=int, default=2, help="refinement rounds (>= 0)")
    parser.add_argument("--design", choices=DESIGNS, default="auto",
                        help=f"first points: grid ({design.initial_points} points over "
                             f"+-{100 * design.initial_width:g}%% in p) | bracket (the theory p_c, then single "
                             f"points {100 * design.bracket_step:g}%%, {200 * design.bracket_step:g}%%, "
                             f"{400 * design.bracket_step:g}%%, ... away until P = 1/2 is bracketed) | auto "
                             f"(bracket for d >= {BRACKET_FROM_D}, grid below)")
    parser.add_argument("--bracket-step", type=float, default=None, metavar="S",
                        help=f"first step of the bracketing design in ln p (> 0; default {design.bracket_step:g}); "
                             "a narrow transition (large d) needs a smaller step, see notes/capacity_estimation.md")
    parser.add_argument("--criterion", type=_criterion_argument, default="all", metavar="all|accuracy:A",
                        help="stored = every input recalled (all, default) or the returned W recalls >= A of "
                             "the inputs (accuracy:A, A in (0, 1]; p_c is then a lower bound for solvers other "
                             "than hebbian)")
    parser.add_argument("--outputs", type=int, default=None, metavar="K",
                        help="K >= 2 distinct answers shared by the facts (balanced map mu mod K); "
                             "theory replica.capacity(outputs=K, problem=...) (default: one answer per fact)")
    parser.add_argument("--generator", type=int, choices=GENERATORS, default=None,
                        help="DP: version of the candidate generator (default %s, the current one; 1 builds the "
                             "instances of results made before version 2)" % DEFAULT_GENERATOR)
    parser.add_argument("--top-k", type=int, default=1, metavar="K",
                        help="optimal only: stored = every target in the top K (default %(default)s); K >= 2 is "
                             "a search whose not_found verdicts count as not stored, so p_c is a lower bound; "
                             "theory replica.capacity(top_k=K)")
    add_restarts_option(parser)
    add_top_k_restarts_option(parser)
    parser.add_argument("--out", default=None,
                        help="folder of a result store: trials are saved there and reused on a rerun")


def _criterion_argument(text: str) -> str:
    """argparse type of ``--criterion``: checked by ``validation.capacity.parse_criterion``."""
    import argparse

    from ..capacity import parse_criterion

    try:
        parse_criterion(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _measured(est) -> str:
    """Measured p_c and alpha with the interval the fit status gives (a bracket of two loads when separated;
    a lower bound, N, when all N given facts were stored)."""
    from ..capacity.fit import separation_bracket
    from ..capacity.results import FACTS_STORED

    if est.status == FACTS_STORED:
        return (f"> {est.p_c_low:.0f}  (all {est.facts} given facts stored at every load tried: no fit; "
                f"alpha > {est.alpha_low:.4f})")
    if est.status == "separated" and (bracket := separation_bracket(
            [{"p": c.p, "stored": c.stored, "not_stored": c.not_stored} for c in est.curve])) is not None:
        low, high = bracket
        return (f"between p = {low:.0f} (all stored) and {high:.0f} (none stored): a bracket, no fitted "
                f"interval (midpoint {est.p_c:.2f}, alpha = {est.alpha:.4f})")
    if est.status == "ok":
        return (f"{est.p_c:.2f}  95% PL [{est.p_c_low:.2f}, {est.p_c_high:.2f}]  "
                f"alpha = {est.alpha:.4f} [{est.alpha_low:.4f}, {est.alpha_high:.4f}]")
    return f"{est.p_c:.2f}  (fit {est.status}: no interval)  alpha = {est.alpha:.4f}"


def _measured_bits(est) -> str:
    """Bits per parameter of the measured p_c; a lower bound (at p = N) when all N given facts were stored."""
    from replica.common.loads import bits_per_parameter

    from ..capacity.results import FACTS_STORED

    if est.status == FACTS_STORED:
        return f"> {bits_per_parameter(est.p_c_low, est.d_in, est.d_out, est.kappa):.4f}"
    return f"{est.bits_per_parameter:.4f}"


def _summary(est) -> str:
    """The lines above the grid table: measured and theory p_c, status and message."""
    from ..solvers import rank_for

    outputs = "" if est.outputs is None else f" outputs={est.outputs}"
    if est.generator is not None:
        outputs += f" generator={est.generator}"
    if solver_spec(est.solver).searches_rank(est.d, rank_for(est.d, est.kappa)):
        from ..solvers.rank_search import DEFAULT_RESTARTS

        restarts = est.solver_options.get("restarts")
        outputs += f" restarts={restarts if restarts is not None else f'{DEFAULT_RESTARTS} (default)'}"
    head = f"d={est.d}" if est.embeddings is None else \
        f"embeddings={est.embeddings} N={est.facts} facts d_in={est.d_in} d_out={est.d_out}"
    return (f"{head} problem={est.problem}{outputs} solver={est.solver} kappa={est.kappa:g} "
            f"ensemble={est.ensemble} trials/point={est.trials} seed={est.seed} design={est.design}\n"
            f"measured  p_c = {_measured(est)}  bits/parameter = {_measured_bits(est)}"
            f"{f'  (a LOWER BOUND: {est.not_found} not_found verdicts)' if est.not_found else ''}\n"
            f"theory    p_c = {est.theory['p_c']:.2f}  alpha = {est.theory['alpha']:.4f}  "
            f"alpha_c(d->inf) = {est.theory['alpha_c']:.4f}  bits/parameter = "
            f"{est.theory_bits_per_parameter:.4f}  ({est.theory['source']})\n"
            f"status: {est.status}; {est.message}\n\n")


def run(args) -> int:
    from ..capacity import estimate_capacity
    from ..runtime.store import STORE_SUFFIXES, ResultStore

    _check_arguments(args)
    options = mode_options(args.solver, top_k=args.top_k, top_k_restarts=args.top_k_restarts)
    restarts = restarts_setting(args.solver, args.restarts)
    if restarts:
        options = {**(options or {}), **restarts}
    if args.out:
        check_output_folder(args.out, file_suffixes=STORE_SUFFIXES)
    store = ResultStore(args.out) if args.out else None
    executor = executor_from_args(args)
    try:
        if args.embeddings is not None:
            est = _embedding_estimate(args, executor, store, options)
        else:
            settings = _capacity_options(args, executor, store, options, outputs=args.outputs,
                                         generator=args.generator)
            est = estimate_capacity(args.d, args.problem, args.solver, args.kappa, args.ensemble, seed=args.seed,
                                    design=_capacity_design(args), options=settings)
    finally:
        executor.shutdown()
        if store is not None:
            store.close()
    if args.format == "json":
        render(est.to_dict(), _COLUMNS, "json", stream=sys.stdout)
        return _exit_status(est)
    rows = [c.to_dict() for c in est.curve]
    if args.format == "table":
        sys.stdout.write(_summary(est))
    columns = _COLUMNS + (["not_found"] if options or est.not_found or est.kappa < 1 else [])
    render(rows, columns, args.format, digits=4, stream=sys.stdout)
    if args.format == "csv":
        sys.stdout.write("\n")
        render(_summary_rows(est), ["quantity", "value"], "csv", stream=sys.stdout)
    return _exit_status(est)


def _check_arguments(args) -> None:
    """``--d`` without ``--embeddings``; with it, none of the options of the drawn ensembles."""
    if args.embeddings is None:
        if args.d is None:
            raise ValueError("--d is required (or --embeddings FILE.npz)")
        return
    checks = (("--d", args.d is not None), ("--problem dp", args.problem != "op"),
              ("--ensemble", args.ensemble != "gaussian"), ("--outputs", args.outputs is not None),
              ("--generator", args.generator is not None))
    given = [name for name, used in checks if used]
    if given:
        raise ValueError(f"{given[0]} does not apply with --embeddings (the facts, their shape and answers are "
                         "those of the file; the problem is the original one)")


def _embedding_estimate(args, executor, store, options):
    """:func:`validation.capacity.estimate_embedding_capacity` of ``--embeddings`` with the sweep's arguments."""
    from ..capacity import estimate_embedding_capacity

    return estimate_embedding_capacity(args.embeddings, args.solver, args.kappa, seed=args.seed,
                                       design=_capacity_design(args),
                                       options=_capacity_options(args, executor, store, options))


def _capacity_design(args):
    """The :class:`~validation.capacity.CapacityDesign` of ``--design``, ``--trials``, ``--rounds`` and
    ``--bracket-step`` (its default when not given)."""
    step = {} if args.bracket_step is None else {"bracket_step": args.bracket_step}
    return CapacityDesign(kind=args.design, trials=args.trials, rounds=args.rounds, **step)


def _capacity_options(args, executor, store, solver_options, **measurement):
    """The :class:`~validation.capacity.CapacityOptions` of ``--criterion`` and the sweep's executor and store."""
    return CapacityOptions(solver_options=solver_options, criterion=args.criterion, executor=executor, store=store,
                           progress=True, **measurement)


def _exit_status(est) -> int:
    """0, or 1 with one line on stderr when some trials raised (the estimate is printed)."""
    if not est.errors:
        return 0
    sys.stderr.write(f"validation capacity: {est.errors} trial(s) failed and were left out of the "
                     f"fit; {est.message}\n")
    return 1


SUMMARY_QUANTITIES = ("d", "problem", "solver", "kappa", "ensemble", "trials", "seed", "design", "criterion",
                      "p_c", "p_c_low", "p_c_high", "alpha", "alpha_low", "alpha_high", "bits_per_parameter",
                      "status", "message")
"""Rows of the second CSV section (``quantity,value``; ``outputs`` after ``problem`` with
``--outputs``, then ``generator`` for the DP; ``not_found`` after ``message`` when some trials had that verdict), then
``theory_p_c``, ``theory_alpha``, ``theory_alpha_c``, ``theory_bits_per_parameter`` and
``theory_source``; missing numbers are empty."""


def _summary_rows(est) -> list:
    """The summary of ``est`` as ``quantity,value`` rows (the second CSV section)."""
    from replica.common.results import json_safe

    data = json_safe(est.to_dict())
    rows = [{"quantity": q, "value": data.get(q)} for q in SUMMARY_QUANTITIES]
    if est.generator is not None:
        rows.insert(2, {"quantity": "generator", "value": est.generator})
    if est.outputs is not None:
        rows.insert(2, {"quantity": "outputs", "value": est.outputs})
    if est.not_found:
        rows.append({"quantity": "not_found", "value": est.not_found})
    if est.embeddings is not None:
        rows += [{"quantity": q, "value": data.get(q)} for q in ("embeddings", "facts", "d_in", "d_out")]
    rows += [{"quantity": f"theory_{k}", "value": v} for k, v in (data.get("theory") or {}).items()]
    rows.append({"quantity": "theory_bits_per_parameter", "value": data.get("theory_bits_per_parameter")})
    rows.append({"quantity": "theory_source", "value": data.get("theory_source")})
    return [{"quantity": r["quantity"], "value": "" if r["value"] is None else r["value"]} for r in rows]
