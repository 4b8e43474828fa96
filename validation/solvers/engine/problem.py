"""The constraint problem of a memory instance, its working sets and full passes (``notes/optimal_solver.md``).

A memory ``W`` stores an instance when every margin ``m_i(W) = (t_mu - u_rho)^T W e_mu``
(input ``mu``, competitor ``rho`` other than its target) is positive.  The ``p (p - 1)``
(``p (K - 1)``) constraints are never held: :class:`ConstraintProblem` keeps the arrays
the kernels need, a :class:`DecisionWorkingSet` holds the near-active constraints of the
L-BFGS iteration, :func:`full_pass` scans every constraint in blocks (float32 for the
search) and :func:`exact_min_margins` verifies in float64.  Shared by the ``optimal``,
``svp`` and max-margin solvers and the search modes.

A memory is ``d_out x d_in`` (``d x d`` for a square instance).  With an output
covariance the DP candidates are ``u = Sigma_out^(1/2) g`` for the generator's ``g``:
:class:`ConstraintProblem` then holds the generator's targets ``g_mu`` and scores them,
and the generated candidates, against the images ``Sigma_out^(1/2) W e_mu``
(:meth:`ConstraintProblem.images`); gradients map back through the same root
(:meth:`DecisionWorkingSet.combine`).
"""

from __future__ import annotations

import numpy as np

from . import _optimal_kernels as _k
from validation.instances import _candidate_kernels as _candidates

from .memories import hebbian_memory

__all__ = ["ConstraintProblem", "DecisionWorkingSet", "PassResult", "PassTally", "select_rows", "full_pass",
           "exact_min_margins"]


class ConstraintProblem:
    """Arrays of one instance in the form the kernels want (no d p^2 storage).

    ``blocked`` (p, n_candidates) bool, optional: constraints left out (the search modes).
    ``d`` is the dimension of a square instance (None for a rectangular one), ``d_in`` and
    ``d_out`` the dimensions of the inputs and outputs, ``scale = sqrt(d_in d_out)`` the
    unit of the normalised margin.
    """

    def __init__(self, instance, blocked=None):
        self.instance = instance
        self.d = None if instance.d is None else int(instance.d)
        self.d_in, self.d_out = int(instance.d_in), int(instance.d_out)
        self.scale = instance.score_scale
        self.p = int(instance.p)
        self.problem = str(instance.problem)
        self.inputs = np.ascontiguousarray(instance.inputs, dtype=np.float64)
        # OP: the search's p x d x d products in float32 (DP: its scans dominate, kept float64)
        self.inputs32 = self.inputs.astype(np.float32) if self.problem == "op" else None
        # DP with an output covariance: the generator's targets g_mu, scored against
        # Sigma_out^(1/2) W e_mu (the images); otherwise the targets themselves
        self.output_root = instance.output_root if self.problem == "dp" else None
        if self.output_root is not None:
            self.targets = instance.generator_pairs(np.arange(self.p), instance.target_index)
        else:
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
        if self.inputs.shape != (self.p, self.d_in) or self.targets.shape != (self.p, self.d_out):
            raise ValueError(
                f"instance arrays must have shapes (p, d_in) = ({self.p}, {self.d_in}) and (p, d_out) = "
                f"({self.p}, {self.d_out}); got inputs {self.inputs.shape} and targets {self.targets.shape}")
        if self.problem == "dp":
            self.key = np.uint64(instance.dp_key)
            self.code = int(instance.candidate_code)
        elif self.problem != "op":
            raise ValueError(f"instance.problem must be 'op' or 'dp', got {self.problem!r}")
        # constraints left out (validation.solvers.searches): blocked[mu, rho] drops (mu, rho)
        self.blocked = None if blocked is None else np.asarray(blocked, dtype=bool)

    def hebbian(self):
        """The Hebbian memory ``sum_mu t_mu e_mu^T`` of the instance (its own targets), (d_out, d_in)."""
        return hebbian_memory(self.instance.targets, self.inputs)

    # images of the inputs: Y[mu] = W e_mu
    def images(self, W):
        """Images of the inputs ``Y[mu] = W e_mu`` (float64), shape (p, d_out); with a DP
        output covariance ``Sigma_out^(1/2) W e_mu``."""
        if self.output_root is not None:
            return (self.inputs @ W.T) @ self.output_root
        return self.inputs @ W.T

    def search_images(self, W):
        """Images for the search's float32 margins: an sgemm for OP, ``images(W)`` for DP."""
        if self.inputs32 is None:
            return self.images(W)
        return self.inputs32 @ W.astype(np.float32).T

    def rows_per_block(self, block_elements):

        """Inputs per block of a full pass with at most ``block_elements`` scores."""
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
            _candidates.dp_block_margins(self.key, self.code, np.ascontiguousarray(Y[start:stop]),
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
        _candidates.dp_block_scan(self.key, self.code, np.ascontiguousarray(Y_rows), self.targets,
                           inputs.astype(np.int64), self.n_cand, M, norms)
        self._mask(M, inputs, np.arange(self.n_cand)[None, :])
        return M, norms

    def listed_margins(self, Y_rows, inputs, cols):
        """DP: margins (n, L) of ``inputs`` against their listed competitors ``cols`` (n, L)."""
        M = np.empty(cols.shape)
        _candidates.dp_listed_margins(self.key, self.code, np.ascontiguousarray(Y_rows), self.targets,
                               inputs.astype(np.int64), np.ascontiguousarray(cols, dtype=np.int64), M,
                               np.empty(0))
        self._mask(M, inputs, cols)
        return M

    def _mask(self, M, inputs, cols):
        """+inf where the column is the input's target or a left-out constraint."""
        M[cols == self.target_index[inputs][:, None]] = np.inf
        if self.blocked is not None:
            M[self.blocked[inputs[:, None], cols]] = np.inf


class DecisionWorkingSet:
    """Working set of the decision solver: constraints (mu, rho) grouped by input: ptr (p+1), rows, cols, DP vectors."""

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
            self.table = np.empty((self.size, prob.d_out), dtype=np.float32)
            if self.size:
                _candidates.dp_fill_pairs(prob.key, prob.code, self.rows, self.cols, self.table)
            self.index = np.arange(self.size)
        else:
            self.table = prob.table32
            self.index = self.cols
        self._combine = np.empty((prob.p, prob.d_out))

    def margins(self, Y):

        """Margins (float32 search precision) of the working-set constraints at images ``Y``."""
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
        """sum_i coef_i a_i as a (d_out, d_in) float64 matrix.

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
            vec = np.empty((keep.size, prob.d_out))
            _candidates.dp_fill_pairs(prob.key, prob.code, self.rows[keep], self.cols[keep], vec)
            ptr = np.zeros(prob.p + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.rows[keep], minlength=prob.p), out=ptr[1:])
            _k.active_combine(coef[keep], prob.targets, vec, ptr, np.arange(keep.size), V)
        else:
            V[:] = 0.0
        if prob.output_root is not None:  # DP: a_i = Sigma_out^(1/2) (g_mu - g_rho) e_mu^T
            return prob.output_root @ (V.T @ prob.inputs)
        if exact or prob.inputs32 is None:
            return V.T @ prob.inputs
        return (V.astype(np.float32).T @ prob.inputs32).astype(np.float64)


class PassResult:
    """What a full pass returns: the new working set and statistics of all constraints."""

    __slots__ = ("ws", "min_margin", "loss", "violated", "input_min")

    def __init__(self, ws, min_margin, loss, violated, input_min=None):
        self.ws = ws                  # DecisionWorkingSet
        self.min_margin = min_margin  # smallest margin (float32 search precision for OP; under
        #                               screening only its sign is exact: min of the scored ones)
        self.loss = loss              # full squared hinge sum_i (1 - m_i)_+^2
        self.violated = violated      # per input: number of margins below 1 (int64, p)
        self.input_min = input_min    # DP: per-input float64 smallest margin, NaN if not scanned


def select_rows(M, threshold, keep, limit):
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


class PassTally:
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
        smallest margins of the inputs, as :func:`exact_min_margins` computes them).
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

        """The :class:`PassResult` (``canonical``: entries in (input, competitor) order)."""
        rows = np.concatenate(self.rows) if self.rows else np.empty(0, np.int64)
        cols = np.concatenate(self.cols) if self.cols else np.empty(0, np.int64)
        if canonical:  # order by (input, competitor): independent of which inputs were screened
            order = np.argsort(rows * self.prob.n_cand + cols, kind="stable")
            rows, cols = rows[order], cols[order]
        return PassResult(DecisionWorkingSet(self.prob, rows, cols), self.min_margin, self.loss, self.violated,
                           self.input_min)


def _op_block(prob, Y32, start, stop, threshold, keep, tally):
    """OP block: float32 score GEMM and the selection kernel (no margin matrix)."""
    n = stop - start
    S = Y32[start:stop] @ prob.table32.T
    if prob.blocked is not None:  # a left-out competitor never beats the target
        left_out = prob.blocked[start:stop].copy()
        # the target column is no constraint: a given-up input (whole row left out) keeps its
        # own score, else its target score is -inf too and the row's minimum is -inf - (-inf) = NaN
        left_out[np.arange(n), prob.target_index[start:stop]] = False
        S[left_out] = -np.inf
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


def full_pass(prob, W, threshold, max_active, block_elements, screen=None):
    """Scan all constraints: new working set, smallest margin, full loss, violations per input.

    ``screen`` (a :class:`DPScreen`, DP only) skips the candidates that provably cannot
    enter the working set (``notes/optimal_solver.md``, section 6); the working set,
    loss and violation counts are the same as without it, in (input, competitor) order.
    """
    step = prob.rows_per_block(block_elements)
    keep = min(prob.n_cand - 1, int(max_active))
    tally = PassTally(prob)
    Y = prob.search_images(W)  # OP: float32 scores; DP: float64 (the screen's bounds)
    for start in range(0, prob.p, step):
        stop = min(prob.p, start + step)
        if prob.problem == "op":
            _op_block(prob, Y, start, stop, threshold, keep, tally)
        elif screen is not None:
            screen.block(Y, np.arange(start, stop), threshold, keep, tally)
        else:
            M = prob.block_margins(Y, start, stop, exact=False)
            r, cols = select_rows(M, threshold, keep, prob.n_cand - 1)
            tally.add(np.arange(start, stop), M, r, cols)
    return tally.result(canonical=screen is not None)


def exact_min_margins(prob, W, block_elements, known=None):
    """float64 per-input smallest margin min_{rho != mu} (t_mu - u_rho) . W e_mu.

    ``known`` (DP, from a full pass at this very ``W``: ``PassResult.input_min``) holds
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
