"""L-BFGS with the exact line search of the squared hinge (``notes/optimal_solver.md``).

Along a line ``W + t D1 (+ t^2 D2)`` the squared hinge is piecewise quadratic (quartic
for factors), so the line search is exact (one numba call); the L-BFGS two-loop
recursion is one numba call on a ring buffer of pairs.
"""

from __future__ import annotations

import math

import numpy as np

from . import _optimal_kernels as _k

__all__ = ["line_search", "LBFGS", "norm_poly", "dot", "norm"]


def line_search(m0, m1, m2, ridge, poly):
    """Minimise h(t) = sum (1 - m0 - t m1 - t^2 m2)_+^2 + ridge * poly(t) over t >= 0.

    ``poly`` = (c0, c1, c2, c3, c4) of ``||W(t)||_F^2``; ``m2 = None`` for a straight
    line (then ``h`` is convex and piecewise quadratic, and safeguarded Newton ends in a
    few steps).  Returns (t, h(t)); t = 0 when the direction is not a descent direction.
    One numba call (``_optimal_kernels.line_search``).
    """
    quadratic = m2 is not None
    t, v = _k.line_search(m0, m1, m2 if quadratic else m1, quadratic, float(ridge),
                          np.asarray(poly, dtype=np.float64))
    return float(t), float(v)


class LBFGS:
    """L-BFGS history in a ring buffer; the two-loop recursion is one numba call."""

    def __init__(self, memory):
        self.memory = int(memory)
        self.S = self.Y = None
        self.rho = np.zeros(self.memory)
        self.count = 0  # pairs stored
        self.head = 0   # slot of the next pair

    def reset(self):
        """Forget the stored pairs."""
        self.count = 0
        self.head = 0

    def update(self, s, y):
        """Store the pair (step ``s``, gradient change ``y``) unless its curvature ``s.y`` is not positive."""
        sy = dot(s, y)
        if sy <= 1e-12 * dot(y, y) or not np.isfinite(sy):
            return
        if self.S is None or self.S.shape[1] != s.size:
            self.S = np.empty((self.memory, s.size))
            self.Y = np.empty((self.memory, s.size))
            self.count = self.head = 0
        self.S[self.head] = s.ravel()
        self.Y[self.head] = y.ravel()
        self.rho[self.head] = 1.0 / sy
        self.head = (self.head + 1) % self.memory
        self.count = min(self.count + 1, self.memory)

    def direction(self, g):
        """The two-loop direction ``-H g`` (``-g`` without pairs)."""
        g = np.ascontiguousarray(g, dtype=np.float64)
        if self.count == 0:
            return -g
        q = np.empty_like(g)
        _k.lbfgs_direction(self.S, self.Y, self.rho, self.head, self.count, g, q)
        return q


def norm_poly(W, D1, D2):
    """Coefficients of ||W + t D1 + t^2 D2||_F^2 in t (degree 4)."""
    ww, w1, d11 = dot(W, W), dot(W, D1), dot(D1, D1)
    if D2 is None:
        return (ww, 2 * w1, d11, 0.0, 0.0)
    w2, d12, d22 = dot(W, D2), dot(D1, D2), dot(D2, D2)
    return (ww, 2 * w1, d11 + 2 * w2, 2 * d12, d22)


def dot(a, b):
    """Serial float64 dot product of two arrays of the same size (no BLAS threads)."""
    return float(_k.vdot(np.ascontiguousarray(a, dtype=np.float64).ravel(),
                         np.ascontiguousarray(b, dtype=np.float64).ravel()))


def norm(a):
    """Frobenius norm by :func:`dot`."""
    return math.sqrt(dot(a, a))
