"""Exact storability by linear programming (scipy's HiGHS), full rank, small d.

The LP (see ``notes/simulation.md``) has variables ``W`` (d x d, box
``|W_jk| <= 1``; ``d_out x d_in`` for a rectangular instance), the images
``y_mu = W e_mu`` (free, tied to W by ``p d`` (``p d_out``) equalities) and the margin
``t``; ``f(mu)`` is the target row of input ``mu`` (``mu``, or the answer map with
``outputs=K``; then ``rho`` runs over K candidates)::

    maximise t   subject to   (u^(mu)_rho - u^(mu)_f(mu))^T y_mu + t <= 0   for all mu, rho != f(mu)
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

from replica.common.checks import check_int, check_real

from ..instances import _candidate_kernels as _candidates
from .engine.solution import Solution, assess
from .engine.memories import hebbian_memory
from .engine.options import MAX_NONZEROS, LPOptions

__all__ = ["solve_lp", "lp_nonzeros", "MAX_NONZEROS", "LPOptions"]


def lp_nonzeros(d: int, p: int, outputs=None, d_in=None) -> int:
    """Nonzeros of the full LP's constraint matrix: ``p (K-1) (d+1) + p d (d+1)`` (``K = p`` by default;
    ``p (K-1) (d+1) + p d (d_in+1)`` for a rectangular memory with ``d = d_out``)."""
    n_cand = p if outputs is None else int(outputs)
    d_in = d if d_in is None else int(d_in)
    return p * (n_cand - 1) * (d + 1) + p * d * (d_in + 1)


def check_lp_size(d: int, p: int, kappa: float, options=None, n_candidates=None, d_in=None) -> None:
    """The LP's set-up checks, without an instance: full rank, and the first LP within ``max_nonzeros``.

    ``d`` is the output dimension and ``d_in`` (default ``d``) the input dimension.

    Raises
    ------
    ValueError
        For ``kappa != 1`` or a first LP with more than ``max_nonzeros`` nonzeros.
    """
    if kappa != 1.0:
        raise ValueError(f"kappa must be 1 for solver 'lp' (a rank constraint is not a linear "
                         f"program), got {kappa!r}; use solver='optimal' for kappa < 1")
    o = LPOptions.coerce(options)
    n_cand = p if n_candidates is None else int(n_candidates)
    d_in = d if d_in is None else int(d_in)
    first = (lp_nonzeros(d, p, n_cand, d_in) if not o.working_set
             else p * d * (d_in + 1) + p * min(n_cand - 1, o.initial_per_input) * (d + 1))
    if first > o.max_nonzeros:
        raise ValueError(f"the LP for d={d}, p={p} has {first:.3g} nonzeros, more than max_nonzeros="
                         f"{o.max_nonzeros:.3g} that solver 'lp' handles; use solver='optimal'")


def _differences(instance, mus, rhos):
    """Constraint rows ``u^(mu)_rho - u^(mu)_f(mu)`` for the pairs ``(mus[k], rhos[k])``."""
    if instance.problem == "op":
        return instance.table[rhos] - instance.targets[mus]
    # DP: the target u^(mu)_f(mu) is targets[mu], bit for bit (to rounding with an output covariance)
    if instance.output_root is not None:
        return instance.candidate_pairs(mus, rhos) - instance.targets[mus]
    pairs = _candidates.dp_pairs(instance.dp_key, instance.candidate_code, mus, rhos, instance.d_out)
    return pairs - instance.targets[mus]


def _equalities(instance):
    """``y_mu[j] - sum_k W[j, k] e_mu[k] = 0`` in row ``mu d_out + j`` (sparse; W row-major)."""
    from scipy import sparse

    d, d_in, p = instance.d_out, instance.d_in, instance.p
    n_w = d * d_in
    n_vars = n_w + p * d + 1
    eq_rows = np.repeat(np.arange(p * d), d_in + 1)
    eq_cols = np.empty((p, d, d_in + 1), dtype=np.int64)
    eq_data = np.empty((p, d, d_in + 1))
    eq_cols[:, :, 0] = n_w + np.arange(p * d).reshape(p, d)
    eq_data[:, :, 0] = 1.0
    eq_cols[:, :, 1:] = (np.arange(d)[:, None] * d_in + np.arange(d_in)[None, :])[None, :, :]
    eq_data[:, :, 1:] = -instance.inputs[:, None, :]
    return sparse.csr_matrix((eq_data.ravel(), (eq_rows, eq_cols.ravel())), shape=(p * d, n_vars))


def _inequalities(instance, mus, diffs):
    """Rows ``diffs[k] . y_{mus[k]} + t <= 0`` (sparse)."""
    from scipy import sparse

    d, p = instance.d_out, instance.p
    n_w = d * instance.d_in
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


def _all_pairs(instance):
    """Every (input, competitor) pair, grouped by input."""
    n_cand, target = instance.n_candidates, instance.target_index
    mus = np.repeat(np.arange(instance.p), n_cand - 1)
    rhos = np.array([rho for mu in range(instance.p) for rho in range(n_cand) if rho != target[mu]],
                    dtype=np.int64)
    return mus, rhos


def _top_pairs(S, target, count, exclude=None):
    """Per input, up to ``count`` competitors with the largest ``S[rho, mu]`` (minus excluded pairs)."""
    p = S.shape[1]
    work = np.array(S, dtype=np.float64, copy=True)
    work[target, np.arange(p)] = -np.inf
    if exclude is not None:
        work[exclude] = -np.inf
    count = min(count, S.shape[0] - 1)
    idx = np.argpartition(-work, count - 1, axis=0)[:count]  # (count, p) row indices
    mus = np.broadcast_to(np.arange(p), idx.shape)
    vals = work[idx, mus]
    keep = np.isfinite(vals)
    return mus[keep].astype(np.int64), idx[keep].astype(np.int64), vals[keep]


class _LP:
    """The LP of one instance: fixed equalities, bounds and objective; one HiGHS solve per round.

    After each :meth:`solve`, ``W`` and ``t_opt`` hold the LP's memory and optimum;
    ``failure`` says why a round did not finish (time limit, HiGHS status).
    """

    def __init__(self, instance, options, time_limit, start):
        self.instance = instance
        self.options = options
        self.time_limit = time_limit
        self.start = start
        d = instance.d_out * instance.d_in   # entries of W
        self.A_eq = _equalities(instance)
        self.b_eq = np.zeros(self.A_eq.shape[0])
        n_vars = self.A_eq.shape[1]
        self.c = np.zeros(n_vars)
        self.c[-1] = -1.0
        self.bounds = np.empty((n_vars, 2))
        self.bounds[:d] = (-1.0, 1.0)
        self.bounds[d:] = (-np.inf, np.inf)
        self.W = np.zeros(instance.shape)
        self.t_opt = float("nan")
        self.iterations = 0
        self.rounds = 0
        self.failure = None
        self.exact = False

    def solve(self, mus, diffs) -> bool:
        """Solve with the inequality rows ``(mus, diffs)``; False (and ``failure``) if it did not finish."""
        from scipy.optimize import linprog

        self.rounds += 1
        remaining = self.time_limit - (time.perf_counter() - self.start)
        if remaining <= 0:
            self.failure = f"time limit {self.time_limit:g} s reached after {self.rounds - 1} rounds"
            return False
        tolerance = self.options.feasibility_tolerance
        highs = {"primal_feasibility_tolerance": tolerance, "dual_feasibility_tolerance": tolerance}
        if np.isfinite(remaining):
            highs["time_limit"] = remaining
        A_ub = _inequalities(self.instance, mus, diffs)
        res = linprog(self.c, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=self.A_eq, b_eq=self.b_eq,
                      bounds=self.bounds, method=self.options.method, options=highs)
        self.iterations += int(getattr(res, "nit", 0) or 0)
        if res.status != 0 or res.x is None:
            if res.status == 1 and "time limit" in str(res.message).lower():
                self.failure = (f"time limit {self.time_limit:g} s reached inside HiGHS in round "
                                f"{self.rounds} ({res.message})")
            else:
                self.failure = f"HiGHS did not finish (status {res.status}: {res.message})"
            return False
        shape = self.instance.shape
        self.W = np.asarray(res.x[: shape[0] * shape[1]], dtype=np.float64).reshape(shape).copy()
        self.t_opt = float(res.x[-1])
        return True


def _full_lp(lp):
    """All ``p (p - 1)`` constraints at once; returns the number of constraint rows."""
    mus, rhos = _all_pairs(lp.instance)
    if lp.solve(mus, _differences(lp.instance, mus, rhos)):
        lp.exact = True
    return int(mus.size)


def _constraint_generation(lp, tol, max_iter):
    """Grow the constraint set from the Hebbian W's strongest competitors until decided.

    The relaxed optimum bounds the full one from above, so ``t* <= tol`` certifies
    non-storability at any round, and a W that recalls everything certifies
    storability.  Returns the number of constraint rows of the last LP.
    """
    from ..measurements.recall import recall_check

    instance, o = lp.instance, lp.options
    d, p = instance.d_out, instance.p
    n_eq = p * d * (instance.d_in + 1)
    target, columns = instance.target_index, np.arange(p)
    mus, rhos, _ = _top_pairs(instance.scores(hebbian_memory(instance.targets, instance.inputs)), target,
                              o.initial_per_input)
    in_set = np.zeros((instance.n_candidates, p), dtype=bool)
    in_set[rhos, mus] = True
    diffs = _differences(instance, mus, rhos)
    while lp.solve(mus, diffs):
        if lp.t_opt <= tol:
            lp.exact = True  # the full optimum lies in [0, t_opt]: exact to within tol
            break
        S = instance.scores(lp.W)
        recalled, _ = recall_check(S, target)
        if recalled.all() and not o.optimum:
            break
        violation = S - S[target, columns][None, :] + lp.t_opt
        violation[in_set] = -np.inf
        new_mus, new_rhos, vals = _top_pairs(violation, target, o.add_per_input)
        keep = vals > o.feasibility_tolerance
        new_mus, new_rhos = new_mus[keep], new_rhos[keep]
        if new_mus.size == 0:
            lp.exact = True
            break
        if lp.rounds >= max_iter:
            lp.failure = f"max_iter={max_iter} constraint-generation rounds used"
            break
        if n_eq + (mus.size + new_mus.size) * (d + 1) > o.max_nonzeros:
            lp.failure = f"the working set outgrew max_nonzeros={o.max_nonzeros:.3g}; use solver='optimal'"
            break
        in_set[new_rhos, new_mus] = True
        mus = np.concatenate([mus, new_mus])
        rhos = np.concatenate([rhos, new_rhos])
        diffs = np.concatenate([diffs, _differences(instance, new_mus, new_rhos)])
    return int(mus.size)


def _lp_solution(lp, constraints, tol):
    """The float64-verified :class:`Solution` of a finished (or failed) LP run."""
    instance, o = lp.instance, lp.options
    d, p = instance.d_out, instance.p
    W, t_opt = lp.W, lp.t_opt
    stored, fraction, margin, _ = assess(instance, W)
    info = {"lp_optimum": t_opt if np.isfinite(t_opt) else None, "exact_optimum": bool(lp.exact),
            "rounds": lp.rounds, "constraints": constraints,
            "nonzeros": int(p * d * (instance.d_in + 1) + constraints * (d + 1))}
    bound = "LP optimum" if lp.exact or not o.working_set else "LP bound"
    if stored:
        status = "stored"
        message = f"{bound} t* = {t_opt:.3e}; the LP's W recalls all {p} inputs (verified in float64)"
    elif lp.failure is not None:
        status = "undecided"
        message = lp.failure
    elif t_opt <= tol:
        status = "not_stored"
        message = (f"{bound} t* = {t_opt:.3e} <= tol = {tol:.1e}: no memory reaches a margin above "
                   f"tol * max|W_jk| (HiGHS-optimal relaxation of the full LP)")
    else:
        status = "undecided"
        message = (f"LP optimum t* = {t_opt:.3e} > tol = {tol:.1e} says storable, but its W recalls "
                   f"only {fraction:.4g} of the inputs in float64 (numerical feasibility violation)")
    return Solution(solver="lp", kappa=1.0, rank=min(d, instance.d_in), W=W, factors=None,
                    stored=stored, recall_fraction=fraction, margin=margin,
                    converged=status != "undecided", iterations=lp.iterations,
                    seconds=time.perf_counter() - lp.start, status=status, message=message, info=info)


def solve_lp(instance, kappa=1.0, *, tol=1e-6, max_iter=1000, time_limit=600.0, options=None) -> Solution:
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
    max_iter : int
        Cap on constraint-generation rounds (``options.working_set``; default 1000).
    time_limit : float or None
        Seconds for the whole solve (default 600; None: no limit); status
        ``undecided`` when they run out.
    options : LPOptions or mapping, optional
        Size limit, HiGHS tolerance and method, constraint generation
        (:class:`validation.solvers.LPOptions`).

    Returns
    -------
    Solution
        ``info``: ``lp_optimum`` (``t*`` of the last LP, an upper bound on the full
        optimum and equal to it when ``exact_optimum``), ``rounds``,
        ``constraints`` (rows in the last LP) and ``nonzeros``.  ``converged`` is
        True exactly for the decisions ``stored`` and ``not_stored``.

    Raises
    ------
    ValueError
        For ``kappa < 1``, bad options, or an LP larger than ``max_nonzeros``
        (use ``solver="optimal"`` instead).

    Notes
    -----
    See ``notes/simulation.md`` (the LP solver).
    """
    check_lp_size(instance.d_out, instance.p, kappa, options, instance.n_candidates, instance.d_in)
    tol = check_real(tol, "tol", low=0.0)
    max_iter = check_int(max_iter, "max_iter", low=1)
    time_limit = np.inf if time_limit is None else check_real(time_limit, "time_limit", low=0.0,
                                                               low_open=True, allow_inf=True)
    options = LPOptions.coerce(options)
    lp = _LP(instance, options, time_limit, time.perf_counter())
    if options.working_set:
        constraints = _constraint_generation(lp, tol, max_iter)
    else:
        constraints = _full_lp(lp)
    return _lp_solution(lp, constraints, tol)
