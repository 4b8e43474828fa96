"""The aggregated "not stored" bound: one certificate from the last few working-set iterates.

For weights ``lam >= 0`` on the constraints ``a_i`` of an instance,

    B(lam) = d ||sum_i lam_i a_i||_F / sum_i lam_i

bounds the normalised margin of every W (``notes/optimal_solver.md``, section 3).  The
decision run evaluates it at ``lam = r``, the squared-hinge residuals of the current
iterate, where ``sum_i r_i a_i`` is minus half the gradient.  A nonnegative combination
``lam = sum_k c_k r^(k)`` of the residual vectors of several iterates is again a valid
weight vector, and

    B(lam) = d ||sum_k w_k g_k||_F,    g_k = sum_i r^(k)_i a_i / sum_i r^(k)_i,
    w_k = c_k sum_i r^(k)_i / sum_j c_j sum_i r^(k)_i  (on the simplex),

so the best combination is the point of smallest norm in the convex hull of the
normalised gradients ``g_k``: a quadratic program in as many variables as iterates
kept.  Near the minimiser of an infeasible working set the L-BFGS gradients turn from
one iterate to the next, and their best combination is several times shorter than the
last one alone, so the bound falls below ``tol`` some iterations earlier.

:class:`AggregatedBound` keeps the last ``size`` pairs ``(r^(k), g_k)`` of one working
set (``g_k`` and ``r^(k)`` stored in float32: the search's precision) and their Gram
matrix, and returns the simplex weights and their value; the caller rebuilds ``lam``
with :meth:`AggregatedBound.weights` and recomputes ``B(lam)`` in float64, which is the
certificate whatever the rounding of the search values.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls

__all__ = ["AggregatedBound"]


class AggregatedBound:
    """The last ``size`` (residuals, normalised gradient) pairs of one working set and their best combination."""

    def __init__(self, size: int = 8):
        self.size = int(size)
        self.owner = None       # the working set the pairs belong to
        self.residuals: list = []
        self.gradients: list = []
        self.sums: list = []
        self.gram = np.zeros((0, 0))

    def reset(self, owner) -> None:
        """Forget every pair; the next ones belong to ``owner`` (a working set)."""
        self.owner = owner
        self.residuals, self.gradients, self.sums = [], [], []
        self.gram = np.zeros((0, 0))

    def add(self, r: np.ndarray, combination: np.ndarray) -> None:
        """Keep the residuals ``r`` (sum > 0) and ``combination = sum_i r_i a_i``; the oldest pair goes at ``size``."""
        total = float(r.sum())
        g = (np.asarray(combination, dtype=np.float64).ravel() / total).astype(np.float32)
        if len(self.gradients) == self.size:
            del self.residuals[0], self.gradients[0], self.sums[0]
            self.gram = self.gram[1:, 1:]
        row = np.array([float(np.dot(h, g)) for h in self.gradients] + [float(np.dot(g, g))])
        gram = np.empty((row.size, row.size))
        gram[:-1, :-1] = self.gram
        gram[-1, :] = gram[:, -1] = row
        self.gram = gram
        self.residuals.append(r.astype(np.float32))
        self.gradients.append(g)
        self.sums.append(total)

    def best(self) -> tuple[float, np.ndarray]:
        """``(||sum_k w_k g_k||, w)`` for the simplex weights ``w`` of (nearly) smallest norm.

        Solved as a nonnegative least-squares problem with the sum constraint as a heavily
        weighted row (Lawson and Hanson); any ``w >= 0`` gives a valid bound, so an
        approximate minimiser costs nothing but tightness.  With no pairs: ``(inf, [])``.
        """
        m = len(self.gradients)
        if m == 0:
            return np.inf, np.zeros(0)
        vals, vecs = np.linalg.eigh(self.gram)
        factor = np.sqrt(np.clip(vals, 0.0, None))[:, None] * vecs.T   # factor.T @ factor = gram
        beta = 1e3 * np.sqrt(max(float(np.max(np.diag(self.gram))), 1e-300))
        A = np.vstack([factor, np.full((1, m), beta)])
        b = np.zeros(m + 1)
        b[-1] = beta
        w, _ = nnls(A, b, maxiter=50 * m)
        if not np.isfinite(w).all() or w.sum() <= 0.0:
            w = np.zeros(m)
            w[-1] = 1.0
        w = w / w.sum()
        return float(np.sqrt(max(float(w @ self.gram @ w), 0.0))), w

    def weights(self, w: np.ndarray) -> np.ndarray:
        """``lam = sum_k (w_k / sum r^(k)) r^(k)`` (float64): the weights whose bound is ``best()``'s value."""
        lam = np.zeros(self.residuals[0].size)
        for wk, r, total in zip(w, self.residuals, self.sums):
            if wk > 0.0:
                lam += (wk / total) * r.astype(np.float64)
        return lam
