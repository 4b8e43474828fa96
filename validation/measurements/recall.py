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
    "recalled_from_images",
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
    if arr.ndim != 2:
        raise ValueError(f"scores must be a 2-d array S[rho, mu] with at least 2 rows"
                         f"{' and rows >= columns' if targets is None else ''}, got shape {arr.shape}")
    if arr.dtype != np.float64 and arr.dtype != np.float32:
        arr = arr.astype(np.float64)
    return arr, _target_rows(arr.shape, targets)


def _target_rows(shape, targets):
    """The checked target row of every column of a ``shape = (n_candidates, p)`` score matrix."""
    square = targets is None
    if shape[0] < 2 or (square and shape[0] < shape[1]):
        raise ValueError(
            f"scores must be a 2-d array S[rho, mu] with at least 2 rows"
            f"{' and rows >= columns' if square else ''}, got shape {shape}")
    if square:
        return np.arange(shape[1], dtype=np.int64)
    index = np.asarray(targets)
    if (index.shape != (shape[1],) or index.dtype.kind not in "iu"
            or (index.size and (index.min() < 0 or index.max() >= shape[0]))):
        raise ValueError(f"targets must be integers in [0, {shape[0] - 1}], one per column "
                         f"of scores ({shape[1]}), got shape {index.shape} and dtype {index.dtype}")
    return np.ascontiguousarray(index, dtype=np.int64)


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


SCREEN_UNIT = 2.0 ** -24
"""Unit roundoff of float32, the arithmetic of :func:`recalled_from_images`'s screen."""


@numba.njit(cache=True)
def _competitor_max32(scores, targets):
    """Largest float32 competitor score of every column (rows read in order; the target row skipped)."""
    n, p = scores.shape
    best = np.full(p, -np.inf, dtype=np.float32)
    for rho in range(n):
        for mu in range(p):
            if rho != targets[mu] and scores[rho, mu] > best[mu]:
                best[mu] = scores[rho, mu]
    return best


def recalled_from_images(candidates, images, targets=None):
    """Which inputs are recalled, from the candidates and the images, with a certified float32 screen.

    The same verdict as ``recall_check(candidates @ images.T, targets)[0]`` (float64 scores;
    target strictly above every competitor, ties and NaN fail) for a shared candidate table
    (the original problem), at about half the cost of the float64 score product: the
    competitor scores are computed in float32, and every column whose float32 maximum is
    within the rounding bound of the float64 target score is computed again in float64.

    The bound: with ``u`` the float32 unit roundoff (:data:`SCREEN_UNIT`), a float32 score
    differs from the exact one by at most ``((d + 2) u + O(u^2)) |c_rho| |y_mu|`` (rounding
    of both vectors to float32 and a d-term sum in any order: Higham, *Accuracy and Stability
    of Numerical Algorithms*, 2nd ed., eq. 3.5), taken here as ``1.01 (d + 3) u max_rho |c_rho|
    |y_mu|``; the float64 target score carries ``(d + 2) 2^-53 |c_t| |y_mu|``.  A column is
    decided by the screen only when its float32 competitor maximum lies outside the target
    score by more than the sum of the two.  The verdict can differ from ``recall_check`` on
    the float64 product only where the float64 scores themselves are within rounding of a tie.

    Parameters
    ----------
    candidates : array_like, shape (n_candidates, d)
        The shared candidate vectors (rows), ``Instance.table`` of an original-problem instance.
    images : array_like, shape (p, d)
        ``images[mu] = W @ e_mu``.
    targets : array_like of int, shape (p,), optional
        Row of every input's target (default the diagonal, ``n_candidates >= p``).

    Returns
    -------
    ndarray of bool, shape (p,)

    Raises
    ------
    ValueError
        If the shapes do not match, or ``targets`` is not as :func:`recall_check` requires.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> C, Y = rng.standard_normal((300, 16)), rng.standard_normal((300, 16))
    >>> bool((recalled_from_images(C, Y) == recall_check(C @ Y.T)[0]).all())
    True
    """
    C = np.ascontiguousarray(candidates, dtype=np.float64)
    Y = np.ascontiguousarray(images, dtype=np.float64)
    if C.ndim != 2 or Y.ndim != 2 or C.shape[1] != Y.shape[1]:
        raise ValueError(f"candidates (n, d) and images (p, d) must share d, got shapes {C.shape} and {Y.shape}")
    index = _target_rows((C.shape[0], Y.shape[0]), targets)
    if not (np.isfinite(C).all() and np.isfinite(Y).all()):
        return recall_check(C @ Y.T, targets)[0]
    d = C.shape[1]
    target = np.einsum("ij,ij->i", C[index], Y)
    y_norm = np.sqrt(np.einsum("ij,ij->i", Y, Y))
    c_norm = np.sqrt(np.einsum("ij,ij->i", C, C))
    slack = (1.01 * (d + 3) * SCREEN_UNIT * c_norm.max() + (d + 2) * 2.0 ** -53 * c_norm[index]) * y_norm
    best = _competitor_max32(C.astype(np.float32) @ Y.astype(np.float32).T, index).astype(np.float64)
    recalled = best < target - slack
    unsure = np.flatnonzero(np.abs(best - target) <= slack)
    if unsure.size:
        recalled[unsure] = recall_check(C @ Y[unsure].T, index[unsure])[0]
    return recalled


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
