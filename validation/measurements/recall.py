"""Recall checks on score matrices: exact argmax, ties count as failures.

A score matrix ``S`` has ``S[rho, mu] = u_rho^T W e_mu`` (candidate ``rho`` of
input ``mu``; the target of input ``mu`` is row ``targets[mu]``: the diagonal
``rho = mu`` by default, ``f(mu)`` for instances with ``K`` shared answers,
whose score matrices are ``K x p``).
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
    "top_k_recalled",
    "top_competitors",
    "competitor_scale",
    "normalised_margin",
]


@numba.njit(cache=True)
def _recall_columns_kernel(scores, targets, recalled, margins):
    """Recall flags and margins column by column (any layout; the C-ordered case: :func:`_recall_kernel`)."""
    p = scores.shape[1]
    n_cand = scores.shape[0]
    for mu in range(p):
        tgt = targets[mu]
        target = scores[tgt, mu]
        best = -math.inf
        bad = math.isnan(target)
        for rho in range(n_cand):
            if rho == tgt:
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
def _recall_kernel(scores, targets, recalled, margins):
    """Recall flags and margins of a C-ordered ``scores``, row by row (contiguous reads); other layouts:
    :func:`_recall_columns_kernel`, the same results."""
    n, p = scores.shape
    best = np.full(p, -math.inf)
    nan = np.zeros(p, dtype=np.bool_)
    for rho in range(n):
        row = scores[rho]
        for mu in range(p):
            v = -math.inf if rho == targets[mu] else row[mu]
            nan[mu] |= v != v
            best[mu] = v if v > best[mu] else best[mu]
    for mu in range(p):
        target = scores[targets[mu], mu]
        if nan[mu] or target != target:
            recalled[mu] = False
            margins[mu] = math.nan
        else:
            margins[mu] = target - best[mu]
            recalled[mu] = target > best[mu]


@numba.njit(cache=True)
def _top_kernel(scores, targets, index, value):
    p = scores.shape[1]
    for mu in range(p):
        best = -math.inf
        arg = -1
        for rho in range(scores.shape[0]):
            if rho == targets[mu]:
                continue
            s = scores[rho, mu]
            if s > best or arg < 0:
                best = s
                arg = rho
        index[mu] = arg
        value[mu] = best


@numba.njit(cache=True)
def _top_k_kernel(scores, targets, top_k, recalled):
    p = scores.shape[1]
    for mu in range(p):
        tgt = targets[mu]
        target = scores[tgt, mu]
        beaten = 0
        bad = math.isnan(target)
        for rho in range(scores.shape[0]):
            if rho == tgt:
                continue
            s = scores[rho, mu]
            if math.isnan(s):
                bad = True
            elif s >= target:
                beaten += 1
        recalled[mu] = (not bad) and beaten < top_k


def _as_score_matrix(scores, targets):
    """Checked ``(S, target rows)``; ``targets=None`` means the diagonal."""
    arr = np.asarray(scores)
    square = targets is None
    if arr.ndim != 2 or arr.shape[0] < 2 or (square and arr.shape[0] < arr.shape[1]):
        raise ValueError(
            f"scores must be a 2-d array S[rho, mu] with at least 2 rows"
            f"{' and rows >= columns' if square else ''}, got shape {arr.shape}")
    if arr.dtype != np.float64 and arr.dtype != np.float32:
        arr = arr.astype(np.float64)
    if square:
        return arr, np.arange(arr.shape[1], dtype=np.int64)
    index = np.asarray(targets)
    if (index.shape != (arr.shape[1],) or index.dtype.kind not in "iu"
            or (index.size and (index.min() < 0 or index.max() >= arr.shape[0]))):
        raise ValueError(f"targets must be integers in [0, {arr.shape[0] - 1}], one per column "
                         f"of scores ({arr.shape[1]}), got shape {index.shape} and dtype {index.dtype}")
    return arr, np.ascontiguousarray(index, dtype=np.int64)


def _per_input(kernel, scores, targets, dtypes):
    """Run ``kernel(S, targets, *outputs)`` with one new length-p output per dtype."""
    arr, index = _as_score_matrix(scores, targets)
    outputs = tuple(np.empty(arr.shape[1], dtype=dtype) for dtype in dtypes)
    kernel(arr, index, *outputs)
    return outputs


def recall_check(scores, targets=None):
    """Which inputs are recalled, and by how much.

    Parameters
    ----------
    scores : array_like, shape (n_candidates, p)
        ``S[rho, mu]``, score of candidate ``rho`` for input ``mu``.  float64
        or float32.
    targets : array_like of int, shape (p,), optional
        Row of the target of every input (``Instance.target_index``); default
        the diagonal ``rho = mu`` (then ``n_candidates >= p``).

    Returns
    -------
    recalled : ndarray of bool, shape (p,)
        ``S[t, mu] > max_{rho != t} S[rho, mu]`` with ``t = targets[mu]``
        (strict: ties fail; NaN fails).
    margins : ndarray of float64, shape (p,)
        ``S[t, mu] - max_{rho != t} S[rho, mu]`` in the units of ``S``
        (NaN where the column holds a NaN).  Divide by
        :func:`competitor_scale` for the normalised margin.

    Raises
    ------
    ValueError
        If ``scores`` is not a 2-d array with at least 2 rows (and rows >=
        columns without ``targets``), or ``targets`` has the wrong length,
        dtype or range.

    Notes
    -----
    See ``notes/simulation.md`` (recall and ties).
    """
    arr, index = _as_score_matrix(scores, targets)
    kernel = _recall_kernel if arr.flags.c_contiguous else _recall_columns_kernel
    outputs = (np.empty(arr.shape[1], dtype=np.bool_), np.empty(arr.shape[1], dtype=np.float64))
    kernel(arr, index, *outputs)
    return outputs


def top_k_recalled(scores, top_k, targets=None):
    """Which inputs have their target among the ``top_k`` highest scores.

    Input ``mu`` is top-k recalled when fewer than ``top_k`` competitors score at
    least its target: ``#{rho != t : S[rho, mu] >= S[t, mu]} < top_k`` with
    ``t = targets[mu]`` (a tie counts against the target, a NaN in the column fails).
    ``top_k = 1`` is :func:`recall_check`'s ``recalled``.  See ``notes/top_k.md``.

    Parameters
    ----------
    scores : array_like, shape (n_candidates, p)
        ``S[rho, mu]`` as in :func:`recall_check`.
    top_k : int
        In ``[1, n_candidates - 1]``.
    targets : array_like of int, shape (p,), optional
        Target rows as in :func:`recall_check` (default the diagonal).

    Returns
    -------
    ndarray of bool, shape (p,)

    Raises
    ------
    ValueError
        If ``top_k`` is out of range, or as :func:`recall_check` for the arrays.
    """
    arr, index = _as_score_matrix(scores, targets)
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or not 1 <= top_k < arr.shape[0]:
        raise ValueError(f"top_k must be an integer in [1, {arr.shape[0] - 1}] (below the number of "
                         f"candidates {arr.shape[0]}), got {top_k!r}")
    out = np.empty(arr.shape[1], dtype=np.bool_)
    _top_k_kernel(arr, index, int(top_k), out)
    return out


def top_competitors(scores, targets=None):
    """Index and score of the largest competitor of every input.

    Parameters
    ----------
    scores : array_like, shape (p, p)
        ``S[rho, mu]`` as in :func:`recall_check`.
    targets : array_like of int, shape (p,), optional
        Target rows as in :func:`recall_check` (default the diagonal).

    Returns
    -------
    index : ndarray of int64, shape (p,)
        ``argmax_{rho != targets[mu]} S[rho, mu]`` (first one on ties).
    value : ndarray of float64, shape (p,)
        ``max_{rho != targets[mu]} S[rho, mu]``.

    Raises
    ------
    ValueError
        If ``scores`` has the wrong shape.
    """
    return _per_input(_top_kernel, scores, targets, (np.int64, np.float64))


def competitor_scale(W) -> float:
    """Standard deviation of a competitor score, ``||W||_F / d`` (``||W||_F / sqrt(d_in d_out)``).

    For ``u, e`` independent with covariance ``I/d`` (the ``gaussian`` ensemble),
    ``Var(u^T W e) = ||W||_F^2 / d^2``; for the ``sphere`` ensemble it is
    ``||W||_F^2 / d^2`` exactly as well (``E[u u^T] = I/d``).  A rectangular
    ``W`` (``d_out x d_in``, ``u`` of covariance ``I/d_out``, ``e`` of ``I/d_in``)
    gives ``||W||_F^2 / (d_in d_out)``.  With correlated embeddings the variance is
    ``tr(Sigma_out W Sigma_in W^T) / (d_in d_out)``; the unit stays ``||W||_F / sqrt(d_in d_out)``.

    Parameters
    ----------
    W : array_like, shape (d_out, d_in)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``W`` is not a 2-d array.
    """
    mat = np.asarray(W, dtype=np.float64)
    if mat.ndim != 2:
        raise ValueError(f"W must be a 2-d array, got shape {mat.shape}")
    if mat.shape[0] == mat.shape[1]:
        return float(np.linalg.norm(mat) / mat.shape[0])
    return float(np.linalg.norm(mat) / math.sqrt(mat.shape[0] * mat.shape[1]))


def normalised_margin(margins, W) -> float:
    """``min_mu margins[mu] / (||W||_F / d)``; NaN if any margin is NaN, 0 if W = 0.

    Parameters
    ----------
    margins : array_like, shape (p,)
        Raw margins from :func:`recall_check`.
    W : array_like, shape (d_out, d_in)
        The memory; its Frobenius norm sets the unit (:func:`competitor_scale`).

    Returns
    -------
    float
        The smallest margin in competitor standard deviations.

    Raises
    ------
    ValueError
        If ``W`` is not a 2-d array (from :func:`competitor_scale`).
    """
    scale = competitor_scale(W)
    arr = np.asarray(margins, dtype=np.float64)
    if arr.size == 0 or np.isnan(arr).any():
        return math.nan
    if scale == 0.0:  # W = 0: every score is 0, every input ties
        return 0.0
    return float(arr.min() / scale)
