"""Shared pieces of every solver: the Hebbian W, the rank-m truncation and the dense W of factors.

Factor convention
-----------------
A rank-m memory is held as factors ``(Q, R)`` of shape ``(d, m)`` with ``W = Q @ R.T``
(:func:`dense_memory`).  A truncation of a dense W (:func:`balanced_factors`) splits
the singular values evenly: ``Q = U_m S_m^(1/2)``, ``R = V_m S_m^(1/2)`` for the top-m
SVD ``W ~ U_m S_m V_m^T`` (Eckart-Young: the best rank-m approximation in Frobenius
norm), so that ``Q^T Q = R^T R = S_m``.  Every :class:`validation.Solution` with
factors follows it (``notes/rank_search.md``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["hebbian_memory", "truncated_svd", "balanced_factors", "even_split", "project_rank", "dense_memory"]


def hebbian_memory(targets, inputs):
    """The Hebbian memory ``W = sum_mu t_mu e_mu^T = targets.T @ inputs`` (``notes/simulation.md``).

    Parameters
    ----------
    targets, inputs : ndarray (p, d)

    Returns
    -------
    ndarray (d, d)
    """
    return targets.T @ inputs


def truncated_svd(W, rank):
    """Top-``rank`` singular triplets of ``W``: ``(U_m, s_m, V_m)`` with ``W_m = U_m diag(s_m) V_m^T``.

    Parameters
    ----------
    W : ndarray (d, d)
        The matrix to truncate.
    rank : int
        Number of singular triplets kept.

    Returns
    -------
    U_m : ndarray (d, rank)
    s_m : ndarray (rank,)
    V_m : ndarray (d, rank)
        Orthonormal columns (``V_m`` is a view of numpy's ``Vt``, transposed).
    """
    U, s, Vt = np.linalg.svd(W)
    return U[:, :rank], s[:rank], Vt[:rank].T


def balanced_factors(W, rank):
    """Factors ``(Q, R) = (U_m S_m^(1/2), V_m S_m^(1/2))``, shapes (d, rank), of the best rank-``rank``
    approximation ``Q @ R.T`` of ``W`` (the convention of the module docstring)."""
    return even_split(*truncated_svd(W, rank))


def even_split(U, s, V):
    """Balanced factors ``(U diag(sqrt(s)), V diag(sqrt(s)))`` of singular triplets (:func:`truncated_svd`)."""
    root = np.sqrt(s)
    return U * root, V * root


def project_rank(W, rank):
    """Best rank-``rank`` approximation of ``W`` and its balanced factors.

    Parameters
    ----------
    W : ndarray (d, d)
    rank : int

    Returns
    -------
    W_m : ndarray (d, d)
        ``U_m diag(s_m) V_m^T`` (``W`` itself when ``rank >= d``).
    factors : tuple (Q, R)
        ``Q = U_m sqrt(s_m)``, ``R = V_m sqrt(s_m)``, so that ``W_m = Q R^T``.
    """
    Q, R = balanced_factors(W, rank)
    return (W.copy() if rank >= W.shape[0] else Q @ R.T), (Q, R)


def dense_memory(factors):
    """The dense memory ``Q @ R.T`` of factors ``(Q, R)``.

    Parameters
    ----------
    factors : tuple (Q, R) of ndarray (d, m)

    Returns
    -------
    ndarray (d, d)
    """
    Q, R = factors
    return Q @ R.T
