"""The scoreboard: every model of every quantity of ``replica`` against the certified measurements.

Measurement first: :mod:`experiments.scoreboard.measurements` reads the committed data of
the experiments (never a page) into certified measured points, each of one quantity of
the theory registry (``replica.common.registry``).  Every model of that quantity that can
be evaluated at the point is evaluated with today's ``replica`` and judged by
``replica.common.validity.point_verdict``; so validity belongs to the quantity, and a
better model is checked against the very points that show another one off.  Written:

* ``replica/common/validity_table.json``: the validity table that every theory result
  reads its ``validity`` record from;
* the scoreboard block of ``experiments/scoreboard/README.md``: the models, then one row
  per measured point and model;
* the summary block of the project ``README.md``.

Usage::

    python -m experiments.scoreboard.scoreboard     # about 12 minutes (the theory of every point and model)
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from types import SimpleNamespace

import replica
from replica.common import registry
from replica.common.validity import point_verdict

from experiments.pages import replace_block, write_block
from experiments.runner import run
from experiments.scoreboard import measurements as measured

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TABLE = ROOT / "replica" / "common" / "validity_table.json"
PAGE = HERE / "README.md"
README = ROOT / "README.md"
EXPERIMENT = "scoreboard"


# Settings of a model on the scoreboard where its default sample is noisier than its tolerance:
# (quantity, model) -> options.  The image-space max margin at its default 2000 blocks has a
# Monte-Carlo error of 3.6-6.5 % of the margin at 0.9 p_c (d = 64 to 16), against a tolerance of 5 %.
OPTIONS = {("max_margin", "image"): {"blocks": 10000}}


def _zipf_result(params, model):
    facts = replica.ZipfFacts(params["N"], params["a"], weights=params.get("weights"), samples=params.get("samples"))
    return replica.zipf_error(params["d"], facts, params.get("memory", "optimal"), params.get("kappa", 1.0),
                              ensemble=params.get("ensemble", "gaussian"), model=model)


SPECTRUM_MEMORIES = 200   # sampled memories of a finite-d spectrum model (at least 4 per pooled memory)


def _spectrum_ks(params, model):
    """A finite-d law's KS distance to the ``d -> infinity`` law for a pool of as many memories as measured.

    ``ks`` is the mean over 400 pools of ``params["pooled"]`` distinct sampled memories;
    ``stderr`` its Monte-Carlo error: the spread over pools divided by the square root of
    the number of disjoint pools the sample holds.
    """
    n = int(params["pooled"])
    law = replica.spectrum(params["kappa"], d=params["d"], p=params["p"], problem=params.get("problem", "dp"),
                           model=model, options={"memories": max(SPECTRUM_MEMORIES, 4 * n)})
    ks = law.ks_distances(n)
    return SimpleNamespace(ks=float(ks.mean()), stderr=float(ks.std(ddof=1) / math.sqrt(max(1, law.memories // n))))


def theory_result(quantity: str, model: str, params: dict):
    """The result of ``model`` of ``quantity`` at a measured point's ``params`` (``None`` for the spectrum's KS)."""
    p = {k: v for k, v in params.items()}
    options = OPTIONS.get((quantity, model))
    extra = {} if options is None else {"options": options}
    if quantity == "capacity":
        return replica.capacity(**p, model=model, **extra)
    if quantity == "hebbian_capacity":
        return replica.hebbian_capacity(**p, model=model, **extra)
    if quantity == "max_margin":
        return replica.max_margin(**p, model=model, **extra)
    if quantity == "accuracy":
        for side in ("input", "output"):
            if f"{side}_exponent" in p:
                p[f"{side}_spectrum"] = p.pop(f"{side}_exponent")
        return replica.accuracy(**p, model=model, **extra)
    if quantity == "accuracy_capacity":
        return replica.accuracy_capacity(**p)
    if quantity == "zipf_error":
        return _zipf_result(p, model)
    if quantity == "spectrum":
        return None if model == "quarter_circle" else _spectrum_ks(p, model)
    raise ValueError(f"no theory evaluation for quantity {quantity!r}")


def theory_value(quantity: str, model: str, params: dict) -> float | None:
    """The value of ``model`` of ``quantity`` at a measured point's ``params`` (``None`` for the spectrum's KS)."""
    result = theory_result(quantity, model, params)
    return None if result is None else float(getattr(result, registry.quantity(quantity).value_field))


def theory_stderr(result) -> float:
    """The standard error of a theory result: its Monte-Carlo ``stderr`` combined in quadrature with the
    ``model_stderr`` of a calibrated constant where it has one; 0 where it has none (an exact or tabulated
    value), ``inf`` where it reports a non-finite one (its estimate failed: the verdict is ``unchecked``)."""
    parts = [getattr(result, name, None) for name in ("stderr", "model_stderr")]
    parts = [float(v) for v in parts if v is not None]
    if not all(math.isfinite(v) and v >= 0.0 for v in parts):
        return math.inf
    return math.hypot(*parts) if parts else 0.0


def evaluate(point: dict, only=None) -> list[dict]:
    """One entry per model of the point's quantity that can be evaluated there: theory, error and verdict.

    ``only``: a set of model names to evaluate (default: every model).
    """
    q = registry.quantity(point["quantity"])
    out = []
    for model in q.models:
        if model.domain(point["params"]) is not None or (only is not None and model.name not in only):
            continue
        result = theory_result(q.name, model.name, point["params"])
        theory = None if result is None else float(getattr(result, q.value_field))
        stderr = 0.0 if result is None else theory_stderr(result)
        if point["kind"] == "ks" and theory is not None:   # a model of the finite-d distance itself
            error, verdict = point_verdict(theory, "interval", point["measured"], point["low"], point["high"],
                                           model.tolerance, "absolute", stderr)
        elif point["kind"] == "ks" and not point.get("at_capacity", True):
            error, verdict = point["measured"], "unchecked"
        else:
            error, verdict = point_verdict(theory, point["kind"], point["measured"], point["low"], point["high"],
                                           model.tolerance, q.error_kind, stderr)
        out.append({"model": model.name, "theory": theory, "theory_stderr": stderr, "error": error,
                    "verdict": verdict})
    return out


def _rounded(value):
    """Floats to 9 significant digits: the table does not carry the last bits of a BLAS reduction."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _fixed_key(fixed: dict) -> str:
    return json.dumps(fixed, sort_keys=True)


def build(points: list[dict] | None = None, only=None) -> dict:
    """The validity table from the certified measurements (default: every experiment's committed data).

    ``only``: evaluate only the models of these names (tests of one model's verdicts).
    """
    points = measured.all_measurements() if points is None else points
    groups: dict = {}
    coverage = set()
    for point in points:
        q = registry.quantity(point["quantity"])
        fixed, continuous = registry.coordinates(q.name, point["params"])
        for entry in evaluate(point, only):
            coverage.add((point["experiment"], q.name))
            key = (q.name, entry["model"], _fixed_key(fixed))
            group = groups.setdefault(key, {"fixed": fixed, "labels": [], "points": []})
            if point["regime"] not in group["labels"]:
                group["labels"].append(point["regime"])
            group["points"].append({**continuous, "theory": entry["theory"], "theory_stderr": entry["theory_stderr"],
                                    "measured": point["measured"],
                                    "low": point["low"], "high": point["high"], "kind": point["kind"],
                                    "trials": point["trials"], "measured_text": point["measured_text"],
                                    "error": entry["error"], "verdict": entry["verdict"],
                                    "experiment": point["experiment"]})
    quantities = {}
    for q in registry.QUANTITIES.values():
        models = {}
        for model in q.models:
            regimes = []
            for (qn, mn, _), group in sorted(groups.items()):
                if (qn, mn) != (q.name, model.name):
                    continue
                pts = sorted(group["points"], key=lambda p: (tuple(p[n] for n in q.continuous), p["experiment"]))
                regimes.append({"label": "; ".join(group["labels"]), "fixed": group["fixed"],
                                "range": {n: [min(p[n] for p in pts), max(p[n] for p in pts)] for n in q.continuous},
                                "tolerance": model.tolerance, "points": pts})
            models[model.name] = {"tolerance": model.tolerance, "summary": model.summary, "note": model.note,
                                  "regimes": regimes}
        quantities[q.name] = {"front_end": q.front_end, "error_kind": q.error_kind, "summary": q.summary,
                              "models": models}
    return _rounded({"generated_by": "python -m experiments run scoreboard",
                     "coverage": sorted([list(c) for c in coverage]),
                     "quantities": quantities})


def _cell(value, kind):
    if value is None:
        return "-"
    return f"{100 * value:+.1f} %" if kind == "relative" else f"{value:+.3f}"


def _tolerance(value, kind):
    return f"{100 * value:g} %" if kind == "relative" else f"{value:g}"


def _at(point, names):
    return ", ".join(f"{n} = {point[n]:g}" for n in names)


def _fixed_text(fixed: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in fixed.items() if v is not None)


def _points(table):
    for qn, q in table["quantities"].items():
        for mn, m in q["models"].items():
            for regime in m["regimes"]:
                for pt in regime["points"]:
                    yield qn, mn, q, m, regime, pt


def scoreboard_table(table) -> list[str]:
    out = ["| quantity | model | regime | at | theory | certified measurement | trials | error | tolerance | verdict "
           "| experiment |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for qn, mn, q, _model, regime, pt in _points(table):
        kind = q["error_kind"]
        names = registry.quantity(qn).continuous
        verdict = f"**{pt['verdict']}**" if pt["verdict"] == "off" else pt["verdict"]
        theory = "-" if pt["theory"] is None else f"{pt['theory']:.4g}"
        out.append(f"| `{qn}` | `{mn}` | {_fixed_text(regime['fixed'])} | {_at(pt, names)} | {theory} | "
                   f"{pt['measured_text']} | {pt['trials']} | {_cell(pt['error'], kind)} | "
                   f"{_tolerance(regime['tolerance'], kind)} | {verdict} | "
                   f"[{pt['experiment']}](../../{pt['experiment']}/README.md) |")
    return out


def summary_rows(table) -> list[str]:
    out = ["| quantity | model | regimes | points checked | points off | points unchecked | largest error where off |",
           "|---|---|---|---|---|---|---|"]
    for qn, q in table["quantities"].items():
        for mn, m in q["models"].items():
            points = [pt for r in m["regimes"] for pt in r["points"]]
            if not points:
                continue
            count = {v: sum(pt["verdict"] == v for pt in points) for v in ("checked", "off", "unchecked")}
            off = [pt["error"] for pt in points if pt["verdict"] == "off"]
            worst = _cell(max(off, key=abs), q["error_kind"]) if off else "-"
            out.append(f"| `{qn}` | `{mn}` | {len(m['regimes'])} | {count['checked']} | {count['off']} | "
                       f"{count['unchecked']} | {worst} |")
    return out


def models_rows(table) -> list[str]:
    out = ["| quantity | front end | model | what it is | tolerance | derivation |", "|---|---|---|---|---|---|"]
    return out + registry.describe()


def page_block(table) -> list[str]:
    return (["Generated by `python -m experiments run scoreboard` from the committed data of the experiments; the "
             "same numbers are the validity table `replica/common/validity_table.json` that every theory result "
             "reads its `validity` record from.  Every certified measurement of a quantity is compared with every "
             "model of that quantity that can be evaluated there.  Error: theory / measured - 1 (relative) or "
             "theory - measured (absolute); against a bracket, the distance to its nearer end; against a bound, the "
             "distance to the bound.  A point is `checked` only when the measurement resolves the tolerance: its "
             "whole interval (or bracket) lies within the tolerance of the theory; `off` when the theory lies "
             "outside the interval and the error exceeds the tolerance; `unchecked` otherwise (an interval wider "
             "than the tolerance, or a one-sided bound the theory respects).  A sampled model's own Monte-Carlo "
             "error (with that of a calibrated constant, where the model has one) widens the measured interval: "
             "its 95 % interval, in quadrature about a point estimate, outwards at a bracket's ends; against a "
             "bound the theory moves towards it by as much.  So the model's own error can neither check nor "
             "refute it.  Settings: "
             "every model at its defaults, except "
             + "; ".join(f"`{q}` model `{m}` with `options={o!r}`" for (q, m), o in OPTIONS.items())
             + f"; the finite-d spectrum models with {SPECTRUM_MEMORIES} sampled memories (at least 4 per pooled "
             "one).  The spectrum's "
             "measurement is the KS distance of the pooled memories to the d -> infinity law: for "
             "`quarter_circle` it is the error itself (checked when its interval lies below the tolerance); a "
             "finite-d model predicts that distance for as many pooled memories, and is judged as against a point "
             "with an interval.", "", "The models:", ""]
            + models_rows(table) + ["", "Verdicts per model:", ""] + summary_rows(table)
            + ["", "Every measured point:", ""] + scoreboard_table(table))


def readme_block(table) -> list[str]:
    return (["Every model against the certified measurements of its quantity (count of measured points per "
             "verdict; `checked`: the measurement's interval lies within the model's tolerance, `off`: outside "
             "it, `unchecked`: the measurement cannot resolve the tolerance or is only a bound). Every theory "
             "result carries the same verdict as its `validity`; every point is on "
             "[experiments/scoreboard/README.md](experiments/scoreboard/README.md).", ""] + summary_rows(table))


def _render(job) -> None:
    # every "off" point is what this page reports; the warning each theory call gives is not news here
    warnings.simplefilter("ignore", replica.TheoryOffWarning)
    table = build()
    job.output("../../replica/common/validity_table.json").write_text(
        json.dumps(table, indent=1, sort_keys=False, allow_nan=False) + "\n")
    write_block(PAGE, "scoreboard", page_block(table), EXPERIMENT)
    readme = job.output("../../README.md")
    readme.write_text(replace_block(readme.read_text(), "scoreboard", readme_block(table), EXPERIMENT,
                                    where="README.md"))
    print(f"wrote {TABLE.relative_to(ROOT)}, {PAGE.relative_to(ROOT)}, README.md")


def main(argv=None) -> int:
    return run(__file__, __doc__, render=_render, argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())
