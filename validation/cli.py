"""Command line ``validation <command> ...``: one module ``validation._cmd_<name>`` per sub-command.

Each module's ``register(subparsers)`` adds its parser with
:func:`replica.common.cliutil.add_command`; list a module in ``COMMAND_MODULES`` to add
a command.  :func:`executor_from_args` builds the executor of the sweep commands.
"""

from __future__ import annotations

import sys

from replica.common.cliutil import dispatch

COMMAND_MODULES = ["validation._cmd_solve", "validation._cmd_capacity", "validation._cmd_reproduce",
                   "validation._cmd_export", "validation._cmd_compare", "validation._cmd_accuracy"]


def executor_from_args(args):
    """The executor of ``--workers/--executor/--scheduler`` (in-process for ``--workers 0``)."""
    from .sweep import make_executor

    if args.workers == 0:
        if args.executor != "local":
            raise ValueError(f"--workers 0 (in-process) only works with --executor local, got {args.executor!r}")
        return make_executor("serial")
    return make_executor(args.executor, workers=args.workers, scheduler=args.scheduler)


def main(argv=None) -> int:
    return dispatch("validation", "Simulations of linear associative memories.", COMMAND_MODULES, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
