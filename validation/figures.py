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
import matplotlib.transforms  # noqa: E402
import numpy as np  # noqa: E402
from scipy import special  # noqa: E402

from .measurements.intervals import wilson_interval  # noqa: E402
from .solvers.engine.registry import OPTIMAL_THEORY, solver_spec  # noqa: E402

__all__ = ["plot_success", "plot_collapse", "plot_alpha_vs_d", "plot_alpha_kappa", "plot_spectra", "plot_scores",
           "plot_accuracy", "plot_outputs", "plot_zipf", "wilson_interval"]

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


_OPEN_STATUSES = ("separated", "unbracketed")
_FIT_STYLE = {"ok": "-", "separated": ":", "unbracketed": "--"}
_PROBLEM_NAMES = {"op": "original problem (OP)", "dp": "decoupled problem (DP)"}


def _dim_colors(dims):
    """One colour per d from a sequential colormap (small d dark, large d light), the same in every panel."""
    dims = sorted(set(dims))
    levels = np.linspace(0.0, 0.85, len(dims)) if len(dims) > 1 else [0.35]
    return {d: plt.cm.viridis(v) for d, v in zip(dims, levels)}


def _dodge(ax, i, n, step=2.2):
    """The data transform of ``ax`` shifted ``step`` points per curve to the side (curve ``i`` of ``n``).

    Curves measured at nearby loads then do not hide one another's markers and error
    bars; the shift is a fixed number of points on screen, a fraction of a grid step.
    """
    dx = (i - (n - 1) / 2.0) * step / 72.0
    return ax.transData + matplotlib.transforms.ScaledTranslation(dx, 0.0, ax.figure.dpi_scale_trans)


def _counts(curve):
    """(p, stored, decided) arrays of a curve; ``not_found`` counts as not stored, as in the fit."""
    p = np.array([c["p"] for c in curve], float)
    k = np.array([c["stored"] for c in curve], float)
    n = k + np.array([c["not_stored"] + c.get("not_found", 0) for c in curve], float)
    return p, k, n


def _status_note(est):
    """Legend suffix of an estimate whose fit has no fitted interval ('' for an ``ok`` fit)."""
    status = est.get("status", "ok")
    return "" if status == "ok" else f" (fit {status})"


def _measured_points(ax, x, k, n, color, trans, hollow, label):
    """Stored fractions with light 95 % Wilson bars; open markers when ``hollow``."""
    ok = n > 0
    x, k, n = x[ok], k[ok], n[ok]
    if not len(x):
        return
    lo, hi = wilson_interval(k, n)
    freq = k / n
    ax.errorbar(x, freq, yerr=_err(freq, lo, hi), fmt="none", ecolor=color, elinewidth=0.7, alpha=0.45,
                capsize=0, transform=trans, zorder=2)
    ax.plot(x, freq, "o", ms=4.3, color=color, mfc="white" if hollow else color, mew=1.1, transform=trans,
            label=label, zorder=3)


def _fit_curve(ax, est, x_of_p, color):
    """The fitted logistic of ``est`` against ``x_of_p(p)`` over the loads of its curve (none without a fit)."""
    slope, p_c = est.get("slope", math.nan), est.get("p_c", math.nan)
    if slope is None or p_c is None or not (math.isfinite(slope) and math.isfinite(p_c)):
        return
    p = [c["p"] for c in est["curve"]]
    ps = np.geomspace(min(p), max(p), 300)
    prob = special.expit(-slope * (np.log(ps) - math.log(p_c)))
    ax.plot(x_of_p(ps), prob, _FIT_STYLE.get(est.get("status", "ok"), "-"), color=color, lw=1.2, zorder=2.5)


def _style_legend(fig, statuses, extra=()):
    """Figure legend of the symbols shared by the panels (fit styles only for the statuses present)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", ls="none", color="0.3", label="measured fraction stored (95 % Wilson)"),
               Line2D([], [], color="0.3", lw=1.2, label="logistic fit (status ok)")]
    if statuses & set(_OPEN_STATUSES):
        handles.append(Line2D([], [], marker="o", ls="none", color="0.3", mfc="white",
                              label="open: fit separated or unbracketed (no fitted interval)"))
    if "separated" in statuses:
        handles.append(Line2D([], [], color="0.3", ls=":", lw=1.2, label="fit separated: a step, not a measurement"))
    if "unbracketed" in statuses:
        handles.append(Line2D([], [], color="0.3", ls="--", lw=1.2, label="fit unbracketed: extrapolated"))
    handles += list(extra)
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(handles), 4),
               fontsize=8, frameon=False)


def _full_rank_groups(estimates):
    """Full-rank estimates by (problem, solver): optimal OP, optimal DP, then the Hebbian panels."""
    groups = {}
    for est in estimates:
        if est["kappa"] == 1.0:
            groups.setdefault((est["problem"], est["solver"]), []).append(est)
    order = sorted(groups, key=lambda k: (solver_spec(k[1]).is_hebbian, k[0] != "op", k))
    return [(key, sorted(groups[key], key=lambda e: e["d"])) for key in order]


def plot_success(estimates, path):
    """Figure 1: P(stored) against the load alpha, one panel per (memory, problem).

    Every full-rank estimate is one curve, coloured by d (the same colour for a d in
    every panel): the stored fraction at each measured load with its Wilson 95 %
    interval (light bars, markers shifted a little sideways per d so that they do not
    cover one another), the fitted logistic, and a diamond at the finite-size theory
    p_c(d) on P = 1/2, where the curve of that d should cross.  Fits that are
    ``separated`` or ``unbracketed`` have open markers and a dotted or dashed line.
    The dotted black line is the d -> infinity capacity (1/2 optimal, 1/8 Hebbian).
    """
    from matplotlib.lines import Line2D

    groups = _full_rank_groups(estimates)
    colors = _dim_colors(e["d"] for _, ests in groups for e in ests)
    fig, axes = plt.subplots(1, max(len(groups), 1), figsize=(5.0 * max(len(groups), 1), 4.2), squeeze=False)
    statuses = set()
    for ax, ((problem, solver), ests) in zip(axes[0], groups):
        for i, est in enumerate(ests):
            d, color = est["d"], colors[est["d"]]
            statuses.add(est.get("status", "ok"))
            p, k, n = _counts(est["curve"])
            alpha = np.array([c["alpha"] for c in est["curve"]], float)
            _measured_points(ax, alpha, k, n, color, _dodge(ax, i, len(ests)),
                             est.get("status") in _OPEN_STATUSES, f"d = {d}{_status_note(est)}")
            _fit_curve(ax, est, lambda ps, d=d: ps * np.log(ps) / d ** 2, color)
            th = est["theory"].get("alpha", math.nan)
            if th is not None and math.isfinite(th):
                ax.plot([th], [0.5], "D", ms=6.5, mfc=color, mec="k", mew=0.8, zorder=4)
        hebbian = solver_spec(solver).is_hebbian
        asym = 0.125 if hebbian else 0.5
        ax.axvline(asym, color="k", lw=1.2, ls=":")
        ax.text(asym, 0.5, r" $d\to\infty$: " + ("1/8" if hebbian else "1/2"), transform=ax.get_xaxis_transform(),
                ha="left", va="center", fontsize=7.5, rotation=90)
        ax.axhline(0.5, color="0.6", lw=0.6, zorder=1)
        ax.set_title(f"{solver_spec(solver).label} memory, {_PROBLEM_NAMES.get(problem, problem)}", fontsize=10)
        ax.set_xlabel(r"load $\alpha = p\,\ln p\,/\,d^2$  (dimensionless; $p$ facts, $d$ dimensions)", fontsize=8.5)
        ax.set_ylim(-0.04, 1.04)
        ax.grid(alpha=0.25)
        ax.legend(fontsize=7.5, loc="upper right" if hebbian else "lower left", title="dimension d",
                  title_fontsize=7.5, framealpha=0.9)
    axes[0][0].set_ylabel("P(stored): fraction of trials stored")
    theory = Line2D([], [], marker="D", ls="none", mfc="0.6", mec="k", label="finite-size theory p_c(d), on P = 1/2")
    asymptote = Line2D([], [], color="k", ls=":", lw=1.2, label=r"capacity as $d\to\infty$")
    _style_legend(fig, statuses, (theory, asymptote))
    fig.suptitle("Figure 1. Success probability against the load, one curve per d", fontsize=10.5)
    fig.tight_layout()
    return _save(fig, path)


def _collapse_panels(estimates):
    """Panels of figure 1b: the full-rank groups, then one rank-constrained (kappa < 1) panel per problem, solver, d."""
    panels = [(key, ests, False) for key, ests in _full_rank_groups(estimates)]
    rank = {}
    for est in estimates:
        if est["kappa"] < 1.0:
            rank.setdefault((est["problem"], est["solver"], est["d"]), []).append(est)
    panels += [(key, sorted(ests, key=lambda e: e["kappa"]), True) for key, ests in sorted(rank.items())]
    return panels


def _theory_p_c(est):
    th = est["theory"].get("p_c", math.nan)
    return th if th is not None and math.isfinite(th) and th > 0 else None


def _collapse_curves(ax, ests, colors, rank, labels=True):
    """The curves of one panel of figure 1b on ``ax``: points against p / p_c(d), fits, the x = 1 marks."""
    kappa_colors = dict(zip([e["kappa"] for e in ests], plt.cm.plasma(np.linspace(0.1, 0.75, len(ests)))))
    for i, est in enumerate(ests):
        color = kappa_colors[est["kappa"]] if rank else colors[est["d"]]
        th = _theory_p_c(est)
        p, k, n = _counts(est["curve"])
        label = (f"kappa = {est['kappa']:g}: lower bound" if rank else f"d = {est['d']}") + _status_note(est)
        _measured_points(ax, p / th, k, n, color, _dodge(ax, i, len(ests)), est.get("status") in _OPEN_STATUSES,
                         label if labels else None)
        _fit_curve(ax, est, lambda ps, th=th: ps / th, color)
    ax.axvline(1.0, color="k", ls="--", lw=0.9, zorder=1)
    ax.axhline(0.5, color="0.6", lw=0.6, zorder=1)
    ax.plot([1.0], [0.5], "P", ms=9, mfc="k", mec="white", mew=0.8, zorder=5)
    ax.set_ylim(-0.04, 1.04)
    ax.grid(alpha=0.25)


def _zoom_range(ests):
    """The x range of an inset near x = 1, or None: curves measured only within 6 % of their theory p_c."""
    narrow = []
    for est in ests:
        x = np.array([c["p"] for c in est["curve"]], float) / _theory_p_c(est)
        if len(x) and np.all(np.abs(x - 1.0) < 0.06):
            narrow.append(x)
    if not narrow:
        return None
    allx = np.concatenate(narrow + [np.array([1.0])])
    pad = max(0.004, 0.08 * (allx.max() - allx.min()))
    return allx.min() - pad, allx.max() + pad


def plot_collapse(estimates, path):
    """Figure 1b: P(stored) against x = p / p_c(d), with p_c(d) the finite-size theory's capacity.

    One panel per (memory, problem) of the full-rank estimates, one curve per d
    coloured as in figure 1: if the finite-size theory is right every curve crosses
    P = 1/2 at x = 1 (dashed line, cross).  Open markers: fits ``separated`` or
    ``unbracketed``.  Curves measured only close to their theory p_c (the bracketing
    design at large d) are drawn again in an inset that zooms in on x = 1 (the grey band
    of the panel).
    Rank-constrained estimates (kappa < 1, x against the theory's p_c(d, kappa)) get
    panels of their own, coloured by kappa and labelled as lower bounds: trials the
    rank-m search did not solve (``not_found``) count as not stored.
    """
    from matplotlib.lines import Line2D

    panels = [(key, [e for e in ests if _theory_p_c(e)], rank) for key, ests, rank in _collapse_panels(estimates)]
    panels = [q for q in panels if q[1]]
    colors = _dim_colors(e["d"] for _, ests, rank in panels if not rank for e in ests)
    n = max(len(panels), 1)
    cols = n if n <= 3 else 2
    rows = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.3 * rows), squeeze=False)
    statuses = {e.get("status", "ok") for _, ests, _ in panels for e in ests}
    for ax, (key, ests, rank) in zip(axes.flat, panels):
        problem, solver = key[:2]
        _collapse_curves(ax, ests, colors, rank)
        what = f"{solver_spec(solver).label} memory, {_PROBLEM_NAMES.get(problem, problem)}"
        if rank:
            what = f"rank-constrained {solver_spec(solver).label} memory, {problem.upper()}, d = {key[2]}: lower bounds"
            ax.text(0.02, 0.03, "trials the rank-m search did not solve\ncount as not stored",
                    transform=ax.transAxes, fontsize=7, va="bottom", ha="left", color="0.25")
        ax.set_title(what, fontsize=9.5)
        ax.set_xlabel(r"$x = p\,/\,p_c(d)$  (facts over the finite-size theory's capacity)", fontsize=8.5)
        ax.legend(fontsize=7.5, loc="upper right", title="kappa = m/d" if rank else "dimension d",
                  title_fontsize=7.5, framealpha=0.9)
        zoom = None if rank else _zoom_range(ests)
        lo, hi = ax.get_xlim()
        if zoom is not None and (hi - lo) > 3 * (zoom[1] - zoom[0]):
            inset = ax.inset_axes([0.05, 0.13, 0.35, 0.5])
            _collapse_curves(inset, ests, colors, rank, labels=False)
            inset.set_xlim(*zoom)
            inset.tick_params(labelsize=6.5)
            inset.set_title("zoom near x = 1", fontsize=7, pad=2)
            ax.axvspan(*zoom, color="0.5", alpha=0.15, lw=0, zorder=0)  # the range the inset shows
    for ax in axes[:, 0]:
        ax.set_ylabel("P(stored): fraction of trials stored")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    cross = Line2D([], [], marker="P", ls="none", mfc="k", mec="white", ms=9,
                   label="finite-size theory: P = 1/2 at x = 1")
    _style_legend(fig, statuses, (cross,))
    fig.suptitle("Figure 1b. Collapse: P(stored) against p / p_c(d), the finite-size theory's p_c at each d",
                 fontsize=10.5)
    fig.tight_layout()
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
        ax.plot(x, [q["alpha"] for q in pts], "-", color="k" if name == OPTIMAL_THEORY else "C2", lw=1.2,
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
    "accuracy": [...]}`` (``replica.hebbian_accuracy`` / ``replica.variants.optimal_accuracy``;
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


_ZIPF_STYLE = {"optimal": ("C0", "o"), "hebbian": ("C1", "s"), "hebbian_frequency": ("C2", "^"),
               "adam": ("C3", "x"), "adam_frequency": ("C4", "D")}


def plot_zipf(measurements, theory_curves, path, title=None):
    """Error E of facts with Zipf frequencies against d, log-log, one panel per exponent a.

    ``measurements``: ``ZipfMeasurement.to_dict()`` dicts; ``theory_curves``: dicts
    ``{"a", "solver", "d": [...], "error": [...]}`` (``replica.zipf_error``).  Points: the
    mean E over the instances with its standard error; the legend gives each series'
    fitted slope and, where the theory has one, the asymptotic exponent
    (:func:`validation.measurements.zipf.slope_rows`).  Give-up and trained memories are upper bounds
    on the best error, and the legend says so.
    """
    from .measurements.zipf import ZIPF_LABELS, slope_rows, slope_text, zipf_series

    exponents = sorted({m["a"] for m in measurements})
    dims = sorted({m["d"] for m in measurements})
    slopes = {(r["a"], r["solver"]): r for r in slope_rows(measurements)}
    fig, axes = plt.subplots(1, len(exponents), figsize=(5.6 * len(exponents), 4.6), sharey=True, squeeze=False)
    for ax, a in zip(axes[0], exponents):
        for c in theory_curves:
            if c["a"] == a:
                ax.plot(c["d"], c["error"], color=_ZIPF_STYLE[c["solver"]][0], lw=1.1, alpha=0.8)
        for solver, (color, marker) in _ZIPF_STYLE.items():
            d, e = zipf_series(measurements, a, solver)
            if not d.size:
                continue
            _, se = zipf_series(measurements, a, solver, "stderr")
            row = slopes[(a, solver)]
            label = f"{ZIPF_LABELS[solver]}: slope {slope_text(row['measured'])}"
            if row["asymptotic"] is not None:
                label += f" (asymptotic {row['asymptotic']:+.2f})"
            ok = e > 0
            ax.errorbar(d[ok], e[ok], yerr=np.minimum(se[ok], 0.999 * e[ok]), fmt=marker, ms=5, capsize=2,
                        color=color, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(dims, [str(x) for x in dims])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("d")
        ax.set_title(f"a = {a:g}", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1, frameon=False)
    axes[0][0].set_ylabel("E = query mass of the facts not recalled")
    fig.suptitle(title or "Zipf recall error against d (mean ± s.e.); lines: replica.zipf_error", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
