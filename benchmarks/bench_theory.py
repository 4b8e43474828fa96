"""Benchmark of the finite-size theory: the speed goals of ``replica``, old and new code in one run.

``python benchmarks/bench_theory.py`` (the default ``--goals``) times every speed goal of the
theory (``benchmarks/theory.md``) twice in the same run, each in its own child process with
one thread (``OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``):

* **new**: this working tree;
* **old**: a ``git worktree`` of ``--old-commit`` (default: the commit before the tabulated
  costs, ``79d7b8a``), made in a temporary folder and removed afterwards.

Warm goals are timed after one untimed call of the same arguments (imports, numba caches,
tables loaded), as the best of ``--repeats`` calls (old code: ``--old-repeats``); the fresh
process goals (``import replica``, ``few_outputs_capacity`` at a shape outside the shipped
table) start a new interpreter per repeat and time the call inside it.  The script prints
the table with the ratio old / new and writes it to ``--out`` (default
``benchmarks/theory.md``), with the machine, the commits and the values each side returned
(they must agree within the Monte-Carlo standard error; the table says by how much).

``--legacy`` runs the earlier benchmark instead (below).

Legacy benchmark
----------------
Times, in one run:

* ``replica.optimal.finite_size.expected_cost(p)`` to 1e-3 relative standard error, for p up to
  1e7, against a plain Monte-Carlo baseline measured in the same run: full vectors of
  p - 1 normal competitors plus a normal target, exact water filling
  (``water_filling_cost``), sample mean.  The baseline's time to reach the same
  relative standard error is extrapolated from a short measured run
  (time x (measured rel. stderr / 1e-3)^2); the relative difference of the two
  estimates is printed in units of their combined standard error.
* ``replica.optimal.finite_size.capacity(d)`` for d up to 1e5 (goal: < 2 s at d = 1e5).

Usage::

    python benchmarks/bench_theory.py --legacy [--repeats 3] [--quick]

Targets: capacity at d = 1e5 under 2 s; expected_cost to 1e-3 in under 1 s up to
p = 1e7.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OLD_COMMIT = "79d7b8a"
THREADS = {"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _timed(func, repeats):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = func()
        times.append(time.perf_counter() - start)
    return out, times


def _plain_monte_carlo(p, budget_seconds, rng, max_block_bytes=2**27):
    """Plain Monte Carlo with full normal vectors until ``budget_seconds`` (at least 2 samples)."""
    from replica.optimal.finite_size import water_filling_cost

    n = int(p) - 1
    block = max(1, min(4096, max_block_bytes // (8 * n)))
    values = []
    start = time.perf_counter()
    while True:
        target = rng.standard_normal(block)
        competitors = rng.standard_normal((block, n))
        values.append(np.atleast_1d(water_filling_cost(target, competitors)))
        count = sum(v.size for v in values)
        if time.perf_counter() - start > budget_seconds and count >= 2:
            break
    elapsed = time.perf_counter() - start
    vals = np.concatenate(values)
    mean = float(vals.mean())
    stderr = float(vals.std(ddof=1) / math.sqrt(vals.size))
    return mean, stderr, vals.size, elapsed


def _fmt_times(times):
    return f"{min(times):7.3f} {statistics.median(times):7.3f} {max(times):7.3f}"


def legacy(args) -> int:
    """The earlier benchmark: expected_cost against plain Monte Carlo, capacity(d) up to 1e5."""
    budget = 0.5 if args.quick else 2.0

    print(f"# machine: {platform.platform()}, {os.cpu_count()} cpus, python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print(f"# date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, repeats {args.repeats}")
    from replica.optimal.finite_size import capacity, expected_cost

    expected_cost(50.0)  # warm up imports and caches outside the timings
    capacity(16)

    print("\n## expected_cost(p) to rel. stderr 1e-3 vs plain Monte Carlo (full normal vectors)")
    header = (f"{'p':>10} {'E[C_p]':>10} {'rel_se':>8} {'t_min':>7} {'t_med':>7} {'t_max':>7} "
              f"{'base_mean':>10} {'base_rel_se':>11} {'base_n':>8} {'base_t(1e-3)':>12} {'speedup':>10} "
              f"{'diff/se':>8}")
    print(header)
    rng = np.random.default_rng(2026)
    for p in (10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000):
        result, times = _timed(lambda p=p: expected_cost(p), args.repeats)
        base_budget = budget if p <= 1_000_000 else 2 * budget
        b_mean, b_se, b_n, b_t = _plain_monte_carlo(p, base_budget, rng)
        b_rel = b_se / b_mean
        t_needed = b_t * (b_rel / 1e-3) ** 2
        diff = (result.mean - b_mean) / math.hypot(result.stderr, b_se)
        print(f"{p:>10.0e} {result.mean:>10.5f} {result.rel_stderr:>8.1e} {_fmt_times(times)} "
              f"{b_mean:>10.5f} {b_rel:>11.2e} {b_n:>8d} {t_needed:>12.3g} "
              f"{t_needed / statistics.median(times):>10.3g} {diff:>8.2f}")
        sys.stdout.flush()

    print("\n## capacity(d) (p_c E[C_{p_c}] = d^2), target < 2 s at d = 1e5")
    print(f"{'d':>8} {'p_c':>14} {'stderr':>10} {'alpha':>9} {'alpha_se':>9} {'t_min':>7} {'t_med':>7} {'t_max':>7}")
    for d in (16, 32, 64, 128, 256, 512, 1024, 10_000, 100_000):
        result, times = _timed(lambda d=d: capacity(d), args.repeats)
        print(f"{d:>8d} {result.p_c:>14.6g} {result.stderr:>10.3g} {result.alpha:>9.5f} "
              f"{result.alpha_stderr:>9.1e} {_fmt_times(times)}")
        sys.stdout.flush()
    return 0


# ----------------------------------------------------------------------------- the speed goals

# (goal, limit in seconds, expression timed warm, the attribute reported, its stderr attribute)
WARM = [
    ("`replica.capacity(100)`", 0.05, "replica.capacity(100)", "p_c", "stderr"),
    ("`replica.capacity(64)`", 0.05, "replica.capacity(64)", "p_c", "stderr"),
    ("`replica.capacity(16)`", 0.05, "replica.capacity(16)", "p_c", "stderr"),
    ("`replica.capacity(4)` (fewer than 32 competitors)", 0.05, "replica.capacity(4)", "p_c", "stderr"),
    ("`replica.capacity(512)`", 0.05, "replica.capacity(512)", "p_c", "stderr"),
    ("`replica.capacity(128, kappa=0.25)`", 0.05, "replica.capacity(128, kappa=0.25)", "p_c", "stderr"),
    ("`replica.capacity(64, kappa=0.5, problem='op')`", 0.05, "replica.capacity(64, kappa=0.5, problem='op')",
     "p_c", "stderr"),
    ("`replica.capacity(64, problem='op')` (new: model `shared_outputs`; old: the finite-size model)", 0.05,
     "replica.capacity(64, problem='op')", "p_c", "stderr"),
    ("`replica.capacity(12, top_k=3)`", 0.05, "replica.capacity(12, top_k=3)", "p_c", "stderr"),
    ("`replica.capacity(16, outputs=8, problem='op')`", 0.05, "replica.capacity(16, outputs=8, problem='op')",
     "p_c", "stderr"),
    ("`replica.capacity(64, ensemble='sphere')`", 0.05, "replica.capacity(64, ensemble='sphere')", "p_c",
     "stderr"),
    ("`replica.hebbian_capacity(64)`", 0.05, "replica.hebbian_capacity(64)", "p_c", None),
    ("`replica.hebbian_capacity(64, ensemble='sphere')`", 0.05, "replica.hebbian_capacity(64, ensemble='sphere')",
     "p_c", None),
    ("`rectangular_capacity(64, 16)`", 0.05, "replica.variants.rectangular.rectangular_capacity(64, 16)", "p_c",
     "stderr"),
    ("`few_outputs_capacity(64, 16)` (tabulated shape)", 0.05,
     "replica.variants.few_outputs.few_outputs_capacity(64, 16)", "p_c", "stderr"),
    ("`few_outputs_capacity(128, 16, 'op')` (tabulated shape)", 0.05,
     "replica.variants.few_outputs.few_outputs_capacity(128, 16, 'op')", "p_c", "stderr"),
    ("`replica.zipf_error(64, ZipfFacts(1000, 1.0))`", 0.05,
     "replica.variants.zipf.zipf_error(64, replica.variants.zipf.ZipfFacts(1000, 1.0))", "error", "stderr"),
    ("`max_margin(32, 109)`", 1.0, "replica.optimal.finite_size.max_margin(32, 109)", "margin", "stderr"),
    ("`max_margin_image(32, 109)`", 1.0, "replica.optimal.image_margin.max_margin_image(32, 109)", "margin",
     "stderr"),
]

# (goal, limit, statement run in a fresh interpreter after `import time`; it sets `seconds` and `value`)
FRESH = [
    ("`import replica` (fresh process)", 1.0,
     "t = time.perf_counter(); import replica; seconds = time.perf_counter() - t; value = None"),
    ("`few_outputs_capacity(48, 12)` (fresh process, shape not tabulated)", 1.0,
     "import warnings; warnings.simplefilter('ignore'); import replica.variants.few_outputs as f; "
     "t = time.perf_counter(); r = f.few_outputs_capacity(48, 12); seconds = time.perf_counter() - t; "
     "value = (r.p_c, r.stderr)"),
]

_WORKER = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import replica, replica.optimal.finite_size, replica.optimal.image_margin, replica.variants.rectangular
import replica.variants.few_outputs, replica.variants.zipf, replica.hebbian.finite_size
cases, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
for expression, attr, err in cases:
    result = eval(expression)  # the untimed warm-up call
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        result = eval(expression)
        times.append(time.perf_counter() - t)
    value = float(getattr(result, attr))
    se = float(getattr(result, err)) if err else 0.0
    print(json.dumps({"expression": expression, "seconds": min(times), "value": value, "stderr": se}), flush=True)
"""


def _env(root: Path) -> dict:
    env = dict(os.environ, **THREADS)
    env["PYTHONPATH"] = str(root)
    env.pop("REPLICA_NO_TABLES", None)
    return env


def _warm(root: Path, repeats: int) -> dict:
    """Time every warm goal in one child process on the code of ``root``."""
    cases = [(expr, attr, err) for _, _, expr, attr, err in WARM]
    out = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(cases), str(repeats)], cwd=root,
                         env=_env(root), capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {r["expression"]: r for r in rows}


def _fresh(root: Path, statement: str, repeats: int) -> dict:
    """Best of ``repeats`` fresh interpreters running ``statement`` on the code of ``root``."""
    code = f"import json, time\n{statement}\nprint(json.dumps({{'seconds': seconds, 'value': value}}))"
    best = None
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], cwd=root, env=_env(root), capture_output=True,
                             text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        best = row if best is None or row["seconds"] < best["seconds"] else best
    return best


def _fmt_s(seconds) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.1f} ms" if seconds < 1.0 else f"{seconds:.2f} s"


def _agreement(new, old) -> str:
    """The new value against the old, in units of the old (or combined) standard error."""
    if new is None or old is None or new.get("value") is None:
        return ""
    a, b = new["value"], old["value"]
    if isinstance(a, list):
        a, sa, b, sb = a[0], a[1], b[0], b[1]
    else:
        sa, sb = new.get("stderr", 0.0), old.get("stderr", 0.0)
    if a == b:
        return f"{a:.6g} (identical)"
    se = math.hypot(sa or 0.0, sb or 0.0)
    rel = f"{a / b - 1:+.1e} relative" if b else ""
    return f"{a:.6g} vs {b:.6g}: {rel}" + (f", {(a - b) / se:+.2f} s.e." if se > 0 else "")


def goals(args) -> int:
    """Time the goals on the new tree and on a worktree of the old commit; print and write the table."""
    started = time.perf_counter()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        old_root = Path(tmp) / "old"
        if not args.no_old:
            subprocess.run(["git", "worktree", "add", "--detach", str(old_root), args.old_commit], cwd=ROOT,
                           check=True, capture_output=True)
        try:
            print(f"# new: {ROOT} at {commit}{' + uncommitted changes' if dirty else ''}; "
                  f"old: {args.old_commit if not args.no_old else 'not run'}", flush=True)
            new_warm = _warm(ROOT, args.repeats)
            old_warm = {} if args.no_old else _warm(old_root, args.old_repeats)
            rows = []
            for goal, limit, expr, _, _ in WARM:
                rows.append((goal, limit, new_warm.get(expr), old_warm.get(expr), "warm"))
                _print_row(rows[-1])
            for goal, limit, statement in FRESH:
                new = _fresh(ROOT, statement, args.repeats)
                old = None if args.no_old else _fresh(old_root, statement, args.old_repeats if "few_outputs"
                                                      in statement else args.repeats)
                rows.append((goal, limit, new, old, "fresh"))
                _print_row(rows[-1])
        finally:
            if not args.no_old:
                subprocess.run(["git", "worktree", "remove", "--force", str(old_root)], cwd=ROOT,
                               capture_output=True)
    wall = time.perf_counter() - started
    record = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "dirty": bool(dirty), "wall": wall,
              "old_commit": args.old_commit, "repeats": args.repeats, "old_repeats": args.old_repeats,
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
                         f"numpy {np.__version__}",
              "rows": rows}
    Path(args.out).with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    Path(args.out).write_text(_page(record))
    print(f"# wrote {args.out} and its record ({wall:.0f} s)")
    return 0


def render(args) -> int:
    """Write the page again from its record (``--render``)."""
    record = json.loads(Path(args.out).with_suffix(".json").read_text())
    Path(args.out).write_text(_page(record))
    return 0


def _print_row(row):
    goal, limit, new, old, kind = row
    t_new = new["seconds"] if new else None
    t_old = old["seconds"] if old else None
    ratio = f"{t_old / t_new:.3g}x" if t_new and t_old else "-"
    print(f"{goal:<72} {_fmt_s(t_old):>10} {_fmt_s(t_new):>10} {ratio:>8}  limit {_fmt_s(limit)}", flush=True)


def _page(record) -> str:
    rows, commit, dirty, wall = record["rows"], record["commit"], record["dirty"], record["wall"]
    lines = [
        "# Speed of the theory",
        "",
        f"Written by `python benchmarks/bench_theory.py` (`benchmarks/bench_theory.py`) on "
        f"{record['date']}, commit {commit}{' with uncommitted changes' if dirty else ''}, "
        f"{record['machine']}; "
        f"wall time {wall / 60:.1f} min.  Every timing ran in a child process with one thread "
        "(`OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`), on a machine possibly shared with "
        "other jobs (best of the repeats).  **old**: a `git worktree` of commit "
        f"{record['old_commit']} (before the tabulated costs), timed in the same run; **new**: this tree.  "
        f"Warm: one untimed call first, then the best of {record['repeats']} calls (old: {record['old_repeats']}).  "
        "Fresh: a new interpreter per repeat, the call timed inside it.",
        "",
        "| goal | limit | old | new | old / new | verdict | value: new vs old |",
        "|---|---|---|---|---|---|---|",
    ]
    for goal, limit, new, old, kind in rows:
        t_new = new["seconds"] if new else None
        t_old = old["seconds"] if old else None
        ratio = f"{t_old / t_new:.3g}" if t_new and t_old else "-"
        verdict = "not measured" if t_new is None else ("**met**" if t_new <= limit else "**not met**")
        lines.append(f"| {goal} ({kind}) | {_fmt_s(limit)} | {_fmt_s(t_old)} | {_fmt_s(t_new)} | {ratio} | "
                     f"{verdict} | {_agreement(new, old)} |")
    lines += [
        "",
        "Values: the quantity each call returns (`p_c`, `margin`, `error`), new against old, with the difference "
        "in units of the two standard errors combined where the call reports one.  The capacities read the "
        "shipped tables of the default seed's Monte-Carlo sample functions (`replica/optimal/cost_table.npz`) or "
        "of the roots (`sphere_capacity_table.json`, `hebbian_capacity_table.json`) and equal the Monte-Carlo "
        "run to about 1e-11; `max_margin` solves the same sample equation by Newton's method (equal to about "
        "1e-9); `max_margin_image` stops within its `xtol = 1e-4` of the same root; `few_outputs_capacity` at a "
        "shape outside its table reads the shipped grid of cloud statistics (`few_outputs_grid.npz`) and "
        "interpolates, in ln p, the four points near each replica's root that the old code sampled, so it moves "
        "within the Monte-Carlo standard error (the old code samples those points; fewer targets per point had "
        "biased the hull fit, 4.5 standard errors at 24 x 12, and were dropped); its tabulated shapes and "
        "`zipf_error` remember their intermediate results per arguments, so their warm calls are repeated calls "
        "(a new `N` of `zipf_error` samples its cost law "
        "again, about the old time).",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--legacy", action="store_true", help="the earlier benchmark (expected_cost, capacity(d))")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--old-repeats", type=int, default=1, help="repeats of the old code (slow)")
    parser.add_argument("--old-commit", default=OLD_COMMIT)
    parser.add_argument("--no-old", action="store_true", help="time the new code only")
    parser.add_argument("--out", default=str(HERE / "theory.md"))
    parser.add_argument("--render", action="store_true", help="write the page again from its record")
    parser.add_argument("--quick", action="store_true", help="legacy: smaller baseline budgets")
    args = parser.parse_args(argv)
    if args.render:
        return render(args)
    if args.legacy:
        for name, value in THREADS.items():
            os.environ.setdefault(name, value)
        return legacy(args)
    return goals(args)


if __name__ == "__main__":
    sys.exit(main())

