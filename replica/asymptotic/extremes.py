"""Extreme values of Gaussian samples: exact laws, the Gumbel expansion, sampling.

See ``notes/extreme_values.md`` for the derivations.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..common.checks import check_at_least, check_int, check_memory, check_real, scalar_or_array
from ..common.seeds import as_generator
from ._deferred import DeferredContinuous, DeferredModule

special = DeferredModule("scipy.special")  # imported on first use (0.3 s)

__all__ = [
    "expected_max",
    "extreme_value_threshold",
    "gumbel_expansion",
    "GumbelExpansion",
    "MaximumOfGaussians",
    "expected_max_mp",
    "top_order_statistics",
    "order_statistics_from_uniforms",
]

EULER_GAMMA = 0.57721566490153286060651209008240243


def _check_n(n, name="n"):
    return check_at_least(n, name, 1.0)


def extreme_value_threshold(n):
    """Leading extreme-value threshold ``sqrt(2 ln n)`` of the maximum of n standard normals.

    Parameters
    ----------
    n : float or array_like
        Number of variables, ``n >= 1``.

    Returns
    -------
    float or ndarray
        ``sqrt(2 ln n)``, shaped like ``n`` (``notes/extreme_values.md``).

    Raises
    ------
    ValueError
        If any ``n`` is below 1, NaN or infinite.
    """
    arr = _check_n(n)
    out = np.sqrt(2.0 * np.log(arr))
    return scalar_or_array(out, n)


def _log_density_of_max(m, n):
    """log of ``n phi(m) Phi(m)^(n-1)``, stable for n up to 1e300."""
    return (np.log(n) - 0.5 * m * m - 0.5 * np.log(2.0 * np.pi)
            + (n - 1.0) * special.log_ndtr(m))


def _location_scale(n):
    """A centre and a width of the law of the maximum, for placing quadrature breakpoints."""
    if n < 3.0:
        return 0.5 * (n - 1.0), 1.0
    b = np.sqrt(2.0 * np.log(n))
    return b - (np.log(np.log(n)) + np.log(4.0 * np.pi)) / (2.0 * b), 1.0 / b


def _max_moment(n: float, order: int) -> float:
    """E[M_n^order] by adaptive quadrature of ``m^order f(m)`` on the bulk of the law."""
    from scipy import integrate

    if n == 1.0 and order == 1:
        return 0.0
    centre, width = _location_scale(n)

    def integrand(m):
        return m ** order * np.exp(_log_density_of_max(m, n))

    # The density decays like exp(-x) above the centre and doubly exponentially below
    # (in units of the width); beyond these limits it is below 1e-30 of its peak.
    lo = centre - (12.0 if n < 3 else 6.0) * max(width, 0.25) - (8.0 if n < 3 else 2.0)
    hi = centre + 80.0 * width + (10.0 if n < 3 else 1.0)
    edges = np.concatenate([[lo], centre + width * np.array([-3.0, -1.0, 0.0, 1.0, 3.0, 8.0, 20.0]), [hi]])
    edges = np.unique(np.clip(edges, lo, hi))
    total, error = 0.0, 0.0
    with warnings.catch_warnings():
        # QUADPACK warns when it cannot reach epsrel = 2e-14 exactly; the summed
        # error estimate is checked below instead.
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        for a, b in zip(edges[:-1], edges[1:]):
            value, err = integrate.quad(integrand, a, b, epsabs=1e-17, epsrel=2e-14, limit=200)
            total += value
            error += err
    if error > 1e-11 * max(abs(total), 1.0):  # pragma: no cover - guarded by tests
        raise RuntimeError(f"expected_max: quadrature error estimate {error:.2e} too large for n={n}")
    return total


def expected_max(n):
    """Exact mean of the maximum of ``n`` i.i.d. N(0, 1) variables.

    ``E M_n = Int m n phi(m) Phi(m)^(n-1) dm``, evaluated by adaptive quadrature of the
    density written in log space (``log_ndtr``), so that it stays accurate for ``n``
    up to 1e12 and far beyond (tested against mpmath to 1e-12 relative up to 1e15).
    ``n`` may be real (the formula is smooth in n).  ``expected_max(1) = 0``,
    ``expected_max(2) = 1/sqrt(pi)``.  ``n`` and the errors as
    :func:`extreme_value_threshold`; the result is shaped like ``n``.  See
    ``notes/extreme_values.md``.
    """
    arr = _check_n(n)
    flat = [_max_moment(float(v), 1) for v in arr.ravel()]
    out = np.asarray(flat, dtype=np.float64).reshape(arr.shape)
    return scalar_or_array(out, n)


def expected_max_mp(n, dps: int = 30):
    """mpmath reference for :func:`expected_max` (tanh-sinh quadrature, local precision).

    Returns an ``mpf``.  Slow; meant for tests and spot checks.
    """
    import mpmath

    n = float(_check_n(n))
    dps = check_int(dps, "dps", low=15, high=500)
    with mpmath.workdps(dps + 10):
        nn = mpmath.mpf(n)
        if nn == 1:
            return mpmath.mpf(0)

        def integrand(m):
            return m * nn * mpmath.npdf(m) * mpmath.exp((nn - 1) * mpmath.log(mpmath.ncdf(m)))

        centre, width = _location_scale(n)
        points = [-mpmath.inf] + [mpmath.mpf(centre + width * k) for k in (-6, -2, -1, 0, 1, 2, 6, 20)] \
            + [mpmath.inf]
        value = mpmath.quad(integrand, points)
    with mpmath.workdps(dps):
        return +value


class GumbelExpansion:
    """Gumbel asymptotics of the maximum of ``n`` standard normals.

    ``M_n ~ location + scale * G`` with ``G`` standard Gumbel,
    ``b = sqrt(2 ln n)``, ``location = b - (ln ln n + ln 4 pi) / (2 b)``,
    ``scale = 1 / b`` (``notes/extreme_values.md``).  ``mean(order=1)`` is
    ``location + gamma / b`` with error ``O((ln ln n)^2 / (ln n)^(3/2))``;
    ``mean(order=2)`` adds the next term of the expansion,
    ``-((gamma - c)^2 + pi^2/6) / (2 b^3) - (gamma - c) / b^3 - 1 / b^3``
    with ``c = (ln ln n + ln 4 pi) / 2``.

    Parameters
    ----------
    n : float
        Number of variables, ``n >= 3`` (below that ln ln n is not defined or
        the expansion is meaningless).
    """

    def __init__(self, n):
        self.n = check_real(n, "n", low=3.0)
        self.threshold = float(np.sqrt(2.0 * np.log(self.n)))
        b = self.threshold
        self.shift = 0.5 * (np.log(np.log(self.n)) + np.log(4.0 * np.pi))
        self.location = b - self.shift / b
        self.scale = 1.0 / b

    def mean(self, order: int = 1) -> float:
        """Asymptotic mean to first (default) or second order in ``1/b``."""
        order = check_int(order, "order", low=1, high=2)
        b, c, g = self.threshold, self.shift, EULER_GAMMA
        first = b + (g - c) / b
        if order == 1:
            return float(first)
        return float(first - ((g - c) ** 2 + np.pi ** 2 / 6.0) / (2.0 * b ** 3) - (g - c) / b ** 3 - 1.0 / b ** 3)

    def error_scale(self) -> float:
        """Size of the first neglected term, ``((gamma - c)^2 + pi^2/6) / (2 b^3)``."""
        b, c, g = self.threshold, self.shift, EULER_GAMMA
        return float(((g - c) ** 2 + np.pi ** 2 / 6.0) / (2.0 * b ** 3))

    def cdf(self, m):
        """Gumbel approximation ``exp(-exp(-(m - location)/scale))`` of ``P(M_n <= m)``."""
        z = (np.asarray(m, dtype=np.float64) - self.location) / self.scale
        return np.exp(-np.exp(-z))

    def pdf(self, m):
        """Density of the Gumbel approximation."""
        z = (np.asarray(m, dtype=np.float64) - self.location) / self.scale
        return np.exp(-z - np.exp(-z)) / self.scale

    def __repr__(self):
        return f"GumbelExpansion(n={self.n!r})"


def gumbel_expansion(n) -> GumbelExpansion:
    """The Gumbel asymptotic law of the maximum of ``n`` standard normals (see :class:`GumbelExpansion`)."""
    return GumbelExpansion(n)


class MaximumOfGaussians(DeferredContinuous):  # scipy.stats.rv_continuous from the first instance on
    """Exact law of the maximum of ``n`` i.i.d. N(0, 1) variables: ``cdf = Phi^n``.

    A ``scipy.stats``-style distribution (``pdf``, ``logpdf``, ``cdf``, ``sf``,
    ``ppf``, ``isf``, ``mean``, ``var``, ``rvs(size, rng)``, ...), evaluated in
    log space so that ``n`` up to 1e15 keeps full accuracy.  ``n`` may be real.

    Parameters
    ----------
    n : float
        Number of variables, ``n >= 1``.
    """

    def __init__(self, n):
        self.n = float(_check_n(check_real(n, "n", low=1.0)))
        super().__init__(name="maximum_of_gaussians")

    def _updated_ctor_param(self):
        return {"n": self.n}

    def _logpdf(self, m):
        return _log_density_of_max(m, self.n)

    def _pdf(self, m):
        return np.exp(self._logpdf(m))

    def _logcdf(self, m):
        return self.n * special.log_ndtr(m)

    def _cdf(self, m):
        return np.exp(self._logcdf(m))

    def _sf(self, m):
        return -np.expm1(self._logcdf(m))

    def _ppf(self, q):
        # Phi(m) = q^(1/n); write the upper tail 1 - q^(1/n) = -expm1(log(q)/n) exactly.
        upper = -np.expm1(np.log(q) / self.n)
        return np.where(upper < 0.5, -special.ndtri(upper), special.ndtri(np.exp(np.log(q) / self.n)))

    def _isf(self, q):
        # P(M > m) = q  <=>  Phi(m) = (1 - q)^(1/n)
        upper = -np.expm1(np.log1p(-q) / self.n)
        return -special.ndtri(upper)

    def _rvs(self, size=None, random_state=None):
        return self._ppf(random_state.uniform(size=size))

    def _stats(self):
        mean = _max_moment(self.n, 1)
        second = _max_moment(self.n, 2)
        return mean, second - mean * mean, None, None

    def rvs(self, size=None, rng=None, **kwargs):
        """Random variates; ``rng`` is a ``numpy.random.Generator`` (or a seed)."""
        if rng is None:
            rng = kwargs.pop("random_state", None)
        check_memory(32.0 * math.prod(np.atleast_1d(1 if size is None else size)), f"rvs(size={size!r})")
        return super().rvs(size=size, random_state=rng, **kwargs)

    def __repr__(self):
        return f"MaximumOfGaussians(n={self.n!r})"


def top_order_statistics(n, k: int, size: int, seed=None) -> np.ndarray:
    """Sample the ``k`` largest of ``n`` i.i.d. N(0, 1) variables, exactly in law.

    Only ``k`` uniforms per sample are drawn, whatever ``n`` is, so ``n`` may be
    as large as 1e15.  The smallest upper-tail probabilities ``T_(1) < ... < T_(k)``
    of ``n`` uniforms satisfy ``1 - T_(i) = prod_{j<=i} V_j^{1/(n-j+1)}`` with
    ``V_j`` i.i.d. uniform (Renyi's representation); the Gaussian order
    statistics are ``-ndtri(T_(i))``.  The map is smooth in ``n``, so a fixed
    seed gives common random numbers across ``n`` (``n`` may be real).

    Parameters
    ----------
    n : float
        Number of Gaussian variables, ``n >= k``.
    k : int
        How many of the largest to return, ``k >= 1``.
    size : int
        Number of independent samples.
    seed : None, int, SeedSequence or Generator, optional
        Source of randomness (``None``: ``DEFAULT_SEED``; a Generator is consumed).

    Returns
    -------
    ndarray, shape (size, k)
        Each row sorted in decreasing order.

    Raises
    ------
    ValueError
        If ``k < 1``, ``n < k``, ``size < 0`` or a bad ``seed``.
    """
    k = check_int(k, "k", low=1)
    n = check_real(n, "n", low=float(k))
    size = check_int(size, "size", low=0)
    uniforms = as_generator(seed).random((size, k))
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
