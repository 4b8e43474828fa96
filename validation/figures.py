"""Figures of ``validation reproduce``: theory curves against measured points (matplotlib, Agg).

Every function takes plain data (dicts from ``CapacityEstimate.to_dict()`` and lists
of measurement records) plus precomputed theory curves, draws one figure, saves it
as PNG and returns the path.  No computation beyond histogramming happens here.

See ``notes/reproduce.md``.
"""

from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
from scipy import special  # noqa: E402

from .intervals import wilson_interval  # noqa: E402
from .solver_rules import is_hebbian, memory_label  # noqa: E402

__all__ = ["plot_success", "plot_alpha_vs_d", "plot_alpha_kappa", "plot_spectra", "plot_scores",
           "plot_accuracy", "wilson_interval"]

_DPI = 110


def _err(y, lo, hi):
    """Error-bar lengths, never negative (rounding at 0 and 1, or an estimate on an interval end)."""
    y, lo, hi = (np.asarray(v, float) for v in (y, lo, hi))
    return [np.maximum(y - lo, 0.0), np.maximum(hi - y, 0.0)]


def _save(fig, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=_DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_success(estimates, path):
    """Figure 1: P(stored) against alpha, one panel per (problem, solver) group.

    Points with Wilson 95 % intervals, the fitted logistic, a dashed vertical line at
    the finite-size theory alpha(d) in the same colour, and the asymptote (1/2 for
    the optimal memory, 1/8 for Hebbian) in black.
    """
    groups = {}
    for est in estimates:
        if est["kappa"] != 1.0:
            continue
        groups.setdefault((est["problem"], est["solver"]), []).append(est)
    order = sorted(groups, key=lambda k: (is_hebbian(k[1]), k[0]))
    fig, axes = plt.subplots(1, len(order), figsize=(4.6 * len(order), 3.8), squeeze=False)
    for ax, key in zip(axes[0], order):
        problem, solver = key
        ests = sorted(groups[key], key=lambda e: e["d"])
        colors = plt.cm.viridis(np.linspace(0.0, 0.85, len(ests)))
        for est, color in zip(ests, colors):
            d = est["d"]
            curve = est["curve"]
            alpha = np.array([c["alpha"] for c in curve])
            k = np.array([c["stored"] for c in curve])
            n = np.array([c["stored"] + c["not_stored"] for c in curve])
            ok = n > 0
            lo, hi = wilson_interval(k[ok], n[ok])
            freq = k[ok] / n[ok]
            ax.errorbar(alpha[ok], freq, yerr=_err(freq, lo, hi), fmt="o", ms=3.5, color=color,
                        capsize=2, lw=0.8, label=f"d = {d}")
            if math.isfinite(est.get("slope", math.nan)) and math.isfinite(est["p_c"]):
                ps = np.exp(np.linspace(np.log(min(c["p"] for c in curve)), np.log(max(c["p"] for c in curve)), 200))
                prob = special.expit(-est["slope"] * (np.log(ps) - np.log(est["p_c"])))
                ax.plot(ps * np.log(ps) / d ** 2, prob, "-", color=color, lw=1)
            th = est["theory"].get("alpha", math.nan)
            if math.isfinite(th):
                ax.axvline(th, color=color, ls="--", lw=1)
        hebbian = is_hebbian(solver)
        asym = 0.125 if hebbian else 0.5
        ax.axvline(asym, color="k", lw=1.2, ls=":")
        ax.text(asym, 0.5, f" d->inf: {'1/8' if hebbian else '1/2'}", transform=ax.get_xaxis_transform(),
                ha="left", va="center", fontsize=7, rotation=90)
        name = {"op": "original problem (OP)", "dp": "decoupled problem (DP)"}[problem]
        ax.set_title(f"{memory_label(solver)}, {name}", fontsize=10)
        ax.set_xlabel(r"load $\alpha = p\,\ln p / d^2$")
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left", title="dashed: finite-size theory", title_fontsize=7)
    axes[0][0].set_ylabel("P(stored)  (95% Wilson intervals)")
    fig.suptitle("Success probability against load: points measured, dashed lines theory p_c(d), "
                 "dotted the d -> infinity capacity", fontsize=10)
    return _save(fig, path)


def plot_alpha_vs_d(estimates, theory_curves, path):
    """Figure 2: measured alpha(d) with intervals against 1/ln p_c, theory curves, asymptotes.

    ``theory_curves`` maps a label (``"optimal"``, ``"hebbian"``) to a list of
    ``{"d", "p_c", "alpha"}`` of the finite-size theory.
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    styles = {("op", "optimal"): ("o", "C0", "optimal, OP"), ("dp", "optimal"): ("s", "C1", "optimal, DP"),
              ("op", "hebbian"): ("^", "C2", "Hebbian, OP"), ("dp", "hebbian"): ("v", "C4", "Hebbian, DP"),
              ("op", "lp"): ("D", "C0", "LP, OP"), ("dp", "lp"): ("D", "C1", "LP, DP")}
    for key, (marker, color, label) in styles.items():
        ests = sorted([e for e in estimates if (e["problem"], e["solver"]) == key and e["kappa"] == 1.0
                       and math.isfinite(e["p_c"])], key=lambda e: e["d"])
        if not ests:
            continue
        x = np.array([1 / math.log(e["p_c"]) for e in ests])
        y = np.array([e["alpha"] for e in ests])
        lo = np.array([e["alpha_low"] for e in ests])
        hi = np.array([e["alpha_high"] for e in ests])
        ax.errorbar(x, y, yerr=_err(y, lo, hi), fmt=marker, color=color, ms=5, capsize=3, label=label)
        for e, xi, yi in zip(ests, x, y):
            ax.annotate(f"d={e['d']}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7,
                        color=color)
    for name, pts in theory_curves.items():
        pts = [q for q in pts if math.isfinite(q["p_c"])]
        if not pts:
            continue
        x = [1 / math.log(q["p_c"]) for q in pts]
        ax.plot(x, [q["alpha"] for q in pts], "-", color="k" if name == "optimal" else "C2", lw=1.2,
                label=f"finite-size theory ({name})")
    ax.axhline(0.5, color="k", ls=":", lw=1)
    ax.axhline(0.125, color="C2", ls=":", lw=1)
    ax.text(0.002, 0.5, "1/2", va="bottom", fontsize=8)
    ax.text(0.002, 0.125, "1/8", va="bottom", fontsize=8, color="C2")
    ax.set_xlim(left=0)
    ax.set_xlabel(r"$1/\ln p_c$  (d $\to \infty$ at 0)")
    ax.set_ylabel(r"$\alpha = p_c \ln p_c / d^2$  (95% interval)")
    ax.set_title("Measured capacity against 1/ln p, with the finite-size theory", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


def plot_alpha_kappa(kappa_curve, points, path):
    """Figure 3: alpha_c(kappa) = F(kappa)/2 with finite-size-corrected measured points.

    ``kappa_curve``: ``{"kappa": [...], "alpha_c": [...], "dof": [...]}``.
    ``points``: dicts with ``kappa, d, alpha, alpha_low, alpha_high, theory_alpha, alpha_c``;
    the corrected value is ``alpha * alpha_c / theory_alpha`` (measured over finite-size
    theory, times the asymptote).
    """
    fig, ax = plt.subplots(figsize=(6.2, 4.3))
    ax.plot(kappa_curve["kappa"], kappa_curve["alpha_c"], "k-", lw=1.3, label=r"theory $\alpha_c(\kappa)=F(\kappa)/2$")
    ax.plot(kappa_curve["kappa"], kappa_curve["dof"], color="0.6", ls="--", lw=1,
            label=r"degree-of-freedom count $(2\kappa-\kappa^2)/2$")
    for i, d in enumerate(sorted({q["d"] for q in points})):
        pts = sorted([q for q in points if q["d"] == d], key=lambda q: q["kappa"])
        k = np.array([q["kappa"] for q in pts])
        ratio = np.array([q["alpha_c"] / q["theory_alpha"] for q in pts])
        y = np.array([q["alpha"] for q in pts]) * ratio
        lo = np.array([q["alpha_low"] for q in pts]) * ratio
        hi = np.array([q["alpha_high"] for q in pts]) * ratio
        ax.errorbar(k, y, yerr=_err(y, lo, hi), fmt="o", color=f"C{i}", capsize=3, ms=5,
                    label=f"simulation d={d}, finite-size corrected")
        ax.plot(k, [q["alpha"] for q in pts], "x", color=f"C{i}", ms=6,
                label=f"simulation d={d}, raw (finite-size theory: +)")
        ax.plot(k, [q["theory_alpha"] for q in pts], "+", color=f"C{i}", ms=9)
        for q, yi in zip(pts, y):
            if q.get("not_found", 0):
                ax.annotate(f"lower bound\n({q['not_found']}/{q.get('trials', 0)} not_found)", (q["kappa"], yi),
                            textcoords="offset points", xytext=(-10, 10), fontsize=7, ha="right")
            if q.get("status", "ok") == "unbracketed" or q.get("undecided", 0) > 0.1 * q.get("trials", 1):
                ax.plot([q["kappa"]], [yi], "o", ms=11, mfc="none", color="r")
                ax.annotate(f"unreliable: {q.get('undecided', 0)}/{q.get('trials', 0)} undecided,\n"
                            f"fit {q.get('status', '?')}", (q["kappa"], yi), textcoords="offset points",
                            xytext=(8, -4), fontsize=7, color="r")
    ax.set_xlabel(r"rank fraction $\kappa = m/d$")
    ax.set_ylabel(r"capacity $\alpha = p_c\ln p_c/d^2$")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("Rank-constrained capacity: corrected point = measured x alpha_c(kappa) / theory(d, kappa)",
                 fontsize=9)
    return _save(fig, path)


def plot_spectra(panels, path):
    """Figure 4: singular-value histograms against their predicted laws.

    ``panels``: list of dicts ``{"title", "values", "pdf": callable or None, "pdf_label",
    "support": (lo, hi)}``; ``values`` already normalised.
    """
    n = len(panels)
    cols = min(3, n)
    rows = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        vals = np.asarray(panel["values"], float)
        if not len(vals):
            ax.text(0.5, 0.5, "no measurement", ha="center", va="center", transform=ax.transAxes)
        hi = max(2.2, float(np.max(vals)) * 1.02) if len(vals) else 2.2
        nbins = int(np.clip(len(vals) // 5, 8, 40))
        ax.hist(vals, bins=np.linspace(0, hi, nbins + 1), density=True, color="C0", alpha=0.6,
                label=f"measured ({len(vals)} values)")
        if panel.get("pdf") is not None:
            lo_s, hi_s = panel.get("support", (0.0, 2.0))
            s = np.linspace(lo_s, hi_s, 400)
            ax.plot(s, panel["pdf"](s), "k-", lw=1.3, label=panel.get("pdf_label", "theory"))
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xlabel(panel.get("xlabel", r"singular value $s\,\sqrt{d\,F(\kappa)}/\|W\|_F$"), fontsize=8)
        ax.set_ylabel("density")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    return _save(fig, path)


def plot_scores(panels, path):
    """Figure 5: score histograms in competitor-std units (scores / (||W||_F / d)).

    ``panels``: dicts ``{"title", "targets", "top_competitors", "competitors", "p",
    "water_level", "predicted_target" (optional), "lines": [(x, label, style)]}``.
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        series = [("competitors (sample)", panel.get("competitors"), "0.6"),
                  ("largest competitor", panel.get("top_competitors"), "C3"),
                  ("target", panel.get("targets"), "C0")]
        present = [np.asarray(v, float) for _, v, _ in series if v is not None and len(v)]
        if not present:
            ax.text(0.5, 0.5, "no measurement", ha="center", va="center", transform=ax.transAxes)
            ax.set_title(panel["title"], fontsize=9)
            continue
        allv = np.concatenate(present)
        bins = np.linspace(np.percentile(allv, 0.2), np.percentile(allv, 99.8), 70)
        for label, vals, color in series:
            if vals is None or not len(vals):
                continue
            ax.hist(vals, bins=bins, density=True, alpha=0.55, color=color, label=label)
        for x, label, style in panel.get("lines", []):
            if x is not None and math.isfinite(x):
                ax.axvline(x, ls=style, color="k", lw=1.1)
                ax.text(x, 0.97, " " + label, transform=ax.get_xaxis_transform(), rotation=90,
                        va="top", ha="right", fontsize=7)
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xlabel(r"score / ($\|W\|_F/d$)  (competitor standard deviations)", fontsize=8)
        ax.set_ylabel("density")
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def _capacity_marks(ax):
    """Vertical lines at the Hebbian (1/8) and optimal (1/2) capacities, labelled at the top."""
    for x, label in ((0.125, r"Hebbian capacity $\alpha=1/8$"), (0.5, r"optimal capacity $\alpha=1/2$")):
        ax.axvline(x, color="0.35", ls=":", lw=1.1)
        ax.text(x, 0.03, " " + label, transform=ax.get_xaxis_transform(), rotation=90, va="bottom",
                ha="right", fontsize=7, color="0.25")


def plot_accuracy(curves, theory, path):
    """Figure 6: recall accuracy against alpha = p ln p / d^2: Hebbian, optimal, Adam cross-entropy.

    ``curves``: dicts ``{"d", "solver", "points": [{"alpha", "accuracy", "ci_low",
    "ci_high", "bound"}]}``; ``theory``: dicts ``{"d", "solver", "alpha": [...],
    "accuracy": [...]}`` (``replica.hebbian_accuracy`` / ``replica.optimal_accuracy``;
    an Adam curve's theory is ``optimal_accuracy``, the best any memory can do).  Points
    with ``bound == "lower_bound"`` are drawn open and labelled as a lower bound on the
    best accuracy.
    """
    panels = [("hebbian", "Hebbian memory: measured against hebbian_accuracy"),
              ("optimal", "Optimal memory: measured W (open = lower bound)"),
              ("adam", "Adam on cross-entropy (unit-norm): returned W")]
    present = [(k, t) for k, t in panels if any(_panel_of(c["solver"]) == k for c in curves)]
    fig, axes = plt.subplots(1, len(present), figsize=(5.2 * len(present), 4.3), sharey=True, squeeze=False)
    dims = sorted({c["d"] for c in curves})
    colors = dict(zip(dims, plt.cm.viridis(np.linspace(0.0, 0.85, max(len(dims), 1)))))
    for ax, (kind, title) in zip(axes[0], present):
        for c in sorted([c for c in curves if _panel_of(c["solver"]) == kind], key=lambda c: c["d"]):
            color = colors[c["d"]]
            th = next((t for t in theory if t["d"] == c["d"] and t["solver"] == c["solver"]), None)
            if th is not None:
                name = "hebbian_accuracy" if kind == "hebbian" else "optimal_accuracy (best, RS)"
                ax.plot(th["alpha"], th["accuracy"], "-" if kind == "hebbian" else "--", color=color, lw=1.2,
                        label=f"theory {name}, d = {c['d']}")
            _accuracy_points(ax, c, color, kind)
        _capacity_marks(ax)
        ax.set_xlabel(r"load $\alpha = p\ln p / d^2$")
        ax.set_ylim(-0.02, 1.04)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="lower left")
        ax.set_title(title, fontsize=9.5)
    axes[0][0].set_ylabel("mean recall fraction (95% interval)")
    fig.tight_layout()
    return _save(fig, path)


def _panel_of(solver):
    """The panel of figure 6 a solver's curve goes on."""
    return {"hebbian": "hebbian", "adam": "adam"}.get(solver, "optimal")


def _accuracy_points(ax, curve, color, kind):
    """The measured points of one accuracy curve: filled where exact, open where a lower bound."""
    exact_note = {"hebbian": "measured", "optimal": "measured, all stored (exact)",
                  "adam": "measured, all stored"}[kind]
    for exact, note in ((True, exact_note), (False, "measured: lower bound on the best")):
        pts = [q for q in curve["points"] if (q["bound"] != "lower_bound") == exact]
        if not pts:
            continue
        y = np.array([q["accuracy"] for q in pts], float)
        err = _err(y, [q["ci_low"] for q in pts], [q["ci_high"] for q in pts])
        ax.errorbar([q["alpha"] for q in pts], y, yerr=err, fmt="o", ms=4.5, capsize=2, lw=0.9, color=color,
                    mfc=color if exact else "white", label=f"{note}, d = {curve['d']}")


def plot_outputs(rows, theory, d, path):
    """Figure 7: p_c against the number ``K`` of distinct answers, OP and DP, with the theory curves.

    ``rows``: dicts ``{"problem", "outputs", "p_c", "p_c_low", "p_c_high", "undecided",
    "trials"}``; ``theory``: ``{"curves": {problem: (K grid, p_c)}, "one_per_fact": p_c}``
    (``replica.capacity(d, outputs=K, problem=...)``, ``notes/many_to_one.md``).
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for (problem, (grid, pc)), color in zip(sorted(theory["curves"].items()), ("C0", "C1")):
        ax.plot(grid, pc, "-", color=color, lw=1.3, label=f"theory {problem.upper()}")
    for problem, color, marker in (("dp", "C0", "o"), ("op", "C1", "s")):
        pts = sorted([r for r in rows if r["problem"] == problem], key=lambda r: r["outputs"])
        if not pts:
            continue
        y = np.array([r["p_c"] for r in pts], float)
        err = _err(y, [r["p_c_low"] for r in pts], [r["p_c_high"] for r in pts])
        und = sum(r["undecided"] for r in pts)
        tot = sum(r["trials"] for r in pts)
        ax.errorbar([r["outputs"] for r in pts], y, yerr=err, fmt=marker, ms=5, capsize=2, lw=0.9, color=color,
                    label=f"measured {problem.upper()} (certified decisions; {und}/{tot} undecided)")
    if np.isfinite(theory.get("one_per_fact", np.nan)):
        ax.axhline(theory["one_per_fact"], color="0.4", ls=":", lw=1.1, label="theory, one answer per fact")
    ax.axvline(d, color="0.6", ls="--", lw=0.8)
    ax.text(d, 0.97, " K = d", transform=ax.get_xaxis_transform(), va="top", fontsize=7, color="0.35")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ks = sorted({r["outputs"] for r in rows})
    if ks:
        ax.set_xticks(ks, [str(k) for k in ks])
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("number K of distinct answers")
    ax.set_ylabel("capacity $p_c$ (95% interval)")
    ax.set_title(f"Many facts, few answers: d = {d}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)
