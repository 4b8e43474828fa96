"""What the measurements and command lines assume about each solver: one function per rule.

The capacity estimate (:mod:`validation.capacity`), the accuracy curve
(:mod:`validation.accuracy`), the figures and both command lines ask these functions
instead of testing solver names themselves.  Each function states one rule; the solver
names it knows are listed in its body only.
"""

from __future__ import annotations

__all__ = ["theory_memory", "memory_label", "accuracy_is_exact", "accuracy_theory_memory",
           "undecided_as_not_stored_default", "decision_settings", "uses_rank_search", "records_restarts",
           "supports_search_modes", "supports_restarts", "time_limited_options"]


def theory_memory(solver: str) -> str:
    """The memory whose capacity theory a measurement with ``solver`` is set beside: ``"hebbian"`` or ``"optimal"``."""
    return "hebbian" if solver == "hebbian" else "optimal"


def memory_label(solver: str) -> str:
    """The name of the memory of ``solver`` in tables and figure titles (``"Hebbian"`` or the solver name)."""
    return "Hebbian" if solver == "hebbian" else solver


def accuracy_is_exact(solver: str) -> bool:
    """The W of ``solver`` is the memory its theory describes (the Hebbian rule): its accuracy is no lower bound."""
    return solver == "hebbian"


def accuracy_theory_memory(solver: str) -> str | None:
    """The memory of the accuracy theory beside a measured accuracy curve: ``"hebbian"``, ``"optimal"`` or None."""
    if solver == "hebbian":
        return "hebbian"
    if solver in ("optimal", "lp"):
        return "optimal"
    return None


def undecided_as_not_stored_default(solver: str) -> bool:
    """Default of ``undecided_as_not_stored``: True for the solvers that end without a decision on their own."""
    return solver in ("adam", "svp")


def decision_settings(solver: str, options: dict) -> dict:
    """``options`` of a storability decision: ``refine=False`` for ``optimal`` unless given (updated in place)."""
    if solver == "optimal":
        # storability is all that is measured: skip the max-margin refinement after "stored"
        options.setdefault("refine", False)
    return options


def uses_rank_search(solver: str, d: int, rank: int) -> bool:
    """``solver`` at rank ``rank < d`` runs the rank-m restart search (``notes/rank_search.md``)."""
    return solver == "optimal" and rank < d


def records_restarts(solver: str, d: int, rank: int, options: dict) -> bool:
    """A storage trial runs the rank-m restart search (no ``give_up`` or ``top_k`` mode): its starts are recorded."""
    return (uses_rank_search(solver, d, rank) and not options.get("give_up")
            and int(options.get("top_k", 1)) == 1)


def supports_search_modes(solver: str) -> bool:
    """``solver`` has the search modes ``give_up`` and ``top_k`` (``notes/top_k.md``, ``notes/recall_accuracy.md``)."""
    return solver == "optimal"


def supports_restarts(solver: str) -> bool:
    """``solver`` takes the setting ``restarts`` of the rank-m search."""
    return solver == "optimal"


def time_limited_options(solver: str, time_limit: float) -> dict:
    """Solver options of a decision with a wall-time budget per solve (``refine=False``; ``{}`` without a budget)."""
    return {"refine": False, "time_limit": time_limit} if solver == "optimal" else {}
