"""Measured max-margin of the optimal memory against ``replica.max_margin(ensemble=)`` (decoupled problem).

The measurement is stored per instance in ``experiments/margins/margins_instances.csv`` (one
row per instance: d, ensemble, load, p, instance index t and its seed, the DP candidate
generator, the solver's status, the verified margin, the certified bound, the relative gap,
whether the gap closed to 0.5 %, the wall and CPU seconds).  ``--render`` reduces it to
``experiments/margins/margins_measured.csv`` (per (d, ensemble, load): instances per status,
the mean verified margin and the mean certified bound over the instances whose gap closed,
with their standard errors between instances, the 95 % sampling interval, the spread and the
median), compares the means with the theory of each ensemble and writes
``experiments/margins/README.md``, ``experiments/margins/margins.png`` and
``margins_theory.csv``; ``python -m experiments.margins.margins`` (or ``--measure``) re-runs
the measurement described below first and rewrites the per-instance CSV and its provenance
record.

Measurement:
For d = 16, 32, 64 and loads p = x p_c (``p_c = replica.capacity(d).p_c``, Gaussian
ensemble, decoupled problem; also the sphere ensemble) this script solves the instances
``make_instance(d, p, "dp", seed=SeedSequence([0, d, p, t]), embeddings=EmbeddingModel(e),
generator=1)``, t = 0 .. N - 1 (``PLAN``), with
``validation.solve(inst, "optimal", refine=True, time_limit=1800, options={"refine_tol": 0.005})``
and records, per instance, the verified normalised margin of the returned W (a lower bound on
the best margin of the instance) and the solver's certified ``info["margin_bound"]`` (an upper
bound on the normalised margin of every W; ``validation/solvers/optimal.py``).  Both are in
units of ``||W||_F / d``, the competitor standard deviation, which is the unit of
``replica.max_margin(d, p)`` (``notes/finite_size_capacity.md``, section "Margin"); the
script recomputes the margin from the float64 scores of W to check this (column
``unit_check``).  An instance enters the means only when it is stored and its certified gap
closed to 0.5 %; the others are counted (``not_stored``: certified, no W reaches a margin
above the reported bound of about 1e-3; ``undecided``; ``gap_open``).

The DP candidate generator is pinned to 1, the generator of the first measurement of this
page (2026-12-03; generator 2 became the default on 2026-12-05): the instances t < 10
(d = 16), t < 6 (d = 32) and t < 3 (d = 64) of every load are those of that measurement,
solved again, and the others extend it.

Usage::

    python -m experiments.margins.margins --render   # from experiments/margins/margins_instances.csv
    python -m experiments.margins.margins            # re-measure (about 75 min on one core), then render
    python -m experiments.margins.margins --resume   # measure only the instances missing from the CSV
"""

from __future__ import annotations

import csv
import math
import pathlib
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import replica  # noqa: E402
from validation import EmbeddingModel, make_instance, solve  # noqa: E402
from validation.solvers import set_threads  # noqa: E402
from experiments.pages import demote_headings, write_block  # noqa: E402
from experiments.provenance import read_record  # noqa: E402
from experiments.runner import record_path, run  # noqa: E402
from experiments.scoreboard.measurements import t975  # noqa: E402

SEED = 0
GENERATOR = 1
LOADS = (0.2, 0.4, 0.6, 0.8, 0.9)
TIME_LIMIT = 1800.0
# (d, ensemble) -> instances per load; the sphere rows are a diagnostic: unit-norm inputs
# and candidates remove the fluctuations of |e_mu| and |u|
PLAN = {(16, "gaussian"): 1000, (32, "gaussian"): 400, (64, "gaussian"): 200,
        (16, "sphere"): 1000, (32, "sphere"): 400, (64, "sphere"): 200}
# instances per load of the first measurement (2026-12-03, means only): t < FIRST[d] are its instances
FIRST = {16: 10, 32: 6, 64: 3}
OPTIONS = {"refine_tol": 0.005}
HERE = pathlib.Path(__file__).resolve().parent
INSTANCES = HERE / "margins_instances.csv"
MEASURED = HERE / "margins_measured.csv"
THEORY = HERE / "margins_theory.csv"
INSTANCE_FIELDS = ("d", "ensemble", "x", "p", "instance", "seed", "generator", "status", "margin", "bound", "gap",
                   "gap_reached", "unit_check", "time_limit", "seconds", "cpu_seconds")
FIELDS = ("d", "ensemble", "x", "p", "trials", "stored", "not_stored", "undecided", "gap_reached", "n", "margin",
          "margin_se", "bound", "bound_se", "low", "high", "sd", "median", "median_low", "median_high",
          "seconds_mean", "seconds_max")


def score_margin(inst, W) -> float:
    """``min_mu (S[f(mu), mu] - max_{rho != f(mu)} S[rho, mu]) / (||W||_F / d)`` from float64 scores."""
    S = inst.scores(W)
    cols = np.arange(inst.p)
    target = S[inst.target_index, cols].copy()
    S[inst.target_index, cols] = -np.inf
    return float((target - S.max(axis=0)).min() * inst.d / np.linalg.norm(W))


def plan_points():
    """``(d, ensemble, x, p, instances)`` of the plan, in the order of the CSV."""
    for (d, ensemble), n in PLAN.items():
        pc = replica.capacity(d).p_c
        for x in LOADS:
            yield d, ensemble, x, int(round(x * pc)), n


def _number(value, digits=6) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def measure_instance(d, ensemble, x, p, t) -> dict:
    """One instance: the row of ``margins_instances.csv`` (strings)."""
    inst = make_instance(d, p, "dp", seed=np.random.SeedSequence([SEED, d, p, t]),
                         embeddings=EmbeddingModel(ensemble), generator=GENERATOR)
    wall, cpu = time.perf_counter(), time.process_time()
    sol = solve(inst, "optimal", refine=True, time_limit=TIME_LIMIT, options=OPTIONS)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    margin = float(sol.margin) if sol.margin is not None else math.nan
    bound = float(sol.info.get("margin_bound", math.nan))
    gap, reached, check = math.nan, False, math.nan
    if sol.status == "stored":
        gap = (bound - margin) / bound if bound > 0 else math.nan
        reached = bool(sol.info.get("refine_converged", False))
        check = abs(score_margin(inst, sol.matrix()) - margin)
    return {"d": d, "ensemble": ensemble, "x": f"{x:.2f}", "p": p, "instance": t, "seed": inst.seed,
            "generator": inst.generator, "status": sol.status, "margin": _number(margin), "bound": _number(bound),
            "gap": _number(gap), "gap_reached": int(reached), "unit_check": _number(check, 12) if sol.status ==
            "stored" else "", "time_limit": f"{TIME_LIMIT:g}", "seconds": f"{wall:.3f}", "cpu_seconds": f"{cpu:.3f}"}


def _key(row) -> tuple:
    return int(row["d"]), row["ensemble"], int(row["p"]), int(row["instance"])


def read_instances(path=None) -> list[dict]:
    """The rows of the per-instance CSV (strings; default ``INSTANCES``), in file order."""
    path = INSTANCES if path is None else path
    if not pathlib.Path(path).exists():
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def measure(resume: bool = False) -> dict:
    """Run the measurement of the module docstring, appending every instance to ``INSTANCES`` as it ends.

    ``resume``: keep the rows already in the CSV and measure only the missing instances.
    Returns the run's numbers for the provenance record.
    """
    set_threads(1)
    start = time.perf_counter()
    done = {_key(r): r for r in read_instances()} if resume else {}
    todo = [(d, e, x, p, t) for d, e, x, p, n in plan_points() for t in range(n) if (d, e, p, t) not in done]
    with open(INSTANCES, "w", newline="") as fh:   # rewritten: the kept rows first, then each new one as it ends
        writer = csv.DictWriter(fh, fieldnames=INSTANCE_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(done.values())
        fh.flush()
        for i, (d, e, x, p, t) in enumerate(todo):
            row = measure_instance(d, e, x, p, t)
            writer.writerow(row)
            fh.flush()
            done[(d, e, p, t)] = row
            sys.stderr.write(f"[{time.perf_counter() - start:8.1f} s] {i + 1}/{len(todo)} d={d} {e} x={x:.2f} "
                             f"p={p} t={t}: {row['status']} margin {row['margin']} bound {row['bound']} "
                             f"gap_reached {row['gap_reached']} {row['seconds']} s\n")
            sys.stderr.flush()
    order = {(d, e, p): i for i, (d, e, x, p, n) in enumerate(plan_points())}
    rows = sorted(done.values(), key=lambda r: (order[_key(r)[:3]], _key(r)[3]))
    with open(INSTANCES, "w", newline="") as fh:    # in plan order
        writer = csv.DictWriter(fh, fieldnames=INSTANCE_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return {"run_wall_s": time.perf_counter() - start, "measured_now": len(todo), "instances": len(rows),
            "solve_seconds": sum(float(r["seconds"]) for r in rows)}


def _stderr(values) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan


def median_interval(values):
    """Median of ``values`` and its 95 % distribution-free interval (order statistics, normal approximation)."""
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    half = 1.959963984540054 * math.sqrt(n) / 2
    lo, hi = max(int(math.floor(n / 2 - half)), 1), min(int(math.ceil(n / 2 + half)) + 1, n)
    return float(np.median(v)), float(v[lo - 1]), float(v[hi - 1])


def summarise(instances) -> list[dict]:
    """Per (d, ensemble, load): the counts, the means with their standard errors and the sampling interval.

    The means run over the instances that are stored with their gap closed (``n``).  The
    sampling interval is ``[mean margin - t se(margin), mean bound + t se(bound)]`` with
    ``t = t_{0.975, n - 1}``.  The median runs over every decided instance, a not-stored one
    counting below every stored one (its best margin is at most its bound, about 1e-3).
    """
    groups = {}
    for r in instances:
        groups.setdefault((int(r["d"]), r["ensemble"], r["x"], int(r["p"])), []).append(r)
    out = []
    for (d, e, x, p), rows in groups.items():
        ok = [r for r in rows if r["status"] == "stored" and int(r["gap_reached"])]
        margins = np.array([float(r["margin"]) for r in ok])
        bounds = np.array([float(r["bound"]) for r in ok])
        n = len(ok)
        ms, bs = _stderr(margins), _stderr(bounds)
        t = t975(max(n - 1, 1))
        decided = [float(r["margin"]) if r["status"] == "stored" else -math.inf
                   for r in rows if r["status"] in ("stored", "not_stored")]
        med, med_lo, med_hi = median_interval(decided) if decided else (math.nan,) * 3
        seconds = [float(r["seconds"]) for r in rows]
        out.append({"d": d, "ensemble": e, "x": x, "p": p, "trials": len(rows),
                    "stored": sum(r["status"] == "stored" for r in rows),
                    "not_stored": sum(r["status"] == "not_stored" for r in rows),
                    "undecided": sum(r["status"] not in ("stored", "not_stored") for r in rows),
                    "gap_reached": n, "n": n,
                    "margin": _number(margins.mean() if n else math.nan, 5), "margin_se": _number(ms, 5),
                    "bound": _number(bounds.mean() if n else math.nan, 5), "bound_se": _number(bs, 5),
                    "low": _number(margins.mean() - t * ms if n > 1 else math.nan, 5),
                    "high": _number(bounds.mean() + t * bs if n > 1 else math.nan, 5),
                    "sd": _number(float(np.std(margins, ddof=1)) if n > 1 else math.nan, 5),
                    "median": _number(med, 5), "median_low": _number(med_lo, 5), "median_high": _number(med_hi, 5),
                    "seconds_mean": f"{np.mean(seconds):.2f}", "seconds_max": f"{np.max(seconds):.2f}"})
    return out


def write_measured(rows) -> None:
    with open(MEASURED, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def load_measured():
    with open(MEASURED, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("d", "p", "trials", "stored", "not_stored", "undecided", "gap_reached", "n"):
            r[k] = int(r[k])
        for k in ("x", "margin", "margin_se", "bound", "bound_se", "low", "high", "sd", "median", "median_low",
                  "median_high"):
            r[k] = float(r[k]) if r[k] not in ("", "-inf") else (-math.inf if r[k] == "-inf" else math.nan)
    return rows


def add_theory(rows) -> None:
    """The theory of the row's ensemble (default settings) and the fixed-scale gaussian one (before 0.2.0)."""
    for r in rows:
        new = replica.max_margin(r["d"], r["p"], ensemble=r["ensemble"], model="block_cost")
        old = replica.max_margin(r["d"], r["p"], model="block_cost", options={"scale_fluctuations": False})
        r.update(theory=new.margin, theory_se=new.stderr, old=old.margin,
                 error=new.margin / r["margin"] - 1.0, old_error=old.margin / r["margin"] - 1.0)
        sys.stderr.write(f"{r['d']} {r['ensemble']} {r['p']}: {new.margin:.4f} ({new.status})\n")


def write_theory(rows) -> None:
    """The theory of every measured row (``margins_theory.csv``; rendered, not measured; the image-space page reads it).

    Theory values to 10 significant digits and standard errors to 6: the Newton root and the
    Monte-Carlo means move in their last bits (the standard errors from the 11th digit) with
    the BLAS kernel and thread count, which the file does not carry.
    """
    with open(THEORY, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(("d", "ensemble", "x", "p", "theory", "theory_se", "fixed_scale_theory"))
        for r in rows:
            writer.writerow((r["d"], r["ensemble"], f"{r['x']:.2f}", r["p"], f"{float(r['theory']):.10g}",
                             f"{float(r['theory_se']):.6g}", f"{float(r['old']):.10g}"))


def table(rows) -> str:
    out = ["| d | ensemble | p / p_c | p | theory `max_margin(d, p, ensemble=)` | verified margin (mean ± s.e., "
           "lower bound) | certified bound (mean ± s.e., upper bound) | rel. error of the theory | "
           "before 0.2.0 (gaussian, fixed scale) | its rel. error | n / stored / trials |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['d']} | {r['ensemble']} | {r['x']:.2f} | {r['p']} | "
                   f"{r['theory']:.3f} ± {r['theory_se']:.3f} | {r['margin']:.3f} ± {r['margin_se']:.3f} | "
                   f"{r['bound']:.3f} ± {r['bound_se']:.3f} | "
                   f"{100 * r['error']:+.1f} % | {r['old']:.3f} | {100 * r['old_error']:+.1f} % | "
                   f"{r['n']} / {r['stored']} / {r['trials']} |")
    return "\n".join(out) + "\n"


def summary(rows) -> str:
    out = ["| d | ensemble | loads | max abs. rel. error (theory) | max abs. rel. error (before 0.2.0) |",
           "|---|---|---|---|---|"]
    for d in (16, 32, 64):
        for e in ("gaussian", "sphere"):
            sel = [r for r in rows if r["d"] == d and r["ensemble"] == e and r["n"]]
            if not sel:
                out.append(f"| {d} | {e} | not measured | | |")
                continue
            out.append(f"| {d} | {e} | {len(sel)} | {100 * max(abs(r['error']) for r in sel):.1f} % | "
                       f"{100 * max(abs(r['old_error']) for r in sel):.1f} % |")
    return "\n".join(out) + "\n"


def figure(rows, path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (d, color) in zip((16, 32, 64), ("C0", "C1", "C2")):
        for e, mark, ls in (("gaussian", "o", "-"), ("sphere", "s", "--")):
            pts = [r for r in rows if r["d"] == d and r["n"] and r["ensemble"] == e]
            if not pts:
                continue
            x = [r["x"] for r in pts]
            ax.plot(x, [r["theory"] for r in pts], ls, color=color, label=f"theory d = {d}, {e}")
            ax.errorbar(x, [r["margin"] for r in pts], yerr=[r["margin"] - r["low"] for r in pts], fmt=mark,
                        color=color, mfc="none" if e == "sphere" else color, ms=4, capsize=2,
                        label=f"verified margin d = {d}, {e}")
    ax.set_xlabel("load p / p_c(d) (gaussian p_c)")
    ax.set_ylabel("normalised margin (units of ||W||_F / d)")
    ax.set_title("max-margin W, decoupled problem: theory against the measurement")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _arguments(parser) -> None:
    parser.add_argument("--resume", action="store_true",
                        help="keep the instances already in margins_instances.csv and measure only the missing ones")


def _measure(job) -> None:
    ran = measure(resume=bool(getattr(job.args, "resume", False)))
    job.record(INSTANCES, seed=SEED, seconds=ran["solve_seconds"], generator=GENERATOR, time_limit_s=TIME_LIMIT,
               plan={f"{d} {e}": n for (d, e), n in PLAN.items()}, loads=list(LOADS), options=OPTIONS,
               instances=ran["instances"], run_wall_s=round(ran["run_wall_s"], 1),
               measured_in_this_run=ran["measured_now"],
               wall_time_note="wall_time_s is the sum of the per-instance solve times (column seconds); "
                              "run_wall_s the wall time of the run that wrote the file (with --resume: of the "
                              "instances it added; the others were kept from the earlier run)")


def _render(job) -> None:
    record = read_record(record_path(INSTANCES))
    write_measured(summarise(read_instances()))
    if not job.render_only:
        job.record(MEASURED, seed=None, seconds=0.0, computed_from="margins_instances.csv",
                   note="per (d, ensemble, load) summary of margins_instances.csv; every render rewrites it "
                        "identically")
    rows = load_measured()
    add_theory(rows)
    write_theory(rows)
    if not job.render_only:
        job.record(THEORY, seed=None, seconds=0.0, computed_from="margins_measured.csv",
                   note="theory of every measured row (replica.max_margin); every render rewrites it identically")
    figure(rows, HERE / "margins.png")
    counts = ", ".join(f"d = {d} {e}: {n}" for (d, e), n in PLAN.items())
    closed = sum(r["n"] for r in rows)
    trials = sum(r["trials"] for r in rows)
    left = (f"{sum(r['not_stored'] for r in rows)} certified not stored (left out; the means are over the "
            f"stored instances), {sum(r['undecided'] for r in rows)} undecided, "
            f"{sum(r['stored'] - r['n'] for r in rows)} stored with the gap open")
    text = (f"# Margins: the max-margin memory against `replica.max_margin`\n\n"
            f"Generated by `python -m experiments.margins.margins` from `experiments/margins/margins_instances.csv` "
            f"(one row per instance; its summary per row is `margins_measured.csv`), measured by "
            f"`python -m experiments.margins.margins --measure` (decoupled problem, instances "
            f"`make_instance(d, p, \"dp\", seed=SeedSequence([{SEED}, d, p, t]), embeddings=EmbeddingModel(ensemble), "
            f"generator={GENERATOR})`, t = 0 .. N - 1, "
            f"`validation.solve(inst, \"optimal\", refine=True, time_limit={TIME_LIMIT:g}, options={OPTIONS})`; "
            f"N per load: {counts}; {record['wall_time_s']:.0f} s of solves summed over the instances, one thread).  "
            f"Loads are fractions of the gaussian `replica.capacity(d).p_c`.\n\n"
            f"Per instance the solver gives an interval for the best normalised margin: the verified "
            f"margin of its W (a lower bound) and the certified `margin_bound` (an upper bound on "
            f"the margin of every W), both `d min_mu (s_target - s_best competitor) / ||W||_F`, the "
            f"unit of `replica.max_margin`.  The full-rank refinement is the certified max-margin "
            f"solver (`notes/max_margin.md`), stopped at a certified relative gap of 0.5 %.  "
            f"The table gives means ± their standard errors between instances over the n instances that are "
            f"stored with their gap closed ({closed} of {trials}; of the others {left}; column \"n / stored / "
            f"trials\"); the relative "
            f"error is theory / mean verified margin - 1.  The theory is `replica.max_margin(d, p, "
            f"ensemble=e, model=\"block_cost\")` with its default settings (field law of the ensemble, per-block field "
            f"scales averaged; `notes/max_margin.md`, section \"The finite-size margin theory\"), "
            f"beside the definition before 0.2.0 (gaussian fields, one common scale).  The figure's error bars "
            f"are the 95 % sampling intervals of the mean verified margin.\n\n"
            + table(rows) + "\nLargest relative error per size and ensemble (loads 0.2-0.9 p_c):\n\n"
            + summary(rows) + "\nFigure: `experiments/margins/margins.png`.\n")
    write_block(HERE / "README.md", "margins", demote_headings(text), "margins")
    sys.stdout.write(text)


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
