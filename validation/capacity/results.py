"""Result types of the capacity estimate: the counts at one p and the whole estimate."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from replica.common.loads import bits_per_parameter
from replica.common.results import Result

from .fit import LogisticFit
from .loads import load

__all__ = ["CurvePoint", "CapacityEstimate", "FACTS_STORED"]

FACTS_STORED = "all_facts_stored"
"""The status of a capacity estimate of N given facts in which every load tried stored, up to
p = N: p_c lies above N and is not measured (not a fit)."""


@dataclass(frozen=True)
class CurvePoint(Result):
    """Counts at one p: ``trials`` run = stored + not_stored + undecided + errors + not_found.

    ``not_stored`` counts certified verdicts only; ``not_found`` counts the
    lower-bound verdicts of the search modes of ``optimal`` (``top_k``, ``give_up``:
    no W found, not a certificate), which the fit counts as not stored.  ``status`` is
    ``"ok"`` when at least one trial was decided (stored, not stored or not found) and
    ``"undecided"`` when none was (every trial undecided or an error); ``converged`` is
    ``status == "ok"``.  ``bits_per_parameter``: ``p log2 p`` over the free parameters of the
    memory (``replica.common.loads.bits_per_parameter``; NaN when not given).
    """

    STATUSES: ClassVar[tuple] = ("ok", "undecided")

    p: int
    alpha: float
    trials: int
    stored: int
    not_stored: int
    undecided: int
    errors: int
    status: str
    converged: bool
    message: str
    not_found: int = 0
    bits_per_parameter: float = math.nan

    @classmethod
    def from_counts(cls, d, p, counts, kappa=1.0) -> CurvePoint:
        """From ``[stored, not_stored, undecided, errors, trials(, not_found)]`` at ``p`` (rank ``kappa d``)."""
        stored, not_stored, undecided, errors, trials = counts[:5]
        not_found = counts[5] if len(counts) > 5 else 0
        ok = stored + not_stored + not_found > 0
        message = f"{stored} stored, {not_stored} not stored, {undecided} undecided, {errors} errors"
        if not_found:
            message += f", {not_found} not found (lower-bound verdicts)"
        return cls(p, load(d, p), trials, stored, not_stored, undecided, errors,
                   "ok" if ok else "undecided", ok, message, not_found, bits_per_parameter(p, d, d, kappa))

    @property
    def decided(self) -> int:
        """Stored + not stored + not found trials."""
        return self.stored + self.not_stored + self.not_found


@dataclass(frozen=True)
class CapacityEstimate(Result):
    """Measured capacity of one (d, problem, solver, kappa, ensemble).

    Attributes
    ----------
    p_c, p_c_low, p_c_high : float
        Where the fitted P(stored) = 1/2 and its 95 % profile-likelihood interval.
    bits_per_parameter : float
        Property (also in ``to_dict()``, and ``theory_bits_per_parameter`` for the theory's
        p_c): ``p_c log2 p_c`` over the free parameters of the rank-``kappa d`` memory
        (``replica.common.loads.bits_per_parameter``); NaN when p_c is.
    alpha, alpha_low, alpha_high : float
        The same as loads p ln p / d^2.
    slope : float
        Fitted logistic slope in ln p (transition width ~ 1/slope in ln p).
    curve : tuple of CurvePoint
    theory : dict
        ``{p_c, alpha, alpha_c, source}`` of :func:`theory_capacity`.
    undecided, errors : int
        Trials that were undecided or failed (excluded from the fit unless undecided
        trials are counted as not stored).
    status : str
        The fit's status (:class:`LogisticFit`): ``"ok"``, ``"separated"`` (interval
        from the gap between all-stored and none-stored points), ``"unbracketed"``
        (P = 1/2 not inside the grid; the interval is clipped and p_c is unreliable) or
        ``"failed"`` (no decided trial; p_c and its interval are NaN, ``None`` in
        ``to_dict``); or, for given embeddings only, ``"all_facts_stored"``: every
        decided trial stored at every load tried, up to all N given facts, so p_c > N.
        That is not a fit: ``p_c_low = N``, ``p_c_high`` infinite, ``p_c`` and ``slope``
        NaN (``None`` in ``to_dict``), and measuring p_c needs more facts.
    converged : bool
        ``status`` is ``"ok"`` or ``"separated"`` (p_c located).
    message : str
    seed, trials : int
        Base seed and trials per grid point per round.
    seconds : float
    solver_options : dict
    design : str
        ``"grid"`` or ``"bracket"``: how the first points were placed.
    criterion : str
        ``"all"`` (stored = every input recalled) or ``"accuracy:A"`` (stored = the
        returned W recalls at least the fraction A; for solvers other than ``hebbian``
        p_c is then a lower bound on the accuracy capacity, and ``message`` says so).
    outputs : int or None
        ``K`` distinct answers shared by the facts, or None (one answer per fact; the
        key ``outputs`` is then absent from ``to_dict``).
    not_found : int
        Trials with the lower-bound verdict ``not_found`` of a search mode of
        ``optimal`` (``solver_options`` ``top_k >= 2`` or ``give_up``): counted as not
        stored, so p_c is then a LOWER BOUND on the threshold (``message`` says so;
        the key ``not_found`` is absent from ``to_dict`` when no trial had it).
    generator : int or None
        DP: the candidate generator of the instances (``make_instance(generator=)``);
        None for the OP (the key ``generator`` is then absent from ``to_dict``).
    d_in, d_out, embeddings, facts : int, int, str, int, or None
        Set by :func:`validation.capacity.estimate_embedding_capacity`: the shape of the
        memory (loads ``p ln p / (d_in d_out)``), the embeddings file and its number of
        facts N; None otherwise (the keys are then absent from ``to_dict``).
    """

    STATUSES: ClassVar[tuple] = LogisticFit.STATUSES[:-1] + (FACTS_STORED,) + LogisticFit.STATUSES[-1:]

    d: int
    problem: str
    solver: str
    kappa: float
    ensemble: str
    p_c: float
    p_c_low: float
    p_c_high: float
    alpha: float
    alpha_low: float
    alpha_high: float
    slope: float
    curve: tuple
    theory: dict
    undecided: int
    errors: int
    status: str
    converged: bool
    message: str
    seed: int
    trials: int
    seconds: float
    solver_options: dict = field(default_factory=dict)
    design: str = "grid"
    criterion: str = "all"
    outputs: int | None = None
    not_found: int = 0
    generator: int | None = None
    d_in: int | None = None
    d_out: int | None = None
    embeddings: str | None = None
    facts: int | None = None

    def _shape(self) -> tuple:
        return (self.d, self.d) if self.d_in is None else (self.d_in, self.d_out)

    @property
    def bits_per_parameter(self) -> float:
        """``p_c log2 p_c / (free parameters)`` of the fitted p_c (NaN when the fit failed)."""
        return bits_per_parameter(self.p_c, *self._shape(), self.kappa)

    @property
    def theory_bits_per_parameter(self) -> float:
        """``bits_per_parameter`` of the theory's p_c (NaN without one)."""
        p_c = self.theory.get("p_c")
        return math.nan if p_c is None else bits_per_parameter(p_c, *self._shape(), self.kappa)

    @property
    def lower_bound(self) -> bool:
        """p_c is a lower bound: some trials were ``not_found`` (or undecided counted as not stored)."""
        return self.not_found > 0 or "lower bound" in self.message

    def _payload(self) -> dict:
        return {"d": self.d, "problem": self.problem, "solver": self.solver, "kappa": self.kappa,
                "ensemble": self.ensemble, "p_c": self.p_c, "p_c_low": self.p_c_low,
                "p_c_high": self.p_c_high, "alpha": self.alpha, "alpha_low": self.alpha_low,
                "alpha_high": self.alpha_high, "slope": self.slope,
                "curve": [c.to_dict() for c in self.curve],
                "theory": {k: self.theory[k] for k in ("p_c", "alpha", "alpha_c") if k in self.theory},
                "theory_source": self.theory.get("source"),
                "undecided": self.undecided, "errors": self.errors, "status": self.status,
                "converged": self.converged, "message": self.message, "seed": self.seed,
                "trials": self.trials, "seconds": self.seconds, "solver_options": dict(self.solver_options),
                "design": self.design, "criterion": self.criterion,
                **({} if self.outputs is None else {"outputs": self.outputs}),
                **({"not_found": self.not_found} if self.not_found else {}),
                **({} if self.generator is None else {"generator": self.generator}),
                "bits_per_parameter": self.bits_per_parameter,
                "theory_bits_per_parameter": self.theory_bits_per_parameter,
                **({} if self.embeddings is None else {"d_in": self.d_in, "d_out": self.d_out,
                                                       "embeddings": self.embeddings, "facts": self.facts})}

