"""Predicted singular-value laws of the learnt memories (``notes/spectra.md``).

Normalisation (``notes/spectra.md``): a singular value ``s`` of a ``d x d``
memory ``W`` is measured in units of ``||W||_F / sqrt(d)``, i.e. ``s / (||W||_F /
sqrt(d))``; over all ``d`` singular values these have second moment exactly 1.
:func:`normalized_singular_values` is the one implementation of these units (also
behind ``validation.measure.spectrum``).

* :func:`spectrum` -- the optimal memory at capacity: the quarter-circle law for
  full rank; for rank ``kappa d`` the quarter circle truncated to ``[s_kappa, 2]``,
  which is the law of the ``kappa d`` non-zero singular values in units of
  ``||W||_F / sqrt(d F(kappa))`` (:func:`normalized_singular_values` applies these
  units to measured values).
* :func:`hebbian_spectrum` -- ``W = U E^T`` with ``U, E`` of shape ``d x p`` and
  i.i.d. N(0, 1/d) entries, at finite ratio ``c = p / d`` and ``d -> infinity``: the
  free multiplicative convolution of two Marchenko-Pastur laws.  The Stieltjes
  transform solves a cubic; the law has an atom ``1 - c`` at zero when ``c < 1``.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.checks import as_float_array, check_int, check_memory, check_real, check_scalar_kappa
from ..common.seeds import as_generator

__all__ = [
    "spectrum",
    "normalized_singular_values",
    "hebbian_spectrum",
    "HebbianSpectrum",
]


# --------------------------------------------------------------------------------------
# optimal memory
# --------------------------------------------------------------------------------------
def spectrum(kappa=1.0):
    """Predicted singular-value law of the optimal memory at capacity (``d -> infinity``).

    Parameters
    ----------
    kappa : float
        Rank fraction in (0, 1].

    Returns
    -------
    replica.QuarterCircle or replica.TruncatedQuarterCircle
        ``QuarterCircle()`` for ``kappa = 1``: the law of ``s / (||W||_F / sqrt(d))``,
        second moment 1.  ``TruncatedQuarterCircle(kappa)`` otherwise: the law of the
        ``kappa d`` non-zero singular values in units of ``||W||_F / sqrt(d F(kappa))``
        (the units of the full-rank matrix that is truncated); its second moment is
        ``F(kappa) / kappa``.  Use :func:`normalized_singular_values` to put measured
        singular values in these units.  ``notes/spectra.md``.

    Raises
    ------
    ValueError
        If ``kappa`` is outside (0, 1].
    """
    from .quarter_circle import QuarterCircle, TruncatedQuarterCircle

    kappa = check_scalar_kappa(kappa)
    return QuarterCircle() if kappa == 1.0 else TruncatedQuarterCircle(kappa)


def normalized_singular_values(singular_values, kappa=1.0):
    """Measured singular values of a ``d x d`` memory in the units of :func:`spectrum`.

    The units are ``||W||_F / sqrt(d F(kappa))``, with ``||W||_F^2 = sum s^2`` over all
    ``d`` values: for ``kappa = 1`` that is ``||W||_F / sqrt(d)``, and the ``d``
    returned values have mean square exactly 1 (the units of ``QuarterCircle``);
    for ``kappa < 1`` they are the units of ``TruncatedQuarterCircle(kappa)``.

    Parameters
    ----------
    singular_values : array_like, shape (d,)
        All ``d`` singular values of ``W`` (zeros included).
    kappa : float
        Rank fraction in (0, 1]: it selects the units and the ``round(kappa d)``
        largest values are returned.

    Returns
    -------
    ndarray
        ``s * sqrt(F(kappa)) / (||W||_F / sqrt(d))`` for the ``round(kappa d)`` largest
        ``s``, in decreasing order (``F(1) = 1``).  ``notes/spectra.md``.

    Raises
    ------
    ValueError
        If the values are not a non-empty 1-d array of finite non-negative numbers
        with a positive sum of squares, or ``kappa`` is outside (0, 1].
    """
    from .quarter_circle import tail_second_moment

    values = as_float_array(singular_values, "singular_values")
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"singular_values must be a non-empty 1-d array, got shape {values.shape}")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("singular_values must be finite and non-negative")
    kappa = check_scalar_kappa(kappa)
    rms = math.sqrt(float(np.mean(values * values)))
    if rms == 0.0:
        raise ValueError("singular_values must not be all zero")
    keep = max(1, int(round(kappa * values.size)))
    ordered = np.sort(values)[::-1][:keep]
    return ordered * math.sqrt(float(tail_second_moment(kappa))) / rms


# --------------------------------------------------------------------------------------
# Hebbian memory U E^T
# --------------------------------------------------------------------------------------
def _imag_root(ratio, x):
    """Largest |Im z| among the roots of the cubic at each x (0 where all roots are real).

    ``z(x) = psi_p(1 / (c x))``, the moment generating function of the ``p x p`` product
    ``(U^T U)(E^T E)``, solves ``c^2 z^3 + (c^2 + 2 c) z^2 + (1 + 2 c - c x) z + 1 = 0``;
    the density of ``x = lambda / c`` (``lambda`` an eigenvalue of ``W W^T``) is
    ``c |Im z| / (pi x)`` (``notes/spectra.md``).

    Roots from the companion matrix, then Newton-polished on the factored form
    ``(1 + z)(1 + c z)^2 - c x z = 0``, which stays accurate near the triple root
    ``z = -1`` of ``c = 1`` at small ``x`` (the expanded cubic loses digits there).
    """
    c = float(ratio)
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    comp = np.zeros(x.shape + (3, 3))
    comp[..., 0, 0] = -(1.0 + 2.0 / c)
    comp[..., 0, 1] = -(1.0 + 2.0 * c - c * x) / (c * c)
    comp[..., 0, 2] = -1.0 / (c * c)
    comp[..., 1, 0] = 1.0
    comp[..., 2, 1] = 1.0
    roots = np.linalg.eigvals(comp)
    pick = np.argmax(np.abs(roots.imag), axis=-1)
    start = np.take_along_axis(roots, pick[..., None], axis=-1)[..., 0]
    cx = (c * x).astype(np.complex128)

    def polish(z, cx):
        for _ in range(6):
            one_cz = 1.0 + c * z
            value = (1.0 + z) * one_cz * one_cz - cx * z
            slope = one_cz * one_cz + 2.0 * c * (1.0 + z) * one_cz - cx
            with np.errstate(divide="ignore", invalid="ignore"):
                step = np.where(slope != 0, value / slope, 0.0)
            z = np.where(np.isfinite(step) & (np.abs(step) < 0.5 * np.abs(z.imag) + 1e-300), z - step, z)
        one_cz = 1.0 + c * z
        return z, np.abs((1.0 + z) * one_cz * one_cz - cx * z)

    z, residual = polish(start, cx)
    # Where the companion-matrix roots are inaccurate (near-multiple roots at small x), restart
    # Newton from the local asymptotes and keep the candidate with the smaller residual:
    #   c > 1: the pair splits off the double root -1/c, z ~ -1/c + i sqrt(x / (c (c - 1)));
    #   c ~ 1: the triple root -1 of (1 + z)^3 = x z splits as z ~ -1 + x^(1/3) exp(i pi / 3).
    starts = []
    if c > 1.0:
        starts.append((x < 1e-3 * (c - 1.0) ** 3, lambda xs: -1.0 / c + 1j * np.sqrt(xs / (c * (c - 1.0)))))
    if abs(c - 1.0) < 0.1:
        starts.append((x < 1e-4, lambda xs: -1.0 + np.cbrt(xs) * np.exp(1j * math.pi / 3.0)))
    for small, guess in starts:
        if np.any(small):
            z_small, res_small = polish(guess(x[small]), cx[small])
            better = (res_small < residual[small]) & (z_small.imag > 0)
            z_sel, r_sel = z[small], residual[small]
            z_sel[better], r_sel[better] = z_small[better], res_small[better]
            z[small], residual[small] = z_sel, r_sel
    return np.abs(z.imag)


def _support_edges(c):
    """Edges ``[x_minus, x_plus]`` of the continuous part, in ``x = sigma^2`` (closed form).

    The discriminant of the cubic in ``z`` factorises as ``c^3 x Q(x)`` with
    ``Q(x) = 4 c^2 x^2 + c (c^2 - 20 c - 8) x - 4 (c - 1)^3`` (sympy), so the edges are the
    roots of ``Q``: ``x_plus`` below, ``x_minus = (1 - c)^3 / (c^2 x_plus)`` for ``c < 1`` and
    ``0`` for ``c >= 1`` (the product of the roots of ``Q`` is ``-(c - 1)^3 / c^2``).
    """
    b = c * c - 20.0 * c - 8.0
    cubed = (c - 1.0) ** 3
    root = math.sqrt(b * b + 64.0 * cubed)
    if b <= 0.0:
        upper = (-b + root) / (8.0 * c)
    else:  # avoid cancellation: (-b + root)(b + root) = 64 (c - 1)^3
        upper = 64.0 * cubed / (8.0 * c * (b + root))
    lower = -cubed / (c * c * upper) if c < 1.0 else 0.0
    return lower, upper


def _fuss_catalan_density(x):
    """Closed-form density of ``x`` at ``c = 1`` on ``(0, 27/4)`` (Penson and Zyczkowski 2011).

    Equal to ``|Im z| / (pi x)`` from the cubic (checked to 1e-15 in the tests); used at
    ``c = 1`` because the cubic's triple root at ``x = 0`` makes the numerical roots
    inaccurate for ``x < 1e-16``.
    """
    root = np.sqrt(np.maximum(81.0 - 12.0 * x, 0.0))
    big = 27.0 + 3.0 * root
    cbrt2 = 2.0 ** (1.0 / 3.0)
    return (cbrt2 * math.sqrt(3.0) / (12.0 * math.pi)
            * (cbrt2 * big ** (2.0 / 3.0) - 6.0 * np.cbrt(x)) / (np.cbrt(x) ** 2 * np.cbrt(big)))


def _fuss_catalan_moment(c, n):
    """E[x^n] = c^(1-n) (1/n) sum_k binom(n, k+1) binom(2n, k) c^k (x = sigma^2), exact."""
    if n == 0:
        return 1.0
    total = 0.0
    for k in range(n):
        total += math.comb(n, k + 1) * math.comb(2 * n, k) * c ** k
    return total / n * c ** (1 - n)


RATIO_RANGE = (1e-12, 1e12)
"""Ratios ``c = p / d`` accepted by :class:`HebbianSpectrum`.

Beyond ``1e12`` the law is the quarter circle to ``O(1/c)`` (use
:class:`replica.QuarterCircle`) and the float64 support edges ``(1 +- sqrt(c))^2 / c``
lose the ``1/c`` corrections; below ``1e-12`` the continuous part (mass ``c``) is a
point mass that float64 edges cannot resolve (the table's scale ``1/sqrt(c)`` overflows
its quadrature).
"""


class HebbianSpectrum:
    """Singular-value law of ``W = U E^T`` (``U, E``: ``d x p``, i.i.d. N(0, 1/d)) at ratio ``c = p/d``.

    Values are singular values divided by ``||W||_F / sqrt(d)`` (second moment 1) in
    the limit ``d -> infinity`` at fixed ``c``.  For ``c < 1`` the law has an atom
    of mass ``1 - c`` at zero (``d - p`` zero singular values); ``pdf`` is the density
    of the continuous part (its integral is ``min(1, c)``), ``cdf`` includes the
    atom.  Methods follow ``scipy.stats``: ``pdf``, ``cdf``, ``sf``, ``ppf``,
    ``moment``, ``mean``, ``var``, ``std``, ``rvs(size, rng)``, ``support()``.
    Even moments are closed-form (Fuss-Catalan numbers ``binom(3n, n)/(2n+1)`` at
    ``c = 1``), odd moments by quadrature.  ``notes/spectra.md``.

    Parameters
    ----------
    ratio : float
        ``c = p / d`` in ``RATIO_RANGE = [1e-12, 1e12]``.
    grid_size : int
        Nodes of the table behind ``cdf`` and ``ppf``.

    Raises
    ------
    ValueError
        If ``ratio`` is outside ``RATIO_RANGE = [1e-12, 1e12]``.
    """

    def __init__(self, ratio, *, grid_size=4001):
        self.ratio = check_real(ratio, "ratio", low=RATIO_RANGE[0], high=RATIO_RANGE[1])
        grid_size = check_int(grid_size, "grid_size", low=101)
        c = self.ratio
        self.atom = max(0.0, 1.0 - c)
        self.continuous_mass = min(1.0, c)
        x_lo, x_hi = _support_edges(c)
        self.lower = math.sqrt(max(x_lo, 0.0))
        self.upper = math.sqrt(x_hi)
        # Table in theta: sigma = lower + (upper - lower) u^3, u = (1 - cos theta)/2 (smooth at both edges).
        theta = np.linspace(0.0, math.pi, grid_size)
        u = 0.5 * (1.0 - np.cos(theta))
        width = self.upper - self.lower
        sigma = self.lower + width * u ** 3
        dsigma = width * 3.0 * u ** 2 * 0.5 * np.sin(theta)
        dens = self._density(sigma)
        integrand = dens * dsigma
        from scipy import integrate, interpolate

        cum = integrate.cumulative_simpson(integrand, x=theta, initial=0.0)
        self.quadrature_mass = float(cum[-1])
        self.mass_error = abs(self.quadrature_mass - self.continuous_mass)
        if not self.mass_error < 1e-6:
            raise ArithmeticError(f"hebbian_spectrum({c!r}): density integrates to {self.quadrature_mass!r}, "
                                  f"expected {self.continuous_mass!r}")
        cum = cum * (self.continuous_mass / self.quadrature_mass)
        cum = np.maximum.accumulate(cum)
        self._theta, self._sigma, self._weights = theta, sigma, integrand
        # Monotone interpolants for cdf (sigma -> mass) and ppf (mass -> sigma); drop repeated nodes.
        keep_s = np.concatenate([[True], np.diff(sigma) > 0])
        self._cdf_table = interpolate.PchipInterpolator(sigma[keep_s], cum[keep_s], extrapolate=False)
        keep_c = np.concatenate([[True], np.diff(cum) > 0])
        self._ppf_table = interpolate.PchipInterpolator(cum[keep_c] / self.continuous_mass, sigma[keep_c],
                                                        extrapolate=False)

    # ----- density ----------------------------------------------------------------------
    def _density(self, sigma):
        sigma = np.asarray(sigma, dtype=np.float64)
        out = np.zeros_like(sigma)
        inside = (sigma > self.lower) & (sigma < self.upper) & (sigma > 0)
        if np.any(inside):
            s = sigma[inside]
            x = s * s
            if self.ratio == 1.0:
                out[inside] = 2.0 * s * _fuss_catalan_density(x)
            else:
                im = _imag_root(self.ratio, x)
                out[inside] = 2.0 * s * self.ratio * im / (math.pi * x)
        return out

    def pdf(self, sigma):
        """Density of the continuous part at ``sigma`` (integrates to ``min(1, c)``)."""
        arr = as_float_array(sigma, "sigma")
        out = self._density(np.atleast_1d(arr))
        return out.reshape(arr.shape) if arr.ndim else float(out[0])

    def eigenvalue_pdf(self, x):
        """Density of ``x = sigma^2`` (normalised eigenvalues of ``W W^T``), continuous part."""
        arr = np.atleast_1d(as_float_array(x, "x"))
        out = np.zeros_like(arr)
        pos = arr > 0
        out[pos] = self._density(np.sqrt(arr[pos])) / (2.0 * np.sqrt(arr[pos]))
        return out.reshape(np.shape(x)) if np.ndim(x) else float(out[0])

    def cdf(self, sigma):
        """``P(value <= sigma)``, the atom at zero included."""
        arr = as_float_array(sigma, "sigma")
        s = np.atleast_1d(arr)
        cont = np.where(s <= self.lower, 0.0,
                        np.where(s >= self.upper, self.continuous_mass,
                                 np.nan_to_num(self._cdf_table(np.clip(s, self.lower, self.upper)))))
        out = np.where(s < 0.0, 0.0, self.atom + cont)
        return out.reshape(arr.shape) if arr.ndim else float(out[0])

    def sf(self, sigma):
        """``1 - cdf(sigma)``."""
        return 1.0 - self.cdf(sigma)

    def ppf(self, q):
        """Quantile function (``0`` for ``q <= atom``)."""
        arr = as_float_array(q, "q")
        if np.any((arr < 0) | (arr > 1)):
            raise ValueError("q must lie in [0, 1]")
        qq = np.atleast_1d(arr)
        cont = np.clip((qq - self.atom) / self.continuous_mass, 0.0, 1.0)
        vals = self._ppf_table(cont)
        vals = np.where(cont <= 0.0, self.lower, np.where(cont >= 1.0, self.upper, vals))
        out = np.where(qq <= self.atom, 0.0, vals) if self.atom > 0 else vals
        return out.reshape(arr.shape) if arr.ndim else float(out[0])

    def support(self):
        """``(lower, upper)`` of the continuous part (the atom, if any, sits at 0)."""
        return (self.lower, self.upper)

    # ----- moments ----------------------------------------------------------------------
    def moment(self, order):
        """Raw moment ``E[sigma^order]`` (atom included): closed form for even orders."""
        order = check_int(order, "order", low=0)
        if order % 2 == 0:
            return _fuss_catalan_moment(self.ratio, order // 2)
        return self._odd_moment(order)

    def _odd_moment(self, order):
        vals = self._weights * self._sigma ** order
        from scipy import integrate

        return float(integrate.simpson(vals, x=self._theta) * self.continuous_mass / self.quadrature_mass)

    def mean(self):
        return self.moment(1)

    def var(self):
        return self.moment(2) - self.moment(1) ** 2

    def std(self):
        return math.sqrt(self.var())

    def rvs(self, size=None, rng=None):
        """Samples from the law (inverse transform; ``rng`` a seed as in ``replica.common.seeds``)."""
        rng = as_generator(rng, "rng")
        check_memory(32.0 * math.prod(np.atleast_1d(1 if size is None else size)), f"rvs(size={size!r})")
        u = rng.random(size)
        return self.ppf(u)

    def __repr__(self):
        return f"HebbianSpectrum(ratio={self.ratio!r})"


def hebbian_spectrum(ratio):
    """Singular-value law of the Hebbian memory ``U E^T`` at ratio ``c = p / d``.

    Parameters
    ----------
    ratio : float
        ``c = p / d`` in ``[1e-12, 1e12]`` (:data:`RATIO_RANGE`).

    Returns
    -------
    HebbianSpectrum
        Law of ``s / (||W||_F / sqrt(d))`` as ``d -> infinity`` at fixed ``c`` (second
        moment 1, fourth moment ``2 + 1/c``); tends to the quarter circle as
        ``c -> infinity``.  ``notes/spectra.md``.

    Raises
    ------
    ValueError
        If ``ratio`` is outside ``[1e-12, 1e12]``.
    """
    return HebbianSpectrum(ratio)
