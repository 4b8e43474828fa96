"""Replica-symmetric saddle point of the decoupled problem (Gardner volume of W).

For ``N = d^2`` spherical weights (``||W||_F^2 = d^2``) and ``p`` blocks of ``p``
fields each (one target, ``n = p - 1`` competitors; unit variance, independent
across candidates), the replica-symmetric free entropy per weight is

    phi(q) = 1/2 ln(1 - q) + q / (2 (1 - q)) + (p / d^2) E_t ln Z(t; q),
    Z(t; q) = Int Dx prod_{rho >= 2} Phi((sqrt(q)(t_1 - t_rho) + sqrt(1 - q) x - margin) / sqrt(1 - q)),

with ``t`` in R^p i.i.d. N(0, 1) and ``q`` the overlap of two solutions.  The saddle
point ``d phi / d q = 0`` gives ``q*(p, d)``; ``phi(q*)`` is the log-volume of the
solutions per weight; ``q* -> 1`` at the capacity ``p_c E[C_{p_c}] = d^2`` (water
filling, :mod:`replica.finite_size`).  Derivation, numerics and checks:
``notes/replica_saddle.md``.

Numerics
--------
The expectation over the ``p``-dimensional ``t`` sits inside the log.  It is taken
by Monte Carlo over a FIXED sample of blocks (common random numbers: ``phi(q)`` and
its derivative are deterministic smooth functions of ``q`` and ``p`` and the root
residual is meaningful):

* the target ``t_1`` on stratified (symmetric) normal quantiles;
* the ``K`` largest competitors exactly in law from ``K`` Latin-hypercube uniforms
  (:func:`replica.extremes.order_statistics_from_uniforms`, smooth in ``p``);
* the other ``n - K`` competitors, i.i.d. N(0, 1) conditioned below the ``K``-th,
  through the conditional expectation of their summed ``log Phi`` (a 1-D integral in
  ``t`` per quadrature node ``x``; its neglected fluctuation is estimated by
  :meth:`ReplicaSample.bulk_fluctuation` and checked against full samples).

``ln Z`` for one block is an integral of a strictly log-concave function of ``x``:
the mode by safeguarded Newton, the tails cut where the log-integrand has dropped by
40, Gauss-Legendre on each side, everything in log space.  ``d ln Z / d q`` is the
posterior mean of ``dS/dq`` at fixed ``x`` (analytic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.polynomial.legendre import leggauss
from scipy import optimize, special

from .common.checks import as_float_array, check_int, check_memory, check_real
from .common.results import Result
from .common.seeds import DEFAULT_SEED, resolve_seed
from .extremes import order_statistics_from_uniforms
from .water_filling import water_filling_cost

__all__ = [
    "DEFAULT_SEED",
    "ReplicaSample",
    "free_entropy",
    "free_entropy_derivative",
    "saddle_point",
    "SaddlePoint",
    "sample_capacity",
    "SampleCapacity",
]

# ``DEFAULT_SEED`` (from replica.common.seeds) seeds the common random numbers when
# ``seed=None``: the theory functions are then pure functions of their parameters (the
# Monte-Carlo error is reported).
DEFAULT_SAMPLES = 1024
_SAMPLE_ARRAYS = 8  # (samples, K) float64 arrays of a sample and its cached blocks
DEFAULT_EXACT_COMPETITORS = 64

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TAIL = 40.0  # log-integrand drop at which the x-integral is cut (e^-40 ~ 4e-18)
_T_FLOOR = -9.0  # lower end of the bulk t-integral (Phi(-9) ~ 1e-19)
_U_CUT = 10.0  # log Phi(u) for u > 10 is below 8e-24 in magnitude: dropped in the bulk
_PANEL = 3.0  # maximal width (in t) of one Gauss-Legendre panel of the bulk integral
_MAX_PANELS = 40


@njit(cache=True)
def _log_ndtr(u):
    """log Phi(u), accurate to a few ulp on the whole real line."""
    if u > 0.0:
        return math.log1p(-0.5 * math.erfc(u / _SQRT2))
    if u > -30.0:
        return math.log(0.5 * math.erfc(-u / _SQRT2))
    # asymptotic series of the Mills ratio (terms decrease monotonically for |u| >= 30)
    z = 1.0 / (u * u)
    series = 1.0 + z * (-1.0 + z * (3.0 + z * (-15.0 + z * (105.0 + z * (-945.0 + z * (10395.0 + z * (-135135.0)))))))
    return -0.5 * u * u - math.log(-u) - _LOG_SQRT_2PI + math.log(series)


@njit(cache=True)
def _mills(u):
    """phi(u) / Phi(u) (the derivative of log Phi)."""
    return _log_ndtr_mills(u)[1]


@njit(cache=True)
def _log_ndtr_mills(u):
    """(log Phi(u), phi(u)/Phi(u)) from one erfc."""
    if u > 0.0:
        e = 0.5 * math.erfc(u / _SQRT2)
        return math.log1p(-e), _INV_SQRT_2PI * math.exp(-0.5 * u * u) / (1.0 - e)
    if u > -30.0:
        cdf = 0.5 * math.erfc(-u / _SQRT2)
        return math.log(cdf), _INV_SQRT_2PI * math.exp(-0.5 * u * u) / cdf
    z = 1.0 / (u * u)
    series = 1.0 + z * (-1.0 + z * (3.0 + z * (-15.0 + z * (105.0 + z * (-945.0 + z * (10395.0 + z * (-135135.0)))))))
    return -0.5 * u * u - math.log(-u) - _LOG_SQRT_2PI + math.log(series), -u / series


@njit(cache=True)
def _mills_slope(u, r):
    """d/du (phi/Phi)(u) = -r (u + r), in (-1, 0); stable for u -> -inf."""
    if u < -30.0:
        # u + r = -u (1/series - 1) with 1/series - 1 = z (1 - 2 z + 10 z^2 - 74 z^3 + 706 z^4 ...)
        z = 1.0 / (u * u)
        excess = z * (1.0 + z * (-2.0 + z * (10.0 + z * (-74.0 + z * 706.0))))
        return -r * (-u * excess)
    return -r * (u + r)


@njit(cache=True)
def _bulk(x, sq, ss, margin, t1, top_last, nbulk, norm, want_q, gl_nodes, gl_weights, out):
    """Conditional expectation of the bulk's summed log Phi and its derivatives.

    ``out`` receives (B, dB/dx, d2B/dx2, dB/dq) for ``nbulk`` competitors i.i.d.
    N(0, 1) conditioned on ``t < top_last`` (``norm = Phi(top_last)``).
    """
    out[0] = 0.0
    out[1] = 0.0
    out[2] = 0.0
    out[3] = 0.0
    if nbulk <= 0.0:
        return
    c = ss * x + sq * t1 - margin
    if sq == 0.0:
        u = c / ss
        r = _mills(u)
        out[0] = nbulk * _log_ndtr(u)
        out[1] = nbulk * r
        out[2] = nbulk * _mills_slope(u, r)
        return
    t_hi = top_last
    t_lo = (c - _U_CUT * ss) / sq  # u(t) = _U_CUT there; u > _U_CUT below
    if t_lo < _T_FLOOR:
        t_lo = _T_FLOOR
    if t_lo >= t_hi:
        return
    # breakpoints: where u = 6, 4, 2, 0, -2 (the shoulder of log Phi), then panels <= _PANEL wide
    # and, on the violated side, at u = -4, -8, -16, ... (log|u| term of log Phi)
    bps = np.empty(64)
    nb = 0
    bps[nb] = t_lo
    nb += 1
    uk = 6.0
    while nb < 62:
        tk = (c - uk * ss) / sq
        if tk >= t_hi:
            break
        if tk > bps[nb - 1]:
            bps[nb] = tk
            nb += 1
        if uk > 0.0:
            uk -= 2.0
        elif uk == 0.0:
            uk = -2.0
        else:
            uk *= 2.0
    bps[nb] = t_hi
    nb += 1
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    ng = gl_nodes.shape[0]
    inv_dq = 1.0 / (2.0 * sq * ss * ss * ss)
    for b in range(nb - 1):
        a0 = bps[b]
        a1 = bps[b + 1]
        width = a1 - a0
        npan = int(math.ceil(width / _PANEL))
        if npan < 1:
            npan = 1
        if npan > _MAX_PANELS:
            npan = _MAX_PANELS
        h = width / npan
        for pnl in range(npan):
            lo = a0 + pnl * h
            half = 0.5 * h
            mid = lo + half
            for g in range(ng):
                t = mid + half * gl_nodes[g]
                w = half * gl_weights[g] * _INV_SQRT_2PI * math.exp(-0.5 * t * t)
                u = (c - sq * t) / ss
                lg, r = _log_ndtr_mills(u)
                s0 += w * lg
                s1 += w * r
                s2 += w * _mills_slope(u, r)
                if want_q:
                    s3 += w * r * ((t1 - t) - margin * sq) * inv_dq
    scale = nbulk / norm
    out[0] = scale * s0
    out[1] = scale * s1
    out[2] = scale * s2
    out[3] = scale * s3


@njit(cache=True)
def _field_sum(x, sq, ss, margin, t1, tops, nbulk, norm, want_q, gl_t_nodes, gl_t_weights, out):
    """S(x) and (dS/dx, d2S/dx2, dS/dq) for one block; written into ``out``."""
    _bulk(x, sq, ss, margin, t1, tops[tops.shape[0] - 1], nbulk, norm, want_q,
          gl_t_nodes, gl_t_weights, out)
    inv_ss = 1.0 / ss
    inv_dq = 0.0
    if want_q:
        inv_dq = 1.0 / (2.0 * sq * ss * ss * ss)
    for j in range(tops.shape[0]):
        delta = t1 - tops[j]
        u = x + (sq * delta - margin) * inv_ss
        lg, r = _log_ndtr_mills(u)
        out[0] += lg
        out[1] += r
        out[2] += _mills_slope(u, r)
        if want_q:
            out[3] += r * (delta - margin * sq) * inv_dq


@njit(cache=True)
def _log_partition_one(q, margin, t1, tops, nbulk, norm, want_q, gl_x_nodes, gl_x_weights,
                       gl_t_nodes, gl_t_weights, info, nodes_out, logw_out):
    """ln Z(t; q) and d ln Z / dq for one block.

    ``info`` gets (mode, sigma, left width, right width, flag); ``nodes_out`` and
    ``logw_out`` the quadrature nodes in ``x`` and the log of their normalised
    posterior weights.
    """
    sq = math.sqrt(q)
    ss = math.sqrt(1.0 - q)
    buf = np.empty(4)
    nev = 0
    # --- mode of h(x) = -x^2/2 + S(x).  h' is decreasing (h'' <= -1) and convex
    # (phi/Phi is convex), and h'(0) = S'(0) > 0: Newton from x = 0 increases
    # monotonically to the root (bisection safeguard kept for rounding).
    lo = 0.0
    hi = math.inf
    x = 0.0
    flag = 1
    for _it in range(200):
        nev += 1
        _field_sum(x, sq, ss, margin, t1, tops, nbulk, norm, False, gl_t_nodes, gl_t_weights, buf)
        grad = -x + buf[1]
        curv = -1.0 + buf[2]
        if grad > 0.0:
            lo = x
        else:
            hi = x
        step = -grad / curv
        if abs(step) <= 1e-14 * (1.0 + abs(x)) or hi - lo <= 1e-14 * (1.0 + abs(x)):
            flag = 0
            break
        x_new = x + step
        if x_new <= lo or x_new >= hi:
            x_new = 0.5 * (lo + hi) if hi < math.inf else 2.0 * lo + 1.0
        x = x_new
    h_mode = -0.5 * x * x + buf[0]
    sigma = 1.0 / math.sqrt(1.0 - buf[2])
    # --- tails: h(mode +- delta) = h_mode - _TAIL (Newton on a concave function)
    ends = np.empty(2)
    for side in range(2):
        sgn = 1.0 if side == 0 else -1.0
        delta = math.sqrt(2.0 * _TAIL) * sigma
        for _it in range(60):
            xx = x + sgn * delta
            nev += 1
            _field_sum(xx, sq, ss, margin, t1, tops, nbulk, norm, False, gl_t_nodes, gl_t_weights, buf)
            g = -0.5 * xx * xx + buf[0] - h_mode + _TAIL
            dg = sgn * (-xx + buf[1])
            if dg >= 0.0:  # cannot happen away from the mode; guard
                break
            new = delta - g / dg
            if new <= 0.0:
                new = 0.5 * delta
            if abs(new - delta) <= 1e-8 * delta:
                delta = new
                break
            delta = new
        ends[side] = delta
    # --- Gauss-Legendre on [mode - left, mode] and [mode, mode + right]
    nx = gl_x_nodes.shape[0]
    logs = np.empty(2 * nx)
    dq = np.empty(2 * nx)
    k = 0
    for side in range(2):
        width = ends[0] if side == 0 else ends[1]
        sgn = 1.0 if side == 0 else -1.0
        half = 0.5 * width
        for g in range(nx):
            xx = x + sgn * (half + half * gl_x_nodes[g])
            nev += 1
            _field_sum(xx, sq, ss, margin, t1, tops, nbulk, norm, want_q, gl_t_nodes, gl_t_weights, buf)
            logs[k] = math.log(half * gl_x_weights[g]) - 0.5 * xx * xx + buf[0]
            dq[k] = buf[3]
            nodes_out[k] = xx
            k += 1
    top = logs.max()
    total = 0.0
    total_q = 0.0
    for j in range(2 * nx):
        e = math.exp(logs[j] - top)
        total += e
        total_q += e * dq[j]
    log_total = math.log(total)
    for j in range(2 * nx):
        logw_out[j] = logs[j] - top - log_total
    info[0] = x
    info[1] = sigma
    info[2] = ends[1]
    info[3] = ends[0]
    info[4] = flag
    info[5] = nev
    return top + log_total - _LOG_SQRT_2PI, total_q / total


@njit(cache=True)
def _log_partition_batch(q, margin, t1, tops, nbulk, norm, want_q, gl_x_nodes, gl_x_weights,
                        gl_t_nodes, gl_t_weights):
    """Per-block ln Z and d ln Z/dq; ``tops`` has shape (M, K), ``norm`` shape (M,)."""
    m = t1.shape[0]
    log_z = np.empty(m)
    dlog_z = np.empty(m)
    info = np.empty((m, 6))
    nodes = np.empty((m, 2 * gl_x_nodes.shape[0]))
    logw = np.empty((m, 2 * gl_x_nodes.shape[0]))
    for i in range(m):
        a, b = _log_partition_one(q, margin, t1[i], tops[i], nbulk, norm[i], want_q,
                                  gl_x_nodes, gl_x_weights, gl_t_nodes, gl_t_weights, info[i],
                                  nodes[i], logw[i])
        log_z[i] = a
        dlog_z[i] = b
    return log_z, dlog_z, info, nodes, logw


@njit(cache=True)
def _bulk_fluctuation_batch(q, margin, t1, top_last, nbulk, norm, nodes, logw, panel, gl_t_nodes,
                            gl_t_weights):
    """Second-order (cumulant) effect of the bulk's fluctuation on ln Z, per block.

    Replacing the bulk's summed ``log Phi`` by its conditional mean ``m(x)`` changes
    ``E ln Z`` by ``(nbulk / 2) (E_t Var_P f(., t) - Var_P m) + O(third cumulant)``,
    where ``P`` is the posterior over ``x`` (the quadrature nodes and weights of the
    ``ln Z`` evaluation) and ``f(x, t) = log Phi(u(x, t))``.  Composite Gauss-Legendre
    in ``t`` on ``[-12, T]`` with panels of width ``panel``.
    """
    sq = math.sqrt(q)
    ss = math.sqrt(1.0 - q)
    msamp = t1.shape[0]
    nx = nodes.shape[1]
    out = np.zeros(msamp)
    ng = gl_t_nodes.shape[0]
    fvals = np.empty(nx)
    mean_f = np.empty(nx)
    for i in range(msamp):
        if nbulk <= 0.0:
            continue
        t_hi = top_last[i]
        npan = int(math.ceil((t_hi - _T_FLOOR) / panel))
        h = (t_hi - _T_FLOOR) / npan
        pw = np.empty(nx)
        for j in range(nx):
            pw[j] = math.exp(logw[i, j])
            mean_f[j] = 0.0
        e_var = 0.0
        for pnl in range(npan):
            mid = _T_FLOOR + (pnl + 0.5) * h
            for g in range(ng):
                t = mid + 0.5 * h * gl_t_nodes[g]
                w = 0.5 * h * gl_t_weights[g] * _INV_SQRT_2PI * math.exp(-0.5 * t * t) / norm[i]
                m1 = 0.0
                m2 = 0.0
                for j in range(nx):
                    u = nodes[i, j] + (sq * (t1[i] - t) - margin) / ss
                    f = _log_ndtr(u)
                    fvals[j] = f
                    mean_f[j] += w * f
                    m1 += pw[j] * f
                    m2 += pw[j] * f * f
                e_var += w * (m2 - m1 * m1)
        a1 = 0.0
        a2 = 0.0
        for j in range(nx):
            a1 += pw[j] * mean_f[j]
            a2 += pw[j] * mean_f[j] * mean_f[j]
        out[i] = 0.5 * nbulk * (e_var - (a2 - a1 * a1))
    return out


# --------------------------------------------------------------------------------------
# Python layer
# --------------------------------------------------------------------------------------
_GL_X = leggauss(24)  # per side of the mode
_GL_T = leggauss(12)  # per panel of the bulk integral
_GL_DIAG = leggauss(8)  # per panel of the fluctuation diagnostic


@dataclass(frozen=True)
class _Blocks:
    target: np.ndarray  # (M,)
    tops: np.ndarray  # (M, K), decreasing
    bulk: float  # n - K competitors conditioned below tops[:, -1]
    norm: np.ndarray  # Phi(tops[:, -1]) (ones when bulk == 0)


def _check_p(p, exact_competitors):
    p = check_real(p, "p", low=2.0)
    n = p - 1.0
    if n <= exact_competitors and not float(p).is_integer():
        raise ValueError(f"p must be an integer when p - 1 <= exact_competitors = {exact_competitors} "
                         f"(all competitors are then sampled exactly), got {p!r}")
    return p


class ReplicaSample:
    """A fixed Monte-Carlo sample of blocks: the common random numbers of the saddle point.

    Row ``i`` holds a target field ``t_1`` (stratified: the normal quantile of
    ``(j + 1/2)/M`` for a permuted ``j``, so the targets are exactly symmetric) and
    ``K`` Latin-hypercube uniforms that :func:`replica.extremes.order_statistics_from_uniforms`
    maps to the ``K`` largest of ``n = p - 1`` competitors, for any ``p``.  The other
    ``n - K`` competitors enter through their conditional law (i.i.d. N(0, 1) below the
    ``K``-th).  The same rows serve every ``p``, ``q`` and margin, so ``phi(q)``,
    its derivative and ``p E[C_p]`` are deterministic smooth functions on one sample.
    See ``notes/replica_saddle.md`` (section "Numerics").

    Parameters
    ----------
    samples : int, optional
        Number of blocks ``M >= 16``.
    seed : None, int, SeedSequence or Generator, optional
        Seed of the sample (``None``: ``DEFAULT_SEED``); the integer used is stored as
        ``seed`` and in results.
    exact_competitors : int, optional
        ``K >= 2``, how many of the largest competitors are sampled exactly.  For
        ``p - 1 <= K`` every competitor is exact (then ``p`` must be an integer).

    Raises
    ------
    ValueError
        If an argument is outside its range.
    """

    def __init__(self, samples=DEFAULT_SAMPLES, seed=None, exact_competitors=DEFAULT_EXACT_COMPETITORS):
        self.samples = check_int(samples, "samples", low=16)
        self.seed = resolve_seed(seed)
        self.exact_competitors = check_int(exact_competitors, "exact_competitors", low=2)
        check_memory(8.0 * self.samples * (self.exact_competitors + 2) * _SAMPLE_ARRAYS,
                     f"ReplicaSample(samples={self.samples}, exact_competitors={self.exact_competitors})")
        seq_target, seq_comp = np.random.SeedSequence(self.seed).spawn(2)
        rng_t = np.random.default_rng(seq_target)
        rng_u = np.random.default_rng(seq_comp)
        m, k = self.samples, self.exact_competitors
        half = special.ndtri((np.arange(m // 2) + 0.5) / m)
        target = np.concatenate([half, np.zeros(m % 2), -half[::-1]])  # exactly symmetric
        self.target = target[rng_t.permutation(m)]
        uniforms = np.empty((m, k))
        for j in range(k):
            uniforms[:, j] = (rng_u.permutation(m) + rng_u.random(m)) / m
        self.uniforms = np.clip(uniforms, np.finfo(float).tiny, 1.0 - np.finfo(float).epsneg)
        self._cache: dict = {}

    def blocks(self, p) -> _Blocks:
        """Target, exact top competitors and bulk size for ``p`` (cached)."""
        p = _check_p(p, self.exact_competitors)
        key = float(p)
        if key not in self._cache:
            n = p - 1.0
            k = int(min(self.exact_competitors, round(n) if n <= self.exact_competitors else n))
            tops = order_statistics_from_uniforms(n, self.uniforms[:, :k])
            bulk = n - k
            norm = special.ndtr(tops[:, -1]) if bulk > 0 else np.ones(self.samples)
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = _Blocks(self.target, np.ascontiguousarray(tops), float(bulk), norm)
        return self._cache[key]

    def control(self, p, margin=0.0):
        """Control variate of the ``sqrt(q)`` term: ``(gamma_0, D)`` (cached).

        At small ``q``, ``ln Z_i = ln Z(0) + sqrt(q) D_i gamma_0 + O(q)`` with
        ``D_i = sum_rho (t_1 - t_rho)`` and ``gamma_0 = <phi/Phi(x - margin)>`` under
        ``P_0(x) ~ phi(x) Phi(x - margin)^n``.  ``E[D] = 0`` exactly, but its sample
        mean is not, which would give the Monte-Carlo ``phi(q)`` a spurious
        ``sqrt(q)`` term (a ``q^{-1/2}`` derivative).  The targets are exactly symmetric,
        so only the competitor part ``D_i = -(sum_top t_rho + (n-K) E[t | t < t_(K)])``
        is used (``notes/replica_saddle.md``, section "Numerics").
        """
        margin = check_real(margin, "margin", low=0.0)
        blk = self.blocks(p)
        key = ("control", float(p), margin)
        if key not in self._cache:
            one = np.zeros(1)
            _, _, _, nodes, logw = _log_partition_batch(
                0.0, margin, one, blk.tops[:1], blk.bulk, blk.norm[:1], False,
                _GL_X[0], _GL_X[1], _GL_T[0], _GL_T[1])
            gamma0 = float(np.sum(np.exp(logw[0]) * np.array([_mills(u) for u in nodes[0] - margin])))
            comp = blk.tops.sum(axis=1)
            if blk.bulk > 0:
                last = blk.tops[:, -1]
                comp = comp - blk.bulk * np.exp(-0.5 * last**2 - 0.5 * math.log(2 * math.pi)
                                                 - special.log_ndtr(last))
            self._cache[key] = (gamma0, -comp)
        return self._cache[key]

    def log_partition(self, p, q, margin=0.0, derivative=True, control=True):
        """Per-block ``ln Z(t; q)`` and ``d ln Z / d q`` (NaN when ``derivative`` is False).

        With ``control`` (default) the zero-mean control term ``sqrt(q) gamma_0 D_i`` of
        :meth:`control` is subtracted, so the mean over blocks estimates ``E ln Z``
        without a spurious ``sqrt(q)`` term.  Returns ``(log_z, dlog_z, info)``;
        ``info[:, 4] > 0`` flags a block whose mode search did not converge.
        """
        q = check_real(q, "q", low=0.0, high=1.0, high_open=True)
        margin = check_real(margin, "margin", low=0.0)
        if derivative and q == 0.0:
            raise ValueError("q must lie in (0, 1) for the derivative, got 0.0")
        blk = self.blocks(p)
        log_z, dlog_z, info, _, _ = _log_partition_batch(
            q, margin, blk.target, blk.tops, blk.bulk, blk.norm, bool(derivative),
            _GL_X[0], _GL_X[1], _GL_T[0], _GL_T[1])
        if control and q > 0.0:
            gamma0, dsum = self.control(p, margin)
            log_z = log_z - math.sqrt(q) * gamma0 * dsum
            if derivative:
                dlog_z = dlog_z - gamma0 * dsum / (2.0 * math.sqrt(q))
        if not derivative:
            dlog_z[:] = np.nan
        return log_z, dlog_z, info

    def water_filling(self, p, margin=0.0):
        """Per-block water-filling cost ``C_p(t)`` on this sample and whether the bulk mattered.

        Uses :func:`replica.finite_size.water_filling_cost` on the target and the exact
        top competitors.  ``bulk_active[i]`` is True when the ``K``-th competitor is pushed
        down (the level is below it), so that competitors outside the exact top ``K``
        could matter too; it is always False when every competitor is exact.
        """
        margin = check_real(margin, "margin", low=0.0)
        blk = self.blocks(p)
        cost = np.asarray(water_filling_cost(blk.target, blk.tops, margin))
        if blk.bulk > 0:
            without_last = np.asarray(water_filling_cost(blk.target, blk.tops[:, :-1], margin))
            bulk_active = cost != without_last
        else:
            bulk_active = np.zeros(self.samples, dtype=bool)
        return cost, bulk_active

    def bulk_fluctuation(self, p, q, margin=0.0, panel=None):
        """Estimated bias of ``E ln Z`` from replacing the bulk by its conditional mean.

        Per block, ``(n - K)/2 (E_t Var_P f - Var_P m) >= 0`` (second cumulant; see
        ``notes/replica_saddle.md``, "The bulk of the competitors").  The exact
        ``E ln Z`` is larger than the computed one by about this much.
        """
        q = check_real(q, "q", low=0.0, high=1.0, high_open=True)
        margin = check_real(margin, "margin", low=0.0)
        blk = self.blocks(p)
        if blk.bulk <= 0:
            return np.zeros(self.samples)
        _, _, _, nodes, logw = _log_partition_batch(
            q, margin, blk.target, blk.tops, blk.bulk, blk.norm, False,
            _GL_X[0], _GL_X[1], _GL_T[0], _GL_T[1])
        if panel is None:
            panel = min(0.25, 0.25 * math.sqrt((1.0 - q) / max(q, 1e-300)))
        return _bulk_fluctuation_batch(q, margin, blk.target, np.ascontiguousarray(blk.tops[:, -1]),
                                       blk.bulk, blk.norm, nodes, logw, float(panel),
                                       _GL_DIAG[0], _GL_DIAG[1])


def _resolve_sample(sample, seed) -> ReplicaSample:
    """The sample to use: ``sample`` as given, or the default-size sample of ``seed``."""
    if sample is None:
        return ReplicaSample(seed=seed)
    if not isinstance(sample, ReplicaSample):
        raise ValueError(f"sample must be a ReplicaSample or None, got {type(sample).__name__}")
    if seed is not None:
        raise ValueError(f"give seed or sample, not both (the sample has seed {sample.seed}), got seed={seed!r}")
    return sample


def _entropic(q):
    return 0.5 * math.log1p(-q) + q / (2.0 * (1.0 - q))


def _over_q(d, p, q, margin, seed, sample, derivative):
    """``phi(q)`` (or ``d phi / d q``) element by element, shaped like ``q``."""
    qs = as_float_array(q, "q")
    d = check_int(d, "d", low=2)
    margin = check_real(margin, "margin", low=0.0)
    sample = _resolve_sample(sample, seed)
    p = _check_p(p, sample.exact_competitors)
    load = p / d**2
    out = np.empty(qs.shape)
    for idx, qv in np.ndenumerate(qs):
        qv = check_real(float(qv), "q", low=0.0, high=1.0, low_open=derivative, high_open=True)
        log_z, dlog_z, _ = sample.log_partition(p, qv, margin, derivative=derivative)
        if derivative:
            out[idx] = qv / (2.0 * (1.0 - qv) ** 2) + load * float(dlog_z.mean())
        else:
            out[idx] = _entropic(qv) + load * float(log_z.mean())
    return float(out) if qs.ndim == 0 else out


def free_entropy(d, p, q, margin=0.0, *, seed=None, sample=None):
    """Replica-symmetric free entropy per weight ``phi(q)`` of the decoupled problem.

    ``phi(q) = 1/2 ln(1-q) + q/(2(1-q)) + (p/d^2) E_t ln Z(t; q)`` with
    ``Z(t; q) = Int Dx prod_{rho>=2} Phi((sqrt(q)(t_1-t_rho) + sqrt(1-q) x - margin)/sqrt(1-q))``
    (derived in ``notes/replica_saddle.md``, sections 1-3).  ``E_t`` is a
    Monte-Carlo mean over a fixed :class:`ReplicaSample` (common random numbers).

    Parameters
    ----------
    d : int
        Dimension ``d >= 2`` (``N = d^2`` weights).
    p : float
        Block size (one target and ``p - 1`` competitors; also the number of blocks),
        ``p >= 2``; an integer when ``p - 1 <= exact_competitors``.
    q : float or array_like
        Overlap of two solutions, ``0 <= q < 1``.
    margin : float, optional
        Stability margin ``>= 0`` in competitor standard deviations.
    seed : None, int, SeedSequence or Generator, optional
        Seed of the default-size sample (``None``: ``DEFAULT_SEED``) when ``sample`` is
        None.
    sample : ReplicaSample, optional
        The sample to use (its own size, seed and exact competitors); reuse one for
        speed and common random numbers across calls.

    Returns
    -------
    float or ndarray
        ``phi(q)``, shaped like ``q``.

    Raises
    ------
    ValueError
        If ``q`` is outside ``[0, 1)``, ``p < 2`` (or non-integer when it must be an
        integer), ``d < 2``, ``margin < 0``, or both ``seed`` and ``sample`` are given.
    """
    return _over_q(d, p, q, margin, seed, sample, derivative=False)


def free_entropy_derivative(d, p, q, margin=0.0, *, seed=None, sample=None):
    """``d phi / d q = q / (2 (1-q)^2) + (p/d^2) E_t d ln Z / d q`` (analytic in ``q``).

    ``d ln Z / d q`` is the posterior mean over ``x`` of
    ``sum_rho (phi/Phi)(u_rho) (t_1 - t_rho - margin sqrt(q)) / (2 sqrt(q) (1-q)^{3/2})``
    (``notes/replica_saddle.md``, section 4).  Parameters, return value and errors as
    :func:`free_entropy`, with ``0 < q < 1`` (at ``q = 0`` the derivative of the
    Monte-Carlo mean is singular like ``q^{-1/2}`` unless the sample is symmetric).
    """
    return _over_q(d, p, q, margin, seed, sample, derivative=True)


@dataclass(frozen=True)
class SaddlePoint(Result):
    """Replica-symmetric saddle point ``q*`` of the decoupled problem (see :func:`saddle_point`).

    ``status``:

    * ``"converged"`` -- ``|R(q*)| <= tol``, every mode search converged and ``R`` crosses
      zero upwards;
    * ``"not_converged"`` -- a root was found but one of these checks failed;
    * ``"max_iter"`` -- Brent's method ran out of iterations;
    * ``"above_capacity"`` -- ``(p/d^2) E[C_p] >= 1`` on the sample: no root with
      ``q < 1`` (``q = 1``, ``free_entropy = -inf``);
    * ``"unbracketed"`` -- ``R(q) >= 0`` already at ``q = 1e-8``.

    ``message`` says what happened, with the residual.
    """

    STATUSES = ("converged", "not_converged", "max_iter", "above_capacity", "unbracketed")

    p: float
    d: int
    margin: float
    load: float  # p / d^2
    alpha: float  # p ln p / d^2
    q: float
    q_stderr: float
    free_entropy: float
    free_entropy_stderr: float
    derivative: float  # d phi / d q at q
    residual: float  # |2 (1-q)^2 d phi/dq| at q
    capacity_coefficient: float  # 1 - (p/d^2) E[C_p] on the sample (> 0 below capacity)
    mean_cost: float  # E[C_p] on the sample
    status: str
    converged: bool
    iterations: int
    message: str
    samples: int
    seed: int
    exact_competitors: int


class _Equation:
    """``R(q) = 2 (1-q)^2 dphi/dq = q + 2 (1-q)^2 (p/d^2) E d ln Z/dq`` on a fixed sample."""

    def __init__(self, sample, p, d, margin):
        self.sample, self.p, self.d, self.margin = sample, p, d, margin
        self.load = p / float(d) ** 2
        self.evaluations = 0
        self.flags = 0
        cost, bulk_active = sample.water_filling(p, margin)
        self.mean_cost = float(cost.mean())
        self.bulk_active = int(bulk_active.sum())
        self.at_one = 1.0 - self.load * self.mean_cost
        self.last = {}

    def __call__(self, q):
        if q >= 1.0:
            return self.at_one
        log_z, dlog_z, info = self.sample.log_partition(self.p, q, self.margin, derivative=True)
        self.evaluations += 1
        self.flags += int(np.count_nonzero(info[:, 4]))
        value = q + 2.0 * (1.0 - q) ** 2 * self.load * float(dlog_z.mean())
        self.last[q] = (log_z, dlog_z, value)
        return value

    def result(self, **fields) -> SaddlePoint:
        """A :class:`SaddlePoint` with the fields common to every outcome filled in."""
        s = self.sample
        return SaddlePoint(p=float(self.p), d=self.d, margin=self.margin, load=self.load,
                           alpha=self.p * math.log(self.p) / self.d**2,
                           capacity_coefficient=self.at_one, mean_cost=self.mean_cost,
                           iterations=self.evaluations, samples=s.samples, seed=s.seed,
                           exact_competitors=s.exact_competitors, **fields)

    def failure(self, status, message, q, free_entropy=math.nan, residual=math.nan) -> SaddlePoint:
        return self.result(q=q, q_stderr=math.nan, free_entropy=free_entropy,
                           free_entropy_stderr=math.nan, derivative=math.nan, residual=residual,
                           status=status, converged=False, message=message)

    def lower_end(self):
        """``(q_lo, R(q_lo))`` with ``R(q_lo) < 0`` if one is found down to ``q = 1e-8``."""
        q_lo = 1e-4
        r_lo = self(q_lo)
        while r_lo >= 0.0 and q_lo > 1e-8:
            q_lo *= 1e-2
            r_lo = self(q_lo)
        return q_lo, r_lo

    def at_root(self, root, tol, brent_converged) -> SaddlePoint:
        """Free entropy, Monte-Carlo errors and the acceptance checks at the root."""
        if root not in self.last:
            self(root)
        log_z, dlog_z, value = self.last[root]
        m = self.sample.samples
        phi_se = self.load * float(log_z.std(ddof=1)) / math.sqrt(m)
        # delta method for q*: se(R)/|R'(q*)|, slope from a common-random-number difference
        r_se = 2.0 * (1.0 - root) ** 2 * self.load * float(dlog_z.std(ddof=1)) / math.sqrt(m)
        h = 1e-4 * min(root, 1.0 - root)
        slope = (self(root + h) - self(root - h)) / (2.0 * h)
        status, message = self._verdict(abs(value), tol, slope, brent_converged)
        return self.result(q=float(root), q_stderr=r_se / abs(slope) if slope != 0 else math.inf,
                           free_entropy=_entropic(root) + self.load * float(log_z.mean()),
                           free_entropy_stderr=phi_se, derivative=value / (2.0 * (1.0 - root) ** 2),
                           residual=abs(value), status=status, converged=status == "converged",
                           message=message)

    def _verdict(self, residual, tol, slope, brent_converged):
        detail = f"|R(q*)| = {residual:.3g} (tol {tol:.3g}), {self.evaluations} evaluations"
        if not brent_converged:
            status, message = "max_iter", f"max_iter reached: {detail}"
        elif self.flags:
            status, message = "not_converged", (f"not converged: mode search did not converge in "
                                                f"{self.flags} block evaluations; {detail}")
        elif slope <= 0:
            status, message = "not_converged", f"not converged: R'(q*) <= 0, not a regular crossing; {detail}"
        elif residual > tol:
            status, message = "not_converged", f"not converged: {detail}"
        else:
            status, message = "converged", f"converged: {detail}"
        if self.bulk_active:
            message += (f"; note: in {self.bulk_active} of {self.sample.samples} blocks the K-th exact "
                        "competitor is active at q -> 1 (increase exact_competitors)")
        return status, message


def saddle_point(d, p, margin=0.0, *, tol=1e-10, max_iter=200, seed=None, sample=None) -> SaddlePoint:
    """Solve ``d phi / d q = 0`` for the replica-symmetric overlap ``q*``.

    The equation is solved in the scaled form ``R(q) = 2 (1-q)^2 dphi/dq = 0``, i.e.
    ``q = -2 (1-q)^2 (p/d^2) E_t d ln Z/dq``, which stays of order one as ``q -> 1``,
    where ``R(1) = 1 - (p/d^2) E[C_p]`` (the coefficient of ``1/(2(1-q))`` in ``phi``;
    ``C_p`` the water-filling cost on the same sample).  ``R(0+) < 0``, so below
    capacity (``R(1) > 0``) a root is bracketed in ``(0, 1)`` and found by ``brentq``;
    it is accepted only if ``|R(q*)| <= tol``.  At or above capacity on the sample
    (``R(1) <= 0``) there is no root with ``q < 1``: the result has ``q = 1``,
    ``free_entropy = -inf`` and status ``"above_capacity"``.  Derivation and checks:
    ``notes/replica_saddle.md``.

    Parameters
    ----------
    d : int
        Dimension ``d >= 2``.
    p : float
        Number of stored pairs (= block size), ``p >= 2``.
    margin : float, optional
        Stability margin ``>= 0``.
    tol : float, optional
        Accepted ``|R(q*)|``, in ``(0, 1e-3]``.
    max_iter : int, optional
        Iterations of Brent's method.
    seed, sample : optional
        The Monte-Carlo sample (see :func:`free_entropy`).

    Returns
    -------
    SaddlePoint
        ``q`` and its Monte-Carlo ``q_stderr`` (delta method, i.i.d. formula, so
        conservative for the stratified sample), ``free_entropy`` ``phi(q*)`` and its
        stderr, ``derivative``, ``residual``, ``capacity_coefficient``, ``status``,
        ``converged``, ``iterations`` (evaluations of the sample), ``message``.

    Raises
    ------
    ValueError
        If ``p < 2`` (or non-integer when it must be an integer), ``d < 2``,
        ``margin < 0``, ``tol`` outside ``(0, 1e-3]``, ``max_iter < 1``, or both
        ``seed`` and ``sample`` are given.
    """
    d = check_int(d, "d", low=2)
    margin = check_real(margin, "margin", low=0.0)
    tol = check_real(tol, "tol", low=0.0, high=1e-3, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    sample = _resolve_sample(sample, seed)
    eq = _Equation(sample, _check_p(p, sample.exact_competitors), d, margin)
    if eq.at_one <= 0.0:
        return eq.failure("above_capacity", f"at or above capacity on this sample: (p/d^2) E[C_p] = "
                          f"{1.0 - eq.at_one:.6g} >= 1, no saddle point with q < 1",
                          q=1.0, free_entropy=-math.inf)
    q_lo, r_lo = eq.lower_end()
    if r_lo >= 0.0:
        return eq.failure("unbracketed", f"no sign change: R(q) = {r_lo:.3g} >= 0 already at q = 1e-8",
                          q=q_lo, residual=abs(r_lo))
    root, info = optimize.brentq(eq, q_lo, 1.0, xtol=1e-15, rtol=4.5 * np.finfo(float).eps,
                                 maxiter=max_iter, full_output=True, disp=False)
    return eq.at_root(min(root, np.nextafter(1.0, 0.0)), tol, info.converged)


@dataclass(frozen=True)
class SampleCapacity(Result):
    """Capacity ``p_c`` from ``p E[C_p] = d^2`` on a :class:`ReplicaSample` (see :func:`sample_capacity`).

    ``status``: ``"converged"`` (``residual <= tol``), ``"not_converged"`` or
    ``"max_iter"`` (bracketing or Brent's method ran out of iterations); ``message``
    gives the residual.
    """

    STATUSES = ("converged", "not_converged", "max_iter")

    d: int
    margin: float
    p_c: float
    alpha: float  # p_c ln p_c / d^2
    mean_cost: float  # E[C_p] on the sample at p_c
    cost_stderr: float
    bulk_active: int  # blocks whose level falls below the K-th exact competitor at p_c
    status: str
    converged: bool
    iterations: int
    residual: float  # |log(p E[C_p] / d^2)| at p_c
    message: str
    samples: int
    seed: int
    exact_competitors: int


class _SampleLoad:
    """``log(p E[C_p]) - log(d^2)`` on a sample, in ``log p`` (interpolated between integers)."""

    def __init__(self, sample, d, margin):
        self.sample, self.d, self.margin = sample, d, margin
        self.target = float(d) ** 2
        self.evaluations = 0

    def total(self, p):
        """``p E[C_p]`` on the sample (linear between integers where ``p`` must be one)."""
        if p - 1.0 < self.sample.exact_competitors and not float(p).is_integer():
            lo, hi = math.floor(p), math.ceil(p)
            w = p - lo
            return (1.0 - w) * self._load_cost(lo) + w * self._load_cost(hi)
        return self._load_cost(p)

    def _load_cost(self, p):
        self.evaluations += 1
        return p * float(self.sample.water_filling(p, self.margin)[0].mean())

    def __call__(self, log_p):
        return math.log(self.total(math.exp(log_p))) - math.log(self.target)


def sample_capacity(d, margin=0.0, *, tol=1e-12, max_iter=100, seed=None, sample=None) -> SampleCapacity:
    """Where the saddle point reaches ``q* = 1`` on a given sample: ``p E[C_p] = d^2``.

    This is the zero of the coefficient ``R(1) = 1 - (p/d^2) E[C_p]`` of ``1/(2(1-q))``
    in ``phi`` (``notes/replica_saddle.md``, section 5), evaluated with the SAME blocks
    as :func:`saddle_point`, so that the two can be compared without Monte-Carlo noise
    between them.  (:func:`replica.finite_size.capacity` solves the same equation with
    a far more precise estimator of ``E[C_p]``; use that for the capacity itself.)
    For ``p - 1 <= exact_competitors`` the blocks exist only for integer ``p`` and
    ``p E[C_p]`` is interpolated linearly between integers.

    Parameters
    ----------
    d : int
        Dimension ``d >= 2``.
    margin : float, optional
        Stability margin ``>= 0``.
    tol : float, optional
        Accepted residual ``|log(p E[C_p] / d^2)|``, in ``(0, 1e-3]``.
    max_iter : int, optional
        Bracketing steps (``log p`` by 0.5) and Brent iterations allowed.
    seed, sample : optional
        The Monte-Carlo sample (see :func:`free_entropy`).

    Returns
    -------
    SampleCapacity

    Raises
    ------
    ValueError
        If ``d < 2``, ``margin < 0``, ``tol`` or ``max_iter`` is out of range, both
        ``seed`` and ``sample`` are given, or the capacity falls below ``p = 2``.
    """
    d = check_int(d, "d", low=2)
    margin = check_real(margin, "margin", low=0.0)
    tol = check_real(tol, "tol", low=0.0, high=1e-3, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    sample = _resolve_sample(sample, seed)
    g = _SampleLoad(sample, d, margin)
    lo = math.log(2.0)
    if g(lo) >= 0.0:
        raise ValueError(f"capacity below p = 2 for d={d}, margin={margin!r}: "
                         f"2 E[C_2] >= d^2 on this sample")
    hi, steps = lo, 0
    while g(hi) < 0.0 and steps < max_iter:
        lo, hi, steps = hi, hi + 0.5, steps + 1
    if steps == max_iter and g(hi) < 0.0:
        root, converged_brent = hi, False
    else:
        root, info = optimize.brentq(g, lo, hi, xtol=1e-14, rtol=4.5 * np.finfo(float).eps,
                                     maxiter=max_iter, full_output=True, disp=False)
        converged_brent = info.converged
    return _sample_capacity_result(g, math.exp(root), abs(g(root)), tol, converged_brent)


def _sample_capacity_result(g, p_c, residual, tol, converged_brent) -> SampleCapacity:
    sample, k = g.sample, g.sample.exact_competitors
    p_eval = p_c if (p_c - 1.0 >= k or float(p_c).is_integer()) else float(round(p_c))
    cost, bulk_active = sample.water_filling(p_eval, g.margin)
    detail = f"|log(p E[C_p] / d^2)| = {residual:.3g} (tol {tol:.3g}), {g.evaluations} evaluations"
    if not converged_brent:
        status, message = "max_iter", f"max_iter reached: {detail}"
    elif residual <= tol:
        status, message = "converged", f"converged: {detail}"
    else:
        status, message = "not_converged", f"not converged: {detail}"
    return SampleCapacity(d=g.d, margin=g.margin, p_c=p_c,
                          alpha=p_c * math.log(p_c) / g.target, mean_cost=g.total(p_c) / p_c,
                          cost_stderr=float(cost.std(ddof=1)) / math.sqrt(sample.samples),
                          bulk_active=int(bulk_active.sum()), status=status,
                          converged=status == "converged", iterations=g.evaluations,
                          residual=residual, message=message, samples=sample.samples,
                          seed=sample.seed, exact_competitors=k)
