"""Common random numbers and the top order statistics of the kept competitors.

:class:`UniformStream` gives the same uniforms ``U[row, col]`` whatever sample size is
asked for, so that ``p E[C_p]`` is a smooth function of ``p`` and ``margin`` on one
fixed sample; :func:`kept_order_statistics` maps them exactly in law to the largest
kept competitors.  ``notes/finite_size_capacity.md`` (section "Monte Carlo").
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..common.checks import check_memory
from ..asymptotic.extremes import order_statistics_from_uniforms

__all__ = ["ROW_BLOCK", "WORKING_ARRAYS", "UniformStream", "kept_order_statistics", "default_order_count"]

ROW_BLOCK = 8192
"""Rows per tile (one column each) of the common-random-number stream."""
WORKING_ARRAYS = 24
"""Number of (rows, K) float64 arrays alive while one sample is evaluated (memory check)."""


class UniformStream:
    """Deterministic uniforms ``U[row, col]`` in tiles, independent of how many are used.

    Tile (r, c) is column ``c`` of rows ``[r*8192, (r+1)*8192)``, drawn from
    ``SeedSequence(seed, spawn_key=(r, c))``; so the first ``N`` rows and ``K`` columns
    are the same whatever ``N`` and ``K`` a call asks for (common random numbers across
    ``p``, ``margin`` and sample size).
    """

    def __init__(self, seed: int):
        self.seed = int(seed)
        self._tiles: dict = {}

    def _tile(self, r: int, c: int) -> np.ndarray:
        key = (r, c)
        tile = self._tiles.get(key)
        if tile is None:
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=key))
            tile = rng.random(ROW_BLOCK)
            # open interval (0, 1): 0 has probability 2^-53 per draw; map it away
            tile[tile == 0.0] = 0.5 / 2.0**53
            self._tiles[key] = tile
        return tile

    def get(self, rows: int, cols: int) -> np.ndarray:
        """The uniforms of the first ``rows`` rows and ``cols`` columns, shape (rows, cols)."""
        check_memory(float(rows) * cols * 8.0 * WORKING_ARRAYS,
                     f"a Monte-Carlo sample of {rows} rows x {cols} order statistics")
        nr = -(-rows // ROW_BLOCK)
        out = np.empty((nr * ROW_BLOCK, cols))
        for r in range(nr):
            for c in range(cols):
                out[r * ROW_BLOCK:(r + 1) * ROW_BLOCK, c] = self._tile(r, c)
        return out[:rows]


def kept_order_statistics(n: float, top_k: int, uniforms: np.ndarray) -> np.ndarray:
    """The ``K`` largest kept competitors: order statistics ``top_k .. top_k + K - 1`` of ``n``.

    Column 0 gives the ``top_k``-th largest through its exact law (upper-tail probability
    ``T ~ Beta(top_k, n - top_k + 1)``); the next ones follow Renyi's representation
    ``1 - T_(top_k + l) = (1 - T_(top_k)) prod_{i <= l} V_i^{1/(n - top_k - i + 1)}``.
    For ``top_k = 1`` this is exactly ``replica.asymptotic.extremes.order_statistics_from_uniforms``.
    ``n`` may be real; the map is smooth and increasing in ``n``.
    """
    size, cols = uniforms.shape
    if top_k == 1:
        return order_statistics_from_uniforms(n, uniforms)
    first_tail = special.betaincinv(float(top_k), n - top_k + 1.0, uniforms[:, 0])
    log_survival = np.empty_like(uniforms)
    log_survival[:, 0] = np.log1p(-first_tail)
    if cols > 1:
        denom = n - top_k + 1.0 - np.arange(1, cols)
        log_survival[:, 1:] = log_survival[:, :1] + np.cumsum(np.log(uniforms[:, 1:]) / denom, axis=1)
    return -special.ndtri(-np.expm1(log_survival))


def default_order_count(kept_total: float) -> int:
    """Number of top order statistics to sample (checked afterwards by the truncation bound)."""
    return max(16, int(math.ceil(12.0 * math.sqrt(2.0 * math.log(max(kept_total, 2.0))) - 16.0)))
