"""``validation export``: dump the result store of an output folder (CSV, JSON or a table).

See ``notes/reproduce.md``.
"""

from __future__ import annotations

import os
import sys

from replica.common.cliutil import add_command, check_output_folder, render

_SUFFIX = {"csv": "csv", "json": "json", "table": "txt"}


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "export", run, help="dump OUT/results.sqlite as CSV (or JSON, or a text table)",
        description="Write every trial of the result store in OUT (without the JSON record of each trial) "
                    "to OUT/results.csv (.json, .txt for --format json, table), or to stdout with --stdout.",
        format_default="csv")
    parser.add_argument("--out", required=True, help="output folder holding results.sqlite (or the file)")
    parser.add_argument("--stdout", action="store_true", help="write to stdout instead of OUT/results.<format>")


def _export(store, fmt, stream) -> int:
    """Write the rows of ``store`` to ``stream`` in ``fmt``; return the row count."""
    if fmt == "csv":
        return store.export_csv(stream)
    rows = store.rows()
    columns = [c for c in rows[0] if c != "result"] if rows else []
    if fmt == "json":
        rows = [{c: r[c] for c in columns} for r in rows]
    render(rows, columns, fmt, stream=stream)
    return len(rows)


def run(args) -> int:
    from ..runtime.store import STORE_SUFFIXES, ResultStore

    store = ResultStore(args.out, readonly=True)  # an existing store: its folder exists
    if not args.stdout:
        try:
            check_output_folder(args.out, file_suffixes=STORE_SUFFIXES)
        except ValueError:
            store.close()
            raise
    try:
        if args.stdout:
            _export(store, args.format, sys.stdout)
        else:
            folder = args.out if os.path.isdir(args.out) else os.path.dirname(os.path.abspath(args.out))
            path = os.path.join(folder, f"results.{_SUFFIX[args.format]}")
            with open(path, "w", newline="") as fh:
                n = _export(store, args.format, fh)
            sys.stderr.write(f"{n} rows written to {path}\n")
    finally:
        store.close()
    return 0
