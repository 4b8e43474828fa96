"""Capacity when many facts share an answer: ``K`` distinct outputs.

With ``K`` distinct answers each input sees ``K`` candidate fields (its target and
``K - 1`` competitors), so the water-filling block has ``K`` fields, not ``p``.  The
original problem (OP, outputs shared by all inputs) sees ``W`` only through the ``K``
vectors ``W^T u_k``: modulo the common shift of all scores it has
``N_eff = d min(K - 1, d)`` effective weights, while the decoupled problem (DP, own
candidates per input) keeps all ``d^2``.  The capacity solves

    p_c E[C_K] = F N_eff,      N_eff = d min(K - 1, d) (OP),  d^2 (DP),

as long as ``K < p_c`` (otherwise the block is the ``p`` distinct answers of
``replica.optimal.finite_size.capacity``).  For ``K = 2`` and margin 0, ``E[C_2] = 1/2`` and the
OP gives ``p_c = 2 d``: Cover's theorem.  Derivation, exact cases and heuristics:
``notes/many_to_one.md``.

Public functions
----------------
capacity_many_to_one
    ``replica.capacity(d, kappa, outputs=K, problem=...)`` with margin 0, ``top_k = 1``.
effective_weights
    ``N_eff`` of the OP or the DP with ``K`` outputs.
two_field_cost
    Closed-form ``E[C_2]`` (one Gaussian competitor) at any margin.
"""

from __future__ import annotations

import dataclasses
import math

from scipy import special

from ..common.validity import reports_validity
from .capacity_equation import (
    MAX_TOP_K,
    PROBLEMS,
    AccuracySettings,
    CapacityArguments,
    CapacityResult,
    capacity_arguments,
    distinct_outputs_capacity,
)
from ..common.checks import check_choice, check_int, check_real
from .cost import NORMAL_LAW, CostEstimator, control_mean, expected_cost_from
from .cost_table import CostTableMiss, tabulated_estimator
from ..asymptotic.quarter_circle import tail_second_moment

__all__ = ["capacity_many_to_one", "effective_weights", "two_field_cost", "shared_outputs_capacity"]


def effective_weights(d, outputs, problem="op") -> int:
    """Number of effective weights ``N_eff``: ``d min(K - 1, d)`` for the OP, ``d^2`` for the DP.

    The OP scores ``u_k^T W e`` depend on ``W`` only through ``V = U^T W`` (``K x d``),
    onto which ``W -> U^T W`` maps surjectively for ``K <= d``; the common shift
    ``V -> V + 1 c^T`` changes no score difference, leaving ``(K - 1) d`` directions.  For
    ``K > d`` the map is injective and ``1 c^T`` is not in its image: ``d^2``.  See
    ``notes/many_to_one.md`` (section 2).

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    outputs : int
        Number ``K >= 2`` of distinct answers.
    problem : {"op", "dp"}

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``d < 2``, ``outputs < 2`` or ``problem`` is not ``"op"`` or ``"dp"``.
    """
    d = check_int(d, "d", low=2)
    outputs = check_int(outputs, "outputs", low=2)
    problem = check_choice(problem, "problem", PROBLEMS)
    return d * min(outputs - 1, d) if problem == "op" else d * d


def two_field_cost(margin=0.0) -> float:
    """``E[C_2]`` for i.i.d. N(0, 1) target and competitor: ``[(m^2 + 2) Phi(m/sqrt2) + sqrt2 m phi(m/sqrt2)] / 2``.

    ``C_2 = (c + m - t)_+^2 / 2`` and ``c - t ~ N(0, 2)``; at margin 0 the value is
    exactly ``1/2`` (``notes/finite_size_capacity.md``, section 4; ``notes/many_to_one.md``).

    Parameters
    ----------
    margin : float, optional
        Stability margin ``>= 0`` in competitor standard deviations.

    Returns
    -------
    float
        The expected cost of a block of two fields.

    Raises
    ------
    ValueError
        If ``margin`` is negative or not finite.
    """
    m = check_real(margin, "margin", low=0.0)
    if m == 0.0:
        return 0.5
    x = m / math.sqrt(2.0)
    pdf = math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return 0.5 * ((m * m + 2.0) * float(special.ndtr(x)) + math.sqrt(2.0) * m * pdf)


@reports_validity("capacity")
def capacity_many_to_one(d, outputs, problem="op", kappa=1.0, *, rel_tol=1e-3, seed=None) -> CapacityResult:
    """Capacity with ``K`` distinct outputs at margin 0: ``p_c E[C_K] = F N_eff``.

    The same as ``replica.capacity(d, kappa, outputs=outputs, problem=problem,
    rel_tol=rel_tol, seed=seed)``; see :func:`replica.optimal.finite_size.capacity` for margin,
    ``top_k`` and the sphere ensemble, and ``notes/many_to_one.md`` for the derivation.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    outputs : int
        Number ``K >= 2`` of distinct answers.  When ``K >= p_c`` (the capacity with one
        answer per fact) the result is that capacity.
    problem : {"op", "dp"}, optional
        Original problem (shared outputs, default) or decoupled problem.
    kappa : float, optional
        Rank fraction in ``(0, 1]``.  For the OP with ``K <= d`` the rank is not binding
        when ``K <= kappa d``; ``kappa < K / d`` there is outside this theory.
    rel_tol : float, optional
        Relative standard error of ``E[C_K]``, in ``[1e-6, 0.5]``.
    seed : None, int, SeedSequence or Generator, optional
        Seed of the common random numbers (``None``: ``DEFAULT_SEED``).

    Returns
    -------
    CapacityResult
        With ``outputs``, ``problem`` and ``effective_weights`` set.  For ``K < p_c``
        the equation is linear in ``p``: ``iterations = 0`` and ``residual = 0``;
        ``alpha_c`` is the ``d -> infinity`` limit of ``alpha`` at fixed ``K``:
        ``inf`` (DP) or ``0`` (OP).

    Raises
    ------
    ValueError
        If ``outputs < 2``, ``problem`` not in ``{"op", "dp"}``, ``kappa`` outside its
        range, or the capacity would be below ``p = K``.
    """
    args = capacity_arguments(d, kappa, 0.0, problem, "gaussian", AccuracySettings(rel_tol=rel_tol, seed=seed))
    return shared_outputs_capacity(args, 1, outputs)


def _rank_factor(d, kappa, outputs, problem) -> float:
    """``F`` in ``p E[C_K] = F N_eff``: 1 when the rank constraint does not bind (OP, ``K <= kappa d``)."""
    if problem == "dp" or outputs > d:
        return float(tail_second_moment(kappa))
    if outputs <= kappa * d + 1e-12:
        return 1.0
    raise ValueError(f"kappa must lie in [{outputs / d:.6g}, 1] for the OP with outputs={outputs} <= d={d} "
                     f"(a rank below K binds V = U^T W; not covered by this theory), got {kappa!r}")


def _block_cost(outputs, margin, top_k, law, settings: AccuracySettings):
    """``(E[C_K], stderr, samples, order statistics, converged)`` for a block of ``K`` fields."""
    if outputs == top_k + 1:  # one constrained competitor: exact
        if margin == 0.0 and top_k == 1:
            mean = 0.5  # (c - t) symmetric with variance 2, for any symmetric unit-variance law
        elif law is NORMAL_LAW and top_k == 1:
            mean = two_field_cost(margin)
        else:
            mean = 0.5 * control_mean(outputs - 1.0, top_k, margin, law)
        return mean, 0.0, 0, 1, True
    tabulated = tabulated_estimator(margin, top_k, settings.seed, law, settings.rel_tol)
    if tabulated is not None:  # the shipped table of the default seed: the same estimate, without the sampling
        try:
            est = expected_cost_from(tabulated, float(outputs), settings.rel_tol)
            return est.mean, est.stderr, est.samples, est.order_statistics, est.converged
        except CostTableMiss:
            pass
    estimator = CostEstimator(margin, top_k, settings.seed, law)
    est = expected_cost_from(estimator, float(outputs), settings.rel_tol)
    return est.mean, est.stderr, est.samples, est.order_statistics, est.converged


def shared_outputs_capacity(args: CapacityArguments, top_k, outputs) -> CapacityResult:
    """:func:`replica.optimal.finite_size.capacity` with ``outputs = K`` (checked here) on checked ``args``."""
    d, kappa, margin, problem, law, settings = args.d, args.kappa, args.margin, args.problem, args.law, args.settings
    outputs = check_int(outputs, "outputs", low=2)
    top_k = check_int(top_k, "top_k", low=1, high=MAX_TOP_K)
    if top_k > outputs - 1:
        raise ValueError(f"top_k must be an integer in [1, outputs - 1] = [1, {outputs - 1}], got {top_k}")
    tail = _rank_factor(d, kappa, outputs, problem)
    n_eff = effective_weights(d, outputs, problem)
    target = tail * n_eff
    mean, stderr, samples, order, converged = _block_cost(outputs, margin, top_k, law, settings)
    if outputs * mean >= target:
        if n_eff == d * d:  # K >= p_c: every fact has its own answer at capacity
            full = distinct_outputs_capacity(args, top_k)
            return dataclasses.replace(full, outputs=outputs)
        raise ValueError(f"d={d}, outputs={outputs}: capacity below p = {outputs} (K E[C_K] = {outputs * mean:.4g} "
                         f">= F N_eff = {target:.4g}); increase d or lower outputs")
    p_c = target / mean
    rel = stderr / mean
    p_se = p_c * rel  # p_c is proportional to 1 / E[C_K]
    log_p = math.log(p_c)
    status = "converged" if converged and rel <= settings.rel_tol else "not_converged"
    message = (f"{status.replace('_', ' ')}: p_c = F N_eff / E[C_K] with N_eff = {n_eff}, relative stderr of "
               f"E[C_K] {rel:.3g} (rel_tol {settings.rel_tol:.3g})")
    return CapacityResult(
        d=d, kappa=kappa, margin=margin, top_k=top_k, p_c=p_c, stderr=p_se,
        alpha=p_c * log_p / d**2, alpha_stderr=p_se * (log_p + 1.0) / d**2,
        alpha_c=math.inf if problem == "dp" else 0.0, tail_second_moment=tail, expected_cost=mean,
        expected_cost_stderr=stderr, samples=samples, order_statistics=order, converged=status == "converged",
        iterations=0, residual=0.0, seed=settings.seed, status=status, message=message,
        outputs=outputs, problem=problem, ensemble=law.name, effective_weights=n_eff)

