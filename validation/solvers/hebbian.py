"""Hebbian (correlation-matrix) memory ``W = sum_mu u_mu e_mu^T`` and its rank-m truncation.

See ``notes/simulation.md`` (solvers) and ``notes/hebbian_finite_size.md``.
"""

from __future__ import annotations

import time

from .engine.memories import even_split, hebbian_memory, truncated_svd
from .engine.solution import Solution, assess, check_full_rank_if_rectangular, check_rank, rank_for

__all__ = ["solve_hebbian", "hebbian_matrix"]


def _rank(instance, kappa):
    """Rank of the Hebbian memory: ``rank_for(d, kappa)``, ``min(d_in, d_out)`` if rectangular."""
    if instance.d is None:
        check_full_rank_if_rectangular(instance, check_rank(0, kappa))
        return min(instance.d_in, instance.d_out)
    return rank_for(instance.d, kappa)


def hebbian_matrix(instance, kappa=1.0):
    """The Hebbian memory of an instance, truncated to rank ``m`` for ``kappa < 1``.

    Parameters
    ----------
    instance : validation.Instance
    kappa : float
        Rank ratio in (0, 1]; ``m = max(1, round(kappa d))``.  A rectangular instance
        takes only ``kappa = 1`` (rank ``min(d_in, d_out)``).

    Returns
    -------
    W : ndarray (d_out, d_in)
        ``targets.T @ inputs``, or its best rank-m approximation (Eckart-Young:
        keep the m largest singular values).
    factors : tuple (Q, R) or None
        For ``m < d``: the balanced factors ``Q = U_m diag(s_m)^(1/2)``,
        ``R = V_m diag(s_m)^(1/2)`` (:mod:`validation.solvers.engine.memories`); ``W`` equals
        ``Q @ R.T`` to rounding (W is evaluated as ``(U_m diag(s_m)) @ V_m^T``).

    Raises
    ------
    ValueError
        If ``kappa`` is outside (0, 1], or not 1 for a rectangular instance.
    """
    rank = _rank(instance, kappa)
    W = hebbian_memory(instance.targets, instance.inputs)
    if instance.d is None or rank >= instance.d:
        return W, None
    U, s, V = truncated_svd(W, rank)
    # the truncated W in the evaluation order it has always had (its bits), the factors balanced
    W_m = (U * s) @ V.copy().T
    return W_m, even_split(U, s, V)


def solve_hebbian(instance, kappa=1.0) -> Solution:
    """Hebbian rule; ``status`` refers to the rule's W only.

    Parameters
    ----------
    instance : validation.Instance
    kappa : float
        Rank ratio in (0, 1].

    Returns
    -------
    Solution
        ``status`` "stored" if the Hebbian W recalls every input, else
        "not_stored" -- which says nothing about other memories.  ``converged``
        is True and ``iterations`` 0 (a closed-form rule).

    Raises
    ------
    ValueError
        For kappa outside (0, 1], or not 1 for a rectangular instance.
    """
    start = time.perf_counter()
    rank = _rank(instance, kappa)
    W, factors = hebbian_matrix(instance, kappa)
    stored, fraction, margin, _ = assess(instance, W)
    seconds = time.perf_counter() - start
    kind = "Hebbian W" if factors is None else f"rank-{rank} truncation of the Hebbian W"
    if stored:
        message = f"the {kind} recalls all {instance.p} inputs"
    else:
        message = (f"the {kind} recalls {fraction:.4g} of the inputs; 'not_stored' refers to "
                   f"this rule's W only, not to every memory")
    return Solution(solver="hebbian", kappa=float(kappa), rank=rank, W=W, factors=factors,
                    stored=stored, recall_fraction=fraction, margin=margin, converged=True,
                    iterations=0, seconds=seconds, status="stored" if stored else "not_stored",
                    message=message)
