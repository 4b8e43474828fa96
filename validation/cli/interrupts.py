"""Ctrl-C handling of the ``validation`` command line (see :mod:`validation.cli`).

The first SIGINT raises ``KeyboardInterrupt`` in the command; a second one, or a
clean-up longer than :data:`INTERRUPT_GRACE` seconds, ends the process at once with
``validation: interrupted`` and status 130.  A first SIGINT swallowed by a callback
that cannot pass the exception on is raised again after :data:`REDELIVER_DELAY`
seconds.  Importing this module while the ``validation`` command starts installs a
SIGINT handler that ends the process at once (nothing to clean up yet).
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading

__all__ = ["PROG", "INTERRUPT_GRACE", "REDELIVER_DELAY", "exit_now", "install_interrupt_handling", "run_command",
           "command_returned", "flush_streams"]

PROG = "validation"
_INTERRUPTED_LINE = f"{PROG}: interrupted\n".encode()


def exit_now(signum=None, frame=None) -> None:
    """End the process at once (second SIGINT, or clean-up past the grace time)."""
    os.write(2, _INTERRUPTED_LINE)
    os._exit(130)


def _command_line() -> bool:
    """This module is being imported to run the ``validation`` command (script or ``python -m``)."""
    first = os.path.basename(sys.argv[0]) if sys.argv else ""
    return first in (PROG, "-m") or sys.argv[0].endswith(os.path.join(PROG, "__main__.py"))


if _command_line() and threading.current_thread() is threading.main_thread():
    # a SIGINT while the command is still importing: nothing to clean up yet
    signal.signal(signal.SIGINT, exit_now)

INTERRUPT_GRACE = 5.0
"""Seconds the clean-up after a SIGINT may take before the process exits anyway."""

REDELIVER_DELAY = 0.05
"""Seconds after which a swallowed first SIGINT is raised again."""

_redeliver = threading.Event()
_returned = threading.Event()  # set when the command of main() has returned
_timers: list = []  # redelivery timers, cancelled when the command has returned


def _on_interrupt(signum, frame):
    """First SIGINT: a second one exits at once, a clean-up past the grace time too."""
    signal.signal(signal.SIGINT, _after_interrupt)
    timer = threading.Timer(INTERRUPT_GRACE, exit_now)
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
    exit_now()


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


def run_command(args):
    """Run the command of ``args``, noting when it has returned."""
    _returned.clear()
    try:
        return args.func(args)
    finally:
        _returned.set()


def command_returned(status: int) -> int:
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


def flush_streams() -> None:
    """Flush the output streams (a closed or broken pipe is not an error here)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
