"""The memories of the Zipf error, one function each: ``run(instance, settings) -> (W, budget_ended)``.

The registry (:class:`~validation.solvers.engine.registry.MemorySpec`) names them, and
:func:`validation.measure_zipf` runs each on the same weighted instances
(``notes/zipf.md``).  ``settings`` is the measurement's :class:`validation.measurements.zipf.ZipfSettings`
(``adam_steps``, ``give_up_fraction``, ``time_limit``); ``budget_ended`` is True when the
solve ended on a step or time budget (its W is still measured).
"""

from __future__ import annotations

from ..solvers import solve
from ..solvers.engine.memories import hebbian_memory
from ..solvers.hebbian import hebbian_matrix

__all__ = ["weighted_give_up", "hebbian_rule", "frequency_weighted_hebbian", "adam_cross_entropy",
           "adam_weighted_cross_entropy"]


def _ended(sol):
    return sol.matrix(), sol.status == "undecided"


def weighted_give_up(instance, settings):
    """The weighted give-up search of ``optimal`` (largest squared hinge per unit of frequency given up first)."""
    return _ended(solve(instance, "optimal", refine=False, time_limit=settings.time_limit,
                        options={"give_up": True, "give_up_fraction": settings.give_up_fraction}))


def hebbian_rule(instance, settings):
    """The Hebbian rule ``W = sum_mu u_mu e_mu^T`` (unweighted): the W of ``solve(instance, "hebbian")``."""
    return hebbian_matrix(instance, 1.0)[0], False


def frequency_weighted_hebbian(instance, settings):
    """The frequency-weighted Hebbian memory ``W = sum_mu f_mu u_mu e_mu^T`` (no budget)."""
    return hebbian_memory(instance.targets * instance.weights[:, None], instance.inputs), False


def adam_cross_entropy(instance, settings):
    """Adam on the unweighted softmax cross-entropy, ``adam_steps`` steps from W = 0."""
    return _ended(solve(instance, "adam", max_iter=settings.adam_steps, time_limit=settings.time_limit,
                        options={"weighted": False}))


def adam_weighted_cross_entropy(instance, settings):
    """Adam on the frequency-weighted cross-entropy ``sum_mu f_mu CE_mu``, ``adam_steps`` steps from W = 0."""
    return _ended(solve(instance, "adam", max_iter=settings.adam_steps, time_limit=settings.time_limit,
                        options={"weighted": True}))
