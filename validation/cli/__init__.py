"""Command line ``validation <command> ...``: one module ``validation.cli.<name>`` per sub-command.

Each module's ``register(subparsers)`` adds its parser with
:func:`replica.common.cliutil.add_command`; list a module in ``COMMAND_MODULES`` to add
a command.  :func:`executor_from_args` builds the executor of the sweep commands.

Every command takes ``--threads N`` (numba and BLAS threads per process; default one,
or what ``NUMBA_NUM_THREADS`` / ``OMP_NUM_THREADS`` say: see
:func:`validation.solvers.set_threads`).

Ctrl-C: the first SIGINT stops the command (sweep workers are terminated and joined,
finished trials stay in the store), prints ``validation: interrupted`` and exits with
status 130; cleanup that takes longer than :data:`INTERRUPT_GRACE` seconds, or a second
SIGINT, ends the process at once with the same line and status.  A first SIGINT
that lands inside a callback that cannot pass the exception on (numba's compiler calls
Python through ctypes while it loads its cache) is raised again a moment later, once
the callback has returned, instead of being printed as "Exception ignored" and lost; if
the command ends before that, it still exits with the line and status 130.  Once the
command has returned, SIGINT is ignored until the process ends, and a first SIGINT
raised again after that point is dropped, so that nothing late can end the process by
the signal itself (except on the CPython versions where
:func:`replica.common.cliutil.forget_caught_interrupts` cannot work; a shell reports that
end as status 130 as well).
"""

from __future__ import annotations

import importlib
import sys
import threading

# first: while the command is still importing, a SIGINT ends it at once
from .interrupts import (  # noqa: I001
    INTERRUPT_GRACE,
    PROG,
    REDELIVER_DELAY,
    command_returned,
    exit_now,
    flush_streams,
    install_interrupt_handling,
    run_command,
)

from replica.common.cliutil import ArgumentParser, run_guarded  # noqa: E402

from .common import WithThreads, executor_from_args  # noqa: E402

__all__ = ["main", "build_parser", "executor_from_args", "install_interrupt_handling", "COMMAND_MODULES", "PROG",
           "INTERRUPT_GRACE", "REDELIVER_DELAY"]

COMMAND_MODULES = ["validation.cli.solve", "validation.cli.capacity", "validation.cli.reproduce",
                   "validation.cli.export", "validation.cli.compare", "validation.cli.accuracy",
                   "validation.cli.zipf"]


def build_parser() -> ArgumentParser:
    """The ``validation`` parser: the commands of ``COMMAND_MODULES``, each with ``--threads``."""
    parser = ArgumentParser(prog=PROG, description="Simulations of linear associative memories.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(WithThreads(sub))
    return parser


def main(argv=None) -> int:
    """Run ``validation`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    0 on success, 2 for bad input (one line on stderr), 130 after Ctrl-C.  Called
    from the command line (``argv`` None, main thread) it installs the SIGINT handling
    described in the module docstring.
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a bad argument (2, already reported)
        return exc.code if isinstance(exc.code, int) else 2
    from ..solvers import set_threads

    set_threads(args.threads)
    handle = argv is None and threading.current_thread() is threading.main_thread()
    if not handle:
        return run_guarded(lambda: args.func(args), PROG)
    install_interrupt_handling()
    try:
        status = run_guarded(lambda: run_command(args), PROG)
        status = command_returned(status)
    except KeyboardInterrupt:  # a SIGINT after the command returned, before SIGINT is ignored
        exit_now()
    flush_streams()
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
