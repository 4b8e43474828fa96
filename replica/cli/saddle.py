"""``replica saddle``: replica-symmetric overlap q*(p, d) and free entropy of the decoupled problem.

Theory: ``notes/replica_saddle.md`` (``replica.saddle.saddle_point``).
"""

from __future__ import annotations

import sys

from ..common.cliutil import add_command, add_progress_option, progress, render

COLUMNS = ["d", "p", "alpha", "q", "q_stderr", "free_entropy", "free_entropy_stderr", "residual",
           "capacity_coefficient", "converged"]


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "saddle", run,
        help="replica-symmetric saddle point q*(p, d) and free entropy (decoupled problem)",
        description=(
            "Solve d phi/dq = 0 for the replica-symmetric overlap q* of two solutions, and report "
            "the free entropy phi(q*) (log-volume of the solutions per weight).  The expectation "
            "over the p fields of a block is a Monte-Carlo mean over a fixed sample (common random "
            "numbers; stderr columns give the Monte-Carlo error).  capacity_coefficient = "
            "1 - p E[C_p]/d^2 on the same sample: q* -> 1 where it vanishes.  With --fraction, "
            "p is that fraction of the capacity p_c on the same sample.  See notes/replica_saddle.md."
        ),
        seed=True, seed_help="seed of the common random numbers (default: replica.common.seeds.DEFAULT_SEED)",
        theory=True,
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--p", type=float, nargs="+", metavar="P",
                       help="numbers of stored pairs (>= 2; integers when p - 1 <= exact competitors)")
    group.add_argument("--fraction", type=float, nargs="+", metavar="F",
                       help="loads as fractions of the capacity p_c on the same sample, in (0, 1)")
    parser.add_argument("--samples", type=int, default=None, metavar="M",
                        help="Monte-Carlo blocks (default: replica.saddle.DEFAULT_SAMPLES)")
    parser.add_argument("--exact-competitors", type=int, default=None, metavar="K",
                        help="largest competitors sampled exactly (default: replica.saddle.DEFAULT_EXACT_COMPETITORS)")
    add_progress_option(parser)


def run(args) -> int:
    from .. import saddle

    sample = saddle.ReplicaSample(
        saddle.DEFAULT_SAMPLES if args.samples is None else args.samples, args.seed,
        saddle.DEFAULT_EXACT_COMPETITORS if args.exact_competitors is None else args.exact_competitors)
    columns = list(COLUMNS)
    if args.fraction is not None:
        columns.insert(2, "p_c_sample")
    bar = progress(args, len(args.d) * len(args.p or args.fraction), "replica saddle")
    try:
        rows = _rows(args, sample, bar)
    finally:
        bar.close()
    render(rows, columns, args.format, stream=sys.stdout)
    return 0


def _rows(args, sample, bar) -> list:
    """One row per (d, p); ``bar.update()`` after each saddle point."""
    from .. import saddle

    rows = []
    for d in args.d:
        if args.fraction is not None:
            for f in args.fraction:
                if not 0.0 < f < 1.0:
                    raise ValueError(f"fraction must lie in (0, 1), got {f!r}")
            cap = saddle.sample_capacity(d, args.margin, sample=sample)
            loads = []
            for f in args.fraction:
                p = f * cap.p_c
                if p - 1.0 <= sample.exact_competitors:
                    p = float(max(2, round(p)))
                loads.append(p)
        else:
            cap = None
            loads = args.p
        for p in loads:
            res = saddle.saddle_point(d, p, args.margin, sample=sample)
            row = res.to_dict()
            if cap is not None:
                row["p_c_sample"] = cap.p_c
            rows.append(row)
            bar.update()
    return rows
