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
(constraints left out, :mod:`validation.solvers.searches`), it follows the ridge path
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
L-BFGS iterates on the working set (numba kernels, ``validation.solvers.engine._optimal_kernels``),
and a full pass over all ``p (p - 1)`` constraints (blocked float32 GEMM for OP,
regenerated candidates for DP; the ``p x p`` (``p x K``) score matrix is never held) refreshes
the working set every ``refresh`` iterations, and whenever the working set is
recalled or its problem has converged.  DP full passes are *screened*
(:class:`validation.solvers.engine.screening.DPScreen`):
an input whose untracked candidates provably keep margins above the working-set
threshold (a Cauchy-Schwarz bound from its last full scan) has only its tracked
candidates regenerated; the pass's working set, loss and violation counts are those of
a plain pass.  Decisions are taken only on full passes
and checked in float64.  See ``notes/optimal_solver.md``.

Layout
------
This module is the front end (:func:`solve_optimal`).  The engine lives below it:
:mod:`~validation.solvers.engine.problem` (constraints, working set, full passes, float64
verification), :mod:`~validation.solvers.engine.screening` (DP screen),
:mod:`~validation.solvers.engine.lbfgs` (L-BFGS, exact line search),
:mod:`~validation.solvers.engine.start` (unknowns, starting points),
:mod:`~validation.solvers.engine.decision` (the decision run), :mod:`~validation.solvers.engine.dual_ascent`
(the certified max-margin refinement) and :mod:`~validation.solvers.engine.warmup`.
"""

from __future__ import annotations

from .engine.decision import DecisionRun, checked_arguments, monitored
from .engine.options import OptimalOptions
from .engine.registry import search_mode
from .engine.warmup import warm_up

__all__ = ["solve_optimal", "OptimalOptions", "monitored"]


def solve_optimal(instance, kappa=1.0, *, tol=1e-3, max_iter=20000, time_limit=None, refine=True,
                  options=None, seed=None):
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
        :mod:`validation.solvers.searches`).
    seed : None, int, SeedSequence or Generator, optional
        Only the give-up restarts (``give_up_restarts > 0``) draw random numbers: their
        cost perturbations come from this seed (None: ``DEFAULT_SEED``).  Ignored
        otherwise.

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
    args = checked_arguments(instance, kappa, tol, max_iter, time_limit, refine, options)
    warm_up()  # before the clock starts: compilation is not part of the time limit
    search = search_mode("optimal", args["options"])
    if search is not None:
        return search(instance, **args, seed=seed)
    return DecisionRun(instance, **args).run()
