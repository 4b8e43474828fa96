"""The data of the certified max-margin solve: its options, result, constraints and dual working set.

:class:`MaxMarginOptions` and :class:`MaxMarginResult` are the settings and the result of
:func:`validation.solve_max_margin`; :class:`MaxMarginData` holds the constraints of an
instance (full passes, the exact minimum margin) and :class:`DualWorkingSet` the dual
multipliers ``lam`` of a working set of constraints and ``W(lam)``.  The solve itself,
dual block coordinate ascent with a duality gap, is :mod:`validation.solvers.engine.dual_ascent`
(``notes/max_margin.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from replica.common.checks import check_int, check_real
from replica.common.results import Result
from validation.instances import _candidate_kernels as _candidates

from . import _maxmargin_kernels as _k
from .options import SolverOptions
from .problem import ConstraintProblem, exact_min_margins

__all__ = ["MaxMarginOptions", "MaxMarginResult", "MaxMarginData", "DualWorkingSet"]

_COMBINE_BYTES = 256 << 20      # most bytes of the C blocks one call of DualWorkingSet.memories holds


@dataclass(frozen=True)
class MaxMarginOptions(SolverOptions):
    """Settings of :func:`solve_max_margin` (``notes/max_margin.md``).

    Attributes
    ----------
    active_slack : float
        A full pass puts into the working set the constraints with margin below
        ``1 + active_slack`` (default 0.5, >= 0); constraints with a positive dual
        variable always stay.
    max_active : int
        Most constraints selected per input and full pass (default 16, >= 1): the
        smallest margins below the threshold.  Every constraint with a positive dual
        variable stays, so the working set grows where it must.
    sweeps_per_pass : int
        Sweeps over the working set per round (default 10, >= 1).  A round ends with
        the exact ``W(lam)``, the bound and the dual line search; a full pass follows
        when the sweeps since the last one cost three times as much as a pass (a cost
        model), when the working set's own gap is below ``tol``, or when the budget ends.
    omega : float
        Relaxation of the coordinate steps, in (0, 2) (default 1.5: over-relaxation;
        1 is exact coordinate maximisation).
    directions : int
        Dimension of the dual line search at the end of every round (default 4, >= 0):
        the change of the free dual variables during the round and the total steps of
        the previous ``directions - 1`` rounds; 0 switches it off.

    Raises
    ------
    ValueError
        For a value out of range, naming the option.

    Notes
    -----
    Fixed: one coordinate pass per input block and sweep (more passes cost more than
    they save), 64 inputs per GEMM in a sweep, ``2**22`` scores per block in full passes.
    """

    SOLVER: ClassVar[str] = "max_margin"

    active_slack: float = 0.5
    max_active: int = 16
    sweeps_per_pass: int = 10
    omega: float = 1.5
    directions: int = 4

    def __post_init__(self):
        self._set("active_slack", check_real(self.active_slack, "active_slack", low=0.0))
        self._set("omega", check_real(self.omega, "omega", low=0.0, high=2.0, low_open=True, high_open=True))
        for name in ("max_active", "sweeps_per_pass"):
            self._set(name, check_int(getattr(self, name), name, low=1))
        self._set("directions", check_int(self.directions, "directions", low=0))


@dataclass(frozen=True, eq=False)
class MaxMarginResult(Result):
    """Result of :func:`solve_max_margin` (``notes/max_margin.md``).

    Attributes
    ----------
    W : ndarray, float64, shape (d, d)
        The best float64-verified memory found (the dual iterate ``W(lam)``, or the warm
        start ``W0`` when that is better).
    margin : float
        Its normalised margin ``d min_i m_i(W) / ||W||_F`` over all constraints (float64);
        ``-inf`` when no W was verified.
    margin_bound : float
        Certified upper bound on the best normalised margin of the instance
        (``d ||W(lam)||_F / sum_i lam_i``); ``inf`` before the first dual step.
    gap : float or None
        Certified relative gap ``(margin_bound - margin) / margin_bound``; None when
        ``margin <= 0`` (no storing W found: no gap is claimed).
    iterations : int
        Sweeps of block coordinate ascent over the working set.
    full_passes : int
        Passes over all constraints.
    seconds : float
        Wall time of the solve.
    working_set_size, support_size : int
        Constraints in the final working set, and those with a positive dual variable.
    status : str
        ``"converged"`` (``gap <= tol``), ``"max_iter"`` or ``"time_limit"`` (the budget
        ended with a storing W but a larger gap), ``"no_margin"`` (the budget ended
        without any W of positive verified margin: the instance may not be storable),
        ``"interrupted"`` (Ctrl-C with a progress callback; the best verified state).
    converged : bool
        True for ``"converged"`` only.
    message : str
        One line: the margin, the bound and the gap.
    """

    STATUSES: ClassVar[tuple[str, ...]] = ("converged", "max_iter", "time_limit", "no_margin", "interrupted")

    W: np.ndarray = field(repr=False)
    margin: float
    margin_bound: float
    gap: float | None
    iterations: int
    full_passes: int
    seconds: float
    working_set_size: int
    support_size: int
    status: str
    converged: bool
    message: str

    def _payload(self) -> dict:
        out = super()._payload()
        out.pop("W", None)
        return out


# ----------------------------------------------------------------------------------
# instance data and full passes
# ----------------------------------------------------------------------------------


class MaxMarginData(ConstraintProblem):
    """Arrays of one instance (no ``d p^2`` storage), as the ``optimal`` solver holds them
    (``block_margins``: float32 OP search scores or float64; DP regenerated in float64),
    and the full passes of the max-margin solve.

    A solve restricted to a linear subspace of memories (``validation.solvers.rank_margin``)
    sets ``vector_basis`` (an orthonormal ``Q``: the constraint vectors are replaced by
    ``Q Q^T (t_mu - u_rho)``, memories ``Q X^T``) or ``sweep_inputs`` (the inputs
    ``E R R^T``: memories ``Y R^T``); the full passes always score with ``W`` itself,
    which lies in the subspace, so their margins are the projected ones
    (``notes/max_margin.md``, section 9)."""

    def __init__(self, instance):
        super().__init__(instance)
        self.sweep_inputs = self.inputs   # inputs of the sweeps and of W(lam)
        self.vector_basis = None          # Q: constraint vectors projected onto span(Q)
        self._inputs_copy = (None, None)  # (sweep_inputs it was made from, its float32 copy)

    def sweep_inputs_as(self, dtype):
        """``sweep_inputs`` in ``dtype``: itself for float64, else a copy made once per array
        (a subspace solve that sets new ``sweep_inputs`` gets a new copy)."""
        if np.dtype(dtype) == np.float64:
            return self.sweep_inputs
        source, copy = self._inputs_copy
        if source is not self.sweep_inputs or copy.dtype != dtype:
            copy = self.sweep_inputs.astype(dtype)
            self._inputs_copy = (self.sweep_inputs, copy)
        return copy

    def project(self, vecs):
        """Constraint vectors as the sweeps use them (projected onto ``span(Q)`` when set)."""
        Q = self.vector_basis
        return vecs if Q is None else (vecs @ Q) @ Q.T

    def scan(self, W, threshold, keep, block_elements):
        """Full pass: selected (rows, cols) with margin < threshold (the ``keep`` smallest per
        input) and per-input smallest margins (float32 for OP, float64 for DP)."""
        Y = self.images(W)
        step = self.rows_per_block(block_elements)
        rows, cols, mins = [], [], np.empty(self.p)
        for start in range(0, self.p, step):
            stop = min(self.p, start + step)
            M = self.block_margins(Y, start, stop, exact=False)
            idx = np.empty((stop - start, keep), dtype=np.int64)
            cnt = np.empty(stop - start, dtype=np.int64)
            _k.select_rows(M, float(threshold), keep, idx, cnt, mins[start:stop])
            rows.append(np.repeat(np.arange(start, stop), cnt))
            cols.append(idx[np.arange(keep)[None, :] < cnt[:, None]])
        return np.concatenate(rows), np.concatenate(cols), mins

    def exact_min_margin(self, W, block_elements):
        """Smallest margin over all constraints, float64."""
        return float(exact_min_margins(self, W, block_elements).min())

    def normalised(self, W, low):

        """Normalised margin ``d low / ||W||_F`` (``-inf`` for W = 0; ``sqrt(d_in d_out)`` for ``d``
        when rectangular)."""
        norm = float(np.linalg.norm(W))
        return self.scale * low / norm if norm > 0 else -np.inf


class DualWorkingSet:
    """Constraints grouped by input (sorted keys ``mu * n_cand + rho``), dual variables,
    competitor vectors and ``||t_mu - u_rho||^2``."""

    def __init__(self, data, keys, lam, vecs):
        self.data = data
        self.keys = keys
        self.lam = np.ascontiguousarray(lam, dtype=np.float64)
        rows = keys // data.n_cand
        self.ptr = np.zeros(data.p + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=data.p), out=self.ptr[1:])
        self.vecs = vecs                                   # t_mu - u_rho, float64
        self.vnorm2 = np.einsum("ij,ij->i", vecs, vecs)
        self._vecs32 = None

    @classmethod
    def empty(cls, data):
        """A working set without constraints."""
        return cls(data, np.empty(0, np.int64), np.empty(0), np.empty((0, data.d_out)))

    def sweep_vectors(self, dtype):
        """The vectors as the sweeps read them: ``vecs`` itself, or (``dtype`` float32: the
        sweeps' GEMMs run in float32) a float32 copy made once, which halves the memory
        traffic of the coordinate steps.  Certificates always use the float64 ``vecs``."""
        if np.dtype(dtype) == np.float64:
            return self.vecs
        if self._vecs32 is None:
            self._vecs32 = self.vecs.astype(np.float32)
        return self._vecs32

    def inputs(self):
        """The inputs with at least one constraint, in increasing order (a new array)."""
        return np.flatnonzero(np.diff(self.ptr) > 0)

    @property
    def size(self):
        """Number of constraints."""
        return int(self.keys.size)

    def merged(self, rows, cols):
        """A new working set: the constraints with ``lam > 0`` and the selected ones (the
        vectors of constraints already present are kept, the others made: DP candidates
        are regenerated, ``validation.instances._candidate_kernels``)."""
        data = self.data
        live = self.lam > 0
        keys = np.union1d(self.keys[live], rows.astype(np.int64) * data.n_cand + cols)
        lam = np.zeros(keys.size)
        lam[np.searchsorted(keys, self.keys[live])] = self.lam[live]
        if self.keys.size:
            old = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
            vecs = self.vecs.take(old, axis=0)
            miss = np.flatnonzero(self.keys[old] != keys)
        else:
            vecs = np.empty((keys.size, data.d_out))
            miss = np.arange(keys.size)
        if miss.size:
            mus, rhos = keys[miss] // data.n_cand, keys[miss] % data.n_cand
            if data.problem == "op":
                competitors = data.table[rhos]
            else:
                competitors = _candidates.dp_pairs(data.key, data.code, mus, rhos, data.d_out)
            diff = data.targets[mus] - competitors
            if data.output_root is not None:  # the generator's g_mu - g_rho: u = Sigma_out^(1/2) g
                diff = diff @ data.output_root
            vecs[miss] = data.project(diff)
        return DualWorkingSet(data, keys, lam, vecs)

    def memory(self, lam=None):
        """W(lam) = C^T E rebuilt from the dual variables (default: ``self.lam``) in float64."""
        return self.memories((self.lam if lam is None else lam)[None, :])[0]

    def memories(self, lams, dtype=np.float64, exact=0):
        """``W(lams[r])`` for every row of ``lams`` (shape (k, n)), as an array (k, d_out, d_in).

        The rows share each read of the constraint vectors (``_k.combine``, float64) and
        the GEMM ``[C_0 ... C_k-1]^T E``; rows go in groups of at most ``_COMBINE_BYTES`` of
        C.  The GEMM runs in ``dtype`` (float32 only where W chooses a search step), except
        for the first ``exact`` rows, which always get a float64 GEMM (a certificate's
        ``W(lam)``); with ``exact > 0`` the result is float64."""
        data = self.data
        lams = np.ascontiguousarray(lams, dtype=np.float64)
        k, p, d_out = lams.shape[0], data.p, data.d_out
        out = np.empty((k, d_out, data.d_in), dtype=np.float64 if exact else dtype)
        group = max(1, min(k, _COMBINE_BYTES // (8 * p * d_out)))
        for r0 in range(0, k, group):
            r1 = min(k, r0 + group)
            C = np.empty((p, r1 - r0, d_out))
            _k.combine(self.vecs, lams[r0:r1], self.ptr, C)
            split = min(max(exact - r0, 0), r1 - r0)   # rows of this group with a float64 GEMM
            for a, b, kind in ((0, split, np.float64), (split, r1 - r0, dtype)):
                if b > a:
                    block = C[:, a:b].reshape(p, (b - a) * d_out).astype(kind, copy=False)
                    out[r0 + a:r0 + b] = (block.T @ data.sweep_inputs_as(kind)).reshape(b - a, d_out, -1)
        return out
