"""Exact storability by linear programming (scipy's HiGHS), full rank, small d.

The LP (see ``notes/simulation.md``) has variables ``W`` (d x d, box
``|W_jk| <= 1``), the images ``y_mu = W e_mu`` (free, tied to W by ``p d``
equalities) and the margin ``t``::

    maximise t   subject to   (u^(mu)_rho - u^(mu)_mu)^T y_mu + t <= 0   for all mu, rho != mu
                              y_mu - W e_mu = 0                            for all mu
                              -1 <= W_jk <= 1

The optimum ``t*`` is the largest margin reachable by a memory whose largest
entry is 1 (``max_W min margin / max|W_jk|``, scale invariance).  The instance is
storable iff ``t* > 0``; the solver reports ``stored`` when ``t* > tol`` *and*
the returned W recalls every input in float64, and ``not_stored`` when
``t* <= tol``: no W has margin larger than ``tol * max_jk |W_jk|``.  Lifting the
images keeps the constraint matrix sparse: ``p (p - 1) (d + 1) + p d (d + 1)``
nonzeros instead of ``p (p - 1) (d^2 + 1)``.
"""

from __future__ import annotations

import time

import numpy as np

from replica._checks import check_real

from . import Solution, assess, rank_for

__all__ = ["solve_lp", "lp_nonzeros", "MAX_NONZEROS"]

MAX_NONZEROS = 30_000_000
_OPTIONS = ("tol", "time_limit", "max_nonzeros", "feasibility_tolerance")


def lp_nonzeros(d: int, p: int) -> int:
    """Nonzeros of the LP's constraint matrix: ``p (p-1) (d+1) + p d (d+1)``."""
    return p * (p - 1) * (d + 1) + p * d * (d + 1)


def _build(instance):
    from scipy import sparse

    d, p = instance.d, instance.p
    n_w = d * d
    n_vars = n_w + p * d + 1
    t_col = n_vars - 1
    # inequality rows: mu * (p - 1) + k, k over rho != mu
    per_row = d + 1
    rows_per_mu = p - 1
    nnz = p * rows_per_mu * per_row
    data = np.empty(nnz)
    cols = np.empty(nnz, dtype=np.int64)
    rows = np.empty(nnz, dtype=np.int64)
    j_idx = np.arange(d)
    for mu in range(p):
        cand = instance.candidates(mu)
        diff = np.delete(cand, mu, axis=0) - cand[mu]  # (p-1, d)
        block = np.empty((rows_per_mu, per_row))
        block[:, :d] = diff
        block[:, d] = 1.0
        bcols = np.empty((rows_per_mu, per_row), dtype=np.int64)
        bcols[:, :d] = n_w + mu * d + j_idx
        bcols[:, d] = t_col
        brows = np.repeat(np.arange(mu * rows_per_mu, (mu + 1) * rows_per_mu), per_row).reshape(rows_per_mu, per_row)
        sl = slice(mu * rows_per_mu * per_row, (mu + 1) * rows_per_mu * per_row)
        data[sl] = block.ravel()
        cols[sl] = bcols.ravel()
        rows[sl] = brows.ravel()
    A_ub = sparse.csr_matrix((data, (rows, cols)), shape=(p * rows_per_mu, n_vars))
    # equalities: y_mu[j] - sum_k W[j, k] e_mu[k] = 0, row mu * d + j
    E = instance.inputs
    eq_rows = np.repeat(np.arange(p * d), d + 1)
    eq_cols = np.empty((p, d, d + 1), dtype=np.int64)
    eq_data = np.empty((p, d, d + 1))
    eq_cols[:, :, 0] = n_w + np.arange(p * d).reshape(p, d)
    eq_data[:, :, 0] = 1.0
    eq_cols[:, :, 1:] = (j_idx[:, None] * d + j_idx[None, :])[None, :, :]
    eq_data[:, :, 1:] = -E[:, None, :]
    A_eq = sparse.csr_matrix((eq_data.ravel(), (eq_rows, eq_cols.ravel())), shape=(p * d, n_vars))
    c = np.zeros(n_vars)
    c[t_col] = -1.0
    bounds = np.empty((n_vars, 2))
    bounds[:n_w] = (-1.0, 1.0)
    bounds[n_w:] = (-np.inf, np.inf)
    return c, A_ub, np.zeros(A_ub.shape[0]), A_eq, np.zeros(A_eq.shape[0]), bounds


def solve_lp(instance, kappa=1.0, *, tol=1e-6, time_limit=600.0, max_nonzeros=MAX_NONZEROS,
             feasibility_tolerance=1e-9) -> Solution:
    """Decide storability exactly with an LP (full rank only).

    Parameters
    ----------
    instance : validation.Instance
    kappa : float
        Must be 1: a rank constraint is not linear.
    tol : float
        Decision threshold on the LP optimum ``t*`` (margin per unit of
        ``max |W_jk|``): stored iff ``t* > tol`` (and verified), default 1e-6.
    time_limit : float
        Seconds given to HiGHS (status ``undecided`` when it runs out).
    max_nonzeros : int
        Largest constraint matrix accepted (default 3e7, a few GB inside HiGHS).
    feasibility_tolerance : float
        HiGHS primal and dual feasibility tolerance (default 1e-9).

    Returns
    -------
    Solution
        ``info`` holds ``lp_optimum`` (``t*``), ``nonzeros`` and the HiGHS message.

    Raises
    ------
    ValueError
        For ``kappa < 1``, bad options, or an LP larger than ``max_nonzeros``
        (use ``solver="optimal"`` instead).

    Notes
    -----
    See ``notes/simulation.md`` (the LP solver).
    """
    from scipy.optimize import linprog

    if kappa != 1.0:
        raise ValueError(f"kappa must be 1 for solver 'lp' (a rank constraint is not a linear "
                         f"program), got {kappa!r}; use solver='optimal' for kappa < 1")
    tol = check_real(tol, "tol", low=0.0)
    time_limit = check_real(time_limit, "time_limit", low=0.0, low_open=True, allow_inf=True)
    feasibility_tolerance = check_real(feasibility_tolerance, "feasibility_tolerance",
                                       low=0.0, high=1e-3, low_open=True)
    d, p = instance.d, instance.p
    nnz = lp_nonzeros(d, p)
    if nnz > max_nonzeros:
        raise ValueError(
            f"the LP for d={d}, p={p} has {nnz:.3g} nonzeros, more than max_nonzeros="
            f"{max_nonzeros:.3g} that solver 'lp' handles; use solver='optimal'")
    start = time.perf_counter()
    c, A_ub, b_ub, A_eq, b_eq, bounds = _build(instance)
    options = {"primal_feasibility_tolerance": feasibility_tolerance,
               "dual_feasibility_tolerance": feasibility_tolerance}
    if np.isfinite(time_limit):
        options["time_limit"] = time_limit
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                  method="highs", options=options)
    iterations = int(getattr(res, "nit", 0) or 0)
    info = {"nonzeros": int(nnz), "highs_status": int(res.status), "highs_message": str(res.message)}
    if res.x is None:
        W = np.zeros((d, d))
        t_opt = float("nan")
    else:
        W = np.asarray(res.x[: d * d], dtype=np.float64).reshape(d, d).copy()
        t_opt = float(res.x[-1])
    info["lp_optimum"] = t_opt if np.isfinite(t_opt) else None
    stored, fraction, margin, _ = assess(instance, W)
    seconds = time.perf_counter() - start
    converged = res.status == 0
    if not converged:
        status = "undecided"
        message = f"HiGHS did not finish (status {res.status}: {res.message})"
    elif t_opt > tol and stored:
        status = "stored"
        message = f"LP optimum t* = {t_opt:.3e} > tol = {tol:.1e}; its W recalls all inputs (float64)"
    elif stored:
        status = "stored"
        message = (f"LP optimum t* = {t_opt:.3e} <= tol = {tol:.1e}, but its W recalls all inputs "
                   f"in float64 (a margin this small is at the edge of the LP's precision)")
    elif t_opt > tol:
        status = "undecided"
        message = (f"LP optimum t* = {t_opt:.3e} > tol = {tol:.1e} says storable, but its W recalls "
                   f"only {fraction:.4g} of the inputs in float64 (numerical feasibility violation)")
    else:
        status = "not_stored"
        message = (f"LP optimum t* = {t_opt:.3e} <= tol = {tol:.1e}: no memory reaches a margin above "
                   f"tol * max|W_jk| (certified by HiGHS optimality)")
    return Solution(solver="lp", kappa=1.0, rank=rank_for(d, 1.0), W=W, factors=None,
                    stored=stored, recall_fraction=fraction, margin=margin, converged=converged,
                    iterations=iterations, seconds=seconds, status=status, message=message, info=info)
