"""numba kernels of the replica-symmetric saddle point (:mod:`replica.saddle.point`).

``log Phi`` and the Mills ratio on the whole real line, the conditional expectation of
the bulk of the competitors, and ``ln Z(t; q)`` of one block (mode by safeguarded
Newton, tails cut where the log-integrand has dropped by ``_TAIL``, Gauss-Legendre on
each side).  ``notes/replica_saddle.md`` (section "Numerics").  The names are private to
the package; :mod:`replica.saddle.point` is the Python layer over them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

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
