"""The figures of ``validation reproduce``, one section of ``report.md`` each.

Every ``figure_*`` function draws one figure with :mod:`validation.figures` and returns
its path and the paragraph of the report that goes with it, generated from the
measured numbers; :func:`spectra_panels` and :func:`score_panels` turn the measurement
records into histogram panels and summary rows.  See ``notes/reproduce.md``.
"""

from __future__ import annotations

import math
import os

import numpy as np

from replica.common.loads import load

from ..capacity.fit import FIT_STATUS_MEANINGS, interval_text, separation_bracket
from ..solvers.engine.registry import solver_spec
from .plan import optimal_accuracy_options
from .tables import concat, fmt, reldiff, summary_columns

__all__ = ["figure_success", "collapse_text", "figure_collapse", "figure_alpha_vs_d", "figure_alpha_kappa",
           "spectra_panels", "figure_spectra", "score_panels", "figure_scores", "figure_accuracy", "figure_outputs",
           "figure_zipf"]


def alpha_interval(e) -> str:
    """The measured alpha of an estimate with the interval its fit status gives (a bracket of loads if separated)."""
    low, high = e["alpha_low"], e["alpha_high"]
    if e["status"] == "separated" and (bracket := separation_bracket(e["curve"])) is not None:
        low, high = (load(e["d"], p) for p in bracket)
    return interval_text(e["alpha"], low, high, e["status"], fmt=fmt)


def figure_success(out, estimates):
    """Figure 1 and its text: P(stored) against the load."""
    from .. import figures

    path = figures.plot_success(estimates, os.path.join(out, "fig1_success_probability.png"))
    lines = []
    for e in sorted(estimates, key=lambda e: (solver_spec(e["solver"]).is_hebbian, e["problem"] != "op",
                                              e["problem"], e["d"])):
        if e["kappa"] != 1.0:
            continue
        th = e["theory"]
        lines.append(f"- {e['solver']} {e['problem'].upper()}, d = {e['d']}: measured alpha = "
                     f"{alpha_interval(e)}, finite-size theory {fmt(th.get('alpha', math.nan))} "
                     + (f"({reldiff(e['alpha'], th.get('alpha'))})" if e["status"] == "ok" else
                        f"(fit status {e['status']}: no fitted interval, so no difference is given)"))
    legend = "; ".join(f"`{k}`: {v}" for k, v in FIT_STATUS_MEANINGS.items())
    text = ("Theory: the optimal memory's capacity tends to alpha_c = 1/2 and the Hebbian rule's to 1/8 "
            "(dotted) as d grows; at finite d the finite-size theory predicts p_c(d), where the curve of that d "
            "should cross P(stored) = 1/2 (diamond in the colour of d). Points: the fraction of trials stored at "
            "each load, with light 95% Wilson bars, shifted a little sideways per d so that they do not cover "
            "one another; lines: the fitted logistic; open markers: fits without a fitted interval. "
            f"Measured, with the interval its fit status gives ({legend}):\n\n" + "\n".join(lines))
    return path, text


def _crossing_interval(e) -> str:
    """x_c = p_c / p_c(theory) of an estimate with the interval its fit status gives (a bracket if separated)."""
    th = e["theory"]["p_c"]
    low, high = e["p_c_low"], e["p_c_high"]
    if e["status"] == "separated" and (bracket := separation_bracket(e["curve"])) is not None:
        low, high = bracket
    return interval_text(e["p_c"] / th, low / th, high / th, e["status"], fmt=fmt)


def _collapse_group_line(name, ests, what="d") -> str:
    """One report line of figure 1b: the crossings x_c of one panel and their spread for ``ok`` fits."""
    key = (lambda e: f"d = {e['d']}") if what == "d" else (lambda e: f"kappa = {e['kappa']:g}")
    parts = "; ".join(f"{key(e)}: {_crossing_interval(e)}" for e in ests)
    ok = [e["p_c"] / e["theory"]["p_c"] - 1.0 for e in ests if e["status"] == "ok"]
    spread = (f" (`ok` fits: x_c - 1 from {100 * min(ok):+.1f}% to {100 * max(ok):+.1f}%)" if len(ok) >= 2 else "")
    return f"- {name}: {parts}{spread}"


def collapse_text(estimates) -> str:
    """The paragraph of figure 1b: where each measured curve crosses 1/2 in units of the theory's p_c(d)."""

    def has_theory(e):
        th = e["theory"].get("p_c", math.nan)
        return th is not None and math.isfinite(th) and th > 0 and math.isfinite(e["p_c"])

    groups = {}
    for e in estimates:
        if has_theory(e):
            groups.setdefault((e["kappa"] < 1.0, solver_spec(e["solver"]).is_hebbian, e["problem"] != "op",
                               e["problem"],
                               e["solver"], e["d"] if e["kappa"] < 1.0 else None), []).append(e)
    lines = []
    for (rank, _, _, problem, solver, d), ests in sorted(groups.items()):
        ests = sorted(ests, key=lambda e: (e["kappa"], e["d"]))
        if rank:
            lines.append(_collapse_group_line(f"rank-constrained {solver} {problem.upper()}, d = {d}, against "
                                              "p_c(d, kappa) (LOWER BOUNDS: trials the rank-m search did not "
                                              "solve count as not stored)", ests, what="kappa"))
        else:
            lines.append(_collapse_group_line(f"{solver_spec(solver).label} {problem.upper()}", ests))
    flagged = [e for e in estimates if has_theory(e) and e["status"] in ("separated", "unbracketed")]
    open_text = ("Open markers: fits " + ", ".join(
        f"{e['solver']} {e['problem'].upper()} d = {e['d']}" + (f" kappa = {e['kappa']:g}" if e["kappa"] < 1 else "")
        + f" (`{e['status']}`)" for e in flagged) + "; their crossing is not a fitted measurement. "
        if flagged else "Every fit has status `ok` (filled markers). ")
    return ("The same counts as figure 1 against x = p / p_c(d), with p_c(d) the finite-size theory's capacity "
            "at each d (`theory_p_c` of capacity.csv), one curve per d: if the theory is right, every curve "
            "crosses P(stored) = 1/2 at x = 1 (dashed line). The theory fixes where the curves cross, not "
            "how steep they are, so away from x = 1 curves of different d need not coincide. " + open_text
            + "Measured crossings x_c = p_c / p_c(d), with the interval the fit status gives:\n\n"
            + "\n".join(lines))


def figure_collapse(out, estimates):
    """Figure 1b and its text: P(stored) against p / p_c(d), the collapse the finite-size theory predicts."""
    from .. import figures

    path = figures.plot_collapse(estimates, os.path.join(out, "fig1b_collapse.png"))
    return path, collapse_text(estimates)


def figure_alpha_vs_d(out, estimates, theory):
    """Figure 2 and its text: measured alpha(d) against 1/ln p with the theory curves."""
    from .. import figures

    path = figures.plot_alpha_vs_d(estimates, theory["alpha_d"], os.path.join(out, "fig2_alpha_vs_d.png"))
    full_rank = [e for e in estimates if e["kappa"] == 1.0 and math.isfinite(e["theory"].get("p_c", math.nan))]
    inside = [e for e in full_rank if e["status"] == "ok"]
    n_in = sum(1 for e in inside if e["p_c_low"] <= e["theory"]["p_c"] <= e["p_c_high"])
    opt_op = sorted([e for e in inside if not solver_spec(e["solver"]).is_hebbian and e["problem"] == "op"],
                    key=lambda e: e["d"])
    trend = ""
    if len(opt_op) >= 2:
        trend = (f" The measured OP alpha goes from {fmt(opt_op[0]['alpha'])} at d = {opt_op[0]['d']} to "
                 f"{fmt(opt_op[-1]['alpha'])} at d = {opt_op[-1]['d']}.")
    dmax = max(q["d"] for q in theory["alpha_d"]["optimal"])
    th_big = [q for q in theory["alpha_d"]["optimal"] if q["d"] == dmax][0]
    text = (f"Theory: alpha(d) decreases towards 1/2 (optimal) with corrections of order ln ln p / ln p; "
            f"the finite-size theory gives alpha = {fmt(th_big['alpha'])} even at d = {dmax}. "
            f"Measured: the theory p_c lies inside the 95% profile-likelihood interval for {n_in} of the "
            f"{len(inside)} full-rank estimates with a fitted interval ({len(full_rank) - len(inside)} more "
            f"have none).{trend}")
    return path, text


def figure_alpha_kappa(out, config, theory, points):
    """Figure 3 and its text: alpha_c(kappa) with the finite-size-corrected points."""
    from .. import figures

    path = figures.plot_alpha_kappa(theory["kappa"], points, os.path.join(out, "fig3_alpha_kappa.png"))
    lines = []
    for q in sorted(points, key=lambda q: q["kappa"]):
        corr = q["alpha"] * q["alpha_c"] / q["theory_alpha"]
        dof = 0.5 * (2 * q["kappa"] - q["kappa"] ** 2)
        lines.append(f"- kappa = {q['kappa']:g}: measured alpha = {fmt(q['alpha'])} vs finite-size theory "
                     f"{fmt(q['theory_alpha'])} ({reldiff(q['alpha'], q['theory_alpha'])}); corrected "
                     f"{fmt(corr)} vs alpha_c = F/2 = {fmt(q['alpha_c'])} (degree-of-freedom count {fmt(dof)}); "
                     f"fit status {q['status']}, {q['undecided']}/{q['trials']} trials undecided"
                     + (f"; a LOWER BOUND: {q['not_found']}/{q['trials']} trials not_found (a rank-m search "
                        f"that found no W, counted as not stored)" if q["not_found"] else ""))
    text = ("Theory: alpha_c(kappa) = F(kappa)/2 with F the tail second moment of the quarter circle; the "
            "finite-size equation p_c E[C_p] = F(kappa) d^2 is a conjecture. Corrected point = measured alpha "
            f"x alpha_c(kappa) / finite-size alpha(d = {config.kappa_dim}, kappa).\n\n" + "\n".join(lines))
    return path, text


def spectra_panels(config, specs, measurements):
    """Histogram panels and moment rows of the singular values of every measured configuration."""
    from replica.asymptotic.spectra import hebbian_spectrum, spectrum

    dm = config.spectra_dim
    panels, rows = [], []
    for problem, solver, kappa, _ensemble, p in specs:
        recs = measurements.get((problem, solver, kappa, p), [])
        sv = concat(recs, "singular_values")
        if solver_spec(solver).is_hebbian:
            law = hebbian_spectrum(p / dm)
            label, support = f"finite-ratio theory c = p/d = {p / dm:.1f}", (law.lower, law.upper)
        else:
            law = spectrum(kappa)
            label = "quarter circle" if kappa == 1.0 else f"quarter circle truncated to [{law.support()[0]:.2f}, 2]"
            support = tuple(law.support())
        n_stored = sum(1 for r in recs if r.get("stored"))
        panels.append({"title": f"{solver} {problem.upper()} kappa={kappa:g}, d={dm}, p={p} "
                                f"({n_stored}/{len(recs)} stored)",
                       "values": sv, "pdf": law.pdf, "pdf_label": label, "support": support})
        rows.append({"problem": problem, "solver": solver, "kappa": kappa, "d": dm, "p": p,
                     "instances": len(recs), "stored": n_stored,
                     "sv_m2": float(np.mean(sv ** 2)) if sv.size else math.nan,
                     "sv_m4": float(np.mean(sv ** 4)) if sv.size else math.nan,
                     "sv_m2_theory": float(law.moment(2)), "sv_m4_theory": float(law.moment(4)),
                     "sv_max": float(sv.max()) if sv.size else math.nan})
    return panels, rows


def figure_spectra(out, panels, rows):
    """Figure 4 and its text: singular-value histograms against their laws."""
    from .. import figures

    path = figures.plot_spectra(panels, os.path.join(out, "fig4_spectra.png"))
    text = ("Theory: at capacity the optimal memory's singular values follow the quarter circle "
            "(second moment 1, fourth moment 2) and the rank-constrained one the truncated quarter "
            "circle; the Hebbian memory follows the finite-ratio product law (fourth moment 2 + d/p). "
            "Measured fourth moments:\n\n" + "\n".join(
                f"- {r['solver']} {r['problem'].upper()} kappa = {r['kappa']:g}, p = {r['p']}: "
                f"m4 = {fmt(r['sv_m4'])} (theory {fmt(r['sv_m4_theory'])}), "
                f"largest value {fmt(r['sv_max'])} (edge 2)" for r in rows))
    return path, text


def _predicted_scores(solver, d, p, ensemble):
    """(predicted water level, predicted target mean) in competitor-std units (NaN where no theory)."""
    if solver_spec(solver).is_hebbian:
        from replica.hebbian import hebbian_score_moments

        return math.nan, float(hebbian_score_moments(d, p, ensemble).standardized_target_mean)
    from replica.optimal.scores import optimal_score_laws

    laws = optimal_score_laws(p, size=20000)
    return laws.water_level.mean, laws.target.mean


def score_panels(config, specs, measurements):
    """Histogram panels and summary rows of the scores of the full-rank configurations."""
    dm = config.spectra_dim
    panels, rows = [], []
    for problem, solver, kappa, ensemble, p in specs:
        if kappa != 1.0:
            continue
        recs = measurements.get((problem, solver, kappa, p), [])
        tg, top, comp = concat(recs, "targets"), concat(recs, "top_competitors"), concat(recs, "competitors")
        row = {"problem": problem, "solver": solver, "d": dm, "p": p, "instances": len(recs)}
        for name, vals in (("target", tg), ("top_competitor", top), ("gap", tg - top), ("competitor", comp)):
            row.update(summary_columns(name, vals))
        water, pred_target = _predicted_scores(solver, dm, p, ensemble)
        row.update(sqrt_2_ln_p=math.sqrt(2 * math.log(p)), predicted_water_level=water,
                   predicted_target_mean=pred_target)
        rows.append(row)
        lines = [(math.sqrt(2 * math.log(p)), "sqrt(2 ln p)", ":")]
        if math.isfinite(water):
            lines.append((water, "predicted water level L*", "--"))
        if solver_spec(solver).is_hebbian and math.isfinite(pred_target):
            lines.append((pred_target, "predicted target mean", "-."))
        panels.append({"title": f"{solver} {problem.upper()}, d={dm}, p={p} ({len(recs)} instances)",
                       "targets": tg, "top_competitors": top, "competitors": comp, "lines": lines})
    return panels, rows


def figure_scores(out, panels, rows):
    """Figure 5 and its text: score histograms, optimal against Hebbian."""
    from .. import figures

    path = figures.plot_scores(panels, os.path.join(out, "fig5_scores.png"))
    lines = []
    for r in rows:
        target = (f", predicted target mean {fmt(r['predicted_target_mean'])}"
                  if math.isfinite(r["predicted_target_mean"]) else "")
        lines.append(f"- {r['solver']} {r['problem'].upper()} (p = {r['p']}): target mean {fmt(r['target_mean'])}, "
                     f"sd {fmt(r['target_sd'])}; largest competitor mean {fmt(r['top_competitor_mean'])}; "
                     f"competitor sd {fmt(r['competitor_sd'])} (1 if W e_mu has its average norm); "
                     f"sqrt(2 ln p) = {fmt(r['sqrt_2_ln_p'])}; "
                     f"predicted water level {fmt(r['predicted_water_level'])}" + target)
    text = ("Theory: the optimal memory lifts every target just above the slightly pushed-down top "
            "competitors, at the water level L*, with a small spread; the Hebbian targets are spread with "
            "about unit standard deviation (in competitor units) around the predicted mean. "
            "Scores in competitor standard deviations (score / (||W||_F/d)):\n\n" + "\n".join(lines))
    return path, text


def _accuracy_theory(curves, n_points=16) -> list:
    """Theory curves of figure 6: one ``{"d", "solver", "alpha", "accuracy"}`` per curve, on a dense load grid.

    Adam's curve is the best accuracy of any memory (``replica.variants.optimal_accuracy``, gaussian
    theory): cross-entropy training cannot do better.
    """
    from ..measurements.accuracy import loads_from_alpha, theory_accuracy
    from ..capacity import load

    out = []
    for c in curves:
        lo, hi = min(pt.alpha for pt in c.points), max(pt.alpha for pt in c.points)
        ps = sorted(set(loads_from_alpha(c.d, np.linspace(lo, hi, n_points))) | {pt.p for pt in c.points})
        ref = solver_spec(c.solver).accuracy_reference()
        vals = [theory_accuracy(c.d, p, ref, c.ensemble, c.kappa)[0] for p in ps]
        out.append({"d": c.d, "solver": c.solver, "alpha": [load(c.d, p) for p in ps], "accuracy": vals})
    return out


def _nearest(rows, alpha):
    return min(rows, key=lambda r: abs(r["alpha"] - alpha))


def _accuracy_text(config, rows) -> str:
    """Report paragraph of figure 6 from the measured accuracy rows."""
    heb = [_nearest([r for r in rows if r["d"] == d and solver_spec(r["solver"]).is_hebbian], 0.5)
           for d in config.accuracy_dims]
    lines = [f"- Hebbian, d = {r['d']}, p = {r['p']} (alpha = {fmt(r['alpha'])}): measured accuracy "
             f"{fmt(r['accuracy'])} [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}], theory {fmt(r['theory'])} "
             f"(z = {fmt(r['z'], 1)})" for r in heb]
    give_up = optimal_accuracy_options(config).get("give_up", False)
    what = "give-up search" if give_up else "returned W"
    above = [r for r in rows if r["solver"] == config.optimal_solver and r["bound"] == "lower_bound"]
    lines += [f"- {r['solver']} {what}, d = {r['d']}, p = {r['p']} (alpha = {fmt(r['alpha'])}): "
              f"measured {fmt(r['accuracy'])} [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}] (lower bound), "
              f"replica-symmetric best accuracy {fmt(r['theory'])} "
              f"({reldiff(r['accuracy'], r['theory'])})" for r in above]
    if not above:
        lines.append(f"- {config.optimal_solver}: every trial stored all inputs at every measured load "
                     "(accuracy 1, exact)")
    lines += _adam_lines(config, rows)
    how = ("in its give-up mode (inputs whose constraints cost most are given up and the rest re-solved) "
           "it recalls a subset it verifies in float64, a lower bound on the best accuracy" if give_up else
           "it returns the squared-hinge minimiser, which does not maximise the number of recalled inputs: "
           "its accuracy is only a lower bound on the best accuracy, so it may lie far below the theory "
           "curve without contradicting it")
    return ("Theory: replica.hebbian_accuracy gives the Hebbian memory's expected recall fraction at finite d "
            "(exact in the finite-size Hebbian model); replica.variants.optimal_accuracy gives the replica-symmetric "
            "prediction of the largest accuracy any memory reaches, 1 below capacity. Measured: the mean "
            f"recall fraction over {config.accuracy_trials} instances per load, with 95% intervals. Above "
            f"capacity the optimal solver cannot store every input; {how}. Adam on the softmax "
            "cross-entropy (learning rate 1000, 4096 full-batch steps, unit-norm embeddings: the protocol "
            "of notes/ce_protocol.md) is measured on its final iterate; its theory line is the best "
            "accuracy of any memory (gaussian theory). Hebbian points nearest alpha = 1/2, the optimal "
            "points above capacity and Adam:\n\n" + "\n".join(lines))


def _adam_lines(config, rows) -> list:
    """Report lines of the Adam curves: the largest load with mean accuracy >= 0.99, and the accuracy at alpha ~ 1."""
    lines = []
    for d in config.accuracy_adam_dims:
        pts = sorted([r for r in rows if solver_spec(r["solver"]).trains_cross_entropy and r["d"] == d],
                     key=lambda r: r["alpha"])
        if not pts:
            continue
        ok = [r for r in pts if math.isfinite(r["accuracy"]) and r["accuracy"] >= 0.99]
        top = f"alpha = {fmt(ok[-1]['alpha'])}" if ok else "no measured load"
        r = _nearest(pts, 1.0)
        lines.append(f"- Adam-CE, d = {d}: mean accuracy >= 0.99 up to {top}; at alpha = {fmt(r['alpha'])} "
                     f"(p = {r['p']}) {fmt(r['accuracy'])} [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]")
    return lines


def figure_accuracy(out, config, curves, rows):
    """Figure 6 and its text: accuracy against alpha, Hebbian, optimal and Adam, with the theory curves."""
    from .. import figures

    measured = [{"d": c.d, "solver": c.solver, "points": [r for r in rows if r["d"] == c.d
                                                            and r["solver"] == c.solver]} for c in curves]
    path = figures.plot_accuracy(measured, _accuracy_theory(curves), os.path.join(out, "fig6_accuracy.png"))
    return path, _accuracy_text(config, rows)


def _outputs_theory(d, ks) -> dict:
    """Theory curves of figure 7: ``{problem: (K grid, p_c)}`` and the one-answer-per-fact p_c."""
    from replica import capacity

    grid = sorted(set(np.unique(np.geomspace(2, max(max(ks), 2 * d), 24).round().astype(int)).tolist()) | set(ks))
    curves = {prob: (grid, [capacity(d, outputs=k, problem=prob).p_c for k in grid]) for prob in ("op", "dp")}
    return {"curves": curves, "one_per_fact": capacity(d).p_c}


def figure_outputs(out, config, rows):
    """Figure 7 and its text: p_c against the number K of distinct answers, OP and DP, with theory."""
    from .. import figures

    d = config.outputs_dim
    theory = _outputs_theory(d, config.outputs_grid) if rows else {"curves": {}, "one_per_fact": math.nan}
    path = figures.plot_outputs(rows, theory, d, os.path.join(out, "fig7_outputs.png"))
    lines = [f"- {r['problem'].upper()}, K = {r['outputs']}: measured p_c = {fmt(r['p_c'], 1)} "
             f"[{fmt(r['p_c_low'], 1)}, {fmt(r['p_c_high'], 1)}], theory {fmt(r['theory_p_c'], 1)} "
             f"({reldiff(r['p_c'], r['theory_p_c'])}); {r['undecided']}/{r['trials']} trials undecided, "
             f"fit {r['status']}" for r in rows]
    text = (f"Theory (notes/many_to_one.md): with K distinct answers the OP sees W only through K vectors, "
            f"p_c E[C_K] = d min(K - 1, d), while the DP keeps d^2 weights, p_c E[C_K] = d^2; at K = 2 the OP "
            f"is Cover's perceptron (p_c = 2d = {2 * d}). One answer per fact: p_c = "
            f"{fmt(theory['one_per_fact'], 1)} (dotted). Measured with the optimal solver at d = {d}: "
            "stored is verified in float64 and not stored certified by a dual bound; undecided trials are "
            "counted and left out of the fit.\n\n" + "\n".join(lines))
    return path, text


def figure_zipf(out, config, zipf):
    """Figure 8 and its text: the Zipf error E against d, log-log, with the fitted slopes beside the theory's."""
    from .. import figures
    from ..measurements.zipf import slope_rows, slope_text

    measurements = zipf["measurements"]
    path = figures.plot_zipf(measurements, zipf["theory_curves"], os.path.join(out, "fig8_zipf_error.png"),
                             title=f"Zipf recall error, N = {config.zipf_overload:g} p_c(d), OP: "
                                   f"{config.zipf_trials} instances per point (mean ± s.e.); lines: replica.zipf_error")
    lines = []
    for row in slope_rows(measurements):
        theory = ("no theory" if row["theory"] is None else
                  f"theory {slope_text(row['theory'])} at the same d and N"
                  + (f", asymptotic {slope_text(row['asymptotic'])}" if row["asymptotic"] is not None else ""))
        lines.append(f"- a = {row['a']:g}, {row['label']}: measured slope {slope_text(row['measured'])} "
                     f"({theory})")
    ended = sum(pt["budget_ended"] for m in measurements for pt in m["points"])
    text = ("N facts with query frequencies f_mu ∝ mu^-a, each with its own output (OP); E is the query mass of the "
            "facts not recalled (float64 recall). Theory (`replica.zipf_error`, `notes/zipf.md`): the optimal "
            "memory's E falls as d^-2(a-1) (up to (2 ln N)^(a-1)), the frequency-weighted Hebbian memory's as "
            "d^-(a-1)/(2a), and the unweighted Hebbian memory's tends to 1 once it is overloaded. Points: the mean "
            "E over the instances ± its standard error; lines: the theory at the same d and N. The optimal points "
            "come from the weighted give-up search and the Adam points from training: both are **upper bounds** on "
            f"the best memory's error. {ended} solves ended on a budget (their W is measured). Least-squares slopes "
            f"of ln E against ln d at d = {', '.join(map(str, sorted(config.zipf_dims)))} (no interval):\n\n"
            + "\n".join(lines))
    return path, text
