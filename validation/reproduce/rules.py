"""What ``validation reproduce`` knows about its solvers: the rules of the run.

Every choice of the run that depends on the solver is made here, from the solver's
registry spec through :mod:`validation.solver_rules`, so that the plan, the stages and
the report never test names:

* :func:`takes_run_options`: which solver takes the run's time limit and search options;
* :func:`decision_settings`: a capacity decision asks for storability only (``refine=False``);
* :func:`rank_search_settings`: a rank-constrained memory is found by the rank-m search
  with ``restarts`` starts;
* :func:`rank_solver`, :func:`scales_to_large_d`, :func:`is_hebbian`,
  :func:`trains_cross_entropy` (from :mod:`validation.solver_rules`);
* :func:`capacity_ensemble`: the ensemble of a solver's capacity estimates;
* :func:`accuracy_reference`: the solver whose theory an accuracy curve is compared with.

See ``notes/reproduce.md``.
"""

from __future__ import annotations

from ..solver_rules import (is_hebbian, rank_solver, scales_to_large_d, supports_restarts, supports_search_modes,
                            trains_cross_entropy)
from ..solvers.engine.registry import solver_spec

__all__ = ["takes_run_options", "decision_settings", "rank_search_settings", "rank_solver", "scales_to_large_d",
           "is_hebbian", "capacity_ensemble", "accuracy_reference", "trains_cross_entropy"]


def takes_run_options(solver: str) -> bool:
    """Whether ``solver`` takes the run's solve options (time limit, ``refine``, ``restarts``, give-up)."""
    return supports_restarts(solver) and supports_search_modes(solver)


def decision_settings(solver: str) -> dict:
    """Options of a capacity decision: storability only (the spec's sweep defaults, ``optimal``: ``refine=False``)."""
    return dict(solver_spec(solver).sweep_options)


def rank_search_settings(solver: str, kappa: float, restarts: int) -> dict:
    """Options of a rank-constrained solve: ``restarts`` starts of the rank-m search at ``kappa < 1``."""
    return {"restarts": restarts} if solver_spec(solver).rank_search is not None and kappa < 1.0 else {}


def capacity_ensemble(solver: str, hebbian_ensemble: str) -> str:
    """Ensemble of the capacity estimates of ``solver``: ``hebbian_ensemble`` for the Hebbian rule, else gaussian."""
    return hebbian_ensemble if is_hebbian(solver) else "gaussian"


def accuracy_reference(solver: str) -> str:
    """Solver whose theory accuracy ``solver``'s curve is compared with (a cross-entropy baseline: ``rank_solver()``).

    A solver trained on the cross-entropy has no accuracy theory of its own; its curve is
    set beside the best memory's, the one of the rank-m capable certified solver.
    """
    return rank_solver() if trains_cross_entropy(solver) else solver
