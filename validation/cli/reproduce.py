"""``validation reproduce``: run the experiments and write figures, CSV tables and report.md.

See ``notes/reproduce.md``.
"""

from __future__ import annotations

import dataclasses
import sys

from replica.common.cliutil import add_command, check_output_folder, render

from .common import executor_from_args


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "reproduce", run, help="theory against simulation: figures, CSV tables and report.md",
        description="Run the capacity, spectrum and score experiments (resumable: finished trials are "
                    "kept in OUT/results.sqlite) and write PNG figures, CSV tables and OUT/report.md.  "
                    "The output is a summary of what was written: table (lines), csv (kind,path), "
                    "json (the whole result).",
        seed=True, seed_help="override the base seed of the configuration (an integer in [0, 2**63 - 1])",
        executor=True)
    parser.add_argument("--quick", action="store_true",
                        help="small d and few trials (the sizes and run times of both runs: notes/reproduce.md)")
    parser.add_argument("--out", default="reproduce-out", help="output folder (default: reproduce-out)")
    parser.add_argument("--trials", type=int, default=None,
                        help="override the trials per grid point (grid-design estimates; the bracketed "
                             "estimates of the full run keep theirs)")
    parser.add_argument("--render", action="store_true",
                        help="write the figures, tables and report of OUT again from OUT/reproduce_data.json, "
                             "without measuring")
    parser.add_argument("--optimal-solver", choices=("optimal", "lp"), default="optimal",
                        help="solver for the optimal memories: optimal (default) | lp (exact, small d only)")


def _write_summary(result, fmt) -> None:
    if fmt == "table":
        sys.stdout.write(f"report: {result.report}\nfigures: {', '.join(result.figures)}\n"
                         f"tables: {', '.join(result.tables)}\n"
                         f"{result.trials_run} trials in {result.seconds:.0f} s\n"
                         f"status: {result.status}; {result.message}\n")
        return
    if fmt == "json":
        render(result.to_dict(), [], "json", stream=sys.stdout)
        return
    rows = ([{"kind": "report", "path": result.report}] + [{"kind": "figure", "path": f} for f in result.figures]
            + [{"kind": "table", "path": t} for t in result.tables])
    render(rows, ["kind", "path"], "csv", stream=sys.stdout)


def run(args) -> int:
    from replica.common.checks import check_int

    from ..reproduce import FULL, QUICK, render_saved, reproduce

    if args.render:
        try:
            written = render_saved(args.out)
        except (FileNotFoundError, ValueError) as exc:
            raise SystemExit(f"validation reproduce --render: {exc}") from None
        sys.stdout.write(f"report: {written['report']}\nfigures: {', '.join(written['figures'])}\n"
                         f"tables: {', '.join(written['tables'])}\n")
        return 0
    config = QUICK if args.quick else FULL
    changes = {"optimal_solver": args.optimal_solver}
    if args.trials is not None:
        changes["trials"] = check_int(args.trials, "trials", low=1)
    if args.seed is not None:
        changes["seed"] = args.seed
    config = dataclasses.replace(config, **changes)
    check_output_folder(args.out)
    executor = executor_from_args(args)
    try:
        result = reproduce(args.out, config, executor=executor, progress=True, log=sys.stderr)
    finally:
        executor.shutdown()
    _write_summary(result, args.format)
    return 0
