"""Figure 1 and the collapse view (figure 1b) of the full reproduction, from its committed tables.

Reads ``experiments/reproduction/full/capacity.csv`` (one fitted p_c per estimate, with the finite-size
theory's ``theory_p_c`` and the fit status) and ``experiments/reproduction/full/success_curves.csv`` (the
counts at every load) and draws, with the functions ``validation reproduce`` uses:

* ``experiments/reproduction/full_fig1.png``: P(stored) against the load alpha = p ln p / d^2
  (:func:`validation.figures.plot_success`);
* ``experiments/reproduction/full_collapse.png``: P(stored) against p / p_c(d), p_c(d) the finite-size
  theory's capacity (:func:`validation.figures.plot_collapse`);
* ``experiments/reproduction/README.md``: the paragraph of the report that goes with the collapse view
  (:func:`validation.reproduce.sections.collapse_text`), generated from the same numbers.

No trial is run.  The tables do not hold the fitted logistic slopes, so each curve is
fitted again from its counts (:func:`validation.capacity.fit.fit_logistic`, the fit of the
run itself); the script stops if a refitted p_c or status differs from the committed one.

Usage::

    python -m experiments.reproduction.collapse [--results experiments/reproduction/full] [--out DIR]
"""

from __future__ import annotations

import csv
import math
import os

from validation import figures
from validation.capacity.fit import fit_logistic
from validation.reproduce.sections import collapse_text

from experiments.pages import write_block
from experiments.runner import run

HERE = os.path.dirname(os.path.abspath(__file__))

_COUNTS = ("trials", "stored", "not_stored", "undecided", "errors")


def _num(text):
    """A float from a CSV cell (NaN for an empty cell)."""
    return float(text) if text not in ("", None) else math.nan


def load_estimates(results):
    """The capacity estimates of ``results/capacity.csv`` with their curves, as the figures take them.

    Every estimate is a dict with the keys of ``CapacityEstimate.to_dict()`` that the
    figures read (``d, problem, solver, kappa, p_c, p_c_low, p_c_high, alpha, slope,
    status, curve, theory``).  ``not_found`` at a load is what is left of its trials
    after stored, not stored, undecided and errors (the rank-m search's lower-bound
    verdict; success_curves.csv has no column of its own for it).
    """
    with open(os.path.join(results, "capacity.csv")) as fh:
        rows = list(csv.DictReader(fh))
    with open(os.path.join(results, "success_curves.csv")) as fh:
        points = list(csv.DictReader(fh))
    estimates = []
    for r in rows:
        key = (r["problem"], r["solver"], int(r["d"]), float(r["kappa"]))
        curve = []
        for q in points:
            if (q["problem"], q["solver"], int(q["d"]), float(q["kappa"])) != key:
                continue
            c = {name: int(q[name]) for name in _COUNTS}
            c.update(p=int(q["p"]), alpha=float(q["alpha"]),
                     not_found=c["trials"] - c["stored"] - c["not_stored"] - c["undecided"] - c["errors"])
            curve.append(c)
        curve.sort(key=lambda c: c["p"])
        fit = fit_logistic([c["p"] for c in curve], [c["stored"] for c in curve],
                           [c["stored"] + c["not_stored"] + c["not_found"] for c in curve])
        p_c = _num(r["p_c"])
        if fit.status != r["status"] or not math.isclose(math.exp(fit.log_p_c), p_c, rel_tol=1e-6):
            raise SystemExit(f"refit of {key} gives p_c = {math.exp(fit.log_p_c)} ({fit.status}), the table "
                             f"{p_c} ({r['status']}): the tables and the fit do not match")
        estimates.append({"problem": key[0], "solver": key[1], "d": key[2], "kappa": key[3], "p_c": p_c,
                          "p_c_low": _num(r["p_c_low"]), "p_c_high": _num(r["p_c_high"]),
                          "alpha": _num(r["alpha"]), "alpha_low": _num(r["alpha_low"]),
                          "alpha_high": _num(r["alpha_high"]), "slope": fit.slope, "status": r["status"],
                          "undecided": int(r["undecided"]), "errors": int(r["errors"]),
                          "not_found": int(r["not_found"] or 0), "curve": curve,
                          "theory": {"p_c": _num(r["theory_p_c"]), "alpha": _num(r["theory_alpha"]),
                                     "alpha_c": _num(r["alpha_c"])}})
    return estimates


def _arguments(parser) -> None:
    parser.add_argument("--results", default=os.path.join(HERE, "full"),
                        help="folder with capacity.csv and success_curves.csv (default: experiments/reproduction/full)")


def _render(job) -> None:
    estimates = load_estimates(job.args.results)
    written = [figures.plot_success(estimates, os.path.join(HERE, "full_fig1.png")),
               figures.plot_collapse(estimates, os.path.join(HERE, "full_collapse.png"))]
    page = os.path.join(HERE, "README.md")
    write_block(page, "full_collapse", collapse_text(estimates), "collapse")
    written.append(page)
    for path in written:
        print(path)


def main(argv=None) -> int:
    """Draw the figures and the block from the committed run (``--out DIR``: into DIR instead)."""
    return run(__file__, __doc__, render=_render, argv=argv, arguments=_arguments)


if __name__ == "__main__":
    raise SystemExit(main())
