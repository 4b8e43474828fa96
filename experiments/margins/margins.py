"""Measured max-margin of the optimal memory against ``replica.max_margin(ensemble=)`` (decoupled problem).

The measured means are stored in ``experiments/margins/margins_measured.csv`` (per (d, ensemble, load):
mean verified margin, mean certified bound, instances stored / trials, instances whose
certified gap reached 0.5 %); ``python -m experiments.margins.margins --render`` compares them with the theory of
each ensemble and writes ``experiments/margins/README.md`` / ``experiments/margins/margins.png`` and
``margins_theory.csv``; ``python -m experiments.margins.margins`` (or ``--measure``) re-runs the
measurement described below first and rewrites the CSV and its provenance record.

Measurement:
For d = 16, 32, 64 and loads p = x p_c (``p_c = replica.capacity(d).p_c``, Gaussian
ensemble, decoupled problem; also the sphere ensemble) this
script solves a few random instances with
``validation.solve(inst, "optimal", refine=True, time_limit=...)`` and records, per
instance, the verified normalised margin of the returned W (a lower bound on the best
margin of the instance) and the solver's certified ``info["margin_bound"]`` (an upper
bound on the normalised margin of every W; ``validation/solvers/optimal.py``).  Both are in
units of ``||W||_F / d``, the competitor standard deviation, which is the unit of
``replica.max_margin(d, p)`` (``notes/finite_size_capacity.md``, section "Margin"); the
script recomputes the margin from the float64 scores of W to check this.  It writes
``experiments/margins/README.md`` and ``experiments/margins/margins.png``.

Usage::

    python -m experiments.margins.margins --render   # theory against experiments/margins/margins_measured.csv
    python -m experiments.margins.margins            # re-measure (about an hour), then the same
"""

from __future__ import annotations

import csv
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

SEED = 0
LOADS = (0.2, 0.4, 0.6, 0.8, 0.9)
# (d, ensemble) -> (instances per load, time limit per solve in s); the sphere rows are a
# diagnostic: unit-norm inputs and candidates remove the fluctuations of |e_mu| and |u|
PLAN = {(16, "gaussian"): (10, 30.0), (32, "gaussian"): (6, 60.0), (64, "gaussian"): (3, 120.0),
        (16, "sphere"): (10, 30.0), (32, "sphere"): (6, 60.0), (64, "sphere"): (3, 120.0)}
OPTIONS = {"refine_tol": 0.005}
HERE = pathlib.Path(__file__).resolve().parent


def score_margin(inst, W) -> float:
    """``min_mu (S[f(mu), mu] - max_{rho != f(mu)} S[rho, mu]) / (||W||_F / d)`` from float64 scores."""
    S = inst.scores(W)
    cols = np.arange(inst.p)
    target = S[inst.target_index, cols].copy()
    S[inst.target_index, cols] = -np.inf
    return float((target - S.max(axis=0)).min() * inst.d / np.linalg.norm(W))


def measure_point(d, ensemble, p, trials, time_limit):
    """Per-instance ``(status, margin, margin_bound, refine_converged, unit_check)`` at load p."""
    out = []
    for t in range(trials):
        inst = make_instance(d, p, "dp", seed=np.random.SeedSequence([SEED, d, p, t]), embeddings=EmbeddingModel(ensemble))
        sol = solve(inst, "optimal", refine=True, time_limit=time_limit, options=OPTIONS)
        if sol.status != "stored":
            out.append((sol.status, np.nan, np.nan, False, np.nan))
            continue
        check = abs(score_margin(inst, sol.matrix()) - sol.margin)
        out.append((sol.status, sol.margin, sol.info["margin_bound"], sol.info["refine_converged"], check))
    return out


MEASURED = HERE / "margins_measured.csv"
THEORY = HERE / "margins_theory.csv"
FIELDS = ("d", "ensemble", "x", "p", "margin", "bound", "stored", "trials", "gap_reached")


def measured_row(d, ensemble, x, p, runs):
    """Means over the stored instances of one load (the CSV row)."""
    ok = [r for r in runs if r[0] == "stored"]
    return {"d": d, "ensemble": ensemble, "x": f"{x:.2f}", "p": p,
            "margin": f"{np.mean([r[1] for r in ok]):.3f}" if ok else "nan",
            "bound": f"{np.mean([r[2] for r in ok]):.3f}" if ok else "nan",
            "stored": len(ok), "trials": len(runs), "gap_reached": sum(bool(r[3]) for r in ok)}


def measure() -> float:
    """Run the measurement of the module docstring and write ``MEASURED``; returns the seconds."""
    set_threads(1)
    start = time.perf_counter()
    rows = []
    for (d, ensemble), (trials, limit) in PLAN.items():
        pc = replica.capacity(d).p_c
        for x in LOADS:
            p = int(round(x * pc))
            rows.append(measured_row(d, ensemble, x, p, measure_point(d, ensemble, p, trials, limit)))
            sys.stderr.write(f"{rows[-1]}\n")
    with open(MEASURED, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return time.perf_counter() - start


def load_measured():
    with open(MEASURED, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r.update(d=int(r["d"]), x=float(r["x"]), p=int(r["p"]), margin=float(r["margin"]),
                 bound=float(r["bound"]), stored=int(r["stored"]), trials=int(r["trials"]),
                 gap_reached=int(r["gap_reached"]))
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
    """The theory of every measured row, for the scoreboard (``margins_theory.csv``; rendered, not measured)."""
    with open(THEORY, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(("d", "ensemble", "x", "p", "theory", "theory_se", "fixed_scale_theory"))
        for r in rows:
            writer.writerow((r["d"], r["ensemble"], f"{r['x']:.2f}", r["p"], repr(float(r["theory"])),
                             repr(float(r["theory_se"])), repr(float(r["old"]))))


def table(rows) -> str:
    out = ["| d | ensemble | p / p_c | p | theory `max_margin(d, p, ensemble=)` | verified margin (mean, "
           "lower bound) | certified bound (mean, upper bound) | rel. error of the theory | "
           "before 0.2.0 (gaussian, fixed scale) | its rel. error | stored / trials | gap <= 0.5 % |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['d']} | {r['ensemble']} | {r['x']:.2f} | {r['p']} | "
                   f"{r['theory']:.3f} ± {r['theory_se']:.3f} | {r['margin']:.3f} | {r['bound']:.3f} | "
                   f"{100 * r['error']:+.1f} % | {r['old']:.3f} | {100 * r['old_error']:+.1f} % | "
                   f"{r['stored']} / {r['trials']} | {r['gap_reached']} |")
    return "\n".join(out) + "\n"


def summary(rows) -> str:
    out = ["| d | ensemble | loads | max abs. rel. error (theory) | max abs. rel. error (before 0.2.0) |",
           "|---|---|---|---|---|"]
    for d in (16, 32, 64):
        for e in ("gaussian", "sphere"):
            sel = [r for r in rows if r["d"] == d and r["ensemble"] == e and r["stored"]]
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
            pts = [r for r in rows if r["d"] == d and r["stored"] and r["ensemble"] == e]
            if not pts:
                continue
            x = [r["x"] for r in pts]
            ax.plot(x, [r["theory"] for r in pts], ls, color=color, label=f"theory d = {d}, {e}")
            ax.plot(x, [r["margin"] for r in pts], mark, color=color, mfc="none" if e == "sphere" else color,
                    ms=4, label=f"verified margin d = {d}, {e}")
    ax.set_xlabel("load p / p_c(d) (gaussian p_c)")
    ax.set_ylabel("normalised margin (units of ||W||_F / d)")
    ax.set_title("max-margin W, decoupled problem: theory against the measurement")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _measure(job) -> None:
    job.record(MEASURED, seed=SEED, seconds=measure(), plan={f"{d} {e}": list(v) for (d, e), v in PLAN.items()},
               options=OPTIONS)


def _render(job) -> None:
    seconds = None if job.render_only else read_record(record_path(MEASURED))["wall_time_s"]
    rows = load_measured()
    add_theory(rows)
    write_theory(rows)
    if not job.render_only:
        job.record(THEORY, seed=None, seconds=0.0, computed_from="margins_measured.csv",
                   note="theory of every measured row (replica.max_margin); every render rewrites it identically")
    figure(rows, HERE / "margins.png")
    plan = ", ".join(f"d = {d} {e}: {n} instances per load, time limit {t:g} s"
                     for (d, e), (n, t) in PLAN.items())
    ran = f"; {seconds:.0f} s in one process, one thread" if seconds is not None else ""
    text = (f"# Margins: the max-margin memory against `replica.max_margin`\n\n"
            f"Generated by `python -m experiments.margins.margins` from `experiments/margins/margins_measured.csv`, measured by "
            f"`python -m experiments.margins.margins --measure` (decoupled problem, instances "
            f"`make_instance(d, p, \"dp\", seed=SeedSequence([{SEED}, d, p, t]), embeddings=EmbeddingModel(ensemble))`, "
            f"`validation.solve(inst, \"optimal\", refine=True, time_limit=T, options={OPTIONS})`; "
            f"{plan}{ran}).  Loads are fractions of the gaussian `replica.capacity(d).p_c`.\n\n"
            f"Per instance the solver gives an interval for the best normalised margin: the verified "
            f"margin of its W (a lower bound) and the certified `margin_bound` (an upper bound on "
            f"the margin of every W), both `d min_mu (s_target - s_best competitor) / ||W||_F`, the "
            f"unit of `replica.max_margin`.  The full-rank refinement is the certified max-margin "
            f"solver (`notes/max_margin.md`), stopped at a certified relative gap of 0.5 % (last "
            f"column).  The table gives means over the stored instances; the relative error is "
            f"theory / mean verified margin - 1.  The theory is `replica.max_margin(d, p, "
            f"ensemble=e, model=\"block_cost\")` with its default settings (field law of the ensemble, per-block field "
            f"scales averaged; `notes/max_margin.md`, section \"The finite-size margin theory\"), "
            f"beside the definition before 0.2.0 (gaussian fields, one common scale).\n\n"
            + table(rows) + "\nLargest relative error per size and ensemble (loads 0.2-0.9 p_c):\n\n"
            + summary(rows) + "\nFigure: `experiments/margins/margins.png`.\n")
    write_block(HERE / "README.md", "margins", demote_headings(text), "margins")
    sys.stdout.write(text)


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
