"""numba kernels of the certified max-margin solver (``validation.solvers.maxmargin``).

The working set holds constraints ``i = (mu, rho)`` grouped by input (entries
``ptr[mu] .. ptr[mu+1]-1`` belong to input ``mu``), each with its competitor vector
``table[index[i]]`` (OP: the shared outputs; DP: the working set's own candidates,
regenerated in float64), its dual variable ``lam[i] >= 0`` and ``vnorm2[i] =
||t_mu - u_rho||^2``.  The memory is ``W = sum_i lam_i (t_mu - u_rho) e_mu^T``, kept as
its transpose ``Wt = W^T`` so that the images are ``Y = E @ Wt`` (``E`` the inputs,
shape (p, d)).  See ``notes/max_margin.md``.

Only the sweep kernels reassociate sums (``fastmath`` flags ``reassoc``, ``contract``):
they choose search steps.  The dual variables are float64 throughout, and the
certificates are recomputed from them in float64 by kernels without fastmath.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["dual_sweep", "select_rows", "combine", "set_margins", "vnorm"]

# The sweeps may reassociate sums (so that dot products vectorise): they only choose the
# search steps.  Every certified number (``combine``, ``set_margins``, the float64 scans
# of the solver) is computed by kernels without fastmath.
_SEARCH_MATH = {"reassoc", "contract"}


# Inlined into dual_sweep (same flags) rather than linked: one copy of this fastmath code.
@numba.njit(cache=True, fastmath=_SEARCH_MATH, inline="always")
def _input_block(y, vecs, lam, vnorm2, start, stop, gmm, omega, dc):
    """One coordinate pass over the dual variables of one input.

    Constraint ``i`` has the vector ``vecs[i] = t_mu - u_rho``; ``gmm ||vecs[i]||^2``
    (``gmm = ||e_mu||^2``, ``vnorm2[i] = ||vecs[i]||^2``) is the diagonal of the dual
    Hessian; the step is ``omega`` times the exact coordinate maximiser (``omega = 1``:
    Gauss-Seidel; ``1 < omega < 2``: over-relaxation), clipped at ``lam_i >= 0``.  ``y``
    (the image ``W e_mu``) and ``dc`` (the change of ``c_mu``) are updated in place.
    Returns the largest projected-gradient violation met.
    """
    d = y.shape[0]
    worst = 0.0
    for i in range(start, stop):
        v = vecs[i]
        m = 0.0
        for j in range(d):
            m += v[j] * y[j]
        g = 1.0 - m
        old = lam[i]
        if old == 0.0 and g <= 0.0:
            continue
        if abs(g) > worst:
            worst = abs(g)
        new = old + omega * g / (gmm * vnorm2[i])
        if new < 0.0:
            new = 0.0
        delta = new - old
        if delta == 0.0:
            continue
        lam[i] = new
        step = delta * gmm
        for j in range(d):
            y[j] += step * v[j]
            dc[j] += delta * v[j]
    return worst


@numba.njit(cache=True)
def vnorm(v):
    """Squared Euclidean norm of a vector."""
    s = 0.0
    for j in range(v.shape[0]):
        s += v[j] * v[j]
    return s


@numba.njit(cache=True, fastmath=_SEARCH_MATH)
def dual_sweep(Wt, E, vecs, ptr, lam, vnorm2, order, chunk, omega):
    """One sweep of block coordinate ascent over the inputs in ``order``.

    Inputs are taken ``chunk`` at a time: their images come from one GEMM
    ``E[chunk] @ Wt``, the blocks are solved one after another (a block's change
    ``dc_mu`` reaches the later images of the chunk through the chunk's Gram matrix),
    and ``Wt += E[chunk]^T dC`` applies the chunk's changes (a second GEMM).  Exact
    Gauss-Seidel: every block sees every earlier change.  The GEMMs (images, the chunk's
    Gram block, the update) run in the type of ``Wt`` (float32 or float64); images, steps
    and ``lam`` are float64.
    ``vecs`` may be a float32 copy of the constraint vectors when ``Wt`` is float32 (it only
    chooses the steps; the certificates rebuild ``W(lam)`` from the float64 vectors).
    ``Wt`` and ``lam`` are updated in place; returns the largest projected-gradient
    violation ``max |PG_i|`` met (``PG_i = 1 - m_i``, clipped at 0 where ``lam_i = 0``).
    """
    d_in = Wt.shape[0]
    d = Wt.shape[1]   # d_out (Wt is the transposed memory, d_in x d_out)
    n = order.shape[0]
    worst = 0.0
    for c0 in range(0, n, chunk):
        c1 = min(n, c0 + chunk)
        b = c1 - c0
        Eb = np.empty((b, d_in), dtype=Wt.dtype)   # the chunk's inputs, in the GEMMs' type
        for k in range(b):
            Eb[k] = E[order[c0 + k]]
        EbT = Eb.T.copy()
        Gb = np.dot(Eb, EbT)
        Yb = np.dot(Eb, Wt).astype(np.float64)
        dC = np.zeros((b, d))
        changed = False
        for k in range(b):
            mu = order[c0 + k]
            start, stop = ptr[mu], ptr[mu + 1]
            if stop == start:
                continue
            v = _input_block(Yb[k], vecs, lam, vnorm2, start, stop, np.float64(Gb[k, k]), omega, dC[k])
            if v > worst:
                worst = v
            if vnorm(dC[k]) == 0.0:
                continue
            changed = True
            for m in range(k + 1, b):
                g = np.float64(Gb[m, k])
                for j in range(d):
                    Yb[m, j] += g * dC[k, j]
        if changed:
            Wt += np.dot(EbT, dC.astype(Wt.dtype))
    return worst


@numba.njit(cache=True)
def select_rows(M, threshold, keep, out_idx, out_count, out_min):
    """Per row of margins ``M`` (targets masked as +inf): the at most ``keep`` columns
    with the smallest margins below ``threshold`` go to ``out_idx[i, :out_count[i]]``;
    ``out_min[i]`` is the row's smallest margin."""
    n, m = M.shape
    for i in range(n):
        row = M[i]
        low = np.inf
        cnt = 0
        for r in range(m):
            x = row[r]
            if x < low:
                low = x
            if x < threshold:
                cnt += 1
        out_min[i] = low
        if cnt == 0:
            out_count[i] = 0
            continue
        cand = np.empty(cnt, dtype=np.int64)
        c = 0
        for r in range(m):
            if row[r] < threshold:
                cand[c] = r
                c += 1
        if cnt > keep:
            vals = np.empty(cnt)
            for k in range(cnt):
                vals[k] = row[cand[k]]
            cand = cand[np.argsort(vals)[:keep]]
            cnt = keep
        out_count[i] = cnt
        out_idx[i, :cnt] = cand



@numba.njit(cache=True)
def combine(vecs, lams, ptr, out):
    """``out[mu, r] = sum_i lams[r, i] vecs[i]`` over the entries of input ``mu`` (float64), for
    ``k`` dual vectors ``lams`` (shape (k, n)) in one read of ``vecs`` (shape of ``out``: (p, k, d)).

    Every ``out[mu, r]`` is summed over ``i`` in increasing order whatever ``k`` is, so each
    result has the same bits as with ``k = 1``.  The read of ``vecs`` (the working set, tens
    of MB at d = 128) is what a call costs, so the dual line search builds all its
    directions in one call."""
    p, k, d = out.shape
    for mu in range(p):
        for r in range(k):
            for j in range(d):
                out[mu, r, j] = 0.0
        for i in range(ptr[mu], ptr[mu + 1]):
            for r in range(k):
                c = lams[r, i]
                if c == 0.0:
                    continue
                for j in range(d):
                    out[mu, r, j] += c * vecs[i, j]


@numba.njit(cache=True)
def set_margins(Y, vecs, ptr, out):
    """Margins ``out[i] = vecs[i] . Y[mu]`` of the working set (float64)."""
    p, d = Y.shape
    for mu in range(p):
        for i in range(ptr[mu], ptr[mu + 1]):
            s = 0.0
            for j in range(d):
                s += vecs[i, j] * Y[mu, j]
            out[i] = s
