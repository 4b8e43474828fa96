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

import numba
import numpy as np

from replica.common.checks import check_choice, check_int, check_real

from .. import _rng

from . import Solution, assess, rank_for

__all__ = ["solve_lp", "lp_nonzeros", "MAX_NONZEROS"]

MAX_NONZEROS = 2_000_000


def lp_nonzeros(d: int, p: int) -> int:
    """Nonzeros of the full LP's constraint matrix: ``p (p-1) (d+1) + p d (d+1)``."""
    return p * (p - 1) * (d + 1) + p * d * (d + 1)


@numba.njit(cache=True)
def _dp_differences(key, ensemble_code, mus, rhos, out):
    """``out[k] = u^(mus[k])_rhos[k] - u^(mus[k])_mus[k]`` (DP constraint rows)."""
    d = out.shape[1]
    target = np.empty(d)
    for k in range(mus.shape[0]):
        _rng._fill_candidate(key, ensemble_code, mus[k], rhos[k], out[k])
        _rng._fill_candidate(key, ensemble_code, mus[k], mus[k], target)
        for j in range(d):
            out[k, j] -= target[j]


def _differences(instance, mus, rhos):
    """Constraint rows ``u^(mu)_rho - u^(mu)_mu`` for the pairs ``(mus[k], rhos[k])``."""
    if instance.problem == "op":
        return instance.targets[rhos] - instance.targets[mus]
    out = np.empty((mus.size, instance.d))
    _dp_differences(instance.dp_key, instance.ensemble_code, mus.astype(np.int64),
                    rhos.astype(np.int64), out)
    return out


def _equalities(instance):
    """``y_mu[j] - sum_k W[j, k] e_mu[k] = 0`` in row ``mu d + j`` (sparse)."""
    from scipy import sparse

    d, p = instance.d, instance.p
    n_w = d * d
    n_vars = n_w + p * d + 1
    j_idx = np.arange(d)
    eq_rows = np.repeat(np.arange(p * d), d + 1)
    eq_cols = np.empty((p, d, d + 1), dtype=np.int64)
    eq_data = np.empty((p, d, d + 1))
    eq_cols[:, :, 0] = n_w + np.arange(p * d).reshape(p, d)
    eq_data[:, :, 0] = 1.0
    eq_cols[:, :, 1:] = (j_idx[:, None] * d + j_idx[None, :])[None, :, :]
    eq_data[:, :, 1:] = -instance.inputs[:, None, :]
    return sparse.csr_matrix((eq_data.ravel(), (eq_rows, eq_cols.ravel())), shape=(p * d, n_vars))


def _inequalities(instance, mus, diffs):
    """Rows ``diffs[k] . y_{mus[k]} + t <= 0`` (sparse)."""
    from scipy import sparse

    d, p = instance.d, instance.p
    n_w = d * d
    n_vars = n_w + p * d + 1
    n = mus.size
    data = np.empty((n, d + 1))
    cols = np.empty((n, d + 1), dtype=np.int64)
    data[:, :d] = diffs
    data[:, d] = 1.0
    cols[:, :d] = n_w + mus[:, None] * d + np.arange(d)[None, :]
    cols[:, d] = n_vars - 1
    rows = np.repeat(np.arange(n), d + 1)
    return sparse.csr_matrix((data.ravel(), (rows, cols.ravel())), shape=(n, n_vars))


def _all_pairs(p):
    mus = np.repeat(np.arange(p), p - 1)
    rhos = np.array([rho for mu in range(p) for rho in range(p) if rho != mu], dtype=np.int64)
    return mus, rhos


def _top_pairs(S, count, exclude=None):
    """Per input, up to ``count`` competitors with the largest ``S[rho, mu]`` (minus excluded pairs)."""
    p = S.shape[1]
    work = np.array(S, dtype=np.float64, copy=True)
    np.fill_diagonal(work, -np.inf)
    if exclude is not None:
        work[exclude] = -np.inf
    count = min(count, p - 1)
    idx = np.argpartition(-work, count - 1, axis=0)[:count]  # (count, p) row indices
    mus = np.broadcast_to(np.arange(p), idx.shape)
    vals = work[idx, mus]
    keep = np.isfinite(vals)
    return mus[keep].astype(np.int64), idx[keep].astype(np.int64), vals[keep]


def solve_lp(instance, kappa=1.0, *, tol=1e-6, time_limit=600.0, max_nonzeros=MAX_NONZEROS,
             feasibility_tolerance=1e-9, working_set=False, initial_per_input=8, add_per_input=8,
             optimum=False, max_rounds=1000, method="highs-ipm") -> Solution:
    """Decide storability exactly with an LP (full rank only).

    Parameters
    ----------
    instance : validation.Instance
    kappa : float
        Must be 1: a rank constraint is not linear.
    tol : float
        Decision threshold on the LP optimum ``t*`` (margin per unit of
        ``max |W_jk|``): stored iff ``t* > tol`` and the LP's W recalls every
        input in float64; not stored iff ``t* <= tol``.  Default 1e-6.
    time_limit : float
        Seconds for the whole solve (status ``undecided`` when they run out).
    max_nonzeros : int
        Largest constraint matrix accepted (default 2e6, about d = 32 near
        capacity; the LP time grows steeply: measured about 0.1 s at d = 8,
        a few seconds at d = 16 and minutes at d = 24).
    feasibility_tolerance : float
        HiGHS primal and dual feasibility tolerance (default 1e-9); also the
        violation above which a constraint is added to the working set.
    working_set : bool
        Constraint generation (default False; measured slower than the full LP at
        d = 16 and 24, because the p d equality rows dominate HiGHS's work): solve the LP with the
        ``initial_per_input`` strongest competitors of every input under the
        Hebbian W, add the ``add_per_input`` most violated constraints of every
        input at the LP's W, and repeat.  The relaxed optimum bounds the full one
        from above, so ``t* <= tol`` certifies non-storability at any round, and
        a W that recalls everything certifies storability.  False solves the
        full LP at once.
    initial_per_input, add_per_input : int
        Working-set sizes (default 8 each).
    optimum : bool
        Continue until no constraint is violated, so that ``t*`` is the exact LP
        optimum (default False: stop at the decision).
    max_rounds : int
        Cap on constraint-generation rounds.
    method : {"highs-ipm", "highs-ds", "highs"}
        scipy ``linprog`` method (default ``highs-ipm``, interior point with
        crossover: 77 s against 193 s for the dual simplex at d = 24, p = 110,
        same optimum to 1e-14).

    Returns
    -------
    Solution
        ``info``: ``lp_optimum`` (``t*`` of the last LP, an upper bound on the full
        optimum and equal to it when ``exact_optimum``), ``rounds``,
        ``constraints`` (rows in the last LP) and ``nonzeros``.

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

    from ..recall import recall_check

    if kappa != 1.0:
        raise ValueError(f"kappa must be 1 for solver 'lp' (a rank constraint is not a linear "
                         f"program), got {kappa!r}; use solver='optimal' for kappa < 1")
    tol = check_real(tol, "tol", low=0.0)
    time_limit = check_real(time_limit, "time_limit", low=0.0, low_open=True, allow_inf=True)
    feasibility_tolerance = check_real(feasibility_tolerance, "feasibility_tolerance",
                                       low=0.0, high=1e-3, low_open=True)
    max_nonzeros = check_int(max_nonzeros, "max_nonzeros", low=1)
    initial_per_input = check_int(initial_per_input, "initial_per_input", low=1)
    add_per_input = check_int(add_per_input, "add_per_input", low=1)
    max_rounds = check_int(max_rounds, "max_rounds", low=1)
    working_set = bool(working_set)
    method = check_choice(method, "method", ("highs-ipm", "highs-ds", "highs"))
    d, p = instance.d, instance.p
    n_eq = p * d * (d + 1)
    first = (lp_nonzeros(d, p) if not working_set
             else n_eq + p * min(p - 1, initial_per_input) * (d + 1))
    if first > max_nonzeros:
        raise ValueError(
            f"the LP for d={d}, p={p} has {first:.3g} nonzeros, more than max_nonzeros="
            f"{max_nonzeros:.3g} that solver 'lp' handles; use solver='optimal'")
    start = time.perf_counter()
    A_eq = _equalities(instance)
    b_eq = np.zeros(A_eq.shape[0])
    n_vars = A_eq.shape[1]
    c = np.zeros(n_vars)
    c[-1] = -1.0
    bounds = np.empty((n_vars, 2))
    bounds[: d * d] = (-1.0, 1.0)
    bounds[d * d:] = (-np.inf, np.inf)
    if working_set:
        mus, rhos, _ = _top_pairs(instance.scores(instance.targets.T @ instance.inputs), initial_per_input)
    else:
        mus, rhos = _all_pairs(p)
    in_set = np.zeros((p, p), dtype=bool)
    in_set[rhos, mus] = True
    diffs = _differences(instance, mus, rhos)

    W = np.zeros((d, d))
    t_opt = float("nan")
    iterations = 0
    rounds = 0
    exact = False
    failure = None
    all_recalled = False
    while True:
        rounds += 1
        remaining = time_limit - (time.perf_counter() - start)
        if remaining <= 0:
            failure = f"time limit {time_limit:g} s reached after {rounds - 1} rounds"
            break
        options = {"primal_feasibility_tolerance": feasibility_tolerance,
                   "dual_feasibility_tolerance": feasibility_tolerance}
        if np.isfinite(remaining):
            options["time_limit"] = remaining
        A_ub = _inequalities(instance, mus, diffs)
        res = linprog(c, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=A_eq, b_eq=b_eq,
                      bounds=bounds, method=method, options=options)
        iterations += int(getattr(res, "nit", 0) or 0)
        if res.status != 0 or res.x is None:
            failure = f"HiGHS did not finish (status {res.status}: {res.message})"
            break
        W = np.asarray(res.x[: d * d], dtype=np.float64).reshape(d, d).copy()
        t_opt = float(res.x[-1])
        if t_opt <= tol:
            exact = True  # the full optimum lies in [0, t_opt]: exact to within tol
            break
        S = instance.scores(W)
        recalled, _ = recall_check(S)
        all_recalled = bool(recalled.all())
        if all_recalled and not optimum:
            break
        violation = S - np.diag(S)[None, :] + t_opt
        violation[in_set] = -np.inf
        np.fill_diagonal(violation, -np.inf)
        new_mus, new_rhos, vals = _top_pairs(violation, add_per_input)
        keep = vals > feasibility_tolerance
        new_mus, new_rhos = new_mus[keep], new_rhos[keep]
        if new_mus.size == 0:
            exact = True
            break
        if rounds >= max_rounds:
            failure = f"max_rounds={max_rounds} constraint-generation rounds used"
            break
        if n_eq + (mus.size + new_mus.size) * (d + 1) > max_nonzeros:
            failure = (f"the working set outgrew max_nonzeros={max_nonzeros:.3g}; "
                       f"use solver='optimal'")
            break
        in_set[new_rhos, new_mus] = True
        mus = np.concatenate([mus, new_mus])
        rhos = np.concatenate([rhos, new_rhos])
        diffs = np.concatenate([diffs, _differences(instance, new_mus, new_rhos)])
    if not working_set and failure is None:
        exact = True

    stored, fraction, margin, _ = assess(instance, W)
    seconds = time.perf_counter() - start
    info = {"lp_optimum": t_opt if np.isfinite(t_opt) else None, "exact_optimum": bool(exact),
            "rounds": rounds, "constraints": int(mus.size),
            "nonzeros": int(n_eq + mus.size * (d + 1))}
    bound = "LP optimum" if exact or not working_set else "LP bound"
    if stored:
        status, converged = "stored", True
        message = (f"{bound} t* = {t_opt:.3e}; the LP's W recalls all {p} inputs (verified in float64)")
    elif failure is not None:
        status, converged = "undecided", False
        message = failure
    elif t_opt <= tol:
        status, converged = "not_stored", True
        message = (f"{bound} t* = {t_opt:.3e} <= tol = {tol:.1e}: no memory reaches a margin above "
                   f"tol * max|W_jk| (HiGHS-optimal relaxation of the full LP)")
    else:
        status, converged = "undecided", False
        message = (f"LP optimum t* = {t_opt:.3e} > tol = {tol:.1e} says storable, but its W recalls "
                   f"only {fraction:.4g} of the inputs in float64 (numerical feasibility violation)")
    return Solution(solver="lp", kappa=1.0, rank=rank_for(d, 1.0), W=W, factors=None,
                    stored=stored, recall_fraction=fraction, margin=margin, converged=converged,
                    iterations=iterations, seconds=seconds, status=status, message=message, info=info)
