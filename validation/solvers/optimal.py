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
  ``p (p - 1)`` constraints (``p (K - 1)`` with ``K`` distinct answers; exact argmax, a
  tie counts as a failure);
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

After ``stored`` the solver optionally (``refine=True``, the default) refines ``W``
towards the max-margin ``W`` (minimum ``||W||_F`` with all margins >= 1).  At full
rank this is the certified max-margin solver
(:func:`validation.solvers.maxmargin.solve_max_margin`, ``notes/max_margin.md``): dual
block coordinate ascent that stops once the certified relative gap
``(margin_bound - margin) / margin_bound`` is at most ``refine_tol``
(``OptimalOptions``, default 0.02).  At rank m, and in the rounds of the search modes
(constraints left out, :mod:`validation.solvers.modes`), it follows the ridge path
``lam -> 0`` (the L2-SVM continuation) with the bound above, which need not close.

Rank ``m = max(1, round(kappa d))`` (``kappa < 1``)
----------------------------------------------------
``W = Q R^T`` with ``Q, R`` of shape ``(d, m)``, the same loss over the factors
(non-convex).  ``stored`` is certified by recall as above.  ``not_stored`` is
reported only when the full-rank bound above (valid for every ``W``, so for every
rank-m ``W``) is below ``tol``, which is rare; otherwise the status is
``undecided`` when the budget ends (``converged`` False), or when L-BFGS reaches a
stationary point of the factor problem without storing the instance (``converged``
True: the method has ended, more budget would not decide it).  This is one start of
the rank-m search: ``validation.solve(instance, "optimal", kappa=k)`` runs
:func:`validation.solvers.rank_search.solve_rank_search` (the full-rank certificate
first, then up to ``restarts`` starts; statuses ``stored``, ``not_stored``,
``not_found``, ``undecided``; ``notes/rank_search.md``).

Speed
-----
Constraints are handled on a *working set*: for each input the competitors whose
margin lies below ``1 + active_slack * sigma`` (``sigma = ||W||_F / d`` is the
standard deviation of a competitor score), at most ``max_active`` per input.
L-BFGS iterates on the working set (numba kernels, ``validation._optimal_kernels``),
and a full pass over all ``p (p - 1)`` constraints (blocked float32 GEMM for OP,
regenerated candidates for DP; the ``p x p`` (``p x K``) score matrix is never held) refreshes
the working set every ``refresh`` iterations, and whenever the working set is
recalled or its problem has converged.  DP full passes are *screened* (:class:`_Screen`):
an input whose untracked candidates provably keep margins above the working-set
threshold (a Cauchy-Schwarz bound from its last full scan) has only its tracked
candidates regenerated; the pass's working set, loss and violation counts are those of
a plain pass.  Decisions are taken only on full passes
and checked in float64.  See ``notes/optimal_solver.md``.
"""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np

from replica.common.checks import check_int, check_kappa, check_real
from validation import _optimal_kernels as _k
from validation import _rng

from .options import OptimalOptions
from .solution import Solution, rank_for

__all__ = ["solve_optimal", "OptimalOptions", "monitored"]

_monitor: dict = {"callback": None}   # set by monitored()
_SCREEN_DP = True                     # screened DP full passes (tests switch it off to compare)
_RESCALE_DP_START = False             # DP (p > 64): the start is not rescaled (tests switch it on to compare)


def _tracked_count(n_cand):
    """Competitors tracked per input by the DP screen: 256, or an eighth of the candidates."""
    return max(256, n_cand // 8)
_warm: dict = {"done": False}         # the kernels of this process are compiled


@contextlib.contextmanager
def monitored(callback):
    """Within the block, solves report progress and can be interrupted.

    ``callback(state)`` is called after every full pass with a dict (``phase``,
    ``iterations``, ``full_passes``, ``loss``, ``bound``, ``margin``, ``seconds``).  A
    ``KeyboardInterrupt`` during a solve ends it: the result is built from the best
    float64-verified point so far (``converged`` False, the message says it was
    interrupted; the status is ``undecided`` unless a decision had been certified).
    Outside the block a ``KeyboardInterrupt`` propagates, so that an interrupted
    sweep never records a half-finished solve.
    """
    previous = _monitor["callback"]
    _monitor["callback"] = callback
    try:
        yield
    finally:
        _monitor["callback"] = previous


def _warm_up() -> None:
    """Compile (or load from numba's cache) every kernel once per process, on tiny instances.

    Called before the clock of the first solve starts, so that JIT compilation never
    counts against a ``time_limit``.  Covers OP and DP, full rank and factors, the
    sparse working set, the ridge-path refinement and the certified max-margin solver.
    """
    if _warm["done"]:
        return
    _warm["done"] = True
    from validation.ensembles import make_instance

    callback, _monitor["callback"] = _monitor["callback"], None
    try:
        for problem in ("op", "dp"):
            instance = make_instance(6, 40, problem, seed=0)
            for kappa in (1.0, 0.5):
                _Run(instance, kappa, tol=1e-3, max_iter=50, time_limit=None, refine=True,
                     options=OptimalOptions(max_active=2)).run()
        from .maxmargin import _warm_up as warm_max_margin

        warm_max_margin()
    finally:
        _monitor["callback"] = callback


# ----------------------------------------------------------------------------------
# problem data and full passes
# ----------------------------------------------------------------------------------


class _Problem:
    """Arrays of one instance in the form the kernels want (no d p^2 storage)."""

    def __init__(self, instance, blocked=None):
        self.instance = instance
        self.d = int(instance.d)
        self.p = int(instance.p)
        self.problem = str(instance.problem)
        self.inputs = np.ascontiguousarray(instance.inputs, dtype=np.float64)
        # OP: the search's p x d x d products in float32 (DP: its scans dominate, kept float64)
        self.inputs32 = self.inputs.astype(np.float32) if self.problem == "op" else None
        self.targets = np.ascontiguousarray(instance.targets, dtype=np.float64)
        self.targets32 = self.targets.astype(np.float32)
        # candidates per input and the target's column among them (K shared answers or p)
        self.n_cand = int(instance.n_candidates)
        self.target_index = np.ascontiguousarray(instance.target_index, dtype=np.int64)
        if instance.outputs is None:
            self.table, self.table32 = self.targets, self.targets32
        else:
            self.table = np.ascontiguousarray(instance.table, dtype=np.float64)
            self.table32 = self.table.astype(np.float32)
        if self.inputs.shape != (self.p, self.d) or self.targets.shape != (self.p, self.d):
            raise ValueError(
                f"instance arrays must have shape (p, d) = ({self.p}, {self.d}); got inputs "
                f"{self.inputs.shape} and targets {self.targets.shape}")
        if self.problem == "dp":
            self.key = np.uint64(instance.dp_key)
            self.code = int(instance.ensemble_code)
        elif self.problem != "op":
            raise ValueError(f"instance.problem must be 'op' or 'dp', got {self.problem!r}")
        # constraints left out (validation.solvers.modes): blocked[mu, rho] drops (mu, rho)
        self.blocked = None if blocked is None else np.asarray(blocked, dtype=bool)

    # images of the inputs: Y[mu] = W e_mu
    def images(self, W):
        return self.inputs @ W.T

    def search_images(self, W):
        """Images for the search's float32 margins: an sgemm for OP, ``images(W)`` for DP."""
        if self.inputs32 is None:
            return self.images(W)
        return self.inputs32 @ W.astype(np.float32).T

    def rows_per_block(self, block_elements):
        return max(1, min(self.p, int(block_elements) // max(self.n_cand, 1)))

    def block_margins(self, Y, start, stop, exact):
        """Margins (stop - start, n_cand) of inputs start..stop-1 against all candidates.

        The target against itself is set to +inf.  ``exact`` selects
        float64 (verification) over float32 (search) for OP; DP is always float64.
        """
        rows = np.arange(start, stop)
        cols = self.target_index[start:stop]
        if self.problem == "op":
            if exact:
                S = Y[start:stop] @ self.table.T
            else:
                S = Y[start:stop].astype(np.float32) @ self.table32.T
            t = S[np.arange(stop - start), cols].copy()
            M = t[:, None] - S
        else:
            M = np.empty((stop - start, self.n_cand))
            _rng.dp_block_margins(self.key, self.code, np.ascontiguousarray(Y[start:stop]),
                                self.targets, rows.astype(np.int64), self.n_cand, M)
        M[np.arange(stop - start), cols] = np.inf
        if self.blocked is not None:
            M[self.blocked[start:stop]] = np.inf
        return M


    def scan_margins(self, Y_rows, inputs):
        """DP: margins (n, n_cand) of ``inputs`` at images ``Y_rows`` (float64, as
        :meth:`block_margins`) and each input's largest candidate norm."""
        M = np.empty((inputs.size, self.n_cand))
        norms = np.empty(inputs.size)
        _rng.dp_block_scan(self.key, self.code, np.ascontiguousarray(Y_rows), self.targets,
                           inputs.astype(np.int64), self.n_cand, M, norms)
        self._mask(M, inputs, np.arange(self.n_cand)[None, :])
        return M, norms

    def listed_margins(self, Y_rows, inputs, cols):
        """DP: margins (n, L) of ``inputs`` against their listed competitors ``cols`` (n, L)."""
        M = np.empty(cols.shape)
        _rng.dp_listed_margins(self.key, self.code, np.ascontiguousarray(Y_rows), self.targets,
                               inputs.astype(np.int64), np.ascontiguousarray(cols, dtype=np.int64), M,
                               np.empty(0))
        self._mask(M, inputs, cols)
        return M

    def _mask(self, M, inputs, cols):
        """+inf where the column is the input's target or a left-out constraint."""
        M[cols == self.target_index[inputs][:, None]] = np.inf
        if self.blocked is not None:
            M[self.blocked[inputs[:, None], cols]] = np.inf


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
        self.dense = (prob.problem == "op" and prob.p * prob.n_cand <= (1 << 22)
                      and self.size >= 0.2 * prob.p * (prob.n_cand - 1))
        if self.dense:
            self._flat = self.rows * prob.n_cand + self.cols
            self._diag = np.arange(prob.p) * prob.n_cand + prob.target_index
        # competitor vectors of the entries: rows ``index`` of ``table`` (OP: the shared
        # outputs; DP: the entries' own candidates, regenerated here)
        if prob.problem == "dp":
            self.table = np.empty((self.size, prob.d), dtype=np.float32)
            if self.size:
                _rng.dp_fill_pairs(prob.key, prob.code, self.rows, self.cols, self.table)
            self.index = np.arange(self.size)
        else:
            self.table = prob.table32
            self.index = self.cols
        self._combine = np.empty((prob.p, prob.d))

    def margins(self, Y):
        Y32 = np.ascontiguousarray(Y, dtype=np.float32)
        out = np.empty(self.size)
        if self.size == 0:
            return out
        if self.dense:
            S = (Y32 @ self.prob.table32.T).ravel()  # S[mu * n_cand + rho] = u_rho . W e_mu
            np.subtract(np.take(S, self._diag)[self.rows], np.take(S, self._flat), out=out)
        else:
            _k.active_margins(Y32, self.prob.targets32, self.table, self.ptr, self.index, out)
        return out

    def combine(self, coef, exact=False):
        """sum_i coef_i a_i as a (d, d) float64 matrix.

        ``exact``: float64 vectors and product; otherwise float32 vectors, and for OP a
        float32 product (the search's gradient).
        """
        V = self._combine
        prob = self.prob
        if self.size and self.dense and not exact:
            C = np.zeros(prob.p * prob.n_cand, dtype=np.float32)
            C[self._flat] = coef.astype(np.float32)
            C = C.reshape(prob.p, prob.n_cand)
            V[:] = prob.targets32 * C.sum(axis=1, dtype=np.float64)[:, None]
            V -= C @ prob.table32
        elif self.size and not exact:
            _k.active_combine(coef, prob.targets32, self.table, self.ptr, self.index, V)
        elif self.size and prob.problem == "op":
            _k.active_combine(coef, prob.targets, prob.table, self.ptr, self.cols, V)
        elif self.size:  # DP in float64: regenerate the vectors of the nonzero terms
            keep = np.flatnonzero(coef)
            vec = np.empty((keep.size, prob.d))
            _rng.dp_fill_pairs(prob.key, prob.code, self.rows[keep], self.cols[keep], vec)
            ptr = np.zeros(prob.p + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.rows[keep], minlength=prob.p), out=ptr[1:])
            _k.active_combine(coef[keep], prob.targets, vec, ptr, np.arange(keep.size), V)
        else:
            V[:] = 0.0
        if exact or prob.inputs32 is None:
            return V.T @ prob.inputs
        return (V.astype(np.float32).T @ prob.inputs32).astype(np.float64)


class _PassResult:
    """What a full pass returns: the new working set and statistics of all constraints."""

    __slots__ = ("ws", "min_margin", "loss", "violated", "input_min")

    def __init__(self, ws, min_margin, loss, violated, input_min=None):
        self.ws = ws                  # _WorkingSet
        self.min_margin = min_margin  # smallest margin (float32 search precision for OP; under
        #                               screening only its sign is exact: min of the scored ones)
        self.loss = loss              # full squared hinge sum_i (1 - m_i)_+^2
        self.violated = violated      # per input: number of margins below 1 (int64, p)
        self.input_min = input_min    # DP: per-input float64 smallest margin, NaN if not scanned


def _select_rows(M, threshold, keep, limit):
    """Per row of the margins ``M``: the (at most ``keep``) smallest below ``threshold``.

    ``limit`` is the number of real competitors of a row (a row of ``M`` may hold one
    masked column more); returns the row and column indices into ``M``.
    """
    if keep < limit:
        part = np.argpartition(M, keep - 1, axis=1)[:, :keep]
        vals = np.take_along_axis(M, part, axis=1)
        r, c = np.nonzero(vals < threshold)
        return r, part[r, c]
    return np.nonzero(M < threshold)


class _Tally:
    """Accumulates a full pass block by block: working-set entries, smallest margin, loss, violations."""

    def __init__(self, prob):
        self.prob = prob
        self.rows, self.cols = [], []
        self.min_margin = np.inf
        self.loss = 0.0
        self.violated = np.empty(prob.p, dtype=np.int64)
        self.input_min = np.full(prob.p, np.nan) if prob.problem == "dp" else None

    def add(self, inputs, M, r, cols, scanned=True):
        """Margins ``M`` of ``inputs`` (rows of M); selected entries ``(inputs[r], cols)``.

        ``scanned``: ``M`` holds every candidate (DP: its row minima are the float64
        smallest margins of the inputs, as :func:`_exact_min_margins` computes them).
        """
        self.min_margin = min(self.min_margin, float(M.min()))
        if scanned and self.input_min is not None:
            self.input_min[inputs] = M.min(axis=1)
        below = M < 1.0
        self.violated[inputs] = below.sum(axis=1)
        self.loss += float(np.square(1.0 - M[below]).sum())
        self.rows.append(inputs[r])
        self.cols.append(cols)

    def result(self, canonical=False):
        rows = np.concatenate(self.rows) if self.rows else np.empty(0, np.int64)
        cols = np.concatenate(self.cols) if self.cols else np.empty(0, np.int64)
        if canonical:  # order by (input, competitor): independent of which inputs were screened
            order = np.argsort(rows * self.prob.n_cand + cols, kind="stable")
            rows, cols = rows[order], cols[order]
        return _PassResult(_WorkingSet(self.prob, rows, cols), self.min_margin, self.loss, self.violated,
                           self.input_min)


def _op_block(prob, Y32, start, stop, threshold, keep, tally):
    """OP block: float32 score GEMM and the selection kernel (no margin matrix)."""
    n = stop - start
    S = Y32[start:stop] @ prob.table32.T
    if prob.blocked is not None:  # a left-out competitor never beats the target
        S[prob.blocked[start:stop]] = -np.inf
    idx = np.empty((n, max(keep, 1)), dtype=np.int64)
    cnt = np.empty(n, dtype=np.int64)
    mins = np.empty(n)
    losses = np.empty(n)
    _k.select_block_targets(S, prob.target_index[start:stop], threshold, keep, idx, cnt, mins, losses,
                            tally.violated[start:stop])
    tally.min_margin = min(tally.min_margin, float(mins.min()))
    tally.loss += float(losses.sum())
    tally.rows.append(np.repeat(np.arange(start, stop), cnt))
    tally.cols.append(idx[np.arange(idx.shape[1])[None, :] < cnt[:, None]])


def _full_pass(prob, W, threshold, max_active, block_elements, screen=None):
    """Scan all constraints: new working set, smallest margin, full loss, violations per input.

    ``screen`` (a :class:`_Screen`, DP only) skips the candidates that provably cannot
    enter the working set (``notes/optimal_solver.md``, section 6); the working set,
    loss and violation counts are the same as without it, in (input, competitor) order.
    """
    step = prob.rows_per_block(block_elements)
    keep = min(prob.n_cand - 1, int(max_active))
    tally = _Tally(prob)
    Y = prob.search_images(W)  # OP: float32 scores; DP: float64 (the screen's bounds)
    for start in range(0, prob.p, step):
        stop = min(prob.p, start + step)
        if prob.problem == "op":
            _op_block(prob, Y, start, stop, threshold, keep, tally)
        elif screen is not None:
            screen.block(Y, np.arange(start, stop), threshold, keep, tally)
        else:
            M = prob.block_margins(Y, start, stop, exact=False)
            r, cols = _select_rows(M, threshold, keep, prob.n_cand - 1)
            tally.add(np.arange(start, stop), M, r, cols)
    return tally.result(canonical=screen is not None)


class _Screen:
    """Screening of DP full passes from per-input references (``notes/optimal_solver.md``, section 6).

    When input ``mu`` is scanned in full at images ``Y0 = W0 e_mu``, the screen keeps
    ``Y0``, ``t_mu . Y0``, the ``tracked`` competitors with the smallest margins
    (``cand[mu]``), the smallest margin ``floor[mu]`` of all the others and the largest
    candidate norm ``unorm[mu]``.  At new images ``Y = (1 + a) Y0 + r`` (``r`` orthogonal
    to ``Y0``), every other competitor ``rho`` has margin
    ``m(rho) = (1 + a) m0(rho) + t.Y - (1 + a) t.Y0 - u_rho . r``, so for ``1 + a > 0``
    ``m(rho) >= (1 + a) floor + t.Y - (1 + a) t.Y0 - unorm ||r||`` (Cauchy-Schwarz).
    When that bound is at least the working-set threshold (which is >= 1), no other
    competitor can enter the working set, be violated or add to the loss, and only the
    tracked ones are regenerated and scored; the others inputs are scanned in full (and
    get new references).
    """

    def __init__(self, prob, tracked=None):
        p, d = prob.p, prob.d
        self.prob = prob
        self.tracked = min(prob.n_cand - 1, int(tracked or _tracked_count(prob.n_cand)))
        self.images = np.zeros((p, d))
        self.target_scores = np.zeros(p)
        self.cand = np.zeros((p, self.tracked), dtype=np.int32)  # memory p L 4 bytes
        self.floor = np.full(p, -np.inf)  # -inf: no reference yet
        self.unorm = np.zeros(p)
        self.scanned = 0   # inputs scanned in full, over all passes
        self.screened = 0  # inputs whose untracked competitors were skipped

    def lower_bounds(self, Y, inputs):
        """Lower bound on the margin of every untracked competitor of ``inputs`` at images ``Y``."""
        prob = self.prob
        Y0 = self.images[inputs]
        t0 = self.target_scores[inputs]
        n0 = np.einsum("ij,ij->i", Y0, Y0)
        dY = Y - Y0
        a = np.einsum("ij,ij->i", dY, Y0) / np.where(n0 > 0, n0, 1.0)
        r_norm = np.linalg.norm(dY - a[:, None] * Y0, axis=1)
        scale = 1.0 + a
        tY = np.einsum("ij,ij->i", prob.targets[inputs], Y)
        unorm = self.unorm[inputs]
        bound = scale * self.floor[inputs] + (tY - scale * t0) - unorm * r_norm
        # float64 rounding of the stored and new margins, far below any working-set gap
        rounding = 1e-9 * (1.0 + np.abs(tY) + np.abs(scale * t0)
                           + unorm * (np.linalg.norm(Y, axis=1) + np.abs(scale) * np.sqrt(n0)))
        return np.where((scale > 0) & (n0 > 0), bound - rounding, -np.inf)

    def record(self, inputs, Y, M, norms):
        """New references of ``inputs`` from their full margins ``M`` at images ``Y``."""
        L = self.tracked
        part = np.argpartition(M, L, axis=1)
        self.cand[inputs] = part[:, :L]
        self.floor[inputs] = np.take_along_axis(M, part[:, L:L + 1], axis=1)[:, 0]
        self.images[inputs] = Y
        self.target_scores[inputs] = np.einsum("ij,ij->i", self.prob.targets[inputs], Y)
        self.unorm[inputs] = norms

    def block(self, Y, inputs, threshold, keep, tally):
        """One block of a screened full pass (``inputs`` contiguous), added to ``tally``.

        Input ``mu`` is screened when the bound ``lb`` on its untracked margins is >= 1
        (none violated) and either >= ``threshold`` (none enters the working set) or
        above its ``keep``-th smallest tracked margin (none is among the kept ones).
        """
        prob = self.prob
        lb = self.lower_bounds(Y[inputs], inputs)
        skip = lb >= threshold
        maybe = inputs[(lb >= 1.0) & ~skip]
        M_maybe = None
        if maybe.size and keep < self.tracked:  # the keep-th tracked margin decides
            M_maybe = prob.listed_margins(Y[maybe], maybe, self.cand[maybe])
            kth = np.partition(M_maybe, keep - 1, axis=1)[:, keep - 1]
            ok = lb[maybe - inputs[0]] > kth
            skip[maybe[ok] - inputs[0]] = True
            self._add_listed(maybe[ok], M_maybe[ok], threshold, keep, tally)
        full = inputs[~skip]
        if full.size:
            M, norms = prob.scan_margins(Y[full], full)
            self.record(full, Y[full], M, norms)
            r, cols = _select_rows(M, threshold, keep, prob.n_cand - 1)
            tally.add(full, M, r, cols)
            self.scanned += full.size
        short = inputs[lb >= threshold]
        if short.size:
            self._add_listed(short, prob.listed_margins(Y[short], short, self.cand[short]), threshold, keep,
                             tally)

    def _add_listed(self, inputs, M, threshold, keep, tally):
        """Screened ``inputs`` with tracked margins ``M``: select among the tracked competitors."""
        if not inputs.size:
            return
        cand = self.cand[inputs]
        r, c = _select_rows(M, threshold, keep, self.tracked)
        tally.add(inputs, M, r, cand[r, c], scanned=False)
        self.screened += inputs.size


def _exact_min_margins(prob, W, block_elements, known=None):
    """float64 per-input smallest margin min_{rho != mu} (t_mu - u_rho) . W e_mu.

    ``known`` (DP, from a full pass at this very ``W``: ``_PassResult.input_min``) holds
    the minima already computed by the same float64 kernel (NaN where the pass screened
    the input); only the other inputs are scanned.
    """
    Y = prob.images(W)
    step = prob.rows_per_block(block_elements)
    if known is not None:
        out = known.copy()
        todo = np.flatnonzero(np.isnan(known))
        for start in range(0, todo.size, step):
            rows = todo[start:start + step]
            out[rows] = prob.scan_margins(Y[rows], rows)[0].min(axis=1)
        return out
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


def _factor_start(W0, rank):
    """Factors of the best rank-``rank`` approximation of ``W0``, split evenly (flat vector)."""
    from .svp import project_rank

    Q, R = project_rank(W0, rank)[1]
    return np.concatenate([Q.ravel(), R.ravel()])


def _initial_point(prob, params, initial):
    d, rank = prob.d, params.rank
    if initial is None:
        W0 = prob.targets.T @ prob.inputs  # Hebbian memory sum_mu t_mu e_mu^T
        return W0.ravel().copy() if not params.factored else _factor_start(W0, rank)
    if isinstance(initial, tuple):
        Q, R = (np.asarray(a, dtype=np.float64) for a in initial)
        if not params.factored:
            initial = Q @ R.T
        else:
            if Q.shape != (d, rank) or R.shape != (d, rank):
                raise ValueError(f"initial factors must have shape ({d}, {rank}); got "
                                 f"{Q.shape} and {R.shape}")
            return np.concatenate([Q.ravel(), R.ravel()])
    W0 = np.asarray(initial, dtype=np.float64)
    if W0.shape != (d, d) or not np.all(np.isfinite(W0)):
        raise ValueError(f"initial must be a finite ({d}, {d}) array or a (Q, R) pair; "
                         f"got shape {W0.shape}")
    return W0.ravel().copy() if not params.factored else _factor_start(W0, rank)


class _Run:
    """State of one ``optimal`` solve; one method per phase.

    ``__init__`` sets up and scales the start, :meth:`refresh` is the full pass (working
    set, verification, bound), :meth:`decide` and :meth:`refine` take the decisions of
    their phase, :meth:`iterate` runs L-BFGS on the working set and :meth:`finish` builds
    the float64-verified :class:`validation.Solution`.
    """

    def __init__(self, instance, kappa, *, tol, max_iter, time_limit, refine, options, blocked=None):
        self.t_start = time.perf_counter()
        self.kappa, self.tol, self.max_iter, self.refine_on, self.o = kappa, tol, max_iter, refine, options
        self.prob = prob = _Problem(instance, blocked)
        self.d, self.p = prob.d, prob.p
        self.params = _Params(self.d, rank_for(self.d, kappa))
        self.deadline = None if time_limit is None else self.t_start + time_limit
        self.screen = _Screen(prob) if _SCREEN_DP and prob.problem == "dp" else None
        x = _initial_point(prob, self.params, options.initial)
        W = self.params.W(x)
        threshold = np.inf if self.p <= 64 else self.threshold(_sigma(W, self.d))
        fp = _full_pass(prob, W, threshold, options.max_active, options.block_elements, self.screen)
        self.ws = fp.ws
        # Scale the start so that the working-set loss is minimal along its ray.  Not for
        # the full-rank DP decision (p > 64): there the first refresh() would scan again
        # every input with more than its tracked number of violated competitors (about
        # half of them from the Hebbian start), while at the unscaled start it reuses this
        # very pass (notes/optimal_solver.md, section 6).  Rank-m starts and the rounds of
        # the search modes keep the rescaled start, so their lower-bound verdicts do not change.
        self.start_pass = None
        if _RESCALE_DP_START or prob.problem != "dp" or self.p <= 64 or self.params.factored \
                or blocked is not None:
            m_ws = self.ws.margins(prob.search_images(W))
            scale, _ = _line_search(np.zeros_like(m_ws), m_ws, None, 0.0, (0, 0, 0, 0, 0))
            if scale > 0:
                x = x * (math.sqrt(scale) if self.params.factored else scale)
        else:
            self.start_pass = (x, fp)  # the first refresh() is at this very point: reuse the pass
        self.x = x
        self.m_ws = None          # working-set margins at x, set by every refresh()
        self.lbfgs = _LBFGS(options.memory)
        self.max_active = options.max_active
        self.phase = "decide"
        self.status = "undecided"
        self.stopped = False      # ended on a stopping criterion, not a budget
        self.message_extra = ""
        self.iterations = self.refine_iterations = self.full_passes = 0
        self.bound = np.inf       # smallest certified upper bound on the normalised margin
        self.best = None          # (normalised margin, x) of the best float64-verified storing point
        self.best_margins = None  # (x, float64 per-input smallest margins) of that point
        self.pass_point = (None, None)  # (x, DP per-input minima) of the last full pass
        self.ridge = self.ridge_floor = 0.0
        self.restricted_done = self.stage_converged = False
        self.stalls = 0
        self.accepted = None      # (x, full loss) at the last full pass of the decide phase
        self.rejected = 0         # working-set rounds undone because the full loss went up
        self.lowest_loss = np.inf
        self.accepted_passes = 0
        self.loss = np.inf        # full squared hinge at the last full pass (progress only)
        self.interrupted = False
        self.refine_status = None  # status of the certified max-margin refinement (full rank)

    def threshold(self, sigma):
        return 1.0 + self.o.active_slack * sigma

    def out_of_time(self):
        return self.deadline is not None and time.perf_counter() > self.deadline

    def run(self):
        callback = _monitor["callback"]
        try:
            while True:
                self.refresh()
                if callback is not None:
                    callback(self.progress())
                action = self.decide() if self.phase == "decide" else self.refine()
                if action == "stop":
                    break
                if action == "continue":
                    continue
                if self.budget_spent():
                    break
                self.iterate()
        except KeyboardInterrupt:
            if callback is None:
                raise
            self.interrupted = True
        return self.finish()

    def progress(self) -> dict:
        """Where the solve is (for a progress display)."""
        return {"phase": self.phase, "iterations": self.iterations, "full_passes": self.full_passes,
                "loss": self.loss, "bound": self.bound,
                "margin": None if self.best is None else self.best[0],
                "seconds": time.perf_counter() - self.t_start}

    def _pass(self, W, sigma):
        self.full_passes += 1
        return _full_pass(self.prob, W, self.threshold(sigma), self.max_active, self.o.block_elements,
                          self.screen)

    def _truncating(self, fp):
        return self.max_active < self.prob.n_cand - 1 and np.any(fp.violated > self.max_active)

    def refresh(self):
        """Full pass: undo a bad round, grow the cap, verify in float64, tighten the bound."""
        params, prob, d = self.params, self.prob, self.d
        W = params.W(self.x)
        sigma = _sigma(W, d)
        if self.start_pass is not None and self.start_pass[0] is self.x:
            fp = self.start_pass[1]
            self.full_passes += 1
        else:
            fp = self._pass(W, sigma)
        self.start_pass = None
        rise = _EARLY_RISE if self.accepted_passes <= _EARLY_PASSES else 1.0 + 1e-6
        if self.phase == "decide" and self.accepted is not None and \
                fp.loss > rise * self.lowest_loss + 1e-12 and self._truncating(fp):
            # the working-set iterations raised the full loss above its lowest value while
            # the cap truncates violated constraints: those left out got worse than the
            # kept ones improved.  Back to the last full pass, with a larger cap (far above
            # p_c the iterates diverge without this).  In the first passes, while W grows
            # from the Hebbian start, rises up to _EARLY_RISE x are normal and the next
            # round corrects them.
            self.x = self.accepted[0]
            self.max_active = min(self.prob.n_cand - 1, 2 * self.max_active)
            self.rejected += 1
            self.lbfgs.reset()
            W = params.W(self.x)
            sigma = _sigma(W, d)
            fp = self._pass(W, sigma)
        self.m_ws = fp.ws.margins(prob.search_images(W))
        # grow the per-input cap while it truncates violated constraints, once the
        # restricted problem has converged (and every 8 full passes): otherwise it cannot
        # reach the full minimiser and the bound stalls
        while (self.restricted_done or self.full_passes % 8 == 0) and self._truncating(fp):
            self.max_active = min(self.prob.n_cand - 1, 2 * self.max_active)
            fp = self._pass(W, sigma)
            self.m_ws = fp.ws.margins(prob.search_images(W))
        self.ws = fp.ws
        self.loss = fp.loss
        if self.phase == "decide":
            self.accepted = (self.x.copy(), fp.loss)
            self.accepted_passes += 1
            self.lowest_loss = min(self.lowest_loss, fp.loss)
        self.restricted_done = False
        self.pass_point = (self.x, fp.input_min)  # finish() reuses the minima at this point
        if fp.min_margin > 0:
            exact = _exact_min_margins(prob, W, self.o.block_elements, known=fp.input_min)
            if exact.min() > 0:
                gamma = d * float(exact.min()) / max(_norm(W), 1e-300)
                if self.best is None or gamma > self.best[0]:
                    self.best = (gamma, self.x.copy())
                    self.best_margins = (self.best[1], exact)  # reused by finish()
        r = np.maximum(1.0 - self.m_ws, 0.0)
        if r.sum() > 0:
            self.bound = min(self.bound, d * _norm(self.ws.combine(r, exact=True)) / float(r.sum()))

    def decide(self):
        """Decision phase: ``stored`` (then refine or stop) or ``not_stored``."""
        if self.best is not None:
            self.status = "stored"
            if not self.refine_on or self.o.refine_max_iter == 0:
                self.stopped = True
                return "stop"
            self.phase = "refine"
            if not self.params.factored and self.prob.blocked is None:
                self.certified_max_margin()
                return "stop"
            # rank m: scale so that the smallest margin is 1, then follow lam -> 0
            gamma, x_best = self.best
            factor = self.d / (gamma * max(_norm(self.params.W(x_best)), 1e-300))
            self.x = x_best * (math.sqrt(factor) if self.params.factored else factor)
            W = self.params.W(self.x)
            self.ridge = 1.0 / max(_dot(W, W), 1e-300)
            self.ridge_floor = self.ridge * 1e-12
            self.lbfgs.reset()
            self.stage_converged = False
            return "continue"
        if self.bound <= self.tol:
            self.status = "not_stored"
            self.stopped = True
            return "stop"
        return None

    def certified_max_margin(self):
        """Full-rank refinement: the certified max-margin solver from the stored W (``notes/max_margin.md``)."""
        from .maxmargin import solve_max_margin

        remaining = None if self.deadline is None else self.deadline - time.perf_counter()
        if remaining is not None and remaining <= 0:
            self.message_extra = "; no time left for the max-margin refinement"
            return
        callback = _monitor["callback"]
        relay = None if callback is None else (lambda state: callback(
            {**self.progress(), "phase": "max margin", "bound": state["bound"], "margin": state["margin"],
             "iterations": self.iterations + state["iterations"],
             "full_passes": self.full_passes + state["full_passes"]}))
        W0 = self.params.W(self.best[1])
        mm = solve_max_margin(self.prob.instance, W0, tol=self.o.refine_tol, time_limit=remaining, callback=relay)
        self.full_passes += mm.full_passes
        self.refine_iterations = mm.iterations
        self.refine_status = mm.status
        if mm.margin_bound is not None and np.isfinite(mm.margin_bound):
            self.bound = min(self.bound, float(mm.margin_bound))
        if mm.W is not None and mm.margin is not None and mm.margin > self.best[0]:
            self.best = (float(mm.margin), np.asarray(mm.W, dtype=np.float64).ravel().copy())
        self.interrupted = mm.status == "interrupted"
        if mm.status not in ("converged", "interrupted"):
            self.message_extra = f"; max-margin refinement ended: {mm.status}"

    def refine(self):
        """Refinement phase (rank m): stop at the certified gap, or shrink the ridge after a stage."""
        bound = self.bound
        gap = (bound - self.best[0]) / bound if np.isfinite(bound) and bound > 0 else np.inf
        if gap <= self.o.refine_tol:
            return "stop"
        if self.stage_converged:
            self.ridge *= 0.1
            self.stage_converged = False
            self.lbfgs.reset()
            if self.ridge < self.ridge_floor:
                self.message_extra = "; refinement reached the end of its ridge path"
                return "stop"
        return None

    def budget_spent(self):
        if (self.phase == "decide" and self.iterations >= self.max_iter) or \
                (self.phase == "refine" and self.refine_iterations >= self.o.refine_max_iter) or \
                self.out_of_time():
            return True
        if self.stalls >= 3:
            self.message_extra = "; L-BFGS stalled (stationary point without a decision)"
            # rank m: a stationary point of the factor problem is where the method ends
            self.stopped = self.params.factored and self.phase == "decide"
            return True
        return False

    def _stop_inner(self, r, gnorm, W):
        """Stopping tests of the inner loop at the current gradient norm."""
        if self.phase == "refine":
            if gnorm <= self.o.stage_tol * 2.0 * self.ridge * _norm(W):
                self.stage_converged = True
                return True
            return False
        if r.sum() > 0 and not self.params.factored:
            # in-loop bound (float32 working set); confirmed in float64 at the full pass
            if self.d * gnorm / (2.0 * float(r.sum())) <= 0.5 * self.tol:
                self.restricted_done = True
                return True
        if gnorm <= 1e-12 * max(float(r.sum()), 1e-300):
            self.restricted_done = True
            return True
        return False

    def _step(self, x, g, direction, W):
        """Exact line search along ``direction`` (steepest descent if it fails): step, m1, m2."""
        params, prob, ws = self.params, self.prob, self.ws
        step, m1, m2 = 0.0, None, None
        for attempt in range(2):
            D1, D2 = params.line_terms(x, direction)
            m1 = ws.margins(prob.search_images(D1))
            m2 = ws.margins(prob.search_images(D2)) if D2 is not None else None
            poly = _norm_poly(W, D1, D2) if self.ridge else (0, 0, 0, 0, 0)
            step, _ = _line_search(self.m_ws, m1, m2, self.ridge, poly)
            if step > 0.0 or attempt == 1:
                break
            self.lbfgs.reset()
            direction = -g
        return step, direction, m1, m2

    def iterate(self):
        """Up to ``refresh`` L-BFGS iterations on the working set."""
        params, ws, lbfgs = self.params, self.ws, self.lbfgs
        g_prev = x_prev = None
        progressed = False
        x = self.x
        for _ in range(self.o.refresh):
            W = params.W(x)
            r = np.maximum(1.0 - self.m_ws, 0.0)
            G = -2.0 * ws.combine(r)
            if self.ridge:
                G += 2.0 * self.ridge * W
            g = params.grad(x, G)
            if g_prev is not None:
                lbfgs.update(x - x_prev, g - g_prev)
            if self._stop_inner(r, _norm(g), W):
                break
            direction = lbfgs.direction(g)
            if _dot(direction, g) >= 0:
                lbfgs.reset()
                direction = -g
            step, direction, m1, m2 = self._step(x, g, direction, W)
            if step == 0.0:
                if self.phase == "refine":
                    self.stage_converged = True
                break
            progressed = True
            x_prev, g_prev = x, g
            x = x + step * direction
            self.m_ws = self.m_ws + step * m1 if m2 is None else self.m_ws + step * (m1 + step * m2)
            self.iterations += 1
            if self.phase == "refine":
                self.refine_iterations += 1
            if self.phase == "decide" and self.m_ws.size and self.m_ws.min() > 0:
                break  # the working set is recalled: check everything
            if self.out_of_time():
                break
        self.x = x
        self.stalls = 0 if (progressed or self.stage_converged) else self.stalls + 1

    def finish(self):
        """The result, verified in float64."""
        params, d = self.params, self.d
        x = self.best[1] if self.best is not None and self.status == "stored" else self.x
        W = params.W(x)
        if self.best_margins is not None and self.best_margins[0] is x:
            exact = self.best_margins[1]  # verified at this very point by refresh()
        else:
            known = self.pass_point[1] if self.pass_point[0] is x else None
            exact = _exact_min_margins(self.prob, W, self.o.block_elements, known=known)
        norm = float(_norm(W))
        margin = d * float(exact.min()) / norm if norm > 0 else -np.inf
        recalled = exact > 0
        stored = bool(recalled.all())
        status = self.status
        if status == "stored" and not stored:  # cannot happen: best was verified
            status = "undecided"
        if status == "undecided" and stored:
            status = "stored"
        bound = self.bound
        refine_gap = None
        refine_converged = False
        if self.phase == "refine" and np.isfinite(bound) and bound > 0:
            refine_gap = float((bound - margin) / bound)
            refine_converged = refine_gap <= self.o.refine_tol
        factors = tuple(a.copy() for a in params.split(x)) if params.factored else None
        return Solution(
            solver="optimal", kappa=self.kappa, rank=params.rank, W=W.copy(), factors=factors,
            stored=stored, recall_fraction=float(recalled.mean()), margin=margin,
            converged=(status != "undecided" or self.stopped) and not self.interrupted,
            iterations=int(self.iterations),
            seconds=time.perf_counter() - self.t_start, status=status,
            message=self._message(status, margin),
            info={"margin_bound": float(bound) if np.isfinite(bound) else None,
                  "tol": self.tol, "full_passes": int(self.full_passes),
                  "refine_iterations": int(self.refine_iterations),
                  "working_set_size": int(self.ws.size), "max_active": int(self.max_active),
                  "rejected_rounds": int(self.rejected),
                  "refined": self.phase == "refine",
                  "refine_gap": refine_gap, "refine_converged": refine_converged,
                  "refine_status": self.refine_status},
        )

    def _message(self, status, margin):
        rank_note = "" if not self.params.factored else f" rank-{self.params.rank} factor form;"
        bound, tol = self.bound, self.tol
        if status == "stored":
            msg = (f"stored (float64 recall of all {self.p} inputs);{rank_note} normalised margin "
                   f"{margin:.6g}, certified upper bound on the optimum {bound:.6g}")
        elif status == "not_stored":
            msg = (f"not stored: certified bound {bound:.3g} <= tol {tol:.3g} on the normalised "
                   f"margin of every W (Gordan-type certificate from squared-hinge residuals)")
        else:
            msg = (f"undecided:{rank_note} budget ended (iterations {self.iterations}, full passes "
                   f"{self.full_passes}) with margin bound {bound:.3g} > tol {tol:.3g}")
        msg += self.message_extra
        return "interrupted (Ctrl-C); best verified point so far: " + msg if self.interrupted else msg


def solve_optimal(instance, kappa=1.0, *, tol=1e-3, max_iter=20000, time_limit=None, refine=True,
                  options=None):
    """Decide storability of ``instance`` and maximise the normalised margin.

    Parameters
    ----------
    instance : validation.Instance
        OP or DP instance (``make_instance``).
    kappa : float, optional
        Rank fraction in (0, 1]; the rank is ``m = max(1, round(kappa d))``.
    tol : float, optional
        ``not_stored`` is reported when no ``W`` can have a normalised margin above
        ``tol`` (competitor-std units; default 1e-3).
    max_iter : int, optional
        L-BFGS iterations of the decision phase (default 20000).
    time_limit : float or None, optional
        Wall-time budget in seconds for the whole solve (default: none).  The first
        solve of a process compiles the numba kernels first (a tiny warm-up solve),
        outside this budget.  It is checked after every L-BFGS iteration and every full
        pass, so a solve can end up to one full pass and one float64 check (of the
        returned ``W``) after it: measured 313 s past a 5400 s limit at d = 1024, where
        one such pair takes minutes.
    refine : bool, optional
        After ``stored``, refine towards the max-margin ``W`` (default True): at full rank
        the certified max-margin solver (``notes/max_margin.md``; it stops at the
        certified relative gap ``refine_tol``), at rank m the ridge path; settings
        ``refine_tol`` and ``refine_max_iter`` in ``options``.
    options : OptimalOptions or mapping, optional
        The other settings (:class:`validation.solvers.OptimalOptions`: warm start,
        working-set and L-BFGS parameters, and the search modes ``give_up=True`` and
        ``top_k=k``, which repeat this solve with constraints left out:
        :mod:`validation.solvers.modes`).

    Returns
    -------
    validation.Solution
        ``status`` is ``stored``, ``not_stored`` (certified: margin bound <= tol) or
        ``undecided``; the search modes return ``stored``, ``not_found`` (a lower-bound
        verdict) or ``undecided``; ``margin`` is the float64 normalised margin of the returned W.
        ``converged`` is True for a decision, and for an undecided rank-m solve that
        ended at a stationary point of the factor problem; False when a budget
        (``max_iter``, ``time_limit``) or a stall of the full-rank iteration ended it.
        ``info["refine_converged"]`` and ``info["refine_gap"]`` report the refinement.
        The message gives the certified margin bound.

    Raises
    ------
    ValueError
        Bad kappa or option values, unknown options, ``top_k`` not below the number of
        candidates of the instance.

    Notes
    -----
    Derivation and certificates: ``notes/optimal_solver.md``.
    """
    kappa_value = float(check_kappa(kappa, "kappa"))
    tol = check_real(tol, "tol", low=0.0, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    if time_limit is not None:
        time_limit = check_real(time_limit, "time_limit", low=0.0, low_open=True)
    if not isinstance(refine, (bool, np.bool_)):
        raise ValueError(f"refine must be True or False, got {refine!r}")
    options = OptimalOptions.coerce(options)
    if options.top_k > 1 and options.top_k >= instance.n_candidates:
        raise ValueError(f"top_k must be in [1, {instance.n_candidates - 1}] (below the number of "
                         f"candidates {instance.n_candidates}), got {options.top_k}")
    _warm_up()  # before the clock starts: compilation is not part of the time limit
    if options.give_up or options.top_k > 1:
        from . import modes

        search = modes.solve_give_up if options.give_up else modes.solve_top_k
        return search(instance, kappa_value, tol=tol, max_iter=max_iter, time_limit=time_limit,
                      refine=bool(refine), options=options)
    return _Run(instance, kappa_value, tol=tol, max_iter=max_iter, time_limit=time_limit,
                refine=bool(refine), options=options).run()


def _dot(a, b):
    """Serial float64 dot product of two arrays of the same size (no BLAS threads)."""
    return float(_k.vdot(np.ascontiguousarray(a, dtype=np.float64).ravel(),
                         np.ascontiguousarray(b, dtype=np.float64).ravel()))


def _norm(a):
    return math.sqrt(_dot(a, a))


def _sigma(W, d):
    return float(_norm(W)) / d
