"""Expected water-filling cost ``E[C_p]`` by Rao-Blackwellised Monte Carlo.

Only the largest ``K`` kept competitors are sampled (:mod:`replica.optimal.order_statistics`);
the expectation over the target field is done in closed form, and the largest kept
competitor serves as a control variate whose mean is known by quadrature
(:func:`control_mean`).  ``notes/finite_size_capacity.md`` (section "Monte Carlo").
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import integrate, special

from ..common.checks import check_int, check_real
from ..common.ensembles import check_ensemble
from ..common.results import Result
from ..common.seeds import resolve_seed
from .order_statistics import UniformStream, default_order_count, kept_order_statistics

__all__ = [
    "SMALL_KEPT",
    "NormalLaw",
    "NORMAL_LAW",
    "field_law",
    "control_mean",
    "CostEstimator",
    "rows_for",
    "check_p_top_k",
    "SAMPLE_ROUNDS",
    "ExpectedCostResult",
    "expected_cost",
    "expected_cost_from",
]

SMALL_KEPT = 32  # below this many constrained competitors, non-integer p interpolates
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SAMPLE_ROUNDS = 4
"""Rounds of enlarging the fixed sample until ``rel_tol`` holds."""


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


def _top_competitor_cost(level):
    """``E[(level - t)_+^2]`` for ``t ~ N(0, 1)``: ``(a^2 + 1) Phi(a) + a phi(a)``."""
    return (level * level + 1.0) * special.ndtr(level) + level * _INV_SQRT_2PI * np.exp(-0.5 * level * level)


class NormalLaw:
    """The N(0, 1) field law in the interface of ``replica.optimal.sphere.ProjectionLaw`` (same formulas as above)."""

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


NORMAL_LAW = NormalLaw()


def field_law(d: int, ensemble: str):
    """The field law of ``ensemble``: N(0, 1) (``"gaussian"``) or ``ProjectionLaw(d)`` (``"sphere"``)."""
    ensemble = check_ensemble(ensemble)
    if ensemble == "gaussian":
        return NORMAL_LAW
    from .sphere import ProjectionLaw

    return ProjectionLaw(d)


def control_mean(n: float, top_k: int, margin: float, law=NORMAL_LAW) -> float:
    """Exact ``E[g(c + margin)]`` for ``c`` the ``top_k``-th largest of ``n`` fields of ``law``.

    ``g = law.lift_cost`` (for N(0, 1) the function above).  One-dimensional quadrature
    over the uniform ``w`` that generates ``c`` (the same law-preserving map as the
    sampler); the endpoint singularities are logarithmic.  Values are remembered per
    ``(n, top_k, margin, law)`` (a deterministic quadrature).
    """
    key = (float(n), int(top_k), float(margin), law.name, getattr(law, "d", None))
    value = _CONTROL_MEANS.get(key)
    if value is None:
        if len(_CONTROL_MEANS) >= 4096:
            _CONTROL_MEANS.clear()
        value = _CONTROL_MEANS[key] = _control_mean(n, top_k, margin, law)
    return value


_CONTROL_MEANS: dict = {}


def _control_mean(n, top_k, margin, law):
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


def _control_mean_by_parts(n: float, top_k: int, margin: float, law=NORMAL_LAW):
    """:func:`control_mean` as ``int g'(x + margin) P(c > x) dx`` (for tiny means).

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


class CostEstimator:
    """Per-sample ``E[C_p | competitors]`` at real ``p``, on a fixed common-random-number stream.

    The control variate is ``X = g(c + margin)`` with ``c`` the largest kept competitor
    (the exact conditional cost when there is one competitor); its mean is known by
    quadrature (:func:`control_mean`).  ``law`` is the law of the target and competitor
    fields (:func:`field_law`); other laws than N(0, 1) map the Gaussian order statistics
    through ``law.from_normal``, so every law shares the same common random numbers.
    """

    def __init__(self, margin: float, top_k: int, seed: int, law=NORMAL_LAW):
        self.margin = float(margin)
        self.top_k = int(top_k)
        self.law = law
        self.stream = UniformStream(seed)
        self.order_count = None  # fixed K (set on first use; raised if truncation shows)
        self._control_means: dict = {}
        self._integer_cache: dict = {}

    def _control(self, n):
        key = (n, self.margin)
        if key not in self._control_means:
            self._control_means[key] = control_mean(n, self.top_k, self.margin, self.law)
        return self._control_means[key]

    def _at_real_n(self, n: float, rows: int, order_count: int):
        kept_total = n - self.top_k + 1.0  # number of constrained competitors
        complete = float(kept_total).is_integer() and order_count >= kept_total
        k = int(min(order_count, math.floor(kept_total + 1e-12)))
        uniforms = self.stream.get(rows, k)
        kept = self.law.from_normal(kept_order_statistics(n, self.top_k, uniforms))
        value, trunc = _conditional_expected_cost(kept, self.margin, complete, self.law.interval_moments)
        control = self.law.lift_cost(kept[:, 0] + self.margin)
        return value, trunc, control, self._control(n), k, complete

    def _at_integer_n(self, n: float, rows: int):
        key = (n, rows, self.margin)
        if key not in self._integer_cache:
            if len(self._integer_cache) > 64:
                self._integer_cache.clear()
            self._integer_cache[key] = self._at_real_n(n, rows, SMALL_KEPT)
        return self._integer_cache[key]

    def samples(self, p: float, rows: int, margin: float | None = None):
        """Per-row ``(values, truncation, control, control_mean, order_count, complete)`` at real ``p``."""
        if margin is not None:
            self.margin = float(margin)
        n = p - 1.0
        kept_total = n - self.top_k + 1.0
        if self.order_count is None:
            self.order_count = default_order_count(kept_total)
        order = self.order_count
        if kept_total < SMALL_KEPT and not float(p).is_integer():
            # few competitors: interpolate p E[C_p] linearly between the integers
            p_lo, p_hi = math.floor(p), math.ceil(p)
            w_hi = (p - p_lo) * p_hi / p
            w_lo = (p_hi - p) * p_lo / p
            lo = self._at_integer_n(p_lo - 1.0, rows)
            hi = self._at_integer_n(p_hi - 1.0, rows)
            mixed = tuple(w_lo * a + w_hi * b for a, b in zip(lo[:4], hi[:4]))
            return mixed + (max(lo[4], hi[4]), True)
        return self._at_real_n(n, rows, max(order, SMALL_KEPT) if kept_total < SMALL_KEPT else order)

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


    def estimate_margins(self, p: float, rows: int, margins, trunc_rel_tol: float = 1e-6, slopes=False):
        """:meth:`estimate` at every margin of ``margins`` on one sample: ``(means, stderrs)`` arrays.

        With ``slopes=True`` also the derivatives of the means in the margin (third array;
        the control-variate coefficient held fixed, so to about the standard error; None
        for the laws that go margin by margin).

        The same estimator: the kept order statistics and the water-filling breakpoints do
        not depend on the margin and are computed once per ``(p, rows)``; for N(0, 1)
        fields one numba pass (``_image_kernels.normal_margin_costs``) evaluates every
        margin, and the control means come from a Gauss-Legendre rule in the law of the
        largest kept competitor (relative accuracy about 1e-13 against :func:`control_mean`).
        The result equals :meth:`estimate` margin by margin to rounding (about 1e-14
        relative).  Other laws, and fewer than 32 constrained competitors at real ``p``,
        go margin by margin through :meth:`estimate`.
        """
        margins = np.atleast_1d(np.asarray(margins, dtype=np.float64))
        n = p - 1.0
        kept_total = n - self.top_k + 1.0
        if self.order_count is None:
            self.order_count = default_order_count(kept_total)
        if self.law is not NORMAL_LAW or (kept_total < SMALL_KEPT and not float(p).is_integer()):
            out = [self.estimate(p, rows, float(m), trunc_rel_tol)[:2] for m in margins]
            means, errs = np.array([o[0] for o in out]), np.array([o[1] for o in out])
            return (means, errs, None) if slopes else (means, errs)
        from ._image_kernels import normal_margin_costs

        for _ in range(8):
            order = max(self.order_count, SMALL_KEPT) if kept_total < SMALL_KEPT else self.order_count
            pieces = self._breakpoints(n, rows, order)
            breaks, means, spreads, top, last, complete = pieces
            shape = (margins.size, rows)
            values, trunc, control = np.empty(shape), np.empty(shape), np.empty(shape)
            derivatives = np.empty((2,) + shape)
            normal_margin_costs(breaks, means, spreads, top, last, margins, complete, values, trunc, control,
                                derivatives)
            cmeans = np.array([self._fast_control(n, float(m)) for m in margins])
            dc = control - control.mean(axis=1, keepdims=True)
            var_c = np.einsum("ij,ij->i", dc, dc)
            cov = np.einsum("ij,ij->i", values - values.mean(axis=1, keepdims=True), dc)
            beta = np.divide(cov, var_c, out=np.zeros_like(cov), where=var_c > 0)
            adjusted = values - beta[:, None] * (control - cmeans[:, None])
            mean = adjusted.mean(axis=1)
            stderr = adjusted.std(axis=1, ddof=2) / math.sqrt(rows)
            if complete or np.all(trunc.mean(axis=1) <= trunc_rel_tol * np.maximum(mean, 1e-300)):
                if not slopes:
                    return mean, stderr
                cslopes = np.array([self._fast_control(n, float(m), slope=True) for m in margins])
                dmean = derivatives[0].mean(axis=1) - beta * (derivatives[1].mean(axis=1) - cslopes)
                return mean, stderr, dmean
            self.order_count = 2 * self.order_count
        raise RuntimeError(f"expected_cost: truncation bound still above {trunc_rel_tol:g} x mean at p={p!r}")

    def _breakpoints(self, n, rows, order):
        """The margin-free water-filling pieces of the first ``rows`` rows (remembered for the last few samples)."""
        key = (n, rows, order)
        cache = self.__dict__.setdefault("_breakpoint_cache", {})
        if key not in cache:
            if len(cache) >= 4:
                cache.clear()
            kept_total = n - self.top_k + 1.0
            complete = float(kept_total).is_integer() and order >= kept_total
            k = int(min(order, math.floor(kept_total + 1e-12)))
            kept = self.law.from_normal(kept_order_statistics(n, self.top_k, self.stream.get(rows, k)))
            top = kept[:, :1]
            shifted = kept - top
            j = np.arange(1, k + 1, dtype=np.float64)
            cum = np.cumsum(shifted, axis=1)
            cum_sq = np.cumsum(shifted * shifted, axis=1)
            breaks = top + j * shifted - (cum - shifted)
            mean = top + cum / j
            spread = np.maximum(cum_sq - cum * cum / j, 0.0)
            cache[key] = (np.ascontiguousarray(breaks), np.ascontiguousarray(mean), np.ascontiguousarray(spread),
                          np.ascontiguousarray(kept[:, 0]), np.ascontiguousarray(kept[:, -1]), bool(complete))
        return cache[key]

    def _fast_control(self, n, margin, slope=False):
        """:func:`control_mean` for N(0, 1) fields by a 96-point Gauss-Legendre rule (quadrature far in the tail).

        ``slope=True``: its derivative in the margin, ``E[g'(c + margin)]`` (the same rule).
        """
        nodes, weights = _order_statistic_rule(float(n), self.top_k)
        if slope:
            a = nodes + margin
            return float(weights @ (2.0 * (a * special.ndtr(a) + _INV_SQRT_2PI * np.exp(-0.5 * a * a))))
        if margin < -3.0:
            return control_mean(n, self.top_k, margin, self.law)
        return float(weights @ _top_competitor_cost(nodes + margin))


_RULES: dict = {}


def _order_statistic_rule(n: float, top_k: int, points: int = 96):
    """Gauss-Legendre nodes and weights (density included) for the ``top_k``-th largest of ``n`` N(0, 1) fields.

    On the quantiles ``1e-20`` to ``1 - 1e-16`` of its tail probability ``T ~ Beta(top_k, n - top_k + 1)``.
    """
    key = (n, top_k, points)
    if key not in _RULES:
        if len(_RULES) >= 256:
            _RULES.clear()
        a, b = float(top_k), n - top_k + 1.0
        hi = -float(special.ndtri(special.betaincinv(a, b, 1e-20)))
        lo = -float(special.ndtri(special.betaincinv(a, b, 1.0 - 1e-16))) if n > 1.0 else -hi
        x, w = np.polynomial.legendre.leggauss(points)
        c = 0.5 * (hi - lo) * x + 0.5 * (hi + lo)
        log_density = ((n - top_k) * special.log_ndtr(c) + (top_k - 1) * special.log_ndtr(-c) - 0.5 * c * c
                       - 0.5 * math.log(2.0 * math.pi) - special.betaln(a, b))
        _RULES[key] = (c, 0.5 * (hi - lo) * w * np.exp(log_density))
    return _RULES[key]


def rows_for(rel_sd: float, rel_tol: float) -> int:
    """Sample size (a multiple of 512, at least 2048) for relative stderr ``rel_tol`` given ``rel_sd`` per row."""
    need = int(math.ceil(1.15 * (rel_sd / rel_tol) ** 2))
    return max(2048, -(-need // 512) * 512)


def check_p_top_k(p, top_k):
    """Check the block size ``p >= 2`` and ``1 <= top_k <= p - 1``; return them as ``(float, int)``."""
    p = check_real(p, "p", low=2.0)
    top_k = check_int(top_k, "top_k", low=1)
    if top_k > p - 1.0:
        raise ValueError(f"top_k must be an integer in [1, p-1] = [1, {p - 1.0:g}], got {top_k}")
    return p, top_k


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


def expected_cost(p, margin=0.0, top_k=1, *, rel_tol=1e-3, max_iter=SAMPLE_ROUNDS, seed=None):
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
    p, top_k = check_p_top_k(p, top_k)
    margin = check_real(margin, "margin", low=0.0)
    rel_tol = check_real(rel_tol, "rel_tol", low=1e-6, high=0.5)
    max_iter = check_int(max_iter, "max_iter", low=1)
    estimator = CostEstimator(margin, top_k, resolve_seed(seed))
    return expected_cost_from(estimator, p, rel_tol, max_iter=max_iter)


def expected_cost_from(estimator, p, rel_tol, margin=None, max_iter=SAMPLE_ROUNDS):
    """:func:`expected_cost` on a given :class:`CostEstimator`: enlarge the sample until ``rel_tol`` holds."""
    rows = 2048
    for _ in range(max_iter):
        mean, stderr, bound, k, complete = estimator.estimate(p, rows, margin)
        rel = stderr / mean if mean > 0 else (0.0 if stderr == 0 else math.inf)
        if rel <= rel_tol:
            break
        rows = max(rows * 2, rows_for(rel * math.sqrt(rows), rel_tol))
    converged = bool(rel <= rel_tol)
    message = (f"{'converged' if converged else 'max_iter reached'}: relative stderr {rel:.3g} "
               f"(rel_tol {rel_tol:.3g}) with {rows} samples")
    return ExpectedCostResult(p=float(p), margin=estimator.margin, top_k=estimator.top_k,
                              mean=mean, stderr=stderr, rel_stderr=rel, samples=rows,
                              order_statistics=k, complete=complete, truncation_bound=bound,
                              rel_tol=rel_tol, converged=converged, seed=estimator.stream.seed,
                              status="converged" if converged else "max_iter", message=message)
