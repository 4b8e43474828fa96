"""The scoreboard: every prediction of ``replica`` against the certified measurements of the experiments.

Reads the committed data of the experiments (never a page), computes the theory of every
measured point with today's ``replica``, and writes

* ``replica/common/validity_table.json``: the validity table that every theory result
  reads its ``validity`` record from (``replica.common.validity``);
* the scoreboard block of ``experiments/scoreboard/README.md``: one row per measured
  point, with the theory, the certified measurement and its interval, the sample size,
  the error, the tolerance, the verdict and the experiment;
* the summary block of the project ``README.md``.

Only certified measurements count: decisions of the ``optimal`` solver at full rank
(both verdicts certified), the Hebbian rule's own recall, max-margin intervals whose
certified gap closed, and the MILP brackets of the best recall count.  A measurement that
is only a lower bound (rank-m searches) can show a theory off (theory below it) but never
checks one.

Usage::

    python -m experiments.scoreboard.scoreboard     # about a minute (the theory of every point)
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from pathlib import Path

import replica
from validation.capacity.fit import separation_bracket

from experiments.capacity.headline import FULL_RUN, read_run
from experiments.pages import replace_block, write_block

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXPERIMENTS = ROOT / "experiments"
TABLE = ROOT / "replica" / "common" / "validity_table.json"
PAGE = HERE / "README.md"
README = ROOT / "README.md"
EXPERIMENT = "scoreboard"

# prediction -> (error kind, tolerance, words). The tolerance is the prediction's stated one:
# within it (or inside the measurement's interval) a certified measurement agrees.
TOLERANCES = {
    "capacity": ("relative", 0.02, "p_c of the optimal memory, full rank (`replica.capacity`)"),
    "capacity_top_k": ("relative", 0.05, "p_c with top-k recall (`replica.capacity(d, top_k=k)`)"),
    "capacity_rank": ("relative", 0.02, "p_c at rank kappa d (`replica.capacity(d, kappa)`)"),
    "hebbian_capacity": ("relative", 0.08, "p_c of the Hebbian rule (`replica.hebbian_capacity`)"),
    "rectangular_capacity": ("relative", 0.08, "p_c of a d_out x d_in memory (`replica.rectangular_capacity`)"),
    "few_outputs_capacity": ("relative", 0.08, "p_c of a d_out x d_in memory with few outputs "
                                               "(`replica.few_outputs_capacity`)"),
    "max_margin": ("relative", 0.05, "the largest margin at load p (`replica.max_margin`)"),
    "optimal_accuracy": ("absolute", 0.03, "fraction of facts the best memory recalls above capacity "
                                           "(`replica.optimal_accuracy`)"),
    "finite_size_accuracy": ("absolute", 0.03, "the same at the integer p, with the outputs' hull "
                                               "(`replica.finite_size_accuracy`)"),
}
CAPACITY_MATCH = {"kappa": 1.0, "margin": 0.0, "top_k": 1, "outputs": None, "ensemble": "gaussian"}


def relative_point(theory, measured, low, high, tolerance, kind="interval"):
    """Error and verdict of a theory against a measurement with an interval (or a bracket).

    Inside the interval (or the bracket) the theory agrees; outside it the relative error
    to the measured value (to the nearer end of a bracket, whose midpoint is not a
    measurement) decides against the tolerance.
    """
    if kind == "bracket":
        nearest = min(max(theory, low), high)
        error = theory / nearest - 1.0
    else:
        error = theory / measured - 1.0
    inside = low is not None and high is not None and low <= theory <= high
    return error, "checked" if inside or abs(error) <= tolerance else "off"


def lower_bound_point(theory, measured, low, tolerance):
    """A measurement that is only a lower bound: the theory is off only below it, else unchecked."""
    error = theory / measured - 1.0
    return error, "off" if theory < low and error < -tolerance else "unchecked"


def bracket_point(theory, lower, upper, tolerance):
    """An absolute prediction against a certified bracket [lower, upper] of the best value."""
    error = theory - min(max(theory, lower), upper)
    if abs(error) > tolerance:
        return error, "off"
    return error, "checked" if upper - lower <= tolerance else "unchecked"


def _regime(prediction, label, experiment, match, ranged, points, tolerance):
    points = sorted(points, key=lambda p: tuple(p[n] for n in ranged))
    return {"prediction": prediction, "label": label, "experiment": experiment, "match": match,
            "range": {n: [min(p[n] for p in points), max(p[n] for p in points)] for n in ranged},
            "tolerance": tolerance, "points": points}


def _interval_text(p_c, low, high, kind):
    if kind == "bracket":
        return f"between {low:.1f} and {high:.1f} (bracket)"
    return f"{p_c:.1f} [{low:.1f}, {high:.1f}] (95 % PL)"


def capacity_regimes():
    """The optimal memory at full rank and at rank kappa d, and the Hebbian rule, from the full reproduction."""
    rows, _ = read_run(FULL_RUN)
    by_key = {}
    for r in rows:
        if r["status"] not in ("ok", "separated") or r["ensemble"] != "gaussian":
            continue
        d, kappa, problem = int(r["d"]), float(r["kappa"]), r["problem"]
        p_c, low, high = float(r["p_c"]), float(r["p_c_low"]), float(r["p_c_high"])
        kind = "interval"
        if r["status"] == "separated":
            bracket = separation_bracket(r["curve"])
            if bracket is None:
                continue
            (low, high), kind = bracket, "bracket"
        point = {"d": d, "measured": p_c, "low": low, "high": high, "trials": int(r["trials"]),
                 "measured_text": _interval_text(p_c, low, high, kind)}
        if r["solver"] == "optimal" and kappa == 1.0:
            tolerance = TOLERANCES["capacity"][1]
            theory = replica.capacity(d, problem=problem).p_c
            point["error"], point["verdict"] = relative_point(theory, p_c, low, high, tolerance, kind)
            key = ("capacity", problem, kappa)
        elif r["solver"] == "optimal":
            tolerance = TOLERANCES["capacity_rank"][1]
            theory = replica.capacity(d, kappa, problem=problem).p_c
            point["error"], point["verdict"] = lower_bound_point(theory, p_c, low, tolerance)
            point["measured_text"] += " (lower bound: rank-m search)"
            key = ("capacity_rank", problem, kappa)
        elif r["solver"] == "hebbian" and kappa == 1.0:
            tolerance = TOLERANCES["hebbian_capacity"][1]
            theory = replica.hebbian_capacity(d).p_c
            point["error"], point["verdict"] = relative_point(theory, p_c, low, high, tolerance, kind)
            key = ("hebbian_capacity", problem, kappa)
        else:
            continue
        point["theory"] = theory
        by_key.setdefault(key, []).append(point)
    out = []
    for (name, problem, kappa), points in sorted(by_key.items()):
        tolerance = TOLERANCES[name][1]
        if name == "capacity":
            out.append(_regime("capacity", f"optimal memory, {problem.upper()}, full rank, gaussian, d = "
                               f"{min(p['d'] for p in points)} to {max(p['d'] for p in points)}",
                               "experiments/reproduction", dict(CAPACITY_MATCH, problem=problem), ["d"], points,
                               tolerance))
        elif name == "capacity_rank":
            out.append(_regime("capacity", f"optimal memory, {problem.upper()}, rank {kappa:g} d, gaussian "
                               "(measured: lower bounds)", "experiments/reproduction",
                               dict(CAPACITY_MATCH, problem=problem, kappa=kappa), ["d"], points, tolerance))
        else:
            out.append(_regime("hebbian_capacity", f"Hebbian rule, {problem.upper()} (its stored outputs compete), "
                               "full rank, gaussian", "experiments/reproduction",
                               {"kappa": 1.0, "ensemble": "gaussian"}, ["d"], points, tolerance))
    return out


_INTERVAL = re.compile(r"([\d.]+) \[([\d.]+), ([\d.]+)\]")


def top_k_regimes():
    """Top-k recall decided exactly at small d (search W or MILP proof), from the top-k experiment."""
    records = json.loads((EXPERIMENTS / "top_k" / "top_k_exact.json").read_text())
    tolerance = TOLERANCES["capacity_top_k"][1]
    groups = {}
    for r in records:
        m = _INTERVAL.search(r["exact"])
        if m is None:
            continue
        p_c, low, high = map(float, m.groups())
        if r["undecided"]:  # the range of p_c left open by the instances the MILP did not decide
            low, high = min(low, r["undecided_range"][0]), max(high, r["undecided_range"][1])
        theory = replica.capacity(r["d"], top_k=r["k"], problem=r["problem"]).p_c
        error, verdict = relative_point(theory, p_c, low, high, tolerance)
        text = f"{p_c:.2f} [{low:.2f}, {high:.2f}] (95 % PL" + (", undecided either way)" if r["undecided"] else ")")
        groups.setdefault((r["problem"], r["k"]), []).append(
            {"d": r["d"], "theory": theory, "measured": p_c, "low": low, "high": high, "trials": r["instances"],
             "measured_text": text, "error": error, "verdict": verdict})
    return [_regime("capacity", f"top-{k} recall, {problem.upper()}, gaussian, d = 2 to 4 (exact decisions)",
                    "experiments/top_k", dict(CAPACITY_MATCH, top_k=k, problem=problem), ["d"], points, tolerance)
            for (problem, k), points in sorted(groups.items())]


def _shape_points(rows, theory_of, tolerance):
    """Points of fitted rows of d_out x d_in memories, grouped by (problem, d_out / d_in)."""
    groups = {}
    for r in rows:
        if r["fit_status"] != "ok":
            continue
        theory = theory_of(r["d_in"], r["d_out"], problem=r["problem"]).p_c
        error, verdict = relative_point(theory, r["p_c"], r["p_c_low"], r["p_c_high"], tolerance)
        trials = sum(pt["stored"] + pt["not_stored"] for pt in r["points"])
        groups.setdefault((r["problem"], r["d_out"] / r["d_in"]), []).append(
            {"d_in": r["d_in"], "theory": theory, "measured": r["p_c"], "low": r["p_c_low"], "high": r["p_c_high"],
             "trials": trials, "measured_text": _interval_text(r["p_c"], r["p_c_low"], r["p_c_high"], "interval"),
             "error": error, "verdict": verdict})
    return sorted(groups.items())


def rectangular_regimes():
    """d_out x d_in memories at full rank, from the rectangular experiment (the budget theory)."""
    rows = json.loads((EXPERIMENTS / "rectangular" / "rectangular.json").read_text())["rows"]
    tolerance = TOLERANCES["rectangular_capacity"][1]
    return [_regime("rectangular_capacity", f"{problem.upper()}, d_out / d_in = {ratio:g}, full rank, gaussian",
                    "experiments/rectangular", {"problem": problem, "ratio": ratio, "kappa": 1.0, "margin": 0.0,
                                                "top_k": 1, "ensemble": "gaussian"}, ["d_in"], points, tolerance)
            for (problem, ratio), points in _shape_points(rows, replica.rectangular_capacity, tolerance)]


def few_outputs_regimes():
    """Few outputs (d_out / d_in <= 1/4), the main certified run of the rectangular experiment."""
    rows = json.loads((EXPERIMENTS / "rectangular" / "few_outputs_measured.json").read_text())["rows"]
    tolerance = TOLERANCES["few_outputs_capacity"][1]
    return [_regime("few_outputs_capacity", f"{problem.upper()}, d_out / d_in = {ratio:g}, gaussian",
                    "experiments/rectangular", {"problem": problem, "ratio": ratio}, ["d_in"], points, tolerance)
            for (problem, ratio), points in _shape_points(rows, replica.few_outputs_capacity, tolerance)]


def _read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _margin_regimes(prediction, theory_file):
    """Certified max margins (intervals closed to 0.5 %) against the theory of ``prediction`` in ``theory_file``."""
    folder = EXPERIMENTS / "margins"
    theory = {(int(r["d"]), r["ensemble"], int(r["p"])): float(r["theory"])
              for r in _read_csv(folder / theory_file)}
    tolerance = TOLERANCES[prediction][1]
    groups = {}
    for r in _read_csv(folder / "margins_measured.csv"):
        d, ensemble, p = int(r["d"]), r["ensemble"], int(r["p"])
        if int(r["stored"]) == 0:
            continue
        margin, bound = float(r["margin"]), float(r["bound"])
        th = theory[(d, ensemble, p)]
        error, verdict = relative_point(th, margin, margin, bound, tolerance)
        groups.setdefault(ensemble, []).append(
            {"d": d, "load": float(r["x"]), "theory": th, "measured": margin, "low": margin, "high": bound,
             "trials": int(r["stored"]), "error": error, "verdict": verdict,
             "measured_text": f"{margin:.3f} to {bound:.3f} (mean verified margin to mean certified bound)"})
    return [_regime(prediction, f"DP, {ensemble} embeddings, full rank, d = 16 to 64, p = 0.2 to 0.9 p_c",
                    "experiments/margins", {"ensemble": ensemble, "kappa": 1.0, "top_k": 1}, ["d", "load"], points,
                    tolerance)
            for ensemble, points in sorted(groups.items())]


def margin_regimes():
    """Certified max margins against the theory rendered by the margins experiment (``margins_theory.csv``)."""
    return _margin_regimes("max_margin", "margins_theory.csv")


TOLERANCES["max_margin_image"] = ("relative", 0.05, "the largest margin at load p with the image-space block cost "
                                                   "(`replica.max_margin_image`)")


def margin_image_regimes():
    """Certified max margins against the image-space theory (``margins_image_theory.csv``, margins experiment)."""
    return _margin_regimes("max_margin_image", "margins_image_theory.csv")


def accuracy_regimes():
    """The best recall count above capacity against both predictions (replica-symmetric and finite p)."""
    return (_accuracy_regimes("optimal_accuracy", lambda d, p: replica.optimal_accuracy(d, p).accuracy, {"kappa": 1.0})
            + _accuracy_regimes("finite_size_accuracy", lambda d, p: replica.finite_size_accuracy(d, p).accuracy,
                                {"kappa": 1.0, "hull": True}))


def _accuracy_regimes(prediction, theory_of, match):
    """The best recall count above capacity: the give-up search (lower) and the MILP bound (upper), DP."""
    rows = [r for r in _read_csv(EXPERIMENTS / "accuracy" / "accuracy_search.csv") if r["problem"] == "dp"]
    tolerance = TOLERANCES[prediction][1]
    cases = {}
    for r in rows:
        cases.setdefault((int(r["d"]), float(r["ratio"]), int(r["p"])), []).append(r)
    points = []
    for (d, ratio, p), at in sorted(cases.items()):
        best_search = [max(int(r[k]) for k in ("greedy", "add_back", "swaps", "restarts_2", "restarts_4",
                                               "restarts_8")) for r in at]
        lower = sum(best_search) / len(at) / p
        upper = sum(int(r["bound_upper"]) for r in at) / len(at) / p
        theory = theory_of(d, p)
        error, verdict = bracket_point(theory, lower, upper, tolerance)
        closed = sum(int(r["bound_upper"]) == b for r, b in zip(at, best_search))
        points.append({"d": d, "load": ratio, "theory": theory, "measured": None, "low": lower, "high": upper,
                       "trials": len(at), "error": error, "verdict": verdict,
                       "measured_text": f"{lower:.3f} to {upper:.3f} (search to MILP bound, means; {closed}/{len(at)} "
                                        "closed)"})
    return [_regime(prediction, "DP, full rank, gaussian, d = 6 to 10, p = 1.25 to 2 p_c",
                    "experiments/accuracy", match, ["d", "load"], points, tolerance)]


def zipf_regimes():
    """The best recalled Zipf mass at small d: the certified bracket of ``experiments/zipf/zipf_bracket.csv``."""
    from experiments.zipf.zipf_bracket import case_summaries, read_rows

    tolerance = TOLERANCES["zipf_error"][1]
    points = []
    for c in case_summaries(read_rows(EXPERIMENTS / "zipf" / "zipf_bracket.csv")):
        theory = replica.zipf_error(c["d"], replica.ZipfFacts(c["N"], c["a"])).error
        error, verdict = bracket_point(theory, c["low"], c["high"], tolerance)
        points.append({"d": c["d"], "N": c["N"], "a": c["a"], "theory": theory, "measured": None, "low": c["low"],
                       "high": c["high"], "trials": c["instances"], "error": error, "verdict": verdict,
                       "measured_text": f"E between {c['low']:.3f} and {c['high']:.3f} (MILP bound to search, "
                                        f"means; s.e. {c['low_se']:.3f}, {c['high_se']:.3f}; {c['closed']}/"
                                        f"{c['instances']} closed)"})
    return [_regime("zipf_error", "DP, optimal memory, full rank, gaussian, Zipf facts, d = 6 to 8, N = 30 to 44 "
                    "(2 p_c), a = 1.5 to 2", "experiments/zipf", {"memory": "optimal", "kappa": 1.0,
                                                                  "ensemble": "gaussian"},
                    ["d", "N", "a"], points, tolerance)]


TOLERANCES["zipf_error"] = ("absolute", 0.03, "frequency mass the best memory leaves unrecalled, Zipf facts "
                                              "(`replica.zipf_error`)")


# the spectrum of storing rank-m memories at capacity (experiments/spectra, rank_spectra_at_capacity)
TOLERANCES["rank_spectrum"] = ("absolute", 0.05, "KS distance of the singular values of storing rank-m memories at "
                               "capacity to the truncated quarter circle (`replica.spectrum(kappa)`); error: the KS "
                               "distance itself")


def rank_spectrum_regimes():
    """Singular values of the storing rank-m memories (kappa = 1/2) at capacity against ``replica.spectrum(0.5)``.

    One point per d: the KS distance of the pooled normalised singular values of the
    ridge-refined storing memories (error, absolute); ``checked`` when it is at most the
    tolerance, ``off`` above it, ``unchecked`` when the load is not at capacity (the
    measured P(stored) outside 0.3 to 0.7).  The regime's label shows the KS against d.
    """
    from experiments.spectra import rank_spectra_at_capacity as spectra

    data = json.loads((EXPERIMENTS / "spectra" / "rank_spectra_at_capacity.json").read_text())
    summaries = [s for s in spectra.summarise(data, reference=False) if "refined" in s]
    tolerance = TOLERANCES["rank_spectrum"][1]
    out = []
    for problem in sorted({s["problem"] for s in summaries}):
        points = []
        for s in (s for s in summaries if s["problem"] == problem):
            ks = s["refined"]
            verdict = ("unchecked" if not s["at_capacity"] else "checked" if ks["ks"] <= tolerance else "off")
            points.append({"d": s["d"], "theory": 0.0, "measured": ks["ks"], "low": ks["ks_low"], "high": ks["ks_high"],
                           "trials": s["memories"], "error": ks["ks"], "verdict": verdict,
                           "measured_text": f"KS {ks['ks']:.3f} [{ks['ks_low']:.3f}, {ks['ks_high']:.3f}] (95 % basic "
                                            f"bootstrap over memories; {s['values']} values) at p = {s['p']}, "
                                            f"P(stored) {s['p_stored']:.2f} [{s['p_stored_low']:.2f}, "
                                            f"{s['p_stored_high']:.2f}]"})
        fit = spectra.trend(summaries, problem, "refined")
        shown = ", ".join(f"{p['d']}: {p['measured']:.3f}" for p in sorted(points, key=lambda p: p["d"]))
        rate = "" if fit is None else f"; fit KS ~ d^-a, a = {fit['a']:.2f} [{fit['low']:.2f}, {fit['high']:.2f}]"
        out.append(_regime("rank_spectrum", f"storing rank-m memories at capacity (ridge-refined), {problem.upper()}, "
                           f"kappa = 0.5, gaussian; KS against d: {shown}{rate}", "experiments/spectra",
                           {"problem": problem, "kappa": spectra.KAPPA, "ensemble": "gaussian"}, ["d"], points,
                           tolerance))
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


def build() -> dict:
    """The validity table from the committed data of every experiment."""
    regimes = (capacity_regimes() + top_k_regimes() + rectangular_regimes() + few_outputs_regimes()
               + margin_regimes() + accuracy_regimes()
               + margin_image_regimes())
    regimes += zipf_regimes()
    regimes += rank_spectrum_regimes()
    predictions = {}
    for regime in regimes:
        name = regime.pop("prediction")
        kind = TOLERANCES.get(name, TOLERANCES["capacity"])[0]
        predictions.setdefault(name, {"error_kind": kind, "regimes": []})["regimes"].append(regime)
    return _rounded({"generated_by": "python -m experiments run scoreboard",
            "tolerances": {k: {"error_kind": v[0], "tolerance": v[1], "what": v[2]} for k, v in TOLERANCES.items()},
            "predictions": predictions})


def _cell(value, kind):
    if value is None:
        return "-"
    return f"{100 * value:+.1f} %" if kind == "relative" else f"{value:+.3f}"


def _at(point, regime):
    return ", ".join(f"{n} = {point[n]:g}" for n in regime["range"])


def scoreboard_table(table) -> list[str]:
    out = ["| prediction | regime | at | theory | certified measurement | trials | error | tolerance | verdict | "
           "experiment |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, entry in table["predictions"].items():
        kind = entry["error_kind"]
        for regime in entry["regimes"]:
            tol = f"{100 * regime['tolerance']:g} %" if kind == "relative" else f"{regime['tolerance']:g}"
            for pt in regime["points"]:
                verdict = f"**{pt['verdict']}**" if pt["verdict"] == "off" else pt["verdict"]
                out.append(f"| `{name}` | {regime['label']} | {_at(pt, regime)} | {pt['theory']:.4g} | "
                           f"{pt['measured_text']} | {pt['trials']} | {_cell(pt['error'], kind)} | {tol} | "
                           f"{verdict} | [{regime['experiment']}](../../{regime['experiment']}/README.md) |")
    return out


def summary_rows(table) -> list[str]:
    out = ["| prediction | regimes | points checked | points off | points unchecked | largest error where off |",
           "|---|---|---|---|---|---|"]
    for name, entry in table["predictions"].items():
        points = [pt for r in entry["regimes"] for pt in r["points"]]
        count = {v: sum(pt["verdict"] == v for pt in points) for v in ("checked", "off", "unchecked")}
        off = [pt["error"] for pt in points if pt["verdict"] == "off"]
        worst = _cell(max(off, key=abs), entry["error_kind"]) if off else "-"
        out.append(f"| `{name}` | {len(entry['regimes'])} | {count['checked']} | {count['off']} | "
                   f"{count['unchecked']} | {worst} |")
    return out


def page_block(table) -> list[str]:
    tolerances = "; ".join(f"`{k}` {100 * v['tolerance']:g} %" if v["error_kind"] == "relative"
                           else f"`{k}` {v['tolerance']:g} (absolute)" for k, v in table["tolerances"].items())
    return (["Generated by `python -m experiments run scoreboard` from the committed data of the experiments; the "
             "same numbers are the validity table `replica/common/validity_table.json` that every theory result "
             "reads its `validity` record from.  Stated tolerances: " + tolerances + ".  Error: theory / measured "
             "- 1 (relative) or theory - measured (absolute); against a bracket, the distance to its nearer end.  "
             "A theory inside the measurement's interval agrees whatever its distance to the point estimate.", ""]
            + summary_rows(table) + ["", "Every measured point:", ""] + scoreboard_table(table))


def readme_block(table) -> list[str]:
    return (["Every prediction against the certified measurements of the experiments (count of measured points per "
             "verdict; `checked`: within the stated tolerance, `off`: outside it, `unchecked`: the measurement is "
             "only a lower bound or a bracket wider than the tolerance). Every theory result carries the same "
             "verdict as its `validity`; every point is on "
             "[experiments/scoreboard/README.md](experiments/scoreboard/README.md).", ""] + summary_rows(table))


def main() -> None:
    # every "off" point is what this page reports; the warning each theory call gives is not news here
    warnings.simplefilter("ignore", replica.TheoryOffWarning)
    table = build()
    TABLE.write_text(json.dumps(table, indent=1, sort_keys=False, allow_nan=False) + "\n")
    write_block(PAGE, "scoreboard", page_block(table), EXPERIMENT)
    README.write_text(replace_block(README.read_text(), "scoreboard", readme_block(table), EXPERIMENT,
                                    where="README.md"))
    print(f"wrote {TABLE.relative_to(ROOT)}, {PAGE.relative_to(ROOT)}, README.md")


if __name__ == "__main__":
    main()
