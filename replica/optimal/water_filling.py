"""Exact water filling: the least squared shift of a block of fields that makes the target win.

With the kept competitors sorted decreasing, ``u = t_1 - margin`` and ``j`` the number
pushed down, the level is ``L* = (u + S_j)/(j + 1)`` and the cost
``C = u^2 + Q_j - (u + S_j)^2 / (j + 1)``.  Derived in ``notes/finite_size_capacity.md``
(section "Water filling").
"""

from __future__ import annotations

import numpy as np

from ..common.checks import as_float_array, check_int, check_real

__all__ = ["water_filling_cost", "water_filling_sorted"]


def water_filling_sorted(u, kept):
    """Water filling for ``u = t_1 - margin`` (shape (...)) and ``kept`` sorted decreasing.

    Returns ``(cost, level, active)``: the least cost, the water level ``L*`` and the
    number of competitors pushed down.  When nothing moves (``u >= c_1``) the level is
    reported as ``c_1`` (the lowest optimal level) and ``active = 0``.
    """
    top = kept[..., :1]
    shifted = kept - top  # shift invariance: better conditioned sums
    n = kept.shape[-1]
    j = np.arange(1, n + 1, dtype=np.float64)
    cum = np.cumsum(shifted, axis=-1)
    cum_sq = np.cumsum(shifted * shifted, axis=-1)
    breaks = top + j * shifted - (cum - shifted)  # B_j = j c_j - S_{j-1}, decreasing in j
    active = np.sum(breaks > u[..., None], axis=-1)
    idx = np.maximum(active, 1) - 1
    take = lambda arr: np.take_along_axis(arr, idx[..., None], axis=-1)[..., 0]  # noqa: E731
    jj = idx + 1.0
    s_j = take(cum)
    mean_j = top[..., 0] + s_j / jj
    spread_j = np.maximum(take(cum_sq) - s_j * s_j / jj, 0.0)
    cost = spread_j + jj / (jj + 1.0) * (u - mean_j) ** 2
    level = (u + jj * mean_j) / (jj + 1.0)
    cost = np.where(active > 0, cost, 0.0)
    level = np.where(active > 0, level, top[..., 0])
    return cost, level, active


def water_filling_cost(target, competitors, margin=0.0, top_k=1):
    """Least squared shift of a block of fields that makes the target win.

    ``C = min_L [ (L + margin - t_1)_+^2 + sum_rho (t_rho - L)_+^2 ]``, where the sum
    runs over the competitors after dropping the ``top_k - 1`` largest (target among
    the ``top_k`` best).  Solved exactly: with the kept competitors sorted decreasing,
    ``u = t_1 - margin`` and ``j`` the number pushed down,
    ``L* = (u + S_j)/(j + 1)`` and ``C = u^2 + Q_j - (u + S_j)^2 / (j + 1)``
    (``S_j``, ``Q_j``: sums of the ``j`` largest kept competitors and their squares).
    See ``notes/finite_size_capacity.md`` (section "Water filling").

    Parameters
    ----------
    target : array_like, shape (...)
        Target fields ``t_1``.
    competitors : array_like, shape (..., n)
        Competitor fields (any order); ``n >= 1``.  Broadcast against ``target``.
    margin : float, optional
        Required gap ``margin >= 0`` between the target and every kept competitor.
    top_k : int, optional
        Recall criterion: the target must be among the ``top_k`` best,
        ``1 <= top_k <= n``.

    Returns
    -------
    ndarray, shape (...)
        The least cost (a float when the inputs are scalar / one block).

    Raises
    ------
    ValueError
        If the inputs are not finite real arrays, ``margin < 0``, ``n < 1`` or
        ``top_k`` is outside ``[1, n]``.
    """
    target = as_float_array(target, "target")
    competitors = as_float_array(competitors, "competitors")
    margin = check_real(margin, "margin", low=0.0)
    if competitors.ndim < 1 or competitors.shape[-1] < 1:
        raise ValueError(f"competitors must have shape (..., n) with n >= 1, got shape {competitors.shape}")
    n = competitors.shape[-1]
    top_k = check_int(top_k, "top_k", low=1, high=n)
    if not (np.all(np.isfinite(target)) and np.all(np.isfinite(competitors))):
        raise ValueError("target and competitors must be finite")
    shape = np.broadcast_shapes(target.shape, competitors.shape[:-1])
    target = np.broadcast_to(target, shape)
    competitors = np.broadcast_to(competitors, shape + (n,))
    kept = -np.sort(-competitors, axis=-1)[..., top_k - 1:]
    cost, _, _ = water_filling_sorted(target - margin, kept)
    return cost[()] if cost.ndim == 0 else cost
