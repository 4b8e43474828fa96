"""Extreme values of Gaussian samples: exact laws, the Gumbel expansion, sampling.

See ``notes/extreme_values.md`` for the derivations.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ._checks import as_float_array, check_int, check_real

__all__ = [
    "top_order_statistics",
]


def top_order_statistics(n, k: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Sample the ``k`` largest of ``n`` i.i.d. N(0, 1) variables, exactly in law.

    Only ``k`` uniforms per sample are drawn, whatever ``n`` is, so ``n`` may be
    as large as 1e15.  The smallest upper-tail probabilities ``T_(1) < ... < T_(k)``
    of ``n`` uniforms satisfy ``1 - T_(i) = prod_{j<=i} V_j^{1/(n-j+1)}`` with
    ``V_j`` i.i.d. uniform (Renyi's representation); the Gaussian order
    statistics are ``-ndtri(T_(i))``.  The map is smooth in ``n``, so a fixed
    ``rng`` state gives common random numbers across ``n`` (``n`` may be real).

    Parameters
    ----------
    n : float
        Number of Gaussian variables, ``n >= k``.
    k : int
        How many of the largest to return, ``k >= 1``.
    size : int
        Number of independent samples.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    ndarray, shape (size, k)
        Each row sorted in decreasing order.

    Raises
    ------
    ValueError
        If ``k < 1``, ``n < k`` or ``size < 0``.
    """
    k = check_int(k, "k", low=1)
    n = check_real(n, "n", low=float(k))
    size = check_int(size, "size", low=0)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    uniforms = rng.random((size, k))
    return order_statistics_from_uniforms(n, uniforms)


def order_statistics_from_uniforms(n, uniforms: np.ndarray) -> np.ndarray:
    """Deterministic map behind :func:`top_order_statistics` (for common random numbers).

    ``uniforms`` has shape ``(size, k)`` with entries in (0, 1); row ``r`` is
    mapped to the ``k`` largest of ``n`` standard normals, in decreasing order.
    """
    uniforms = np.asarray(uniforms, dtype=np.float64)
    k = uniforms.shape[-1]
    n = float(n)
    # log(1 - T_(i)) = sum_{j<=i} log(V_j) / (n - j + 1); guard V = 0 (probability 0).
    logv = np.log(np.maximum(uniforms, np.finfo(np.float64).tiny))
    log_survival = np.cumsum(logv / (n - np.arange(k)), axis=-1)
    tail = -np.expm1(log_survival)  # T_(i), accurate when tiny
    return -special.ndtri(tail)
