"""Recall checks on score matrices: exact argmax, ties count as failures.

A score matrix ``S`` has ``S[rho, mu] = u_rho^T W e_mu`` (candidate ``rho`` of
input ``mu``; the target of input ``mu`` is ``rho = mu``, on the diagonal).
Input ``mu`` is recalled when its target score is strictly larger than every
competitor score: a tie is a failure, and so is any NaN in the column.
See ``notes/simulation.md``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "recall_check",
    "top_competitors",
    "competitor_scale",
    "normalised_margin",
]


@numba.njit(cache=True)
def _recall_kernel(scores, recalled, margins):
    p = scores.shape[1]
    n_cand = scores.shape[0]
    for mu in range(p):
        target = scores[mu, mu]
        best = -math.inf
        bad = math.isnan(target)
        for rho in range(n_cand):
            if rho == mu:
                continue
            s = scores[rho, mu]
            if math.isnan(s):
                bad = True
            elif s > best:
                best = s
        if bad:
            recalled[mu] = False
            margins[mu] = math.nan
        else:
            margins[mu] = target - best
            recalled[mu] = target > best


@numba.njit(cache=True)
def _top_kernel(scores, index, value):
    p = scores.shape[1]
    for mu in range(p):
        best = -math.inf
        arg = -1
        for rho in range(scores.shape[0]):
            if rho == mu:
                continue
            s = scores[rho, mu]
            if s > best or arg < 0:
                best = s
                arg = rho
        index[mu] = arg
        value[mu] = best


def _as_score_matrix(scores) -> np.ndarray:
    arr = np.asarray(scores)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[0] < arr.shape[1]:
        raise ValueError(
            f"scores must be a 2-d array S[rho, mu] with at least 2 rows and "
            f"rows >= columns, got shape {arr.shape}")
    if arr.dtype != np.float64 and arr.dtype != np.float32:
        arr = arr.astype(np.float64)
    return arr


def _per_input(kernel, scores, dtypes):
    """Run ``kernel(S, *outputs)`` with one new length-p output per dtype; return the outputs."""
    arr = _as_score_matrix(scores)
    outputs = tuple(np.empty(arr.shape[1], dtype=dtype) for dtype in dtypes)
    kernel(arr, *outputs)
    return outputs


def recall_check(scores):
    """Which inputs are recalled, and by how much.

    Parameters
    ----------
    scores : array_like, shape (p, p)
        ``S[rho, mu]``, score of candidate ``rho`` for input ``mu``; the target
        of input ``mu`` is ``rho = mu``.  float64 or float32.

    Returns
    -------
    recalled : ndarray of bool, shape (p,)
        ``S[mu, mu] > max_{rho != mu} S[rho, mu]`` (strict: ties fail; NaN fails).
    margins : ndarray of float64, shape (p,)
        ``S[mu, mu] - max_{rho != mu} S[rho, mu]`` in the units of ``S``
        (NaN where the column holds a NaN).  Divide by
        :func:`competitor_scale` for the normalised margin.

    Raises
    ------
    ValueError
        If ``scores`` is not a 2-d array with at least 2 rows and rows >= columns.

    Notes
    -----
    See ``notes/simulation.md`` (recall and ties).
    """
    return _per_input(_recall_kernel, scores, (np.bool_, np.float64))


def top_competitors(scores):
    """Index and score of the largest competitor of every input.

    Parameters
    ----------
    scores : array_like, shape (p, p)
        ``S[rho, mu]`` as in :func:`recall_check`.

    Returns
    -------
    index : ndarray of int64, shape (p,)
        ``argmax_{rho != mu} S[rho, mu]`` (first one on ties).
    value : ndarray of float64, shape (p,)
        ``max_{rho != mu} S[rho, mu]``.

    Raises
    ------
    ValueError
        If ``scores`` has the wrong shape.
    """
    return _per_input(_top_kernel, scores, (np.int64, np.float64))


def competitor_scale(W) -> float:
    """Standard deviation of a competitor score, ``||W||_F / d``.

    For ``u, e`` independent with covariance ``I/d`` (the ``gaussian`` ensemble),
    ``Var(u^T W e) = ||W||_F^2 / d^2``; for the ``sphere`` ensemble it is
    ``||W||_F^2 / d^2`` exactly as well (``E[u u^T] = I/d``).

    Parameters
    ----------
    W : array_like, shape (d, d)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``W`` is not a square 2-d array.
    """
    mat = np.asarray(W, dtype=np.float64)
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1]:
        raise ValueError(f"W must be a square 2-d array, got shape {mat.shape}")
    return float(np.linalg.norm(mat) / mat.shape[0])


def normalised_margin(margins, W) -> float:
    """``min_mu margins[mu] / (||W||_F / d)``; NaN if any margin is NaN, 0 if W = 0.

    Parameters
    ----------
    margins : array_like, shape (p,)
        Raw margins from :func:`recall_check`.
    W : array_like, shape (d, d)
        The memory; its Frobenius norm sets the unit (:func:`competitor_scale`).

    Returns
    -------
    float
        The smallest margin in competitor standard deviations.

    Raises
    ------
    ValueError
        If ``W`` is not square (from :func:`competitor_scale`).
    """
    scale = competitor_scale(W)
    arr = np.asarray(margins, dtype=np.float64)
    if arr.size == 0 or np.isnan(arr).any():
        return math.nan
    if scale == 0.0:  # W = 0: every score is 0, every input ties
        return 0.0
    return float(arr.min() / scale)
