"""What ``validation reproduce`` knows about its solvers, one small function per rule.

Every choice of the run that depends on a solver's name is made here, so that the
plan, the stages and the report ask these functions instead of testing names:

* :func:`takes_run_options`: which solver takes the run's time limit and search options;
* :func:`decision_settings`: a capacity decision asks for storability only (``refine=False``);
* :func:`rank_search_settings`: a rank-constrained memory is found by the rank-m search
  with ``restarts`` starts;
* :func:`rank_solver`: the solver of the rank-constrained memories;
* :func:`scales_to_large_d`: which solver runs the large-d capacity estimates;
* :func:`is_hebbian`: the Hebbian rule, measured against its own theory;
* :func:`capacity_ensemble`: the ensemble of a solver's capacity estimates;
* :func:`accuracy_reference`: the solver whose theory an accuracy curve is compared with;
* :func:`trains_cross_entropy`: the solver of the cross-entropy accuracy curves.

See ``notes/reproduce.md``.
"""

from __future__ import annotations

__all__ = ["takes_run_options", "decision_settings", "rank_search_settings", "rank_solver", "scales_to_large_d",
           "is_hebbian", "capacity_ensemble", "accuracy_reference", "trains_cross_entropy"]


def takes_run_options(solver: str) -> bool:
    """Whether ``solver`` takes the run's solve options (time limit, ``refine``, ``restarts``, give-up): ``optimal``."""
    return solver == "optimal"


def decision_settings(solver: str) -> dict:
    """Options of a capacity decision: storability only, no max-margin refinement (``optimal``: ``refine=False``)."""
    return {"refine": False} if takes_run_options(solver) else {}


def rank_search_settings(solver: str, kappa: float, restarts: int) -> dict:
    """Options of a rank-constrained solve: ``restarts`` starts of the rank-m search at ``kappa < 1`` (``optimal``)."""
    return {"restarts": restarts} if takes_run_options(solver) and kappa < 1.0 else {}


def rank_solver() -> str:
    """Solver of the rank-constrained memories (kappa < 1): ``optimal`` (the LP is full rank only)."""
    return "optimal"


def scales_to_large_d(solver: str) -> bool:
    """Whether ``solver`` runs the large-d estimates: ``optimal`` (the LP's memory grows as d p^2)."""
    return solver == "optimal"


def is_hebbian(solver: str) -> bool:
    """Whether ``solver`` is the Hebbian rule (its own theory: ``replica.hebbian_*``; not an optimal memory)."""
    return solver == "hebbian"


def capacity_ensemble(solver: str, hebbian_ensemble: str) -> str:
    """Ensemble of the capacity estimates of ``solver``: ``hebbian_ensemble`` for the Hebbian rule, else gaussian."""
    return hebbian_ensemble if is_hebbian(solver) else "gaussian"


def accuracy_reference(solver: str) -> str:
    """Solver whose theory accuracy ``solver``'s curve is compared with (Adam: the best memory, ``optimal``)."""
    return "optimal" if trains_cross_entropy(solver) else solver


def trains_cross_entropy(solver: str) -> bool:
    """Whether ``solver`` trains on the softmax cross-entropy (``adam``, the protocol of ``notes/ce_protocol.md``)."""
    return solver == "adam"
