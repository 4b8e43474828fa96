"""The rank-m search behind ``solve(instance, "optimal", kappa=k, restarts=R)`` (``k < 1``).

The rank-m problem ``W = Q R^T`` is not convex, so one local search can end at a
stationary point of the factor problem without storing a storable instance.  The search:

1. **Full-rank decision** (the decision run of :func:`validation.solvers.optimal.solve_optimal`
   at ``kappa = 1``, no refinement).  ``not_stored`` there is a certificate for rank m too
   (every rank-m W is a W): the search ends ``not_stored``.
2. **Starts**, in this order, until one stores: 0 the top-m SVD of the full-rank W
   (or the user's ``options.initial``), 1 the truncated Hebbian W, ``>= 2`` random
   Gaussian factors from the solve's ``seed`` (start ``k`` draws from
   ``SeedSequence(seed, spawn_key=(k,))``, so a seed reproduces the search bit for bit).
3. **Per start**: factor L-BFGS (:class:`validation.solvers.engine.decision.DecisionRun` with
   ``options.initial = (Q, R)``) for at most
   ``options.start_max_iter`` iterations.  (Singular value projection,
   :mod:`validation.solvers.svp`, from the point where a start ends was measured as a
   polish and never stored an instance that the start had not: it is not part of the
   search, ``notes/rank_search.md``.)

Statuses (``notes/rank_search.md``): ``stored`` (float64 recall), ``not_stored`` (the
full-rank certificate), ``not_found`` (every planned start ended without storing: a
LOWER-BOUND verdict, never a certificate), ``undecided`` (the time limit or an
iteration budget cut the search before its planned starts ended).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from replica.common.seeds import resolve_seed

from ..instances.ensembles import check_square_instance
from .engine.decision import DecisionRun, checked_arguments
from .engine.memories import balanced_factors, hebbian_memory, project_rank
from .engine.options import OptimalOptions, SolveBudget, check_restarts
from .engine.registry import search_mode
from .engine.solution import assess, check_rank, rank_for
from .engine.warmup import warm_up

__all__ = ["solve_rank_search", "check_restarts", "DEFAULT_RESTARTS", "uses_rank_search"]

DEFAULT_RESTARTS = 32
"""Starts of the production setting (``restarts=None``); the search stops at the first
that stores, so a storable instance usually costs one start, and an unstorable one all
32 (``notes/rank_search.md``: 16 starts missed 1 of 96 instances that 64 starts stored at
d = 8, 10; 32 missed none)."""


def uses_rank_search(d, kappa, options) -> bool:
    """True when ``solve(..., "optimal")`` runs the restart search: rank below d, no search mode."""
    rank = rank_for(int(d), kappa)
    return rank < int(d) and not options.give_up and options.top_k == 1


class _Search:
    """State of one rank-m search: :meth:`full_rank`, :meth:`start_factors`, :meth:`run_start`, :meth:`result`."""

    def __init__(self, instance, kappa, options, budget):
        self.t_start = time.perf_counter()
        self.instance, self.kappa, self.o = instance, kappa, options
        self.d = int(instance.d)
        self.rank = rank_for(self.d, kappa)
        self.tol, self.max_iter, self.used = budget["tol"], budget["max_iter"], 0
        self.refine = budget["refine"]
        self.restarts = DEFAULT_RESTARTS if budget["restarts"] is None else budget["restarts"]
        self.seed = resolve_seed(budget["seed"])
        time_limit = budget["time_limit"]
        self.deadline = None if time_limit is None else self.t_start + time_limit
        self.starts = []          # per-start outcomes (info["starts"])
        self.full = None          # the full-rank decision
        self.best = None          # best Solution so far (most inputs recalled)
        self.cut = None           # why the search was cut short ("time_limit", "max_iter")

    def remaining(self):
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def _solve(self, kappa, initial, refine, max_iter):
        options = dataclasses.replace(self.o, initial=initial)
        args = checked_arguments(self.instance, kappa, self.tol, max_iter, self.remaining(), refine, options)
        search = search_mode("optimal", args["options"])
        sol = search(self.instance, **args) if search is not None else DecisionRun(self.instance, **args).run()
        self.used += int(sol.iterations)
        return sol

    def full_rank(self):
        """The full-rank decision; its W gives start 0."""
        self.full = self._solve(1.0, None, False, self.max_iter)
        return self.full

    def start_factors(self, k):
        """(kind, (Q, R)) of start ``k``."""
        if k == 0:
            if self.o.initial is not None:
                return "initial", self.o.initial
            return "full_rank_svd", balanced_factors(self.full.W, self.rank)
        if k == 1:
            W0 = hebbian_memory(self.instance.targets, self.instance.inputs)
            return "hebbian", balanced_factors(W0, self.rank)
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(k,)))
        shape = (self.d, self.rank)
        return "random", (rng.standard_normal(shape) / np.sqrt(self.d), rng.standard_normal(shape) / np.sqrt(self.d))

    def run_start(self, k):
        """One start: factor L-BFGS within the start's budget; returns its Solution."""
        t0 = time.perf_counter()
        kind, initial = self.start_factors(k)
        budget = min(self.o.start_max_iter, self.max_iter - self.used)
        sol = self._solve(self.kappa, initial, self.refine, max(budget, 1))
        outcome = self._outcome(sol, budget)
        self.starts.append({"start": k, "kind": kind, "outcome": outcome, "iterations": int(sol.iterations),
                            "recall_fraction": float(sol.recall_fraction),
                            "seconds": time.perf_counter() - t0})
        if self.best is None or sol.stored or sol.recall_fraction > self.best.recall_fraction:
            self.best = sol
        return sol

    def _outcome(self, sol, budget):
        """stored, stationary, budget (the start's planned iterations), or the cut: time_limit / max_iter."""
        if sol.stored:
            return "stored"
        if sol.converged:
            return "stationary"
        left = self.remaining()
        if left is not None and left <= 0:
            self.cut = "time_limit"
        elif budget < self.o.start_max_iter:
            self.cut = self.cut or "max_iter"
        else:
            return "budget"
        return self.cut

    def run(self):
        full = self.full_rank()
        if full.status == "not_stored":
            return self.result("not_stored")
        for k in range(self.restarts):
            left = self.remaining()
            if left is not None and left <= 0:
                self.cut = "time_limit"
            elif self.used >= self.max_iter:
                self.cut = self.cut or "max_iter"
            if self.cut:
                break
            if self.run_start(k).stored:
                return self.result("stored")
        return self.result("undecided" if self.cut else "not_found")

    def result(self, status):
        """The search's :class:`validation.Solution` (W of the storing start, or of the best start)."""
        sol = self.best
        if sol is None:  # not_stored or cut in the full-rank decision: its W truncated to rank m
            W, factors = project_rank(self.full.W, self.rank)
            stored, fraction, margin, _ = assess(self.instance, W)
            sol = dataclasses.replace(self.full, W=W, factors=factors, stored=stored,
                                      recall_fraction=fraction, margin=margin, rank=self.rank)
        stored_start = next((s["start"] for s in self.starts if s["outcome"] == "stored"), None)
        info = {**sol.info, "restarts": self.restarts, "seed": self.seed, "starts_tried": len(self.starts),
                "stored_start": stored_start, "starts": self.starts,
                "full_rank_status": self.full.status, "full_rank_seconds": float(self.full.seconds),
                "lower_bound": status == "not_found", "cut": self.cut}
        iterations = int(self.full.iterations) + sum(s["iterations"] for s in self.starts)
        return dataclasses.replace(
            sol, kappa=self.kappa, status=status, converged=status != "undecided",
            iterations=iterations, seconds=time.perf_counter() - self.t_start,
            message=self._message(status, sol), info=info)

    def _message(self, status, sol):
        tried = f"{len(self.starts)} of {self.restarts} planned start(s)"
        if status == "stored":
            last = self.starts[-1]
            return f"rank search: start {last['start']} ({last['kind']}) of {tried}; {sol.message}"
        if status == "not_stored":
            return f"not stored at rank {self.rank}: the full-rank certificate holds for every W; {self.full.message}"
        if status == "not_found":
            return (f"not_found: {tried} ended (stationary point or the start's iteration budget) without "
                    f"storing (best recall {sol.recall_fraction:.4g}); a LOWER-BOUND verdict of a non-convex "
                    f"search, not a certificate that no rank-{self.rank} W stores the instance")
        why = "the time limit" if self.cut == "time_limit" else "the iteration budget (max_iter)"
        return (f"undecided: {why} cut the rank-{self.rank} search after {tried} (best recall "
                f"{sol.recall_fraction:.4g})")


def solve_rank_search(instance, kappa, *, budget=None, options=None):
    """Rank-m storability by a restart search (``notes/rank_search.md``).

    Parameters
    ----------
    instance : validation.Instance
    kappa : float
        Rank fraction with ``m = max(1, round(kappa d)) < d``.
    budget : SolveBudget, optional
        The shared arguments of the solve (:func:`validation.solve` builds it; None fields
        take the defaults below):

        * ``tol``, ``refine`` -- as :func:`validation.solvers.optimal.solve_optimal`, for the
          full-rank decision and every start (defaults ``1e-3`` and True);
        * ``max_iter`` -- L-BFGS iterations of the whole search (full-rank decision and
          starts); when it runs out before the planned starts end the status is
          ``undecided``.  ``None``: 20000 for the full-rank decision plus
          ``start_max_iter`` per start;
        * ``time_limit`` -- wall time of the whole search;
        * ``seed`` -- stream of the random starts (``None``: ``DEFAULT_SEED``);
        * ``restarts`` -- most starts (``None``: :data:`DEFAULT_RESTARTS`).
    options : OptimalOptions or mapping, optional
        As :func:`validation.solvers.optimal.solve_optimal`; ``options.start_max_iter`` is
        the L-BFGS budget of one start.

    Returns
    -------
    validation.Solution
        ``solver="optimal"``; ``status`` in ``stored``, ``not_stored``, ``not_found``, ``undecided`` (module
        docstring).  ``info`` adds ``restarts``, ``seed``, ``starts_tried``,
        ``stored_start`` (index or None), ``starts`` (per start: ``start``, ``kind``,
        ``outcome`` in stored / stationary / budget (the start's planned iterations
        ran out) / max_iter / time_limit (the search was cut), ``iterations``,
        ``recall_fraction``, ``seconds``), ``full_rank_status``,
        ``full_rank_seconds``, ``lower_bound`` (True for ``not_found``) and ``cut``
        (None, ``"time_limit"`` or ``"max_iter"``).

    Raises
    ------
    ValueError
        For a rectangular instance (``d_in != d_out``), kappa outside (0, 1], or
        ``restarts`` not None or an integer >= 1.
    """
    kappa = check_rank(check_square_instance(instance, "solve_rank_search"), kappa)
    options = OptimalOptions.coerce(options)
    b = SolveBudget() if budget is None else budget
    restarts = check_restarts(b.restarts)
    max_iter = b.max_iter
    if max_iter is None:
        max_iter = 20000 + (DEFAULT_RESTARTS if restarts is None else restarts) * options.start_max_iter
    warm_up()  # compilation is not part of the time limit
    search = {"tol": 1e-3 if b.tol is None else b.tol, "max_iter": max_iter, "time_limit": b.time_limit,
              "seed": b.seed, "refine": True if b.refine is None else bool(b.refine), "restarts": restarts}
    return _Search(instance, kappa, options, search).run()
