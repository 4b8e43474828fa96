"""Finite-size capacity of the optimal linear memory (the q -> 1 limit of the replica theory).

At capacity the replica-symmetric overlap q tends to 1 and the free entropy is
dominated by ``-p E[C_p] / (2 (1 - q))``, where ``C_p`` is the least squared
shift of one block of ``p`` fields (a target and ``p - 1`` competitors) that
makes the block satisfy its constraint.  ``C_p`` is a water-filling problem:
the target rises to a level ``L + margin`` and every competitor above ``L`` is
pushed down to ``L``.  The capacity is the load at which
``p E[C_p] = F(kappa) d^2``.

Everything here is derived in ``notes/finite_size_capacity.md``.  This module is the
front end; the pieces live in :mod:`replica.water_filling` (exact ``C_p``),
:mod:`replica.order_statistics` (common random numbers), :mod:`replica.cost`
(``E[C_p]``), :mod:`replica.capacity_equation` (one answer per fact) and
:mod:`replica.outputs` (``K`` distinct answers).

Public functions
----------------
water_filling_cost
    Exact ``C_p`` for given fields (vectorised).
expected_cost
    ``E[C_p]`` for i.i.d. N(0, 1) fields, by Rao-Blackwellised Monte Carlo over the
    top order statistics of the competitors (closed-form integral over the target).
capacity
    The finite-size capacity ``p_c(d)`` and ``alpha(d) = p_c ln p_c / d^2``; with
    ``outputs=K`` and ``problem`` for ``K`` distinct answers (``replica.outputs``,
    ``notes/many_to_one.md``) and ``ensemble="sphere"`` for unit-norm embeddings
    (``replica.sphere``, ``notes/sphere_ensemble.md``).
max_margin
    The largest margin reachable at a given load (the inverse of ``capacity``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .capacity_equation import (
    MAX_TOP_K,
    PROBLEMS,
    CapacityResult,
    SampledRoot,
    capacity_arguments,
    check_accuracy,
    check_d_kappa,
    distinct_outputs_capacity,
    root_status,
)
from .common.ensembles import ENSEMBLES
from .common.results import Result
from .common.roots import BelowLimit, bracketed_root
from .common.seeds import DEFAULT_SEED, resolve_seed
from .cost import (
    SAMPLE_ROUNDS,
    CostEstimator,
    ExpectedCostResult,
    check_p_top_k,
    expected_cost,
    expected_cost_from,
    rows_for,
)
from .outputs import many_to_one_capacity
from .quarter_circle import tail_second_moment
from .water_filling import water_filling_cost

__all__ = [
    "DEFAULT_SEED",
    "water_filling_cost",
    "expected_cost",
    "ExpectedCostResult",
    "capacity",
    "CapacityResult",
    "max_margin",
    "MaxMarginResult",
    "ENSEMBLES",
    "PROBLEMS",
    "MAX_TOP_K",
]

# ``DEFAULT_SEED`` (re-exported from replica.common.seeds) is used when ``seed=None``, so
# that the theory functions are pure functions of their parameters (the Monte-Carlo
# error is reported as ``stderr``).


def capacity(d, kappa=1.0, margin=0.0, top_k=1, *, outputs=None, problem="dp", ensemble="gaussian", **accuracy):
    """Finite-size capacity of the optimal (rank ``kappa d``) memory: ``p_c E[C_{p_c}] = F(kappa) d^2``.

    ``E[C_p]`` is the expected water-filling cost (:func:`expected_cost`) and
    ``F(kappa)`` the tail second moment of the quarter-circle law
    (``replica.quarter_circle.tail_second_moment``; ``F(1) = 1``).  The root is found by
    secant steps and ``brentq`` on ``log p`` with common random numbers (one fixed
    Monte-Carlo sample, so the equation is smooth) and accepted only if
    ``|log(p E[C_p]/(F d^2))| <= tol``.  ``alpha = p_c ln p_c / d^2``.
    ``alpha_c = F(kappa)/2`` is the ``d -> infinity`` limit; a fixed ``margin`` or
    ``top_k`` does not change it (their corrections vanish like ``margin / sqrt(ln p)``
    and ``ln(top_k) / ln p``).  The standard error of ``p_c`` comes from that of ``E[C]``
    by the delta method.  For kappa < 1 the finite-size equation is the conjecture of
    ``notes/finite_size_capacity.md``, where everything here is derived.

    With ``outputs=K`` (many facts share an answer) the block has ``min(K, p)`` fields
    and the equation becomes ``p_c E[C_K] = F d min(K - 1, d)`` for the original problem
    and ``p_c E[C_K] = F d^2`` for the decoupled one (``replica.outputs``,
    ``notes/many_to_one.md``).  ``ensemble="sphere"`` replaces the N(0, 1) fields by the
    exact law of a unit-vector projection (``replica.sphere.ProjectionLaw``,
    ``notes/sphere_ensemble.md``).

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    kappa : float, optional
        Rank fraction ``m / d`` in ``(0, 1]``.
    margin : float, optional
        Stability margin ``>= 0`` in competitor standard deviations.
    top_k : int, optional
        Target among the ``top_k`` best, ``1 <= top_k <= MAX_TOP_K = 10**5``.  The level
        then lies deep in the lower tail of the ``p_c`` competitors, and the active order
        statistics (time, memory) grow with ``top_k``: at ``10**6`` the sampler's 4096 no
        longer bound the truncation error (and ``alpha`` is far from its limit anyway).
    outputs : int, optional
        Number ``K >= 2`` of distinct answers (``None``: every fact has its own answer,
        the block has ``p`` fields).  ``top_k <= K - 1``.  See
        :func:`replica.outputs.capacity_many_to_one`.
    problem : {"dp", "op"}, optional
        Decoupled (own candidates per input) or original (shared outputs) problem; the
        two coincide in this theory when ``outputs`` is ``None`` or ``K > d``.
    ensemble : {"gaussian", "sphere"}, optional
        Embedding ensemble: N(0, 1) fields, or the exact projection law of unit vectors.
    **accuracy
        Keyword-only accuracy settings (checked by name; another name is a TypeError):

        ``rel_tol`` (default 1e-3): relative standard error of ``E[C]`` at the root, in
        ``[1e-6, 0.5]``; the sample it needs must fit in memory
        (:func:`replica.common.checks.check_memory`).
        ``tol`` (default 1e-9): accepted residual ``|log(p E[C_p] / (F d^2))|`` at the
        root, in ``(0, 1e-2]``.
        ``max_iter`` (default 100): secant steps and Brent iterations allowed per root
        search.
        ``seed`` (None, int, SeedSequence or Generator): seed of the common random
        numbers (``None``: ``DEFAULT_SEED``).

    Returns
    -------
    CapacityResult
        ``p_c``, ``stderr`` (of ``p_c``), ``alpha``, ``alpha_stderr``, ``alpha_c``,
        ``status``, ``converged``, ``iterations``, ``residual``, ``message``, the
        Monte-Carlo details and the model (``outputs``, ``problem``, ``ensemble``,
        ``effective_weights``).

    Raises
    ------
    ValueError
        If an argument is outside its range.  The margin range depends on ``d``: a
        capacity ``p_c >= top_k + 1`` exists iff ``(top_k + 1) E[C_{top_k + 1}] <=
        F(kappa) d^2``, checked up front with the exact one-competitor cost (e.g.
        ``margin <= 15.9`` at ``d = 16``, ``kappa = 1``); the error names the largest margin.
    TypeError
        For an unknown keyword argument.
    """
    args = capacity_arguments(d, kappa, margin, problem, ensemble, **accuracy)
    if outputs is not None:
        return many_to_one_capacity(args, top_k, outputs)
    return distinct_outputs_capacity(args.d, args.kappa, args.margin, top_k, args.law, args.settings, args.problem)


# --------------------------------------------------------------------------------------
# max_margin
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MaxMarginResult(Result):
    """Largest stability margin at a given load (see :func:`max_margin`).

    ``status``: ``"converged"`` (residual ``<= tol`` and relative stderr of ``E[C]``
    ``<= rel_tol``), ``"not_converged"`` or ``"max_iter"``; ``message`` gives the
    residual.  ``storable`` (margin ``>= 0``) is the answer to "is the load below
    capacity".
    """

    STATUSES = ("converged", "not_converged", "max_iter")

    p: float
    d: int
    kappa: float
    top_k: int
    margin: float  # negative above capacity
    stderr: float
    storable: bool
    expected_cost: float
    expected_cost_stderr: float
    samples: int
    converged: bool
    iterations: int
    residual: float  # |log(p E[C_p(margin)] / (F d^2))|
    seed: int
    status: str
    message: str


def _margin_root(estimator, p, target, rel_tol, max_iter):
    """Root in the margin on one fixed sample (enlarged until rel_tol holds, at most 4 times)."""
    rows = expected_cost_from(estimator, p, rel_tol, margin=0.0).samples
    evaluations = 0

    def g(margin):
        return math.log(p * estimator.estimate(p, rows, margin)[0]) - math.log(target)

    # below ``lower`` the cost of the largest competitor, ~exp(-(c_1 + margin)^2 / 2),
    # would underflow; the root is above it unless F d^2 / p < ~1e-200
    lower = -(math.sqrt(2.0 * math.log(p)) + 30.0)
    for _ in range(SAMPLE_ROUNDS):
        try:
            search = bracketed_root(g, 0.0, 0.3, lower=lower, xtol=1e-12, max_iter=max_iter)
        except BelowLimit:
            raise ValueError(f"p={p!r} is too far above the capacity (F(kappa) d^2 / p = {target / p:.3g}): "
                             f"the margin would lie below {lower:.4g}, where the cost underflows") from None
        evaluations += search.evaluations
        mean, err, _, _, _ = estimator.estimate(p, rows, search.x)
        if (mean > 0 and err / mean <= rel_tol) or search.exhausted:
            break
        rows = rows_for(err / mean * math.sqrt(rows), rel_tol)
    return SampledRoot(p, rows, mean, err, 0, search._replace(evaluations=evaluations))


def max_margin(d, p, kappa=1.0, top_k=1, *, rel_tol=1e-3, tol=1e-9, max_iter=100, seed=None):
    """Largest margin ``k`` with ``p E[C_p(k)] <= F(kappa) d^2``: the inverse of :func:`capacity`.

    The margin is in units of the competitor standard deviation, i.e. of
    ``||W||_F / d`` for the measured scores.  ``E[C_p(k)]`` increases with ``k``, so
    the equation ``p E[C_p(k)] = F(kappa) d^2`` has one root, found by secant steps and
    ``brentq`` with common random numbers and a checked residual.  Above capacity
    (``p > p_c``) the root is **negative**: it is returned as such with
    ``storable=False``.  It is then the largest "negative stability", i.e. the
    smallest uniform relaxation of the constraints that the q -> 1 formula allows;
    for negative margins the replica-symmetric formula is an extrapolation (as for
    the perceptron at negative stability) and should not be trusted quantitatively.
    Derivation: ``notes/finite_size_capacity.md`` (section "Margin").

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : float
        Number of stored pairs, ``p >= 2`` (real allowed).
    kappa, top_k, rel_tol, tol, max_iter, seed : optional
        As in :func:`capacity` (``1 <= top_k <= p - 1``).

    Returns
    -------
    MaxMarginResult
        ``margin`` (negative above capacity), ``stderr``, ``storable`` (margin >= 0),
        ``status``, ``converged``, ``iterations``, ``residual``, ``message``.

    Raises
    ------
    ValueError
        If ``p < 2``, ``d < 2``, ``kappa`` outside ``(0, 1]``, ``top_k`` outside
        ``[1, p - 1]`` or another argument outside its range.
    """
    p, top_k = check_p_top_k(p, top_k)
    d, kappa = check_d_kappa(d, kappa)
    rel_tol, tol, max_iter = check_accuracy(rel_tol, tol, max_iter)
    seed = resolve_seed(seed)
    estimator = CostEstimator(0.0, top_k, seed)
    root = _margin_root(estimator, p, float(tail_second_moment(kappa)) * float(d) ** 2, rel_tol, max_iter)
    margin, rows, h = root.search.x, root.rows, 1e-4
    slope = (estimator.estimate(p, rows, margin + h)[0] - estimator.estimate(p, rows, margin - h)[0]) / (2 * h)
    status, converged, message = root_status(root.search, tol, root.stderr / root.mean, rel_tol)
    return MaxMarginResult(
        p=float(p), d=d, kappa=kappa, top_k=top_k, margin=margin,
        stderr=root.stderr / slope if slope > 0 else math.inf, storable=bool(margin >= 0.0),
        expected_cost=root.mean, expected_cost_stderr=root.stderr, samples=rows,
        converged=converged, iterations=root.search.evaluations, residual=root.search.residual,
        seed=seed, status=status, message=message)
