"""Command line ``validation <command> ...``: one module ``validation._cmd_<name>`` per sub-command.

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

import _thread
import argparse
import importlib
import os
import signal
import sys
import threading

PROG = "validation"
_INTERRUPTED_LINE = f"{PROG}: interrupted\n".encode()


def _exit_now(signum=None, frame=None) -> None:
    """End the process at once (second SIGINT, or clean-up past the grace time)."""
    os.write(2, _INTERRUPTED_LINE)
    os._exit(130)


def _command_line() -> bool:
    """This module is being imported to run the ``validation`` command (script or ``python -m``)."""
    first = os.path.basename(sys.argv[0]) if sys.argv else ""
    return first in (PROG, "-m") or sys.argv[0].endswith(os.path.join(PROG, "__main__.py"))


if _command_line() and threading.current_thread() is threading.main_thread():
    # a SIGINT while the command is still importing: nothing to clean up yet
    signal.signal(signal.SIGINT, _exit_now)

from replica.common.cliutil import ArgumentParser, run_guarded  # noqa: E402

COMMAND_MODULES = ["validation._cmd_solve", "validation._cmd_capacity", "validation._cmd_reproduce",
                   "validation._cmd_export", "validation._cmd_compare", "validation._cmd_accuracy"]

INTERRUPT_GRACE = 5.0
"""Seconds the clean-up after a SIGINT may take before the process exits anyway."""


def executor_from_args(args):
    """The executor of ``--workers/--executor/--scheduler`` (in-process for ``--workers 0``)."""
    from .sweep import make_executor

    if args.workers == 0:
        if args.executor != "local":
            raise ValueError(f"--workers 0 (in-process) only works with --executor local, got {args.executor!r}")
        return make_executor("serial")
    return make_executor(args.executor, workers=args.workers, scheduler=args.scheduler)


def _threads_argument(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"threads must be an integer >= 1, got {text!r}")
    return value


class _WithThreads:
    """``subparsers`` stand-in that adds ``--threads`` to every command parser it creates."""

    def __init__(self, subparsers):
        self._subparsers = subparsers

    def add_parser(self, *args, **kwargs):
        parser = self._subparsers.add_parser(*args, **kwargs)
        parser.add_argument("--threads", type=_threads_argument, default=None, metavar="N",
                            help="numba and BLAS threads per process (default 1, or NUMBA_NUM_THREADS / "
                                 "OMP_NUM_THREADS when set)")
        return parser


def build_parser() -> ArgumentParser:
    """The ``validation`` parser: the commands of ``COMMAND_MODULES``, each with ``--threads``."""
    parser = ArgumentParser(prog=PROG, description="Simulations of linear associative memories.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(_WithThreads(sub))
    return parser


REDELIVER_DELAY = 0.05
"""Seconds after which a swallowed first SIGINT is raised again."""

_redeliver = threading.Event()
_returned = threading.Event()  # set when the command of main() has returned
_timers: list = []  # redelivery timers, cancelled when the command has returned


def _on_interrupt(signum, frame):
    """First SIGINT: a second one exits at once, a clean-up past the grace time too."""
    signal.signal(signal.SIGINT, _after_interrupt)
    timer = threading.Timer(INTERRUPT_GRACE, _exit_now)
    timer.daemon = True
    timer.start()
    raise KeyboardInterrupt


def _after_interrupt(signum, frame):
    """SIGINT after the first: the first raised again (see below), or a second one (exit)."""
    if _redeliver.is_set():
        if _returned.is_set():  # too late to stop the command: main() reports the interrupt
            return
        _redeliver.clear()
        raise KeyboardInterrupt
    _exit_now()


def _signal_main_thread() -> None:
    """Send SIGINT to the main thread (a real signal, so that a blocking call there returns)."""
    if hasattr(signal, "pthread_kill"):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    else:  # pragma: no cover - no pthreads
        _thread.interrupt_main(signal.SIGINT)


def _on_unraisable(unraisable) -> None:
    """The first SIGINT's KeyboardInterrupt was swallowed by a callback: raise it again soon."""
    if issubclass(unraisable.exc_type, KeyboardInterrupt) and signal.getsignal(signal.SIGINT) is _after_interrupt:
        _redeliver.set()
        timer = threading.Timer(REDELIVER_DELAY, _signal_main_thread)
        timer.daemon = True
        _timers.append(timer)
        timer.start()
        return
    sys.__unraisablehook__(unraisable)


def install_interrupt_handling() -> None:
    """Install the SIGINT handling of the module docstring (main thread only)."""
    sys.unraisablehook = _on_unraisable
    signal.signal(signal.SIGINT, _on_interrupt)


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
    from .solvers import set_threads

    set_threads(args.threads)
    handle = argv is None and threading.current_thread() is threading.main_thread()
    if not handle:
        return run_guarded(lambda: args.func(args), PROG)
    install_interrupt_handling()
    try:
        status = run_guarded(lambda: _run_command(args), PROG)
        status = _command_returned(status)
    except KeyboardInterrupt:  # a SIGINT after the command returned, before SIGINT is ignored
        _exit_now()
    _flush()
    return status


def _run_command(args):
    _returned.clear()
    try:
        return args.func(args)
    finally:
        _returned.set()


def _command_returned(status: int) -> int:
    """SIGINT ignored from now on, redelivery stopped; the exit status of the command.

    While the interpreter shuts down Python resets every signal with a Python handler
    to the default action, and a SIGINT then (a late one, or one sent again by a
    redelivery timer) would kill the process without a word (status -2).  SIG_IGN is
    left alone by that reset and holds for every thread.  A first SIGINT that a callback
    swallowed and that was not raised again before the command returned still makes
    the status 130.  ``run_guarded`` has already cleared CPython's record of a caught
    interrupt (:func:`replica.common.cliutil.forget_caught_interrupts`), the one way left
    in which CPython itself could end the process by SIGINT.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for timer in _timers:
        timer.cancel()
    if _redeliver.is_set():
        _redeliver.clear()
        if status != 130:
            sys.stderr.write(f"{PROG}: interrupted\n")
            status = 130
    return status


def _flush() -> None:
    """Flush the output streams (a closed or broken pipe is not an error here)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
