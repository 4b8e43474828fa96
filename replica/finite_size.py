"""Finite-size capacity of the optimal linear memory (the q -> 1 limit of the replica theory).

At capacity the replica-symmetric overlap q tends to 1 and the free entropy is
dominated by ``-p E[C_p] / (2 (1 - q))``, where ``C_p`` is the least squared
shift of one block of ``p`` fields (a target and ``p - 1`` competitors) that
makes the block satisfy its constraint.  ``C_p`` is a water-filling problem:
the target rises to a level ``L + margin`` and every competitor above ``L`` is
pushed down to ``L``.  The capacity is the load at which
``p E[C_p] = F(kappa) d^2``.

Everything here is derived in ``notes/finite_size_capacity.md``.

Public functions
----------------
water_filling_cost
    Exact ``C_p`` for given fields (vectorised).
expected_cost
    ``E[C_p]`` for i.i.d. N(0, 1) fields, by Rao-Blackwellised Monte Carlo over the
    top order statistics of the competitors (closed-form integral over the target).
capacity
    The finite-size capacity ``p_c(d)`` and ``alpha(d) = p_c ln p_c / d^2``; with
    ``outputs=K`` and ``problem`` for ``K`` distinct answers (``replica.outputs``,
    ``notes/many_to_one.md``) and ``ensemble="sphere"`` for unit-norm embeddings
    (``replica.sphere``, ``notes/sphere_ensemble.md``).
max_margin
    The largest margin reachable at a given load (the inverse of ``capacity``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import integrate, optimize, special

from .common.checks import as_float_array, check_choice, check_int, check_kappa, check_memory, check_real
from .common.results import Result
from .common.seeds import DEFAULT_SEED, resolve_seed

__all__ = [
    "DEFAULT_SEED",
    "water_filling_cost",
    "expected_cost",
    "ExpectedCostResult",
    "capacity",
    "CapacityResult",
    "max_margin",
    "MaxMarginResult",
    "ENSEMBLES",
    "PROBLEMS",
]

# ``DEFAULT_SEED`` (re-exported from replica.common.seeds) is used when ``seed=None``, so
# that the theory functions are pure functions of their parameters (the Monte-Carlo
# error is reported as ``stderr``).
_ROW_BLOCK = 8192  # rows per tile (one column each) of the common-random-number stream
_SMALL_KEPT = 32  # below this many constrained competitors, non-integer p interpolates
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_WORKING_ARRAYS = 24  # (rows, K) float64 arrays alive while one sample is evaluated
ENSEMBLES = ("gaussian", "sphere")  # embedding ensembles of capacity(ensemble=...)
PROBLEMS = ("op", "dp")  # original / decoupled problem, capacity(problem=...)


# --------------------------------------------------------------------------------------
# F(kappa)
# --------------------------------------------------------------------------------------
def _tail_second_moment(kappa: float) -> float:
    """F(kappa), the tail second moment of the quarter-circle law (``notes/alpha_c_kappa.md``)."""
    from .quarter_circle import tail_second_moment

    return float(tail_second_moment(kappa))


# --------------------------------------------------------------------------------------
# Exact water filling
# --------------------------------------------------------------------------------------
def _water_filling_sorted(u, kept):
    """Water filling for ``u = t_1 - margin`` (shape (...)) and ``kept`` sorted decreasing.

    Returns ``(cost, level, active)``: the least cost, the water level ``L*`` and the
    number of competitors pushed down.  When nothing moves (``u >= c_1``) the level is
    reported as ``c_1`` (the lowest optimal level) and ``active = 0``.
    """
    top = kept[..., :1]
    shifted = kept - top  # shift invariance: better conditioned sums
    n = kept.shape[-1]
    j = np.arange(1, n + 1, dtype=np.float64)
    cum = np.cumsum(shifted, axis=-1)
    cum_sq = np.cumsum(shifted * shifted, axis=-1)
    breaks = top + j * shifted - (cum - shifted)  # B_j = j c_j - S_{j-1}, decreasing in j
    active = np.sum(breaks > u[..., None], axis=-1)
    idx = np.maximum(active, 1) - 1
    take = lambda arr: np.take_along_axis(arr, idx[..., None], axis=-1)[..., 0]  # noqa: E731
    jj = idx + 1.0
    s_j = take(cum)
    mean_j = top[..., 0] + s_j / jj
    spread_j = np.maximum(take(cum_sq) - s_j * s_j / jj, 0.0)
    cost = spread_j + jj / (jj + 1.0) * (u - mean_j) ** 2
    level = (u + jj * mean_j) / (jj + 1.0)
    cost = np.where(active > 0, cost, 0.0)
    level = np.where(active > 0, level, top[..., 0])
    return cost, level, active


def water_filling_cost(target, competitors, margin=0.0, top_k=1):
    """Least squared shift of a block of fields that makes the target win.

    ``C = min_L [ (L + margin - t_1)_+^2 + sum_rho (t_rho - L)_+^2 ]``, where the sum
    runs over the competitors after dropping the ``top_k - 1`` largest (target among
    the ``top_k`` best).  Solved exactly: with the kept competitors sorted decreasing,
    ``u = t_1 - margin`` and ``j`` the number pushed down,
    ``L* = (u + S_j)/(j + 1)`` and ``C = u^2 + Q_j - (u + S_j)^2 / (j + 1)``
    (``S_j``, ``Q_j``: sums of the ``j`` largest kept competitors and their squares).
    See ``notes/finite_size_capacity.md`` (section "Water filling").

    Parameters
    ----------
    target : array_like, shape (...)
        Target fields ``t_1``.
    competitors : array_like, shape (..., n)
        Competitor fields (any order); ``n >= 1``.  Broadcast against ``target``.
    margin : float, optional
        Required gap ``margin >= 0`` between the target and every kept competitor.
    top_k : int, optional
        Recall criterion: the target must be among the ``top_k`` best,
        ``1 <= top_k <= n``.

    Returns
    -------
    ndarray, shape (...)
        The least cost (a float when the inputs are scalar / one block).

    Raises
    ------
    ValueError
        If the inputs are not finite real arrays, ``margin < 0``, ``n < 1`` or
        ``top_k`` is outside ``[1, n]``.
    """
    target = as_float_array(target, "target")
    competitors = as_float_array(competitors, "competitors")
    margin = check_real(margin, "margin", low=0.0)
    if competitors.ndim < 1 or competitors.shape[-1] < 1:
        raise ValueError(f"competitors must have shape (..., n) with n >= 1, got shape {competitors.shape}")
    n = competitors.shape[-1]
    top_k = check_int(top_k, "top_k", low=1, high=n)
    if not (np.all(np.isfinite(target)) and np.all(np.isfinite(competitors))):
        raise ValueError("target and competitors must be finite")
    shape = np.broadcast_shapes(target.shape, competitors.shape[:-1])
    target = np.broadcast_to(target, shape)
    competitors = np.broadcast_to(competitors, shape + (n,))
    kept = -np.sort(-competitors, axis=-1)[..., top_k - 1:]
    cost, _, _ = _water_filling_sorted(target - margin, kept)
    return cost[()] if cost.ndim == 0 else cost


# --------------------------------------------------------------------------------------
# Common random numbers and order statistics
# --------------------------------------------------------------------------------------
class _UniformStream:
    """Deterministic uniforms ``U[row, col]`` in tiles, independent of how many are used.

    Tile (r, c) is column ``c`` of rows ``[r*8192, (r+1)*8192)``, drawn from
    ``SeedSequence(seed, spawn_key=(r, c))``; so the first ``N`` rows and ``K`` columns
    are the same whatever ``N`` and ``K`` a call asks for (common random numbers across
    ``p``, ``margin`` and sample size).
    """

    def __init__(self, seed: int):
        self.seed = int(seed)
        self._tiles: dict = {}

    def _tile(self, r: int, c: int) -> np.ndarray:
        key = (r, c)
        tile = self._tiles.get(key)
        if tile is None:
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=key))
            tile = rng.random(_ROW_BLOCK)
            # open interval (0, 1): 0 has probability 2^-53 per draw; map it away
            tile[tile == 0.0] = 0.5 / 2.0**53
            self._tiles[key] = tile
        return tile

    def get(self, rows: int, cols: int) -> np.ndarray:
        check_memory(float(rows) * cols * 8.0 * _WORKING_ARRAYS,
                     f"a Monte-Carlo sample of {rows} rows x {cols} order statistics")
        nr = -(-rows // _ROW_BLOCK)
        out = np.empty((nr * _ROW_BLOCK, cols))
        for r in range(nr):
            for c in range(cols):
                out[r * _ROW_BLOCK:(r + 1) * _ROW_BLOCK, c] = self._tile(r, c)
        return out[:rows]


def _kept_order_statistics(n: float, top_k: int, uniforms: np.ndarray) -> np.ndarray:
    """The ``K`` largest kept competitors: order statistics ``top_k .. top_k + K - 1`` of ``n``.

    Column 0 gives the ``top_k``-th largest through its exact law (upper-tail probability
    ``T ~ Beta(top_k, n - top_k + 1)``); the next ones follow Renyi's representation
    ``1 - T_(top_k + l) = (1 - T_(top_k)) prod_{i <= l} V_i^{1/(n - top_k - i + 1)}``.
    For ``top_k = 1`` this is exactly ``replica.extremes.order_statistics_from_uniforms``.
    ``n`` may be real; the map is smooth and increasing in ``n``.
    """
    size, cols = uniforms.shape
    if top_k == 1:
        from .extremes import order_statistics_from_uniforms

        return order_statistics_from_uniforms(n, uniforms)
    first_tail = special.betaincinv(float(top_k), n - top_k + 1.0, uniforms[:, 0])
    log_survival = np.empty_like(uniforms)
    log_survival[:, 0] = np.log1p(-first_tail)
    if cols > 1:
        denom = n - top_k + 1.0 - np.arange(1, cols)
        log_survival[:, 1:] = log_survival[:, :1] + np.cumsum(np.log(uniforms[:, 1:]) / denom, axis=1)
    return -special.ndtri(-np.expm1(log_survival))


# --------------------------------------------------------------------------------------
# Closed-form expectation over the target field
# --------------------------------------------------------------------------------------
def _normal_pieces(upper):
    """Integrals of ``1, x, x^2`` times the N(0, 1) density over ``[upper_{j+1}, upper_j)``.

    ``upper`` has shape (size, K), decreasing along the last axis; the lower end of the
    last interval is ``-inf``.  Each breakpoint costs one ``ndtr`` (of ``-|x|``, the
    small tail) and one ``exp``; differences of the small tails keep upper-tail
    intervals accurate.
    """
    small = special.ndtr(-np.abs(upper))
    below = upper < 0.0
    cdf = np.where(below, small, 1.0 - small)
    sf = np.where(below, 1.0 - small, small)
    pdf = _INV_SQRT_2PI * np.exp(-0.5 * upper * upper)
    xpdf = upper * pdf
    size = upper.shape[0]
    cdf_lo = np.concatenate([cdf[:, 1:], np.zeros((size, 1))], axis=1)
    sf_lo = np.concatenate([sf[:, 1:], np.ones((size, 1))], axis=1)
    pdf_lo = np.concatenate([pdf[:, 1:], np.zeros((size, 1))], axis=1)
    xpdf_lo = np.concatenate([xpdf[:, 1:], np.zeros((size, 1))], axis=1)
    lo_upper_tail = np.concatenate([~below[:, 1:], np.zeros((size, 1), dtype=bool)], axis=1)
    i0 = np.where(lo_upper_tail, sf_lo - sf, cdf - cdf_lo)
    i1 = pdf_lo - pdf
    i2 = i0 + xpdf_lo - xpdf
    return i0, i1, i2


def _conditional_expected_cost(kept: np.ndarray, margin: float, complete: bool, pieces=_normal_pieces):
    """``E[C | competitors]`` over ``t_1 ~ N(0, 1)``, per row of ``kept`` (sorted decreasing).

    ``pieces`` gives the integrals of ``1, x, x^2`` over the intervals between the
    breakpoints (default: the N(0, 1) target; ``ProjectionLaw.interval_moments`` for the
    sphere ensemble).

    As a function of ``u = t_1 - margin`` the cost is 0 above ``B_1 = c_1`` and equals
    ``V_j + j/(j+1) (u - m_j)^2`` on ``[B_{j+1}, B_j)`` (``m_j``, ``V_j``: mean and sum of
    squared deviations of the ``j`` largest).  If ``complete`` is False, ``kept`` holds
    only the ``K`` largest; the lower bound (``j = K`` below ``B_K``) is returned, with
    the gap to the upper bound (level held at ``c_K`` below ``B_K``) as a truncation
    bound.  Returns ``(value, truncation)`` per row.
    """
    size, k = kept.shape
    top = kept[:, :1]
    shifted = kept - top
    j = np.arange(1, k + 1, dtype=np.float64)
    cum = np.cumsum(shifted, axis=1)
    cum_sq = np.cumsum(shifted * shifted, axis=1)
    breaks = top + j * shifted - (cum - shifted)  # B_j
    mean = top + cum / j
    spread = np.maximum(cum_sq - cum * cum / j, 0.0)
    i0, i1, i2 = pieces(breaks + margin)  # in units of x = t_1
    centre = mean + margin
    weight = j / (j + 1.0)
    contrib = spread * i0 + weight * (i2 - 2.0 * centre * i1 + centre * centre * i0)
    value = contrib.sum(axis=1)
    if complete:
        return value, np.zeros(size)
    # below B_K: upper bound (level fixed at c_K) minus the lower bound used above
    last = kept[:, -1] + margin
    spread_k, mean_k = spread[:, -1], centre[:, -1]
    upper_const = spread_k + k * (mean[:, -1] - kept[:, -1]) ** 2
    t0, t1, t2 = i0[:, -1], i1[:, -1], i2[:, -1]
    upper = upper_const * t0 + (t2 - 2.0 * last * t1 + last * last * t0)
    lower = spread_k * t0 + weight[-1] * (t2 - 2.0 * mean_k * t1 + mean_k * mean_k * t0)
    return value, np.maximum(upper - lower, 0.0)


def _default_order_count(kept_total: float) -> int:
    """Number of top order statistics to sample (checked afterwards by the truncation bound)."""
    return max(16, int(math.ceil(12.0 * math.sqrt(2.0 * math.log(max(kept_total, 2.0))) - 16.0)))


def _top_competitor_cost(level):
    """``E[(level - t)_+^2]`` for ``t ~ N(0, 1)``: ``(a^2 + 1) Phi(a) + a phi(a)``."""
    return (level * level + 1.0) * special.ndtr(level) + level * _INV_SQRT_2PI * np.exp(-0.5 * level * level)


class _NormalLaw:
    """The N(0, 1) field law in the interface of ``replica.sphere.ProjectionLaw`` (same formulas as above)."""

    name = "gaussian"

    @staticmethod
    def from_normal(x):
        return x

    interval_moments = staticmethod(_normal_pieces)
    lift_cost = staticmethod(_top_competitor_cost)

    @staticmethod
    def lift_cost_slope(a):
        return 2.0 * (a * special.ndtr(a) + _INV_SQRT_2PI * math.exp(-0.5 * a * a))

    @staticmethod
    def sf(x):
        return special.ndtr(-x)

    @staticmethod
    def isf(q):
        return -special.ndtri(q)


_NORMAL_LAW = _NormalLaw()


def _field_law(d: int, ensemble: str):
    """The field law of ``ensemble``: N(0, 1) (``"gaussian"``) or ``ProjectionLaw(d)`` (``"sphere"``)."""
    ensemble = check_choice(ensemble, "ensemble", ENSEMBLES)
    if ensemble == "gaussian":
        return _NORMAL_LAW
    from .sphere import ProjectionLaw

    return ProjectionLaw(d)


def _control_mean(n: float, top_k: int, margin: float, law=_NORMAL_LAW) -> float:
    """Exact ``E[g(c + margin)]`` for ``c`` the ``top_k``-th largest of ``n`` fields of ``law``.

    ``g = law.lift_cost`` (for N(0, 1) the function above).  One-dimensional quadrature
    over the uniform ``w`` that generates ``c`` (the same law-preserving map as the
    sampler); the endpoint singularities are logarithmic.
    """
    if top_k == 1:
        def tail(w):
            return -np.expm1(np.log1p(-w) / n)
    else:
        def tail(w):
            return special.betaincinv(float(top_k), n - top_k + 1.0, w)

    def integrand(w):
        return float(law.lift_cost(law.isf(tail(w)) + margin))

    value, error = integrate.quad(integrand, 0.0, 1.0, limit=200, epsabs=1e-13, epsrel=1e-12)
    if not error <= 1e-9 * max(value, 1e-300):
        value, error = _control_mean_by_parts(n, top_k, margin, law)
    if not error <= 1e-9 * max(value, 1e-300):
        raise RuntimeError(f"control-variate quadrature inaccurate: {value!r} +- {error!r}")
    return value


def _control_mean_by_parts(n: float, top_k: int, margin: float, law=_NORMAL_LAW):
    """:func:`_control_mean` as ``int g'(x + margin) P(c > x) dx`` (for tiny means).

    ``g'(a) = 2 (a Phi(a) + phi(a))`` and ``P(c > x) = I_{Q(x)}(top_k, n - top_k + 1)``
    (regularised incomplete beta, ``Q`` the upper tail of ``law``).  The integrand is smooth
    in ``x``; breakpoints span the median of ``c`` and ``-margin``, where the mass lies
    when the level ``c + margin`` is deep in the lower tail of ``t_1``.
    """
    def integrand(x):
        slope = law.lift_cost_slope(x + margin)
        return float(slope) * float(special.betainc(float(top_k), n - top_k + 1.0, law.sf(x)))

    median = float(law.isf(special.betaincinv(float(top_k), n - top_k + 1.0, 0.5)))
    lo, hi = min(median, -margin) - 12.0, max(median, -margin) + 12.0
    edges = np.linspace(lo, hi, 25)
    bounds = [(-np.inf, lo)] + list(zip(edges[:-1], edges[1:])) + [(hi, np.inf)]
    with warnings.catch_warnings():  # the summed error estimate is checked by the caller
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        parts = [integrate.quad(integrand, a, b, epsabs=0.0, epsrel=1e-12, limit=200) for a, b in bounds]
    return sum(v for v, _ in parts), sum(e for _, e in parts)


class _CostEstimator:
    """Per-sample ``E[C_p | competitors]`` at real ``p``, on a fixed common-random-number stream.

    The control variate is ``X = g(c + margin)`` with ``c`` the largest kept competitor
    (the exact conditional cost when there is one competitor); its mean is known by
    quadrature (:func:`_control_mean`).  ``law`` is the law of the target and competitor
    fields (:func:`_field_law`); other laws than N(0, 1) map the Gaussian order statistics
    through ``law.from_normal``, so every law shares the same common random numbers.
    """

    def __init__(self, margin: float, top_k: int, seed: int, law=_NORMAL_LAW):
        self.margin = float(margin)
        self.top_k = int(top_k)
        self.law = law
        self.stream = _UniformStream(seed)
        self.order_count = None  # fixed K (set on first use; raised if truncation shows)
        self._control_means: dict = {}
        self._integer_cache: dict = {}

    def _control(self, n):
        key = (n, self.margin)
        if key not in self._control_means:
            self._control_means[key] = _control_mean(n, self.top_k, self.margin, self.law)
        return self._control_means[key]

    def _at_real_n(self, n: float, rows: int, order_count: int):
        kept_total = n - self.top_k + 1.0  # number of constrained competitors
        complete = float(kept_total).is_integer() and order_count >= kept_total
        k = int(min(order_count, math.floor(kept_total + 1e-12)))
        uniforms = self.stream.get(rows, k)
        kept = self.law.from_normal(_kept_order_statistics(n, self.top_k, uniforms))
        value, trunc = _conditional_expected_cost(kept, self.margin, complete, self.law.interval_moments)
        control = self.law.lift_cost(kept[:, 0] + self.margin)
        return value, trunc, control, self._control(n), k, complete

    def _at_integer_n(self, n: float, rows: int):
        key = (n, rows, self.margin)
        if key not in self._integer_cache:
            if len(self._integer_cache) > 64:
                self._integer_cache.clear()
            self._integer_cache[key] = self._at_real_n(n, rows, _SMALL_KEPT)
        return self._integer_cache[key]

    def samples(self, p: float, rows: int, margin: float | None = None):
        """Per-row ``(values, truncation, control, control_mean, order_count, complete)`` at real ``p``."""
        if margin is not None:
            self.margin = float(margin)
        n = p - 1.0
        kept_total = n - self.top_k + 1.0
        if self.order_count is None:
            self.order_count = _default_order_count(kept_total)
        order = self.order_count
        if kept_total < _SMALL_KEPT and not float(p).is_integer():
            # few competitors: interpolate p E[C_p] linearly between the integers
            p_lo, p_hi = math.floor(p), math.ceil(p)
            w_hi = (p - p_lo) * p_hi / p
            w_lo = (p_hi - p) * p_lo / p
            lo = self._at_integer_n(p_lo - 1.0, rows)
            hi = self._at_integer_n(p_hi - 1.0, rows)
            mixed = tuple(w_lo * a + w_hi * b for a, b in zip(lo[:4], hi[:4]))
            return mixed + (max(lo[4], hi[4]), True)
        return self._at_real_n(n, rows, max(order, _SMALL_KEPT) if kept_total < _SMALL_KEPT else order)

    def estimate(self, p: float, rows: int, margin: float | None = None, trunc_rel_tol: float = 1e-6):
        """Control-variate mean, stderr and truncation bound; K is doubled until truncation is negligible."""
        for _ in range(8):
            values, trunc, control, control_mean, k, complete = self.samples(p, rows, margin)
            dc = control - control.mean()
            var_c = float(np.dot(dc, dc))
            beta = float(np.dot(values - values.mean(), dc)) / var_c if var_c > 0 else 0.0
            adjusted = values - beta * (control - control_mean)
            mean = float(adjusted.mean())
            stderr = float(adjusted.std(ddof=2) / math.sqrt(rows)) if rows > 2 else float("inf")
            bound = float(trunc.mean())
            if complete or bound <= trunc_rel_tol * max(mean, 1e-300):
                return mean, stderr, bound, k, complete
            self.order_count = 2 * self.order_count
        raise RuntimeError(  # pragma: no cover - would need astronomically large p
            f"expected_cost: truncation bound {bound:.3g} still above {trunc_rel_tol:g} x mean "
            f"with {k} order statistics at p={p!r}")


def _rows_for(rel_sd: float, rel_tol: float) -> int:
    need = int(math.ceil(1.15 * (rel_sd / rel_tol) ** 2))
    return max(2048, -(-need // 512) * 512)


# --------------------------------------------------------------------------------------
# shared checks and root search
# --------------------------------------------------------------------------------------
_SAMPLE_ROUNDS = 4  # rounds of enlarging the fixed sample until rel_tol holds


def _check_p_top_k(p, top_k):
    p = check_real(p, "p", low=2.0)
    top_k = check_int(top_k, "top_k", low=1)
    if top_k > p - 1.0:
        raise ValueError(f"top_k must be an integer in [1, p-1] = [1, {p - 1.0:g}], got {top_k}")
    return p, top_k


def _check_d_kappa(d, kappa):
    d = check_int(d, "d", low=2)
    kappa = float(check_kappa(kappa))
    return d, kappa


def _check_accuracy(rel_tol, tol, max_iter):
    """``rel_tol`` in [1e-6, 0.5], ``tol`` in (0, 1e-2], ``max_iter >= 1``."""
    rel_tol = check_real(rel_tol, "rel_tol", low=1e-6, high=0.5)
    tol = check_real(tol, "tol", low=0.0, high=1e-2, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    return rel_tol, tol, max_iter


class _RootSearch(NamedTuple):
    x: float
    evaluations: int
    residual: float
    exhausted: bool  # max_iter reached before the root was bracketed and refined


class _BelowLimit(Exception):
    pass


def _bracketed_root(g, x0, slope_guess, *, lower=-math.inf, xtol=1e-11, max_iter=100) -> _RootSearch:
    """Root of an increasing smooth ``g``: secant steps (overshooting 2 %) to a bracket, then brentq.

    At most ``max_iter`` secant steps and ``max_iter`` Brent iterations.  ``lower`` is a
    hard lower limit of ``x``; :class:`_BelowLimit` is raised when ``g(lower) > 0``.
    """
    count = 0

    def call(x):
        nonlocal count
        count += 1
        return g(x)

    x_a, g_a = x0, call(x0)
    slope = slope_guess
    for _ in range(max_iter):
        if g_a == 0.0:
            return _RootSearch(x_a, count, 0.0, False)
        x_b = max(x_a - 1.02 * g_a / slope, lower)
        if x_b == x_a:  # stuck at the lower limit with g > 0
            raise _BelowLimit()
        g_b = call(x_b)
        if g_a * g_b <= 0.0:
            break
        secant = (g_b - g_a) / (x_b - x_a)
        slope = secant if secant > 0.1 * slope_guess else slope_guess
        x_a, g_a = x_b, g_b
    else:
        return _RootSearch(x_a, count, abs(g_a), True)
    if g_b == 0.0:
        return _RootSearch(x_b, count, 0.0, False)
    lo, hi = min(x_a, x_b), max(x_a, x_b)
    root, info = optimize.brentq(call, lo, hi, xtol=xtol, rtol=1e-14, maxiter=max_iter,
                                 full_output=True, disp=False)
    return _RootSearch(root, count, abs(call(root)), not info.converged)


def _root_status(search: _RootSearch, tol, rel_stderr, rel_tol, regular=True):
    """``(status, converged, message)`` of a root on a Monte-Carlo sample."""
    detail = (f"residual {search.residual:.3g} (tol {tol:.3g}), relative stderr of E[C] "
              f"{rel_stderr:.3g} (rel_tol {rel_tol:.3g}), {search.evaluations} evaluations")
    if search.exhausted:
        return "max_iter", False, f"max_iter reached: {detail}"
    if search.residual <= tol and rel_stderr <= rel_tol and regular:
        return "converged", True, f"converged: {detail}"
    return "not_converged", False, f"not converged: {detail}" + ("" if regular else "; slope <= 0")


# --------------------------------------------------------------------------------------
# expected_cost
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExpectedCostResult(Result):
    """Monte-Carlo estimate of ``E[C_p]`` (see :func:`expected_cost`).

    ``status`` is ``"converged"`` when ``rel_stderr <= rel_tol``, ``"max_iter"`` when
    ``max_iter`` rounds of enlarging the sample did not get there.
    """

    STATUSES = ("converged", "max_iter")

    p: float
    margin: float
    top_k: int
    mean: float
    stderr: float
    rel_stderr: float  # stderr / mean
    samples: int
    order_statistics: int  # K, the top order statistics sampled
    complete: bool  # every competitor sampled (no truncation)
    truncation_bound: float  # upper bound on the bias from keeping K order statistics
    rel_tol: float
    converged: bool
    seed: int
    status: str
    message: str


def expected_cost(p, margin=0.0, top_k=1, *, rel_tol=1e-3, max_iter=_SAMPLE_ROUNDS, seed=None):
    """Expected water-filling cost ``E[C_p]`` for i.i.d. N(0, 1) target and competitor fields.

    Only the largest ``K`` (about ``8 + 10 sqrt(2 ln p)``) kept competitors are sampled,
    exactly in law, from ``K`` uniforms per sample; the expectation over the target
    field is done in closed form (the cost is piecewise quadratic in ``t_1``), which
    removes most of the variance.  A bound on the error of the truncation to ``K``
    order statistics is computed per call and ``K`` is doubled until it is below
    ``1e-6`` of the mean.  The uniforms are common random numbers (fixed by ``seed``),
    so ``p -> p E[C_p]`` is smooth and increasing in real ``p``.  For fewer than 32
    constrained competitors and non-integer ``p``, ``p E[C_p]`` is interpolated
    linearly between the neighbouring integers.  See ``notes/finite_size_capacity.md``
    (section "Monte Carlo").

    Parameters
    ----------
    p : float
        Block size (one target and ``p - 1`` competitors), ``p >= 2``; may be real.
    margin : float, optional
        Required stability ``margin >= 0`` in units of the competitor standard deviation.
    top_k : int, optional
        Target among the ``top_k`` best, ``1 <= top_k <= p - 1``.
    rel_tol : float, optional
        Target relative standard error, in ``[1e-6, 0.5]``.
    max_iter : int, optional
        Rounds of enlarging the sample towards ``rel_tol`` (default 4).
    seed : None, int, SeedSequence or Generator, optional
        Seed of the common random numbers (``None``: ``DEFAULT_SEED``); the integer
        used is stored in the result.

    Returns
    -------
    ExpectedCostResult
        ``mean``, ``stderr``, ``rel_stderr``, ``samples``, ``order_statistics`` (K),
        ``truncation_bound``, ``converged`` (``rel_stderr <= rel_tol``), ``status``.

    Raises
    ------
    ValueError
        If ``p < 2``, ``margin < 0``, ``top_k`` outside ``[1, p - 1]``, ``rel_tol``
        outside ``[1e-6, 0.5]``, ``max_iter < 1`` or a bad ``seed``.
    """
    p, top_k = _check_p_top_k(p, top_k)
    margin = check_real(margin, "margin", low=0.0)
    rel_tol = check_real(rel_tol, "rel_tol", low=1e-6, high=0.5)
    max_iter = check_int(max_iter, "max_iter", low=1)
    estimator = _CostEstimator(margin, top_k, resolve_seed(seed))
    return _expected_cost(estimator, p, rel_tol, max_iter=max_iter)


def _expected_cost(estimator, p, rel_tol, margin=None, max_iter=_SAMPLE_ROUNDS):
    rows = 2048
    for _ in range(max_iter):
        mean, stderr, bound, k, complete = estimator.estimate(p, rows, margin)
        rel = stderr / mean if mean > 0 else (0.0 if stderr == 0 else math.inf)
        if rel <= rel_tol:
            break
        rows = max(rows * 2, _rows_for(rel * math.sqrt(rows), rel_tol))
    converged = bool(rel <= rel_tol)
    message = (f"{'converged' if converged else 'max_iter reached'}: relative stderr {rel:.3g} "
               f"(rel_tol {rel_tol:.3g}) with {rows} samples")
    return ExpectedCostResult(p=float(p), margin=estimator.margin, top_k=estimator.top_k,
                              mean=mean, stderr=stderr, rel_stderr=rel, samples=rows,
                              order_statistics=k, complete=complete, truncation_bound=bound,
                              rel_tol=rel_tol, converged=converged, seed=estimator.stream.seed,
                              status="converged" if converged else "max_iter", message=message)


# --------------------------------------------------------------------------------------
# capacity
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CapacityResult(Result):
    """Finite-size capacity from ``p_c E[C_{p_c}] = F(kappa) d^2`` (see :func:`capacity`).

    ``status``: ``"converged"`` (residual ``<= tol``, relative stderr of ``E[C]``
    ``<= rel_tol`` and an increasing equation at the root), ``"not_converged"`` (one of
    these checks failed) or ``"max_iter"`` (the root search ran out of iterations).
    ``message`` gives the residual.
    """

    STATUSES = ("converged", "not_converged", "max_iter")

    d: int
    kappa: float
    margin: float
    top_k: int
    p_c: float
    stderr: float  # of p_c (delta method)
    alpha: float  # p_c ln p_c / d^2
    alpha_stderr: float
    alpha_c: float  # F(kappa) / 2, the d -> infinity limit
    tail_second_moment: float  # F(kappa)
    expected_cost: float  # E[C] at p_c
    expected_cost_stderr: float
    samples: int
    order_statistics: int
    converged: bool
    iterations: int  # evaluations of the equation
    residual: float  # |log(p E[C_p] / (F d^2))| at p_c
    seed: int
    status: str
    message: str
    outputs: int | None = None  # K distinct answers (None: one per fact)
    problem: str = "dp"
    ensemble: str = "gaussian"
    effective_weights: int = 0  # N_eff in p E[C] = F N_eff: d^2, or d (K - 1) for the OP with K <= d


def _initial_guess(target: float) -> float:
    # p (2 ln p - ln ln p - 1.5) ~ target, a rough finite-size form of E C_p
    log_p = math.log(max(target, 4.0))
    for _ in range(50):
        cost = max(2.0 * log_p - math.log(max(log_p, 1.0)) - 1.5, 0.5)
        log_p = max(math.log(target / cost), math.log(2.0))
    return math.exp(log_p)


class _SampledRoot(NamedTuple):
    """A root on a fixed sample: the load (or the given p), the sample and E[C] there."""

    p: float
    rows: int
    mean: float
    stderr: float
    order_statistics: int
    search: _RootSearch  # of the last round (evaluations: all rounds)


def _smallest_load(top_k: int) -> float:
    """The smallest ``p`` allowed with ``top_k`` (one constrained competitor)."""
    return max(2.0, top_k + 1.0)


def _load_at(log_p: float, top_k: int) -> float:
    """``exp(log_p)``, kept at or above :func:`_smallest_load`.

    ``exp(log(p_min))`` can round to just below ``p_min`` (e.g. ``p_min = 301``), where
    fewer than one competitor would be constrained.
    """
    return max(math.exp(log_p), _smallest_load(top_k))


def _solve_load(estimator, target, rows, p_guess, max_iter) -> _RootSearch:
    """Root of ``log(p E[C_p]) = log(target)`` in ``log p`` with a fixed sample."""
    def g(log_p):
        p = _load_at(log_p, estimator.top_k)
        return math.log(p * estimator.estimate(p, rows)[0]) - math.log(target)

    p_min = _smallest_load(estimator.top_k)
    try:
        return _bracketed_root(g, math.log(max(p_guess, p_min)), 1.1, lower=math.log(p_min),
                               max_iter=max_iter)
    except _BelowLimit:
        raise ValueError(f"capacity below p = {p_min:g} (the smallest p allowed with top_k = "
                         f"{estimator.top_k}): F(kappa) d^2 < {p_min:g} E[C_{p_min:g}]; "
                         "increase d or kappa") from None


def _capacity_root(estimator, target, rel_tol, max_iter) -> _SampledRoot:
    """Sample size from a pilot at the guess, then the root on one fixed sample (enlarged if needed)."""
    p_guess = max(_initial_guess(target), _smallest_load(estimator.top_k))
    rows = _expected_cost(estimator, p_guess, rel_tol).samples
    evaluations = 0
    for _ in range(_SAMPLE_ROUNDS):
        search = _solve_load(estimator, target, rows, p_guess, max_iter)
        evaluations += search.evaluations
        p_c = _load_at(search.x, estimator.top_k)
        mean, err, _, k, _ = estimator.estimate(p_c, rows)
        if err / mean <= rel_tol or search.exhausted:
            break
        rows = _rows_for(err / mean * math.sqrt(rows), rel_tol)
        p_guess = p_c
    return _SampledRoot(p_c, rows, mean, err, k, search._replace(evaluations=evaluations))


def _log_load_slope(estimator, root: _SampledRoot, h=1e-3) -> float:
    """``d log(p E[C_p]) / d log p`` at ``p_c`` by a common-random-number difference."""
    p_c, rows = root.p, root.rows
    p_low = max(p_c * math.exp(-h), _smallest_load(estimator.top_k))
    m_plus = estimator.estimate(p_c * math.exp(h), rows)[0]
    m_minus = estimator.estimate(p_low, rows)[0] if p_low < p_c else root.mean
    return (math.log(p_c * math.exp(h) * m_plus) - math.log(p_low * m_minus)) / (h + math.log(p_c / p_low))


MAX_TOP_K = 10**5
"""Largest ``top_k`` accepted by :func:`capacity` (see its docstring)."""


def _smallest_load_cost(top_k: int, margin: float, law=_NORMAL_LAW) -> float:
    """Exact ``p E[C_p]`` at ``p = top_k + 1`` (one constrained competitor).

    With one kept competitor ``c`` (the smallest of ``top_k``) the cost is
    ``(c + margin - t_1)_+^2 / 2``, whose mean over ``t_1`` is ``g(c + margin) / 2``
    (:func:`_top_competitor_cost`); the mean over ``c`` is :func:`_control_mean`.
    """
    p_min = _smallest_load(top_k)
    return p_min * 0.5 * _control_mean(p_min - 1.0, top_k, margin, law)


def _check_capacity_range(d, tail, margin, top_k, law=_NORMAL_LAW):
    """Reject ``top_k > MAX_TOP_K`` and margins for which even ``p = top_k + 1`` is above capacity."""
    top_k = check_int(top_k, "top_k", low=1, high=MAX_TOP_K)
    target = tail * float(d) ** 2
    if _smallest_load_cost(top_k, margin, law) <= target:
        return top_k
    p_min = _smallest_load(top_k)
    if _smallest_load_cost(top_k, 0.0, law) > target:
        raise ValueError(f"d={d}, F(kappa)={tail:.6g}, top_k={top_k}: capacity below p = {p_min:g} (the smallest "
                         f"p allowed with top_k = {top_k}) even at margin 0: F(kappa) d^2 < {p_min:g} "
                         f"E[C_{p_min:g}]; increase d or kappa")
    largest = optimize.brentq(lambda m: _smallest_load_cost(top_k, m, law) - target, 0.0, margin, xtol=1e-6)
    raise ValueError(f"margin must lie in [0, {largest:.6g}] for d={d}, top_k={top_k} and F(kappa) = "
                     f"{tail:.6g} (above it even p = {p_min:g} exceeds the capacity), "
                     f"got {margin!r}")


class _Accuracy(NamedTuple):
    """The accuracy settings of :func:`capacity` (its keyword-only ``**accuracy``), checked."""

    rel_tol: float = 1e-3
    tol: float = 1e-9
    max_iter: int = 100
    seed: int = DEFAULT_SEED


def _accuracy_settings(**accuracy) -> _Accuracy:
    """Check ``rel_tol``, ``tol``, ``max_iter`` and ``seed`` (see :func:`capacity`); unknown names raise TypeError."""
    unknown = sorted(set(accuracy) - set(_Accuracy._fields))
    if unknown:
        raise TypeError(f"capacity() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}")
    rel_tol, tol, max_iter = _check_accuracy(accuracy.get("rel_tol", 1e-3), accuracy.get("tol", 1e-9),
                                             accuracy.get("max_iter", 100))
    return _Accuracy(rel_tol, tol, max_iter, resolve_seed(accuracy.get("seed")))


def capacity(d, kappa=1.0, margin=0.0, top_k=1, *, outputs=None, problem="dp", ensemble="gaussian", **accuracy):
    """Finite-size capacity of the optimal (rank ``kappa d``) memory: ``p_c E[C_{p_c}] = F(kappa) d^2``.

    ``E[C_p]`` is the expected water-filling cost (:func:`expected_cost`) and
    ``F(kappa)`` the tail second moment of the quarter-circle law
    (``replica.quarter_circle.tail_second_moment``; ``F(1) = 1``).  The root is found by
    secant steps and ``brentq`` on ``log p`` with common random numbers (one fixed
    Monte-Carlo sample, so the equation is smooth) and accepted only if
    ``|log(p E[C_p]/(F d^2))| <= tol``.  ``alpha = p_c ln p_c / d^2``.
    ``alpha_c = F(kappa)/2`` is the ``d -> infinity`` limit; a fixed ``margin`` or
    ``top_k`` does not change it (their corrections vanish like ``margin / sqrt(ln p)``
    and ``ln(top_k) / ln p``).  The standard error of ``p_c`` comes from that of ``E[C]``
    by the delta method.  For kappa < 1 the finite-size equation is the conjecture of
    ``notes/finite_size_capacity.md``, where everything here is derived.

    With ``outputs=K`` (many facts share an answer) the block has ``min(K, p)`` fields
    and the equation becomes ``p_c E[C_K] = F d min(K - 1, d)`` for the original problem
    and ``p_c E[C_K] = F d^2`` for the decoupled one (``replica.outputs``,
    ``notes/many_to_one.md``).  ``ensemble="sphere"`` replaces the N(0, 1) fields by the
    exact law of a unit-vector projection (``replica.sphere.ProjectionLaw``,
    ``notes/sphere_ensemble.md``).

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    kappa : float, optional
        Rank fraction ``m / d`` in ``(0, 1]``.
    margin : float, optional
        Stability margin ``>= 0`` in competitor standard deviations.
    top_k : int, optional
        Target among the ``top_k`` best, ``1 <= top_k <= MAX_TOP_K = 10**5``.  The
        capacity always exceeds ``top_k + 1``, but its equation then sets the level
        deep in the lower tail of the ``p_c`` competitors, where the number of active
        order statistics (and the time and memory) grows with ``top_k``: at
        ``top_k = 10**6`` the 4096 order statistics of the sampler no longer bound the
        truncation error, and ``alpha`` is far from its ``d -> infinity`` limit anyway
        (corrections ``ln(top_k) / ln p``).
    outputs : int, optional
        Number ``K >= 2`` of distinct answers (``None``: every fact has its own answer,
        the block has ``p`` fields).  ``top_k <= K - 1``.  See
        :func:`replica.outputs.capacity_many_to_one`.
    problem : {"dp", "op"}, optional
        Decoupled (own candidates per input) or original (shared outputs) problem; the
        two coincide in this theory when ``outputs`` is ``None`` or ``K > d``.
    ensemble : {"gaussian", "sphere"}, optional
        Embedding ensemble: N(0, 1) fields, or the exact projection law of unit vectors.
    **accuracy
        Keyword-only accuracy settings (checked by name; another name is a TypeError):

        ``rel_tol`` (default 1e-3): relative standard error of ``E[C]`` at the root, in
        ``[1e-6, 0.5]``; the sample it needs must fit in memory
        (:func:`replica.common.checks.check_memory`).
        ``tol`` (default 1e-9): accepted residual ``|log(p E[C_p] / (F d^2))|`` at the
        root, in ``(0, 1e-2]``.
        ``max_iter`` (default 100): secant steps and Brent iterations allowed per root
        search.
        ``seed`` (None, int, SeedSequence or Generator): seed of the common random
        numbers (``None``: ``DEFAULT_SEED``).

    Returns
    -------
    CapacityResult
        ``p_c``, ``stderr`` (of ``p_c``), ``alpha``, ``alpha_stderr``, ``alpha_c``,
        ``status``, ``converged``, ``iterations``, ``residual``, ``message``, the
        Monte-Carlo details and the model (``outputs``, ``problem``, ``ensemble``,
        ``effective_weights``).

    Raises
    ------
    ValueError
        If an argument is outside its range.  The margin range depends on ``d``: a
        capacity ``p_c >= top_k + 1`` exists iff ``(top_k + 1) E[C_{top_k + 1}] <=
        F(kappa) d^2``, checked up front with the exact one-competitor cost (e.g.
        ``margin <= 15.9`` at ``d = 16``, ``kappa = 1``); the error names the largest margin.
    TypeError
        For an unknown keyword argument.
    """
    problem = check_choice(problem, "problem", PROBLEMS)
    d, kappa = _check_d_kappa(d, kappa)
    law = _field_law(d, ensemble)
    margin = check_real(margin, "margin", low=0.0)
    settings = _accuracy_settings(**accuracy)
    if outputs is not None:
        from .outputs import _many_to_one

        return _many_to_one(d, kappa, margin, top_k, outputs, problem, law, settings)
    return _distinct_outputs(d, kappa, margin, top_k, law, settings, problem)


def _distinct_outputs(d, kappa, margin, top_k, law, settings: _Accuracy, problem="dp") -> CapacityResult:
    """:func:`capacity` with one answer per fact: the root of ``p E[C_p] = F(kappa) d^2``."""
    tail = _tail_second_moment(kappa)
    top_k = _check_capacity_range(d, tail, margin, top_k, law)
    estimator = _CostEstimator(margin, top_k, settings.seed, law)
    try:
        root = _capacity_root(estimator, tail * float(d) ** 2, settings.rel_tol, settings.max_iter)
    except ValueError as exc:
        raise ValueError(f"d={d}, kappa={kappa!r}, top_k={top_k}: {exc}") from None
    slope = _log_load_slope(estimator, root)
    p_c, rel = root.p, root.stderr / root.mean
    p_se = p_c * rel / slope
    log_p = math.log(p_c)
    status, converged, message = _root_status(root.search, settings.tol, rel, settings.rel_tol, regular=slope > 0)
    return CapacityResult(
        d=d, kappa=kappa, margin=margin, top_k=top_k, p_c=p_c, stderr=p_se,
        alpha=p_c * log_p / d**2, alpha_stderr=p_se * (log_p + 1.0) / d**2,
        alpha_c=tail / 2.0, tail_second_moment=tail, expected_cost=root.mean,
        expected_cost_stderr=root.stderr, samples=root.rows, order_statistics=root.order_statistics,
        converged=converged, iterations=root.search.evaluations, residual=root.search.residual,
        seed=settings.seed, status=status, message=message, problem=problem, ensemble=law.name,
        effective_weights=d * d)


# --------------------------------------------------------------------------------------
# max_margin
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MaxMarginResult(Result):
    """Largest stability margin at a given load (see :func:`max_margin`).

    ``status``: ``"converged"`` (residual ``<= tol`` and relative stderr of ``E[C]``
    ``<= rel_tol``), ``"not_converged"`` or ``"max_iter"``; ``message`` gives the
    residual.  ``storable`` (margin ``>= 0``) is the answer to "is the load below
    capacity".
    """

    STATUSES = ("converged", "not_converged", "max_iter")

    p: float
    d: int
    kappa: float
    top_k: int
    margin: float  # negative above capacity
    stderr: float
    storable: bool
    expected_cost: float
    expected_cost_stderr: float
    samples: int
    converged: bool
    iterations: int
    residual: float  # |log(p E[C_p(margin)] / (F d^2))|
    seed: int
    status: str
    message: str


def _margin_root(estimator, p, target, rel_tol, max_iter):
    """Root in the margin on one fixed sample (enlarged until rel_tol holds, at most 4 times)."""
    rows = _expected_cost(estimator, p, rel_tol, margin=0.0).samples
    evaluations = 0

    def g(margin):
        return math.log(p * estimator.estimate(p, rows, margin)[0]) - math.log(target)

    # below ``lower`` the cost of the largest competitor, ~exp(-(c_1 + margin)^2 / 2),
    # would underflow; the root is above it unless F d^2 / p < ~1e-200
    lower = -(math.sqrt(2.0 * math.log(p)) + 30.0)
    for _ in range(_SAMPLE_ROUNDS):
        try:
            search = _bracketed_root(g, 0.0, 0.3, lower=lower, xtol=1e-12, max_iter=max_iter)
        except _BelowLimit:
            raise ValueError(f"p={p!r} is too far above the capacity (F(kappa) d^2 / p = {target / p:.3g}): "
                             f"the margin would lie below {lower:.4g}, where the cost underflows") from None
        evaluations += search.evaluations
        mean, err, _, _, _ = estimator.estimate(p, rows, search.x)
        if (mean > 0 and err / mean <= rel_tol) or search.exhausted:
            break
        rows = _rows_for(err / mean * math.sqrt(rows), rel_tol)
    return _SampledRoot(p, rows, mean, err, 0, search._replace(evaluations=evaluations))


def max_margin(d, p, kappa=1.0, top_k=1, *, rel_tol=1e-3, tol=1e-9, max_iter=100, seed=None):
    """Largest margin ``k`` with ``p E[C_p(k)] <= F(kappa) d^2``: the inverse of :func:`capacity`.

    The margin is in units of the competitor standard deviation, i.e. of
    ``||W||_F / d`` for the measured scores.  ``E[C_p(k)]`` increases with ``k``, so
    the equation ``p E[C_p(k)] = F(kappa) d^2`` has one root, found by secant steps and
    ``brentq`` with common random numbers and a checked residual.  Above capacity
    (``p > p_c``) the root is **negative**: it is returned as such with
    ``storable=False``.  It is then the largest "negative stability", i.e. the
    smallest uniform relaxation of the constraints that the q -> 1 formula allows;
    for negative margins the replica-symmetric formula is an extrapolation (as for
    the perceptron at negative stability) and should not be trusted quantitatively.
    Derivation: ``notes/finite_size_capacity.md`` (section "Margin").

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : float
        Number of stored pairs, ``p >= 2`` (real allowed).
    kappa, top_k, rel_tol, tol, max_iter, seed : optional
        As in :func:`capacity` (``1 <= top_k <= p - 1``).

    Returns
    -------
    MaxMarginResult
        ``margin`` (negative above capacity), ``stderr``, ``storable`` (margin >= 0),
        ``status``, ``converged``, ``iterations``, ``residual``, ``message``.

    Raises
    ------
    ValueError
        If ``p < 2``, ``d < 2``, ``kappa`` outside ``(0, 1]``, ``top_k`` outside
        ``[1, p - 1]`` or another argument outside its range.
    """
    p, top_k = _check_p_top_k(p, top_k)
    d, kappa = _check_d_kappa(d, kappa)
    rel_tol, tol, max_iter = _check_accuracy(rel_tol, tol, max_iter)
    seed = resolve_seed(seed)
    estimator = _CostEstimator(0.0, top_k, seed)
    root = _margin_root(estimator, p, _tail_second_moment(kappa) * float(d) ** 2, rel_tol, max_iter)
    margin, rows, h = root.search.x, root.rows, 1e-4
    slope = (estimator.estimate(p, rows, margin + h)[0] - estimator.estimate(p, rows, margin - h)[0]) / (2 * h)
    status, converged, message = _root_status(root.search, tol, root.stderr / root.mean, rel_tol)
    return MaxMarginResult(
        p=float(p), d=d, kappa=kappa, top_k=top_k, margin=margin,
        stderr=root.stderr / slope if slope > 0 else math.inf, storable=bool(margin >= 0.0),
        expected_cost=root.mean, expected_cost_stderr=root.stderr, samples=rows,
        converged=converged, iterations=root.search.evaluations, residual=root.search.residual,
        seed=seed, status=status, message=message)
