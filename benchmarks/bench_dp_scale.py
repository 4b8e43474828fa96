"""Decoupled problem at scale: DP decisions with and without screened full passes, in GEMM-equivalents.

For every ``(d, problem, fraction)`` at ``p = round(fraction * p_c(d))`` (``p_c`` from
``replica.capacity(d).p_c``) the script times, in one process with one numba and one
BLAS thread (``validation.solvers.set_threads(1)``), a decision of the ``optimal``
solver (``refine=False``, default options, ``tol = 1e-3``, ``max_iter = 20000``):

* DP with screened full passes (``OptimalOptions(screen_dp=True)``, the
  default) and without (``False``) on the same instance, checking that the decisions
  agree;
* OP once (screening applies to DP full passes only);
* one float32 score GEMM of the same shape, ``(p x d) @ (d x p)``, best of 7, so that
  every time is also given in GEMM-equivalents (solve CPU time / GEMM time; with one
  thread the CPU time is the solve time on an idle core).

It also reports the share of per-input scans that the screen skipped (``screened``:
inputs whose untracked candidates were not regenerated, over all full passes).  The
numba kernels are compiled before anything is timed.  The script writes a table, the
command, the seeds and the wall time to ``--out`` (default ``benchmarks/dp_scale.md``).

Usage::

    python benchmarks/bench_dp_scale.py --d 64 128 --fractions 0.95 1.05 --large 256
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

from bench_max_margin import fmt, gemm_seconds  # the same GEMM timer and cells (script directory)

COLUMNS = ("d", "p", "problem", "screen", "status", "seconds", "cpu_s", "gemm_s", "gemm_eq", "iterations",
           "passes", "screened", "speedup")


def decide(instance, screen):
    """One timed decision; returns (solution, wall seconds, CPU seconds, screened share or None)."""
    from validation.solvers.engine.decision import DecisionRun
    from validation.solvers.engine.options import OptimalOptions

    t0, c0 = time.perf_counter(), time.process_time()
    run = DecisionRun(instance, 1.0, tol=1e-3, max_iter=20000, time_limit=None, refine=False,
                      options=OptimalOptions(screen_dp=screen))
    solution = run.run()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    share = None
    if run.screen is not None:
        share = run.screen.screened / max(run.screen.screened + run.screen.scanned, 1)
    return solution, seconds, cpu, share


def rows_for(d, fraction, seed, screen_off):
    """Table rows of one (d, fraction): DP screened, DP plain (if asked), OP."""
    import replica
    from validation.instances.ensembles import make_instance

    p = int(round(fraction * replica.capacity(d).p_c))
    gemm = gemm_seconds(p, d)
    rows = []
    cases = [("dp", True)] + ([("dp", False)] if screen_off else []) + [("op", None)]
    for problem, screen in cases:
        instance = make_instance(d, p, problem, seed=seed)
        sol, seconds, cpu, share = decide(instance, True if screen is None else screen)
        rows.append({"d": d, "p": p, "problem": problem,
                     "screen": "n/a" if screen is None else ("on" if screen else "off"),
                     "status": sol.status, "seconds": seconds, "cpu_s": cpu, "gemm_s": gemm,
                     "gemm_eq": cpu / gemm,
                     "iterations": sol.iterations, "passes": sol.info["full_passes"],
                     "screened": share})
        print(rows[-1], flush=True)
    if screen_off:
        on, off = rows[0], rows[1]
        on["speedup"] = off["cpu_s"] / on["cpu_s"]
        if on["status"] != off["status"]:
            raise SystemExit(f"decisions differ at d = {d}, p = {p}: {on['status']} / {off['status']}")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.95, 1.05])
    parser.add_argument("--large", type=int, nargs="*", default=[256],
                        help="sizes run at p = p_c only, with one instance")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/dp_scale.md")
    parser.add_argument("--cpu", type=int, default=None,
                        help="pin the process to this CPU (default: the last one it may use)")
    args = parser.parse_args(argv)
    from validation.solvers import set_threads
    from validation.solvers.engine.warmup import warm_up

    cpu = max(os.sched_getaffinity(0)) if args.cpu is None else args.cpu
    os.sched_setaffinity(0, {cpu})
    threads = set_threads(1)
    t_start = time.perf_counter()
    warm_up()
    rows = []
    for d in args.d:
        for fraction in args.fractions:
            rows += rows_for(d, fraction, args.seed, screen_off=True)
    for d in args.large:
        rows += rows_for(d, 1.0, args.seed, screen_off=True)
    wall = time.perf_counter() - t_start
    lines = ["# DP at scale: screened full passes and GEMM-equivalents", "",
             f"Written by `benchmarks/bench_dp_scale.py` (`python {' '.join(sys.argv)}`), "
             f"one process pinned to CPU {cpu}, threads {threads}, {platform.processor() or platform.machine()}; "
             f"instance seed {args.seed} (one instance per row: `make_instance(d, p, problem, seed)`), "
             f"wall time {wall:.0f} s.  Decisions of `optimal` with `refine=False`; `seconds` is wall "
             f"time, `cpu_s` the process CPU time (one thread: the time it needs on a core of its own, "
             f"which is what the ratios use); `gemm_eq` = cpu_s / one "
             f"float32 (p x d) @ (d x p) GEMM (best of 7) in the same run; `screened` = share of "
             f"per-input scans skipped by the DP screen; `speedup` = plain / screened cpu_s.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(fmt(row.get(c)) for c in COLUMNS) + " |" for row in rows]
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
