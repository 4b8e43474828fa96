"""``validation solve``: build one random instance, solve it, print the verdict.

Progress (phase, iteration, loss) goes to stderr for ``optimal`` solves longer than
:data:`PROGRESS_AFTER` seconds when stderr is a terminal or with ``--progress``.
Ctrl-C during an ``optimal`` solve prints the best float64-verified point so far
(marked interrupted, ``converged`` False) and exits with status 130.

See ``notes/simulation.md``.
"""

from __future__ import annotations

import sys
import time

from replica.common.cliutil import add_command, add_progress_option, render

from .common import add_restarts_option, add_top_k_restarts_option, mode_options, restarts_setting

PROGRESS_AFTER = 2.0
"""Seconds of solving before progress lines appear."""

_COLUMNS = ["d", "p", "problem", "ensemble", "seed", "solver", "kappa", "rank", "status", "stored",
            "recall_fraction", "margin", "converged", "iterations", "seconds"]


def register(subparsers) -> None:
    from ..instances._candidate_kernels import DEFAULT_GENERATOR, GENERATORS
    from ..instances.ensembles import ENSEMBLES, PROBLEMS
    from ..solvers import SOLVERS

    parser = add_command(
        subparsers, "solve", run, help="solve one random instance with a chosen solver",
        description="Build a random memory problem (original 'op' or decoupled 'dp') from a seed, "
                    "solve it and report whether it is stored, the recall fraction and the "
                    "normalised margin (units of ||W||_F / d).",
        seed=True, seed_help="instance seed, an integer in [0, 2**63 - 1] (default: the package seed, "
             "replica.common.seeds.DEFAULT_SEED)")
    parser.add_argument("--d", type=int, required=True, help="dimension (>= 2)")
    parser.add_argument("--p", type=int, required=True, help="number of associations (>= 2)")
    parser.add_argument("--problem", choices=PROBLEMS, default="op", help="op (original) or dp (decoupled)")
    parser.add_argument("--solver", choices=SOLVERS, default="optimal", help="the solver (default optimal)")
    parser.add_argument("--kappa", type=float, default=1.0, help="rank fraction in (0, 1]")
    parser.add_argument("--ensemble", choices=ENSEMBLES, default="gaussian", help="embedding ensemble")
    parser.add_argument("--outputs", type=int, default=None,
                        help="number K of distinct answers, 2 <= K <= p (default p: one answer per fact; "
                             "targets mu mod K)")
    parser.add_argument("--generator", type=int, choices=GENERATORS, default=None,
                        help="DP: version of the candidate generator (default %s, the current one; 1 builds the "
                             "instances of results made before version 2)" % DEFAULT_GENERATOR)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--give-up", action="store_true",
                      help="optimal only: give up the costliest inputs until the rest are recalled (the "
                           "recall fraction is a lower bound on the best accuracy; status not_found)")
    mode.add_argument("--top-k", type=int, default=1, metavar="K",
                      help="optimal only: store every fact in the top K (default 1; K >= 2 is a search, "
                           "status not_found when it finds no W)")
    add_restarts_option(parser)
    add_top_k_restarts_option(parser)
    add_progress_option(parser)


class _Progress:
    """``validation.solvers.optimal.monitored`` callback: one line on stderr per 0.5 s after a delay."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.start = time.perf_counter()
        self.last = 0.0
        self.shown = False
        self.tty = sys.stderr.isatty()

    def __call__(self, state: dict) -> None:
        now = time.perf_counter()
        if not self.enabled or now - self.start < PROGRESS_AFTER or now - self.last < 0.5:
            return
        self.last = now
        margin = "-" if state["margin"] is None else f"{state['margin']:.4g}"
        line = (f"{state['phase']}: iteration {state['iterations']}, full pass {state['full_passes']}, "
                f"loss {state['loss']:.4g}, bound {state['bound']:.4g}, margin {margin}, "
                f"{now - self.start:.0f} s")
        sys.stderr.write(("\r" + line + "\033[K") if self.tty else line + "\n")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            sys.stderr.write("\n")


def run(args) -> int:
    from replica.common.checks import check_int, check_kappa

    from ..instances.ensembles import EmbeddingModel, FactSettings, make_instance
    from ..solvers import check_problem, solve
    from ..solvers.optimal import monitored

    check_int(args.d, "d", low=2)
    check_int(args.p, "p", low=2)
    kappa = float(check_kappa(args.kappa))
    options = mode_options(args.solver, args.give_up, args.top_k, args.top_k_restarts)
    restarts = restarts_setting(args.solver, args.restarts)
    check_problem(args.d, args.p, args.problem, args.solver, kappa, options)
    instance = make_instance(args.d, args.p, args.problem, seed=args.seed, generator=args.generator,
                             embeddings=EmbeddingModel(args.ensemble), facts=FactSettings(outputs=args.outputs))
    progress = _Progress(args.progress or sys.stderr.isatty())
    try:
        with monitored(progress):
            solution = solve(instance, solver=args.solver, kappa=kappa, options=options, **restarts)
    finally:
        progress.close()
    _write(instance, solution, args.format)
    return 130 if solution.message.startswith("interrupted") else 0


def _write(instance, solution, fmt: str) -> None:
    """The row of ``instance`` and ``solution`` on stdout in ``fmt``."""
    row = dict(instance.to_dict())
    row.update(solution.to_dict())
    if fmt == "json":
        render(row, _COLUMNS, "json", stream=sys.stdout)
        return
    render([row], _COLUMNS, fmt, stream=sys.stdout)
    if fmt == "table":
        sys.stdout.write(f"message: {solution.message}\n")
