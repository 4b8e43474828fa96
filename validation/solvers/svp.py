"""The ``svp`` solver: projected gradient on the rank-m matrices (singular value projection).

Each iteration takes a gradient step on the squared hinge
``f(W) = sum_i (1 - m_i(W))_+^2`` in W and projects the result onto the matrices of
rank at most ``m = max(1, round(kappa d))`` by the truncated SVD (Eckart-Young):
``W <- P_m(W - t grad f(W))``.  The trial step ``t`` is the exact minimiser of ``f``
along the straight line ``W - t grad f`` (``f`` is piecewise quadratic along a line),
and it is halved until the *projected* point lowers the full loss, so that the
iteration never diverges.  At ``kappa = 1`` there is no projection and the method is
plain gradient descent with an exact line search.

The arrays, working sets and full passes are those of the ``optimal`` solver
(:class:`validation.solvers.engine.problem.ConstraintProblem`,
:func:`~validation.solvers.engine.problem.full_pass`): the gradient is taken on the working set
of the last full pass, every accepted point is checked by a full pass over all
constraints, and ``stored`` is certified by float64 recall on all of them.
The squared-hinge residuals of every full pass give the Gordan-type bound of
``notes/optimal_solver.md`` (valid for every W, so for every rank-m W): ``not_stored``
when it is at most ``tol``.  See ``notes/rank_search.md``.
"""

from __future__ import annotations

import time

import numpy as np

from replica.common.checks import check_int, check_real

from ..instances.ensembles import check_square_instance
from .engine.lbfgs import line_search
from .engine.memories import dense_memory, project_rank
from .engine.options import SVPOptions
from .engine.problem import ConstraintProblem, exact_min_margins, full_pass
from .engine.solution import Solution, assess, check_rank, rank_for
from .engine.warmup import warm_up

__all__ = ["solve_svp", "SVPOptions", "project_rank", "check_rank"]


class _SVP:
    """State of one ``svp`` solve: :meth:`refresh` (full pass), :meth:`step`, :meth:`finish`."""

    def __init__(self, instance, kappa, *, tol, max_iter, time_limit, options):
        self.t_start = time.perf_counter()
        self.kappa, self.tol, self.max_iter, self.o = kappa, tol, max_iter, options
        self.prob = ConstraintProblem(instance)
        self.d, self.p = self.prob.d, self.prob.p
        self.rank = rank_for(self.d, kappa)
        self.deadline = None if time_limit is None else self.t_start + time_limit
        self.W = self._start(options.initial)
        self.iterations = self.full_passes = self.backtracks = 0
        self.bound = np.inf
        self.status = "undecided"
        self.stationary = False
        self.stored_W = None
        self.fp = self._pass(self.W)
        self._scale()

    def _start(self, initial):
        d = self.d
        if initial is None:
            W0 = self.prob.hebbian()
        elif isinstance(initial, tuple):
            Q, R = (np.asarray(a, dtype=np.float64) for a in initial)
            if Q.ndim != 2 or Q.shape != R.shape or Q.shape[0] != d:
                raise ValueError(f"initial factors must both have shape ({d}, r); got {Q.shape} and {R.shape}")
            W0 = dense_memory((Q, R))
        else:
            W0 = np.asarray(initial, dtype=np.float64)
        if W0.shape != (d, d) or not np.all(np.isfinite(W0)):
            raise ValueError(f"initial must be a finite ({d}, {d}) array or a (Q, R) pair; got shape {W0.shape}")
        return project_rank(W0, self.rank)[0]

    def _pass(self, W):
        self.full_passes += 1
        return full_pass(self.prob, W, 1.0, self.o.max_active, self.o.block_elements)

    def _scale(self):
        """Scale the start to the loss minimum along its ray (exact line search from 0)."""
        m = self.fp.ws.margins(self.prob.images(self.W))
        if m.size == 0:
            return
        t, _ = line_search(np.zeros_like(m), m, None, 0.0, (0, 0, 0, 0, 0))
        if t > 0:
            self.W = self.W * t
            self.fp = self._pass(self.W)

    def out_of_time(self):
        return self.deadline is not None and time.perf_counter() > self.deadline

    def refresh(self):
        """Decisions on the last full pass: float64 recall, then the certified bound."""
        if self.fp.min_margin > 0 and exact_min_margins(self.prob, self.W, self.o.block_elements).min() > 0:
            self.status, self.stored_W = "stored", self.W
            return True
        ws = self.fp.ws
        r = np.maximum(1.0 - ws.margins(self.prob.images(self.W)), 0.0)
        if r.sum() > 0:
            bound = self.d * float(np.linalg.norm(ws.combine(r, exact=True))) / float(r.sum())
            self.bound = min(self.bound, bound)
        if self.bound <= self.tol:
            self.status = "not_stored"
            return True
        return False

    def gradient(self):
        """Working-set margins at W and the gradient ``-2 sum_i (1 - m_i)_+ a_i`` of the squared hinge."""
        m0 = self.fp.ws.margins(self.prob.images(self.W))
        return m0, -2.0 * self.fp.ws.combine(np.maximum(1.0 - m0, 0.0))

    def step(self):
        """One projected-gradient step with backtracking; False when no step lowers the loss."""
        prob, ws, W = self.prob, self.fp.ws, self.W
        m0, G = self.gradient()
        gnorm = float(np.linalg.norm(G))
        if gnorm == 0.0 or not np.isfinite(gnorm):
            return False
        t, _ = line_search(m0, ws.margins(prob.images(-G)), None, 0.0, (0, 0, 0, 0, 0))
        if t <= 0:
            t = float(np.linalg.norm(W)) / gnorm * 1e-2
        loss = self.fp.loss
        for _ in range(self.o.max_backtracks):
            trial = project_rank(W - t * G, self.rank)[0]
            fp = self._pass(trial)
            if fp.loss < loss * (1.0 - 1e-12):
                self.W, self.fp = trial, fp
                self.iterations += 1
                return (loss - fp.loss) > self.o.stall_tol * loss
            self.backtracks += 1
            t *= 0.5
        return False

    def run(self):
        while not self.refresh():
            if self.iterations >= self.max_iter or self.out_of_time():
                break
            if not self.step():
                self.stationary = True
                self.refresh()
                break
        return self.finish()

    def finish(self):
        """The float64-verified :class:`validation.Solution`."""
        W_m, factors = project_rank(self.W, self.rank)
        W = W_m if self.rank < self.d else self.W
        stored, fraction, margin, _ = assess(self.prob.instance, W)
        status = "stored" if stored else ("not_stored" if self.status == "not_stored" else "undecided")
        bound = float(self.bound) if np.isfinite(self.bound) else None
        return Solution(
            solver="svp", kappa=self.kappa, rank=self.rank, W=W, factors=factors if self.rank < self.d else None,
            stored=stored, recall_fraction=fraction, margin=margin,
            converged=status != "undecided" or self.stationary, iterations=self.iterations,
            seconds=time.perf_counter() - self.t_start, status=status, message=self._message(status, margin),
            info={"margin_bound": bound, "tol": self.tol, "full_passes": int(self.full_passes),
                  "backtracks": int(self.backtracks), "loss": float(self.fp.loss),
                  "stationary": bool(self.stationary)})

    def _message(self, status, margin):
        rank = f"rank {self.rank}"
        if status == "stored":
            return f"stored (float64 recall of all {self.p} inputs) at {rank}; normalised margin {margin:.6g}"
        if status == "not_stored":
            return (f"not stored: certified bound {self.bound:.3g} <= tol {self.tol:.3g} on the normalised "
                    f"margin of every W (so of every {rank} W)")
        why = ("no projected step lowers the loss (stationary point of the projected iteration)"
               if self.stationary else
               f"budget ended (iterations {self.iterations}, time limit)" if self.out_of_time() else
               f"budget ended (max_iter {self.max_iter})")
        return (f"undecided at {rank}: {why}; loss {self.fp.loss:.4g}, margin bound {self.bound:.3g} "
                f"> tol {self.tol:.3g}")


def solve_svp(instance, kappa=1.0, *, tol=1e-3, max_iter=2000, time_limit=None, options=None):
    """Projected gradient descent on the rank-m matrices (singular value projection).

    Parameters
    ----------
    instance : validation.Instance
        OP or DP instance, one answer per fact or K distinct answers.
    kappa : float, optional
        Rank fraction in (0, 1]; the rank is ``m = max(1, round(kappa d))``.  At
        ``kappa = 1`` the method is gradient descent with an exact line search.
    tol : float, optional
        ``not_stored`` when the certified bound on the normalised margin of every W
        is at most ``tol`` (default 1e-3).
    max_iter : int, optional
        Accepted projected-gradient steps (default 2000).
    time_limit : float or None, optional
        Wall-time budget in seconds (default: none).
    options : SVPOptions or mapping, optional
        Start, working-set cap, backtracking and stall settings.

    Returns
    -------
    validation.Solution
        ``solver="svp"``; ``status`` is ``stored`` (float64 recall of every input),
        ``not_stored`` (the full-rank certificate, ``notes/optimal_solver.md``) or
        ``undecided``; ``converged`` is True for a decision and for an undecided solve
        that ended at a stationary point (no projected step lowers the loss), False
        when ``max_iter`` or ``time_limit`` ended it.  ``info``: ``margin_bound``,
        ``full_passes``, ``backtracks``, ``loss`` (final squared hinge), ``stationary``.

    Raises
    ------
    ValueError
        For a rectangular instance (``d_in != d_out``), kappa outside (0, 1], bad ``tol``,
        ``max_iter``, ``time_limit`` or options, or an initial point of the wrong shape.

    Notes
    -----
    Method and its place in the rank-m search: ``notes/rank_search.md``.
    """
    kappa = check_rank(check_square_instance(instance, "solve_svp"), kappa)
    tol = check_real(tol, "tol", low=0.0, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    if time_limit is not None:
        time_limit = check_real(time_limit, "time_limit", low=0.0, low_open=True)
    options = SVPOptions.coerce(options)
    warm_up()
    return _SVP(instance, kappa, tol=tol, max_iter=max_iter, time_limit=time_limit, options=options).run()

