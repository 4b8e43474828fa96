"""Small helpers shared by the ``replica`` and ``validation`` command lines."""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys


class ArgumentParser(argparse.ArgumentParser):
    """argparse parser whose errors are one line on stderr and exit status 2."""

    def error(self, message):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


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


def render(rows, columns, fmt: str = "table", digits: int = 6, stream=None) -> str:
    """Render a list of dicts as an aligned text table, CSV or JSON and return the text."""
    if fmt == "json":
        text = json.dumps(rows, indent=2, default=float) + "\n"
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
    """Run ``func()``; turn a ValueError into one line on stderr and exit status 2."""
    try:
        return func() or 0
    except ValueError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
        sys.stderr.write(f"{prog}: error: {msg}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130


def build_parser(prog: str, description: str, command_modules) -> ArgumentParser:
    """Build a parser whose sub-commands come from ``module.register(subparsers)``."""
    import importlib

    parser = ArgumentParser(prog=prog, description=description)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    sub.required = True
    for name in command_modules:
        importlib.import_module(name).register(sub)
    return parser


def dispatch(prog: str, description: str, command_modules, argv=None) -> int:
    """Parse ``argv`` and run the chosen sub-command under :func:`run_guarded`."""
    args = build_parser(prog, description, command_modules).parse_args(argv)
    return run_guarded(lambda: args.func(args), prog)
