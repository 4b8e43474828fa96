"""Small helpers shared by the ``replica`` and ``validation`` command lines.

A command line is a list of sub-command modules, each with a ``register(subparsers)``
that calls :func:`add_command`.  The options that several sub-commands share
(``--format``, ``--seed``, the executor options) come from one parent parser,
:func:`shared_options`, so they are spelled, checked and documented the same way
everywhere.  Errors are one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import io
import json
import math
import os
import sys
import tempfile

from .checks import check_memory
from .results import json_safe
from .seeds import resolve_seed

__all__ = ["ArgumentParser", "FORMATS", "EXECUTORS", "shared_options", "add_command", "seed_argument",
           "check_output_folder", "add_progress_option", "progress", "parse_grid", "render", "write_json",
           "run_guarded", "forget_caught_interrupts", "build_parser", "dispatch"]

FORMATS = ("table", "csv", "json")
"""Output formats every sub-command accepts."""

_GRID_ROW_BYTES = 2048  # one grid value becomes an output row (dict, text, JSON)

EXECUTORS = ("local", "dask")
"""``--executor`` choices of the sweep commands."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse parser whose errors are one line on stderr and exit status 2."""

    def error(self, message):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def seed_argument(text: str) -> int:
    """argparse type of ``--seed``: an integer in [0, 2**63 - 1] (``replica.common.seeds``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be an integer in [0, 2**63 - 1], got {text!r}") from None
    try:
        return resolve_seed(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _workers_argument(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"workers must be an integer >= 0, got {text!r}")
    return value


def shared_options(*, formats=FORMATS, format_default="table", seed=False, seed_default=None,
                   seed_help=None, executor=False, theory=False) -> ArgumentParser:
    """The parent parser of the shared options (``parents=[shared_options(...)]``).

    Parameters
    ----------
    formats : sequence of str
        ``--format`` choices (every command takes at least ``table``, ``csv``, ``json``).
    format_default : str
    seed : bool
        Add ``--seed`` (an integer in [0, 2**63 - 1], checked by
        ``replica.common.seeds.resolve_seed``).
    seed_default : int, optional
        Default of ``--seed`` (``None``: the function's own default seed).
    seed_help : str, optional
    executor : bool
        Add ``--workers``, ``--executor {local,dask}`` and ``--scheduler``.
    theory : bool
        Add the arguments of the theory commands: ``--d D [D ...]`` (required) and
        ``--margin M``.

    Returns
    -------
    ArgumentParser
        A new parser without ``-h`` (a new one per command, so that defaults never leak
        between commands).
    """
    parent = ArgumentParser(add_help=False)
    parent.add_argument("--format", choices=tuple(formats), default=format_default,
                        help=f"output format (default {format_default})")
    if seed:
        parent.add_argument("--seed", type=seed_argument, default=seed_default, metavar="S",
                            help=seed_help or f"seed, an integer in [0, 2**63 - 1] (default {seed_default})")
    if theory:
        parent.add_argument("--d", type=int, nargs="+", required=True, metavar="D", help="dimensions (>= 2)")
        parent.add_argument("--margin", type=float, default=0.0, metavar="M",
                            help="stability margin >= 0 in competitor standard deviations (default 0)")
    if executor:
        parent.add_argument("--workers", type=_workers_argument, default=None, metavar="N",
                            help="worker processes (default: number of CPUs; 0 = run in this process)")
        parent.add_argument("--executor", choices=EXECUTORS, default="local",
                            help="local (process pool, default) or dask")
        parent.add_argument("--scheduler", default=None, metavar="ADDRESS",
                            help="address of a running dask scheduler (with --executor dask)")
    return parent


def add_command(subparsers, name: str, run, *, help: str, description: str, **shared) -> ArgumentParser:
    """Add sub-command ``name`` running ``run(args)``, with the :func:`shared_options` ``shared``."""
    parser = subparsers.add_parser(name, help=help, description=description, parents=[shared_options(**shared)])
    parser.set_defaults(func=run)
    return parser


def check_output_folder(path: str, option: str = "--out", file_suffixes=()) -> str:
    """Create folder ``path`` if needed and check that a new file can be written in it.

    ``path`` may name a file instead (an existing file, or a name ending in one of
    ``file_suffixes``): then its folder is checked.  Called before any work, so that an
    unusable ``--out`` (under a regular file, in ``/proc``, read-only) is one line and
    exit status 2 rather than a traceback after the computation.

    Returns
    -------
    str
        The folder checked.

    Raises
    ------
    ValueError
        Naming ``option``, the path and the operating system's reason.
    """
    path = os.fspath(path)
    is_file = os.path.isfile(path) or (bool(file_suffixes) and path.endswith(tuple(file_suffixes)))
    folder = os.path.dirname(os.path.abspath(path)) if is_file else path
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-check-")
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        raise ValueError(f"{option} {path!r} cannot be used as an output folder: "
                         f"{exc.strerror or exc} ({exc.filename or folder})") from None
    return folder


def add_progress_option(parser) -> None:
    """Add ``--progress`` (a tqdm bar on stderr; shown anyway when stderr is a terminal)."""
    parser.add_argument("--progress", action="store_true",
                        help="show a progress bar on stderr (default: only when stderr is a terminal)")


class _NoBar:
    """Stand-in of a tqdm bar when no progress is shown."""

    def update(self, n=1):
        pass

    def close(self):
        pass


def progress(args, total: int, desc: str):
    """A tqdm bar on stderr (``update()``, ``close()``) if ``args.progress`` or stderr is a terminal."""
    if not (getattr(args, "progress", False) or sys.stderr.isatty()):
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False)


def parse_grid(text: str, name: str):
    """Parse ``START:STOP:NUM`` into a list of NUM evenly spaced floats (inclusive)."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"{name} must look like START:STOP:NUM, got {text!r}")
    try:
        start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError:
        raise ValueError(f"{name} must look like START:STOP:NUM with numbers, got {text!r}") from None
    if num < 1:
        raise ValueError(f"{name}: NUM must be >= 1, got {num}")
    check_memory(_GRID_ROW_BYTES * num, f"{name} with NUM={num}")
    if num == 1:
        return [start]
    step = (stop - start) / (num - 1)
    return [start + i * step for i in range(num)]


def _fmt(value, digits: int) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-4):
            return f"{value:.{digits}e}"
        return f"{value:.{digits}f}"
    return str(value)


def write_json(obj, stream=None) -> str:
    """JSON text of ``obj`` through ``json_safe`` (never NaN or Infinity); written to ``stream`` if given."""
    text = json.dumps(json_safe(obj), indent=2, allow_nan=False) + "\n"
    if stream is not None:
        stream.write(text)
    return text


def render(rows, columns, fmt: str = "table", digits: int = 6, stream=None) -> str:
    """Render a list of dicts as an aligned text table, CSV or JSON and return the text."""
    if fmt == "json":
        text = write_json(rows)
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in row.items()})
        text = buf.getvalue()
    elif fmt == "table":
        cells = [[_fmt(row.get(c, ""), digits) for c in columns] for row in rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths)),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
        text = "\n".join(lines) + "\n"
    else:
        raise ValueError(f"format must be one of 'table', 'csv', 'json'; got {fmt!r}")
    if stream is not None:
        stream.write(text)
    return text


def run_guarded(func, prog: str) -> int:
    """Run ``func()``; turn a ValueError into one line on stderr and exit status 2.

    A ``KeyboardInterrupt`` becomes the line ``<prog>: interrupted`` and status 130;
    afterwards :func:`forget_caught_interrupts` keeps CPython from ending the process
    by SIGINT for an interrupt that was caught.
    """
    try:
        return func() or 0
    except ValueError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
        sys.stderr.write(f"{prog}: error: {msg}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130
    finally:
        forget_caught_interrupts()


def forget_caught_interrupts() -> None:
    """Clear CPython's record of a ``KeyboardInterrupt`` that left ``exec``/``eval`` code.

    When a ``KeyboardInterrupt`` leaves code run by ``exec`` or ``eval`` of a string
    (``dataclasses``, ``collections.namedtuple`` and numba's compiler make functions that
    way), CPython records an unhandled interrupt although the command catches it, and
    under ``python -m`` the interpreter then ends itself by SIGINT after finalizing
    (``exit_sigint`` in CPython's ``Modules/main.c``): status -2 instead of 130, after the
    interrupt line.  Every ``exec`` of a string first clears that record (CPython 3.10 to
    3.13, checked), so an empty one does it.  CPython versions with gh-128130 (3.14, by
    its description; not checked here) clear the record only when the program starts;
    there the rare case stays, and a shell reports it as status 130 as well.
    """
    exec("")


def build_parser(prog: str, description: str, command_modules) -> ArgumentParser:
    """Build a parser whose sub-commands come from ``module.register(subparsers)``."""
    parser = ArgumentParser(prog=prog, description=description)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    sub.required = True
    for name in command_modules:
        importlib.import_module(name).register(sub)
    return parser


def dispatch(prog: str, description: str, command_modules, argv=None) -> int:
    """Parse ``argv`` and run the chosen sub-command under :func:`run_guarded`.

    Returns the exit status: 0 on success (and for ``--help``), 2 for bad input (an
    argparse error or a ``ValueError``, reported in one line on stderr).
    """
    try:
        args = build_parser(prog, description, command_modules).parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a bad argument (2, already reported)
        return exc.code if isinstance(exc.code, int) else 2
    return run_guarded(lambda: args.func(args), prog)
