"""Finite-size capacity of the optimal linear memory (the q -> 1 limit of the replica theory).

At capacity the replica-symmetric overlap q tends to 1 and the free entropy is
dominated by ``-p E[C_p] / (2 (1 - q))``, where ``C_p`` is the least squared
shift of one block of ``p`` fields (a target and ``p - 1`` competitors) that
makes the block satisfy its constraint.  ``C_p`` is a water-filling problem:
the target rises to a level ``L + margin`` and every competitor above ``L`` is
pushed down to ``L``.  The capacity is the load at which
``p E[C_p] = F(kappa) d^2``.

Everything here is derived in ``notes/finite_size_capacity.md``.  This module is the
front end; the pieces live in :mod:`replica.optimal.water_filling` (exact ``C_p``),
:mod:`replica.optimal.order_statistics` (common random numbers), :mod:`replica.optimal.cost`
(``E[C_p]``), :mod:`replica.optimal.capacity_equation` (one answer per fact) and
:mod:`replica.optimal.outputs` (``K`` distinct answers).

Public functions
----------------
water_filling_cost
    Exact ``C_p`` for given fields (vectorised).
expected_cost
    ``E[C_p]`` for i.i.d. N(0, 1) fields, by Rao-Blackwellised Monte Carlo over the
    top order statistics of the competitors (closed-form integral over the target).
capacity
    The finite-size capacity ``p_c(d)`` and ``alpha(d) = p_c ln p_c / d^2``; with
    ``outputs=K`` and ``problem`` for ``K`` distinct answers (``replica.optimal.outputs``,
    ``notes/many_to_one.md``) and ``ensemble="sphere"`` for unit-norm embeddings
    (``replica.optimal.sphere``, ``notes/sphere_ensemble.md``).
max_margin
    The largest margin reachable at a given load (the inverse of ``capacity``).
"""

from __future__ import annotations

import functools

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import special

from .capacity_equation import (
    MAX_TOP_K,
    PROBLEMS,
    AccuracySettings,
    CapacityResult,
    SampledRoot,
    Tolerances,
    capacity_arguments,
    settings_dict,
    check_accuracy,
    check_d_kappa,
    distinct_outputs_capacity,
    root_status,
)
from ..common.deprecation import accepts_old_calls
from ..common.ensembles import ENSEMBLES, check_ensemble
from ..common.registry import register_unit
from ..common.validity import Validity, reports_validity
from ..common.results import Result
from ..common.roots import BelowLimit, bracketed_root, newton_root
from ..common.seeds import DEFAULT_SEED, resolve_seed
from .cost import (SAMPLE_ROUNDS, CostEstimator, ExpectedCostResult, check_p_top_k, expected_cost, expected_cost_from,
                   field_law, rows_for)
from .cost_table import CostTableMiss, tabulated_estimator
from .outputs import shared_outputs_capacity
from ..asymptotic.quarter_circle import tail_second_moment
from ..asymptotic.spectra import spectrum
from .water_filling import water_filling_cost

__all__ = ["reference_p_c",
    "DEFAULT_SEED",
    "water_filling_cost",
    "expected_cost",
    "ExpectedCostResult",
    "capacity",
    "CapacityResult",
    "max_margin",
    "MarginCapacityResult",
    "Tolerances",
    "ENSEMBLES",
    "PROBLEMS",
    "MAX_TOP_K",
]

# ``DEFAULT_SEED`` (re-exported from replica.common.seeds) is used when ``seed=None``, so
# that the theory functions are pure functions of their parameters (the Monte-Carlo
# error is reported as ``stderr``).


@reports_validity("capacity")
def capacity(d, kappa=1.0, margin=0.0, top_k=1, *, outputs=None, problem="dp", ensemble="gaussian", rel_tol=1e-3,
             tol=1e-9, max_iter=100, seed=None):
    """Finite-size capacity of the optimal (rank ``kappa d``) memory: ``p_c E[C_{p_c}] = F(kappa) d^2``.

    ``E[C_p]`` is the expected water-filling cost (:func:`expected_cost`) and
    ``F(kappa)`` the tail second moment of the quarter-circle law
    (``replica.asymptotic.quarter_circle.tail_second_moment``; ``F(1) = 1``).  The root is found by
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
    and ``p_c E[C_K] = F d^2`` for the decoupled one (``replica.optimal.outputs``,
    ``notes/many_to_one.md``).  ``ensemble="sphere"`` replaces the N(0, 1) fields by the
    exact law of a unit-vector projection (``replica.optimal.sphere.ProjectionLaw``,
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
        :func:`replica.optimal.outputs.capacity_many_to_one`.
    problem : {"dp", "op"}, optional
        Decoupled (own candidates per input) or original (shared outputs) problem; the
        two coincide in this theory when ``outputs`` is ``None`` or ``K > d``.
    ensemble : {"gaussian", "sphere"}, optional
        Embedding ensemble: N(0, 1) fields, or the exact projection law of unit vectors.
    rel_tol : float, optional
        Relative standard error of ``E[C]`` at the root, in ``[1e-6, 0.5]``; the sample
        it needs must fit in memory (:func:`replica.common.checks.check_memory`).
    tol : float, optional
        Accepted residual ``|log(p E[C_p] / (F d^2))|`` at the root, in ``(0, 1e-2]``.
    max_iter : int, optional
        Secant steps and Brent iterations allowed per root search.
    seed : None, int, SeedSequence or Generator, optional
        Seed of the common random numbers (``None``: ``DEFAULT_SEED``).

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
    """
    args = capacity_arguments(d, kappa, margin, problem, ensemble, AccuracySettings(rel_tol, tol, max_iter, seed))
    if outputs is not None:
        return shared_outputs_capacity(args, top_k, outputs)
    return distinct_outputs_capacity(args, top_k)


@functools.lru_cache(maxsize=64)
def reference_p_c(d: int) -> float:
    """``capacity(d).p_c``: the full-rank gaussian capacity, the unit of the loads ``p / p_c`` of the experiments."""
    return float(capacity(d).p_c)


register_unit("load", reference_p_c)  # the loads p / p_c of the validity regimes (replica.common.registry)


# --------------------------------------------------------------------------------------
# max_margin
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MarginCapacityResult(Result):
    """Largest stability margin at a given load (see :func:`max_margin`): the theory's margin capacity.

    Named ``MaxMarginResult`` before 0.2.0 (``replica.MaxMarginResult`` still works, with a
    ``DeprecationWarning``, for one release); not to be confused with
    ``validation.MaxMarginResult``, the result of a measured max-margin solve.

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
    residual: float  # |log(p E[s^2 C_p(margin / sigma)] / (F d^2))|
    seed: int
    status: str
    message: str
    ensemble: str = "gaussian"
    scale_fluctuations: bool = True  # averaged over the per-block field scales
    validity: Validity | None = None  # how far the prediction was checked (replica.common.validity)
    model: str = ""  # the registry model that computed it (replica.common.registry)


SCALE_NODES = 4
"""Gauss-Laguerre nodes per scale variable of :func:`block_scales` (4 x 4 for ``"gaussian"``)."""


class BlockScales(NamedTuple):
    """Quadrature for the law of one block's field scale (:func:`block_scales`).

    ``weight``: quadrature weights (sum 1); ``norm``: ``r = |e|^2`` (mean 1); ``shape``:
    ``s^2 = v^T (W^T W / mean) v`` for the direction ``v`` of ``e`` (mean 1).  The block's
    competitor standard deviation in units of ``||W||_F / d`` is ``sigma = sqrt(r s^2)``.
    """

    weight: np.ndarray
    norm: np.ndarray
    shape: np.ndarray

    @property
    def sigma(self) -> np.ndarray:
        return np.sqrt(self.norm * self.shape)


def _gamma_nodes(shape: float, count: int):
    """Nodes and weights of Gauss-Laguerre quadrature for ``Gamma(shape, scale = 1/shape)`` (mean 1)."""
    x, w = special.roots_genlaguerre(count, shape - 1.0)
    w = w / w.sum()
    return x / shape, w


def shape_variance(d: int, kappa: float) -> float:
    """``Var s^2 = 2 (E lambda^2 - 1) / (d + 2)`` for ``v`` uniform on the sphere and the predicted spectrum.

    ``lambda``: the eigenvalues of ``W^T W`` over their mean, with the singular values of
    :func:`replica.asymptotic.spectra.spectrum` (quarter circle, ``E lambda^2 = 2`` at full rank;
    rank ``kappa d``: ``E lambda^2 = E_tr s^4 / (kappa (E_tr s^2)^2)``).
    ``notes/max_margin.md``, section "The finite-size margin theory".
    """
    law = spectrum(kappa)
    second, fourth = float(law.moment(2)), float(law.moment(4))
    lam2 = fourth / (kappa * second * second) if kappa < 1.0 else fourth / (second * second)
    return 2.0 * (lam2 - 1.0) / (d + 2.0)


def block_scales(d: int, kappa: float, ensemble: str, nodes: int = SCALE_NODES) -> BlockScales:
    """Quadrature for the per-block scales ``(r, s^2)`` of ``ensemble`` (``notes/max_margin.md``).

    ``"gaussian"``: ``r = |e|^2 ~ Gamma(d/2, 2/d)`` exactly (chi-square over d), and
    ``s^2`` independent of it; ``"sphere"``: ``r = 1``.  ``s^2`` has mean 1 and the
    variance of :func:`shape_variance`; it is given the Gamma law with these two moments
    (its exact law, a weighted sum of Beta variables, has the same first two moments).
    """
    ensemble = check_ensemble(ensemble)
    var = shape_variance(d, kappa)
    s2, ws = _gamma_nodes(1.0 / var, nodes)
    if ensemble == "sphere":
        return BlockScales(ws, np.ones_like(s2), s2)
    r, wr = _gamma_nodes(0.5 * d, nodes)
    weight = (wr[:, None] * ws[None, :]).ravel()
    return BlockScales(weight, np.repeat(r, nodes), np.tile(s2, nodes))


def scaled_block_cost(estimator, p, rows, margin, scales: BlockScales, slopes=False):
    """``E[s^2 C_p(margin / sigma)]`` over the block scales, with its stderr (bound: full correlation).

    The cost of a block whose fields have standard deviation ``sigma`` (units of
    ``||W||_F / d``) and whose weights move at the price ``1 / r`` is
    ``(sigma^2 / r) C_p(margin / sigma) = s^2 C_p(margin / sigma)``.  All nodes share the
    common random numbers of ``estimator``, so the standard errors are added (an upper
    bound on the combined one); every node is evaluated in one pass
    (:meth:`replica.optimal.cost.CostEstimator.estimate_margins`).  ``slopes=True`` adds
    the derivative in ``margin`` (None for laws without it).
    """
    sigma = np.ones(1) if scales is None else scales.sigma
    shape = np.ones(1) if scales is None else scales.shape
    weight = np.ones(1) if scales is None else scales.weight
    out = estimator.estimate_margins(p, rows, margin / sigma, slopes=slopes)
    total, err = 0.0, 0.0
    for w, s2, m, e in zip(weight, shape, out[0], out[1]):
        total += w * s2 * m
        err += w * s2 * e
    if scales is None:
        total, err = float(out[0][0]), float(out[1][0])
    if not slopes:
        return total, err
    if out[2] is None:
        return total, err, None
    return total, err, float(np.sum(weight * shape * out[2] / sigma))


class _MarginEquation:
    """``log(p E[s^2 C_p(k / sigma)] / target)`` in the margin ``k`` on one sample, with its slope (remembered)."""

    def __init__(self, estimator, p, rows, scales, target):
        self.estimator, self.p, self.rows, self.scales, self.target = estimator, p, rows, scales, target
        self._points = {}

    def point(self, margin):
        """``(g, g', mean, stderr)`` at ``margin`` (``g'`` None for laws without slopes)."""
        if margin not in self._points:
            mean, err, slope = scaled_block_cost(self.estimator, self.p, self.rows, margin, self.scales, slopes=True)
            g = math.log(self.p * mean) - math.log(self.target)
            self._points[margin] = (g, None if slope is None else slope / mean, mean, err)
        return self._points[margin]

    def g(self, margin):
        return self.point(margin)[0]

    def newton(self, margin):
        return self.point(margin)[:2]


def _pilot_rows(estimator, p, rel_tol) -> int:
    """The sample size of :func:`expected_cost_from` at margin 0, from the shipped table when it covers it."""
    tabulated = tabulated_estimator(0.0, estimator.top_k, estimator.stream.seed, estimator.law, rel_tol)
    if tabulated is not None:
        try:
            return expected_cost_from(tabulated, p, rel_tol, margin=0.0).samples
        except CostTableMiss:
            pass
    return expected_cost_from(estimator, p, rel_tol, margin=0.0).samples


COARSE_ROWS = 1024
"""Rows of the warm start of :func:`_margin_root` (Newton on the first rows, then on the whole sample)."""


def _margin_root(estimator, p, target, rel_tol, max_iter, scales=None):
    """Root in the margin on one fixed sample (enlarged until rel_tol holds, at most 4 times).

    With slopes (N(0, 1) fields) the root is found by Newton's method, started from the
    root on the first :data:`COARSE_ROWS` rows; otherwise by secant steps and Brent.  Both
    stop within ``1e-12`` of the root of the same sample equation.
    """
    rows = _pilot_rows(estimator, p, rel_tol)
    evaluations = 0

    # below ``lower`` the cost of the largest competitor, ~exp(-(c_1 + margin)^2 / 2),
    # would underflow; the root is above it unless F d^2 / p < ~1e-200
    lower = -(math.sqrt(2.0 * math.log(p)) + 30.0)
    if scales is not None:
        lower *= float(scales.sigma.min())
    start = 0.0
    for _ in range(SAMPLE_ROUNDS):
        equation = _MarginEquation(estimator, p, rows, scales, target)
        try:
            if equation.newton(start)[1] is not None:
                if rows > 2 * COARSE_ROWS and start == 0.0:
                    coarse = _MarginEquation(estimator, p, COARSE_ROWS, scales, target)
                    start = newton_root(coarse.newton, 0.0, lower, 1e-6, max_iter).x
                search = newton_root(equation.newton, start, lower, 1e-12, max_iter)
            else:
                search = bracketed_root(equation.g, 0.0, 0.3, lower=lower, xtol=1e-12, max_iter=max_iter)
        except BelowLimit:
            raise ValueError(f"p={p!r} is too far above the capacity (F(kappa) d^2 / p = {target / p:.3g}): "
                             f"the margin would lie below {lower:.4g}, where the cost underflows") from None
        evaluations += search.evaluations
        _, log_slope, mean, err = equation.point(search.x)
        if (mean > 0 and err / mean <= rel_tol) or search.exhausted:
            break
        rows = rows_for(err / mean * math.sqrt(rows), rel_tol)
        start = search.x
    slope = None if log_slope is None else log_slope * mean  # dE/dk at the root (regression coefficient fixed)
    return SampledRoot(p, rows, mean, err, 0, search._replace(evaluations=evaluations)), slope


def _old_tolerance_keywords(args, kwargs):
    """``max_margin(..., rel_tol=, tol=, max_iter=)`` and ``tolerances=``, the call styles before ``options=``."""
    flat = [name for name in ("rel_tol", "tol", "max_iter") if name in kwargs]
    if "tolerances" not in kwargs and not flat:
        return None
    if "tolerances" in kwargs and flat:
        raise TypeError("max_margin() got tolerances and the old keywords " + ", ".join(flat))
    kwargs = dict(kwargs)
    given = settings_dict(kwargs.get("options"), "max_margin()")
    old = settings_dict(kwargs.pop("tolerances"), "max_margin()") if "tolerances" in kwargs else \
        {name: kwargs.pop(name) for name in flat}
    twice = sorted(set(old) & set(given))
    if twice:
        raise TypeError(f"max_margin() got {', '.join(twice)} twice: as a keyword and in options")
    kwargs["options"] = {**given, **old}
    return args, kwargs, ("max_margin(rel_tol=, tol=, max_iter=) and max_margin(tolerances=) are deprecated and "
                          "will be removed in the next release; pass options=replica.Tolerances(rel_tol=, tol=, "
                          "max_iter=)")


_MARGIN_SETTINGS = ("rel_tol", "tol", "max_iter", "seed")
_MARGIN_DEFAULTS = {"rel_tol": 1e-3, "tol": 1e-9, "max_iter": 100}


def _margin_settings(options, seed):
    """``(rel_tol, tol, max_iter, seed)`` of :func:`max_margin` from ``options`` and its ``seed`` keyword."""
    settings = settings_dict(options, "max_margin()")
    unknown = sorted(set(settings) - set(_MARGIN_SETTINGS))
    if unknown:
        raise ValueError(f"max_margin(): {', '.join(unknown)}: not settings of the block_cost margin (its "
                         f"settings: {', '.join(_MARGIN_SETTINGS)}, and the keyword scale_fluctuations)")
    if seed is not None and settings.get("seed") is not None:
        raise ValueError("max_margin(): seed given twice, as a keyword and in options")
    settings = {**_MARGIN_DEFAULTS, "seed": seed, **settings}
    rel_tol, tol, max_iter = check_accuracy(settings["rel_tol"], settings["tol"], settings["max_iter"])
    return rel_tol, tol, max_iter, resolve_seed(settings["seed"])


@reports_validity("max_margin")
@accepts_old_calls(_old_tolerance_keywords)
def max_margin(d, p, kappa=1.0, top_k=1, *, ensemble="gaussian", scale_fluctuations=True, seed=None,
               options=None):
    """Largest margin ``k`` of the max-margin memory at load ``p``, in units of ``||W||_F / d``.

    The measured quantity is ``d min_{mu, rho} (s_target - s_rho) / ||W||_F``.  A block
    (input) ``mu`` has competitor fields of standard deviation ``sigma_mu = sqrt(r s^2)``
    in these units (``r = |e_mu|^2``, ``s^2`` the quadratic form of ``W^T W`` in the
    direction of ``e_mu``) and its weights move at the price ``1 / r``, so it needs the
    margin ``k / sigma_mu`` in its own units at the cost ``s^2 C_p(k / sigma_mu)``.  The
    equation is

        p E_{r, s}[s^2 E C_p(k / sigma)] = F(kappa) d^2,

    with the field law of ``ensemble`` in ``E C_p`` (as in :func:`capacity`) and the
    scale law of :func:`block_scales`.  At ``k = 0`` it is the capacity equation
    (``E s^2 = 1``), so the margin vanishes at ``capacity(d, ensemble=ensemble).p_c``.
    ``scale_fluctuations=False`` drops the scale law (``sigma = r = s = 1``): that is the
    inverse of ``capacity(d, margin=k, ensemble=ensemble)``, the definition of
    ``max_margin`` before 0.2.0.  ``E C_p(k)`` increases with ``k``; the root is found
    by secant steps and ``brentq`` with common random numbers (one sample for every
    quadrature node) and a checked residual.  Above capacity the root is **negative**
    (``storable=False``), an extrapolation of the replica-symmetric formula.  Derivation
    and measured accuracy: ``notes/max_margin.md`` (section "The finite-size margin
    theory") and ``notes/finite_size_capacity.md`` (section "Margin").

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : float
        Number of stored pairs, ``p >= 2`` (real allowed).
    kappa, top_k, seed : optional
        As in :func:`capacity` (``1 <= top_k <= p - 1``).
    ensemble : {"gaussian", "sphere"}, optional
        Embedding ensemble: N(0, 1/d) coordinates or unit-norm embeddings.
    scale_fluctuations : bool, optional
        Average over the per-block field scales (default) or not.
    options : Tolerances or dict, optional
        ``rel_tol``, ``tol``, ``max_iter`` (and ``seed``), as in :func:`capacity`; unset:
        ``1e-3``, ``1e-9``, ``100``.  The keywords ``rel_tol=``, ``tol=``, ``max_iter=`` and
        ``tolerances=`` are still accepted, with a ``DeprecationWarning``, for one release.

    Returns
    -------
    MarginCapacityResult
        ``margin`` (negative above capacity), ``stderr``, ``storable`` (margin >= 0),
        ``status``, ``converged``, ``iterations``, ``residual``, ``message``, ``ensemble``.

    Raises
    ------
    ValueError
        If ``p < 2``, ``d < 2``, ``kappa`` outside ``(0, 1]``, ``top_k`` outside
        ``[1, p - 1]``, an unknown ``ensemble`` or another argument outside its range.
    """
    p, top_k = check_p_top_k(p, top_k)
    d, kappa = check_d_kappa(d, kappa)
    law = field_law(d, ensemble)
    rel_tol, tol, max_iter, seed = _margin_settings(options, seed)
    scales = block_scales(d, kappa, law.name) if scale_fluctuations else None
    estimator = CostEstimator(0.0, top_k, seed, law)
    root, slope = _margin_root(estimator, p, float(tail_second_moment(kappa)) * float(d) ** 2, rel_tol, max_iter,
                               scales)
    margin, rows, h = root.search.x, root.rows, 1e-4
    if slope is None:  # laws without slopes: a common-random-number difference
        slope = (scaled_block_cost(estimator, p, rows, margin + h, scales)[0]
                 - scaled_block_cost(estimator, p, rows, margin - h, scales)[0]) / (2 * h)
    status, converged, message = root_status(root.search, tol, root.stderr / root.mean, rel_tol)
    return MarginCapacityResult(
        p=float(p), d=d, kappa=kappa, top_k=top_k, margin=margin,
        stderr=root.stderr / slope if slope > 0 else math.inf, storable=bool(margin >= 0.0),
        expected_cost=root.mean, expected_cost_stderr=root.stderr, samples=rows,
        converged=converged, iterations=root.search.evaluations, residual=root.search.residual,
        seed=seed, status=status, message=message, ensemble=law.name,
        scale_fluctuations=bool(scale_fluctuations))
