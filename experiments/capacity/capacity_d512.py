"""OP capacity at d = 512 with the bracketing design: experiments/capacity/capacity_d512_op.md.

Runs::

    validation capacity --d 512 --problem op --solver optimal --trials 4 --rounds 0 --seed 0 \\
        --design bracket --bracket-step 0.01 --workers 2 --out STORE --format table

(``STORE``: ``--store DIR``, kept there so that a stopped run resumes; by default a temporary
folder removed after the run)

(decisions only, ``refine`` off as in every capacity sweep), then reads the per-trial
solve times back from ``STORE/results.sqlite`` and times one float32 score GEMM of the
shape ``(p x d) @ (d x p)`` at the theory p_c with one BLAS thread (best of 3) in the same
run, so that every trial is also given in GEMM-equivalents (trial wall time / GEMM time;
the two workers run at the same time, one thread each, so a trial shares the machine
with the other one).  The page states the command, the wall time of the sweep and the
table of the capacity command unchanged.

The provenance record ``capacity_d512_op.provenance.json`` is written beside the page.

Usage::

    python -m experiments.capacity.capacity_d512                  # about 25 min on 2 cores
    python -m experiments.capacity.capacity_d512 --store DIR      # trials kept in DIR (reused on a rerun)
    python -m experiments.capacity.capacity_d512 --out DIR        # the page written into DIR
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import sys
import tempfile
import time

from experiments.runner import run

D = 512
ARGV = ["capacity", "--d", str(D), "--problem", "op", "--solver", "optimal", "--trials", "4", "--rounds", "0",
        "--seed", "0", "--design", "bracket", "--bracket-step", "0.01", "--workers", "2", "--format", "table"]


def gemm_seconds(p, d, repeats=3):
    """Best-of-``repeats`` wall time of one float32 (p x d) @ (d x p) product, one BLAS thread
    (the timer of ``benchmarks/bench_max_margin.py``)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "benchmarks"))
    from bench_max_margin import gemm_seconds as timer

    from validation.solvers import set_threads

    set_threads(1)
    return timer(p, d, repeats=repeats)


def trial_rows(store):
    """(p, status, seconds) of every d = 512 trial in the store."""
    from validation.runtime.store import ResultStore

    kept = ResultStore(store, readonly=True)
    try:
        rows = kept.rows(d=D)
    finally:
        kept.close()
    return [(r["p"], r["status"], r["seconds"]) for r in sorted(rows, key=lambda r: (r["p"], r["trial"]))]


def sweep(store, out, command):
    """Run the sweep into the result store ``store`` and write the page ``out``; return the exit status."""
    from replica import capacity
    from validation.cli import main as cli

    buffer = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buffer):
        code = cli(ARGV + ["--out", store])
    wall = time.perf_counter() - t0
    p_theory = int(round(capacity(D).p_c))
    gemm = gemm_seconds(p_theory, D)
    rows = trial_rows(store)
    by_status = {}
    for _, status, seconds in rows:
        by_status.setdefault(status, []).append(seconds)
    lines = ["# OP capacity at d = 512", "",
             f"Written by `experiments/capacity/capacity_d512.py` (`{command}`), which runs",
             "", "    validation " + " ".join(ARGV) + " --out STORE", "",
             f"on 2 cores (two worker processes, one numba / BLAS thread each). Wall time of the sweep "
             f"in this run: {wall:.0f} s ({wall / 60:.1f} min; trials already in STORE are reused, so a "
             f"resumed run takes less); exit status {code}. Decisions are certified: `stored` by float64 "
             "recall of every input, `not_stored` by the dual bound of the `optimal` solver.", "",
             "The capacity command's output, unchanged:", "", "```", buffer.getvalue().rstrip(), "```", "",
             "## Cost of one decision", "",
             f"One float32 score GEMM `({p_theory} x {D}) @ ({D} x {p_theory})` takes {gemm:.2f} s on one "
             "thread (best of 3, measured in the same run after the sweep). Trial times are wall seconds "
             "of a solve while the other worker runs, so they include the contention of two solves on "
             "two cores.", "",
             "| status | trials | median s | min s | max s | median s / GEMM at the theory p_c |",
             "|---|---|---|---|---|---|"]
    for status in sorted(by_status):
        s = by_status[status]
        lines.append(f"| {status} | {len(s)} | {statistics.median(s):.1f} | {min(s):.1f} | {max(s):.1f} | "
                     f"{statistics.median(s) / gemm:.0f} |")
    lines += ["", "| p | status | seconds | GEMM-equivalents (GEMM scaled to this p by (p / p_c)^2) |",
              "|---|---|---|---|"]
    # the GEMM of a trial's own p, scaled from the timed one by (p / p_theory)^2 (its flop count)
    lines += [f"| {p} | {status} | {seconds:.1f} | {seconds / (gemm * (p / p_theory) ** 2):.0f} |"
              for p, status, seconds in rows]
    with open(out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    sys.stdout.write(buffer.getvalue())
    return code


PAGE = "capacity_d512_op.md"


def _arguments(parser) -> None:
    parser.add_argument("--store", default=None, metavar="DIR",
                        help="result store of the trials (default: a temporary one, removed after the run)")


def _measure(job) -> int:
    page = job.path(PAGE)
    command = job.command + ("" if job.args.store is None else " --store STORE")
    if job.args.store is not None:
        code = sweep(job.args.store, page, command)
    else:
        with tempfile.TemporaryDirectory(prefix="capacity_d512_") as store:
            code = sweep(store, page, command)
    job.record(page, seed=0, exit_status=code)
    return code


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, argv=argv, arguments=_arguments, seed=0)


if __name__ == "__main__":
    sys.exit(main())
