"""Capacity of ``d_out x d_in`` memories with few outputs: a hull limit and a budget limit.

Derivation: ``notes/rectangular_few_outputs.md``.  Write ``y_mu = W e_mu``.  Input ``mu``
is recalled iff ``y_mu`` lies in the open normal cone ``K_mu`` of its target in the convex
hull of its ``p`` candidates, which is non-empty iff the target is a **vertex** of that
hull.  All ``p`` facts are stored iff the subspace ``L = {W E}`` (dimension
``N = d_in d_out``, all of ``R^{p d_out}`` when ``p <= d_in``) meets ``K_1 x ... x K_p``.
The model is

    P(stored | p) = H(p) K(p),

* the hull factor ``H``, exact for ``p <= d_in`` and independent of ``d_in``: DP
  ``q(p, d_out)^p`` with ``q = E f_0 / p`` (a given one of ``p`` Gaussian points in
  ``R^{d_out}`` is a vertex of their hull), OP ``P(f_0 = p)`` (all ``p`` points are vertices);
* the kinematic (budget) factor ``K`` from the Crofton formula of conic geometry with ``L``
  taken as a uniformly random ``N``-dimensional subspace: ``K = 1`` for ``p <= d_in``, else
  ``2 sum_j P(S = N - 1 - 2j)`` with ``S`` the sum of ``p`` independent ``J``, ``J`` the
  number of active facets of the projection of a standard Gaussian onto a vertex's cone.
  Its centre ``p E[J] = d_in d_out`` is the package's budget equation with the water-filling
  cost replaced by the exact squared distance to the ``d_out``-dimensional cone.

The laws of the point clouds are estimated by Monte Carlo with fixed seeds: at each
``(d_out, p)``, ``max(60, round(24000 / p))`` clouds of ``p`` Gaussian points, every point used
as a target; exact vertex tests (a direction certificate, else a positive projection
residual, else a bounded LP).  They depend on ``(d_out, p, replica)`` only, not on ``d_in``.
``p_c`` is the mean of ``replicas`` independent Monte-Carlo replicas and ``stderr`` their
standard error.

Two files ship the statistics: ``few_outputs_table.json`` (every point the shapes computed
so far used, read bit for bit) and ``few_outputs_grid.npz`` (:func:`grid_points`: for every
``d_out`` from 1 to 32 and replicas 0-2, the walk ``p = d_out + 2``, x1.2, ... of
:func:`_replica_root` up to the hull limit (``d_out <= 16``) or ``p = 640``, and for
``d_out <= 16`` a geometric grid of ratio 1.1 below it).  A replica's root needs the walk and four points around a first
root; a point that ships is read, one that does not is interpolated in ``ln p`` between the
shipped points around it (:func:`interpolated_statistics`), and only a point outside both is
sampled (seconds to minutes each, kept in memory).  So a new shape inside the grid costs the
root search only (milliseconds); its ``p_c`` differs from that of sampling the four points
(``_replica_root(..., interpolate=False)``) by the Monte-Carlo noise of those points: at 17
shapes, ``d_out`` 5 to 32, by at most 1.95 of the sampled value's standard errors (root mean
square 1.0), 1.42 of the two combined (``notes/rectangular_few_outputs.md``; tested at
24 x 10 in ``tests/replica/test_few_outputs.py``).

The grid covers every ``d_in`` for ``d_out <= 16`` (the walk ends at the hull limit,
``p <= 683``) and, for ``17 <= d_out <= 32``, the shapes whose walk ends below ``p = 640``
(``p_c`` up to about 500; checked: ``d_in`` up to 217 at ``d_out = 17``, 173 at 18-21, 139 at
22-26, 111 at 27-32); beyond, the missing points are sampled as before.  2224 points,
112 kB, built in 38 min (one thread on a shared machine: 16 min for ``d_out <= 16``, 21 min
for the rest) by::

    python -c "import replica.variants.few_outputs as f; f.write_grid()"

"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import linprog, nnls

from ..common.checks import check_choice, check_int
from ..common.results import Result
from ..common.validity import Validity, reports_validity

__all__ = ["few_outputs_capacity", "FewOutputsCapacityResult", "cloud_statistics", "nonvertex_probability",
           "is_vertex", "hull_factor_model", "interpolated_statistics", "grid_points", "write_grid", "write_table"]

TABLE = Path(__file__).resolve().parent / "few_outputs_table.json"
GRID = Path(__file__).resolve().parent / "few_outputs_grid.npz"
GRID_RATIO = 1.1  # the grid's spacing in p (besides the points p = d_out + 2, x1.2, ... of the walk)
# the walk of the grid stops below GRID_TOP_P[d_out <= 16] or where P(stored) < 0.05 at every
# d_in (the hull limit, which ends it for d_out <= 16); the geometric grid of GRID_RATIO stops at
# GRID_FINE_TOP_P[d_out <= 16] (above it, and for d_out > 16: the walk's x1.2 only)
GRID_TOP_P = {True: 1000, False: 640}
GRID_FINE_TOP_P = {True: 420, False: 0}
GRID_TOP_D_IN = 10**9
MAX_BRACKET = 1.25  # interpolate between shipped points at most this factor apart
TARGETS_PER_POINT = 24000
COMPUTED: dict = {}  # statistics computed in this process (not in the table)


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    data = json.loads(TABLE.read_text())
    return {"seed": int(data["seed"]), "entries": dict(data["entries"])}


GRID_FIELDS = ("d_out", "p", "rep", "n_clouds", "nonvert_mean", "nonvert_var", "all_vertex", "mean_dist2")


@functools.lru_cache(maxsize=1)
def _grid() -> dict:
    """The shipped grid (``few_outputs_grid.npz``) as ``{(d_out, p, replica): row}``; empty if absent."""
    if not GRID.exists():
        return {}
    with np.load(GRID) as data:
        if int(data["seed"]) != _table()["seed"]:
            raise RuntimeError(f"{GRID.name}: seed {int(data['seed'])} is not the table's {_table()['seed']}")
        columns = {name: data[name] for name in GRID_FIELDS}
        jcount = data["jcount"]
    rows = {}
    for i in range(len(columns["p"])):
        d_out, p, replica = int(columns["d_out"][i]), int(columns["p"][i]), int(columns["rep"][i])
        rows[(d_out, p, replica)] = i
    return {"rows": rows, "columns": columns, "jcount": jcount}


@functools.lru_cache(maxsize=None)
def _grid_entry(d_out: int, p: int, replica: int) -> dict | None:
    grid = _grid()
    i = grid.get("rows", {}).get((d_out, p, replica)) if grid else None
    if i is None:
        return None
    c = grid["columns"]
    return {"p": p, "d_out": d_out, "n_clouds": int(c["n_clouds"][i]), "rep": replica,
            "nonvert_mean": float(c["nonvert_mean"][i]), "nonvert_var": float(c["nonvert_var"][i]),
            "all_vertex": float(c["all_vertex"][i]), "jcount": [int(x) for x in grid["jcount"][i, :d_out + 1]],
            "mean_dist2": float(c["mean_dist2"][i])}


def _shipped(p: int, d_out: int, replica: int) -> dict | None:
    """The statistics of ``(d_out, p, replica)`` if they ship with the package (table, then grid), else None."""
    clouds = max(60, int(round(TARGETS_PER_POINT / p)))
    entry = _table()["entries"].get(f"{d_out},{p},{clouds},{replica}")
    return entry if entry is not None else _grid_entry(d_out, p, replica)


@functools.lru_cache(maxsize=None)
def _shipped_ps(d_out: int, replica: int) -> np.ndarray:
    """The sorted ``p`` of every shipped point of ``(d_out, replica)`` (table and grid)."""
    ps = {int(v["p"]) for v in _table()["entries"].values() if v["d_out"] == d_out and v["rep"] == replica}
    ps |= {p for (d, p, r) in _grid().get("rows", {}) if d == d_out and r == replica}
    return np.array(sorted(ps), dtype=np.int64)


def _between(a: float, b: float, t: float, geometric: bool) -> float:
    if geometric and a > 0 and b > 0:
        return math.exp((1 - t) * math.log(a) + t * math.log(b))
    return (1 - t) * a + t * b


def interpolated_statistics(p: int, d_out: int, replica: int = 0) -> dict | None:
    """Statistics at ``p`` from the two nearest shipped points around it, in ``ln p``; None if none bracket it.

    Used at a shape whose points near its root were never sampled: the bracketing shipped
    points (at most a factor :data:`MAX_BRACKET` apart) give, linearly in ``ln p``, the law of
    ``J``, the fraction of all-vertex clouds and ``E dist^2``, and, log-linearly (a power law
    between the two points; linearly if either is 0), the mean and variance of the number of
    non-vertices.  A shipped ``p`` is returned as is.
    """
    shipped = _shipped(p, d_out, replica)
    if shipped is not None:
        return shipped
    ps = _shipped_ps(d_out, replica)
    i = int(np.searchsorted(ps, p))
    if i == 0 or i == len(ps) or ps[i] / ps[i - 1] > MAX_BRACKET:
        return None
    low, high = _shipped(int(ps[i - 1]), d_out, replica), _shipped(int(ps[i]), d_out, replica)
    t = math.log(p / ps[i - 1]) / math.log(ps[i] / ps[i - 1])
    counts = [np.asarray(s["jcount"], dtype=float) for s in (low, high)]
    pmf = (1 - t) * counts[0] / counts[0].sum() + t * counts[1] / counts[1].sum()
    targets = (1 - t) * counts[0].sum() + t * counts[1].sum()
    return {"p": p, "d_out": d_out, "rep": replica, "interpolated": True,
            "n_clouds": (1 - t) * low["n_clouds"] + t * high["n_clouds"],
            "nonvert_mean": _between(low["nonvert_mean"], high["nonvert_mean"], t, True),
            "nonvert_var": _between(low["nonvert_var"], high["nonvert_var"], t, True),
            "all_vertex": _between(low["all_vertex"], high["all_vertex"], t, False),
            "jcount": (pmf * targets).tolist(),
            "mean_dist2": _between(low["mean_dist2"], high["mean_dist2"], t, False)}


def _is_vertex(points, mu, differences, residual, certified) -> bool:
    """Whether ``points[mu]`` is a vertex of their hull (``differences`` = points[mu] - the others)."""
    if certified[mu] or residual > 1e-9:
        return True
    d = points.shape[1]
    # bounded LP: max t s.t. a_rho . v >= t, |v_i| <= 1, t <= 1; a vertex iff t* > 0
    cost = np.zeros(d + 1)
    cost[-1] = -1.0
    a_ub = np.hstack([-differences, np.ones((len(differences), 1))])
    res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(len(differences)), bounds=[(-1, 1)] * d + [(None, 1)],
                  method="highs")
    if res.status != 0:
        raise RuntimeError(f"vertex test: the LP ended with status {res.status} ({res.message})")
    return -res.fun > 1e-9


def is_vertex(points, mu) -> bool:
    """Whether ``points[mu]`` is a vertex of the convex hull of the rows of ``points`` (one LP)."""
    points = np.asarray(points, dtype=np.float64)
    return _is_vertex(points, mu, points[mu] - np.delete(points, mu, axis=0), 0.0, np.zeros(len(points), bool))


def _certified_vertices(points, rng, directions=256):
    """Points that strictly maximise some direction (the data directions and random ones)."""
    dirs = np.vstack([points, points - points.mean(axis=0), rng.standard_normal((directions, points.shape[1]))])
    scores = points @ dirs.T
    top2 = np.partition(scores, -2, axis=0)[-2:]
    best = np.argmax(scores, axis=0)
    strict = (top2[1] - top2[0]) > 1e-9 * (np.abs(top2[1]) + 1.0)
    out = np.zeros(len(points), dtype=bool)
    out[best[strict]] = True
    return out


def _clouds(p, d_out, clouds, rng):
    """Non-vertices per cloud and the counts of J over vertex targets, with the mean squared distance."""
    nonvertices = np.zeros(clouds, dtype=int)
    j_counts = np.zeros(d_out + 1, dtype=np.int64)
    distance2 = 0.0
    for c in range(clouds):
        points = rng.standard_normal((p, d_out))
        gauss = rng.standard_normal((p, d_out))
        certified = _certified_vertices(points, rng)
        for mu in range(p):
            differences = points[mu] - np.delete(points, mu, axis=0)
            lam, residual = nnls(differences.T, -gauss[mu])
            if not _is_vertex(points, mu, differences, residual, certified):
                nonvertices[c] += 1
                continue
            j_counts[min(int(np.count_nonzero(lam > 1e-12 * max(1.0, lam.max(initial=0.0)))), d_out)] += 1
            distance2 += float(np.sum((differences.T @ lam) ** 2))
    return nonvertices, j_counts, distance2


def _clouds_compiled(p, d_out, clouds, rng):
    """:func:`_clouds` on the same draws, by the numba kernel ``cloud_counts`` (NNLS and least-distance tests).

    The clouds, their Gaussian vectors and the certification directions are drawn in the
    same order as :func:`_clouds` (the directions are not needed by the exact test, but
    drawing them keeps the stream), so the statistics are those of :func:`_clouds` on the
    same clouds up to rounding in the projections (tested).
    """
    from ..optimal._image_kernels import cloud_counts

    points = np.empty((clouds, p, d_out))
    gauss = np.empty((clouds, p, d_out))
    for c in range(clouds):
        points[c] = rng.standard_normal((p, d_out))
        gauss[c] = rng.standard_normal((p, d_out))
        rng.standard_normal((256, d_out))  # the certification directions of _clouds
    nonvertices = np.zeros(clouds, dtype=np.int64)
    j_counts = np.zeros(d_out + 1, dtype=np.int64)
    distance2 = cloud_counts(points, gauss, nonvertices, j_counts, 4 * (p + d_out) + 20)
    return nonvertices, j_counts, float(distance2)


@functools.lru_cache(maxsize=None)
def cloud_statistics(p: int, d_out: int, replica: int = 0) -> dict:
    """Monte-Carlo statistics of ``p`` Gaussian points in ``R^{d_out}`` (shipped, if they are).

    ``max(60, round(24000 / p))`` clouds, every point a target.  A point of the shipped table
    or grid is read from it, bit for bit (the grid holds what this function samples, with
    the same seeds); another is computed by the compiled kernel
    (:func:`_clouds_compiled`: the statistics of :func:`_clouds` on the same clouds, 10 to 40
    times faster).

    Returns
    -------
    dict
        ``nonvert_mean``, ``nonvert_var`` (non-vertices per cloud), ``all_vertex`` (fraction
        of clouds whose points are all vertices), ``jcount`` (counts of J), ``n_clouds``.
    """
    clouds = max(60, int(round(TARGETS_PER_POINT / p)))
    table = _table()
    key = f"{d_out},{p},{clouds},{replica}"
    shipped = _shipped(p, d_out, replica)
    if shipped is not None:
        return shipped
    if key in COMPUTED:
        return COMPUTED[key]
    rng = np.random.default_rng(np.random.SeedSequence([table["seed"], d_out, p, replica]))
    nonvertices, j_counts, distance2 = _clouds_compiled(p, d_out, clouds, rng)
    COMPUTED[key] = {"p": p, "d_out": d_out, "n_clouds": clouds, "rep": replica,
                     "nonvert_mean": float(nonvertices.mean()), "nonvert_var": float(nonvertices.var(ddof=1)),
                     "all_vertex": float(np.mean(nonvertices == 0)), "jcount": j_counts.tolist(),
                     "mean_dist2": distance2 / max(1, int(j_counts.sum()))}
    return COMPUTED[key]


def nonvertex_probability(d: int, p: int) -> float:
    """``pi(d, p)``: the probability that one of ``p`` Gaussian points of ``R^d`` is not a vertex of their hull."""
    return float(cloud_statistics(p, d)["nonvert_mean"]) / p


def write_table(path: Path = TABLE) -> int:
    """Add the statistics computed in this process to the shipped table; return how many were added."""
    data = json.loads(Path(path).read_text())
    added = {k: v for k, v in COMPUTED.items() if k not in data["entries"]}
    data["entries"].update(added)
    Path(path).write_text(json.dumps(data, separators=(",", ":"), sort_keys=True))
    _table.cache_clear()
    return len(added)


def grid_points(d_out: int, replica: int, top_p: int | None = None, top_d_in: int = GRID_TOP_D_IN,
                ratio: float = GRID_RATIO, fine_top_p: int | None = None) -> list:
    """The ``p`` of the shipped grid at ``(d_out, replica)`` (sampling the walk to find its end).

    The walk of :func:`_replica_root` (``p = d_out + 2``, x1.2, ...) up to where ``P(stored)``
    at ``d_in = top_d_in`` (default: any ``d_in``, the hull factor alone) is below 0.05 for both
    problems, or below ``top_p`` (default :data:`GRID_TOP_P`: 1000 for ``d_out <= 16``, where the
    hull limit ends the walk first, else 640); and between ``d_out + 2`` and the walk's end, up
    to ``fine_top_p`` (:data:`GRID_FINE_TOP_P`: 420 for ``d_out <= 16``, else none), the
    integers nearest a geometric grid of ``ratio``.
    """
    top_p = GRID_TOP_P[d_out <= 16] if top_p is None else top_p
    fine_top_p = GRID_FINE_TOP_P[d_out <= 16] if fine_top_p is None else fine_top_p
    walk, p = [], d_out + 2
    while p < top_p:
        walk.append(p)
        stats = cloud_statistics(p, d_out, replica)
        if max(_raw_probability(stats, p, top_d_in, d_out, problem) for problem in ("dp", "op")) < 0.05:
            break
        p = max(p + 1, int(round(p * 1.2)))
    steps = int(math.ceil(math.log(walk[-1] / walk[0]) / math.log(ratio)))
    fine = {int(round(walk[0] * ratio ** k)) for k in range(steps + 1)}
    return sorted(set(walk) | {q for q in fine if q <= min(walk[-1], fine_top_p)})


def write_grid(path: Path = GRID, d_outs=range(1, 33), replicas: int = 3, log=None) -> int:
    """Sample the grid of :func:`grid_points` for every ``d_out`` and replica and write it; return its size.

    Written after every ``d_out`` (an interrupted run keeps what it finished; points already
    in the file or the table are read, not sampled again).  Statistics are those of
    :func:`cloud_statistics` (same seeds), so a grid point equals the point sampled on demand.
    """
    path = Path(path)
    rows = {}
    if path.exists():
        with np.load(path) as data:
            for i in range(len(data["p"])):
                key = (int(data["d_out"][i]), int(data["p"][i]), int(data["rep"][i]))
                rows[key] = {name: data[name][i].item() for name in GRID_FIELDS}
                rows[key]["jcount"] = data["jcount"][i, :key[0] + 1].tolist()
    for d_out in d_outs:
        for replica in range(replicas):
            for p in grid_points(d_out, replica):
                if (d_out, p, replica) not in rows:
                    rows[(d_out, p, replica)] = dict(cloud_statistics(p, d_out, replica))
        keys = sorted(rows)
        width = max(k[0] for k in keys) + 1
        jcount = np.zeros((len(keys), width), dtype=np.int32)
        for i, k in enumerate(keys):
            jcount[i, :len(rows[k]["jcount"])] = rows[k]["jcount"]
        columns = {name: np.array([rows[k][name] for k in keys],
                                  dtype=np.int32 if name in ("d_out", "p", "rep", "n_clouds") else np.float64)
                   for name in GRID_FIELDS}
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, seed=np.int64(_table()["seed"]), jcount=jcount, **columns)
        tmp.replace(path)
        if log:
            log(f"d_out = {d_out}: {len(keys)} points")
    _grid.cache_clear()
    _grid_entry.cache_clear()
    _shipped_ps.cache_clear()
    return len(rows)


def kinematic_factor(pmf: np.ndarray, p: int, d_in: int, d_out: int) -> float:
    """Crofton probability ``2 sum_j P(S = N - 1 - 2j)``, ``S`` the sum of ``p`` i.i.d. J with law ``pmf``."""
    if p <= d_in:
        return 1.0
    pmf = np.asarray(pmf, dtype=np.float64)
    size = p * (len(pmf) - 1) + 1
    # the law of S by one FFT (the p-fold convolution; absolute error about 1e-15, which
    # the root search on K H = 1/2 does not see), instead of p sequential convolutions
    length = 1 << (size - 1).bit_length()
    law = np.fft.irfft(np.fft.rfft(pmf, length) ** p, length)[:size]
    index = np.arange(d_in * d_out - 1, -1, -2)
    return float(min(1.0, max(0.0, 2.0 * law[index[index < size]].sum())))


class hull_factor_model:  # noqa: N801 - used like a function of p, as in the note
    """Smoothed hull factor ``H(p)`` and law of ``J`` from the Monte-Carlo points of one replica.

    ``H``: ``ln m(p)`` quadratic in ``ln p`` (weighted least squares, near ``center`` when
    given), ``m`` = E[number of non-vertices] (DP: ``H = (1 - m/p)^p``) or
    ``-ln P(f_0 = p)`` (OP: ``H = exp(-m)``).  Law of ``J``: linear in ``ln p`` between points.
    """

    def __init__(self, stats: dict, d_out: int, problem: str, center: float | None = None):
        ps = np.array(sorted(stats))
        self.ps, self.d_out, self.problem = ps, d_out, problem
        self.pmfs = np.array([np.array(stats[p]["jcount"], float) / max(1, sum(stats[p]["jcount"])) for p in ps])
        m, var = self._defects(stats, ps)
        ok = m > 0
        self.coef = None
        if ok.sum() >= 3:  # fewer: no non-vertex seen, H = 1 within the Monte-Carlo resolution
            x, y = np.log(ps[ok]), np.log(m[ok])
            weight = m[ok] / np.sqrt(np.maximum(var[ok], 1e-300))
            if center is not None:
                near = np.abs(x - math.log(center)) < math.log(1.6)
                if near.sum() >= 4:
                    x, y, weight = x[near], y[near], weight[near]
            self.coef = np.polyfit(x, y, 2 if len(x) >= 4 else 1, w=weight)

    def _defects(self, stats, ps):
        if self.problem == "dp":
            m = np.array([stats[p]["nonvert_mean"] for p in ps])
            var = np.array([stats[p]["nonvert_var"] / stats[p]["n_clouds"] for p in ps])
            return m, var
        all_vertex = np.array([stats[p]["all_vertex"] for p in ps])
        n = np.array([stats[p]["n_clouds"] for p in ps])
        a = np.clip(all_vertex, 0.5 / n, 1 - 0.5 / n)
        return np.where(all_vertex >= 1.0, 0.0, -np.log(a)), (1 - a) / (n * a)

    def hull(self, p) -> float:
        if p <= self.d_out + 1 or self.coef is None:
            return 1.0
        m = math.exp(np.polyval(self.coef, math.log(p)))
        if self.problem == "dp":  # far beyond the grid the fit can give m >= p: no vertex left
            return (1.0 - m / p) ** p if m < p else 0.0
        return math.exp(-m)

    def pmf(self, p) -> np.ndarray:
        lp = np.log(self.ps)
        x = min(max(math.log(p), lp[0]), lp[-1])
        i = min(int(np.searchsorted(lp, x)), len(lp) - 1)
        if i == 0:
            return self.pmfs[0]
        t = (x - lp[i - 1]) / (lp[i] - lp[i - 1])
        return (1 - t) * self.pmfs[i - 1] + t * self.pmfs[i]


def _logit(x: float) -> float:
    x = min(max(x, 1e-12), 1 - 1e-12)
    return math.log(x / (1 - x))


def _root(f, low: int, high: int) -> float:
    """The root of the decreasing ``f(p) - 1/2`` on integers, interpolated in (ln p, logit P)."""
    if f(low) < 0.5:
        return float(low)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if f(mid) >= 0.5 else (low, mid)
    a, b = _logit(f(low)), _logit(f(high))
    t = a / (a - b) if a != b else 0.5
    return math.exp(math.log(low) + t * (math.log(high) - math.log(low)))


def _raw_probability(stats: dict, p: int, d_in: int, d_out: int, problem: str) -> float:
    """``H K`` at one Monte-Carlo point, without smoothing (the walk of the grid)."""
    if p <= d_out + 1:  # generic points: all are vertices
        return 1.0
    counts = np.array(stats["jcount"], dtype=float)
    hull = (1.0 - stats["nonvert_mean"] / p) ** p if problem == "dp" else stats["all_vertex"]
    return hull * kinematic_factor(counts / counts.sum(), p, d_in, d_out)


@functools.lru_cache(maxsize=256)
def _replica_root(d_in, d_out, problem, replica, interpolate=True):
    """The root of one replica: a grid ``p = d_out + 2``, x1.2, ... then four points around the first root.

    The four points are read from the shipped statistics when they are there; otherwise, with
    ``interpolate`` (the default), interpolated between the shipped points around them
    (:func:`interpolated_statistics`), else sampled (seconds to minutes; ``interpolate=False``
    always samples them, the reference the interpolation is tested against).
    Remembered: a pure function of its arguments and of the (shipped or seeded) statistics.
    """
    stats, p = {}, d_out + 2
    while True:  # walk up until the raw (unsmoothed) probability is below 0.05
        stats[p] = cloud_statistics(p, d_out, replica)
        if _raw_probability(stats[p], p, d_in, d_out, problem) < 0.05 or p > 20000:
            break
        p = max(p + 1, int(round(p * 1.2)))
    grid = sorted(stats)

    def probability(model):
        return lambda q: model.hull(q) * kinematic_factor(model.pmf(q), q, d_in, d_out)

    model = hull_factor_model(stats, d_out, problem)
    first = _root(probability(model), d_out + 1, grid[-1])
    for q in sorted({int(round(first * c)) for c in (0.94, 0.98, 1.02, 1.06)} - set(grid)):
        if q > d_out + 1:
            near = interpolated_statistics(q, d_out, replica) if interpolate else None
            stats[q] = near if near is not None else cloud_statistics(q, d_out, replica)
    model = hull_factor_model(stats, d_out, problem, center=first)
    return _root(probability(model), d_out + 1, max(stats)), model


@dataclass(frozen=True)
class FewOutputsCapacityResult(Result):
    """Capacity of a ``d_out x d_in`` memory from ``P(stored | p) = H(p) K(p)`` (:func:`few_outputs_capacity`).

    ``status``: ``"converged"`` (every replica found its root inside its grid) or
    ``"not_converged"`` (a replica's grid reached its end, ``p > 20000``).
    """

    STATUSES = ("converged", "not_converged")

    d_in: int
    d_out: int
    problem: str
    p_c: float  # mean over the replicas
    stderr: float  # standard error over the replicas (Monte Carlo)
    hull_only_p_c: float  # the root of H(p) = 1/2 alone (no budget limit)
    replicas: tuple = ()
    status: str = "converged"
    converged: bool = True
    message: str = ""
    validity: Validity | None = field(default=None)
    model: str = ""  # the registry model that computed it (replica.common.registry)

    @property
    def alpha(self) -> float:
        """``p_c ln p_c / (d_in d_out)``."""
        return self.p_c * math.log(self.p_c) / (self.d_in * self.d_out)


@reports_validity("few_outputs_capacity")
def few_outputs_capacity(d_in, d_out, problem="dp", *, replicas=3) -> FewOutputsCapacityResult:
    """Capacity of a ``d_out x d_in`` memory limited by the outputs' hull and the weight budget.

    ``P(stored | p) = H(p) K(p)`` (module docstring; ``notes/rectangular_few_outputs.md``);
    ``p_c`` solves ``P(stored | p_c) = 1/2``.  Made for few outputs (``d_out / d_in <= 1/4``,
    where the hull limit binds and :func:`replica.rectangular_capacity`'s budget theory is
    off); at ``d_out / d_in = 1/4`` the two agree.  Stated tolerance: 8 % against certified
    measurements (``experiments/rectangular``).

    Parameters
    ----------
    d_in, d_out : int
        Input and output dimensions, ``d_in >= 2``, ``1 <= d_out <= 256``.
    problem : {"dp", "op"}
        Own candidates per input, or shared outputs (the OP's budget factor is taken as the
        DP's, an approximation: ``notes/rectangular_few_outputs.md``, section 6).
    replicas : int, optional
        Independent Monte-Carlo replicas (``2 <= replicas <= 3``; the shipped table holds 3).

    Returns
    -------
    FewOutputsCapacityResult
        ``p_c``, ``stderr``, ``hull_only_p_c``, ``replicas``, ``alpha``, ``status``,
        ``message`` and ``validity``.

    Raises
    ------
    ValueError
        If an argument is outside its range.
    """
    d_in, d_out = check_int(d_in, "d_in", low=2), check_int(d_out, "d_out", low=1, high=256)
    problem = check_choice(problem, "problem", ("dp", "op"))
    replicas = check_int(replicas, "replicas", low=2, high=3)
    roots, model = [], None
    for replica in range(replicas):
        root, fitted = _replica_root(d_in, d_out, problem, replica)
        roots.append(root)
        model = model or fitted
    roots = np.array(roots)
    p_c, stderr = float(roots.mean()), float(roots.std(ddof=1) / math.sqrt(len(roots)))
    hull_only = _root(model.hull, d_out + 1, 4 * int(max(model.ps)))
    converged = bool(np.all(roots < 20000))
    return FewOutputsCapacityResult(
        d_in, d_out, problem, p_c, stderr, hull_only, tuple(float(r) for r in roots),
        "converged" if converged else "not_converged", converged,
        f"p_c = {p_c:.2f} +- {stderr:.2f} (Monte Carlo, {replicas} replicas); hull limit alone {hull_only:.1f}")
