"""``validation reproduce``: every theory-against-simulation figure, CSV tables and report.md.

The run is a list of experiments; every trial goes through :func:`validation.sweep.run_tasks`
into one :class:`~validation.store.ResultStore` in the output folder, so an
interrupted run started again recomputes nothing that finished.

1. capacity estimates (``validation.capacity.estimate_capacity``) for OP and DP with
   the optimal solver, the Hebbian rule, and rank-constrained optimal memories;
2. measurements near capacity (singular values, scores in competitor-std units) of
   optimal memories (full rank and rank kappa, OP and DP) and Hebbian memories.

From those, :mod:`validation.figures` draws the five figures and :func:`write_report`
writes ``report.md`` whose text is generated from the numbers.

See ``notes/reproduce.md`` for the configurations, runtimes and sizes.
"""

from __future__ import annotations

import csv
import math
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from .capacity import estimate_capacity, load, theory_capacity
from .store import ResultStore
from .sweep import Task, run_tasks, task_seed

__all__ = ["ReproduceConfig", "QUICK", "FULL", "reproduce", "measurement_trial", "ReproduceResult"]


@dataclass(frozen=True)
class ReproduceConfig:
    """What a reproduce run measures.

    Attributes
    ----------
    name : str
    optimal_solver : str
        Solver used for "optimal" memories (``optimal``; ``lp`` is the exact reference).
    optimal_dims : tuple of int
        d of the OP/DP full-rank capacity estimates.
    hebbian_dims : tuple of int
        d of the Hebbian capacity estimates.
    hebbian_ensemble : str
    kappa_dim : int
        d of the rank-constrained estimates.
    kappas : tuple of float
        Rank fractions (< 1) estimated at ``kappa_dim``.
    trials, rounds, initial_points : int
        Passed to :func:`~validation.capacity.estimate_capacity`.
    spectra_dim : int
        d of the spectra / score measurements (and of the OP-vs-DP comparison).
    spectra_instances : int
        Instances per spectra / score configuration.
    spectra_kappa : float
        Rank fraction of the rank-constrained spectrum.
    theory_dims : tuple of int
        d of the finite-size theory curve in figure 2.
    seed : int
    time_limit : float
        Wall-time budget (s) of one optimal solve; a solve that runs out is ``undecided``.
    """

    name: str
    optimal_solver: str
    optimal_dims: tuple
    hebbian_dims: tuple
    hebbian_ensemble: str
    kappa_dim: int
    kappas: tuple
    trials: int
    rounds: int
    initial_points: int
    spectra_dim: int
    spectra_instances: int
    spectra_kappa: float
    theory_dims: tuple
    seed: int = 2026
    time_limit: float = 60.0

    def to_dict(self) -> dict:
        return asdict(self)


QUICK = ReproduceConfig(name="quick", optimal_solver="optimal", optimal_dims=(8, 12, 16),
                        hebbian_dims=(8, 16, 32), hebbian_ensemble="gaussian", kappa_dim=12,
                        kappas=(0.5,), trials=8, rounds=1, initial_points=4, spectra_dim=16,
                        spectra_instances=3, spectra_kappa=0.5, theory_dims=(8, 12, 16, 24, 32, 64, 128, 256),
                        time_limit=10.0)
FULL = ReproduceConfig(name="full", optimal_solver="optimal", optimal_dims=(16, 24, 32, 48, 64),
                       hebbian_dims=(16, 32, 64, 128), hebbian_ensemble="gaussian", kappa_dim=32,
                       kappas=(0.25, 0.5, 0.75), trials=40, rounds=2, initial_points=5, spectra_dim=64,
                       spectra_instances=10, spectra_kappa=0.5,
                       theory_dims=(16, 24, 32, 48, 64, 96, 128, 256, 512, 1024))


# ---------------------------------------------------------------------------------
# Measurement task
# ---------------------------------------------------------------------------------
def _memory_matrix(solution):
    if solution.W is not None:
        return np.asarray(solution.W, float)
    q, r = solution.factors
    return np.asarray(q, float) @ np.asarray(r, float).T


def measurement_trial(task: Task) -> dict:
    """Solve one instance and measure its singular values and scores.

    Scores are in competitor standard deviations, ``S / (||W||_F / d)``; singular
    values in the units of ``replica.spectra.spectrum(kappa)`` (the ``round(kappa d)``
    largest, times ``sqrt(F(kappa)) sqrt(d) / ||W||_F``).  At most ``max_competitors``
    (option, default 3000) competitor scores are kept, uniformly sampled.
    """
    from . import make_instance, solve
    from .solvers import solve_arguments

    opts = dict(task.options)
    max_comp = int(opts.pop("max_competitors", 3000))
    seed = task_seed(task.seed, task.p, task.trial)
    inst = make_instance(task.d, task.p, problem=task.problem, ensemble=task.ensemble, seed=seed)
    sol = solve(inst, solver=task.solver, kappa=task.kappa, **solve_arguments(opts))
    status = sol.status if not (sol.status == "stored" and not sol.stored) else "undecided"
    base = {"status": status, "stored": bool(sol.stored) if status != "undecided" else None,
            "instance_seed": seed, "margin": float(sol.margin), "converged": bool(sol.converged),
            "iterations": int(sol.iterations), "seconds": float(sol.seconds), "rank": int(sol.rank)}
    w = _memory_matrix(sol)
    fro = float(np.linalg.norm(w))
    if not fro > 0:  # e.g. an infeasibility certificate without a memory: nothing to measure
        return {**base, "singular_values": [], "targets": [], "top_competitors": [], "competitors": [],
                "note": "solver returned W = 0"}
    sv = np.linalg.svd(w, compute_uv=False)
    try:
        from replica.spectra import normalized_singular_values

        sv_norm = normalized_singular_values(sv, task.kappa)
    except ImportError:  # pragma: no cover - theory module missing
        sv_norm = sv * math.sqrt(task.d) / fro
    scores = np.asarray(inst.scores(w), float) / (fro / task.d)
    p = task.p
    targets = np.diag(scores).copy()
    masked = scores.copy()
    np.fill_diagonal(masked, -np.inf)
    top = masked.max(axis=0)
    off = scores[~np.eye(p, dtype=bool)]
    rng = np.random.default_rng(seed)
    comp = off if off.size <= max_comp else rng.choice(off, size=max_comp, replace=False)
    return {**base, "singular_values": sv_norm.tolist(), "targets": targets.tolist(), "top_competitors": top.tolist(),
            "competitors": comp.tolist()}


# ---------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReproduceResult:
    """Paths written by :func:`reproduce` and the run's statistics."""

    out: str
    report: str
    figures: tuple
    tables: tuple
    seconds: float
    trials_run: int
    config: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _say(progress_stream, text):
    if progress_stream is not None:
        progress_stream.write(text + "\n")
        progress_stream.flush()


def reproduce(out, config: ReproduceConfig = QUICK, executor=None, progress=None, log=None) -> ReproduceResult:
    """Run every experiment of ``config``, then write figures, tables and ``report.md`` to ``out``.

    Parameters
    ----------
    out : str
        Output folder (holds ``results.sqlite``; rerunning reuses finished trials).
    config : ReproduceConfig
    executor : optional
        From :func:`validation.sweep.make_executor`; ``None`` runs serially.
    progress : bool, optional
        Progress bars on stderr.
    log : file-like, optional
        Where one-line stage messages go (e.g. ``sys.stderr``).

    Returns
    -------
    ReproduceResult
    """
    from . import figures

    start = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    store = ResultStore(out)
    estimates = []
    trials_run = 0
    runs = [(prob, config.optimal_solver, d, 1.0) for d in config.optimal_dims for prob in ("op", "dp")]
    runs += [("op", "hebbian", d, 1.0) for d in config.hebbian_dims]
    # rank constraints need the projected-gradient solver (the LP is full rank only)
    runs += [("op", "optimal", config.kappa_dim, k) for k in config.kappas]
    if config.kappa_dim not in config.optimal_dims or config.optimal_solver != "optimal":
        runs += [("op", "optimal", config.kappa_dim, 1.0)]
    for problem, solver, d, kappa in runs:
        ensemble = config.hebbian_ensemble if solver == "hebbian" else "gaussian"
        _say(log, f"capacity: {problem} {solver} d={d} kappa={kappa:g}")
        # storability only: no max-margin refinement after "stored"
        opts = {"refine": False, "time_limit": config.time_limit} if solver == "optimal" else {}
        est = estimate_capacity(d, problem, solver, kappa, ensemble, trials=config.trials, seed=config.seed,
                                rounds=config.rounds, initial_points=config.initial_points,
                                executor=executor, store=store, progress=progress, solver_options=opts)
        trials_run += sum(c.trials for c in est.curve)
        estimates.append(est.to_dict())

    # measurements near capacity at spectra_dim
    dm = config.spectra_dim
    by_key = {(e["problem"], e["solver"], e["d"], e["kappa"]): e for e in estimates}

    def p_near(problem, solver, kappa):
        est = by_key.get((problem, solver, dm, kappa))
        if est is not None and math.isfinite(est["p_c"]):
            return max(2, int(round(est["p_c"])))
        th = theory_capacity(dm, solver, kappa, "gaussian")["p_c"]
        return max(2, int(round(th)))

    meas_specs = []
    for problem in ("op", "dp"):
        for kappa in (1.0, config.spectra_kappa):
            solver = config.optimal_solver if kappa == 1.0 else "optimal"
            meas_specs.append((problem, solver, kappa, "gaussian", p_near(problem, solver, kappa)))
    p_opt = meas_specs[0][4]
    # Hebbian memories at the same p as the optimal OP one (same load), and at its own capacity
    meas_specs.append(("op", "hebbian", 1.0, config.hebbian_ensemble, p_opt))
    tasks = [Task("validation.reproduce:measurement_trial", "measure", prob, solver, ens, dm, p, kappa,
                  config.seed, t, (("time_limit", config.time_limit),) if solver == "optimal" else ())
             for prob, solver, kappa, ens, p in meas_specs
             for t in range(config.spectra_instances)]
    _say(log, f"measurements at d={dm}: {len(tasks)} solves")
    rep = run_tasks(tasks, store, executor, progress=progress, desc=f"spectra/scores d={dm}")
    trials_run += len(tasks)
    measurements = {}
    for t in tasks:
        rec = rep.records[t]
        if rec.get("status") == "error":
            continue
        measurements.setdefault((t.problem, t.solver, t.kappa, t.p), []).append(rec)

    _say(log, "theory curves")
    theory = _theory_curves(config)
    _say(log, "figures and report")
    result = write_outputs(out, config, estimates, meas_specs, measurements, theory)
    store.close()
    return ReproduceResult(out, result["report"], tuple(result["figures"]), tuple(result["tables"]),
                           time.perf_counter() - start, trials_run, config.to_dict())


def _theory_curves(config):
    curves = {"optimal": [], "hebbian": []}
    for d in config.theory_dims:
        th = theory_capacity(d, "optimal", 1.0)
        curves["optimal"].append({"d": d, "p_c": th["p_c"], "alpha": th["alpha"]})
        th = theory_capacity(d, "hebbian", 1.0, config.hebbian_ensemble)
        curves["hebbian"].append({"d": d, "p_c": th["p_c"], "alpha": th["alpha"]})
    kappa = np.linspace(0.01, 1.0, 100)
    from replica.quarter_circle import alpha_c

    kappa_curve = {"kappa": kappa.tolist(), "alpha_c": [float(alpha_c(k)) for k in kappa],
                   "dof": (0.5 * (2 * kappa - kappa ** 2)).tolist()}
    return {"alpha_d": curves, "kappa": kappa_curve}


# ---------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------
def _write_csv(path, rows, columns):
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow(r)
    return path


def _summary(values, quantiles=(0.05, 0.25, 0.5, 0.75, 0.95)):
    v = np.asarray(values, float)
    if v.size == 0:
        return {"n": 0, "mean": math.nan, "sd": math.nan, **{f"q{int(q * 100):02d}": math.nan for q in quantiles}}
    out = {"n": int(v.size), "mean": float(v.mean()), "sd": float(v.std(ddof=1)) if v.size > 1 else 0.0}
    for q in quantiles:
        out[f"q{int(q * 100):02d}"] = float(np.quantile(v, q))
    return out


def _cat(records, name):
    return np.concatenate([np.asarray(r[name], float) for r in records]) if records else np.zeros(0)


def _fmt(x, digits=3):
    return "nan" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def write_outputs(out, config, estimates, meas_specs, measurements, theory):
    """Draw the figures, write the CSV tables and ``report.md``; return their paths."""
    from . import figures

    figs, tables = [], []
    text = {}
    # -- tables ---------------------------------------------------------------------
    cap_rows = []
    for e in estimates:
        th = e["theory"]
        rel = (e["p_c"] - th["p_c"]) / th["p_c"] if math.isfinite(th.get("p_c", math.nan)) else math.nan
        cap_rows.append({"problem": e["problem"], "solver": e["solver"], "ensemble": e["ensemble"], "d": e["d"],
                         "kappa": e["kappa"], "p_c": e["p_c"], "p_c_low": e["p_c_low"], "p_c_high": e["p_c_high"],
                         "alpha": e["alpha"], "alpha_low": e["alpha_low"], "alpha_high": e["alpha_high"],
                         "theory_p_c": th.get("p_c"), "theory_alpha": th.get("alpha"),
                         "alpha_c": th.get("alpha_c"), "rel_diff_p_c": rel, "status": e["status"],
                         "undecided": e["undecided"], "errors": e["errors"],
                         "trials": sum(c["trials"] for c in e["curve"])})
    cap_cols = list(cap_rows[0]) if cap_rows else []
    tables.append(_write_csv(os.path.join(out, "capacity.csv"), cap_rows, cap_cols))
    curve_rows = [{"problem": e["problem"], "solver": e["solver"], "d": e["d"], "kappa": e["kappa"], **c}
                  for e in estimates for c in e["curve"]]
    tables.append(_write_csv(os.path.join(out, "success_curves.csv"), curve_rows,
                             ["problem", "solver", "d", "kappa", "p", "alpha", "trials", "stored", "not_stored",
                              "undecided", "errors"]))

    # -- figure 1 -------------------------------------------------------------------
    figs.append(figures.plot_success(estimates, os.path.join(out, "fig1_success_probability.png")))
    lines = []
    for e in sorted(estimates, key=lambda e: (e["solver"] == "hebbian", e["problem"], e["d"])):
        if e["kappa"] != 1.0:
            continue
        th = e["theory"]
        lines.append(f"- {e['solver']} {e['problem'].upper()}, d = {e['d']}: measured alpha = "
                     f"{_fmt(e['alpha'])} [{_fmt(e['alpha_low'])}, {_fmt(e['alpha_high'])}], finite-size theory "
                     f"{_fmt(th.get('alpha', math.nan))} ({_reldiff(e['alpha'], th.get('alpha'))})")
    text["fig1"] = ("Theory: the optimal memory's capacity tends to alpha_c = 1/2 and the Hebbian rule's to 1/8 "
                    "as d grows; at finite d the finite-size theory (dashed) predicts p_c(d). "
                    "Measured (95% profile-likelihood intervals):\n\n" + "\n".join(lines))

    # -- figure 2 -------------------------------------------------------------------
    figs.append(figures.plot_alpha_vs_d(estimates, theory["alpha_d"], os.path.join(out, "fig2_alpha_vs_d.png")))
    inside = [e for e in estimates if e["kappa"] == 1.0 and math.isfinite(e["theory"].get("p_c", math.nan))]
    n_in = sum(1 for e in inside if e["p_c_low"] <= e["theory"]["p_c"] <= e["p_c_high"])
    opt = [e for e in inside if e["solver"] != "hebbian"]
    trend = ""
    if len(opt) >= 2:
        opt_op = sorted([e for e in opt if e["problem"] == "op"], key=lambda e: e["d"])
        if len(opt_op) >= 2:
            trend = (f" The measured OP alpha goes from {_fmt(opt_op[0]['alpha'])} at d = {opt_op[0]['d']} to "
                     f"{_fmt(opt_op[-1]['alpha'])} at d = {opt_op[-1]['d']}.")
    dmax = max(q["d"] for q in theory["alpha_d"]["optimal"])
    th_big = [q for q in theory["alpha_d"]["optimal"] if q["d"] == dmax][0]
    text["fig2"] = (f"Theory: alpha(d) decreases towards 1/2 (optimal) with corrections of order ln ln p / ln p; "
                    f"the finite-size theory gives alpha = {_fmt(th_big['alpha'])} even at d = {dmax}. "
                    f"Measured: the theory p_c lies inside the 95% interval for {n_in} of {len(inside)} "
                    f"full-rank estimates.{trend}")

    # -- figure 3 -------------------------------------------------------------------
    kpoints = []
    for e in estimates:
        if e["solver"] == "optimal" and e["d"] == config.kappa_dim and e["problem"] == "op":
            th = e["theory"]
            kpoints.append({"kappa": e["kappa"], "d": e["d"], "alpha": e["alpha"], "alpha_low": e["alpha_low"],
                            "alpha_high": e["alpha_high"], "theory_alpha": th["alpha"], "alpha_c": th["alpha_c"],
                            "status": e["status"], "undecided": e["undecided"],
                            "trials": sum(c["trials"] for c in e["curve"])})
    figs.append(figures.plot_alpha_kappa(theory["kappa"], kpoints, os.path.join(out, "fig3_alpha_kappa.png")))
    tables.append(_write_csv(os.path.join(out, "alpha_kappa.csv"), kpoints,
                             ["kappa", "d", "alpha", "alpha_low", "alpha_high", "theory_alpha", "alpha_c", "status",
                              "undecided", "trials"]))
    klines = []
    for q in sorted(kpoints, key=lambda q: q["kappa"]):
        corr = q["alpha"] * q["alpha_c"] / q["theory_alpha"]
        dof = 0.5 * (2 * q["kappa"] - q["kappa"] ** 2)
        klines.append(f"- kappa = {q['kappa']:g}: measured alpha = {_fmt(q['alpha'])} vs finite-size theory "
                      f"{_fmt(q['theory_alpha'])} ({_reldiff(q['alpha'], q['theory_alpha'])}); corrected "
                      f"{_fmt(corr)} vs alpha_c = F/2 = {_fmt(q['alpha_c'])} (degree-of-freedom count {_fmt(dof)}); "
                      f"fit status {q['status']}, {q['undecided']}/{q['trials']} trials undecided")
    text["fig3"] = ("Theory: alpha_c(kappa) = F(kappa)/2 with F the tail second moment of the quarter circle; the "
                    "finite-size equation p_c E[C_p] = F(kappa) d^2 is a conjecture. Corrected point = measured alpha "
                    f"x alpha_c(kappa) / finite-size alpha(d = {config.kappa_dim}, kappa).\n\n" + "\n".join(klines))

    # -- figures 4 and 5 + OP vs DP table --------------------------------------------
    from replica.spectra import hebbian_spectrum, spectrum

    dm = config.spectra_dim
    spec_panels, moment_rows = [], []
    for problem, solver, kappa, ens, p in meas_specs:
        recs = measurements.get((problem, solver, kappa, p), [])
        sv = _cat(recs, "singular_values")
        if solver == "hebbian":
            law = hebbian_spectrum(p / dm)
            pdf, lab, sup = law.pdf, f"finite-ratio theory c = p/d = {p / dm:.1f}", (law.lower, law.upper)
        else:
            law = spectrum(kappa)
            lab = "quarter circle" if kappa == 1.0 else f"quarter circle truncated to [{law.support()[0]:.2f}, 2]"
            pdf, sup = law.pdf, tuple(law.support())
        n_stored = sum(1 for r in recs if r.get("stored"))
        spec_panels.append({"title": f"{solver} {problem.upper()} kappa={kappa:g}, d={dm}, p={p} "
                                     f"({n_stored}/{len(recs)} stored)",
                            "values": sv, "pdf": pdf, "pdf_label": lab, "support": sup})
        m2 = float(np.mean(sv ** 2)) if sv.size else math.nan
        m4 = float(np.mean(sv ** 4)) if sv.size else math.nan
        moment_rows.append({"problem": problem, "solver": solver, "kappa": kappa, "d": dm, "p": p,
                            "instances": len(recs), "stored": n_stored, "sv_m2": m2, "sv_m4": m4,
                            "sv_m2_theory": float(law.moment(2)), "sv_m4_theory": float(law.moment(4)),
                            "sv_max": float(sv.max()) if sv.size else math.nan})
    figs.append(figures.plot_spectra(spec_panels, os.path.join(out, "fig4_spectra.png")))
    tables.append(_write_csv(os.path.join(out, "spectra_moments.csv"), moment_rows, list(moment_rows[0])))
    text["fig4"] = ("Theory: at capacity the optimal memory's singular values follow the quarter circle "
                    "(second moment 1, fourth moment 2) and the rank-constrained one the truncated quarter "
                    "circle; the Hebbian memory follows the finite-ratio product law (fourth moment 2 + d/p). "
                    "Measured fourth moments:\n\n" + "\n".join(
                        f"- {r['solver']} {r['problem'].upper()} kappa = {r['kappa']:g}, p = {r['p']}: "
                        f"m4 = {_fmt(r['sv_m4'])} (theory {_fmt(r['sv_m4_theory'])}), "
                        f"largest value {_fmt(r['sv_max'])} (edge 2)" for r in moment_rows))

    # scores
    score_rows = []
    score_panels = []
    for problem, solver, kappa, ens, p in meas_specs:
        if kappa != 1.0:
            continue
        recs = measurements.get((problem, solver, kappa, p), [])
        tg, top, comp = _cat(recs, "targets"), _cat(recs, "top_competitors"), _cat(recs, "competitors")
        gap = tg - top
        row = {"problem": problem, "solver": solver, "d": dm, "p": p, "instances": len(recs)}
        for name, vals in (("target", tg), ("top_competitor", top), ("gap", gap), ("competitor", comp)):
            for k, v in _summary(vals).items():
                if k != "n":
                    row[f"{name}_{k}"] = v
        water = pred_target = math.nan
        if solver != "hebbian":
            try:
                from replica.scores import optimal_score_laws

                laws = optimal_score_laws(p, size=20000)
                water, pred_target = laws.water_level.mean, laws.target.mean
            except Exception:  # noqa: BLE001 - theory optional here
                pass
        else:
            try:
                from replica.hebbian import hebbian_score_moments

                mom = hebbian_score_moments(dm, p, ens)
                pred_target = float(mom.standardized_target_mean)  # competitor-std units
            except Exception:  # noqa: BLE001
                pass
        row["sqrt_2_ln_p"] = math.sqrt(2 * math.log(p))
        row["predicted_water_level"] = water
        row["predicted_target_mean"] = pred_target
        score_rows.append(row)
        lines_ = [(math.sqrt(2 * math.log(p)), "sqrt(2 ln p)", ":")]
        if math.isfinite(water):
            lines_.append((water, "predicted water level L*", "--"))
        if solver == "hebbian" and math.isfinite(pred_target):
            lines_.append((pred_target, "predicted target mean", "-."))
        score_panels.append({"title": f"{solver} {problem.upper()}, d={dm}, p={p} ({len(recs)} instances)",
                             "targets": tg, "top_competitors": top, "competitors": comp, "lines": lines_})
    # put the OP optimal and the Hebbian panels first
    figs.append(figures.plot_scores(score_panels, os.path.join(out, "fig5_scores.png")))
    score_cols = list(score_rows[0]) if score_rows else []
    tables.append(_write_csv(os.path.join(out, "score_summary.csv"), score_rows, score_cols))
    slines = []
    for r in score_rows:
        slines.append(f"- {r['solver']} {r['problem'].upper()} (p = {r['p']}): target mean {_fmt(r['target_mean'])}, "
                      f"sd {_fmt(r['target_sd'])}; largest competitor mean {_fmt(r['top_competitor_mean'])}; "
                      f"competitor sd {_fmt(r['competitor_sd'])} (1 if W e_mu has its average norm); "
                      f"sqrt(2 ln p) = {_fmt(r['sqrt_2_ln_p'])}; predicted water level {_fmt(r['predicted_water_level'])}"
                      + (f", predicted target mean {_fmt(r['predicted_target_mean'])}"
                         if math.isfinite(r["predicted_target_mean"]) else ""))
    text["fig5"] = ("Theory: the optimal memory lifts every target just above the slightly pushed-down top "
                    "competitors, at the water level L*, with a small spread; the Hebbian targets are spread with "
                    "about unit standard deviation (in competitor units) around the predicted mean. Scores in competitor standard deviations "
                    "(score / (||W||_F/d)):\n\n" + "\n".join(slines))

    # OP vs DP comparison at spectra_dim
    cmp_rows = []
    for problem in ("op", "dp"):
        e = next((e for e in estimates if e["problem"] == problem and e["solver"] == config.optimal_solver
                  and e["d"] == dm and e["kappa"] == 1.0), None)
        m = next((r for r in moment_rows if r["problem"] == problem and r["kappa"] == 1.0
                  and r["solver"] != "hebbian"), {})
        s = next((r for r in score_rows if r["problem"] == problem and r["solver"] != "hebbian"), {})
        cmp_rows.append({"problem": problem.upper(), "p_c": e["p_c"] if e else math.nan,
                         "p_c_low": e["p_c_low"] if e else math.nan, "p_c_high": e["p_c_high"] if e else math.nan,
                         "alpha": e["alpha"] if e else math.nan, "sv_m4": m.get("sv_m4", math.nan),
                         "sv_max": m.get("sv_max", math.nan),
                         **{k: s.get(k, math.nan) for k in ("target_mean", "target_sd", "target_q05", "target_q50",
                                                            "target_q95", "top_competitor_mean", "gap_q05",
                                                            "gap_q50")}})
    tables.append(_write_csv(os.path.join(out, "op_vs_dp.csv"), cmp_rows, list(cmp_rows[0])))
    report = _write_report(out, config, figs, text, cmp_rows, cap_rows)
    return {"figures": figs, "tables": tables, "report": report}


def _reldiff(measured, theory):
    if theory is None or not (math.isfinite(measured) and math.isfinite(theory)):
        return "no theory value"
    return f"{100 * (measured - theory) / theory:+.1f}%"


def _md_table(rows, columns, digits=3):
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = ""
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            cells.append(_fmt(v, digits) if isinstance(v, float) else str(v))
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


def _write_report(out, config, figs, text, cmp_rows, cap_rows):
    path = os.path.join(out, "report.md")
    names = {"fig1": "Success probability against load", "fig2": "Capacity against 1/ln p",
             "fig3": "Rank-constrained capacity alpha_c(kappa)", "fig4": "Singular-value spectra",
             "fig5": "Score distributions, optimal against Hebbian"}
    with open(path, "w") as fh:
        fh.write(f"# Theory against simulation ({config.name} run)\n\n")
        fh.write(f"Generated by `validation reproduce{' --quick' if config.name == 'quick' else ''}`; "
                 f"seed {config.seed}; {config.trials} trials per grid point and round; optimal solver "
                 f"`{config.optimal_solver}`; every trial is in `results.sqlite` "
                 "(`validation export --out DIR --format csv`).\n\n")
        for i, (key, fig) in enumerate(zip(names, figs), start=1):
            fh.write(f"## {i}. {names[key]}\n\n![{names[key]}]({os.path.basename(fig)})\n\n{text[key]}\n\n")
        fh.write(f"## OP against DP at d = {config.spectra_dim} near capacity\n\n")
        fh.write(_md_table(cmp_rows, list(cmp_rows[0])) + "\n")
        fh.write("## All capacity estimates\n\n")
        fh.write(_md_table(cap_rows, ["problem", "solver", "d", "kappa", "p_c", "p_c_low", "p_c_high",
                                      "theory_p_c", "rel_diff_p_c", "alpha", "theory_alpha", "status",
                                      "undecided", "errors", "trials"]) + "\n")
    return path
