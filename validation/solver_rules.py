"""What the measurements and command lines assume about each solver: one function per rule.

The capacity estimate (:mod:`validation.capacity`), the accuracy curve
(:mod:`validation.accuracy`), the reproduction, the figures and both command lines ask
these functions instead of testing solver names. Each rule reads the solver's
:class:`~validation.solvers.engine.registry.SolverSpec`, so a solver added to the registry is
handled by every measurement without a change here (``docs/contributing.md``).
"""

from __future__ import annotations

from .solvers.engine.registry import solver_names, solver_spec

__all__ = ["theory_memory", "memory_label", "accuracy_is_exact", "accuracy_theory_memory",
           "undecided_as_not_stored_default", "uses_rank_search",
           "supports_search_modes", "supports_restarts", "time_limited_options", "is_hebbian",
           "trains_cross_entropy", "rank_solver", "scales_to_large_d"]


def theory_memory(solver: str) -> str:
    """The memory whose capacity theory a measurement with ``solver`` is set beside: ``"hebbian"`` or ``"optimal"``."""
    return solver_spec(solver).capacity_theory


def is_hebbian(solver: str) -> bool:
    """``solver``'s capacity goes with the Hebbian theory (``replica.hebbian_*``), not the optimal memory's."""
    return theory_memory(solver) == "hebbian"


def memory_label(solver: str) -> str:
    """The name of the memory of ``solver`` in tables and figure titles (``"Hebbian"`` or the solver name)."""
    return "Hebbian" if is_hebbian(solver) else solver


def accuracy_is_exact(solver: str) -> bool:
    """The W of ``solver`` is the memory its theory describes (a rule's own W): its accuracy is no lower bound."""
    return solver_spec(solver).not_stored == "rule"


def accuracy_theory_memory(solver: str) -> str | None:
    """The memory of the accuracy theory beside a measured accuracy curve: ``"hebbian"``, ``"optimal"`` or None."""
    return solver_spec(solver).accuracy_theory


def trains_cross_entropy(solver: str) -> bool:
    """``solver`` trains on the softmax cross-entropy (the protocol of ``notes/ce_protocol.md``)."""
    return solver_spec(solver).objective == "cross_entropy"


def undecided_as_not_stored_default(solver: str) -> bool:
    """Default of ``undecided_as_not_stored``: True for the solvers that end without a decision on their own."""
    return solver_spec(solver).undecided_as_not_stored


def uses_rank_search(solver: str, d: int, rank: int) -> bool:
    """``solver`` at rank ``rank < d`` runs the rank-m restart search (``notes/rank_search.md``)."""
    return solver_spec(solver).rank_search is not None and rank < d


def supports_search_modes(solver: str) -> bool:
    """``solver`` has the search modes ``give_up`` and ``top_k`` (``notes/top_k.md``, ``notes/recall_accuracy.md``)."""
    return solver_spec(solver).search_modes is not None


def supports_restarts(solver: str) -> bool:
    """``solver`` takes the setting ``restarts`` of the rank-m search."""
    return "restarts" in solver_spec(solver).shared


def time_limited_options(solver: str, time_limit: float) -> dict:
    """Solver options of a decision with a wall-time budget per solve (the sweep defaults and ``time_limit``).

    ``{}`` for a solver without sweep defaults (it runs on its own budgets).
    """
    spec = solver_spec(solver)
    return dict(spec.sweep_options, time_limit=time_limit) if spec.sweep_options else {}


def rank_solver() -> str:
    """The solver of rank-constrained memories (kappa < 1): the first registered one with a rank-m search."""
    return next(name for name in solver_names() if solver_spec(name).rank_search is not None)


def scales_to_large_d(solver: str) -> bool:
    """``solver`` can run the large-d capacity estimates: it has no size limit of its own (the LP has one)."""
    return solver_spec(solver).check_size is None
