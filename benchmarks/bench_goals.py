"""Every speed goal of the ``optimal`` solver, measured in one run: value, goal, met or not.

One invocation measures, on the machine it runs on:

* **decisions** (``solve(instance, "optimal", refine=False)``) of OP and DP at
  ``p = round(f p_c(d))`` for ``f`` = 0.95 and 1.05 and every ``--d`` (DP up to
  ``--dp-max-d``), in GEMM-equivalents: solve wall time / the best of 7 float32
  ``(p x d) @ (d x p)`` score GEMMs timed in the same worker just before.  Each
  decision is split into the time of the search full passes (``full_pass``: float32
  OP scores or DP candidate regeneration, and the working-set selection), of the
  float64 verification passes (``exact_min_margins``) and of the rest (working-set
  L-BFGS iterations, line searches, Python);
* **certified max margin** after every ``stored`` decision at 0.95 p_c up to
  ``--refine-max-d`` (OP) and ``--refine-max-dp-d`` (DP):
  ``validation.solvers.maxmargin.solve_max_margin(instance, W, tol=0.02)``, its time,
  certified relative gap and ratio to the decision time;
* **baselines**, whose decisions must agree: the LP (``solve(instance, "lp")``,
  certified) on every instance with ``d <= --lp-max-d`` (default 16; HiGHS takes
  15-40 s at d = 24) and, for OP, scipy L-BFGS-B on dense W (as in ``bench_solvers.py``;
  its ``not_stored*`` is uncertified) with ``d <= --lbfgs-max-d`` (default 128);
* **DP at d = 256, p = round(p_c)** on 2 cores: ``bench_scale.py`` in a child process
  with 2 numba and 2 BLAS threads, after the rest (nothing else running);
* the **long goals**, only when named in ``--long`` (each takes 10 min to hours):
  ``sweep_dp128`` (``validation capacity --d 128 --problem dp --trials 8 --workers 2``),
  ``sweep_op512`` (the same for OP at d = 512, ``--bracket-step 0.01``), ``op1024``
  (``bench_scale.py --d 1024 --time-limit 900`` with 2 threads) and ``reproduce``
  (``validation reproduce --workers 2``).  Each writes its result to
  ``benchmarks/goals/<name>.json``; a later run that does not repeat it shows that
  record, marked with its date, instead.  The full reproduction's own report
  (``experiments/reproduction/full/report.md``) names its wall time, which is read when no record exists.

Decisions, refinements and baselines run in ``--workers`` processes (default 2), each
pinned to its own CPU with one numba and one BLAS thread, the costliest cases first.
The script writes the goal table and every measured row to ``--out`` (default
``benchmarks/goals.md``), with the command, the threads, the CPU and the wall time.

Usage::

    python benchmarks/bench_goals.py                      # 17 min on 2 cores (measured)
    python benchmarks/bench_goals.py --long sweep_dp128   # + a long goal
    python benchmarks/bench_goals.py --only-long sweep_op512   # just record a long goal
    python benchmarks/bench_goals.py --record-stopped sweep_op512 STORE SECONDS   # a sweep stopped early
    python benchmarks/bench_goals.py --quick --out /tmp/goals.md   # small sizes, checks the script only
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import multiprocessing as mp
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _machine import cpu_target  # script directory
from bench_max_margin import fmt, gemm_seconds  # the same cells and GEMM timer (script directory)

from validation.instances._candidate_kernels import default_generator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FULL_RUN = ROOT / "experiments" / "reproduction" / "full"
RECORDS = HERE / "goals"
FRACTIONS = (0.95, 1.05)
LONG = ("sweep_dp128", "sweep_op512", "op1024", "reproduce")
GEMM_GOAL = {"op": (256, 30.0), "dp": (128, 150.0)}   # problem -> (from d, at most GEMM-eq)


def md_table(columns, rows):
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- workers

def _init_worker(cpus):
    """Pin this worker to one CPU of the queue; one numba and one BLAS thread."""
    cpu = cpus.get()
    os.sched_setaffinity(0, {cpu})
    from validation.solvers import set_threads
    from validation.solvers.engine.warmup import warm_up

    set_threads(1)
    warm_up()


class _Clock:
    """Time spent in a module function, accumulated while installed."""

    def __init__(self, module, name):
        self.module, self.name, self.seconds, self.calls = module, name, 0.0, 0
        self.inner = getattr(module, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return self.inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        setattr(module, name, timed)

    def remove(self):
        setattr(self.module, self.name, self.inner)


def _lbfgs_decision(instance):
    from bench_solvers import _lbfgs_baseline  # the script directory (on the workers' path)

    return _lbfgs_baseline(instance)["status"]


def run_case(case):
    """One decision (and what follows it) in a pinned worker; returns a row."""
    from validation.instances.ensembles import make_instance
    from validation.solvers import decision, solve
    from validation.solvers.maxmargin import solve_max_margin

    d, p, problem, fraction, seed = case["d"], case["p"], case["problem"], case["f"], case["seed"]
    instance = make_instance(d, p, problem, seed=seed)
    gemm = gemm_seconds(p, d)
    clocks = [_Clock(decision, "full_pass"), _Clock(decision, "exact_min_margins")]
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        sol = solve(instance, "optimal", refine=False)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        for clock in clocks:
            clock.remove()
    scan, verify = clocks[0].seconds, clocks[1].seconds
    row = {"d": d, "p": p, "problem": problem, "f": fraction, "seed": seed, "status": sol.status,
           "seconds": seconds, "cpu_s": cpu, "gemm_s": gemm, "gemm_eq": seconds / gemm,
           "iterations": sol.iterations, "passes": sol.info.get("full_passes"),
           "scan_eq": scan / gemm, "verify_eq": verify / gemm,
           "rest_eq": (seconds - scan - verify) / gemm,
           "pass_eq": scan / gemm / max(clocks[0].calls, 1), "cpu": sorted(os.sched_getaffinity(0))[0]}
    # the floor of this decision: one search full pass and the float64 verification, which every
    # decision pays whatever its iteration count
    row["floor_eq"] = row["pass_eq"] + row["verify_eq"]
    if case.get("refine") and sol.status == "stored":
        t0 = time.perf_counter()
        mm = solve_max_margin(instance, sol.W, tol=case["tol"])
        mm_s = time.perf_counter() - t0
        row.update(mm_s=mm_s, mm_eq=mm_s / gemm, ratio=mm_s / seconds, total_eq=(seconds + mm_s) / gemm,
                   gap=mm.gap, margin=mm.margin, bound=mm.margin_bound, mm_status=mm.status)
    if case["lp"]:
        row["lp"] = solve(instance, "lp").status
    if case["lbfgs"]:
        row["lbfgs"] = _lbfgs_decision(instance)
    return row


def cases(args):
    import replica

    out = []
    for d in args.d:
        p_c = replica.capacity(d).p_c
        seeds = range(args.seeds if d <= 128 else args.large_seeds)
        for problem in ("op", "dp"):
            if problem == "dp" and d > args.dp_max_d:
                continue
            refine_max = args.refine_max_d if problem == "op" else args.refine_max_dp_d
            for fraction in FRACTIONS:
                for seed in seeds:
                    cost = p_c ** 2 * d * (20.0 if problem == "dp" else 1.0)
                    refine = fraction < 1 and d <= refine_max
                    out.append({"d": d, "p": int(round(fraction * p_c)), "problem": problem, "f": fraction,
                                "seed": seed, "refine": refine, "tol": args.tol,
                                "lp": d <= args.lp_max_d,
                                "lbfgs": problem == "op" and d <= args.lbfgs_max_d,
                                "cost": cost * (21.0 if refine else 1.0)})
    return sorted(out, key=lambda c: -c["cost"])


def run_cases(args):
    todo = cases(args)
    cpus = sorted(os.sched_getaffinity(0))
    workers = max(1, min(args.workers, len(cpus), len(todo)))
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    for cpu in cpus[-workers:]:
        queue.put(cpu)
    rows = []
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(queue,)) as pool:
        for row in pool.map(run_case, todo):
            rows.append(row)
            print(" ".join(f"{k}={fmt(v)}" for k, v in row.items()), flush=True)
    return rows


# ----------------------------------------------------------------------------- child processes

def _pinned_env(threads):
    from validation.solvers import BLAS_THREAD_VARIABLES

    return dict(os.environ, **{v: str(threads) for v in ("NUMBA_NUM_THREADS", *BLAS_THREAD_VARIABLES)})


def scale_solve(d, problem, time_limit, threads=2):
    """``bench_scale.py`` in a child process: its JSON (decision, seconds, peak RSS) and the command."""
    cmd = [sys.executable, str(HERE / "bench_scale.py"), "--d", str(d), "--problem", problem,
           "--time-limit", str(time_limit)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=_pinned_env(threads), capture_output=True, text=True, check=True)
    out = json.loads(done.stdout)
    out["process_seconds"] = time.perf_counter() - t0
    shown = f"OPENBLAS_NUM_THREADS={threads} NUMBA_NUM_THREADS={threads} python benchmarks/bench_scale.py " \
            + " ".join(cmd[2:])
    return out, shown


def timed_command(cmd):
    """Run a CLI command; its wall time, the children's peak resident set (MB) and its stdout."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    return (time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0,
            done.stdout)


def run_long(name, folder):
    """Run one long goal; a JSON-safe record."""
    if name == "op1024":
        out, shown = scale_solve(1024, "op", 900.0)
        return {"command": shown, "seconds": out["seconds"], "peak_rss_mb": out["peak_rss_mb"],
                "status": out["status"], "p": out["p"]}
    if name in ("sweep_dp128", "sweep_op512"):
        d, problem = (128, "dp") if name == "sweep_dp128" else (512, "op")
        cmd = ["validation", "capacity", "--d", str(d), "--problem", problem, "--solver", "optimal",
               "--trials", "8", "--workers", "2", "--format", "json", "--out", str(folder / name)]
        if d >= 256:
            cmd[-2:-2] = ["--bracket-step", "0.01"]
        seconds, rss, stdout = timed_command(cmd)
        return {"command": " ".join(cmd[:-2]), "seconds": seconds, "peak_rss_mb": rss,
                "estimate": json.loads(stdout)}
    if name == "reproduce":
        cmd = ["validation", "reproduce", "--out", str(folder / name), "--workers", "2"]
        seconds, rss, _ = timed_command(cmd)
        return {"command": " ".join(cmd[:2] + cmd[4:]), "seconds": seconds, "peak_rss_mb": rss}
    raise ValueError(f"unknown long goal {name!r}; choose from {LONG}")


def stopped_sweep_record(store, seconds):
    """The record of a capacity sweep stopped before its end, read from its store.

    ``seconds``: wall time from the start of the sweep to the stop.  The record gives the
    finished trials per load (counted as the capacity command counts them,
    ``validation.capacity.trials.TrialCounts``; ``other``: undecided, errors, not found),
    the time from the first trial's start to the last trial's end (``trials_span_s``, from
    the store's timestamps) and the separation bracket of the finished trials, if any
    (``validation.capacity.fit.separation_bracket``).  It has no ``estimate``, so no p_c
    table reads it as a sweep.
    """
    from validation.capacity.fit import separation_bracket
    from validation.capacity.trials import TrialCounts
    from validation.runtime.store import ResultStore

    with ResultStore(store, readonly=True) as db:
        rows = db.rows(experiment="capacity")
    if not rows:
        raise ValueError(f"no capacity trials in {store}")
    counts = TrialCounts()
    for row in rows:
        counts.add(int(row["p"]), counts.classify(row["result"]))
    first = rows[0]
    curve = [{"p": q.p, "stored": q.stored, "not_stored": q.not_stored, "other": q.trials - q.stored - q.not_stored}
             for q in counts.curve(int(first["d"]))]
    ends = [datetime.datetime.fromisoformat(r["created"].replace("Z", "+00:00")) for r in rows]
    starts = [end - datetime.timedelta(seconds=float(r["seconds"])) for end, r in zip(ends, rows)]
    return {"command": f"validation capacity --d {first['d']} --problem {first['problem']} --solver {first['solver']} "
                       "--trials 8 --workers 2 (stopped)",
            "stopped": True, "seconds": float(seconds), "trials_finished": len(rows),
            "trials_span_s": (max(ends) - min(starts)).total_seconds(), "curve": curve,
            "bracket": separation_bracket(curve), "d": int(first["d"]), "problem": first["problem"]}


def run_and_record(names):
    """Run the long goals ``names`` one after another, each saved to ``benchmarks/goals/<name>.json``."""
    records = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            records[name] = dict(save_record(name, run_long(name, Path(tmp))), source="this run")
            print(f"{name}: {records[name]['seconds']:.0f} s, recorded in {RECORDS / (name + '.json')}", flush=True)
    return records


def load_record(name):
    path = RECORDS / f"{name}.json"
    if path.exists():
        record = json.loads(path.read_text())
        cpu = f", {record['cpu']}" if record.get("cpu") else ""
        record["source"] = f"recorded {record['date']}{cpu} (`benchmarks/goals/{name}.json`)"
        return record
    if name == "reproduce":
        report = FULL_RUN / "report.md"
        if report.exists():
            m = re.search(r"Wall time of this invocation: (\d+) s", report.read_text())
            if m:
                return {"seconds": float(m.group(1)), "source": "the report of the committed full run "
                        "(`experiments/reproduction/full/report.md`)"}
    return None


def save_record(name, record):
    RECORDS.mkdir(exist_ok=True)
    record = dict(record, date=datetime.date.today().isoformat(), commit=_commit(), cpu=cpu_target())
    (RECORDS / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def _commit():
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ----------------------------------------------------------------------------- goals

def _verdict(ok):
    return "**met**" if ok else "**not met**"


def _generator_goal():
    """The generator goal, from ``bench_dp_generator.py``'s record."""
    text = "DP candidate generator: >= 3x faster per coordinate (d = 128, 256)"
    path = RECORDS / "dp_generator.json"
    if not path.exists():
        return {"goal": text, "measured": "not measured (`python benchmarks/bench_dp_generator.py`)",
                "verdict": "not measured", "source": "-"}
    record = json.loads(path.read_text())
    parts, met = [], True
    for target in record["targets"]:
        speedups = [r["speedup"] for r in target["rows"]]
        met = met and min(speedups) >= 3
        parts.append(f"{target['target']}: {min(speedups):.2g}-{max(speedups):.2g}x")
    return {"goal": text,
            "measured": "generator 2 against generator 1, per coordinate, with and without the dot product: "
                        + "; ".join(parts) + " (`benchmarks/dp_generator.md`)",
            "verdict": _verdict(met),
            "source": f"recorded {record['date']} (`benchmarks/goals/dp_generator.json`)"}


def _reproduction_dp256_goal():
    """The fit status of DP d = 256 in the committed full reproduction (``FULL_RUN / "capacity.csv"``)."""
    text = "DP at d = 256 in the full reproduction: a fitted interval (status `ok`)"
    path = FULL_RUN / "capacity.csv"
    rows = list(csv.DictReader(path.open())) if path.exists() else []
    row = next((r for r in rows if r["problem"] == "dp" and r["solver"] == "optimal" and r["d"] == "256"), None)
    if row is None:
        return {"goal": text,
                "measured": "not measured (no DP d = 256 row in `experiments/reproduction/full/capacity.csv`)",
                "verdict": "not measured", "source": "-"}
    provenance = json.loads((FULL_RUN / "provenance.json").read_text())
    return {"goal": text, "measured": f"status `{row['status']}` ({row['trials']} trials)",
            "verdict": _verdict(row["status"] == "ok"),
            "source": f"the committed full run of {provenance['date']} (`experiments/reproduction/full/capacity.csv`)"}


def goals(rows, dp256, long_records, args):
    """The goal table: one row per goal, with the measured value."""
    out = []
    for d in sorted({r["d"] for r in rows}):
        for problem in ("op", "dp"):
            group = [r for r in rows if r["d"] == d and r["problem"] == problem and "ratio" in r]
            if not group:
                continue
            worst_ratio = max(r["ratio"] for r in group)
            worst_gap = max(r["gap"] for r in group)
            ok = all(r["mm_status"] == "converged" and r["gap"] <= args.tol and r["ratio"] <= 10 for r in group)
            is_goal = d == 64 or (d == 128 and problem == "op")
            out.append({"goal": f"certified max margin, {problem.upper()} d = {d}, 0.95 p_c: gap <= "
                                f"{args.tol:g} in <= 10x the decision time",
                        "measured": f"gap <= {worst_gap:.3g}, <= {worst_ratio:.3g}x ({len(group)} instances)",
                        "verdict": _verdict(ok) if is_goal else ("measured (no goal)" + ("" if ok else ", over 10x")),
                        "source": "this run"})
    for problem, (from_d, limit) in GEMM_GOAL.items():
        group = [r for r in rows if r["problem"] == problem and r["d"] >= from_d]
        if not group:
            out.append({"goal": f"{problem.upper()} decisions at d >= {from_d}: <= {limit:g} GEMM-eq",
                        "measured": "no such size in this run", "verdict": "not measured", "source": "-"})
            continue
        worst = max(group, key=lambda r: r["gemm_eq"])
        floors = [r["floor_eq"] for r in group if "floor_eq" in r]
        floor = "" if not floors else (
            f"; floor {min(floors):.3g}-{max(floors):.3g} (`floor_eq`: one search full pass and the float64 "
            "verification, which every decision pays whatever its iteration count)")
        out.append({"goal": f"{problem.upper()} decisions at d >= {from_d}, 0.95 and 1.05 p_c: "
                            f"<= {limit:g} GEMM-equivalents",
                    "measured": f"max {worst['gemm_eq']:.3g} (d = {worst['d']}, {worst['f']:g} p_c, "
                                f"{worst['status']}); {len(group)} decisions{floor}",
                    "verdict": _verdict(worst["gemm_eq"] <= limit), "source": "this run"})
    dp_rows = [r for r in rows if r["problem"] == "dp" and r["d"] >= 128]
    if dp_rows:
        worst = max(dp_rows, key=lambda r: r["gemm_eq"])
        out.append({"goal": "with a faster DP generator, DP decisions at d >= 128: <= 300 GEMM-equivalents",
                    "measured": f"max {worst['gemm_eq']:.3g} (d = {worst['d']}, {worst['f']:g} p_c), with DP "
                                + (f"candidate generator {args.dp_generator} (see the generator row)"
                                   if getattr(args, "dp_generator", None) else
                                   "candidate generator 1 (runs without a recorded generator predate generator 2)"),
                    "verdict": _verdict(worst["gemm_eq"] <= 300), "source": "this run"})
    out.append(_generator_goal())
    if dp256 is not None:
        out.append({"goal": "one DP decision at d = 256, p = round(p_c), 2 cores: <= 60 s",
                    "measured": f"{dp256['seconds']:.4g} s ({dp256['status']}, {dp256['peak_rss_mb']:.0f} MB)",
                    "verdict": _verdict(dp256["seconds"] <= 60), "source": "this run"})
    out.append(_reproduction_dp256_goal())
    limits = {"sweep_dp128": ("DP capacity sweep at d = 128, 8 trials per point, 2 workers: <= 30 min", 1800),
              "sweep_op512": ("OP capacity sweep at d = 512, 8 trials per point, 2 workers: <= 60 min", 3600),
              "op1024": ("one OP decision at d = 1024 near p_c: <= 15 min and <= 8 GB", 900),
              "reproduce": ("`validation reproduce` (full), 2 workers: <= 60 min", 3600)}
    for name, (text, limit) in limits.items():
        record = long_records.get(name)
        if record is None:
            out.append({"goal": text, "measured": f"not measured (`--long {name}`)", "verdict": "not measured",
                        "source": "-"})
            continue
        if record.get("stopped"):
            curve = ", ".join(f"p = {q['p']}: {q['stored']} of {q['stored'] + q['not_stored']} stored"
                              for q in record["curve"])
            bracket = record["bracket"]
            out.append({"goal": text, "verdict": "incomplete", "source": record["source"],
                        "measured": f"stopped after {record['seconds'] / 60:.3g} min, before its end: "
                                    f"{record['trials_finished']} trials finished in "
                                    f"{record['trials_span_s'] / 60:.3g} min ({curve})"
                                    + (f"; p_c between {bracket[0]:g} and {bracket[1]:g} (separation)"
                                       if bracket else "")})
            continue
        ok = record["seconds"] <= limit
        measured = f"{record['seconds'] / 60:.3g} min"
        if name == "op1024":
            ok = ok and record["peak_rss_mb"] <= 8192
            measured = f"{record['seconds']:.4g} s = {record['seconds'] / 60:.3g} min, " \
                       f"{record['peak_rss_mb'] / 1024:.3g} GB, {record['status']} (p = {record['p']})"
        out.append({"goal": text, "measured": measured, "verdict": _verdict(ok), "source": record["source"]})
    for name, limit, where in (("lp", args.lp_max_d, "OP and DP"), ("lbfgs", args.lbfgs_max_d, "OP")):
        checked = [r for r in rows if name in r]
        if checked:
            bad = [r for r in checked if r[name].rstrip("*") != r["status"]]
            label = "the LP (certified)" if name == "lp" else "scipy L-BFGS-B on dense W (uncertified `not_stored*`)"
            out.append({"goal": f"decisions equal those of {label}",
                        "measured": f"{len(checked) - len(bad)} of {len(checked)} decisions agree ({where}, "
                                    f"d <= {limit})",
                        "verdict": _verdict(not bad), "source": "this run"})
    return out


# ----------------------------------------------------------------------------- main

DECISION_COLUMNS = ("d", "p", "problem", "f", "seed", "status", "lp", "lbfgs", "seconds", "gemm_s", "gemm_eq",
                    "iterations", "passes", "pass_eq", "scan_eq", "verify_eq", "rest_eq", "floor_eq")
REFINE_COLUMNS = ("d", "p", "problem", "seed", "seconds", "mm_s", "ratio", "mm_eq", "total_eq", "gap", "margin",
                  "bound", "mm_status")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512])
    parser.add_argument("--dp-max-d", type=int, default=256, help="largest d of the DP decisions")
    parser.add_argument("--refine-max-d", type=int, default=256, help="largest d of the OP max-margin solves")
    parser.add_argument("--refine-max-dp-d", type=int, default=128, help="largest d of the DP max-margin solves")
    parser.add_argument("--lp-max-d", type=int, default=16, help="largest d checked against the LP")
    parser.add_argument("--lbfgs-max-d", type=int, default=128, help="largest d (OP) checked against L-BFGS-B")
    parser.add_argument("--seeds", type=int, default=2, help="instances per point at d <= 128")
    parser.add_argument("--large-seeds", type=int, default=1, help="instances per point at d >= 256")
    parser.add_argument("--tol", type=float, default=0.02, help="relative gap asked of the max-margin solver")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-dp256", action="store_true", help="skip the 2-core DP solve at d = 256")
    parser.add_argument("--long", nargs="*", default=[], choices=LONG, help="long goals to run in this run")
    parser.add_argument("--only-long", nargs="+", default=None, choices=LONG, metavar="NAME",
                        help="run and record only these long goals (benchmarks/goals/NAME.json); no table")
    parser.add_argument("--record-stopped", nargs=3, default=None, metavar=("NAME", "STORE", "SECONDS"),
                        help="record a long sweep stopped before its end from its store and the seconds "
                             "it ran; no table")
    parser.add_argument("--quick", action="store_true",
                        help="d = 16, 32, no 2-core solve, no records: checks the script, measures no goal")
    parser.add_argument("--out", default=str(HERE / "goals.md"))
    parser.add_argument("--run-out", default=None,
                        help="where to save the measured rows (default benchmarks/goals/last_run.json)")
    parser.add_argument("--render", metavar="RUN_JSON", default=None,
                        help="measure nothing: rewrite --out from a saved run and the records")
    args = parser.parse_args(argv)
    if args.quick:
        args.d, args.seeds, args.lbfgs_max_d, args.no_dp256 = [16, 24], 1, 24, True
    command = "python benchmarks/bench_goals.py " + " ".join(argv if argv is not None else sys.argv[1:])

    t_start = time.perf_counter()
    if args.only_long:
        run_and_record(args.only_long)
        return 0
    if args.record_stopped:
        name, store, seconds = args.record_stopped
        if name not in ("sweep_dp128", "sweep_op512"):
            parser.error(f"--record-stopped takes a sweep (sweep_dp128, sweep_op512), got {name!r}")
        save_record(name, stopped_sweep_record(store, float(seconds)))
        return 0
    if args.render:
        run = json.loads(Path(args.render).read_text())
        long_records = {}
        args.quick = run.get("quick", False)
    else:
        rows = run_cases(args)
        dp256, dp256_cmd = None, None
        if not args.no_dp256:
            dp256, dp256_cmd = scale_solve(256, "dp", 1200.0)
            print(f"dp256: {dp256['status']} {dp256['seconds']:.1f} s", flush=True)
        long_records = run_and_record(args.long)
        rows.sort(key=lambda r: (r["problem"] != "op", r["d"], r["f"], r["seed"]))
        run = {"command": command.strip(), "date": datetime.date.today().isoformat(), "commit": _commit(),
               "machine": platform.machine(), "cpus": os.cpu_count(), "workers": args.workers,
               "wall_s": time.perf_counter() - t_start, "tol": args.tol, "lp_max_d": args.lp_max_d,
               "lbfgs_max_d": args.lbfgs_max_d, "quick": args.quick, "dp256": dp256, "dp256_cmd": dp256_cmd,
               "dp_generator": default_generator(), "rows": rows}
        Path(args.run_out or (RECORDS / "last_run.json" if not args.quick else args.out + ".json")).write_text(
            json.dumps(run, indent=1) + "\n")
    if not args.quick:
        for name in LONG:
            if name not in long_records and (record := load_record(name)) is not None:
                long_records[name] = record
    text = render(run, long_records)
    Path(args.out).write_text(text)
    print(text)
    return 0


def render(run, long_records):
    """goals.md from one saved run (``benchmarks/goals/last_run.json``) and the records."""
    rows, dp256, dp256_cmd = run["rows"], run["dp256"], run["dp256_cmd"]
    limits = argparse.Namespace(tol=run["tol"], lp_max_d=run["lp_max_d"], lbfgs_max_d=run["lbfgs_max_d"],
                                dp_generator=run.get("dp_generator"))
    goal_rows = goals(rows, dp256, long_records, limits)
    header = [
        "# Speed goals",
        "",
        f"Written by `{run['command']}` (`benchmarks/bench_goals.py`) on "
        f"{run['date']}, commit {run['commit']}, {run['machine']}, "
        f"{run['cpus']} CPUs; wall time {run['wall_s'] / 60:.1f} min.  Decisions and max-margin solves: "
        f"{run['workers']} worker processes, each pinned to its own CPU, numba threads 1, BLAS threads 1; "
        "GEMM-equivalents (`*_eq`) = time / the best of 7 float32 (p x d) @ (d x p) GEMMs timed in the "
        "same worker."
        + (f"  DP instances: candidate generator {run['dp_generator']}." if run.get("dp_generator") else "")
        + ("" if dp256 is None else f"  The 2-core DP solve: `{dp256_cmd}`, run alone after them.")
        + "  Every measured row is saved in `benchmarks/goals/last_run.json`; `--render` rewrites this page "
          "from it and the records.",
        "",
        "## Goals",
        "",
        "Each row's source says where its number comes from: \"this run\", or a record of an "
        "earlier run (the long goals, the generator benchmark) or another committed report, with its date.",
        "",
        md_table(("goal", "measured", "verdict", "source"), goal_rows),
        "",
        "## Decisions",
        "",
        "`solve(make_instance(d, p, problem, seed), \"optimal\", refine=False)` at `p = round(f p_c(d))`. "
        "`lp`, `lbfgs`: the baselines' decisions (L-BFGS-B's `not_stored*` is uncertified; `-` = not run at "
        "this d).  `pass_eq`: one search full pass; `scan_eq`: all search full passes (float32 OP scores or "
        "DP candidate regeneration, and the working-set selection); `verify_eq`: the float64 verification "
        "passes; `rest_eq`: everything else (working-set L-BFGS iterations, line searches, Python).",
        "",
        md_table(DECISION_COLUMNS, rows),
        "",
        "## Certified max margin",
        "",
        f"`solve_max_margin(instance, decision.W, tol={run['tol']:g})` after each `stored` decision at 0.95 p_c. "
        "`seconds`: the decision; `ratio` = mm_s / seconds; `total_eq` = decision plus max margin in "
        "GEMM-equivalents; `gap` = certified (margin_bound - margin) / margin_bound.",
        "",
        md_table(REFINE_COLUMNS, [r for r in rows if "mm_s" in r]),
        "",
    ]
    return "\n".join(header)


if __name__ == "__main__":
    sys.exit(main())
