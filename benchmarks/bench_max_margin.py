"""Certified max-margin W: time, gap and GEMM-equivalents against the decision and the old refinement.

For every (d, problem, seed) at ``p = round(fraction * p_c(d))`` (``p_c`` from
``replica.capacity(d).p_c``) the script times, in one process with one numba and one
BLAS thread (``validation.solvers.set_threads(1)``):

* the decision: ``solve(instance, "optimal", refine=False)``;
* the certified max-margin solve after it:
  ``validation.solvers.maxmargin.solve_max_margin(instance, decision.W, tol=tol)``;
* the old refinement, ``solve(instance, "optimal", refine=True, time_limit=...)``
  (ridge path; seed 0 only unless ``--old-seeds`` says more), and where it got;
* one float32 score GEMM of the same shape, ``(p x d) @ (d x p)``, best of 7, so that
  every time is also given in GEMM-equivalents (time / GEMM time).

The numba kernels are compiled before anything is timed.  The script prints a table
and writes it, with the command and the thread counts, to ``--out`` (default
``benchmarks/max_margin.md``).

Usage::

    python benchmarks/bench_max_margin.py --d 64 128 --seeds 2 --problems op dp
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

COLUMNS = ("d", "p", "problem", "seed", "decision_s", "decision_gemm", "mm_s", "mm_gemm", "ratio",
           "gap", "margin", "bound", "sweeps", "passes", "status", "old_s", "old_margin", "old_bound",
           "old_gap")


def gemm_seconds(p, d, repeats=7):
    """Best time of one float32 (p x d) @ (d x p) product."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((p, d)).astype(np.float32)
    B = rng.standard_normal((d, p)).astype(np.float32)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        A @ B
        best = min(best, time.perf_counter() - t0)
    return best


def warm_up():
    from validation.instances.ensembles import make_instance
    from validation.solvers import solve
    from validation.solvers.maxmargin import solve_max_margin

    for problem in ("op", "dp"):
        instance = make_instance(8, 20, problem, seed=0)
        solve_max_margin(instance, solve(instance, "optimal", refine=False).W)
        solve(instance, "optimal", refine=True, time_limit=5.0)


def run_case(d, p, problem, seed, tol, old_limit):
    """One row of the table."""
    from validation.instances.ensembles import make_instance
    from validation.solvers import solve
    from validation.solvers.maxmargin import solve_max_margin

    instance = make_instance(d, p, problem, seed=seed)
    gemm = gemm_seconds(p, d)
    t0 = time.perf_counter()
    decision = solve(instance, "optimal", refine=False)
    decision_s = time.perf_counter() - t0
    row = {"d": d, "p": p, "problem": problem, "seed": seed, "decision_s": decision_s,
           "decision_gemm": decision_s / gemm, "status": decision.status}
    if decision.status != "stored":
        return row
    t0 = time.perf_counter()
    mm = solve_max_margin(instance, decision.W, tol=tol)
    mm_s = time.perf_counter() - t0
    row.update(mm_s=mm_s, mm_gemm=mm_s / gemm, ratio=mm_s / decision_s, gap=mm.gap, margin=mm.margin,
               bound=mm.margin_bound, sweeps=mm.iterations, passes=mm.full_passes, status=mm.status)
    if old_limit:
        t0 = time.perf_counter()
        old = solve(instance, "optimal", refine=True, time_limit=old_limit)
        row.update(old_s=time.perf_counter() - t0, old_margin=old.margin,
                   old_bound=old.info.get("margin_bound"), old_gap=old.info.get("refine_gap"))
    return row


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table(rows):
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(c)) for c in COLUMNS) + " |")
    return "\n".join(lines)


def summary(rows, tol):
    """Goal lines: gap <= tol within 10x the decision time, per (d, problem)."""
    out = []
    for key in sorted({(r["d"], r["problem"]) for r in rows}):
        group = [r for r in rows if (r["d"], r["problem"]) == key and "ratio" in r]
        if not group:
            continue
        ratios = [r["ratio"] for r in group]
        gaps = [r["gap"] for r in group if r["gap"] is not None]
        met = all(r["status"] == "converged" and r["ratio"] <= 10 for r in group)
        out.append(f"- d = {key[0]} {key[1].upper()}: ratio max-margin / decision {min(ratios):.3g} .. "
                   f"{max(ratios):.3g} (median {np.median(ratios):.3g}), largest gap "
                   f"{max(gaps) if gaps else float('nan'):.3g}; goal (gap <= {tol:g} in <= 10x the "
                   f"decision time) {'met' if met else 'not met'} on {len(group)} instances")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--problems", nargs="+", default=["op", "dp"], choices=["op", "dp"])
    parser.add_argument("--fraction", type=float, default=0.95)
    parser.add_argument("--tol", type=float, default=0.02)
    parser.add_argument("--old-limit", type=float, default=120.0,
                        help="time limit of the old refinement in seconds (0: skip it)")
    parser.add_argument("--old-seeds", type=int, default=1, help="seeds that also run the old refinement")
    parser.add_argument("--out", default="benchmarks/max_margin.md")
    args = parser.parse_args(argv)

    import replica
    from validation.solvers import set_threads

    threads = set_threads(1)
    warm_up()
    t_start = time.perf_counter()
    rows = []
    for d in args.d:
        p = int(round(args.fraction * replica.capacity(d).p_c))
        for problem in args.problems:
            for seed in range(args.seeds):
                row = run_case(d, p, problem, seed, args.tol, args.old_limit if seed < args.old_seeds else 0)
                rows.append(row)
                print(" ".join(f"{c}={fmt(row.get(c))}" for c in COLUMNS), flush=True)
    wall = time.perf_counter() - t_start
    command = "python benchmarks/bench_max_margin.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = "\n".join([
        "# Certified max-margin solver: measured cost",
        "",
        f"Written by `{command.strip()}` (`benchmarks/bench_max_margin.py`), one process, "
        f"numba threads {threads['numba']}, BLAS threads {threads['blas']}; wall time of the "
        f"measurements {wall:.0f} s (times depend on the machine; the ratios are taken within "
        f"this run).  Instances "
        f"`make_instance(d, p, problem, seed=seed)` at `p = round({args.fraction:g} p_c(d))`.",
        "",
        "Columns: `decision_s` = `solve(instance, \"optimal\", refine=False)`; `mm_s` = "
        f"`solve_max_margin(instance, decision.W, tol={args.tol:g})` after it; `*_gemm` = time / one "
        "float32 (p x d) @ (d x p) GEMM timed in the same run (best of 7); `ratio` = mm_s / "
        "decision_s; `gap` = certified relative gap (margin_bound - margin) / margin_bound; "
        "`margin` verified in float64 over all constraints, `bound` the certified upper bound; "
        "`sweeps`, `passes` = dual sweeps and full passes; `old_*` = the ridge-path refinement "
        f"`solve(..., refine=True, time_limit={args.old_limit:g})` (seeds < {args.old_seeds}): "
        "wall time, margin, its bound and gap.",
        "",
        table(rows),
        "",
        summary(rows, args.tol),
        "",
    ])
    with open(args.out, "w") as fh:
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
