"""``validation export``: dump the result store of an output folder as CSV.

See ``notes/reproduce.md``.
"""

from __future__ import annotations

import os
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("export", help="dump OUT/results.sqlite as CSV",
                                   description="Write every trial of the result store in OUT as CSV "
                                               "(to OUT/results.csv, or to stdout with --stdout).")
    parser.add_argument("--out", required=True, help="output folder holding results.sqlite (or the file)")
    parser.add_argument("--format", default="csv", help="csv (the only format)")
    parser.add_argument("--stdout", action="store_true", help="write to stdout instead of OUT/results.csv")
    parser.set_defaults(func=run)


def run(args) -> int:
    from replica.common.checks import check_choice

    from .store import ResultStore

    check_choice(args.format, "format", ("csv",))
    store = ResultStore(args.out, readonly=True)
    try:
        if args.stdout:
            store.export_csv(sys.stdout)
        else:
            folder = args.out if os.path.isdir(args.out) else os.path.dirname(os.path.abspath(args.out))
            path = os.path.join(folder, "results.csv")
            with open(path, "w", newline="") as fh:
                n = store.export_csv(fh)
            sys.stderr.write(f"{n} rows written to {path}\n")
    finally:
        store.close()
    return 0
