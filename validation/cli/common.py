"""Options and helpers shared by the commands of ``validation``: executors, ``--threads``, solver modes."""

from __future__ import annotations

import argparse

from ..solvers.engine.registry import solver_spec

__all__ = ["executor_from_args", "threads_argument", "WithThreads", "add_restarts_option", "restarts_setting",
           "mode_options", "add_top_k_restarts_option"]


def executor_from_args(args):
    """The executor of ``--workers/--executor/--scheduler`` (in-process for ``--workers 0``)."""
    from ..runtime.sweep import make_executor

    if args.workers == 0:
        if args.executor != "local":
            raise ValueError(f"--workers 0 (in-process) only works with --executor local, got {args.executor!r}")
        return make_executor("serial")
    return make_executor(args.executor, workers=args.workers, scheduler=args.scheduler)


def threads_argument(text: str) -> int:
    """argparse type of ``--threads``: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"threads must be an integer >= 1, got {text!r}")
    return value


class WithThreads:
    """``subparsers`` stand-in that adds ``--threads`` to every command parser it creates."""

    def __init__(self, subparsers):
        self._subparsers = subparsers

    def add_parser(self, *args, **kwargs):
        parser = self._subparsers.add_parser(*args, **kwargs)
        parser.add_argument("--threads", type=threads_argument, default=None, metavar="N",
                            help="numba and BLAS threads per process (default 1, or NUMBA_NUM_THREADS / "
                                 "OMP_NUM_THREADS when set)")
        return parser


def add_restarts_option(parser) -> None:
    """``--restarts R``: most starts of the rank-m search of ``optimal`` (``notes/rank_search.md``)."""
    parser.add_argument("--restarts", type=int, default=None, metavar="R",
                        help="optimal at kappa < 1: most starts of the rank-m search (integer >= 1; default: "
                             "the production setting, validation.solvers.rank_search.DEFAULT_RESTARTS starts "
                             "ending at the first that stores); a search that ends without storing is not_found, "
                             "a LOWER-BOUND verdict")


def restarts_setting(solver: str, restarts) -> dict:
    """``{"restarts": R}`` for the solve settings (empty when not given), checked.

    Raises
    ------
    ValueError
        If ``restarts`` is not an integer >= 1 or is given with a solver other than ``optimal``.
    """
    from ..solvers.rank_search import check_restarts

    if restarts is None:
        return {}
    restarts = check_restarts(restarts)
    if not solver_spec(solver).takes_restarts:
        raise ValueError(f"--restarts is a setting of solver 'optimal' (rank-m search), got --solver {solver}")
    return {"restarts": restarts}


def mode_options(solver: str, give_up: bool = False, top_k: int = 1, top_k_restarts: int = 0) -> dict | None:
    """Solver options of the ``--give-up`` / ``--top-k`` / ``--top-k-restarts`` flags (None when all are off).

    Raises
    ------
    ValueError
        If a flag is given with a solver other than ``optimal``, or ``--top-k-restarts``
        without ``--top-k K >= 2``.
    """
    if top_k_restarts and top_k == 1:
        raise ValueError(f"--top-k-restarts {top_k_restarts} needs --top-k K with K >= 2")
    if not give_up and top_k == 1:
        return None
    if not solver_spec(solver).has_search_modes:
        flag = "--give-up" if give_up else f"--top-k {top_k}"
        raise ValueError(f"{flag} is a search mode of solver 'optimal', got --solver {solver}")
    if give_up:
        return {"give_up": True}
    return {"top_k": top_k, **({"top_k_restarts": top_k_restarts} if top_k_restarts else {})}


def add_top_k_restarts_option(parser) -> None:
    """``--top-k-restarts R``: random restarts of the top-k search (``OptimalOptions.top_k_restarts``)."""
    parser.add_argument("--top-k-restarts", type=int, default=0, metavar="R",
                        help="with --top-k K >= 2: up to R more runs of the search from random starts when the "
                             "first does not store (default 0); the starts come from the package seed "
                             "(replica.common.seeds.DEFAULT_SEED), whatever the instance seed")
