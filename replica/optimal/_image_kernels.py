"""numba kernels: a block's least move in the image (:mod:`replica.optimal.image_margin`), water filling by margin.

One block: the image ``y0`` in ``R^d``, the target candidate ``t`` and the competitors
``u_1 .. u_m`` (rows of ``U``).  The least move solves

    min |y - y0|^2   subject to   (t - u_i)^T y >= k   for every i,

the projection of ``y0`` on a polyhedron.  Its dual is a nonnegative quadratic program in
the multipliers ``lam`` (``y = y0 + A^T lam``, ``A`` the rows ``a_i = t - u_i``), solved by
the active-set method of Lawson and Hanson: the dual gradient of constraint ``i`` is its
violation ``k - a_i^T y``; the most violated constraint enters, the least-squares solve on
the active set is stepped back while a multiplier would turn negative.
``notes/max_margin.md``, section "The block cost in the image space".  Private to the package.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

# status codes of one block
OK = 0
MAX_ITER = 1  # the iteration budget ran out
SINGULAR = 2  # the active rows became linearly dependent (more than d active constraints)


@njit(cache=True)
def _cholesky_solve(G, g, n):
    """Solve ``G z = g`` (``G`` symmetric positive definite, leading ``n x n``); ``ok`` False if not PD."""
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            s = G[i, j]
            for q in range(j):
                s -= L[i, q] * L[j, q]
            if i == j:
                if s <= 1e-13 * max(G[i, i], 1e-300):
                    return np.zeros(n), False
                L[i, i] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    z = np.empty(n)
    for i in range(n):
        s = g[i]
        for q in range(i):
            s -= L[i, q] * z[q]
        z[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = z[i]
        for q in range(i + 1, n):
            s -= L[q, i] * z[q]
        z[i] = s / L[i, i]
    return z, True


@njit(cache=True)
def least_move(t, U, y0, k, y, max_iter):
    """Least ``|y - y0|^2`` with ``(t - u_i)^T y >= k`` for all rows ``u_i`` of ``U``; writes ``y``.

    Returns ``(cost, status, iterations, worst)``: ``worst = max_i (k - a_i^T y)`` over all
    rows (``<= 0`` up to rounding when feasible).
    """
    cost, status, it, worst, _ = least_move_slope(t, U, y0, k, y, max_iter)
    return cost, status, it, worst


@njit(cache=True)
def least_move_slope(t, U, y0, k, y, max_iter):
    """:func:`least_move` and the derivative of its cost in ``k``: ``(cost, status, iterations, worst, slope)``.

    With ``y = y0 + sum_a lam_a a_a`` the Lagrange multipliers of the active constraints
    are ``2 lam_a``, so ``d cost / d k = 2 sum_a lam_a`` (envelope theorem).
    """
    m, d = U.shape
    cap = min(m, d + 1)
    A = np.empty((cap, d))  # the active rows a_i = t - u_i
    index = np.empty(cap, np.int64)
    lam = np.zeros(cap)
    active = np.zeros(m, np.bool_)
    G = np.empty((cap, cap))
    g = np.empty(cap)
    n = 0
    scale = 1.0 + abs(k) + np.sqrt(np.sum(y0 * y0) / d)
    tol = 1e-11 * scale
    for q in range(d):
        y[q] = y0[q]
    status = MAX_ITER
    it = 0
    while it < max_iter:
        it += 1
        ty = 0.0
        for q in range(d):
            ty += t[q] * y[q]
        best, j = tol, -1
        for i in range(m):
            if active[i]:
                continue
            uy = 0.0
            for q in range(d):
                uy += U[i, q] * y[q]
            w = k - (ty - uy)
            if w > best:
                best, j = w, i
        if j < 0:
            status = OK
            break
        if n == cap:
            status = SINGULAR
            break
        for q in range(d):
            A[n, q] = t[q] - U[j, q]
        index[n] = j
        lam[n] = 0.0
        active[j] = True
        n += 1
        # inner loop: least squares on the active set, stepped back to keep lam >= 0
        failed = False
        for _inner in range(2 * cap + 2):
            for a in range(n):
                s = 0.0
                for q in range(d):
                    s += A[a, q] * y0[q]
                g[a] = k - s
                for b in range(a + 1):
                    s = 0.0
                    for q in range(d):
                        s += A[a, q] * A[b, q]
                    G[a, b] = s
                    G[b, a] = s
            z, ok = _cholesky_solve(G, g, n)
            if not ok:
                failed = True
                break
            if np.all(z[:n] > 0.0):
                for a in range(n):
                    lam[a] = z[a]
                break
            alpha = 1.0
            for a in range(n):
                if z[a] <= 0.0:
                    step = lam[a] / (lam[a] - z[a])
                    if step < alpha:
                        alpha = step
            for a in range(n):
                lam[a] += alpha * (z[a] - lam[a])
            keep = 0
            for a in range(n):
                if lam[a] > 1e-14 * scale:
                    if keep != a:
                        for q in range(d):
                            A[keep, q] = A[a, q]
                        index[keep] = index[a]
                        lam[keep] = lam[a]
                    keep += 1
                else:
                    active[index[a]] = False
            n = keep
            if n == 0:
                break
        if failed:
            status = SINGULAR
            break
        for q in range(d):
            s = y0[q]
            for a in range(n):
                s += lam[a] * A[a, q]
            y[q] = s
    cost = 0.0
    for q in range(d):
        cost += (y[q] - y0[q]) ** 2
    ty = 0.0
    for q in range(d):
        ty += t[q] * y[q]
    worst = -np.inf
    for i in range(m):
        uy = 0.0
        for q in range(d):
            uy += U[i, q] * y[q]
        w = k - (ty - uy)
        if w > worst:
            worst = w
    if status == OK and worst > 1e-9 * scale:
        status = MAX_ITER
    slope = 0.0
    for a in range(n):
        slope += 2.0 * lam[a]
    return cost, status, it, worst, slope


@njit(cache=True)
def least_moves(T, U, Y0, k, Y, costs, statuses, max_iter):
    """:func:`least_move` for every block ``b``; fills ``Y[b]``, ``costs[b]``, ``statuses[b]``."""
    for b in range(T.shape[0]):
        c, s, _, _ = least_move(T[b], U[b], Y0[b], k, Y[b], max_iter)
        costs[b] = c
        statuses[b] = s


@njit(cache=True)
def least_moves_slopes(T, U, Y0, k, Y, costs, statuses, slopes, max_iter):
    """:func:`least_moves` and the derivatives of the costs in ``k`` (``slopes[b]``)."""
    for b in range(T.shape[0]):
        c, s, _, _, g = least_move_slope(T[b], U[b], Y0[b], k, Y[b], max_iter)
        costs[b] = c
        statuses[b] = s
        slopes[b] = g


# --------------------------------------------------------------------------------------
# the water-filling expectation over the target field at many margins (replica.optimal.cost)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _normal_moments(x):
    """``(cdf, sf, pdf, x pdf)`` of N(0, 1) at ``x``, each tail from the small side (as ``cost._normal_pieces``)."""
    small = 0.5 * math.erfc(abs(x) * _SQRT_HALF)
    if x < 0.0:
        cdf, sf = small, 1.0 - small
    else:
        cdf, sf = 1.0 - small, small
    pdf = _INV_SQRT_2PI * math.exp(-0.5 * x * x)
    return cdf, sf, pdf, x * pdf


@njit(cache=True)
def normal_margin_costs(breaks, means, spreads, top, last, margins, complete, values, trunc, control, slopes):
    """``E[C | competitors]`` over ``t_1 ~ N(0, 1)`` per row and margin (``cost._conditional_expected_cost``).

    ``breaks``, ``means``, ``spreads`` (rows, K): the water-filling breakpoints ``B_j``, means
    ``m_j`` and spreads ``V_j`` of the ``j`` largest kept competitors (margin-free); ``top``,
    ``last`` (rows): the largest and the smallest kept one.  Fills, for every margin ``m``
    (row of the outputs): the conditional cost, its truncation bound (0 when ``complete``),
    the control ``g(c_1 + m)`` and, in ``slopes[0]`` and ``slopes[1]``, the derivatives of
    the cost and of the control in ``m``.  The cost is continuous at the breakpoints, so its
    derivative is ``sum_j -2 j/(j+1) (I1_j - centre_j I0_j)`` (``I0``, ``I1``: the integrals of
    ``1`` and ``x`` on piece ``j``), and ``g'(a) = 2 (a Phi(a) + phi(a))``.
    """
    rows, k = breaks.shape
    for a in range(margins.size):
        m = margins[a]
        for i in range(rows):
            total = 0.0
            cdf, sf, pdf, xpdf = _normal_moments(breaks[i, 0] + m)
            t0 = t1 = t2 = 0.0
            slope = 0.0
            for j in range(k):
                if j + 1 < k:
                    lo = breaks[i, j + 1] + m
                    cdf_lo, sf_lo, pdf_lo, xpdf_lo = _normal_moments(lo)
                    lo_upper = lo >= 0.0
                else:
                    cdf_lo, sf_lo, pdf_lo, xpdf_lo = 0.0, 1.0, 0.0, 0.0
                    lo_upper = False
                i0 = sf_lo - sf if lo_upper else cdf - cdf_lo
                i1 = pdf_lo - pdf
                i2 = i0 + xpdf_lo - xpdf
                centre = means[i, j] + m
                weight = (j + 1.0) / (j + 2.0)
                total += spreads[i, j] * i0 + weight * (i2 - 2.0 * centre * i1 + centre * centre * i0)
                slope -= 2.0 * weight * (i1 - centre * i0)
                cdf, sf, pdf, xpdf = cdf_lo, sf_lo, pdf_lo, xpdf_lo
                t0, t1, t2 = i0, i1, i2
            values[a, i] = total
            slopes[0, a, i] = slope
            if complete:
                trunc[a, i] = 0.0
            else:
                level = last[i] + m
                centre = means[i, k - 1] + m
                upper_const = spreads[i, k - 1] + k * (means[i, k - 1] - last[i]) ** 2
                upper = upper_const * t0 + (t2 - 2.0 * level * t1 + level * level * t0)
                lower = spreads[i, k - 1] * t0 + (k / (k + 1.0)) * (t2 - 2.0 * centre * t1 + centre * centre * t0)
                trunc[a, i] = max(upper - lower, 0.0)
            x = top[i] + m
            c_cdf, _, c_pdf, _ = _normal_moments(x)
            control[a, i] = (x * x + 1.0) * c_cdf + x * c_pdf
            slopes[1, a, i] = 2.0 * (x * c_cdf + c_pdf)


# --------------------------------------------------------------------------------------
# Gaussian point clouds (replica.variants.few_outputs.cloud_statistics)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def nnls(At, b, x, max_iter):
    """Lawson-Hanson non-negative least squares ``min |A x - b|``, ``x >= 0``; fills ``x``, returns the residual.

    ``At`` is ``A`` transposed, ``m x n`` (the ``m`` columns of ``A`` as contiguous rows, small
    ``n``); the passive set grows by the largest gradient entry and is shrunk back while a
    least-squares solution (normal equations, Cholesky) has a non-positive entry.
    """
    m, n = At.shape
    for j in range(m):
        x[j] = 0.0
    passive = np.zeros(m, np.bool_)
    r = b.copy()
    norm = 0.0
    for j in range(m):
        for i in range(n):
            norm = max(norm, abs(At[j, i]))
    tol = 1e-12 * norm * (1.0 + np.sqrt(np.sum(b * b))) * max(n, m)
    idx = np.empty(m, np.int64)
    size = min(m, n + 1)  # a passive set of n + 1 columns is dependent: its Cholesky fails and it shrinks
    gram = np.empty((size, size))
    rhs = np.empty(size)
    for _ in range(max_iter):
        best, t = tol, -1
        for j in range(m):
            if not passive[j]:
                g = 0.0
                for i in range(n):
                    g += At[j, i] * r[i]
                if g > best:
                    best, t = g, j
        if t < 0:
            break
        passive[t] = True
        for _inner in range(m + 1):
            k = 0
            for j in range(m):
                if passive[j]:
                    idx[k] = j
                    k += 1
            for a in range(k):
                s = 0.0
                for i in range(n):
                    s += At[idx[a], i] * b[i]
                rhs[a] = s
                for c in range(a + 1):
                    s = 0.0
                    for i in range(n):
                        s += At[idx[a], i] * At[idx[c], i]
                    gram[a, c] = s
                    gram[c, a] = s
            z, ok = _cholesky_solve(gram, rhs, k)
            if not ok:  # dependent passive columns: drop the one just added
                passive[t] = False
                break
            if np.all(z > 0.0):
                for a in range(k):
                    x[idx[a]] = z[a]
                break
            alpha = 1.0
            for a in range(k):
                if z[a] <= 0.0:
                    step = x[idx[a]] / (x[idx[a]] - z[a])
                    if step < alpha:
                        alpha = step
            for a in range(k):
                j = idx[a]
                x[j] += alpha * (z[a] - x[j])
                if x[j] <= 1e-15 * (1.0 + abs(z[a])):
                    x[j] = 0.0
                    passive[j] = False
        for i in range(n):
            r[i] = b[i]
        for j in range(m):
            if x[j] != 0.0:
                for i in range(n):
                    r[i] -= At[j, i] * x[j]
    return np.sqrt(np.sum(r * r))


@njit(cache=True)
def cloud_counts(points, gauss, nonvertices, j_counts, max_iter):
    """Vertices, active facets and squared distances of Gaussian clouds (every point a target).

    ``points``, ``gauss``: (clouds, p, d).  For target ``mu`` with differences
    ``D = x_mu - x_rho``: the projection of ``-g_mu`` on the cone of ``D`` by NNLS (its
    support is ``J``, its squared norm the distance); a zero residual leaves the vertex
    question open, decided by least-distance programming (Lawson-Hanson ch. 23):
    ``x_mu`` is a vertex iff some ``w`` has ``D w >= 1``, iff NNLS of ``[D^T; 1^T] u = e``
    leaves a residual.  Fills ``nonvertices[c]`` and ``j_counts``; returns the summed
    squared distance.
    """
    clouds, p, d = points.shape
    m = p - 1
    A = np.empty((m, d))  # the differences as rows (A transposed for nnls)
    E = np.empty((m, d + 1))
    lam = np.empty(m)
    u = np.empty(m)
    f = np.zeros(d + 1)
    f[d] = 1.0
    distance2 = 0.0
    for c in range(clouds):
        nonvertices[c] = 0
        for mu in range(p):
            col = 0
            for rho in range(p):
                if rho == mu:
                    continue
                for i in range(d):
                    A[col, i] = points[c, mu, i] - points[c, rho, i]
                    E[col, i] = A[col, i]
                E[col, d] = 1.0
                col += 1
            residual = nnls(A, -gauss[c, mu], lam, max_iter)
            if residual <= 1e-9:
                scale = 0.0
                for j in range(m):
                    for i in range(d):
                        scale = max(scale, abs(A[j, i]))
                if nnls(E, f, u, max_iter) <= 1e-9 * (1.0 + scale):
                    nonvertices[c] += 1
                    continue
            top = 0.0
            for j in range(m):
                top = max(top, lam[j])
            count = 0
            for j in range(m):
                if lam[j] > 1e-12 * max(1.0, top):
                    count += 1
            j_counts[min(count, d)] += 1
            s2 = 0.0
            for i in range(d):
                s = 0.0
                for j in range(m):
                    s += A[j, i] * lam[j]
                s2 += s * s
            distance2 += s2
    return distance2
