"""Certified max-margin W at full rank: dual block coordinate ascent with a duality gap.

The max-margin memory solves the convex QP

    minimise (1/2) ||W||_F^2   subject to   m_i(W) = (t_mu - u_rho)^T W e_mu >= 1

over every constraint ``i = (mu, rho)`` (input ``mu``, competitor ``rho`` other than
its target; OP ``p (p - 1)`` or ``p (K - 1)``, DP every input's own candidates).  Its
dual is ``max_{lam >= 0} sum_i lam_i - (1/2) ||W(lam)||_F^2`` with
``W(lam) = sum_i lam_i (t_mu - u_rho) e_mu^T = C^T E`` (row ``c_mu`` of ``C`` collects
the terms of input ``mu``).  The solver runs block coordinate ascent on the dual, one
block per input (all of an input's constraints touch ``W`` only through
``y_mu = W e_mu``), on a working set of near-active constraints refreshed by full
passes over all constraints.  At every full pass ``W(lam)`` is rebuilt from ``lam`` in
float64 and two certificates are computed:

* ``margin = d min_i m_i(W) / ||W||_F``, the normalised margin of ``W`` over all
  constraints, verified in float64 (a lower bound on the best normalised margin);
* ``margin_bound = d ||W(lam)||_F / sum_i lam_i``, an upper bound on the best normalised
  margin valid for any ``lam >= 0`` (weak duality at the best scaling of ``lam``; it is
  never above ``d / sqrt(2 D(lam))``).

The relative gap ``(margin_bound - margin) / margin_bound`` is certified; the solve
stops when it is at most ``tol``.  The bound settles long before ``W(lam)`` itself has
a margin within ``tol`` of it, so once the bound stalls the solver also tries a
repaired primal: ``W(lam) / (1 - eps)`` projected onto the working set's constraints
``m_i >= 1`` by a few sweeps of the same kernel started from zero multipliers
(Hildreth's method), with ``eps = tol / 2``; the candidate is verified like every other
one.  See ``notes/max_margin.md``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from replica.common.checks import check_int, check_real
from replica.common.seeds import as_generator

from . import _maxmargin_kernels as _k
from .dual_working_set import DualWorkingSet, MaxMarginData, MaxMarginOptions, MaxMarginResult

__all__ = ["certified_max_margin", "checked_max_margin_arguments", "DualAscentRun"]

_PASS_RATIO = 3.0               # sweep cost per full-pass cost (at most a quarter in full passes)
_OP_PASS_COST = 2.0             # cost of an OP full pass per score flop, in sweep flops (measured)
_DP_PASS_COST = 50.0            # the same for DP: candidate regeneration (measured)
_CHUNK = 64                     # inputs per GEMM in a sweep
_BLOCK_ELEMENTS = 1 << 22       # scores per block in full passes
_FLOAT32_TOL = 1e-3             # tol from which the sweeps' GEMMs run in float32
_SEARCH_PRECISION = 1e-4         # relative gap below which a float32 estimate is always verified
_REPAIR_SLACK = 0.5             # the repair aims at margins 1 - eps, eps = _REPAIR_SLACK * tol
_REPAIR_STALL = 0.05            # repair once a full pass lowers the bound by at most this * tol (relative)
_REPAIR_SWEEPS = 20             # most sweeps of one repair


# ----------------------------------------------------------------------------------
# the solver
# ----------------------------------------------------------------------------------


class DualAscentRun:
    """State of one max-margin solve; one method per phase.

    ``__init__`` builds the first working set from the warm start, :meth:`sweep` runs
    dual coordinate ascent on the working set, :meth:`full_pass` rebuilds ``W(lam)``,
    refreshes the working set and the bound, :meth:`repair` tries a repaired primal once
    the bound stalls, :meth:`offer` and :meth:`consider` keep the best margin verified in
    float64 and :meth:`finish` builds the :class:`MaxMarginResult`.
    """

    def __init__(self, instance, W0, *, tol, max_iter, time_limit, seed, callback, options):
        self.t_start = time.perf_counter()
        self.deadline = None if time_limit is None else self.t_start + time_limit
        self.tol, self.max_iter, self.o, self.callback = tol, max_iter, options, callback
        # an instance, or its MaxMarginData (a subspace solve sets the projections on it)
        self.data = data = instance if isinstance(instance, MaxMarginData) else MaxMarginData(instance)
        self.rng = as_generator(seed)
        self.iterations = self.full_passes = 0
        self.bound = np.inf
        self.best = (-np.inf, np.zeros((data.d_out, data.d_in)))   # (verified margin, W)
        self.keep = min(options.max_active, data.n_cand - 1)
        start = data.hebbian() if W0 is None else W0
        if W0 is not None:
            self.consider(W0.copy())
        # first working set: the smallest margins of every input under the start
        rows, cols, _ = data.scan(start, np.inf, self.keep, _BLOCK_ELEMENTS)
        self.ws = DualWorkingSet.empty(data).merged(rows, cols)
        # the GEMMs of the sweeps: float32 unless tol asks for more than float32 images give
        self.sweep_dtype = np.float32 if tol >= _FLOAT32_TOL else np.float64
        self.Wt = np.zeros((data.d_in, data.d_out), dtype=self.sweep_dtype)
        self.status = None
        # the sweeps start on the working set the warm start chose (a full pass at
        # W(lam = 0) = 0 would drop it: every lam is 0, and it would pick arbitrary ties)
        self.lam_start = self.ws.lam.copy()   # lam at the start of the current round of sweeps
        self.history = []         # total steps of lam in the previous rounds (dual line search)
        self.rounds_since_pass = 0            # rounds of sweeps since the last full pass
        self.rounds_between = self.pass_rounds()
        self.pass_bound = np.inf              # the bound at the previous full pass
        self.repairs = 0                      # repaired candidates tried

    def out_of_time(self):

        """True once the time limit has passed."""
        return self.deadline is not None and time.perf_counter() > self.deadline

    def consider(self, W):
        """Verify ``W`` in float64 and keep it when its margin is the best so far."""
        margin = self.data.normalised(W, self.data.exact_min_margin(W, _BLOCK_ELEMENTS))
        if margin > self.best[0]:
            self.best = (margin, W)
        return margin

    def gap(self):

        """Certified relative gap ``(bound - margin) / bound`` (None without a storing W)."""
        margin = self.best[0]
        if not margin > 0 or not np.isfinite(self.bound):
            return None
        return (self.bound - margin) / self.bound

    def sweep(self):
        """One sweep over the inputs of the working set, in a random order."""
        self._sweep(self.Wt, self.ws.lam, self.o.omega, self.ws.inputs())

    def _sweep(self, Wt, lam, omega, order):
        """One sweep of the kernel over the inputs ``order``, shuffled in place first, on the
        memory ``Wt`` (transposed) and the multipliers ``lam`` (both updated in place);
        returns the largest projected-gradient violation met."""
        ws = self.ws
        self.rng.shuffle(order)
        worst = _k.dual_sweep(Wt, self.data.sweep_inputs, ws.sweep_vectors(self.sweep_dtype), ws.ptr, lam,
                              ws.vnorm2, order, _CHUNK, omega)
        self.iterations += 1
        return worst

    def round_end(self):
        """After a round of sweeps: rebuild W(lam) exactly (with the dual line search),
        tighten the bound; returns W and the working set's own normalised margin (an
        optimistic estimate: the working set is a subset of the constraints)."""
        W = self.extrapolate()
        self.Wt = np.ascontiguousarray(W.T, dtype=self.sweep_dtype)
        total = float(self.ws.lam.sum())
        if total > 0:
            self.bound = min(self.bound, self.data.scale * float(np.linalg.norm(W)) / total)
        margins = np.empty(self.ws.size)
        _k.set_margins(self.data.inputs @ W.T, self.ws.vecs, self.ws.ptr, margins)
        return W, self.data.normalised(W, float(margins.min()) if margins.size else np.inf)

    def full_pass(self, W):
        """Scan all constraints under W: refresh the working set, estimate and certify the margin."""
        data, o = self.data, self.o
        self.full_passes += 1
        rows, cols, mins = data.scan(W, 1.0 + o.active_slack, self.keep, _BLOCK_ELEMENTS)
        old, self.ws = self.ws, self.ws.merged(rows, cols)
        self.lam_start = self.ws.lam.copy()
        live = np.flatnonzero(old.lam > 0)   # kept by the merge: carry the directions over
        where = np.searchsorted(self.ws.keys, old.keys[live])
        self.history = [_carried(h, live, where, self.ws.size) for h in self.history]
        estimate = self.offer(W, mins)
        self.rounds_since_pass = 0
        self.rounds_between = self.pass_rounds()
        if self.callback is not None:
            self.callback(self.progress(estimate))

    def offer(self, W, mins):
        """Keep ``W`` when its margin (from the scan's per-input smallest margins ``mins``) is
        the best so far; returns the scan's normalised estimate."""
        estimate = self.data.normalised(W, float(mins.min()))
        if self.data.problem == "dp":   # the scan is float64 already
            if estimate > self.best[0]:
                self.best = (estimate, W)
        else:   # the float32 estimate may be off by ~1e-5 (relative): verify in float64
            slack = _SEARCH_PRECISION * self.bound
            if estimate > self.best[0] - slack and self.bound - estimate <= self.tol * self.bound + slack:
                self.consider(W)
        return estimate

    def repair_due(self, W):
        """True when a repair of ``W = W(lam)`` is worth its sweeps: the last full pass left
        the solve open and lowered the bound by at most ``_REPAIR_STALL * tol`` (relative;
        the dual has nearly settled while ``W(lam)`` lags), and the repaired candidate can
        end the solve.  Its normalised margin is at most ``(1 - eps) d / ||W||``, which
        must reach ``(1 - tol) bound``."""
        stalled = self.pass_bound - self.bound <= _REPAIR_STALL * self.tol * self.bound
        self.pass_bound = self.bound
        eps = _REPAIR_SLACK * self.tol
        reachable = (1.0 - eps) * self.data.scale >= (1.0 - self.tol) * self.bound * float(np.linalg.norm(W))
        return self.status is None and stalled and reachable

    def repair(self, W):
        """Try the repaired primal of ``W = W(lam)``: ``W / (1 - eps)`` projected onto the
        working set's constraints ``m_i >= 1`` (``eps = _REPAIR_SLACK * tol``).

        The sweep kernel started from zero multipliers at ``W / (1 - eps)`` is Hildreth's
        method for that projection; at most ``_REPAIR_SWEEPS`` sweeps (counted in
        ``iterations``), fewer once no working-set margin is below ``1 - eps / 4``.  The
        candidate's margin over all constraints is measured by a scan and verified like
        the dual iterate's (:meth:`offer`); the dual iterate is not changed.  The candidate,
        ``W / (1 - eps) + sum_i mu_i a_i`` with the projection's multipliers ``mu``, is rebuilt
        in float64, as ``W(lam)`` is, and returned.
        """
        eps = _REPAIR_SLACK * self.tol
        ws, data = self.ws, self.data
        Wt = np.ascontiguousarray(W.T / (1.0 - eps), dtype=self.sweep_dtype)
        multipliers = np.zeros(ws.size)
        order = ws.inputs()
        for _ in range(_REPAIR_SWEEPS):
            if self._sweep(Wt, multipliers, 1.0, order) < 0.25 * eps or self.out_of_time():
                break
        # rebuilt from the float64 multipliers (as W(lam) is): no float32 rounding of the
        # sweeps' copy reaches the candidate, which stays in a subspace solve's subspace
        candidate = W / (1.0 - eps) + ws.memory(multipliers)
        self.repairs += 1
        self.offer(candidate, data.scan(candidate, -np.inf, 1, _BLOCK_ELEMENTS)[2])
        return candidate

    def pass_rounds(self):
        """Rounds between full passes from a cost model (deterministic, so that ``seed``
        reproduces a solve): the sweeps between two passes cost ``_PASS_RATIO`` times a pass.

        A sweep costs ``4 p d^2`` (its GEMMs) ``+ 6 d n_ws`` flops, an OP pass
        ``_OP_PASS_COST p n_cand d``, a DP pass ``_DP_PASS_COST p n_cand d`` (candidate
        regeneration); the constants are measured ratios at d = 64
        (``notes/max_margin.md``).
        """
        data = self.data
        sweep = 4.0 * data.p * (data.d_in * data.d_out) + 6.0 * data.d_out * self.ws.size
        scale = _OP_PASS_COST if data.problem == "op" else _DP_PASS_COST
        full = scale * data.p * data.n_cand * data.d_out
        return max(1, math.ceil(_PASS_RATIO * full / (self.o.sweeps_per_pass * sweep)))

    def pass_due(self, ws_estimate):
        """A full pass follows after ``pass_rounds`` rounds, when the working set's own gap
        is below ``tol``, or when the budget is spent."""
        self.rounds_since_pass += 1
        return (self.rounds_since_pass >= self.rounds_between
                or self.bound - ws_estimate <= self.tol * self.bound
                or self.iterations >= self.max_iter or self.out_of_time())

    def extrapolate(self):
        """Exact dual line search over the recent changes of ``lam`` (a small subspace).

        The directions are the change of the free dual variables during this round and
        the total steps of the previous rounds (``directions`` in all).  ``D`` is a
        concave quadratic on their span before clipping at ``lam >= 0``; its maximiser
        is tried, clipped, and halved until ``D`` rises (at most 6 times).  Returns
        ``W(lam)`` of the kept point.
        """
        ws = self.ws
        previous, self.lam_start = self.lam_start, ws.lam.copy()
        if previous is None or self.o.directions == 0:
            return ws.memory()
        free = ws.lam > 0
        dirs = [np.where(free, ws.lam - previous, 0.0)] + [np.where(free, h, 0.0) for h in self.history]
        # one read of the working set: W(lam) by a float64 GEMM, the directions (they only
        # choose the step) by one in the sweeps' type; H and g are summed in float64
        W, *Ws = ws.memories(np.stack([ws.lam] + dirs), dtype=self.sweep_dtype, exact=1)
        H = np.array([[np.vdot(a, b) for b in Ws] for a in Ws])
        g = np.array([float(x.sum()) - float(np.vdot(W, Wx)) for x, Wx in zip(dirs, Ws)])
        beta = np.linalg.lstsq(H, g, rcond=1e-10)[0] if np.all(np.isfinite(H)) else np.zeros(len(dirs))
        step = sum(b * x for b, x in zip(beta, dirs))
        base = _dual(ws.lam, W)
        kept = W
        for _ in range(7):
            trial = np.maximum(ws.lam + step, 0.0)
            Wtrial = ws.memory(trial)
            if _dual(trial, Wtrial) > base:
                ws.lam[:] = trial
                self.lam_start = trial.copy()
                kept = Wtrial
                break
            step *= 0.5
        self.history = [ws.lam - previous] + self.history[:self.o.directions - 1]
        return kept

    def progress(self, estimate):
        """Where the solve is (for a progress display)."""
        return {"phase": "max_margin", "iterations": self.iterations, "full_passes": self.full_passes,
                "margin": float(self.best[0]), "estimate": float(estimate), "bound": float(self.bound),
                "gap": self.gap(), "repairs": self.repairs, "seconds": time.perf_counter() - self.t_start}

    def run(self):

        """Rounds of sweeps and full passes until a stop; returns :meth:`finish`."""
        try:
            while self.status is None:
                for _ in range(self.o.sweeps_per_pass):
                    self.sweep()
                    if self.iterations >= self.max_iter or self.out_of_time():
                        break
                W, ws_estimate = self.round_end()
                if self.pass_due(ws_estimate):
                    self.full_pass(W)
                    self.status = self.stop_status()
                    if self.repair_due(W):
                        self.repair(W)
                        self.status = self.stop_status()
        except KeyboardInterrupt:
            if self.callback is None:
                raise
            self.status = "interrupted"
        return self.finish()

    def stop_status(self):

        """The status that ends the solve after a full pass (None: go on)."""
        gap = self.gap()
        if gap is not None and gap <= self.tol:
            return "converged"
        if self.iterations >= self.max_iter:
            return "max_iter"
        if self.out_of_time():
            return "time_limit"
        return None

    def finish(self):

        """The :class:`MaxMarginResult` of the best verified state."""
        margin, W = self.best
        if self.status in ("max_iter", "time_limit") and self.data.problem == "op":
            self.consider(self.ws.memory())   # the last dual iterate, verified
            margin, W = self.best
        status = self.status
        if status != "converged" and not margin > 0:
            status = "no_margin" if status != "interrupted" else status
        gap = self.gap()
        msg = (f"normalised margin {margin:.6g} (float64, all constraints), certified upper bound "
               f"{self.bound:.6g}, relative gap " + ("none (no storing W)" if gap is None else f"{gap:.3g}")
               + f" after {self.iterations} sweeps and {self.full_passes} full passes")
        if status == "interrupted":
            msg = "interrupted (Ctrl-C); best verified state: " + msg
        elif status != "converged":
            msg = f"{status}: " + msg
        return MaxMarginResult(
            W=W.copy(), margin=float(margin), margin_bound=float(self.bound), gap=gap,
            iterations=int(self.iterations), full_passes=int(self.full_passes),
            seconds=time.perf_counter() - self.t_start, working_set_size=self.ws.size,
            support_size=int(np.count_nonzero(self.ws.lam)), status=status,
            converged=status == "converged", message=msg)


def _carried(values, live, where, size):
    """Values on the entries ``live`` of the old working set, moved to positions ``where``."""
    out = np.zeros(size)
    out[where] = values[live]
    return out


def _dual(lam, W):
    """Dual objective ``sum_i lam_i - ||W(lam)||_F^2 / 2``."""
    return float(lam.sum()) - 0.5 * float(np.vdot(W, W))


def certified_max_margin(instance, W0=None, *, tol=0.02, max_iter=100000, time_limit=None, seed=None,
                         callback=None, options=None) -> MaxMarginResult:
    """:func:`validation.solvers.maxmargin.solve_max_margin` without the kernel warm-up (same arguments).

    The decision run of ``optimal`` calls it for its full-rank refinement, after the
    warm-up of :mod:`validation.solvers.engine.warmup`.

    Raises
    ------
    ValueError
        As :func:`validation.solvers.maxmargin.solve_max_margin`.
    """
    args = checked_max_margin_arguments(instance, W0, tol, max_iter, time_limit, callback, options)
    return DualAscentRun(instance, seed=seed, **args).run()


def checked_max_margin_arguments(instance, W0, tol, max_iter, time_limit, callback, options) -> dict:
    """The arguments of :func:`certified_max_margin` checked: the keywords of :class:`DualAscentRun` but ``seed``.

    Raises
    ------
    ValueError
        As :func:`validation.solvers.maxmargin.solve_max_margin`.
    """
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_open=True, high_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    if time_limit is not None:
        time_limit = check_real(time_limit, "time_limit", low=0.0, low_open=True)
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable or None, got {callback!r}")
    shape = (int(instance.d_out), int(instance.d_in))
    if W0 is not None:
        W0 = np.array(W0, dtype=np.float64)
        if W0.shape != shape or not np.all(np.isfinite(W0)):
            raise ValueError(f"W0 must be a finite {shape} array, got shape {W0.shape}")
    options = MaxMarginOptions.coerce(options)
    return {"W0": W0, "tol": tol, "max_iter": max_iter, "time_limit": time_limit, "callback": callback,
            "options": options}
