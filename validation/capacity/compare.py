"""The table "theory against simulation": measured p_c of :data:`TABLE_ROWS` beside the finite-size theory.

``validation compare`` measures the rows and prints the table (``notes/capacity_estimation.md``).
"""

from __future__ import annotations

import math

from ..solvers.engine.registry import solver_spec
from .results import CapacityEstimate

__all__ = ["TABLE_ROWS", "comparison_row", "comparison_markdown"]


#: Rows of the comparison table: (problem, solver, d, kappa, ensemble).
TABLE_ROWS = tuple([(prob, "optimal", d, 1.0, "gaussian") for d in (16, 32, 64) for prob in ("op", "dp")]
                   + [("op", "optimal", 32, k, "gaussian") for k in (0.25, 0.5)]
                   + [("op", "hebbian", d, 1.0, "gaussian") for d in (32, 64, 128)])


def comparison_row(est: CapacityEstimate) -> dict:
    """One row of the theory-against-simulation table from a capacity estimate."""
    th = est.theory
    th_p = th.get("p_c", math.nan)
    th_a = th.get("alpha", math.nan)
    rel = (est.p_c - th_p) / th_p if math.isfinite(th_p) else math.nan
    inside = bool(est.p_c_low <= th_p <= est.p_c_high) if math.isfinite(th_p) else False
    label = f"{solver_spec(est.solver).label} {est.problem.upper()}"
    if est.kappa != 1.0:
        label += f" kappa={est.kappa:g}"
    return {"memory": label, "problem": est.problem, "solver": est.solver, "ensemble": est.ensemble,
            "d": est.d, "kappa": est.kappa, "p_c": est.p_c, "p_c_low": est.p_c_low, "p_c_high": est.p_c_high,
            "theory_p_c": th_p, "rel_diff": rel, "theory_inside_ci": inside, "alpha": est.alpha,
            "alpha_low": est.alpha_low, "alpha_high": est.alpha_high, "theory_alpha": th_a,
            "alpha_c": th.get("alpha_c", math.nan), "trials": sum(c.trials for c in est.curve),
            "undecided": est.undecided, "errors": est.errors, "status": est.status, "seconds": est.seconds}


def comparison_markdown(rows) -> str:
    """Markdown of the comparison table from :func:`comparison_row` dicts."""
    def f(x, digits):
        return "nan" if not math.isfinite(x) else f"{x:.{digits}f}"

    out = ["| memory | d | measured p_c [95% CI] | theory p_c | rel. diff | alpha measured | alpha theory |"
           " trials (undecided) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['memory']} | {r['d']} | {f(r['p_c'], 1)} [{f(r['p_c_low'], 1)}, {f(r['p_c_high'], 1)}] | "
                   f"{f(r['theory_p_c'], 1)} | {f(100 * r['rel_diff'], 1)}% | {f(r['alpha'], 3)} | "
                   f"{f(r['theory_alpha'], 3)} | {r['trials']} ({r['undecided']}) |")
    return "\n".join(out) + "\n"
