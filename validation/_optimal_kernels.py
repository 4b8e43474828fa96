"""numba kernels of the ``optimal`` solver (``validation.solvers.optimal``).

The solver works on a *working set* of constraints ``(mu, rho)`` (input ``mu``,
competitor ``rho != mu``) stored in compressed form, grouped by input: the
competitors of input ``mu`` are entries ``ptr[mu] .. ptr[mu+1]-1``, each an index
into a table of competitor vectors: for the original problem (OP) the shared
output set (index ``rho``); for the decoupled problem (DP) the working set's own
vectors (regenerated from the counter-based stream of ``validation._rng`` at
every full pass, so that nothing of size ``d p^2`` is ever stored; index ``k``).

The margin of constraint ``(mu, rho)`` for the images ``Y[mu] = W e_mu`` is
``(t_mu - u_rho) . Y[mu]`` with ``t_mu`` the target of input ``mu``.  All
kernels loop over inputs with ``prange`` (they respect ``NUMBA_NUM_THREADS``);
the working-set kernels accumulate dot products in the storage type (float32 in
the search, float64 for certificates).  See
``notes/optimal_solver.md``.
"""

from __future__ import annotations

import numba
import numpy as np

from validation._rng import _fill_candidate

__all__ = [
    "active_margins",
    "active_combine",
    "dp_block_margins",
    "dp_fill_pairs",
]


@numba.njit(cache=True, parallel=True, fastmath=True)
def active_margins(images, targets, outputs, ptr, idx, out):
    """Margins ``out[k] = (targets[mu] - outputs[idx[k]]) . images[mu]`` (OP and DP).

    Dot products accumulate in the storage type (float32 in the search: twice as fast as
    a float64 accumulator, absolute error ~1e-5 on the margins at d = 256, measured).
    """
    p, d = images.shape
    zero = images.dtype.type(0.0)
    for mu in numba.prange(p):
        start = ptr[mu]
        stop = ptr[mu + 1]
        if stop == start:
            continue
        t = zero
        for j in range(d):
            t += targets[mu, j] * images[mu, j]
        for k in range(start, stop):
            r = idx[k]
            s = zero
            for j in range(d):
                s += outputs[r, j] * images[mu, j]
            out[k] = np.float64(t) - np.float64(s)


@numba.njit(cache=True, parallel=True, fastmath=True)
def active_combine(coef, targets, outputs, ptr, idx, out):
    """``out[mu] = sum_k coef[k] (targets[mu] - outputs[idx[k]])`` (float64 out).

    The sum over competitors accumulates in the storage type of ``outputs`` (float32 in
    the search, float64 for the certificate).
    """
    p, d = out.shape
    for mu in numba.prange(p):
        acc = np.zeros(d, dtype=outputs.dtype)
        total = 0.0
        for k in range(ptr[mu], ptr[mu + 1]):
            c = coef[k]
            if c == 0.0:
                continue
            total += c
            r = idx[k]
            cc = outputs.dtype.type(c)
            for j in range(d):
                acc[j] += cc * outputs[r, j]
        for j in range(d):
            out[mu, j] = total * targets[mu, j] - acc[j]


@numba.njit(cache=True, parallel=True, fastmath=True)
def dp_block_margins(key, ensemble_code, images, targets, mus, n_candidates, out):
    """DP full pass for a block of inputs, in float64.

    ``out[i, rho] = (targets[mus[i]] - u^(mus[i])_rho) . images[i]`` for every
    ``rho`` (the diagonal ``rho = mus[i]`` comes out as 0 up to rounding and is
    masked by the caller).
    """
    n, d = images.shape
    for i in numba.prange(n):
        buf = np.empty(d)
        mu = mus[i]
        t = 0.0
        for j in range(d):
            t += targets[mu, j] * images[i, j]
        for rho in range(n_candidates):
            _fill_candidate(key, ensemble_code, mu, rho, buf)
            s = 0.0
            for j in range(d):
                s += buf[j] * images[i, j]
            out[i, rho] = t - s


@numba.njit(cache=True, parallel=True, fastmath=True)
def dp_fill_pairs(key, ensemble_code, mus, rhos, out):
    """``out[k] = u^(mus[k])_(rhos[k])`` (out float32 or float64, shape (n, d))."""
    n, d = out.shape
    for k in numba.prange(n):
        buf = np.empty(d)
        _fill_candidate(key, ensemble_code, mus[k], rhos[k], buf)
        for j in range(d):
            out[k, j] = buf[j]


@numba.njit(cache=True, fastmath=True)
def hinge_along_line(m0, m1, m2, t):
    """Value, first and second derivative in ``t`` of ``sum_i (1 - m_i(t))_+^2``.

    ``m_i(t) = m0_i + t m1_i + t^2 m2_i``; the second derivative omits the kinks.
    Serial (called inside the line search, where BLAS threads would only add overhead).
    """
    value = 0.0
    first = 0.0
    second = 0.0
    for i in range(m0.shape[0]):
        m = m0[i] + t * (m1[i] + t * m2[i])
        r = 1.0 - m
        if r > 0.0:
            dm = m1[i] + 2.0 * t * m2[i]
            value += r * r
            first -= 2.0 * r * dm
            second += 2.0 * (dm * dm - r * 2.0 * m2[i])
    return value, first, second


@numba.njit(cache=True, fastmath=True)
def hinge_along_ray(m0, m1, t):
    """Same as ``hinge_along_line`` for a straight line (``m2 = 0``)."""
    value = 0.0
    first = 0.0
    second = 0.0
    for i in range(m0.shape[0]):
        r = 1.0 - m0[i] - t * m1[i]
        if r > 0.0:
            value += r * r
            first -= 2.0 * r * m1[i]
            second += 2.0 * m1[i] * m1[i]
    return value, first, second


@numba.njit(cache=True)
def _hinge_and_ridge(m0, m1, m2, quadratic, ridge, c, t):
    """Value, first and second derivative at ``t`` of the line-search objective."""
    if quadratic:
        v, g, h = hinge_along_line(m0, m1, m2, t)
    else:
        v, g, h = hinge_along_ray(m0, m1, t)
    if ridge != 0.0:
        v += ridge * (c[0] + t * (c[1] + t * (c[2] + t * (c[3] + t * c[4]))))
        g += ridge * (c[1] + t * (2 * c[2] + t * (3 * c[3] + t * 4 * c[4])))
        h += ridge * (2 * c[2] + t * (6 * c[3] + t * 12 * c[4]))
    return v, g, h


@numba.njit(cache=True)
def line_search(m0, m1, m2, quadratic, ridge, c):
    """Minimise ``h(t) = sum_i (1 - m_i(t))_+^2 + ridge * poly(t)`` over ``t >= 0``.

    ``m_i(t) = m0_i + t m1_i (+ t^2 m2_i if quadratic)``; ``poly(t) = c0 + c1 t + ... +
    c4 t^4``.  Bracketing by doubling, then bisection safeguarded by Newton steps where
    ``h`` is convex (a straight line with at most a quadratic ridge term: piecewise
    quadratic, so Newton ends in a few steps).  Returns ``(t, h(t))``; ``t = 0`` when the
    direction is not a descent direction.
    """
    v0, g0, _ = _hinge_and_ridge(m0, m1, m2, quadratic, ridge, c, 0.0)
    if not g0 < 0.0:
        return 0.0, v0
    convex = (not quadratic) and c[3] == 0.0 and c[4] == 0.0
    lo = 0.0
    hi = 1.0
    bracketed = False
    for _ in range(80):
        v, g, h = _hinge_and_ridge(m0, m1, m2, quadratic, ridge, c, hi)
        if g >= 0.0:
            bracketed = True
            break
        lo = hi
        hi = 2.0 * hi
    if not bracketed:
        return hi, _hinge_and_ridge(m0, m1, m2, quadratic, ridge, c, hi)[0]
    t = hi
    for _ in range(80):
        v, g, h = _hinge_and_ridge(m0, m1, m2, quadratic, ridge, c, t)
        if abs(g) <= 1e-6 * abs(g0):
            break
        if g > 0:
            hi = t
        else:
            lo = t
        t_new = t - g / h if (convex and h > 0) else 0.5 * (lo + hi)
        if not lo < t_new < hi:
            t_new = 0.5 * (lo + hi)
        if abs(t_new - t) <= 1e-9 * t or hi - lo <= 1e-7 * hi:
            t = t_new
            break
        t = t_new
    return t, _hinge_and_ridge(m0, m1, m2, quadratic, ridge, c, t)[0]


@numba.njit(cache=True)
def lbfgs_direction(S, Y, rho, head, count, g, q):
    """L-BFGS two-loop recursion: ``q = -H g`` from the ``count`` newest pairs.

    ``S[i], Y[i]`` (ring buffer, newest in slot ``head - 1``) are the steps and gradient
    changes, ``rho[i] = 1 / (s_i . y_i)``; the initial matrix is ``(s.y / y.y) I`` of the
    newest pair.  Serial (the vectors are at most a few 1e5 long).
    """
    m = S.shape[0]
    n = g.shape[0]
    for j in range(n):
        q[j] = -g[j]
    alpha = np.empty(count)
    for i in range(count):  # newest to oldest
        k = (head - 1 - i + m) % m
        a = 0.0
        for j in range(n):
            a += S[k, j] * q[j]
        a *= rho[k]
        alpha[i] = a
        for j in range(n):
            q[j] -= a * Y[k, j]
    k = (head - 1 + m) % m
    sy = 0.0
    yy = 0.0
    for j in range(n):
        sy += S[k, j] * Y[k, j]
        yy += Y[k, j] * Y[k, j]
    gamma = sy / yy
    for j in range(n):
        q[j] *= gamma
    for i in range(count - 1, -1, -1):  # oldest to newest
        k = (head - 1 - i + m) % m
        b = 0.0
        for j in range(n):
            b += Y[k, j] * q[j]
        b *= rho[k]
        for j in range(n):
            q[j] += (alpha[i] - b) * S[k, j]


@numba.njit(cache=True, fastmath=True)
def vdot(a, b):
    """Serial dot product of two flat float64 arrays."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@numba.njit(cache=True, parallel=True)
def select_block(scores, row_offset, threshold, keep, out_idx, out_count, out_min, out_loss,
                 out_violated):
    """Working-set selection from a block of OP scores, without forming margins.

    ``scores[i, rho] = u_rho . W e_mu`` for ``mu = row_offset + i``; the margin of
    ``(mu, rho)`` is ``scores[i, mu] - scores[i, rho]``.  For each row, the (at most
    ``keep``) competitors with the smallest margins below ``threshold`` go to
    ``out_idx[i, :out_count[i]]`` (in heap order); ``out_min[i]`` is the row's
    smallest margin, ``out_loss[i]`` its full squared hinge ``sum_rho (1 - margin)_+^2``
    (float64) and ``out_violated[i]`` the number of its margins below 1.

    One pass per row with a bounded min-heap of the ``keep`` largest scores above the
    cut: ``O(p)`` per row plus ``O(log keep)`` per admitted score, and once the heap
    is full a score is admitted only if it beats the heap's smallest one.
    """
    n, p = scores.shape
    for i in numba.prange(n):
        mu = row_offset + i
        t = scores[i, mu]
        floor = t - threshold  # margin < threshold  <=>  score > floor
        best = -np.inf
        heap = np.empty(max(keep, 1), dtype=scores.dtype)
        cnt = 0
        hinge = np.float64(t) - 1.0  # margin < 1  <=>  score > hinge
        loss = 0.0
        violated = 0
        for r in range(p):
            if r == mu:
                continue
            s = scores[i, r]
            if s > best:
                best = s
            if s > hinge:
                excess = np.float64(s) - hinge
                loss += excess * excess
                violated += 1
            if s > floor and keep > 0:
                if cnt < keep:  # push, sift up
                    j = cnt
                    cnt += 1
                    while j > 0:
                        parent = (j - 1) >> 1
                        if heap[parent] <= s:
                            break
                        heap[j] = heap[parent]
                        out_idx[i, j] = out_idx[i, parent]
                        j = parent
                    heap[j] = s
                    out_idx[i, j] = r
                    if cnt == keep:
                        floor = max(floor, heap[0])
                else:  # replace the smallest, sift down
                    j = 0
                    while True:
                        c = 2 * j + 1
                        if c >= keep:
                            break
                        if c + 1 < keep and heap[c + 1] < heap[c]:
                            c += 1
                        if heap[c] >= s:
                            break
                        heap[j] = heap[c]
                        out_idx[i, j] = out_idx[i, c]
                        j = c
                    heap[j] = s
                    out_idx[i, j] = r
                    floor = heap[0]
        out_min[i] = t - best
        out_count[i] = cnt
        out_loss[i] = loss
        out_violated[i] = violated
