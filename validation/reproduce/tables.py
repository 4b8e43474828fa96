"""The CSV tables of ``validation reproduce`` and the number formats of its report.

One function per table; each writes its file into the output folder and returns its
path (and the rows, where the report reuses them).  See ``notes/reproduce.md``.
"""

from __future__ import annotations

import csv
import math
import os

import numpy as np

from replica.optimal import summarize_scores

from ..solvers.engine.registry import rank_solver, solver_spec

__all__ = ["write_csv", "summary_columns", "concat", "fmt", "reldiff", "trials_of", "table_capacity",
           "table_success_curves", "kappa_points", "table_alpha_kappa", "ACCURACY_COLUMNS", "accuracy_rows",
           "OUTPUTS_COLUMNS", "outputs_rows", "table_op_vs_dp", "GAP_COLUMNS", "table_op_dp_gap", "ZIPF_COLUMNS",
           "zipf_rows"]

_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def write_csv(path, rows, columns):
    """Write ``rows`` (dicts) to the CSV file ``path`` with the header ``columns``; return ``path``."""
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow(r)
    return path


def summary_columns(name, values) -> dict:
    """``{name}_mean``, ``{name}_sd`` (ddof=1) and ``{name}_q05`` ... ``{name}_q95`` of a sample (NaN if empty)."""
    keys = [f"{name}_q{int(q * 100):02d}" for q in _QUANTILES]
    if len(values) == 0:
        return {f"{name}_mean": math.nan, f"{name}_sd": math.nan, **dict.fromkeys(keys, math.nan)}
    summary = summarize_scores(values, _QUANTILES)
    return {f"{name}_mean": summary.mean, f"{name}_sd": summary.std,
            **dict(zip(keys, summary.quantiles.values()))}


def concat(records, name):
    """The arrays ``record[name]`` of ``records`` joined into one float array (empty without records)."""
    return np.concatenate([np.asarray(r[name], float) for r in records]) if records else np.zeros(0)


def fmt(x, digits=3):
    """``x`` with ``digits`` decimals, ``"nan"`` for None or a non-finite value."""
    return "nan" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def trials_of(e) -> int:
    """Trials of the capacity estimate record ``e`` (the sum over its curve)."""
    return sum(c["trials"] for c in e["curve"])


def table_capacity(out, estimates):
    """``capacity.csv``: one row per capacity estimate; returns (path, rows)."""
    rows = []
    for e in estimates:
        th = e["theory"]
        rel = (e["p_c"] - th["p_c"]) / th["p_c"] if math.isfinite(th.get("p_c", math.nan)) else math.nan
        rows.append({"problem": e["problem"], "solver": e["solver"], "ensemble": e["ensemble"], "d": e["d"],
                     "kappa": e["kappa"], "p_c": e["p_c"], "p_c_low": e["p_c_low"], "p_c_high": e["p_c_high"],
                     "alpha": e["alpha"], "alpha_low": e["alpha_low"], "alpha_high": e["alpha_high"],
                     "theory_p_c": th.get("p_c"), "theory_alpha": th.get("alpha"),
                     "alpha_c": th.get("alpha_c"), "rel_diff_p_c": rel, "status": e["status"],
                     "undecided": e["undecided"], "errors": e["errors"], "trials": trials_of(e),
                     "not_found": e.get("not_found", 0), "wall_s": e.get("wall_s", math.nan),
                     "generator": e.get("generator")})
    path = write_csv(os.path.join(out, "capacity.csv"), rows, list(rows[0]) if rows else [])
    return path, rows


def table_success_curves(out, estimates):
    """``success_curves.csv``: the counts of every grid point of every estimate."""
    rows = [{"problem": e["problem"], "solver": e["solver"], "d": e["d"], "kappa": e["kappa"], **c}
            for e in estimates for c in e["curve"]]
    return write_csv(os.path.join(out, "success_curves.csv"), rows,
                     ["problem", "solver", "d", "kappa", "p", "alpha", "trials", "stored", "not_stored",
                      "undecided", "errors"])


def reldiff(measured, theory):
    """``measured`` relative to ``theory`` as a signed percentage, or ``"no theory value"``."""
    if theory is None or not (math.isfinite(measured) and math.isfinite(theory)):
        return "no theory value"
    return f"{100 * (measured - theory) / theory:+.1f}%"


def kappa_points(config, estimates) -> list:
    """Rows of the rank-constrained estimates (OP, optimal, d = ``kappa_dim``)."""
    points = []
    for e in estimates:
        if e["solver"] == rank_solver() and e["d"] == config.kappa_dim and e["problem"] == "op":
            th = e["theory"]
            points.append({"kappa": e["kappa"], "d": e["d"], "alpha": e["alpha"], "alpha_low": e["alpha_low"],
                           "alpha_high": e["alpha_high"],
                           "theory_alpha": th["alpha"], "alpha_c": th["alpha_c"], "status": e["status"],
                           "undecided": e["undecided"], "trials": trials_of(e),
                           "not_found": e.get("not_found", 0)})
    return points


def table_alpha_kappa(out, points):
    """``alpha_kappa.csv``: the rank-constrained estimates."""
    return write_csv(os.path.join(out, "alpha_kappa.csv"), points,
                     ["kappa", "d", "alpha", "alpha_low", "alpha_high", "theory_alpha", "alpha_c", "status",
                      "undecided", "trials", "not_found"])


ACCURACY_COLUMNS = ("d", "problem", "solver", "ensemble", "kappa", "p", "alpha", "trials", "errors", "stored",
                    "accuracy", "stderr", "ci_low", "ci_high", "theory", "theory_stderr", "z", "bound", "status")


def accuracy_rows(curves) -> list:
    """One row per accuracy point (floats, NaN kept) with the curve's d, problem, solver, ensemble, kappa."""
    return [{"d": c.d, "problem": c.problem, "solver": c.solver, "ensemble": c.ensemble, "kappa": c.kappa,
             **{k: getattr(pt, k) for k in ACCURACY_COLUMNS[5:]}} for c in curves for pt in c.points]


OUTPUTS_COLUMNS = ("problem", "solver", "d", "outputs", "p_c", "p_c_low", "p_c_high", "theory_p_c",
                   "rel_diff_p_c", "status", "undecided", "errors", "trials")


def outputs_rows(outputs) -> list:
    """One row per estimate with ``K`` distinct answers (floats, NaN kept)."""
    rows = []
    for e in outputs:
        th = e["theory"].get("p_c", math.nan)
        rows.append({**{k: e[k] for k in ("problem", "solver", "d", "outputs", "p_c", "p_c_low", "p_c_high",
                                          "status", "undecided", "errors")},
                     "theory_p_c": th, "rel_diff_p_c": (e["p_c"] - th) / th if math.isfinite(th) else math.nan,
                     "trials": trials_of(e)})
    return rows


ZIPF_COLUMNS = ("a", "d", "N", "problem", "solver", "bound", "error", "stderr", "trials", "failures", "budget_ended",
                "recalled", "theory", "theory_stderr", "status")


def zipf_rows(measurements) -> list:
    """One row per (a, d, solver) of the Zipf measurements (``ZipfMeasurement.to_dict()`` dicts)."""
    return [{"a": m["a"], "d": m["d"], "N": m["N"], "problem": m["problem"], **pt}
            for m in measurements for pt in m["points"]]


_OP_VS_DP_SCORES = ("target_mean", "target_sd", "target_q05", "target_q50", "target_q95", "top_competitor_mean",
                    "gap_q05", "gap_q50")


def table_op_vs_dp(out, config, estimates, moment_rows, score_rows):
    """``op_vs_dp.csv``: capacity, spectrum and scores of OP and DP at ``spectra_dim``; returns (path, rows)."""
    rows = []
    for problem in ("op", "dp"):
        e = next((e for e in estimates if e["problem"] == problem and e["solver"] == config.optimal_solver
                  and e["d"] == config.spectra_dim and e["kappa"] == 1.0), {})
        m = next((r for r in moment_rows if r["problem"] == problem and r["kappa"] == 1.0
                  and not solver_spec(r["solver"]).is_hebbian), {})
        s = next((r for r in score_rows if r["problem"] == problem and not solver_spec(r["solver"]).is_hebbian), {})
        rows.append({"problem": problem.upper(),
                     **{k: e.get(k, math.nan) for k in ("p_c", "p_c_low", "p_c_high", "alpha")},
                     "sv_m4": m.get("sv_m4", math.nan), "sv_max": m.get("sv_max", math.nan),
                     **{k: s.get(k, math.nan) for k in _OP_VS_DP_SCORES}})
    return write_csv(os.path.join(out, "op_vs_dp.csv"), rows, list(rows[0])), rows


GAP_COLUMNS = ("d", "op_p_c", "op_p_c_low", "op_p_c_high", "dp_p_c", "dp_p_c_low", "dp_p_c_high", "theory_p_c",
               "op_minus_dp", "op_trials", "dp_trials", "undecided", "op_status", "dp_status")


def table_op_dp_gap(out, config, cap_rows):
    """``op_dp_gap.csv``: full-rank OP and DP p_c side by side at every d with both; returns (path, rows)."""
    by = {(r["problem"], r["d"]): r for r in cap_rows
          if r["solver"] == config.optimal_solver and r["kappa"] == 1.0}
    rows = []
    for d in sorted({d for (_, d) in by}):
        op, dp = by.get(("op", d)), by.get(("dp", d))
        if op is None or dp is None:
            continue
        rows.append({"d": d, **{f"op_{k}": op[k] for k in ("p_c", "p_c_low", "p_c_high")},
                     **{f"dp_{k}": dp[k] for k in ("p_c", "p_c_low", "p_c_high")},
                     "theory_p_c": op["theory_p_c"], "op_minus_dp": (op["p_c"] - dp["p_c"]) / dp["p_c"],
                     "op_trials": op["trials"], "dp_trials": dp["trials"],
                     "undecided": op["undecided"] + dp["undecided"], "op_status": op["status"],
                     "dp_status": dp["status"]})
    return write_csv(os.path.join(out, "op_dp_gap.csv"), rows, list(GAP_COLUMNS)), rows

