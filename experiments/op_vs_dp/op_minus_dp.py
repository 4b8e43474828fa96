"""OP minus DP against d: every committed certified p_c of both problems, paired, with intervals.

Reads the committed capacity measurements of the optimal memory (Gaussian ensemble) through
the scoreboard's readers (:mod:`experiments.scoreboard.measurements`), pairs the original
problem (OP, shared outputs) with the decoupled one (DP, own competitors) at the same d and
rank kappa d, and writes the block ``op_minus_dp`` of ``experiments/op_vs_dp/README.md``, the
table ``op_minus_dp.csv`` and the figure ``op_minus_dp.png``.  Nothing is measured: the page is
rendered from the committed data of other experiments (``data`` of ``experiment.toml``), and
beside it the shared-outputs model (:func:`replica.optimal.shared_outputs.shared_outputs_capacity`,
``notes/shared_outputs.md``) and the finite-size theory (:func:`replica.capacity`).

Pairs
-----
* Within one experiment (same design, same code): every experiment folder that holds an OP and a
  DP point at the same ``(d, kappa)``.
* Across experiments (independent instances): the OP sweep at d = 256
  (``experiments/capacity/capacity_d256_op.txt``) with the DP of the full reproduction, and the
  DP sweep at d = 128 (``benchmarks/goals/sweep_dp128.json``) with the OP of the full
  reproduction.
* d = 512 has an OP bracket only; it is shown against the DP *theory* (marked so; not a
  measured difference).

Intervals of OP/DP - 1
----------------------
* ``conservative``: from the two 95 % intervals (profile likelihood, or a bracket),
  ``[OP_low / DP_high - 1, OP_high / DP_low - 1]``; it holds the true ratio whenever both
  intervals hold their p_c, so its coverage is at least 90 % (Bonferroni), whatever the
  dependence of the two.  The same construction gives ``OP - DP`` in p.
* ``joint PL``: where both success curves are committed (stored / not stored counts per load),
  the 95 % profile-likelihood interval of ``ln(p_c^OP / p_c^DP)`` from the two logistic models of
  ``validation.capacity.fit`` (two slopes, the DP location profiled out), on a grid of
  ``GRID_STEP`` in ln p.  It assumes the two curves independent (true across experiments;
  within one experiment OP and DP instances are drawn separately).
* A rank-m point (``kappa < 1``) comes from a search that can return ``not_found``: both p_c are
  lower bounds, and so is neither their ratio nor their difference.  Those rows are shown
  ("lower bound / lower bound") without an interval.

Usage::

    python -m experiments run op_minus_dp --render   # the page, table and figure from the committed data
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import pathlib

import numpy as np
from scipy import special

from experiments.pages import write_block
from experiments.runner import run
from experiments.scoreboard import measurements as measured

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXPERIMENTS = ROOT / "experiments"
PAGE, TABLE, FIGURE = HERE / "README.md", HERE / "op_minus_dp.csv", HERE / "op_minus_dp.png"
NOTE = "../../notes/shared_outputs.md"   # its blocks: the calibration of the model and the check of every pair
NAME = "op_minus_dp"

GRID_STEP = 2e-4          # ln p grid of the joint profile likelihood
CHI2_95 = 3.841458820694124
SLOPES = np.exp(np.linspace(math.log(1e-2), math.log(400.0), 400))   # the fit's slope range (its cap 400)

# readers whose points are capacity at full rank or rank kappa d, gaussian, one answer per fact, top-1
_READERS = {"reproduction": measured.reproduction_capacity, "many_to_one": measured.many_to_one,
            "sphere": measured.sphere, "top_k": measured.top_k, "op_vs_dp": measured.op_vs_dp,
            "rank": measured.rank_capacity, "capacity": measured.capacity_large_d_op,
            "sweeps": measured.capacity_sweeps}
_SOURCE_WORDS = {
    "reproduction": "full reproduction (seed 2026)",
    "many_to_one": "many_to_one, K = p rows (seed 0, grid)",
    "sphere": "sphere, Gaussian rows (seed 0, grid)",
    "top_k": "top_k, k = 1 (seed 0)",
    "op_vs_dp": "op_vs_dp_d64 (seed 2026, d = 64 run)",
    "rank": "rank (seed 0, rank-m search)",
}
SAME_TRIALS = {("many_to_one", 32): "sphere"}   # identical counts and fits: one row, the one with curves
SHARED_INSTANCES = {("many_to_one", 16): "sphere"}   # same seed and design, half the trials of the sphere run


# --------------------------------------------------------------------------------------
# the points
# --------------------------------------------------------------------------------------
def _plain(point) -> bool:
    """A capacity point of the optimal memory: gaussian, one answer per fact, top-1, no margin, square."""
    params = point["params"]
    return (point["quantity"] == "capacity" and params.get("ensemble", "gaussian") == "gaussian"
            and not any(k in params for k in ("top_k", "d_out", "outputs", "margin")))


def points() -> dict:
    """``{(source, problem, d, kappa): point}`` of every plain capacity point of the readers."""
    out = {}
    for source, reader in _READERS.items():
        for p in reader():
            if not _plain(p):
                continue
            d, kappa = int(p["params"]["d"]), float(p["params"].get("kappa", 1.0))
            problem = p["params"].get("problem", "dp")
            if source == "sweeps" and (problem, d) != ("dp", 128):
                continue
            if source == "capacity" and "capacity_d256_op" not in p["regime"] and "capacity_d512_op" not in p["regime"]:
                continue
            out[(source, problem, d, kappa)] = p
    return out


def curves() -> dict:
    """``{(source, problem, d, kappa): [(p, stored, decided), ...]}`` of the committed success curves."""
    out = {}
    for source, folder in (("reproduction", measured.FULL_RUN), ("op_vs_dp", HERE / "op_vs_dp_d64")):
        for r in measured.read_run(folder):
            if r["solver"] != "optimal" or r["ensemble"] != "gaussian":
                continue
            key = (source, r["problem"], int(r["d"]), float(r["kappa"]))
            out[key] = [(int(c["p"]), int(c["stored"]), int(c["stored"]) + int(c["not_stored"])) for c in r["curve"]]
    for path in sorted((EXPERIMENTS / "many_to_one").glob("many_to_one_d*.json")):
        if path.name.endswith(".provenance.json"):
            continue
        for r in json.loads(path.read_text())["rows"]:
            if r["solver"] == "optimal" and r.get("row_outputs") is None and r["ensemble"] == "gaussian":
                out[("many_to_one", r["problem"], int(r["d"]), float(r["kappa"]))] = [
                    (int(c["p"]), int(c["stored"]), int(c["stored"]) + int(c["not_stored"])) for c in r["curve"]]
    e = measured.capacity_output((EXPERIMENTS / "capacity" / "capacity_d256_op.txt").read_text())
    out[("capacity", "op", 256, 1.0)] = [(c["p"], c["stored"], c["stored"] + c["not_stored"]) for c in e["curve"]]
    sweep = json.loads((ROOT / "benchmarks" / "goals" / "sweep_dp128.json").read_text())["estimate"]
    out[("sweeps", "dp", 128, 1.0)] = [(int(c["p"]), int(c["stored"]), int(c["stored"]) + int(c["not_stored"]))
                                       for c in sweep["curve"]]
    return out


# --------------------------------------------------------------------------------------
# intervals
# --------------------------------------------------------------------------------------
def _profile(grid, curve) -> np.ndarray:
    """Profile log-likelihood of ln p_c on ``grid`` (max over :data:`SLOPES`) of one success curve."""
    p, k, n = (np.asarray(v, dtype=float) for v in zip(*curve))
    keep = n > 0
    x, k, n = np.log(p[keep]), k[keep], n[keep]
    out = np.empty(len(grid))
    for start in range(0, len(grid), 512):
        c = grid[start:start + 512]
        z = SLOPES[None, :, None] * (c[:, None, None] - x[None, None, :])
        ll = (k * special.log_expit(z) + (n - k) * special.log_expit(-z)).sum(axis=2)
        out[start:start + 512] = ll.max(axis=1)
    return out


def joint_ratio_interval(curve_op, curve_dp) -> tuple[float, float, float]:
    """ML ratio ``p_c^OP / p_c^DP`` and its 95 % profile-likelihood interval (two independent logistic fits).

    ``l(delta) = max_c [l_OP(c + delta) + l_DP(c)]`` with ``l_X`` the profile over the slope;
    the interval is ``{delta: 2 (max l - l(delta)) <= chi2_1(0.95)}``, on a grid of
    :data:`GRID_STEP` in ``delta = ln(ratio)``.  An end that reaches the grid's edge (a curve
    that does not bracket p_c) is returned as ``nan``.
    """
    xs = [math.log(p) for p, _, _ in (*curve_op, *curve_dp)]
    lo, hi = min(xs) - 0.3, max(xs) + 0.3
    grid = np.arange(lo, hi + GRID_STEP, GRID_STEP)
    l_op, l_dp = _profile(grid, curve_op), _profile(grid, curve_dp)
    shifts = np.arange(-int(0.2 / GRID_STEP), int(0.2 / GRID_STEP) + 1)
    joint = np.empty(len(shifts))
    n = len(grid)
    for i, s in enumerate(shifts):   # l_OP at grid[j + s] with l_DP at grid[j]
        a, b = max(0, -s), min(n, n - s)
        joint[i] = np.max(l_op[a + s:b + s] + l_dp[a:b])
    best = int(np.argmax(joint))
    inside = np.flatnonzero(2.0 * (joint[best] - joint) <= CHI2_95)
    first, last = inside[0], inside[-1]   # a set with holes would be replaced by its hull (conservative)
    low = math.nan if first == 0 else math.exp(shifts[first] * GRID_STEP)
    high = math.nan if last == len(shifts) - 1 else math.exp(shifts[last] * GRID_STEP)
    return math.exp(shifts[best] * GRID_STEP), low, high


def _ends(point):
    """``(low, high)`` of a point: its interval or bracket (None for an open side)."""
    return point["low"], point["high"]


def conservative(op, dp) -> dict:
    """OP/DP - 1 and OP - DP with the interval from the two 95 % intervals (coverage >= 90 %)."""
    (ol, oh), (dl, dh) = _ends(op), _ends(dp)
    out = {"ratio_low": math.nan, "ratio_high": math.nan, "diff_low": math.nan, "diff_high": math.nan}
    if None not in (ol, oh, dl, dh):
        out.update(ratio_low=ol / dh - 1.0, ratio_high=oh / dl - 1.0, diff_low=ol - dh, diff_high=oh - dl)
    return out


def _centre(point) -> float:
    if point["measured"] is not None:
        return float(point["measured"])
    return math.sqrt(point["low"] * point["high"])   # a bracket: its geometric middle


# --------------------------------------------------------------------------------------
# the pairs
# --------------------------------------------------------------------------------------
def pairs() -> list[dict]:
    """Every OP/DP pair, sorted by kappa (1 first) then d, with its intervals."""
    pts, crv = points(), curves()
    rows = []
    seen = set()
    for (source, problem, d, kappa), op in sorted(pts.items()):
        if problem != "op" or (source, "dp", d, kappa) not in pts:
            continue
        dp = pts[(source, "dp", d, kappa)]
        words = _SOURCE_WORDS.get(source, source)
        if (source, d) in SAME_TRIALS:
            words += f" (= {SAME_TRIALS[(source, d)]}'s Gaussian rows: the same trials)"
            seen.add((SAME_TRIALS[(source, d)], d, kappa))
        if (source, d) in SHARED_INSTANCES:
            words += f" (same seed and design as {SHARED_INSTANCES[(source, d)]}, half its trials: not independent)"
        rows.append(_row(source, words, d, kappa, op, dp, crv.get((source, "op", d, kappa)),
                         crv.get((source, "dp", d, kappa))))
    rows = [r for r in rows if (r["source"], r["d"], r["kappa"]) not in seen]
    # across experiments (independent instances)
    cross = ((("capacity", "op", 256), ("reproduction", "dp", 256),
              "OP: capacity_d256_op.txt (seed 0); DP: full reproduction (seed 2026)"),
             (("reproduction", "op", 128), ("sweeps", "dp", 128),
              "OP: full reproduction (seed 2026); DP: sweep_dp128.json (default seed)"))
    for (so, _, d), (sd, _, _), words in cross:
        op, dp = pts[(so, "op", d, 1.0)], pts[(sd, "dp", d, 1.0)]
        rows.append(_row(f"{so}+{sd}", words, d, 1.0, op, dp, crv.get((so, "op", d, 1.0)),
                         crv.get((sd, "dp", d, 1.0))))
    # d = 512: the OP bracket against the DP theory
    op512 = pts[("capacity", "op", 512, 1.0)]
    rows.append(_row("capacity", "OP: capacity_d512_op.md (bracket); DP: the finite-size theory, no measurement",
                     512, 1.0, op512, None, None, None))
    rows.sort(key=lambda r: (-r["kappa"], r["d"], r["source"]))
    return rows


@functools.lru_cache(maxsize=None)
def _dp_result(d: int, kappa: float):
    import replica

    return replica.capacity(d, kappa, model="finite_size")


@functools.lru_cache(maxsize=None)
def _model_result(d: int):
    from replica.optimal.shared_outputs import shared_outputs_capacity

    return shared_outputs_capacity(d)


def _dp_theory(d: int, kappa: float) -> float:
    return float(_dp_result(d, kappa).p_c)


def _model(d: int, kappa: float):
    """The shared-outputs model's p_c (None where it is not made for: kappa < 1)."""
    return None if kappa != 1.0 else float(_model_result(d).p_c)


def _row(source, words, d, kappa, op, dp, curve_op, curve_dp) -> dict:
    theory = _dp_theory(d, kappa)
    row = {"source": source, "words": words, "d": d, "kappa": kappa, "op": op, "dp": dp,
           "op_kind": op["kind"], "dp_kind": "theory" if dp is None else dp["kind"],
           "theory_dp": theory, "model_op": _model(d, kappa)}
    if dp is None:   # against the theory: the OP's interval or bracket over the theory
        row.update(ratio=_centre(op) / theory - 1.0, diff=_centre(op) - theory,
                   ratio_low=op["low"] / theory - 1.0, ratio_high=op["high"] / theory - 1.0,
                   diff_low=op["low"] - theory, diff_high=op["high"] - theory, kind="against theory",
                   pl_ratio=math.nan, pl_low=math.nan, pl_high=math.nan)
        return row
    lower = "lower_bound" in (op["kind"], dp["kind"])
    row.update(ratio=_centre(op) / _centre(dp) - 1.0, diff=_centre(op) - _centre(dp))
    row.update(conservative(op, dp) if not lower else
               {"ratio_low": math.nan, "ratio_high": math.nan, "diff_low": math.nan, "diff_high": math.nan})
    row["kind"] = "lower bound / lower bound" if lower else "certified"
    if not lower and curve_op and curve_dp:
        r, lo, hi = joint_ratio_interval(curve_op, curve_dp)
        row.update(pl_ratio=r - 1.0, pl_low=lo - 1.0, pl_high=hi - 1.0)
    else:
        row.update(pl_ratio=math.nan, pl_low=math.nan, pl_high=math.nan)
    return row


# --------------------------------------------------------------------------------------
# page, table, figure
# --------------------------------------------------------------------------------------
def _pc(point) -> str:
    if point is None:
        return "-"
    if point["kind"] == "bracket":
        return f"[{point['low']:.1f}, {point['high']:.1f}] (bracket)"
    if point["kind"] == "lower_bound":
        return f">= {point['measured']:.1f} (lower bound)"
    return f"{point['measured']:.1f} [{point['low']:.1f}, {point['high']:.1f}]"


def _pct(x, digits=1) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.{digits}f} %"


def _ival(lo, hi, digits=1, pct=True) -> str:
    if lo is None or math.isnan(lo) or hi is None or math.isnan(hi):
        return "-"
    if pct:
        return f"[{100 * lo:+.{digits}f}, {100 * hi:+.{digits}f}] %"
    return f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"


def table_rows(rows) -> list[str]:
    out = ["| d | kappa | pairs | OP p_c | DP p_c | OP - DP (conservative) | OP/DP - 1 (conservative, >= 90 %) | "
           "OP/DP - 1 (joint PL, 95 %) | DP theory | model OP/DP - 1 |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        model = "-" if r["model_op"] is None else _pct(r["model_op"] / r["theory_dp"] - 1.0, 2)
        dp_text = f"theory {r['theory_dp']:.1f}" if r["dp"] is None else _pc(r["dp"])
        diff = (f"{r['diff']:+.1f} " + _ival(r["diff_low"], r["diff_high"], 1, pct=False)).strip()
        ratio = f"{_pct(r['ratio'], 2)} {_ival(r['ratio_low'], r['ratio_high'], 2)}"
        if r["kind"] == "lower bound / lower bound":
            diff, ratio = f"{r['diff']:+.1f} (lower bound / lower bound: no interval)", \
                f"{_pct(r['ratio'], 2)} (lower bound / lower bound: no interval)"
        if r["kind"] == "against theory":
            ratio += " (OP against the DP theory)"
        pl = "-" if math.isnan(r["pl_ratio"]) else f"{_pct(r['pl_ratio'], 2)} {_ival(r['pl_low'], r['pl_high'], 2)}"
        out.append(f"| {r['d']} | {r['kappa']:g} | {r['words']} | {_pc(r['op'])} | {dp_text} | {diff} | {ratio} | "
                   f"{pl} | {r['theory_dp']:.1f} | {model} |")
    return out


def csv_text(rows) -> str:
    fields = ("d", "kappa", "source", "kind", "op_kind", "dp_kind", "op_p_c", "op_low", "op_high", "dp_p_c", "dp_low",
              "dp_high", "diff", "diff_low", "diff_high", "ratio", "ratio_low", "ratio_high", "pl_ratio", "pl_low",
              "pl_high", "theory_dp", "model_op")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(fields)

    def num(x):
        return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.6g}"

    for r in rows:
        op, dp = r["op"], r["dp"]
        w.writerow([r["d"], f"{r['kappa']:g}", r["source"], r["kind"], r["op_kind"], r["dp_kind"],
                    num(op["measured"]), num(op["low"]), num(op["high"]),
                    "" if dp is None else num(dp["measured"]), "" if dp is None else num(dp["low"]),
                    "" if dp is None else num(dp["high"]),
                    *(num(r[k]) for k in ("diff", "diff_low", "diff_high", "ratio", "ratio_low", "ratio_high",
                                          "pl_ratio", "pl_low", "pl_high", "theory_dp", "model_op"))])
    return buf.getvalue()


def figure(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    offsets = {}
    for r in rows:
        n = offsets.setdefault((r["d"], r["kappa"]), 0)
        offsets[(r["d"], r["kappa"])] = n + 1
        x = r["d"] * 2 ** (0.06 * (n - 1))
        y = 100 * r["ratio"]
        if r["kind"] == "certified":
            lo, hi = (r["pl_low"], r["pl_high"]) if not math.isnan(r["pl_ratio"]) else (r["ratio_low"],
                                                                                          r["ratio_high"])
            fmt = "o" if not math.isnan(r["pl_ratio"]) else "s"
            ax.errorbar([x], [y], yerr=[[y - 100 * lo], [100 * hi - y]], fmt=fmt, color="C0", ms=5, capsize=2,
                        lw=1)
        elif r["kind"] == "against theory":
            ax.errorbar([x], [100 * (r["ratio_low"] + r["ratio_high"]) / 2],
                        yerr=[[100 * (r["ratio_high"] - r["ratio_low"]) / 2]], fmt="D", mfc="none", color="C2",
                        ms=6, capsize=3, lw=1)
        elif r["kappa"] == 0.5:   # lower bound / lower bound (the other ranks: in the table only)
            ax.plot([x], [y], "^", mfc="none", color="C3", ms=7)
    ds = np.array([8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512])
    model = [_model(int(d), 1.0) / _dp_theory(int(d), 1.0) - 1.0 for d in ds]
    ax.plot(ds, 100 * np.array(model), "-", color="C1", lw=1.5, label="shared-outputs model / finite-size theory - 1")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.plot([], [], "o", color="C0", label="certified pair, joint 95 % PL interval")
    ax.plot([], [], "s", color="C0", label="certified pair, conservative interval (>= 90 %)")
    ax.plot([], [], "D", mfc="none", color="C2", label="d = 512: OP bracket against the DP theory")
    ax.plot([], [], "^", mfc="none", color="C3", label="rank d/2: lower bound / lower bound (no interval)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("d")
    ax.set_ylabel("OP / DP - 1  (%)")
    ax.set_title("Shared outputs (OP) against own competitors (DP): p_c ratio, optimal memory, gaussian")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def markdown(rows) -> list[str]:
    return [f"Rendered by `python -m experiments run {NAME} --render` from the committed data of the experiments "
            "named in the column \"pairs\" (through `experiments/scoreboard/measurements.py`); nothing is measured "
            "here.  Table: `experiments/op_vs_dp/op_minus_dp.csv`; figure: `op_minus_dp.png`.",
            "",
            *table_rows(rows),
            "",
            "![OP/DP - 1 against d](op_minus_dp.png)"]


def calibration_lines() -> list[str]:
    """The shipped calibration of the shared-outputs term: its points and the fit of gamma."""
    from replica.optimal.cost import expected_cost
    from replica.optimal.shared_outputs import calibration

    table = calibration()
    out = ["| d | p | instances per problem | u = p E[C_p] / d^2 | E[C_p] / d | delta OP | delta DP | p E[C_p] | "
           "r = 1 - delta OP / delta DP | r / (E[C_p] / d) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for pt in table["points"]:
        d, p, op, dp = pt["d"], pt["p"], pt["op"], pt["dp"]
        cost = expected_cost(p).mean
        ratio = op["active"] / dp["active"]
        se = ratio * math.hypot(op["active_stderr"] / op["active"], dp["active_stderr"] / dp["active"])
        out.append(f"| {d} | {p} | {pt['instances']} | {p * cost / d ** 2:.2f} | {cost / d:.3f} | "
                   f"{op['active']:.1f} +- {op['active_stderr']:.1f} | "
                   f"{dp['active']:.1f} +- {dp['active_stderr']:.1f} | "
                   f"{p * cost:.1f} | {100 * (1 - ratio):+.2f} +- {100 * se:.2f} % | "
                   f"{(1 - ratio) / (cost / d):.3f} +- {se / (cost / d):.3f} |")
    prov = table["provenance"]
    out += ["", f"gamma = {table['gamma']:.4f} +- {table['gamma_stderr']:.4f} (weighted least squares through the "
                f"origin of r on E[C_p] / d, all points; `replica/optimal/shared_outputs_calibration.json`, "
                f"{prov['date']}, {prov['cpu_seconds'] / 60:.0f} CPU-minutes; delta: the mean number of active "
                "constraints, its standard error over the instances)."]
    return out


def check_lines(rows) -> list[str]:
    """Every certified pair against the model's OP/DP - 1 (the finite-size theory as the DP)."""
    out = ["| d | pairs | measured OP/DP - 1 | interval | model | inside |", "|---|---|---|---|---|---|"]
    for r in rows:
        if r["kind"] == "lower bound / lower bound" or r["model_op"] is None:
            continue
        model = r["model_op"] / r["theory_dp"] - 1.0
        if math.isnan(r["pl_ratio"]):
            lo, hi, how = r["ratio_low"], r["ratio_high"], "conservative" if r["dp"] is not None else "against theory"
        else:
            lo, hi, how = r["pl_low"], r["pl_high"], "joint PL"
        inside = "yes" if lo <= model <= hi else "**no**"
        out.append(f"| {r['d']} | {r['words']} | {_pct(r['ratio'], 2)} | {_ival(lo, hi, 2)} ({how}) | "
                   f"{_pct(model, 2)} | {inside} |")
    return out


TOLERANCE = 0.02   # the tolerance proposed for the model (that of finite_size)


def absolute_lines() -> list[str]:
    """Every OP point at full rank (the scoreboard's rule) against the model's p_c and the finite-size theory's."""
    from experiments.scoreboard.scoreboard import theory_stderr
    from replica.common.validity import point_verdict

    out = [f"| d | experiment | measured OP p_c | shared_outputs | error | verdict ({100 * TOLERANCE:g} %) | "
           f"finite_size | error | verdict ({100 * TOLERANCE:g} %) |", "|---|---|---|---|---|---|---|---|---|"]
    for (_, problem, d, kappa), pt in sorted(points().items(), key=lambda kv: (kv[0][2], kv[0][0])):
        if problem != "op" or kappa != 1.0:
            continue
        model, theory = _model(d, 1.0), _dp_theory(d, 1.0)
        cells = []
        for value, result in ((model, _model_result(d)), (theory, _dp_result(d, 1.0))):
            stderr = theory_stderr(result)   # the scoreboard's: Monte Carlo and a calibrated constant's error
            error, verdict = point_verdict(value, pt["kind"], pt["measured"], pt["low"], pt["high"], TOLERANCE,
                                           theory_stderr=stderr)
            cells += [f"{value:.1f}", _pct(error, 2), f"**{verdict}**" if verdict == "off" else verdict]
        out.append(f"| {d} | {pt['experiment']} | {_pc(pt)} | " + " | ".join(cells) + " |")
    return out


def _render(job) -> None:
    rows = pairs()
    job.path(TABLE.name).write_text(csv_text(rows))
    figure(rows, job.path(FIGURE.name))
    write_block(job.path(PAGE.name), NAME, markdown(rows), NAME)
    write_block(job.output(NOTE), "shared_outputs_calibration", calibration_lines(), NAME)
    write_block(job.output(NOTE), "shared_outputs_check", [*check_lines(rows), "", *absolute_lines()], NAME)


def main(argv=None) -> int:
    return run(__file__, __doc__, render=_render, argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())
