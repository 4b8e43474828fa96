"""The decision run of the ``optimal`` solver: L-BFGS on the squared hinge with its certificates.

:class:`DecisionRun` is one solve at full rank or rank m (method, certificates and
working sets: :mod:`validation.solvers.optimal` and ``notes/optimal_solver.md``).  It is
the engine of ``optimal``, of the search modes (:mod:`validation.solvers.searches`: rounds
with constraints left out) and of the rank-m restart search
(:mod:`validation.solvers.rank_search`).  :func:`monitored` installs a progress
callback for every run in its block.
"""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np

from replica.common.checks import check_int, check_kappa, check_real

from .certificate import AggregatedBound
from .dual_ascent import certified_max_margin
from .lbfgs import LBFGS, dot, line_search, norm, norm_poly
from .memories import balanced_factors
from .problem import ConstraintProblem, exact_min_margins, full_pass
from .screening import DPScreen
from .options import OptimalOptions
from .solution import Solution, check_full_rank_if_rectangular, rank_for
from .start import Unknowns, initial_point

__all__ = ["DecisionRun", "checked_arguments", "monitored", "progress_callback", "score_sigma"]

_monitor: dict = {"callback": None}   # set by monitored()


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


def progress_callback():
    """The callback installed by :func:`monitored` (None outside its block)."""
    return _monitor["callback"]


def score_sigma(W, d):
    """``||W||_F / d``: the standard deviation of a competitor score under ``W`` (``d``:
    the dimension, or ``sqrt(d_in d_out)`` for a rectangular memory)."""
    return float(norm(W)) / d


# a working-set round is undone when the full loss rises above its lowest value so far
# (by more than _EARLY_RISE x during the first _EARLY_PASSES full passes) while the cap
# truncates violated constraints (notes/optimal_solver.md, section 7)
_EARLY_RISE = 3.0
_EARLY_PASSES = 3
# the aggregated not-stored bound (validation.solvers.engine.certificate): iterates are kept once
# their own in-loop bound is below _KEEP x tol and the combination is sought once it is
# below _SEEK x tol (the combinations measured are 1-3x below the last iterate's bound)
_KEEP, _SEEK = 100.0, 10.0


class DecisionRun:
    """State of one ``optimal`` solve; one method per phase.

    ``__init__`` sets up and scales the start, :meth:`refresh` is the full pass (working
    set, verification, bound), :meth:`decide` and :meth:`refine` take the decisions of
    their phase, :meth:`iterate` runs L-BFGS on the working set and :meth:`finish` builds
    the float64-verified :class:`validation.Solution`.
    """

    def __init__(self, instance, kappa, *, tol, max_iter, time_limit, refine, options, blocked=None):
        self.t_start = time.perf_counter()
        self.kappa, self.tol, self.max_iter, self.refine_on, self.o = kappa, tol, max_iter, refine, options
        self.prob = prob = ConstraintProblem(instance, blocked)
        # d: the unit of the normalised margin (the dimension; sqrt(d_in d_out) if rectangular)
        self.d, self.p = prob.scale, prob.p
        if prob.d is not None:
            self.params = Unknowns(prob.d, rank_for(prob.d, kappa))
        else:  # rectangular: full rank only (checked_arguments)
            self.params = Unknowns(prob.d_out, min(prob.d_in, prob.d_out), prob.d_in)
        self.deadline = None if time_limit is None else self.t_start + time_limit
        self.screen = DPScreen(prob) if options.screen_dp and prob.problem == "dp" else None
        x = initial_point(prob, self.params, options.initial)
        W = self.params.W(x)
        threshold = np.inf if self.p <= 64 else self.threshold(score_sigma(W, self.d))
        fp = full_pass(prob, W, threshold, options.max_active, options.block_elements, self.screen)
        self.ws = fp.ws
        # Scale the start so that the working-set loss is minimal along its ray.  Not for
        # the full-rank DP decision (p > 64): there the first refresh() would scan again
        # every input with more than its tracked number of violated competitors (about
        # half of them from the Hebbian start), while at the unscaled start it reuses this
        # very pass (notes/optimal_solver.md, section 6).  Rank-m starts and the rounds of
        # the search modes keep the rescaled start, so their lower-bound verdicts do not change.
        self.start_pass = None
        if options.rescale_dp_start or prob.problem != "dp" or self.p <= 64 or self.params.factored \
                or blocked is not None:
            m_ws = self.ws.margins(prob.search_images(W))
            scale, _ = line_search(np.zeros_like(m_ws), m_ws, None, 0.0, (0, 0, 0, 0, 0))
            if scale > 0:
                x = x * (math.sqrt(scale) if self.params.factored else scale)
        else:
            self.start_pass = (x, fp)  # the first refresh() is at this very point: reuse the pass
        self.x = x
        self.m_ws = None          # working-set margins at x, set by every refresh()
        self.lbfgs = LBFGS(options.memory)
        self.max_active = options.max_active
        self.phase = "decide"
        self.status = "undecided"
        self.stopped = False      # ended on a stopping criterion, not a budget
        self.message_extra = ""
        self.iterations = self.refine_iterations = self.full_passes = 0
        self.bound = np.inf       # smallest certified upper bound on the normalised margin
        self.aggregate = AggregatedBound()  # recent iterates of the working set, for that bound
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

        """Working-set threshold ``1 + active_slack * sigma``."""
        return 1.0 + self.o.active_slack * sigma

    def out_of_time(self):

        """True once the time limit has passed."""
        return self.deadline is not None and time.perf_counter() > self.deadline

    def run(self):

        """Full passes, decisions and L-BFGS rounds until a stop; returns :meth:`finish`."""
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
                if self.phase == "decide" and self.bound <= self.tol and self.decide() == "stop":
                    break  # certified inside the iterations (_stop_inner)
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
        return full_pass(self.prob, W, self.threshold(sigma), self.max_active, self.o.block_elements,
                          self.screen)

    def _truncating(self, fp):
        return self.max_active < self.prob.n_cand - 1 and np.any(fp.violated > self.max_active)

    def refresh(self):
        """Full pass: undo a bad round, grow the cap, verify in float64, tighten the bound."""
        params, prob, d = self.params, self.prob, self.d
        W = params.W(self.x)
        sigma = score_sigma(W, d)
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
            sigma = score_sigma(W, d)
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
            exact = exact_min_margins(prob, W, self.o.block_elements, known=fp.input_min)
            if exact.min() > 0:
                gamma = d * float(exact.min()) / max(norm(W), 1e-300)
                if self.best is None or gamma > self.best[0]:
                    self.best = (gamma, self.x.copy())
                    self.best_margins = (self.best[1], exact)  # reused by finish()
        r = np.maximum(1.0 - self.m_ws, 0.0)
        if r.sum() > 0:
            self._tighten(r)

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
            factor = self.d / (gamma * max(norm(self.params.W(x_best)), 1e-300))
            self.x = x_best * (math.sqrt(factor) if self.params.factored else factor)
            W = self.params.W(self.x)
            self.ridge = 1.0 / max(dot(W, W), 1e-300)
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
        mm = certified_max_margin(self.prob.instance, W0, tol=self.o.refine_tol, time_limit=remaining, callback=relay)
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

        """True when the iteration or time budget is spent or L-BFGS stalled (sets the message)."""
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

    def _tighten(self, lam):
        """The bound with the float64 certificate of the weights ``lam >= 0`` on the working set (section 3)."""
        self.bound = min(self.bound, self.d * norm(self.ws.combine(lam, exact=True)) / float(lam.sum()))
        return self.bound

    def _stop_inner(self, r, gnorm, W, G):
        """Stopping tests of the inner loop at the current gradient ``G`` (W-space) and its norm in x."""
        if self.phase == "refine":
            if gnorm <= self.o.stage_tol * 2.0 * self.ridge * norm(W):
                self.stage_converged = True
                return True
            return False
        if r.sum() > 0 and not self.params.factored:
            # in-loop bound: d ||sum_i lam_i a_i|| / sum_i lam_i for the best nonnegative
            # combination lam of the residuals of this and the last few iterates (the float32
            # gradients give it; validation.solvers.engine.certificate).  Below tol it is recomputed
            # in float64; that value is a certificate as it stands (it holds for any lam >= 0
            # on any subset, notes/optimal_solver.md, section 3), so not_stored needs no
            # further full pass
            in_loop = self.d * gnorm / (2.0 * float(r.sum()))
            if in_loop <= _KEEP * self.tol:
                if self.aggregate.owner is not self.ws:
                    self.aggregate.reset(self.ws)
                self.aggregate.add(r, -0.5 * G)
            if in_loop <= _SEEK * self.tol:
                value, w = self.aggregate.best()
                if self.d * value <= self.tol:
                    if self._tighten(self.aggregate.weights(w)) <= self.tol:
                        return True
            if in_loop <= self.tol < self.bound:  # the last iterate alone (the NNLS weights are approximate)
                if self._tighten(r) <= self.tol:
                    return True
            if in_loop <= 0.5 * self.tol:
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
            poly = norm_poly(W, D1, D2) if self.ridge else (0, 0, 0, 0, 0)
            step, _ = line_search(self.m_ws, m1, m2, self.ridge, poly)
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
            if self._stop_inner(r, norm(g), W, G):
                break
            direction = lbfgs.direction(g)
            if dot(direction, g) >= 0:
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
            exact = exact_min_margins(self.prob, W, self.o.block_elements, known=known)
        w_norm = float(norm(W))
        margin = d * float(exact.min()) / w_norm if w_norm > 0 else -np.inf
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
        self.final_x = x
        factors = balanced_factors(W, params.rank) if params.factored else None
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

    def final_factors(self):
        """Copies of the iterate's own factors (Q, R) at the point :meth:`finish` returned.

        They give the same W as the result's balanced factors, split as the iteration
        left them (a warm start that continues the iteration).
        """
        return tuple(a.copy() for a in self.params.split(self.final_x))

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


def checked_arguments(instance, kappa, tol, max_iter, time_limit, refine, options) -> dict:
    """The arguments of :func:`validation.solvers.optimal.solve_optimal`, checked.

    Returns
    -------
    dict
        ``kappa`` (float), ``tol``, ``max_iter``, ``time_limit``, ``refine`` (bool) and
        ``options`` (:class:`OptimalOptions`): the keywords of :class:`DecisionRun`.

    Raises
    ------
    ValueError
        Bad kappa or option values, unknown options, ``top_k`` not below the number of
        candidates of the instance, ``kappa < 1`` on a rectangular instance.
    """
    kappa = float(check_kappa(kappa, "kappa"))
    check_full_rank_if_rectangular(instance, kappa)
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
    return {"kappa": kappa, "tol": tol, "max_iter": max_iter, "time_limit": time_limit, "refine": bool(refine),
            "options": options}
