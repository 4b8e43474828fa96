"""The tabulated sample functions of the default seed: ``E[C_p]`` in microseconds.

:class:`replica.optimal.cost.CostEstimator` with the default seed is a smooth function of
``ln p`` for each sample size; the shipped table ``cost_table.npz`` holds its values on a
grid in ``ln p`` (written by :func:`write_cost_table`), and :class:`TabulatedCostEstimator`
interpolates them, so the capacity's root search runs on the same estimator without
sampling (``notes/finite_size_capacity.md``, section "Monte Carlo").  Any other seed or
``rel_tol``, a margin above 0, a load outside the table, :class:`reference_monte_carlo`
or ``REPLICA_NO_TABLES=1`` run the Monte Carlo.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..common.seeds import resolve_seed
from .cost import NORMAL_LAW, SMALL_KEPT, CostEstimator
from .order_statistics import default_order_count

__all__ = ["COST_TABLE", "CostTableMiss", "TabulatedCostEstimator", "tabulated_estimator", "reference_monte_carlo",
           "tables_enabled", "write_cost_table", "cost_table", "TABLE_ROWS"]


COST_TABLE = Path(__file__).resolve().parent / "cost_table.npz"
"""Shipped table of :class:`TabulatedCostEstimator` (written by :func:`write_cost_table`)."""

TABLE_ROWS = tuple(range(2048, 16384 + 1, 512))
"""Sample sizes tabulated: every size the default searches choose (multiples of 512, :func:`rows_for`)."""
TABLE_STEP = 0.04
"""Grid step in ``ln p`` (6-point Lagrange interpolation: relative error about 1e-14, tested)."""
TABLE_ORDER = 48
"""Order statistics per row in the table (truncation bound below 1e-15 of the mean up to ``p = 2^16``)."""
TABLE_MAX_P = {1: 2.0**16, 2: 2.0**13, 3: 2.0**13}
"""Tabulated ``top_k`` and the largest ``p`` of each (``d`` up to about 900 at top_k = 1)."""


class CostTableMiss(LookupError):
    """A query outside the shipped table (the caller falls back to the Monte-Carlo estimator)."""


_TABLES_OFF = 0


class reference_monte_carlo:
    """Context manager: inside it the capacities ignore the shipped table and run the Monte-Carlo reference.

    ``with replica.optimal.cost.reference_monte_carlo(): replica.capacity(64)`` is today's
    estimator evaluated afresh (the table reproduces it to about 1e-12 relative).  The
    environment variable ``REPLICA_NO_TABLES=1`` does the same for a whole process.
    """

    def __enter__(self):
        global _TABLES_OFF
        _TABLES_OFF += 1
        return self

    def __exit__(self, *exc):
        global _TABLES_OFF
        _TABLES_OFF -= 1
        return False


def tables_enabled() -> bool:
    """Whether the shipped tables may answer (not inside :class:`reference_monte_carlo`, no ``REPLICA_NO_TABLES``)."""
    return _TABLES_OFF == 0 and os.environ.get("REPLICA_NO_TABLES", "") in ("", "0")


def _lagrange6(values, x0, step, x):
    """6-point Lagrange interpolation of ``values`` on the uniform grid ``x0 + step i`` at ``x`` (inside it)."""
    t = (x - x0) / step
    n = len(values)
    if not (-1e-9 <= t <= n - 1 + 1e-9):
        raise CostTableMiss(x)
    i = min(max(int(math.floor(t)) - 2, 0), n - 6)
    s = t - i
    total = 0.0
    for a in range(6):
        w = 1.0
        for b in range(6):
            if b != a:
                w *= (s - b) / (a - b)
        total += w * float(values[i + a])
    return total


def _prefix_estimate(values, control, cmean, rows):
    """The control-variate estimate of :meth:`CostEstimator.estimate` on the first ``rows`` rows."""
    v, c = values[:rows], control[:rows]
    dc = c - c.mean()
    var_c = float(np.dot(dc, dc))
    beta = float(np.dot(v - v.mean(), dc)) / var_c if var_c > 0 else 0.0
    adjusted = v - beta * (c - cmean)
    return float(adjusted.mean()), float(adjusted.std(ddof=2) / math.sqrt(rows))


def _mixed_estimate(means, gram, cmeans, weights, rows):
    """:func:`_prefix_estimate` of ``sum_i w_i (values_i, control_i)`` from the means and the centred Gram matrix.

    ``means``: ``(v_1, c_1, v_2, c_2, ...)``; ``gram``: their centred cross products over
    the rows; ``cmeans``: the control means ``m_i``.
    """
    a = np.zeros(len(means))
    g = np.zeros(len(means))
    a[0::2] = weights
    g[1::2] = weights
    var_c = float(g @ gram @ g)
    cov = float(a @ gram @ g)
    beta = cov / var_c if var_c > 0 else 0.0
    mean_v, mean_c = float(a @ means), float(g @ means)
    cmean = float(np.dot(weights, cmeans))
    var = max(float(a @ gram @ a) - 2.0 * beta * cov + beta * beta * var_c, 0.0)
    return mean_v - beta * (mean_c - cmean), math.sqrt(var / (rows - 2)) / math.sqrt(rows)


class _StreamSeed:
    def __init__(self, seed):
        self.seed = seed


class TabulatedCostEstimator:
    """:class:`CostEstimator` of the default seed at margin 0 (N(0, 1) fields), read from the shipped table.

    The table holds, for every sample size of :data:`TABLE_ROWS`, the estimator's mean
    and standard error on the first ``rows`` rows of the ``DEFAULT_SEED`` stream, on a grid
    in ``ln p`` (smooth there: common random numbers), and the sufficient statistics of
    the integer loads with fewer than 32 constrained competitors (where ``p E[C_p]`` is
    interpolated linearly between integers).  ``estimate`` returns what
    :meth:`CostEstimator.estimate` returns (relative difference about 1e-12; the truncation
    bound, below 1e-8 of the mean, is reported as 0), or raises :class:`CostTableMiss`.
    """

    law = NORMAL_LAW

    def __init__(self, top_k: int, table: dict):
        self.margin = 0.0
        self.top_k = int(top_k)
        self.stream = _StreamSeed(int(table["seed"]))
        self.order_count = None
        self._table = table
        self._row_index = {int(r): i for i, r in enumerate(table["rows"])}
        self._x0 = float(table[f"k{top_k}_x0"])
        self._step = float(table["step"])
        self._means = table[f"k{top_k}_mean"]
        self._errs = table[f"k{top_k}_err"]
        self._int_means = table[f"k{top_k}_int_means"]  # (rows, integers, 2)
        self._pair_gram = table[f"k{top_k}_pair_gram"]  # (rows, integers - 1, 4, 4)
        self._int_cmeans = table[f"k{top_k}_int_cmeans"]  # (integers,)

    def _integer(self, p_int: int, r: int):
        """Index of the integer load ``p_int`` and the Gram block it sits in."""
        i = p_int - self.top_k - 1
        if not 0 <= i < self._int_cmeans.size:
            raise CostTableMiss(p_int)
        return i

    def _small(self, p: float, r: int, rows: int):
        """Below 32 constrained competitors: the integer load or the linear mix of its two neighbours."""
        p_lo, p_hi = math.floor(p), math.ceil(p)
        if p_lo == p_hi:
            i = self._integer(p_lo, r)
            pair = min(i, self._pair_gram.shape[1] - 1)
            block = slice(0, 2) if pair == i else slice(2, 4)
            mean, err = _mixed_estimate(self._int_means[r, i], self._pair_gram[r, pair][block, block],
                                        self._int_cmeans[i:i + 1], np.ones(1), rows)
            return mean, err, int(p_lo) - self.top_k
        i = self._integer(p_lo, r)
        self._integer(p_hi, r)
        w_hi = (p - p_lo) * p_hi / p
        w_lo = (p_hi - p) * p_lo / p
        means = np.concatenate([self._int_means[r, i], self._int_means[r, i + 1]])
        mean, err = _mixed_estimate(means, self._pair_gram[r, i], self._int_cmeans[i:i + 2],
                                    np.array([w_lo, w_hi]), rows)
        return mean, err, int(p_hi) - self.top_k

    def estimate(self, p: float, rows: int, margin: float | None = None, trunc_rel_tol: float = 1e-6):
        """``(mean, stderr, truncation bound, order statistics, complete)`` as :meth:`CostEstimator.estimate`."""
        if margin is not None and float(margin) != 0.0:
            raise CostTableMiss(margin)
        r = self._row_index.get(int(rows))
        if r is None or int(rows) != rows:
            raise CostTableMiss(rows)
        kept_total = p - self.top_k
        if self.order_count is None:
            self.order_count = default_order_count(kept_total)
        if kept_total < SMALL_KEPT:
            mean, err, k = self._small(float(p), r, int(rows))
            return mean, err, 0.0, k, True
        x = math.log(p)
        mean = _lagrange6(self._means[r], self._x0, self._step, x)
        err = _lagrange6(self._errs[r], self._x0, self._step, x)
        return mean, err, 0.0, int(min(self.order_count, math.floor(kept_total + 1e-12))), False


_TABLE_CACHE: dict = {}


def cost_table(path=None) -> dict | None:
    """The shipped table as a dict of arrays (cached), or None when the file is missing."""
    path = COST_TABLE if path is None else Path(path)
    key = str(path)
    if key not in _TABLE_CACHE:
        if not path.exists():
            return None
        with np.load(path) as data:
            _TABLE_CACHE[key] = {name: data[name] for name in data.files}
    return _TABLE_CACHE[key]


def tabulated_estimator(margin, top_k, seed, law=NORMAL_LAW, rel_tol=1e-3):
    """A :class:`TabulatedCostEstimator` when the shipped table covers the call, else None.

    Covered: N(0, 1) fields, margin 0, ``top_k`` in :data:`TABLE_MAX_P`, the seed the table
    was made with (``DEFAULT_SEED``), the default ``rel_tol = 1e-3``, and tables enabled
    (:func:`tables_enabled`).  Loads outside the table raise :class:`CostTableMiss` later.
    """
    if not tables_enabled() or law is not NORMAL_LAW or float(margin) != 0.0 or rel_tol != 1e-3:
        return None
    table = cost_table()
    if table is None or int(seed) != int(table["seed"]) or f"k{int(top_k)}_mean" not in table:
        return None
    return TabulatedCostEstimator(int(top_k), table)


def _table_sample(estimator, p, order):
    """Per-row values, control and control mean at real ``p`` with ``order`` order statistics (regular path)."""
    values, _, control, cmean, _, _ = estimator._at_real_n(p - 1.0, TABLE_ROWS[-1], order)
    return values, control, cmean


def write_cost_table(path=None, top_ks=None, seed=None, progress=False) -> Path:
    """Compute the table of :class:`TabulatedCostEstimator` afresh and write it (``.npz``).

    For every ``top_k`` of :data:`TABLE_MAX_P`: the estimator's mean and standard error at
    every sample size of :data:`TABLE_ROWS` on the grid ``ln p = ln(top_k + 32) + i
    TABLE_STEP`` up to ``ln TABLE_MAX_P[top_k]`` (each grid point is one Monte-Carlo
    evaluation on the largest sample; the smaller ones are its prefixes), and at the
    integer loads ``top_k + 1 .. top_k + 32`` the means and centred Gram matrices of the
    per-row values and controls.  About 5 minutes on one core.

    ``python -c "from replica.optimal.cost import write_cost_table; write_cost_table(progress=True)"``
    """
    path = COST_TABLE if path is None else Path(path)
    seed = resolve_seed(seed)
    top_ks = tuple(TABLE_MAX_P) if top_ks is None else tuple(top_ks)
    rows = np.array(TABLE_ROWS)
    out = {"seed": np.int64(seed), "rows": rows, "step": np.float64(TABLE_STEP), "order": np.int64(TABLE_ORDER),
           "top_k": np.array(top_ks)}
    for top_k in top_ks:
        estimator = CostEstimator(0.0, top_k, seed)
        x0 = math.log(top_k + SMALL_KEPT)
        count = int(math.ceil((math.log(TABLE_MAX_P[top_k]) - x0) / TABLE_STEP)) + 1
        means, errs = np.empty((rows.size, count)), np.empty((rows.size, count))
        for i in range(count):
            values, control, cmean = _table_sample(estimator, math.exp(x0 + i * TABLE_STEP), TABLE_ORDER)
            for r, size in enumerate(rows):
                means[r, i], errs[r, i] = _prefix_estimate(values, control, cmean, int(size))
            if progress and i % 20 == 0:
                print(f"top_k={top_k}: {i + 1}/{count} grid points", flush=True)
        integers = np.arange(top_k + 1, top_k + SMALL_KEPT + 1)
        per_row = [estimator._at_real_n(float(a) - 1.0, TABLE_ROWS[-1], SMALL_KEPT) for a in integers]
        int_means = np.empty((rows.size, integers.size, 2))
        gram = np.empty((rows.size, integers.size - 1, 4, 4))
        for r, size in enumerate(rows):
            size = int(size)
            for i, (values, _, control, _, _, _) in enumerate(per_row):
                int_means[r, i] = values[:size].mean(), control[:size].mean()
            for i in range(integers.size - 1):
                z = np.stack([per_row[i][0][:size], per_row[i][2][:size],
                              per_row[i + 1][0][:size], per_row[i + 1][2][:size]])
                z = z - z.mean(axis=1, keepdims=True)
                gram[r, i] = z @ z.T
        out.update({f"k{top_k}_x0": np.float64(x0), f"k{top_k}_mean": means, f"k{top_k}_err": errs,
                    f"k{top_k}_int_means": int_means, f"k{top_k}_pair_gram": gram,
                    f"k{top_k}_int_cmeans": np.array([item[3] for item in per_row])})
    np.savez_compressed(path, **out)
    _TABLE_CACHE.pop(str(path), None)
    return path
