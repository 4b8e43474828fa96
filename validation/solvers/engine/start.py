"""Unknowns of the decision solver (W or factors) and its starting points."""

from __future__ import annotations

import numpy as np

from .memories import balanced_factors, dense_memory

__all__ = ["Unknowns", "initial_point", "factor_start"]


class Unknowns:
    """Unknowns: W (full rank) or (Q, R) (rank m); maps vectors <-> matrices.

    ``d_in`` (default ``d``): a rectangular memory ``d x d_in`` (``d = d_out``), full rank only.
    """

    def __init__(self, d, rank, d_in=None):
        self.d = d
        self.d_in = d if d_in is None else d_in
        self.rank = rank
        self.factored = rank < min(d, self.d_in)
        if self.factored and self.d_in != d:
            raise ValueError(f"rank-{rank} factors need a square memory, got {d} x {self.d_in}")

    def W(self, x):
        """The (d_out, d_in) memory of the flat vector ``x`` (a view at full rank)."""
        if not self.factored:
            return x.reshape(self.d, self.d_in)
        return dense_memory(self.split(x))

    def split(self, x):
        """The factors (Q, R) of ``x`` (views)."""
        n = self.d * self.rank
        return x[:n].reshape(self.d, self.rank), x[n:].reshape(self.d, self.rank)

    def grad(self, x, G):
        """Gradient in ``x`` from the gradient ``G`` in W (chain rule through the factors)."""
        if not self.factored:
            return G.ravel()
        Q, R = self.split(x)
        return np.concatenate([(G @ R).ravel(), (G.T @ Q).ravel()])

    def line_terms(self, x, direction):
        """D1, D2 with W(x + t dir) = W + t D1 + t^2 D2."""
        if not self.factored:
            return direction.reshape(self.d, self.d_in), None
        Q, R = self.split(x)
        dQ, dR = self.split(direction)
        return dQ @ R.T + Q @ dR.T, dQ @ dR.T


def factor_start(W0, rank):
    """Factors of the best rank-``rank`` approximation of ``W0``, split evenly (flat vector)."""
    Q, R = balanced_factors(W0, rank)
    return np.concatenate([Q.ravel(), R.ravel()])


def initial_point(prob, params, initial):
    """Flat vector of the start: ``initial`` (a (d_out, d_in) W or a (Q, R) pair), by default the Hebbian W.

    A dense start at rank m < d is truncated (:func:`factor_start`).

    Raises
    ------
    ValueError
        For factors or a W of the wrong shape, or a W that is not finite.
    """
    d, rank = prob.d_out, params.rank
    if initial is None:
        W0 = prob.hebbian()  # sum_mu t_mu e_mu^T
        return W0.ravel().copy() if not params.factored else factor_start(W0, rank)
    if isinstance(initial, tuple):
        Q, R = (np.asarray(a, dtype=np.float64) for a in initial)
        if not params.factored:
            initial = dense_memory((Q, R))
        else:
            if Q.shape != (d, rank) or R.shape != (d, rank):
                raise ValueError(f"initial factors must have shape ({d}, {rank}); got "
                                 f"{Q.shape} and {R.shape}")
            return np.concatenate([Q.ravel(), R.ravel()])
    W0 = np.asarray(initial, dtype=np.float64)
    if W0.shape != (d, prob.d_in) or not np.all(np.isfinite(W0)):
        raise ValueError(f"initial must be a finite ({d}, {prob.d_in}) array or a (Q, R) pair; "
                         f"got shape {W0.shape}")
    return W0.ravel().copy() if not params.factored else factor_start(W0, rank)
