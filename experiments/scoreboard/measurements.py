"""Certified measurements of every experiment, one point per measured quantity (measurement first).

Reads the committed data of the experiments (never a page) into a list of measured
points, each of one quantity of the theory registry; the scoreboard then evaluates every
model of that quantity at each point.  No theory is evaluated here, so every extractor
but one reads its points in milliseconds; the exception is the spectrum, whose KS
distance is a distance to the predicted law (:func:`rank_spectra_at_capacity` imports
``replica`` for it: about 2 s in all).

A point is a dict (the contract with ``experiments/scoreboard/scoreboard.py``)::

    quantity       one of THEORY_QUANTITIES
    experiment     "experiments/<folder>"
    regime         short words for the fixed setting
    params         keyword arguments of the quantity's front end at this point (JSON-safe
                   scalars; parameters at their default are left out, DEFAULTS)
    kind           "interval" | "bracket" | "lower_bound" | "upper_bound" | "ks"
    measured       point estimate, or None (a bracket has no point)
    low, high      the certified interval or bracket; None for an open side (a lower
                   bound has high None, an upper bound low None)
    trials         instances or trials behind it
    measured_text  the measurement in words
    error_kind     "relative" | "absolute"
    at_capacity    (spectrum only) whether the load is at the capacity (P(stored) in [0.3, 0.7])

Only certified measurements count: decisions of the ``optimal`` solver at full rank (both
verdicts certified), the Hebbian rule's own recall (exact for the memory measured; its
interval is the sampling interval over instances), max-margin intervals (the 95 % sampling
interval of the mean over instances, from mean verified margin to mean certified bound), MILP brackets and exact decisions.  A search that only
finds storing (or recalling) memories gives a lower bound on a capacity or an accuracy
(an upper bound on an error); Adam never certifies a failure.

Folders and data that hold no certified measurement of a quantity with a theory (so no
point here), and why:

* ``experiments/reproducibility``: the same results across BLAS kernels and numba
  targets; no theory quantity.
* ``experiments/scoreboard``: the scoreboard itself.
* ``experiments/reproduction/quick``: the CI smoke run of the same configuration at
  d <= 32, with fewer trials; ``full/`` measures every one of its points again.
  In ``full/``: ``spectra_moments.csv``, ``score_summary.csv`` (moments and score
  statistics; no front end predicts them), ``op_vs_dp.csv`` and ``alpha_kappa.csv`` (the
  rows of ``capacity.csv`` again), the Adam rows of ``accuracy.csv`` and ``zipf.csv``.
* ``experiments/capacity``: ``pc_of_d`` draws the data of others; the generator-2 rows
  of ``dp_generators.json`` are the trials of the full reproduction (counted there); the
  stopped sweep ``benchmarks/goals/sweep_op512.json`` has no estimate (the headline skips
  it too) and its d = 512 OP point is measured by ``capacity_d512_op.md``.
* ``experiments/rank``: ``rank_saturation`` measures P(stored) at fixed loads against the
  number of starts (lower bounds on P(stored)); no front end predicts P(stored).
* ``experiments/spectra``: ``rank_spectra`` is at 0.95 x the theory's p_c (not at the
  capacity, where ``replica.spectrum`` is the prediction) and has no bootstrap interval.
* ``experiments/op_vs_dp``: ``op_vs_dp_d64_stored`` (3 stored instances per problem:
  moments and scores, no front end).
* ``experiments/margins``: ``margin_scales`` (field-scale diagnostics of 3 instances at
  the margins experiment's d = 16, 0.4 p_c load); ``margins_image`` holds theory only.
* ``experiments/rectangular``: ``rectangular_theory`` holds theory only.
* ``experiments/top_k``: the rows of ``top_k_exact.json`` whose exact p_c is a bracket or
  an extrapolation (k = 5 at d = 3, 4: most instances undecided by the MILP) have no
  certified interval (today's scoreboard skips them too).
* ``experiments/accuracy``: the "plain" curves of ``accuracy_optimal.json`` (the
  decision solver's W) are lower bounds on the same instances as the give-up curves and
  far below them.
* ``experiments/zipf``: the Adam columns of ``zipf.json`` (upper bounds on the error,
  no theory).
* ``experiments/embeddings``: the Hebbian rows (p_c and recall accuracy) under the words'
  measured covariance: no front-end parameter expresses that covariance
  (``hebbian_capacity`` has none, ``accuracy`` takes power-law exponents only); the
  isotropic rows of its table are the full reproduction's.
* ``experiments/ce_protocol``: the Adam capacities (see :func:`ce_protocol`).
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXPERIMENTS = ROOT / "experiments"

__all__ = ["THEORY_QUANTITIES", "DEFAULTS", "ERROR_KIND", "KINDS", "SOURCES", "EXTRACTORS", "all_measurements",
           "coverage", "separation_bracket"]

# The quantities with a registered theory (later: replica's registry).
THEORY_QUANTITIES = ("capacity", "hebbian_capacity", "max_margin", "accuracy", "accuracy_capacity", "zipf_error",
                     "spectrum")
KINDS = ("interval", "bracket", "lower_bound", "upper_bound", "ks")
ERROR_KIND = {"capacity": "relative", "hebbian_capacity": "relative", "max_margin": "relative",
              "accuracy": "absolute", "accuracy_capacity": "relative", "zipf_error": "absolute",
              "spectrum": "absolute"}
# Front-end parameters at their default are left out of ``params`` (the registry's defaults).
DEFAULTS = {
    "capacity": {"kappa": 1.0, "margin": 0.0, "top_k": 1, "d_out": None, "outputs": None, "problem": "dp",
                 "ensemble": "gaussian"},
    "hebbian_capacity": {"d_out": None, "kappa": 1.0, "problem": "op", "ensemble": "gaussian"},
    "max_margin": {"kappa": 1.0, "top_k": 1, "ensemble": "gaussian"},
    "accuracy": {"kappa": 1.0, "memory": "optimal", "problem": "dp", "ensemble": "gaussian",
                 "input_exponent": None, "output_exponent": None},
    "accuracy_capacity": {"accuracy": 0.99, "memory": "optimal", "ensemble": "gaussian", "kappa": 1.0},
    "zipf_error": {"memory": "optimal", "kappa": 1.0, "weights": None, "ensemble": "gaussian", "problem": "dp",
                   "samples": None},
    "spectrum": {"kappa": 1.0, "problem": "dp", "ensemble": "gaussian"},
}

_PL = "95 % PL"   # the profile-likelihood interval of a logistic fit of P(stored)


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _params(quantity: str, **values) -> dict:
    """``values`` without those at the quantity's default (an exponent 0 is the isotropic default)."""
    defaults = DEFAULTS[quantity]
    out = {}
    for name, value in values.items():
        if name in ("input_exponent", "output_exponent") and value is not None and float(value) == 0.0:
            continue
        if name in defaults and value == defaults[name]:
            continue
        out[name] = value
    return out


def _point(quantity, folder, regime, params, kind, measured, low, high, trials, text, **extra) -> dict:
    point = {"quantity": quantity, "experiment": f"experiments/{folder}", "regime": regime,
             "params": _params(quantity, **params), "kind": kind,
             "measured": None if measured is None else float(measured),
             "low": None if low is None else float(low), "high": None if high is None else float(high),
             "trials": int(trials), "measured_text": text, "error_kind": ERROR_KIND[quantity]}
    point.update(extra)
    return point


def _read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _read_json(path: Path):
    return json.loads(path.read_text())


def separation_bracket(points):
    """The two loads that bracket p_c when a fit is ``separated`` (``validation.capacity.fit.separation_bracket``).

    The same rule, kept here because importing ``validation`` imports the whole theory
    (``tests/test_scoreboard_measurements.py`` checks both agree on every committed curve):
    the largest ``p`` at which every decided trial was stored and the smallest larger ``p``
    at which none was; None when the curve has no such pair.
    """
    pts = sorted((float(q["p"]), int(q["stored"]), int(q["stored"]) + int(q["not_stored"])) for q in points)
    full = [p for p, k, n in pts if n > 0 and k == n]
    if not full:
        return None
    low = max(full)
    empty = [p for p, k, n in pts if n > 0 and k == 0 and p > low]
    return (low, min(empty)) if empty else None


def _fit(status, p_c, low, high, curve=()):
    """(kind, measured, low, high) of a logistic fit of P(stored), or None when it certifies no interval.

    ``ok``: the fit's interval; ``separated``: the bracket of the curve (no point);
    anything else (unbracketed, failed): nothing.
    """
    if status == "ok":
        return "interval", float(p_c), float(low), float(high)
    if status == "separated":
        bracket = separation_bracket(curve)
        if bracket is not None:
            return "bracket", None, bracket[0], bracket[1]
    return None


def _capacity_text(kind, measured, low, high, fmt=".1f", label=_PL, why="a search") -> str:
    if kind == "bracket":
        return f"between {low:{fmt}} and {high:{fmt}} (bracket)"
    if kind == "lower_bound":
        return f"{measured:{fmt}} [{low:{fmt}}, {high:{fmt}}] ({label}; lower bound: {why})"
    return f"{measured:{fmt}} [{low:{fmt}}, {high:{fmt}}] ({label})"


# Student t quantiles t_{0.975, df} for df = 1..30; above, the Cornish-Fisher expansion.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
_Z975 = 1.959963984540054


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (3 decimals)."""
    if df < 1:
        raise ValueError(f"df must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def _mean_interval(mean, se, n, lo=0.0, hi=1.0):
    """``mean +- t_{0.975, n-1} se``, clipped to [lo, hi] (a fraction)."""
    half = t975(max(n - 1, 1)) * se
    return max(lo, mean - half), min(hi, mean + half)


# --------------------------------------------------------------------------------------
# experiments/reproduction (the full run)
# --------------------------------------------------------------------------------------
FULL_RUN = EXPERIMENTS / "reproduction" / "full"


def read_run(folder: Path) -> list[dict]:
    """The capacity rows of one committed run, each with its success curve (``experiments.capacity.headline``)."""
    rows = _read_csv(folder / "capacity.csv")
    curves = _read_csv(folder / "success_curves.csv")
    for r in rows:
        key = (r["problem"], r["solver"], r["d"], float(r["kappa"]))
        r["curve"] = [c for c in curves if (c["problem"], c["solver"], c["d"], float(c["kappa"])) == key]
    return rows


def _run_capacity(folder: Path, where: str, label: str) -> list[dict]:
    """Capacity and Hebbian capacity of the rows of a committed ``validation reproduce`` run."""
    out = []
    for r in read_run(folder):
        if r["ensemble"] != "gaussian":
            continue
        d, kappa, problem, solver = int(r["d"]), float(r["kappa"]), r["problem"], r["solver"]
        fit = _fit(r["status"], r["p_c"], r["p_c_low"], r["p_c_high"], r["curve"])
        if fit is None or solver not in ("optimal", "hebbian") or (solver == "hebbian" and kappa != 1.0):
            continue
        kind, measured, low, high = fit
        if solver == "optimal" and kappa < 1.0 and int(r["not_found"]) > 0:
            # at rank m only `stored` is certified: the not_found trials make p_c a lower bound
            if kind == "bracket":
                text = f"at least {low:.1f} (all stored there; lower bound: a search)"
            else:
                text = _capacity_text("lower_bound", measured, low, high)
            kind, high = "lower_bound", None
        else:
            text = _capacity_text(kind, measured, low, high)
        if solver == "optimal":
            rank = "full rank" if kappa == 1.0 else f"rank {kappa:g} d"
            out.append(_point("capacity", where, f"optimal memory, {problem.upper()}, {rank}, gaussian{label}",
                              {"d": d, "kappa": kappa, "problem": problem}, kind, measured, low, high,
                              r["trials"], text))
        else:
            out.append(_point("hebbian_capacity", where, f"Hebbian rule, {problem.upper()}, full rank, gaussian{label}",
                              {"d": d, "problem": problem}, kind, measured, low, high, r["trials"], text))
    return out


def reproduction_capacity() -> list[dict]:
    """The optimal memory (full rank: certified; rank kappa d: lower bounds) and the Hebbian rule, full run."""
    return _run_capacity(FULL_RUN, "reproduction", "")


def reproduction_outputs() -> list[dict]:
    """K distinct answers at d = 16 (``outputs.csv`` of the full run; certified decisions)."""
    out = []
    for r in _read_csv(FULL_RUN / "outputs.csv"):
        fit = _fit(r["status"], r["p_c"], r["p_c_low"], r["p_c_high"])
        if r["solver"] != "optimal" or fit is None:
            continue
        kind, measured, low, high = fit
        k = int(r["outputs"])
        out.append(_point("capacity", "reproduction", f"optimal memory, {r['problem'].upper()}, K = {k} answers, "
                          "full rank, gaussian", {"d": int(r["d"]), "outputs": k, "problem": r["problem"]},
                          kind, measured, low, high, r["trials"], _capacity_text(kind, measured, low, high)))
    return out


def _accuracy_points(rows, where, regime_of, params_of) -> list[dict]:
    """Recall fractions: ``exact`` (Hebbian; or the optimal solver where every trial stored) and ``lower_bound``."""
    out = []
    for r in rows:
        if r["status"] not in ("ok", "degenerate") or r["bound"] not in ("exact", "lower_bound"):
            continue
        acc, low, high, n = float(r["accuracy"]), float(r["ci_low"]), float(r["ci_high"]), int(r["trials"])
        text = f"{acc:.4f} [{low:.4f}, {high:.4f}] (95 % t interval over {n} instances"
        if r["bound"] == "exact":
            kind, text = "interval", text + ")"
        else:
            kind, high, text = "lower_bound", None, text + "; lower bound: the give-up search)"
        out.append(_point("accuracy", where, regime_of(r), params_of(r), kind, acc, low, high, n, text))
    return out


def reproduction_accuracy() -> list[dict]:
    """Recall accuracy of the full run: the Hebbian rule (exact) and the optimal give-up search (lower bounds).

    The optimal solver's rows where every trial stored all facts are exact (accuracy 1);
    Adam's rows are left out.
    """
    rows = [r for r in _read_csv(FULL_RUN / "accuracy.csv") if r["solver"] in ("hebbian", "optimal")]
    for r in rows:
        if r["solver"] == "optimal" and r["bound"] == "exact" and int(r["stored"]) != int(r["trials"]):
            r["bound"] = "lower_bound"
    return _accuracy_points(
        rows, "reproduction",
        lambda r: (f"{'Hebbian rule' if r['solver'] == 'hebbian' else 'optimal memory (give-up search)'}, "
                   f"{r['problem'].upper()}, {r['ensemble']}"),
        lambda r: {"d": int(r["d"]), "p": int(r["p"]), "memory": r["solver"], "problem": r["problem"],
                   "ensemble": r["ensemble"], "kappa": float(r["kappa"])})


_ZIPF_MEMORY = {"hebbian": ("hebbian", None), "hebbian_frequency": ("hebbian", "frequency"),
                "optimal": ("optimal", None)}


def _zipf_points(points, where, label) -> list[dict]:
    """Zipf errors: the Hebbian memories' (exact, sampling interval) and the give-up search's (upper bounds)."""
    out = []
    for p in points:
        if p["solver"] not in _ZIPF_MEMORY or p["status"] != "ok" or int(p["failures"]) != 0:
            continue
        memory, weights = _ZIPF_MEMORY[p["solver"]]
        error, se, n = float(p["error"]), float(p["stderr"]), int(p["trials"])
        low, high = _mean_interval(error, se, n)
        text = f"{error:.4f} +- {se:.4f} (s.e. over {n} instances)"
        if p["bound"] == "exact":
            kind = "interval"
        elif p["bound"] == "upper_bound":
            kind, low, text = "upper_bound", None, text + "; upper bound: the weighted give-up search"
        else:
            continue
        words = {"hebbian": "Hebbian rule", "hebbian_frequency": "Hebbian rule, w = f",
                 "optimal": "optimal memory (weighted give-up search)"}[p["solver"]]
        out.append(_point("zipf_error", where, f"{words}, {p['problem'].upper()}, gaussian, Zipf facts, N = 2 p_c{label}",
                          {"d": int(p["d"]), "N": int(p["N"]), "a": float(p["a"]), "memory": memory,
                           "weights": weights, "problem": p["problem"], "ensemble": p.get("ensemble", "gaussian")},
                          kind, error, low, high, n, text))
    return out


def reproduction_zipf() -> list[dict]:
    """Zipf errors of the full run (``zipf.csv``)."""
    return _zipf_points(_read_csv(FULL_RUN / "zipf.csv"), "reproduction", "")


# --------------------------------------------------------------------------------------
# experiments/capacity
# --------------------------------------------------------------------------------------
_MEASURED = re.compile(r"measured\s+p_c = ([\d.]+)\s+95% \[([\d.]+), ([\d.]+)\]")
_STATUS = re.compile(r"^status: (\w+)", re.M)
_HEADER = re.compile(r"^d=(\d+) problem=(\w+) solver=(\w+) kappa=([\d.]+) ensemble=(\w+)", re.M)
_CURVE_ROW = re.compile(r"^\s*(\d+)\s+[\d.]+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", re.M)


def capacity_output(text: str) -> dict:
    """The estimate printed by ``validation capacity --format table`` (header, p_c line, status, curve)."""
    head, measured, status = _HEADER.search(text), _MEASURED.search(text), _STATUS.search(text)
    if head is None or measured is None or status is None:
        raise ValueError("no 'd=... problem=...', 'measured p_c' or 'status:' line in the capacity output")
    curve = [{"p": int(m[0]), "trials": int(m[1]), "stored": int(m[2]), "not_stored": int(m[3])}
             for m in _CURVE_ROW.findall(text)]
    return {"d": int(head[1]), "problem": head[2], "solver": head[3], "kappa": float(head[4]), "ensemble": head[5],
            "p_c": float(measured[1]), "p_c_low": float(measured[2]), "p_c_high": float(measured[3]),
            "status": status[1], "curve": curve}


def capacity_large_d_op() -> list[dict]:
    """The OP sweeps at d = 256 (``capacity_d256_op.txt``) and d = 512 (``capacity_d512_op.md``, a bracket)."""
    out = []
    for name in ("capacity_d256_op.txt", "capacity_d512_op.md"):
        e = capacity_output((EXPERIMENTS / "capacity" / name).read_text())
        fit = _fit(e["status"], e["p_c"], e["p_c_low"], e["p_c_high"], e["curve"])
        if fit is None or e["solver"] != "optimal" or e["kappa"] != 1.0:
            continue
        kind, measured, low, high = fit
        out.append(_point("capacity", "capacity", f"optimal memory, {e['problem'].upper()}, full rank, "
                          f"{e['ensemble']}, single sweep ({name})",
                          {"d": e["d"], "problem": e["problem"], "ensemble": e["ensemble"]}, kind, measured, low,
                          high, sum(c["trials"] for c in e["curve"]), _capacity_text(kind, measured, low, high)))
    return out


def _estimate_point(e: dict, label: str) -> dict | None:
    """The point of one saved capacity estimate of the optimal solver at full rank (None: no fit to read)."""
    if e["solver"] != "optimal" or float(e["kappa"]) != 1.0:
        return None
    fit = _fit(e["status"], e["p_c"], e["p_c_low"], e["p_c_high"], e["curve"])
    if fit is None:
        return None
    kind, measured, low, high = fit
    return _point("capacity", "capacity", label, {"d": int(e["d"]), "problem": e["problem"], "ensemble": e["ensemble"]},
                  kind, measured, low, high, sum(int(c["trials"]) for c in e["curve"]),
                  _capacity_text(kind, measured, low, high))


def capacity_sweeps() -> list[dict]:
    """The single sweeps recorded by ``benchmarks/bench_goals.py --long`` (``benchmarks/goals/sweep_*.json``)."""
    out = []
    for path in sorted((ROOT / "benchmarks" / "goals").glob("sweep_*.json")):
        e = _read_json(path).get("estimate")   # a sweep stopped before its end has no estimate
        point = e and _estimate_point(e, f"optimal memory, {e['problem'].upper()}, full rank, {e['ensemble']}, "
                                         f"single sweep ({path.name})")
        if point:
            out.append(point)
    return out


def dp_generators() -> list[dict]:
    """DP capacity with the earlier candidate generator 1 (generator 2's rows are the full reproduction's trials)."""
    points = (_estimate_point(e, f"optimal memory, DP (candidate generator {e['generator']}), full rank, "
                                 f"{e['ensemble']}")
              for e in _read_json(EXPERIMENTS / "capacity" / "dp_generators.json")["estimates"]
              if int(e["generator"]) != 2)
    return [p for p in points if p is not None]


# --------------------------------------------------------------------------------------
# experiments/top_k
# --------------------------------------------------------------------------------------
_INTERVAL = re.compile(r"([\d.]+) \[([\d.]+), ([\d.]+)\]")


def top_k_exact() -> list[dict]:
    """Top-k recall decided exactly at d = 2 to 4 (search W or MILP proof); undecided instances widen the interval."""
    out = []
    for r in _read_json(EXPERIMENTS / "top_k" / "top_k_exact.json"):
        m = _INTERVAL.search(r["exact"])
        if m is None:
            continue   # a bracket or an extrapolation: no certified interval
        p_c, low, high = map(float, m.groups())
        if r["undecided"]:   # the range of p_c left open by the instances the MILP did not decide
            low, high = min(low, r["undecided_range"][0]), max(high, r["undecided_range"][1])
        text = f"{p_c:.2f} [{low:.2f}, {high:.2f}] (95 % PL" + (", undecided either way)" if r["undecided"] else ")")
        out.append(_point("capacity", "top_k", f"top-{r['k']} recall, {r['problem'].upper()}, gaussian, exact "
                          "decisions", {"d": r["d"], "top_k": r["k"], "problem": r["problem"]}, "interval", p_c,
                          low, high, r["instances"], text))
    return out


def top_k() -> list[dict]:
    """Top-k recall at d = 16 and 32: k = 1 certified; k >= 2 lower bounds (the top-k search's not_found)."""
    out = []
    for r in _read_json(EXPERIMENTS / "top_k" / "top_k.json"):
        fit = _fit(r["status"], r["p_c"], r["p_c_low"], r["p_c_high"])
        if fit is None:
            continue
        kind, measured, low, high = fit
        if int(r["not_found"]) > 0:
            kind, high = "lower_bound", None
        trials = sum(int(r[k]) for k in ("stored", "not_stored", "not_found", "undecided"))
        out.append(_point("capacity", "top_k", f"top-{r['k']} recall, {r['problem'].upper()}, full rank, gaussian",
                          {"d": int(r["d"]), "top_k": int(r["k"]), "problem": r["problem"]}, kind, measured, low,
                          high, trials, _capacity_text(kind, measured, low, float(r["p_c_high"]))))
    return out


# --------------------------------------------------------------------------------------
# experiments/rectangular
# --------------------------------------------------------------------------------------
def _shape_points(rows, label) -> list[dict]:
    out = []
    for r in rows:
        if r["fit_status"] != "ok":
            continue
        d, d_out = int(r["d_in"]), int(r["d_out"])
        trials = sum(pt["stored"] + pt["not_stored"] for pt in r["points"])   # the decided trials
        out.append(_point("capacity", "rectangular", f"{d_out} x {d} memory (d_out / d_in = {d_out / d:g}), "
                          f"{r['problem'].upper()}, full rank, gaussian{label}",
                          {"d": d, "d_out": None if d_out == d else d_out, "problem": r["problem"]}, "interval",
                          r["p_c"], r["p_c_low"], r["p_c_high"], trials,
                          _capacity_text("interval", r["p_c"], r["p_c_low"], r["p_c_high"])))
    return out


def rectangular() -> list[dict]:
    """d_out x d_in memories at full rank (``rectangular.json``; certified decisions)."""
    return _shape_points(_read_json(EXPERIMENTS / "rectangular" / "rectangular.json")["rows"], "")


def few_outputs() -> list[dict]:
    """Few outputs, d_out / d_in <= 1/4: the main run, and the pilot at the shapes the main run did not measure.

    Both make certified decisions (another seed each), but the pilot ran only the first two
    stages of the design (no local stage near p_c): at a shape both measured, the main run's
    estimate supersedes it.  At 128 x 16 the two disagree (pilot DP 290.2 [280.7, 300.3] and
    OP 278.1 [267.1, 289.5], main run 302.5 [299.7, 305.4] and 308.0 [302.0, 314.8]: the OP
    intervals do not overlap); the likely cause is the pilot's coarse grid on a broad,
    hull-limited transition, where a logistic in ln p fits poorly and its interval is too
    narrow (the page of experiments/rectangular shows both runs).
    """
    folder = EXPERIMENTS / "rectangular"
    main = _read_json(folder / "few_outputs_measured.json")["rows"]
    measured = {(r["problem"], r["d_in"], r["d_out"]) for r in main if r["fit_status"] == "ok"}
    pilot = [r for r in _read_json(folder / "few_outputs_pilot.json")["rows"]
             if (r["problem"], r["d_in"], r["d_out"]) not in measured]
    return _shape_points(main, ", few-outputs run") + _shape_points(pilot, ", few-outputs pilot run")


# --------------------------------------------------------------------------------------
# experiments/margins
# --------------------------------------------------------------------------------------
def margins() -> list[dict]:
    """Certified max margins: the 95 % sampling interval of the mean over instances, per (d, ensemble, load).

    ``margins_measured.csv`` (the summary of the per-instance ``margins_instances.csv``)
    gives, over the n instances stored with their certified gap closed to 0.5 %, the mean
    verified margin (a lower bound on the mean best margin) and the mean certified bound (an
    upper bound) with their standard errors between instances.  The point is the mean
    verified margin; its interval is ``[mean margin - t se, mean bound + t se]``
    (``t = t_{0.975, n-1}``, the CSV's ``low`` and ``high``), so it holds both the per-instance
    certificate and the sampling error; ``trials`` is n.  Rows with fewer than 2 such
    instances have no sampling interval and give no point.
    """
    out = []
    for r in _read_csv(EXPERIMENTS / "margins" / "margins_measured.csv"):
        n = int(r["n"])
        if n < 2:
            continue
        margin, bound, low, high = (float(r[k]) for k in ("margin", "bound", "low", "high"))
        left = int(r["trials"]) - n
        text = (f"{margin:.3f} +- {float(r['margin_se']):.3f} to {bound:.3f} +- {float(r['bound_se']):.3f} (mean "
                f"verified margin to mean certified bound, s.e. over {n} instances; 95 % sampling interval "
                f"{low:.3f} to {high:.3f}; {n}/{r['trials']} stored with gaps closed to 0.5 %"
                + (f"; left out: {r['not_stored']} not stored, {r['undecided']} undecided, "
                   f"{int(r['stored']) - n} with the gap open" if left else "") + ")")
        out.append(_point("max_margin", "margins", f"max-margin memory, DP, {r['ensemble']} embeddings, full rank, "
                          f"p = {float(r['x']):g} p_c", {"d": int(r["d"]), "p": int(r["p"]),
                                                         "ensemble": r["ensemble"]},
                          "interval", margin, low, high, n, text))
    return out


# --------------------------------------------------------------------------------------
# experiments/accuracy
# --------------------------------------------------------------------------------------
_SEARCHES = ("greedy", "add_back", "swaps", "restarts_2", "restarts_4", "restarts_8")


def accuracy_search() -> list[dict]:
    """The best recall count above capacity: the best search (lower) to the MILP bound (upper), means over instances."""
    cases = {}
    for r in _read_csv(EXPERIMENTS / "accuracy" / "accuracy_search.csv"):
        cases.setdefault((r["problem"], int(r["d"]), float(r["ratio"]), int(r["p"])), []).append(r)
    out = []
    for (problem, d, ratio, p), at in sorted(cases.items()):
        best = [max(int(r[k]) for k in _SEARCHES) for r in at]
        lower = sum(best) / len(at) / p
        upper = sum(int(r["bound_upper"]) for r in at) / len(at) / p
        closed = sum(int(r["bound_upper"]) == b for r, b in zip(at, best))
        out.append(_point("accuracy", "accuracy", f"optimal memory, {problem.upper()}, full rank, gaussian, "
                          f"p = {ratio:g} p_c", {"d": d, "p": p, "problem": problem}, "bracket", None, lower, upper,
                          len(at), f"{lower:.3f} to {upper:.3f} (search to MILP bound, means; {closed}/{len(at)} "
                          "closed)"))
    return out


def _json_accuracy(name, where, keep) -> list[dict]:
    rows = []
    for e in _read_json(EXPERIMENTS / where / name):
        for p in e["points"]:
            rows.append(dict(p, d=e["d"], problem=e["problem"], solver=e["solver"], ensemble=e["ensemble"],
                             kappa=e["kappa"], keep=keep(e)))
    return [r for r in rows if r["keep"]]


def accuracy_hebbian() -> list[dict]:
    """The Hebbian rule's recall fraction (exact for the memory; 95 % t interval over instances)."""
    rows = _json_accuracy("accuracy_hebbian.json", "accuracy", lambda e: e["solver"] == "hebbian")
    return _accuracy_points(rows, "accuracy", lambda r: f"Hebbian rule, {r['problem'].upper()}, {r['ensemble']}",
                            lambda r: {"d": r["d"], "p": r["p"], "memory": "hebbian", "problem": r["problem"],
                                       "ensemble": r["ensemble"], "kappa": r["kappa"]})


def accuracy_optimal() -> list[dict]:
    """The optimal memory above capacity: the give-up search's recall fraction, a lower bound on the best."""
    rows = _json_accuracy("accuracy_optimal.json", "accuracy",
                          lambda e: e["solver"] == "optimal" and "give-up search" in e["measures"])
    for r in rows:
        r["bound"] = "exact" if int(r["stored"]) == int(r["trials"]) else "lower_bound"
    return _accuracy_points(rows, "accuracy",
                            lambda r: f"optimal memory (give-up search), {r['problem'].upper()}, {r['ensemble']}",
                            lambda r: {"d": r["d"], "p": r["p"], "problem": r["problem"], "ensemble": r["ensemble"],
                                       "kappa": r["kappa"]})


# --------------------------------------------------------------------------------------
# experiments/zipf
# --------------------------------------------------------------------------------------
def zipf_bracket() -> list[dict]:
    """The best recalled Zipf mass at d = 6 to 10: mean MILP bound to mean search, per case (``zipf_bracket.csv``).

    With the hull control variate (:func:`hull_control_variate`):
    each instance's non-vertex mass (facts never recalled, found by LP) is replaced by the
    counted non-vertex fraction, an estimate of its expectation; the bracket is on the same
    expected best error, without the spread of which heavy facts are lost.
    """
    cases = {}
    for r in _read_csv(EXPERIMENTS / "zipf" / "zipf_bracket.csv"):
        cases.setdefault((int(r["d"]), int(r["N"]), float(r["a"]), int(r["top"])), []).append(r)
    out = []
    for (d, N, a, top), at in cases.items():
        n = len(at)
        lows, highs = hull_control_variate(at)
        low, high = sum(lows) / n, sum(highs) / n
        counted = sum(int(r["nonvertex_count"]) for r in at) / (n * N)
        closed = sum(float(r["upper_mass"]) - float(r["lower_mass"]) <= 1e-5 for r in at)
        out.append(_point("zipf_error", "zipf", f"optimal memory, DP, full rank, gaussian, Zipf facts, N = 2 p_c "
                          f"(MILP over the top {top} facts; hull control variate)", {"d": d, "N": N, "a": a},
                          "bracket", None, low, high, n,
                          f"E between {low:.3f} and {high:.3f} (MILP bound to search, means, non-vertex mass at its "
                          f"counted mean {counted:.3f}; s.e. {_stderr(lows):.3f}, {_stderr(highs):.3f}; "
                          f"{closed}/{n} closed)"))
    return out


def hull_control_variate(at) -> tuple[list, list]:
    """Per instance of one Zipf-bracket case, the error bracket with its non-vertex mass at the counted fraction.

    ``max(1 - upper_i, L_i) - L_i + c_i`` and ``1 - lower_i - L_i + c_i``, with ``L_i`` the
    instance's non-vertex mass and ``c_i`` its non-vertex fraction: their means over the
    instances bracket the mean best error with ``L`` replaced by the counted mean fraction
    (``experiments.zipf.zipf_bracket.case_summaries``).  ``at``: the rows of one case
    (strings of the CSV or typed values).
    """
    lows, highs = [], []
    for r in at:
        lost, counted = float(r["nonvertex_mass"]), int(r["nonvertex_count"]) / int(r["N"])
        lows.append(max(1.0 - float(r["upper_mass"]), lost) - lost + counted)
        highs.append(1.0 - float(r["lower_mass"]) - lost + counted)
    return lows, highs


def _stderr(values) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


def zipf_hebbian() -> list[dict]:
    """``zipf.json``: the Hebbian memories' errors (exact per instance) and the give-up search's (upper bounds)."""
    data = _read_json(EXPERIMENTS / "zipf" / "zipf.json")
    points = [dict(p, d=m["d"], N=m["N"], a=m["a"], problem=m["problem"], ensemble=m["ensemble"])
              for m in data["measurements"] for p in m["points"]]
    return _zipf_points(points, "zipf", "")


def zipf_hebbian_n1000() -> list[dict]:
    """The Hebbian memories at N = 1000 facts, 1000 instances per point (``zipf_hebbian.json``; exact recall)."""
    from experiments.zipf.zipf_hebbian import zipf_hebbian_points

    return zipf_hebbian_points(EXPERIMENTS / "zipf" / "zipf_hebbian.json")


ZIPF_SAMPLES_N = 2000   # N of experiments/zipf/zipf_samples.py (its CSV has no N column; the test checks the script)
_SOLVES = re.compile(r"solves: (.*)$")


def zipf_samples() -> list[dict]:
    """Zipf facts learned from T samples (``zipf_samples.csv``).

    Hebbian memories: exact per instance.  Optimal: where every solve stored all seen
    facts the error is exactly the unseen mass (an interval); where the give-up search
    ran (``given_up``) or a solve was undecided, an upper bound.
    """
    out = []
    for r in _read_csv(EXPERIMENTS / "zipf" / "zipf_samples.csv"):
        memory, n, T = r["memory"], int(r["instances"]), int(r["T"])
        error, se = float(r["E_mean"]), float(r["E_stderr"])
        low, high = _mean_interval(error, se, n)
        text = f"{error:.4f} +- {se:.4f} (s.e. over {n} instances)"
        kind, weights, words = "interval", None, {"hebbian": "Hebbian rule (seen facts)",
                                                  "hebbian-counts": "Hebbian rule, count-weighted",
                                                  "optimal": "optimal memory (seen facts)"}.get(memory)
        if words is None:
            continue
        if memory == "hebbian-counts":
            memory, weights = "hebbian", "frequency"
        elif memory == "optimal":
            solves = _SOLVES.search(r["model_status"])
            if solves is None:
                continue
            counts = dict((w, int(c)) for c, w in re.findall(r"(\d+) (\w+)", solves[1]))
            if counts.get("stored", 0) != n:
                kind, low, text = "upper_bound", None, text + f"; upper bound: the give-up search ({solves[1]})"
            else:
                text += "; every solve stored all seen facts"
        out.append(_point("zipf_error", "zipf", f"{words}, OP, gaussian, Zipf facts from T samples, N = "
                          f"{ZIPF_SAMPLES_N}", {"d": int(r["d"]), "N": ZIPF_SAMPLES_N, "a": float(r["a"]),
                                                "memory": memory, "weights": weights, "problem": "op",
                                                "samples": T}, kind, error, low, high, n, text))
    return out


# --------------------------------------------------------------------------------------
# experiments/spectra
# --------------------------------------------------------------------------------------
SPECTRA_BOOTSTRAP = 1000          # BOOTSTRAP of experiments/spectra/rank_spectra_at_capacity.py
SPECTRA_AT_CAPACITY = (0.3, 0.7)  # AT_CAPACITY of the same script (the test checks both)


def _ks(cdf_sorted, n) -> float:
    """KS statistic of a sample whose CDF values under the law are ``cdf_sorted`` (ascending), as scipy's kstest."""
    import numpy as np

    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - cdf_sorted), np.max(cdf_sorted - (i - 1) / n)))


def rank_spectra_at_capacity() -> list[dict]:
    """Singular values of storing rank-m memories (kappa = 1/2, ridge-refined) at capacity: KS to the predicted law.

    The one measurement here that needs the theory: a KS distance is a distance to a
    law, ``replica.spectrum(kappa)`` (and its units, ``normalized_singular_values``), so
    this function imports ``replica`` (about a second).  It computes what
    ``experiments.spectra.rank_spectra_at_capacity.summarise`` does (the same pooled
    values, the same bootstrap draws, the basic interval) without scipy's per-resample
    overhead; the test compares the two.  ``at_capacity``: the measured P(stored) (a lower
    bound: not_found counts as not stored) lies in [0.3, 0.7].
    """
    import numpy as np

    from replica import spectrum
    from replica.asymptotic.spectra import normalized_singular_values

    data = _read_json(EXPERIMENTS / "spectra" / "rank_spectra_at_capacity.json")
    kappa, seed = float(data["kappa"]), int(data["seed"])
    law = spectrum(kappa)
    memory_index = 0   # MEMORIES.index("refined") in the script
    out = []
    for i, (problem, d, p, _source, _restarts, _trials) in enumerate(data["plan"]):
        rows = [r for r in data["rows"] if r["problem"] == problem and r["d"] == d]
        if not rows:
            continue
        count = {s: sum(r["status"] == s for r in rows) for s in ("stored", "not_found", "not_stored")}
        decided = sum(count.values())
        stored = [r for r in rows if r["status"] == "stored" and "sv_refined" in r]
        if not stored or not decided:
            continue
        p_stored = count["stored"] / decided
        cdfs = [np.sort(law.cdf(normalized_singular_values(np.asarray(r["sv_refined"]), kappa))) for r in stored]
        pooled = np.sort(np.concatenate(cdfs))
        value = _ks(pooled, pooled.size)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 7, i, memory_index]))
        boot = np.empty(SPECTRA_BOOTSTRAP)
        for b in range(SPECTRA_BOOTSTRAP):
            sample = np.sort(np.concatenate([cdfs[j] for j in rng.integers(0, len(cdfs), len(cdfs))]))
            boot[b] = _ks(sample, sample.size)
        q_lo, q_hi = np.quantile(boot, [0.025, 0.975])
        low, high = max(float(2 * value - q_hi), 0.0), float(2 * value - q_lo)
        at_capacity = bool(SPECTRA_AT_CAPACITY[0] <= p_stored <= SPECTRA_AT_CAPACITY[1])
        out.append(_point("spectrum", "spectra", f"storing rank-m memories (ridge-refined) at capacity, "
                          f"{problem.upper()}, kappa = {kappa:g}, gaussian",
                          {"d": d, "kappa": kappa, "problem": problem, "p": p, "pooled": len(stored)},
                          "ks", value, low, high, len(stored),
                          f"KS {value:.3f} [{low:.3f}, {high:.3f}] (95 % basic bootstrap over memories; "
                          f"{pooled.size} values) at p = {p}, P(stored) {p_stored:.2f}", at_capacity=at_capacity))
    return out


# --------------------------------------------------------------------------------------
# the folders not read before: sphere, many_to_one, covariance, embeddings, rank, ce_protocol, op_vs_dp
# --------------------------------------------------------------------------------------
def sphere() -> list[dict]:
    """Unit-norm and Gaussian embeddings, same seeds and design (certified decisions)."""
    out = []
    for r in _read_json(EXPERIMENTS / "sphere" / "sphere_optimal.json"):
        for ensemble in ("sphere", "gaussian"):
            e = r[ensemble]
            text = _capacity_text("interval", e["p_c"], e["p_c_low"], e["p_c_high"])
            if e["undecided"]:
                text += f"; {e['undecided']} undecided left out"
            out.append(_point("capacity", "sphere", f"optimal memory, {r['problem'].upper()}, full rank, {ensemble}",
                              {"d": int(r["d"]), "problem": r["problem"], "ensemble": ensemble}, "interval",
                              e["p_c"], e["p_c_low"], e["p_c_high"], e["trials"], text))
    return out


def many_to_one() -> list[dict]:
    """K distinct answers at d = 8, 16, 32 (``validation capacity --outputs K``; certified decisions)."""
    out = []
    files = {int(m[1]): path for path in (EXPERIMENTS / "many_to_one").glob("many_to_one_d*.json")
             if (m := re.fullmatch(r"many_to_one_d(\d+)\.json", path.name))}
    for _, path in sorted(files.items()):
        for r in _read_json(path)["rows"]:
            fit = _fit(r["status"], r["p_c"], r["p_c_low"], r["p_c_high"], r["curve"])
            if fit is None or r["solver"] != "optimal":
                continue
            kind, measured, low, high = fit
            k = r.get("row_outputs")
            answers = "K = p (one answer per fact)" if k is None else f"K = {k} answers"
            out.append(_point("capacity", "many_to_one", f"optimal memory, {r['problem'].upper()}, {answers}, "
                              f"full rank, {r['ensemble']}",
                              {"d": int(r["d"]), "outputs": k, "problem": r["problem"], "ensemble": r["ensemble"],
                               "kappa": float(r["kappa"])}, kind, measured, low, high,
                              sum(int(c["trials"]) for c in r["curve"]), _capacity_text(kind, measured, low, high)))
    return out


def covariance() -> list[dict]:
    """The Hebbian rule's recall fraction under power-law input and output spectra (exact per instance)."""
    out = []
    for r in _read_csv(EXPERIMENTS / "covariance" / "covariance_hebbian.csv"):
        acc, se, n = float(r["mean_accuracy"]), float(r["se"]), int(r["trials"])
        low, high = _mean_interval(acc, se, n)
        a_in, a_out = float(r["input_exponent"]), float(r["output_exponent"])
        out.append(_point("accuracy", "covariance", f"Hebbian rule, {r['problem'].upper()}, gaussian, power-law "
                          f"spectra (exponents {a_in:g} in, {a_out:g} out)",
                          {"d": int(r["d"]), "p": int(r["p"]), "memory": "hebbian", "problem": r["problem"],
                           "input_exponent": a_in, "output_exponent": a_out}, "interval", acc, low, high, n,
                          f"{acc:.3f} +- {se:.3f} (s.e. over {n} instances)"))
    return out


_EMBEDDING_FACTS = {"real": "all-MiniLM-L6-v2 words, projected to d", "control": "Gaussian, the words' second moments",
                    "control_2": "Gaussian, the words' second moments, second pool"}


def embeddings() -> list[dict]:
    """The optimal memory on word embeddings projected to d, and on Gaussian controls (certified decisions).

    The controls' theory is ``replica.capacity(d, problem="op")`` exactly (full rank:
    the optimal memory is invariant under a non-singular covariance); the words test it
    on non-Gaussian facts, said in the regime.
    """
    out = []
    for r in _read_json(EXPERIMENTS / "embeddings" / "embeddings.json")["rows"]:
        if r["solver"] != "optimal" or r["kind"] not in _EMBEDDING_FACTS:
            continue
        fit = _fit(r["status"], r["p_c"], r["p_c_low"], r["p_c_high"], r["curve"])
        if fit is None:
            continue
        kind, measured, low, high = fit
        out.append(_point("capacity", "embeddings", f"optimal memory, OP, full rank, facts: "
                          f"{_EMBEDDING_FACTS[r['kind']]}", {"d": int(r["d"]), "problem": "op"}, kind, measured, low,
                          high, r["trials"], _capacity_text(kind, measured, low, high)))
    return out


def rank_capacity() -> list[dict]:
    """p_c at rank kappa d, d = 16 to 64, OP and DP: lower bounds (the rank-m search's not_found)."""
    out = []
    for r in _read_json(EXPERIMENTS / "rank" / "rank_capacity.json"):
        measured, low, high = float(r["p_c"]), float(r["p_c_low"]), float(r["p_c_high"])
        kind = "lower_bound" if r["lower_bound"] else "interval"
        out.append(_point("capacity", "rank", f"optimal memory, {r['problem'].upper()}, rank {r['kappa']:g} d, "
                          f"gaussian ({r['starts']} starts)",
                          {"d": int(r["d"]), "kappa": float(r["kappa"]), "problem": r["problem"]}, kind, measured,
                          low, None if kind == "lower_bound" else high, r["trials"],
                          _capacity_text(kind, measured, low, high)))
    return out


CE_OPTIMAL_TRIALS = 4   # OPTIMAL_TRIALS of experiments/ce_protocol/ce_capacity.py (per load; the data has no total)


def ce_protocol() -> list[dict]:
    """The 99 %-accuracy capacity of the optimal memory, unit-norm embeddings: lower bounds.

    The optimal solver's column is certified one way only: a trial counts when the
    decision solver's returned W recalls at least 99 % of the facts (checked in float64),
    and a W that does not is no proof that no W does; so p_c is a lower bound on the best
    memory's 99 % capacity.  Adam's capacities are left out: a run that reaches 99 % shows
    one W, but its capacity is the largest N of a bisection over Adam runs on different
    instances whose failures certify nothing, and at every d it lies below the optimal
    solver's lower bound on the same criterion, so it bounds nothing further.  The data
    records no trial total: ``trials`` is the trials per load.
    """
    out = []
    for d, e in sorted(_read_json(EXPERIMENTS / "ce_protocol" / "ce_capacity.json")["optimal"].items(),
                       key=lambda item: int(item[0])):
        measured, low, high = float(e["p_c"]), float(e["p_c_low"]), float(e["p_c_high"])
        out.append(_point("accuracy_capacity", "ce_protocol", "optimal memory (decision W), OP, full rank, sphere, "
                          "99 % of the facts recalled", {"d": int(d), "accuracy": 0.99, "ensemble": "sphere"},
                          "lower_bound", measured, low, None, CE_OPTIMAL_TRIALS,
                          _capacity_text("lower_bound", measured, low, high, why="the decision W's recall")
                          + f"; {CE_OPTIMAL_TRIALS} trials per load"))
    return out


def op_vs_dp() -> list[dict]:
    """OP and DP at d = 64 (a reproduce run restricted to d = 64, its own trials)."""
    return _run_capacity(EXPERIMENTS / "op_vs_dp" / "op_vs_dp_d64", "op_vs_dp", ", d = 64 run")


# --------------------------------------------------------------------------------------
# the extractors of each experiment folder, in the order of the list
SOURCES = {
    "reproduction": (reproduction_capacity, reproduction_outputs, reproduction_accuracy, reproduction_zipf),
    "capacity": (capacity_large_d_op, capacity_sweeps, dp_generators),
    "top_k": (top_k_exact, top_k),
    "rectangular": (rectangular, few_outputs),
    "margins": (margins,),
    "accuracy": (accuracy_search, accuracy_hebbian, accuracy_optimal),
    "zipf": (zipf_bracket, zipf_hebbian, zipf_hebbian_n1000, zipf_samples),
    "spectra": (rank_spectra_at_capacity,),
    "sphere": (sphere,),
    "many_to_one": (many_to_one,),
    "covariance": (covariance,),
    "embeddings": (embeddings,),
    "rank": (rank_capacity,),
    "ce_protocol": (ce_protocol,),
    "op_vs_dp": (op_vs_dp,),
}
EXTRACTORS = tuple(extract for extractors in SOURCES.values() for extract in extractors)


def all_measurements(folders=None) -> list[dict]:
    """Every certified measurement of every experiment (``folders``: only those under ``experiments/``)."""
    return [point for folder, extractors in SOURCES.items() if folders is None or folder in folders
            for extract in extractors for point in extract()]


def coverage(points=None) -> set[tuple[str, str]]:
    """The (experiment, quantity) pairs with at least one measurement."""
    return {(p["experiment"], p["quantity"]) for p in (all_measurements() if points is None else points)}


if __name__ == "__main__":   # pragma: no cover - a summary for the eye
    import collections

    counts = collections.Counter((p["experiment"], p["quantity"], p["kind"]) for p in all_measurements())
    for (experiment, quantity, kind), n in sorted(counts.items()):
        print(f"{experiment:28s} {quantity:18s} {kind:12s} {n}")
