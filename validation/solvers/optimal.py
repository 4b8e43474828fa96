"""The ``optimal`` solver: first-order (L-BFGS) decision of storability and max-margin W.

Full rank (``kappa = 1``)
-------------------------
An instance is stored by ``W`` when every margin
``m_i(W) = a_i . W = (t_mu - u_rho)^T W e_mu`` (input ``mu``, competitor
``rho != mu``, target ``t_mu``) is positive.  The solver minimises the convex
squared hinge ``f(W) = sum_i (1 - m_i(W))_+^2`` (plus, in the refinement phase, a
ridge ``lam ||W||_F^2``) with L-BFGS and an exact line search (``f`` is piecewise
quadratic along a line).  Two certificates decide the instance:

* **stored**: the current ``W`` recalls every input, checked in float64 on all
  ``p (p - 1)`` constraints (exact argmax; a tie counts as a failure);
* **not stored**: for any weights ``lam_i >= 0`` (not all zero) and any ``W``,
  ``min_i m_i(W) <= <sum_i lam_i a_i, W> / sum_i lam_i <= ||sum_i lam_i a_i||_F ||W||_F / sum_i lam_i``.
  With ``lam_i = (1 - m_i)_+`` (the squared-hinge residuals; at the minimiser of an
  infeasible instance ``sum_i lam_i a_i = 0``) this bounds the best normalised
  margin ``d min_i m_i(W) / ||W||_F`` of *every* ``W`` by
  ``margin_bound = d ||sum_i lam_i a_i||_F / sum_i lam_i``.  When
  ``margin_bound <= tol`` the instance is reported ``not_stored``: no ``W``
  reaches a normalised margin above ``tol`` (in competitor-standard-deviation
  units).  The bound is recomputed in float64 before it is reported.

If the budget ends first, the status is ``undecided``.

After ``stored`` the solver optionally (``refine=True``, the default) follows the
ridge path ``lam -> 0`` (the L2-SVM continuation), whose limit is the max-margin
``W`` (minimum ``||W||_F`` with all margins >= 1).  The same bound gives a
certified optimality gap: the reported ``margin`` is within
``margin_bound - margin`` of the optimum; refinement stops when the relative gap
is below ``refine_tol``.

Rank ``m = max(1, round(kappa d))`` (``kappa < 1``)
----------------------------------------------------
``W = Q R^T`` with ``Q, R`` of shape ``(d, m)``, the same loss over the factors
(non-convex).  ``stored`` is certified by recall as above.  ``not_stored`` is
reported only when the full-rank bound above (valid for every ``W``, so for every
rank-m ``W``) is below ``tol``, which is rare; otherwise the status is
``undecided`` when the budget ends, or when L-BFGS reaches a stationary point
of the factor problem without storing the instance.

Speed
-----
Constraints are handled on a *working set*: for each input the competitors whose
margin lies below ``1 + active_slack * sigma`` (``sigma = ||W||_F / d`` is the
standard deviation of a competitor score), at most ``max_active`` per input.
L-BFGS iterates on the working set (numba kernels, ``validation._optimal_kernels``),
and a full pass over all ``p (p - 1)`` constraints (blocked float32 GEMM for OP,
regenerated candidates for DP; the ``p x p`` score matrix is never held) refreshes
the working set every ``refresh`` iterations, and whenever the working set is
recalled or its problem has converged.  Decisions are taken only on full passes
and checked in float64.  See ``notes/optimal_solver.md``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from replica.common.checks import check_choice, check_int, check_kappa, check_real
from validation import _optimal_kernels as _k

__all__ = ["solve_optimal", "DEFAULT_OPTIONS"]

DEFAULT_OPTIONS = {
    "max_iterations": 20000,
    "time_limit": None,
    "tol": 1e-3,
    "refine": True,
    "refine_tol": 0.02,
    "refine_iterations": 3000,
    "stage_tol": 1e-2,
    "initial": None,
    "active_slack": 1.0,
    "max_active": 64,
    "refresh": 25,
    "memory": 10,
    "block_elements": 1 << 23,
}


# ----------------------------------------------------------------------------------
# problem data and full passes
# ----------------------------------------------------------------------------------


class _Problem:
    """Arrays of one instance in the form the kernels want (no d p^2 storage)."""

    def __init__(self, instance):
        self.d = int(instance.d)
        self.p = int(instance.p)
        self.problem = str(instance.problem)
        self.inputs = np.ascontiguousarray(instance.inputs, dtype=np.float64)
        self.targets = np.ascontiguousarray(instance.targets, dtype=np.float64)
        self.targets32 = self.targets.astype(np.float32)
        if self.inputs.shape != (self.p, self.d) or self.targets.shape != (self.p, self.d):
            raise ValueError(
                f"instance arrays must have shape (p, d) = ({self.p}, {self.d}); got inputs "
                f"{self.inputs.shape} and targets {self.targets.shape}")
        if self.problem == "dp":
            self.key = np.uint64(instance.dp_key)
            self.code = int(instance.ensemble_code)
        elif self.problem != "op":
            raise ValueError(f"instance.problem must be 'op' or 'dp', got {self.problem!r}")

    # images of the inputs: Y[mu] = W e_mu
    def images(self, W):
        return self.inputs @ W.T

    def rows_per_block(self, block_elements):
        return max(1, min(self.p, int(block_elements) // max(self.p, 1)))

    def block_margins(self, Y, start, stop, exact):
        """Margins (stop - start, p) of inputs start..stop-1 against all candidates.

        The diagonal (the target against itself) is set to +inf.  ``exact`` selects
        float64 (verification) over float32 (search) for OP; DP is always float64.
        """
        rows = np.arange(start, stop)
        if self.problem == "op":
            if exact:
                S = Y[start:stop] @ self.targets.T
            else:
                S = Y[start:stop].astype(np.float32) @ self.targets32.T
            t = S[np.arange(stop - start), rows].copy()
            M = t[:, None] - S
        else:
            M = np.empty((stop - start, self.p))
            _k.dp_block_margins(self.key, self.code, np.ascontiguousarray(Y[start:stop]),
                                self.targets, rows.astype(np.int64), self.p, M)
        M[np.arange(stop - start), rows] = np.inf
        return M


class _WorkingSet:
    """Constraints (mu, rho) grouped by input: ptr (p+1), rows, cols, DP vectors."""

    def __init__(self, prob, rows, cols):
        self.prob = prob
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if rows.size > 1 and np.any(rows[1:] < rows[:-1]):
            order = np.argsort(rows, kind="stable")
            rows, cols = rows[order], cols[order]
        self.rows = rows
        self.cols = cols
        counts = np.bincount(self.rows, minlength=prob.p)
        self.ptr = np.zeros(prob.p + 1, dtype=np.int64)
        np.cumsum(counts, out=self.ptr[1:])
        self.size = int(self.rows.size)
        # dense GEMM path when the working set covers much of a small score matrix
        self.dense = (prob.problem == "op" and prob.p * prob.p <= (1 << 22)
                      and self.size >= 0.2 * prob.p * (prob.p - 1))
        if self.dense:
            self._flat = self.rows * prob.p + self.cols
            self._diag = np.arange(prob.p) * (prob.p + 1)
        # competitor vectors of the entries: rows ``index`` of ``table`` (OP: the shared
        # outputs; DP: the entries' own candidates, regenerated here)
        if prob.problem == "dp":
            self.table = np.empty((self.size, prob.d), dtype=np.float32)
            if self.size:
                _k.dp_fill_pairs(prob.key, prob.code, self.rows, self.cols, self.table)
            self.index = np.arange(self.size)
        else:
            self.table = prob.targets32
            self.index = self.cols
        self._combine = np.empty((prob.p, prob.d))

    def margins(self, Y):
        Y32 = np.ascontiguousarray(Y, dtype=np.float32)
        out = np.empty(self.size)
        if self.size == 0:
            return out
        if self.dense:
            S = (Y32 @ self.prob.targets32.T).ravel()  # S[mu * p + rho] = u_rho . W e_mu
            np.subtract(np.take(S, self._diag)[self.rows], np.take(S, self._flat), out=out)
        else:
            _k.active_margins(Y32, self.prob.targets32, self.table, self.ptr, self.index, out)
        return out

    def combine(self, coef, exact=False):
        """sum_i coef_i a_i as a (d, d) matrix (float64; ``exact`` uses float64 vectors)."""
        V = self._combine
        prob = self.prob
        if self.size and self.dense and not exact:
            C = np.zeros(prob.p * prob.p, dtype=np.float32)
            C[self._flat] = coef.astype(np.float32)
            C = C.reshape(prob.p, prob.p)
            V[:] = prob.targets32 * C.sum(axis=1, dtype=np.float64)[:, None]
            V -= C @ prob.targets32
        elif self.size and not exact:
            _k.active_combine(coef, prob.targets32, self.table, self.ptr, self.index, V)
        elif self.size and prob.problem == "op":
            _k.active_combine(coef, prob.targets, prob.targets, self.ptr, self.cols, V)
        elif self.size:  # DP in float64: regenerate the vectors of the nonzero terms
            keep = np.flatnonzero(coef)
            vec = np.empty((keep.size, prob.d))
            _k.dp_fill_pairs(prob.key, prob.code, self.rows[keep], self.cols[keep], vec)
            ptr = np.zeros(prob.p + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.rows[keep], minlength=prob.p), out=ptr[1:])
            _k.active_combine(coef[keep], prob.targets, vec, ptr, np.arange(keep.size), V)
        else:
            V[:] = 0.0
        return V.T @ prob.inputs


class _PassResult:
    """What a full pass returns: the new working set and statistics of all constraints."""

    __slots__ = ("ws", "min_margin", "loss", "violated")

    def __init__(self, ws, min_margin, loss, violated):
        self.ws = ws                  # _WorkingSet
        self.min_margin = min_margin  # smallest margin (float32 search precision for OP)
        self.loss = loss              # full squared hinge sum_i (1 - m_i)_+^2
        self.violated = violated      # per input: number of margins below 1 (int64, p)


def _full_pass(prob, W, threshold, max_active, block_elements):
    """Scan all constraints: new working set, smallest margin, full loss, violations per input."""
    Y = prob.images(W)
    step = prob.rows_per_block(block_elements)
    keep = min(prob.p - 1, int(max_active))
    rows_list, cols_list = [], []
    min_margin = np.inf
    loss = 0.0
    violated = np.empty(prob.p, dtype=np.int64)
    if prob.problem == "op":
        Y32 = Y.astype(np.float32)
        idx = np.empty((step, max(keep, 1)), dtype=np.int64)
        cnt = np.empty(step, dtype=np.int64)
        mins = np.empty(step)
        losses = np.empty(step)
    for start in range(0, prob.p, step):
        stop = min(prob.p, start + step)
        if prob.problem == "op":
            n = stop - start
            S = Y32[start:stop] @ prob.targets32.T
            _k.select_block(S, start, threshold, keep, idx[:n], cnt[:n], mins[:n], losses[:n],
                            violated[start:stop])
            min_margin = min(min_margin, float(mins[:n].min()))
            loss += float(losses[:n].sum())
            r = np.repeat(np.arange(n), cnt[:n])
            cols = idx[:n][np.arange(idx.shape[1])[None, :] < cnt[:n, None]]
            rows_list.append(r + start)
            cols_list.append(cols)
            continue
        M = prob.block_margins(Y, start, stop, exact=False)
        min_margin = min(min_margin, float(M.min()))
        below = M < 1.0
        violated[start:stop] = below.sum(axis=1)
        loss += float(np.square(1.0 - M[below]).sum())
        if keep < prob.p - 1:
            part = np.argpartition(M, keep - 1, axis=1)[:, :keep]
            vals = np.take_along_axis(M, part, axis=1)
            r, c = np.nonzero(vals < threshold)
            cols = part[r, c]
        else:
            r, cols = np.nonzero(M < threshold)
        rows_list.append(r + start)
        cols_list.append(cols)
    rows = np.concatenate(rows_list) if rows_list else np.empty(0, np.int64)
    cols = np.concatenate(cols_list) if cols_list else np.empty(0, np.int64)
    return _PassResult(_WorkingSet(prob, rows, cols), min_margin, loss, violated)


def _exact_min_margins(prob, W, block_elements):
    """float64 per-input smallest margin min_{rho != mu} (t_mu - u_rho) . W e_mu."""
    Y = prob.images(W)
    step = prob.rows_per_block(block_elements)
    out = np.empty(prob.p)
    for start in range(0, prob.p, step):
        stop = min(prob.p, start + step)
        out[start:stop] = prob.block_margins(Y, start, stop, exact=True).min(axis=1)
    return out


# ----------------------------------------------------------------------------------
# optimisation pieces
# ----------------------------------------------------------------------------------


def _line_search(m0, m1, m2, ridge, poly):
    """Minimise h(t) = sum (1 - m0 - t m1 - t^2 m2)_+^2 + ridge * poly(t) over t >= 0.

    ``poly`` = (c0, c1, c2, c3, c4) of ``||W(t)||_F^2``; ``m2 = None`` for a straight
    line (then ``h`` is convex and piecewise quadratic, and safeguarded Newton ends in a
    few steps).  Returns (t, h(t)); t = 0 when the direction is not a descent direction.
    One numba call (``_optimal_kernels.line_search``).
    """
    quadratic = m2 is not None
    t, v = _k.line_search(m0, m1, m2 if quadratic else m1, quadratic, float(ridge),
                          np.asarray(poly, dtype=np.float64))
    return float(t), float(v)


class _LBFGS:
    """L-BFGS history in a ring buffer; the two-loop recursion is one numba call."""

    def __init__(self, memory):
        self.memory = int(memory)
        self.S = self.Y = None
        self.rho = np.zeros(self.memory)
        self.count = 0  # pairs stored
        self.head = 0   # slot of the next pair

    def reset(self):
        self.count = 0
        self.head = 0

    def update(self, s, y):
        sy = _dot(s, y)
        if sy <= 1e-12 * _dot(y, y) or not np.isfinite(sy):
            return
        if self.S is None or self.S.shape[1] != s.size:
            self.S = np.empty((self.memory, s.size))
            self.Y = np.empty((self.memory, s.size))
            self.count = self.head = 0
        self.S[self.head] = s.ravel()
        self.Y[self.head] = y.ravel()
        self.rho[self.head] = 1.0 / sy
        self.head = (self.head + 1) % self.memory
        self.count = min(self.count + 1, self.memory)

    def direction(self, g):
        g = np.ascontiguousarray(g, dtype=np.float64)
        if self.count == 0:
            return -g
        q = np.empty_like(g)
        _k.lbfgs_direction(self.S, self.Y, self.rho, self.head, self.count, g, q)
        return q


class _Params:
    """Unknowns: W (full rank) or (Q, R) (rank m); maps vectors <-> matrices."""

    def __init__(self, d, rank):
        self.d = d
        self.rank = rank
        self.factored = rank < d

    def W(self, x):
        if not self.factored:
            return x.reshape(self.d, self.d)
        Q, R = self.split(x)
        return Q @ R.T

    def split(self, x):
        n = self.d * self.rank
        return x[:n].reshape(self.d, self.rank), x[n:].reshape(self.d, self.rank)

    def grad(self, x, G):
        if not self.factored:
            return G.ravel()
        Q, R = self.split(x)
        return np.concatenate([(G @ R).ravel(), (G.T @ Q).ravel()])

    def line_terms(self, x, direction):
        """D1, D2 with W(x + t dir) = W + t D1 + t^2 D2."""
        if not self.factored:
            return direction.reshape(self.d, self.d), None
        Q, R = self.split(x)
        dQ, dR = self.split(direction)
        return dQ @ R.T + Q @ dR.T, dQ @ dR.T


def _norm_poly(W, D1, D2):
    """Coefficients of ||W + t D1 + t^2 D2||_F^2 in t (degree 4)."""
    ww, w1, d11 = _dot(W, W), _dot(W, D1), _dot(D1, D1)
    if D2 is None:
        return (ww, 2 * w1, d11, 0.0, 0.0)
    w2, d12, d22 = _dot(W, D2), _dot(D1, D2), _dot(D2, D2)
    return (ww, 2 * w1, d11 + 2 * w2, 2 * d12, d22)


# ----------------------------------------------------------------------------------
# the solver
# ----------------------------------------------------------------------------------


# a working-set round is undone when the full loss rises above its lowest value so far
# (by more than _EARLY_RISE x during the first _EARLY_PASSES full passes) while the cap
# truncates violated constraints (notes/optimal_solver.md, section 7)
_EARLY_RISE = 3.0
_EARLY_PASSES = 3


def _check_options(options):
    unknown = set(options) - set(DEFAULT_OPTIONS)
    if unknown:
        raise ValueError(f"unknown option(s) for solver 'optimal': {sorted(unknown)}; "
                         f"valid options are {sorted(DEFAULT_OPTIONS)}")
    o = dict(DEFAULT_OPTIONS)
    o.update(options)
    o["max_iterations"] = check_int(o["max_iterations"], "max_iterations", low=1)
    if o["time_limit"] is not None:
        o["time_limit"] = check_real(o["time_limit"], "time_limit", low=0.0, low_open=True)
    o["tol"] = check_real(o["tol"], "tol", low=0.0, low_open=True)
    if not isinstance(o["refine"], (bool, np.bool_)):
        raise ValueError(f"refine must be True or False, got {o['refine']!r}")
    o["refine_tol"] = check_real(o["refine_tol"], "refine_tol", low=0.0, high=1.0, low_open=True)
    o["refine_iterations"] = check_int(o["refine_iterations"], "refine_iterations", low=0)
    o["stage_tol"] = check_real(o["stage_tol"], "stage_tol", low=0.0, high=1.0, low_open=True)
    o["active_slack"] = check_real(o["active_slack"], "active_slack", low=0.0)
    o["max_active"] = check_int(o["max_active"], "max_active", low=1)
    o["refresh"] = check_int(o["refresh"], "refresh", low=1)
    o["memory"] = check_int(o["memory"], "memory", low=1)
    o["block_elements"] = check_int(o["block_elements"], "block_elements", low=1)
    return o


def _initial_point(prob, params, initial):
    d, rank = prob.d, params.rank
    if initial is None:
        W0 = prob.targets.T @ prob.inputs  # Hebbian memory sum_mu t_mu e_mu^T
        if not params.factored:
            return W0.ravel().copy()
        Uw, s, Vt = np.linalg.svd(W0)
        root = np.sqrt(s[:rank])
        return np.concatenate([(Uw[:, :rank] * root).ravel(), (Vt[:rank].T * root).ravel()])
    if isinstance(initial, tuple):
        if not params.factored:
            Q, R = (np.asarray(a, dtype=np.float64) for a in initial)
            initial = Q @ R.T
        else:
            Q, R = (np.asarray(a, dtype=np.float64) for a in initial)
            if Q.shape != (d, rank) or R.shape != (d, rank):
                raise ValueError(f"initial factors must have shape ({d}, {rank}); got "
                                 f"{Q.shape} and {R.shape}")
            return np.concatenate([Q.ravel(), R.ravel()])
    W0 = np.asarray(initial, dtype=np.float64)
    if W0.shape != (d, d) or not np.all(np.isfinite(W0)):
        raise ValueError(f"initial must be a finite ({d}, {d}) array or a (Q, R) pair; "
                         f"got shape {W0.shape}")
    if not params.factored:
        return W0.ravel().copy()
    Uw, s, Vt = np.linalg.svd(W0)
    root = np.sqrt(s[:rank])
    return np.concatenate([(Uw[:, :rank] * root).ravel(), (Vt[:rank].T * root).ravel()])


def solve_optimal(instance, kappa=1.0, **options):
    """Decide storability of ``instance`` and maximise the normalised margin.

    Parameters
    ----------
    instance : validation.Instance
        OP or DP instance (``make_instance``).
    kappa : float, optional
        Rank fraction in (0, 1]; the rank is ``m = max(1, round(kappa d))``.
    **options
        ``max_iterations`` (int, default 20000): L-BFGS iterations (decision phase).
        ``time_limit`` (seconds or None): wall-time budget for the whole solve.
        ``tol`` (float, default 1e-3): ``not_stored`` is reported when no ``W`` can
        have a normalised margin above ``tol`` (competitor-std units).
        ``refine`` (bool, default True): after ``stored``, follow the ridge path to
        the max-margin ``W``; ``refine_tol`` (default 0.02) is the certified relative
        gap at which it stops, ``refine_iterations`` (default 5000) its budget.
        ``initial``: warm start, a (d, d) array or a (Q, R) pair.
        ``active_slack`` (default 1.0), ``max_active`` (default 64, doubled
        while it truncates violated constraints), ``refresh`` (default 25): working-set parameters; ``memory`` (default 10): L-BFGS
        history; ``block_elements`` (default 2**23): scores per block in full passes.

    Returns
    -------
    validation.Solution
        ``status`` is ``stored``, ``not_stored`` (certified: margin bound <= tol) or
        ``undecided``; ``margin`` is the float64 normalised margin of the returned W.
        The message gives the certified margin bound.

    Raises
    ------
    ValueError
        Bad kappa or option values, unknown options.

    Notes
    -----
    Derivation and certificates: ``notes/optimal_solver.md``.
    """
    from validation.solvers import Solution

    t_start = time.perf_counter()
    kappa_value = float(check_kappa(kappa, "kappa"))
    o = _check_options(options)
    prob = _Problem(instance)
    d, p = prob.d, prob.p
    rank = max(1, int(round(kappa_value * d)))
    params = _Params(d, rank)
    x = _initial_point(prob, params, o["initial"])
    deadline = None if o["time_limit"] is None else t_start + o["time_limit"]

    def out_of_time():
        return deadline is not None and time.perf_counter() > deadline

    # scale the start so that the loss is minimal along the ray (exact line search from 0)
    W = params.W(x)
    def threshold(sigma):
        return 1.0 + o["active_slack"] * sigma

    ws = _full_pass(prob, W, np.inf if p <= 64 else threshold(_sigma(W, d)), o["max_active"],
                    o["block_elements"]).ws
    m_ws = ws.margins(prob.images(W))
    scale, _ = _line_search(np.zeros_like(m_ws), m_ws, None, 0.0, (0, 0, 0, 0, 0))
    if scale > 0:
        if params.factored:
            x = x * math.sqrt(scale)
        else:
            x = x * scale

    lbfgs = _LBFGS(o["memory"])
    max_active = o["max_active"]
    restricted_done = False
    iterations = 0
    full_passes = 0
    status = "undecided"
    bound = np.inf  # smallest certified upper bound on the normalised margin seen so far
    ridge = 0.0
    ridge_floor = 0.0
    converged = False
    best = None  # (normalised margin, x) of the best float64-verified storing point
    phase = "decide"
    refine_iterations = 0
    stalls = 0
    message_extra = ""
    stage_converged = False
    accepted = None  # (x, full loss) at the last full pass of the decide phase
    rejected = 0     # working-set rounds undone because the full loss went up
    lowest_loss = np.inf
    accepted_passes = 0

    while True:
        # ---- full pass: refresh the working set, verify, decide ---------------------
        W = params.W(x)
        sigma = _sigma(W, d)
        fp = _full_pass(prob, W, threshold(sigma), max_active, o["block_elements"])
        full_passes += 1
        if phase == "decide" and accepted is not None and \
                fp.loss > (_EARLY_RISE if accepted_passes <= _EARLY_PASSES else 1.0 + 1e-6) \
                * lowest_loss + 1e-12 and max_active < p - 1 and np.any(fp.violated > max_active):
            # the working-set iterations raised the full loss above its lowest value while
            # the cap truncates violated constraints: those left out got worse than the
            # kept ones improved.  Back to the last full pass, with a larger cap (far above
            # p_c the iterates diverge without this).  In the first passes, while W grows
            # from the Hebbian start, rises up to _EARLY_RISE x are normal and the next
            # round corrects them.
            x = accepted[0]
            max_active = min(p - 1, 2 * max_active)
            rejected += 1
            lbfgs.reset()
            W = params.W(x)
            sigma = _sigma(W, d)
            fp = _full_pass(prob, W, threshold(sigma), max_active,
                            o["block_elements"])
            full_passes += 1
        ws, min_margin32 = fp.ws, fp.min_margin
        m_ws = ws.margins(prob.images(W))
        # grow the per-input cap while it truncates violated constraints, once the
        # restricted problem has converged (and every 8 full passes): otherwise it cannot
        # reach the full minimiser and the bound stalls
        while (restricted_done or full_passes % 8 == 0) and max_active < p - 1 and \
                np.any(fp.violated > max_active):
            max_active = min(p - 1, 2 * max_active)
            fp = _full_pass(prob, W, threshold(sigma), max_active,
                            o["block_elements"])
            full_passes += 1
            ws, min_margin32 = fp.ws, fp.min_margin
            m_ws = ws.margins(prob.images(W))
        if phase == "decide":
            accepted = (x.copy(), fp.loss)
            accepted_passes += 1
            lowest_loss = min(lowest_loss, fp.loss)
        restricted_done = False
        if min_margin32 > 0:
            exact = _exact_min_margins(prob, W, o["block_elements"])
            if exact.min() > 0:
                gamma = d * float(exact.min()) / max(_norm(W), 1e-300)
                if best is None or gamma > best[0]:
                    best = (gamma, x.copy())
        r = np.maximum(1.0 - m_ws, 0.0)
        if r.sum() > 0:
            bound = min(bound, d * _norm(ws.combine(r, exact=True)) / float(r.sum()))
        if phase == "decide":
            if best is not None:
                status = "stored"
                if not o["refine"] or o["refine_iterations"] == 0:
                    converged = True
                    break
                phase = "refine"
                # scale so that the smallest margin is 1, then follow lam -> 0
                factor = d / (best[0] * max(_norm(params.W(best[1])), 1e-300))
                x = best[1] * (math.sqrt(factor) if params.factored else factor)
                W = params.W(x)
                ridge = 1.0 / max(_dot(W, W), 1e-300)
                ridge_floor = ridge * 1e-12
                lbfgs.reset()
                stage_converged = False
                continue
            if bound <= o["tol"]:
                status = "not_stored"
                converged = True
                break
        else:  # refine: certified gap between the best verified margin and the bound
            gap = (bound - best[0]) / bound if np.isfinite(bound) and bound > 0 else np.inf
            if gap <= o["refine_tol"]:
                converged = True
                break
            if stage_converged:
                ridge *= 0.1
                stage_converged = False
                lbfgs.reset()
                if ridge < ridge_floor:
                    message_extra = "; refinement reached the end of its ridge path"
                    break
        if (phase == "decide" and iterations >= o["max_iterations"]) or \
                (phase == "refine" and refine_iterations >= o["refine_iterations"]) or out_of_time():
            break
        if stalls >= 3:
            message_extra = "; L-BFGS stalled (stationary point without a decision)"
            if params.factored and phase == "decide":
                converged = True
            break

        # ---- inner L-BFGS iterations on the working set -----------------------------
        g_prev = None
        x_prev = None
        progressed = False
        for _ in range(o["refresh"]):
            W = params.W(x)
            r = np.maximum(1.0 - m_ws, 0.0)
            G = -2.0 * ws.combine(r)
            if ridge:
                G += 2.0 * ridge * W
            g = params.grad(x, G)
            if g_prev is not None:
                lbfgs.update(x - x_prev, g - g_prev)
            gnorm = _norm(g)
            if phase == "refine":
                if gnorm <= o["stage_tol"] * 2.0 * ridge * _norm(W):
                    stage_converged = True
                    break
            else:
                if r.sum() > 0 and not params.factored:
                    # in-loop bound (float32 working set); confirmed in float64 at the full pass
                    if d * gnorm / (2.0 * float(r.sum())) <= 0.5 * o["tol"]:
                        restricted_done = True
                        break
                if gnorm <= 1e-12 * max(float(r.sum()), 1e-300):
                    restricted_done = True
                    break
            direction = lbfgs.direction(g)
            if _dot(direction, g) >= 0:
                lbfgs.reset()
                direction = -g
            step = 0.0
            for attempt in range(2):
                D1, D2 = params.line_terms(x, direction)
                m1 = ws.margins(prob.images(D1))
                m2 = ws.margins(prob.images(D2)) if D2 is not None else None
                poly = _norm_poly(W, D1, D2) if ridge else (0, 0, 0, 0, 0)
                step, _ = _line_search(m_ws, m1, m2, ridge, poly)
                if step > 0.0 or attempt == 1:
                    break
                lbfgs.reset()
                direction = -g
            if step == 0.0:
                if phase == "refine":
                    stage_converged = True
                break
            progressed = True
            x_prev, g_prev = x, g
            x = x + step * direction
            m_ws = m_ws + step * m1 if m2 is None else m_ws + step * (m1 + step * m2)
            iterations += 1
            if phase == "refine":
                refine_iterations += 1
            if phase == "decide" and m_ws.size and m_ws.min() > 0:
                break  # the working set is recalled: check everything
            if out_of_time():
                break
        stalls = 0 if (progressed or stage_converged) else stalls + 1

    # ---- result, verified in float64 ---------------------------------------------------
    if best is not None and status == "stored":
        x = best[1]
    W = params.W(x)
    exact = _exact_min_margins(prob, W, o["block_elements"])
    norm = float(_norm(W))
    margin = d * float(exact.min()) / norm if norm > 0 else -np.inf
    recalled = exact > 0
    stored = bool(recalled.all())
    if status == "stored" and not stored:  # cannot happen: best was verified
        status = "undecided"
    if status == "undecided" and stored:
        status = "stored"
    refine_gap = None
    refine_converged = False
    if phase == "refine" and np.isfinite(bound) and bound > 0:
        refine_gap = float((bound - margin) / bound)
        refine_converged = refine_gap <= o["refine_tol"]
    # converged: the decision is certified (refinement has its own flag in ``info``)
    converged = status in ("stored", "not_stored")
    rank_note = "" if not params.factored else f" rank-{rank} factor form;"
    if status == "stored":
        msg = (f"stored (float64 recall of all {p} inputs);{rank_note} normalised margin "
               f"{margin:.6g}, certified upper bound on the optimum {bound:.6g}")
    elif status == "not_stored":
        msg = (f"not stored: certified bound {bound:.3g} <= tol {o['tol']:.3g} on the normalised "
               f"margin of every W (Gordan-type certificate from squared-hinge residuals)")
    else:
        msg = (f"undecided:{rank_note} budget ended (iterations {iterations}, full passes "
               f"{full_passes}) with margin bound {bound:.3g} > tol {o['tol']:.3g}")
    msg += message_extra
    if params.factored:
        Q, R = params.split(x)
        factors = (Q.copy(), R.copy())
    else:
        factors = None
    return Solution(
        solver="optimal", kappa=kappa_value, rank=rank, W=W.copy(), factors=factors,
        stored=stored, recall_fraction=float(recalled.mean()), margin=margin,
        converged=bool(converged), iterations=int(iterations),
        seconds=time.perf_counter() - t_start, status=status, message=msg,
        info={"margin_bound": float(bound) if np.isfinite(bound) else None,
              "tol": o["tol"], "full_passes": int(full_passes),
              "refine_iterations": int(refine_iterations),
              "working_set_size": int(ws.size), "max_active": int(max_active),
              "rejected_rounds": int(rejected),
              "refined": phase == "refine",
              "refine_gap": refine_gap, "refine_converged": refine_converged},
    )


def _dot(a, b):
    """Serial float64 dot product of two arrays of the same size (no BLAS threads)."""
    return float(_k.vdot(np.ascontiguousarray(a, dtype=np.float64).ravel(),
                         np.ascontiguousarray(b, dtype=np.float64).ravel()))


def _norm(a):
    return math.sqrt(_dot(a, a))


def _sigma(W, d):
    return float(_norm(W)) / d
