"""The projection of a uniform unit vector: the exact score law of the ``sphere`` ensemble.

For ``u`` uniform on the unit sphere of ``R^d`` and a fixed vector ``y``, ``u . y = |y| x``
with ``x`` of density ``∝ (1 - x^2)^((d-3)/2)`` on ``[-1, 1]``, i.e. ``x = 2 B - 1`` with
``B ~ Beta((d-1)/2, (d-1)/2)``; ``E x^2 = 1/d``.  :class:`ProjectionLaw` is the law of
``z = sqrt(d) x`` (unit variance, support ``[-sqrt(d), sqrt(d)]``), the competitor and
target field law of the decoupled problem under unit-norm embeddings.  Besides the
scipy-like ``pdf``/``cdf``/``sf``/``ppf``/``isf``/``moment``/``rvs`` it has the pieces the
water-filling expectation needs (closed forms derived in ``notes/sphere_ensemble.md``):

* ``psi(z) = d/(d-1) (1 - z^2/d) pdf(z)``, with ``E[z; z <= a] = -psi(a)`` and
  ``E[z^2; z <= a] = cdf(a) - (d-1)/d a psi(a)`` (the Gaussian ``phi`` in the limit);
* ``interval_moments``: integrals of ``1, z, z^2`` over consecutive intervals;
* ``lift_cost(a) = E[(a - z)_+^2] = (a^2 + 1) cdf(a) + (1 + 1/d) a psi(a)`` and its slope;
* ``from_normal``: the increasing transport map from N(0, 1) (order statistics to order
  statistics), used with the Gaussian common random numbers.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import interpolate, special

from ..common.checks import check_int
from ..common.seeds import as_generator

__all__ = ["ProjectionLaw"]

_MAP_EDGE = 9.0  # from_normal interpolates on [0, 9] (Phi(-9) = 1.1e-19)


class ProjectionLaw:
    """Law of ``z = sqrt(d) <u, v>`` for ``u`` uniform on the unit sphere of ``R^d``, ``|v| = 1``.

    Density ``pdf(z) = (1 - z^2/d)^((d-3)/2) / (sqrt(d) B((d-1)/2, 1/2))`` on
    ``[-sqrt(d), sqrt(d)]``; mean 0, variance 1, tends to N(0, 1) as ``d`` grows
    (``notes/sphere_ensemble.md``, section 1).

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.

    Raises
    ------
    ValueError
        If ``d`` is not an integer ``>= 2``.
    """

    name = "sphere"

    def __init__(self, d):
        self.d = check_int(d, "d", low=2)
        self.half = 0.5 * (self.d - 1.0)
        self.scale = math.sqrt(self.d)
        self._spline = None
        self._log_norm = -math.log(2.0 * self.scale) - special.betaln(self.half, self.half) \
            - 2.0 * (self.half - 1.0) * math.log(2.0)

    def __repr__(self):
        return f"ProjectionLaw(d={self.d})"

    # -- scipy-like interface -----------------------------------------------------------
    def logpdf(self, z):
        z = np.asarray(z, dtype=np.float64)
        inside = np.abs(z) < self.scale
        w = np.where(inside, z / self.scale, 0.0)
        with np.errstate(divide="ignore"):
            value = self._log_norm + (self.half - 1.0) * np.log1p(-w * w)
        return np.where(inside, value, -np.inf)[()]

    def pdf(self, z):
        return np.exp(self.logpdf(z))

    def sf(self, z):
        """``P(Z > z)``, accurate in the upper tail (regularised incomplete beta)."""
        z = np.asarray(z, dtype=np.float64)
        beta = np.clip(0.5 * (1.0 - z / self.scale), 0.0, 1.0)
        return special.betainc(self.half, self.half, beta)[()]

    def cdf(self, z):
        """``P(Z <= z)``, accurate in the lower tail."""
        return self.sf(-np.asarray(z, dtype=np.float64))

    def isf(self, q):
        """Inverse of :meth:`sf`, accurate for small ``q``."""
        q = np.asarray(q, dtype=np.float64)
        return (self.scale * (1.0 - 2.0 * special.betaincinv(self.half, self.half, q)))[()]

    def ppf(self, q):
        return -self.isf(q)

    def moment(self, order):
        """``E z^order``: 0 for odd orders, ``d^(n/2) (1/2)_(n/2) / (d/2)_(n/2)`` for even ``n``."""
        order = check_int(order, "order", low=0)
        if order % 2:
            return 0.0
        k = order // 2
        return float(self.d ** k * math.exp(special.gammaln(k + 0.5) - special.gammaln(0.5)
                                            + special.gammaln(0.5 * self.d) - special.gammaln(0.5 * self.d + k)))

    def mean(self):
        return 0.0

    def var(self):
        return 1.0

    def rvs(self, size=None, seed=None):
        """Samples ``sqrt(d) (2 B - 1)``, ``B ~ Beta((d-1)/2, (d-1)/2)`` (``seed``: see ``replica.common.seeds``)."""
        rng = as_generator(seed)
        return self.scale * (2.0 * rng.beta(self.half, self.half, size=size) - 1.0)

    # -- pieces of the water-filling expectation ----------------------------------------
    def psi(self, z):
        """``d/(d-1) (1 - z^2/d) pdf(z)``, so that ``E[z; z <= a] = -psi(a)`` (0 outside the support)."""
        z = np.asarray(z, dtype=np.float64)
        inside = np.abs(z) < self.scale
        w = np.where(inside, z / self.scale, 0.0)
        value = self.d / (self.d - 1.0) * np.exp(self._log_norm + self.half * np.log1p(-w * w))
        return np.where(inside, value, 0.0)

    def from_normal(self, x):
        """The increasing map ``T(x) = isf(Phi(-x))`` from N(0, 1) to this law (odd; tails kept accurate).

        For ``|x| <= 9`` a cubic Hermite interpolant on a grid of step ``1/512`` with the
        exact slope ``T' = phi(x) / pdf(T)`` (relative error below ``1e-10``, tested);
        beyond (and, for small ``d``, where ``T`` is within ``1e-9`` of the edge of the
        support) the exact ``isf`` (``betaincinv``), which is much slower.
        """
        x = np.asarray(x, dtype=np.float64)
        size = np.abs(x)
        spline = self._map_spline()
        inside = size <= spline.x[-1]
        out = np.empty_like(size)
        out[inside] = spline(size[inside])
        if not np.all(inside):
            out[~inside] = self.isf(special.ndtr(-size[~inside]))
        return np.sign(x) * out

    def _map_spline(self):
        if self._spline is None:
            grid = np.linspace(0.0, _MAP_EDGE, int(_MAP_EDGE * 512) + 1)
            values = self.isf(special.ndtr(-grid))
            with np.errstate(over="ignore"):
                slope = np.exp(-0.5 * grid * grid - self.logpdf(values)) / math.sqrt(2.0 * math.pi)
            # small d: the quantiles reach the edge of the support within the grid; stop before
            good = np.isfinite(slope) & (values < self.scale * (1.0 - 1e-9))
            last = int(np.argmin(good)) if not np.all(good) else grid.size
            self._spline = interpolate.CubicHermiteSpline(grid[:last], values[:last], slope[:last],
                                                          extrapolate=False)
        return self._spline

    def interval_moments(self, upper):
        """Integrals of ``1, z, z^2`` times the density over ``[upper_{j+1}, upper_j)``.

        ``upper`` has shape ``(size, K)``, decreasing along the last axis; the lower end
        of the last interval is ``-inf``.  The same layout as the Gaussian pieces of
        ``replica.optimal.finite_size`` (differences of the small tail in the upper tail).
        """
        small = self.sf(np.abs(upper))
        below = upper < 0.0
        cdf = np.where(below, small, 1.0 - small)
        sf = np.where(below, 1.0 - small, small)
        psi = self.psi(upper)
        zpsi = (self.d - 1.0) / self.d * upper * psi
        size = upper.shape[0]
        zeros, ones = np.zeros((size, 1)), np.ones((size, 1))
        cdf_lo = np.concatenate([cdf[:, 1:], zeros], axis=1)
        sf_lo = np.concatenate([sf[:, 1:], ones], axis=1)
        psi_lo = np.concatenate([psi[:, 1:], zeros], axis=1)
        zpsi_lo = np.concatenate([zpsi[:, 1:], zeros], axis=1)
        lo_upper_tail = np.concatenate([~below[:, 1:], np.zeros((size, 1), dtype=bool)], axis=1)
        i0 = np.where(lo_upper_tail, sf_lo - sf, cdf - cdf_lo)
        i1 = psi_lo - psi
        i2 = i0 + zpsi_lo - zpsi
        return i0, i1, i2

    def lift_cost(self, level):
        """``E[(level - z)_+^2] = (a^2 + 1) cdf(a) + (1 + 1/d) a psi(a)``."""
        level = np.asarray(level, dtype=np.float64)
        return (level * level + 1.0) * self.cdf(level) + (1.0 + 1.0 / self.d) * level * self.psi(level)

    def lift_cost_slope(self, level):
        """Derivative of :meth:`lift_cost`: ``2 (a cdf(a) + psi(a))``."""
        level = np.asarray(level, dtype=np.float64)
        return 2.0 * (level * self.cdf(level) + self.psi(level))
