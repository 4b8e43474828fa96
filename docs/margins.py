"""Measured max-margin of the optimal memory against ``replica.max_margin`` (decoupled problem).

For d = 16, 32, 64 and loads p = x p_c (``p_c = replica.capacity(d).p_c``, Gaussian
ensemble, decoupled problem; as a diagnostic also the sphere ensemble at d = 16, 32) this
script solves a few random instances with
``validation.solve(inst, "optimal", refine=True, time_limit=...)`` and records, per
instance, the verified normalised margin of the returned W (a lower bound on the best
margin of the instance) and the solver's certified ``info["margin_bound"]`` (an upper
bound on the normalised margin of every W; ``validation/solvers/optimal.py``).  Both are in
units of ``||W||_F / d``, the competitor standard deviation, which is the unit of
``replica.max_margin(d, p)`` (``notes/finite_size_capacity.md``, section "Margin"); the
script recomputes the margin from the float64 scores of W to check this.  It writes
``docs/margins.md`` and ``docs/margins.png``.

Usage::

    python docs/margins.py            # writes docs/margins.md and docs/margins.png
"""

from __future__ import annotations

import pathlib
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import replica  # noqa: E402
from validation import make_instance, solve  # noqa: E402
from validation.solvers import set_threads  # noqa: E402

SEED = 0
LOADS = (0.2, 0.4, 0.6, 0.8, 0.9)
# (d, ensemble) -> (instances per load, time limit per solve in s); the sphere rows are a
# diagnostic: unit-norm inputs and candidates remove the fluctuations of |e_mu| and |u|
PLAN = {(16, "gaussian"): (10, 30.0), (32, "gaussian"): (6, 60.0), (64, "gaussian"): (3, 120.0),
        (16, "sphere"): (10, 30.0), (32, "sphere"): (6, 60.0)}
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
        inst = make_instance(d, p, "dp", ensemble, seed=np.random.SeedSequence([SEED, d, p, t]))
        sol = solve(inst, "optimal", refine=True, time_limit=time_limit, options=OPTIONS)
        if sol.status != "stored":
            out.append((sol.status, np.nan, np.nan, False, np.nan))
            continue
        check = abs(score_margin(inst, sol.matrix()) - sol.margin)
        out.append((sol.status, sol.margin, sol.info["margin_bound"], sol.info["refine_converged"], check))
    return out


def summarise(d, ensemble, x, p, runs):
    """One table row: theory beside the mean verified margin and the mean certified bound."""
    theory = replica.max_margin(d, p)
    ok = [r for r in runs if r[0] == "stored"]
    lo = np.array([r[1] for r in ok])
    hi = np.array([r[2] for r in ok])
    inside = int(np.sum((lo <= theory.margin) & (theory.margin <= hi)))
    below = int(np.sum(theory.margin < lo))
    return {"d": d, "ensemble": ensemble, "x": x, "p": p, "theory": theory.margin, "theory_se": theory.stderr,
            "margin": lo.mean() if ok else np.nan, "bound": hi.mean() if ok else np.nan,
            "margin_min": lo.min() if ok else np.nan, "bound_max": hi.max() if ok else np.nan,
            "stored": len(ok), "trials": len(runs), "converged": sum(bool(r[3]) for r in ok),
            "inside": inside, "below": below, "unit_check": max((r[4] for r in ok), default=np.nan)}


def table(rows) -> str:
    out = ["| d | ensemble | p / p_c | p | theory k_max | verified margin (mean, lower bound) | "
           "certified bound (mean, upper bound) | rel. diff theory vs margin | theory in "
           "[margin, bound] | theory below margin | stored / trials | gap <= 0.5 % |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rel = (f"{100 * (r['theory'] / r['margin'] - 1):+.1f} %" if r["stored"] else "nan")
        out.append(f"| {r['d']} | {r['ensemble']} | {r['x']:.2f} | {r['p']} | "
                   f"{r['theory']:.3f} ± {r['theory_se']:.3f} | "
                   f"{r['margin']:.3f} | {r['bound']:.3f} | {rel} | {r['inside']} | {r['below']} | "
                   f"{r['stored']} / {r['trials']} | {r['converged']} |")
    return "\n".join(out) + "\n"


def figure(rows, path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs = np.linspace(0.15, 1.0, 30)
    for (d, color) in zip((16, 32, 64), ("C0", "C1", "C2")):
        pc = replica.capacity(d).p_c
        ax.plot(xs, [replica.max_margin(d, x * pc).margin for x in xs], color=color,
                label=f"theory d = {d}")
        pts = [r for r in rows if r["d"] == d and r["stored"] and r["ensemble"] == "gaussian"]
        x = np.array([r["x"] for r in pts])
        ax.plot(x, [r["margin"] for r in pts], "o", color=color, ms=4,
                label=f"verified margin d = {d} (lower bound)")
        ax.plot(x, [r["bound"] for r in pts], "v", color=color, mfc="none", ms=5,
                label=f"certified bound d = {d} (upper bound)")
        sph = [r for r in rows if r["d"] == d and r["stored"] and r["ensemble"] == "sphere"]
        if sph:
            ax.plot([r["x"] for r in sph], [r["margin"] for r in sph], "s", color=color, mfc="none",
                    ms=5, label=f"verified margin d = {d}, sphere ensemble")
    ax.set_xlabel("load p / p_c(d)")
    ax.set_ylabel("normalised margin (units of ||W||_F / d)")
    ax.set_title("max-margin W, decoupled problem: theory against the solver's bounds")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    set_threads(1)
    start = time.perf_counter()
    rows = []
    for (d, ensemble), (trials, limit) in PLAN.items():
        pc = replica.capacity(d).p_c
        for x in LOADS:
            p = int(round(x * pc))
            rows.append(summarise(d, ensemble, x, p, measure_point(d, ensemble, p, trials, limit)))
            sys.stderr.write(f"d={d} p={p}: {rows[-1]}\n")
    seconds = time.perf_counter() - start
    figure(rows, HERE / "margins.png")
    unit = max(r["unit_check"] for r in rows if r["stored"])
    plan = ", ".join(f"d = {d} {e}: {n} instances per load, time limit {t:g} s"
                     for (d, e), (n, t) in PLAN.items())
    text = (f"# Margins: the max-margin memory against `replica.max_margin`\n\n"
            f"Generated by `python docs/margins.py` (decoupled problem, instances "
            f"`make_instance(d, p, \"dp\", ensemble, seed=SeedSequence([{SEED}, d, p, t]))`, "
            f"`validation.solve(inst, \"optimal\", refine=True, time_limit=T, options={OPTIONS})`; "
            f"{plan}; {seconds:.0f} s in one process, one thread).\n\n"
            f"Per instance the solver gives an interval for the best normalised margin: the verified "
            f"margin of its W (a lower bound) and the certified `margin_bound` (an upper bound on "
            f"the margin of every W).  Units: both are `d min_mu (s_target - s_best competitor) / "
            f"||W||_F`, the unit of `replica.max_margin(d, p)` (the competitor standard deviation "
            f"`||W||_F / d`); recomputing the margin from the float64 scores of the returned W agrees "
            f"with the solver's `margin` to {unit:.1e}, so no conversion is needed.  The full-rank "
            f"refinement is the certified max-margin solver (`notes/max_margin.md`): it stops "
            f"once the certified relative gap (bound - margin) / bound is at most 0.5 %, or at "
            f"the time limit (last column: instances whose gap reached 0.5 %).\n\n"
            + table(rows) + "\nFigure: `docs/margins.png`.\n")
    (HERE / "margins.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
