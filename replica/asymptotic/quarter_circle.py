"""The quarter-circle law, its truncation, and the capacity alpha_c(kappa).

The singular values of a d x d matrix with i.i.d. N(0, 1/d) entries follow the
quarter-circle law ``rho_QC(s) = sqrt(4 - s^2) / pi`` on ``[0, 2]`` as d grows.
A rank-``kappa d`` memory keeps the top ``kappa`` fraction of that spectrum,
``[s_kappa, 2]``, and its asymptotic capacity is ``alpha_c(kappa) = F(kappa) / 2``
with ``F(kappa) = Int_{s_kappa}^2 s^2 rho_QC(s) ds`` (``notes/alpha_c_kappa.md``).

Numerics
--------
Everything is written with the angle substitution ``s = 2 sin(theta)``.  With
``g(z) = z - sin z`` and the two complementary angles ``x = 2 theta`` and
``y = pi - 2 theta``:

* ``cdf(s) = (x + sin x) / pi`` and ``sf(s) = g(y) / pi``;
* ``s = 2 sin(x / 2) = 2 cos(y / 2)``;
* ``F = g(2 y) / (2 pi) = 1 - g(2 x) / (2 pi)``.

Each quantity is evaluated in the form that has no cancellation (``g`` by its
Taylor series for small arguments), so float64 results carry full relative
accuracy down to ``kappa`` of order 1e-300 and up to ``kappa = 1``.  The
angle is found by Newton's method on a well-conditioned reformulation and the
residual is checked.  :func:`alpha_c_mp` is an independent mpmath
reference that uses tanh-sinh quadrature of the integrals themselves.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.checks import check_int, check_kappa, check_memory, check_scalar_kappa, scalar_or_array
from ._deferred import DeferredContinuous, DeferredModule

special = DeferredModule("scipy.special")  # imported on first use (0.3 s)

__all__ = [
    "QuarterCircle",
    "TruncatedQuarterCircle",
    "truncation_point",
    "tail_second_moment",
    "alpha_c",
    "alpha_c_hebbian",
    "alpha_c_mp",
    "truncation_point_mp",
]

_PI = math.pi
_SERIES_SWITCH = 1.2  # below this |z|, g(z) = z - sin z by its Taylor series
_SERIES_TERMS = 11  # z^(2n+1)/(2n+1)! for n = 1..11: relative truncation error < 1e-20 at z = 1.2


def _g(z):
    """``z - sin(z)`` without cancellation for small ``z`` (float64, vectorised)."""
    shape = np.shape(z)
    z = np.atleast_1d(np.asarray(z, dtype=np.float64))
    out = z - np.sin(z)
    small = np.abs(z) < _SERIES_SWITCH
    if np.any(small):
        zs = z[small]
        z2 = zs * zs
        # Horner form of sum_{n>=1} (-1)^(n+1) z^(2n+1) / (2n+1)!
        acc = np.zeros_like(zs)
        for n in range(_SERIES_TERMS, 0, -1):
            coef = (-1.0) ** (n + 1) / math.factorial(2 * n + 1)
            acc = coef + z2 * acc
        out[small] = zs * z2 * acc
    return out.reshape(shape)


def _g_prime(z):
    """Derivative of ``g``: ``1 - cos z = 2 sin^2(z/2)`` (no cancellation)."""
    return 2.0 * np.sin(0.5 * z) ** 2


def _newton_checked(func_and_deriv, z, target, lo, hi, name):
    """Newton iteration with clamping to [lo, hi] and a checked final residual.

    ``func_and_deriv(z)`` returns the residual and its derivative at ``z``.
    """
    for _ in range(60):
        value, slope = func_and_deriv(z)
        step = value / slope
        step = np.where(np.isfinite(step), step, 0.0)
        z_new = np.clip(z - step, lo, hi)
        done = np.all(np.abs(z_new - z) <= 4e-16 * np.maximum(np.abs(z_new), 1e-300))
        z = z_new
        if done:
            break
    residual = np.abs(func_and_deriv(z)[0])
    scale = np.maximum(np.abs(target), 1e-300)
    if np.any(residual > 1e-14 * scale):  # pragma: no cover - guarded by tests
        raise RuntimeError(f"{name}: Newton iteration did not converge "
                           f"(largest relative residual {np.max(residual / scale):.3e})")
    return z


def _solve_y(c):
    """Solve ``y - sin y = c`` for y in [0, pi], c in [0, pi] (used for small tails).

    Newton is applied to ``h(y) = g(y)^(1/3) - c^(1/3)``, which is close to
    linear near y = 0 where ``g(y) ~ y^3 / 6``.
    """
    c = np.asarray(c, dtype=np.float64)
    croot = np.cbrt(c)
    y0 = np.minimum(np.cbrt(6.0 * c), _PI)

    def func_and_deriv(y):
        root = np.cbrt(_g(y))
        slope = _g_prime(y) / (3.0 * np.maximum(root, 1e-300) ** 2)
        return root - croot, slope

    y = _newton_checked(func_and_deriv, y0, croot, 0.0, _PI, "truncation angle")
    return np.where(c == 0.0, 0.0, y)


def _solve_x(c):
    """Solve ``x + sin x = c`` for x in [0, pi/2], c in [0, pi/2 + 1] (large tails)."""
    c = np.asarray(c, dtype=np.float64)

    def func_and_deriv(x):
        return x + np.sin(x) - c, 1.0 + np.cos(x)

    x = _newton_checked(func_and_deriv, 0.5 * c, c, 0.0, _PI, "truncation angle")
    return np.where(c == 0.0, 0.0, x)


def _angles_from_tail(kappa):
    """Return ``(x, y, small)`` with tail mass ``kappa`` above ``s = 2 sin(x/2)``.

    ``small`` marks kappa <= 1/2, where ``y = pi - x`` is the accurate variable;
    elsewhere ``x`` is accurate (``1 - kappa`` is then exact in float64).
    """
    kappa = np.asarray(kappa, dtype=np.float64)
    small = kappa <= 0.5
    x = np.empty_like(kappa)
    y = np.empty_like(kappa)
    if np.any(small):
        y[small] = _solve_y(_PI * kappa[small])
        x[small] = _PI - y[small]
    if np.any(~small):
        x[~small] = _solve_x(_PI * (1.0 - kappa[~small]))
        y[~small] = _PI - x[~small]
    return x, y, small


def truncation_point(kappa):
    """Truncation point ``s_kappa`` with ``Int_{s_kappa}^2 rho_QC(s) ds = kappa``.

    Parameters
    ----------
    kappa : float or array_like
        Rank fraction, ``0 < kappa <= 1``.

    Returns
    -------
    float or ndarray
        ``s_kappa`` in ``[0, 2)``; ``s_1 = 0``.  See ``notes/alpha_c_kappa.md``.

    Raises
    ------
    ValueError
        If any ``kappa`` is outside (0, 1], NaN or infinite.
    """
    arr = check_kappa(kappa)
    x, y, small = _angles_from_tail(arr)
    s = np.where(small, 2.0 * np.cos(0.5 * y), 2.0 * np.sin(0.5 * x))
    return scalar_or_array(s, kappa)


def tail_second_moment(kappa):
    """``F(kappa) = Int_{s_kappa}^2 s^2 rho_QC(s) ds``, the spectral weight a rank-``kappa d`` memory keeps.

    Closed form (``notes/alpha_c_kappa.md``): with ``2 theta + sin(2 theta) = pi (1 - kappa)``,
    ``F = 1 - (2 theta - sin(4 theta) / 2) / pi``.  ``F(1) = 1`` exactly and
    ``F(kappa) = 4 kappa - O(kappa^(5/3))`` as kappa -> 0.  ``kappa`` and the errors
    as :func:`truncation_point`; the result is shaped like ``kappa``.
    """
    arr = check_kappa(kappa)
    x, y, small = _angles_from_tail(arr)
    f = np.where(small, _g(2.0 * y) / (2.0 * _PI), 1.0 - _g(2.0 * x) / (2.0 * _PI))
    return scalar_or_array(f, kappa)


def alpha_c(kappa=1.0):
    """Asymptotic storage capacity ``alpha_c(kappa) = F(kappa) / 2`` of a rank-``kappa d`` memory.

    ``alpha = p ln p / d^2`` at the threshold as d -> infinity; ``alpha_c(1) = 1/2``
    exactly (``notes/alpha_c_kappa.md``).  ``kappa`` (default 1) and the errors as
    :func:`truncation_point`; the result is shaped like ``kappa``.
    """
    return scalar_or_array(0.5 * np.asarray(tail_second_moment(kappa)), kappa)


def alpha_c_hebbian(kappa=1.0):
    """Asymptotic capacity ``F(kappa) / 8`` of the (rank-truncated) Hebbian memory.

    ``alpha_H(1) = 1/8`` is derived in ``notes/hebbian_one_eighth.md``; the rank-
    truncated value is a heuristic (``notes/spectra.md``).  Arguments as :func:`alpha_c`.
    """
    return scalar_or_array(0.125 * np.asarray(tail_second_moment(kappa)), kappa)


# --------------------------------------------------------------------------- mpmath reference


def _mp_map(kappa, dps, func):
    """``func(kappa_mpf, mp)`` for each kappa at ``dps + 10`` working digits, rounded to ``dps``.

    Precision is local (``mpmath.workdps``); an ``mpf`` for scalar ``kappa``, else a list.
    """
    import mpmath

    dps = check_int(dps, "dps", low=15, high=1000)
    arr = check_kappa(kappa)
    with mpmath.workdps(dps + 10):
        out = [func(mpmath.mpf(float(k)), mpmath.mp) for k in np.atleast_1d(arr).ravel()]
    with mpmath.workdps(dps):
        out = [+v for v in out]
    return out[0] if np.ndim(arr) == 0 else out


def _mp_depth(kappa_mp, mp):
    """Depth ``h = 2 - s_kappa`` solving ``Int_{2-h}^2 rho_QC = kappa`` (no closed form used).

    Works in ``h`` (not ``s``) so that ``kappa`` down to 1e-300 keeps full relative
    precision, and applies Newton's method to ``log tail(h) = log kappa`` in the
    variable ``u = log h``, where the tail mass behaves like ``h^(3/2)``.  Every
    evaluation of the tail is a tanh-sinh quadrature.
    """
    def density_from_top(v):  # rho_QC(2 - v)
        return mp.sqrt(v * (4 - v)) / mp.pi

    def tail_mass(h):
        # Int_0^h rho_QC(2 - v) dv with v = h w, so the quadrature runs on [0, 1]
        # whatever the scale of h (tanh-sinh nodes lose relative accuracy on tiny intervals).
        return h * mp.sqrt(h) * mp.quad(lambda w: mp.sqrt(w * (4 - h * w)), [0, 1]) / mp.pi

    if kappa_mp == 1:
        return mp.mpf(2)
    target = mp.log(kappa_mp)
    # rho_QC(2 - v) <= 2 sqrt(v) / pi gives tail(h) <= 4 h^(3/2) / (3 pi), so the root
    # lies in [u_low, log 2] with u_low = (2/3) log(3 pi kappa / 4): a safe bracket.
    lo = min(mp.mpf(2) / 3 * mp.log(3 * mp.pi * kappa_mp / 4), mp.log(2)) - 1
    hi = mp.log(2)
    u = lo
    tol = mp.mpf(10) ** (-mp.dps + 5)
    for _ in range(200):
        h = mp.exp(u)
        tail = tail_mass(h)
        value = mp.log(tail) - target
        if value > 0:
            hi = min(hi, u)
        else:
            lo = max(lo, u)
        slope = h * density_from_top(h) / tail  # d log tail / d log h
        u_new = u - value / slope if slope > 0 else (lo + hi) / 2
        if not lo <= u_new <= hi:
            u_new = (lo + hi) / 2  # safeguarded Newton: bisect when a step leaves the bracket
        if abs(u_new - u) <= tol:
            u = u_new
            break
        u = u_new
    else:  # pragma: no cover
        raise RuntimeError(f"truncation_point_mp: Newton did not converge for kappa={kappa_mp}")
    h = mp.exp(u)
    residual = abs(tail_mass(h) / kappa_mp - 1)
    if residual > mp.mpf(10) ** (-mp.dps + 8):  # pragma: no cover
        raise RuntimeError(f"truncation_point_mp: relative residual {residual} for kappa={kappa_mp}")
    return h


def _mp_tail_second_moment(depth, mp):
    """``F = Int_{s_kappa}^2 s^2 rho_QC(s) ds`` by tanh-sinh quadrature, with ``s = 2 - depth * w``."""
    return depth * mp.sqrt(depth) / mp.pi * mp.quad(
        lambda w: (2 - depth * w) ** 2 * mp.sqrt(w * (4 - depth * w)), [0, 1])


def truncation_point_mp(kappa, dps: int = 50):
    """High-precision ``s_kappa`` by mpmath quadrature and root finding (reference path).

    Precision is local to the call (``mp.workdps``).  Returns an ``mpf`` (or a
    list of them for array input).
    """
    return _mp_map(kappa, dps, lambda k, mp: 2 - _mp_depth(k, mp))


def alpha_c_mp(kappa, dps: int = 50):
    """High-precision ``alpha_c(kappa) = F(kappa)/2`` by mpmath quadrature (reference path).

    Independent of the closed form used by :func:`alpha_c`: ``s_kappa`` solves
    ``Int_{s}^2 rho_QC = kappa`` by safeguarded Newton's method on tanh-sinh
    quadrature (in the variable ``log(2 - s)``), and
    ``F = Int_{s_kappa}^2 s^2 rho_QC(s) ds`` is another tanh-sinh quadrature
    (``notes/alpha_c_kappa.md``).  The working precision is ``dps + 10`` digits,
    set locally with ``mpmath.workdps``; no global mpmath state is changed.

    Parameters
    ----------
    kappa : float or sequence of float
        Rank fraction(s) in (0, 1] (converted exactly from float64).
    dps : int, default 50
        Decimal digits of the result, 15 <= dps <= 1000.

    Returns
    -------
    mpmath.mpf or list of mpmath.mpf

    Raises
    ------
    ValueError
        If any ``kappa`` is outside (0, 1] or ``dps`` outside its range.
    """
    return _mp_map(kappa, dps, lambda k, mp: _mp_tail_second_moment(_mp_depth(k, mp), mp) / 2)


# --------------------------------------------------------------------------- distributions


class _QuarterCircleBase(DeferredContinuous):  # scipy.stats.rv_continuous from the first instance on
    """scipy.stats-style law on [lower, 2] with density rho_QC / mass."""

    _tail_mass = 1.0
    _lower = 0.0

    def _pdf(self, s):
        return np.sqrt(np.maximum(4.0 - s * s, 0.0)) / _PI / self._tail_mass

    def _sf(self, s):
        # Mass of [s, 2] under rho_QC, accurate near s = 2, divided by the tail mass.
        half = np.clip(0.5 * s, -1.0, 1.0)
        y = 2.0 * np.arccos(half)
        return (_g(y) / _PI) / self._tail_mass

    def _cdf(self, s):
        half = np.clip(0.5 * s, -1.0, 1.0)
        x = 2.0 * np.arcsin(half)
        full_cdf = (x + np.sin(x)) / _PI  # CDF of the untruncated law
        low_cdf = 1.0 - self._tail_mass
        near_top = s > np.sqrt(2.0)
        return np.where(near_top, 1.0 - self._sf(s), (full_cdf - low_cdf) / self._tail_mass)

    def _isf(self, q):
        return np.asarray(truncation_point(np.clip(q * self._tail_mass, 1e-320, 1.0)), dtype=np.float64)

    def _ppf(self, q):
        q = np.asarray(q, dtype=np.float64)
        tail = self._tail_mass * (1.0 - q)  # mass above the quantile
        out = np.empty_like(q)
        # Below the median of the full law, solve on the cdf side to keep accuracy at small q.
        full_cdf = (1.0 - self._tail_mass) + self._tail_mass * q
        low = full_cdf < 0.5
        if np.any(low):
            x = _solve_x(_PI * full_cdf[low])
            out[low] = 2.0 * np.sin(0.5 * x)
        if np.any(~low):
            out[~low] = np.asarray(truncation_point(np.clip(tail[~low], 1e-320, 1.0)))
        return np.where(q >= 1.0, 2.0, out)

    def _munp(self, n):
        # Int_{lower}^2 s^n rho_QC = 2^(n+1)/pi * B((n+1)/2, 3/2) * I^c_{lower^2/4}((n+1)/2, 3/2)
        a = 0.5 * (n + 1.0)
        if self._lower == 0.0 and float(n).is_integer() and int(n) % 2 == 0:
            k = int(n) // 2  # even moments of the full law are the Catalan numbers, exactly
            return float(math.comb(2 * k, k) // (k + 1)) / self._tail_mass
        full = 2.0 ** (n + 1) / _PI * special.beta(a, 1.5)
        if self._lower == 0.0:
            return full / self._tail_mass
        return full * special.betaincc(a, 1.5, self._lower ** 2 / 4.0) / self._tail_mass

    def _rvs(self, size=None, random_state=None):
        u = random_state.uniform(size=size)
        return self._isf(u)

    def rvs(self, size=None, rng=None, **kwargs):
        """Random variates; ``rng`` is a ``numpy.random.Generator`` (or a seed)."""
        if rng is not None and "random_state" in kwargs:
            raise ValueError("give either rng or random_state, not both")
        if rng is None:
            rng = kwargs.pop("random_state", None)
        check_memory(32.0 * math.prod(np.atleast_1d(1 if size is None else size)), f"rvs(size={size!r})")
        return super().rvs(size=size, random_state=rng, **kwargs)

    def moment(self, order, *args, **kwds):
        """Raw moment ``E[s^order]`` (closed form through the incomplete beta function)."""
        order = check_int(order, "order", low=0)
        return super().moment(order, *args, **kwds)


class QuarterCircle(_QuarterCircleBase):
    """Quarter-circle law ``sqrt(4 - s^2) / pi`` on ``[0, 2]``: second moment 1, fourth moment 2.

    The large-d singular-value law of a d x d matrix with i.i.d. N(0, 1/d) entries.
    Methods follow ``scipy.stats`` (``pdf``, ``cdf``, ``sf``, ``ppf``, ``isf``,
    ``moment``, ``mean``, ``var``, ``rvs``, ``interval``, ...); ``rvs(size, rng)``
    takes a ``numpy.random.Generator``.  Raw moments:
    ``E s^n = 2^(n+1) B((n+1)/2, 3/2) / pi`` (``notes/alpha_c_kappa.md``).

    Examples
    --------
    >>> law = QuarterCircle()
    >>> round(law.moment(2), 12), round(law.moment(4), 12)
    (1.0, 2.0)
    """

    def __init__(self):
        super().__init__(a=0.0, b=2.0, name="quarter_circle")

    def _updated_ctor_param(self):
        return {}

    def __repr__(self):
        return "QuarterCircle()"


class TruncatedQuarterCircle(_QuarterCircleBase):
    """Quarter-circle law restricted to ``[s_kappa, 2]``, density ``rho_QC(s) / kappa``.

    The predicted (normalised) singular-value law of an optimal rank-``kappa d``
    memory at capacity, up to the overall scale (``notes/spectra.md``).

    Parameters
    ----------
    kappa : float
        Rank fraction, ``0 < kappa <= 1``; ``kappa = 1`` is the full law.

    Raises
    ------
    ValueError
        If ``kappa`` is outside (0, 1], NaN or infinite.
    """

    def __init__(self, kappa: float):
        self.kappa = check_scalar_kappa(kappa)
        self.truncation = float(truncation_point(self.kappa))
        self._tail_mass = self.kappa
        self._lower = self.truncation
        super().__init__(a=self.truncation, b=2.0, name="truncated_quarter_circle")

    def _updated_ctor_param(self):
        # scipy's freezing machinery rebuilds the object from these arguments.
        return {"kappa": self.kappa}

    def __repr__(self):
        return f"TruncatedQuarterCircle(kappa={self.kappa!r})"
