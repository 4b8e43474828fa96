"""The result type every solver returns (:class:`Solution`), its statuses and the rank rule.

This is the bottom layer of :mod:`validation.solvers`: the solver modules import it
(never the front end :mod:`validation.solvers`), and it imports no solver.

The rank of a rank-constrained memory is ``m = max(1, round(kappa d))`` for every
solver (:func:`rank_for`): a kappa small enough that ``kappa d`` rounds to 0 gives rank 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from replica.common.checks import check_kappa
from replica.common.results import Result

from .memories import dense_memory

__all__ = ["Solution", "STATUSES", "assess", "rank_for", "check_rank", "check_full_rank_if_rectangular"]

STATUSES = ("stored", "not_stored", "undecided", "not_found")
"""The statuses of a :class:`Solution` (``notes/simulation.md``)."""


def rank_for(d: int, kappa: float) -> int:
    """Rank ``m = max(1, round(kappa d))`` of a rank-constrained memory.

    Parameters
    ----------
    d : int
        Dimension.
    kappa : float
        Rank ratio in (0, 1].

    Returns
    -------
    int
        Python's ``round`` (half to even) is used: ``kappa d = 2.5 -> 2``.

    Raises
    ------
    ValueError
        If ``kappa`` is outside (0, 1].
    """
    kappa = float(check_kappa(kappa))
    return max(1, int(round(kappa * d)))


def check_rank(d: int, kappa: float) -> float:
    """``kappa`` checked for a rank-constrained solve at dimension ``d``; returns it as a float.

    The rank is :func:`rank_for` ``(d, kappa) = max(1, round(kappa d))``: every kappa in
    (0, 1] is valid, a ``kappa d`` that rounds to 0 gives rank 1.

    Raises
    ------
    ValueError
        For kappa outside (0, 1] or NaN.
    """
    return float(check_kappa(kappa, "kappa"))


def check_full_rank_if_rectangular(instance, kappa) -> None:
    """A rectangular instance (``d_in != d_out``) is solved at full rank only.

    Its rank is ``min(d_in, d_out)``: a rank-constrained rectangular memory is not supported.

    Raises
    ------
    ValueError
        For ``kappa != 1`` on an instance with ``Instance.d = None``.
    """
    if getattr(instance, "d", 0) is None and float(kappa) != 1.0:
        raise ValueError(f"kappa must be 1 for a rectangular instance (d_in={instance.d_in}, "
                         f"d_out={instance.d_out}): rank-constrained rectangular memories are not "
                         f"supported, got kappa={kappa!r}")


@dataclass(frozen=True, eq=False)
class Solution(Result):
    """Result of :func:`solve`.

    Attributes
    ----------
    solver : str
    kappa : float
    rank : int
        ``max(1, round(kappa d))``.
    W : ndarray (d, d) or None
        The memory (float64).
    factors : tuple (Q, R) or None
        At rank ``m < d``: ``W = Q @ R.T`` (to rounding) with Q, R of shape (d, m), split
        evenly, ``Q = U_m S_m^(1/2)``, ``R = V_m S_m^(1/2)``, for every solver
        (:mod:`validation.solvers.engine.memories`); None at full rank.
    stored : bool
        The returned W recalls all p inputs (verified in float64, ties fail).
    recall_fraction : float
        Fraction of recalled inputs.
    margin : float
        ``min_mu min_{rho != mu} (S[mu, mu] - S[rho, mu]) / (||W||_F / d)``; negative
        when some input is not recalled.
    converged : bool
        The solver ended on its own stopping criterion, so ``status`` is its final
        answer: True for every ``stored`` and ``not_stored`` decision and for the
        closed-form ``hebbian``, and for ``not_found`` (the search ran to its end); for
        ``undecided`` it is True only when the method has nothing left to do (``svp``: no
        projected step lowers the loss), and False when a budget (``max_iter``,
        ``time_limit``) or a numerical failure cut the solve short, so that a larger
        budget might decide it.  The max-margin refinement of ``optimal`` reports its
        own convergence in ``info["refine_converged"]``.
    iterations : int
    seconds : float
        Wall time of the solve.
    status : {"stored", "not_stored", "undecided", "not_found"}
        ``stored``: the returned W recalls every input (with ``top_k``: puts every
        target in the top k), verified in float64.  ``not_stored``: a statement
        about the whole class of W (rank m) for ``optimal``, ``svp`` and ``lp`` (a
        certificate), about the rule's own W for ``hebbian``; ``adam`` never says it.
        ``undecided``: neither (for a search: a budget cut it short).  ``not_found``:
        only the searches of ``optimal`` -- the rank-m restart search
        (:mod:`validation.solvers.rank_search`) and the search modes (``give_up``,
        ``top_k``; :mod:`validation.solvers.searches`) -- the search ran to its end
        without a storing W, a *lower-bound* verdict (the W recalls
        ``recall_fraction`` of the inputs, ``info["lower_bound"]`` is True), never a
        certificate; capacity estimates count it as not stored and report it apart.
        See ``message``, ``notes/simulation.md``, ``notes/rank_search.md`` and
        ``notes/top_k.md``.
    message : str
        What happened, in words.
    info : dict
        Solver-specific small diagnostics (JSON-friendly), e.g. the LP optimum.
    """

    STATUSES: ClassVar[tuple[str, ...]] = STATUSES

    solver: str
    kappa: float
    rank: int
    W: np.ndarray | None
    factors: tuple | None
    stored: bool
    recall_fraction: float
    margin: float
    converged: bool
    iterations: int
    seconds: float
    status: str
    message: str = ""
    info: dict = field(default_factory=dict)

    def matrix(self) -> np.ndarray:
        """The memory as a dense (d, d) array (``Q @ R.T`` when only factors are held).

        Returns
        -------
        ndarray (d, d)

        Raises
        ------
        ValueError
            If the solution holds neither W nor factors.
        """
        if self.W is not None:
            return self.W
        if self.factors is not None:
            return dense_memory(self.factors)
        raise ValueError("this Solution holds neither W nor factors")

    def _payload(self) -> dict:
        """Summary without arrays (``to_dict`` makes it JSON-safe: NaN and inf become None)."""
        return {
            "solver": self.solver,
            "kappa": float(self.kappa),
            "rank": int(self.rank),
            "stored": bool(self.stored),
            "recall_fraction": float(self.recall_fraction),
            "margin": float(self.margin),
            "converged": bool(self.converged),
            "iterations": int(self.iterations),
            "seconds": float(self.seconds),
            "status": self.status,
            "message": self.message,
            "info": dict(self.info),
        }


def assess(instance, W=None, *, images=None):
    """Verify a memory on an instance in float64.

    Parameters
    ----------
    instance : validation.Instance
    W : array_like (d_out, d_in), optional
        The memory.  Needed for the margin normalisation.
    images : array_like (p, d_out), optional
        ``images[mu] = W @ e_mu`` if already at hand (saves a product).

    Returns
    -------
    stored : bool
    recall_fraction : float
    margin : float
        Normalised margin (see :class:`Solution`).
    recalled : ndarray of bool (p,)

    Raises
    ------
    ValueError
        If ``W`` has the wrong shape.
    """
    from validation.measurements.recall import normalised_margin, recall_check

    mat = np.asarray(W, dtype=np.float64)
    if mat.shape != instance.shape:
        raise ValueError(f"W must have shape (d_out, d_in) = {instance.shape}, got {mat.shape}")
    S = instance.scores(mat) if images is None else instance.scores_from_images(images)
    recalled, margins = recall_check(S, None if instance.outputs is None else instance.target_index)
    return (bool(recalled.all()), float(recalled.mean()), normalised_margin(margins, mat), recalled)
