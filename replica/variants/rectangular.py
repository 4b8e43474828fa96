"""Rectangular memories: ``W`` is ``d_out x d_in`` (inputs in ``R^d_in``, outputs in ``R^d_out``).

The block argument of the square memory carries over with two dimensions that play
different parts (derived in ``notes/rectangular.md``):

* the budget is the number of weights, ``N = d_in d_out``, times the fraction
  ``F(kappa; ratio)`` of the Frobenius mass that the top ``m = kappa min(d_in, d_out)``
  singular values of a Gaussian ``d_out x d_in`` matrix carry (Marchenko-Pastur law of
  aspect ratio ``min / max``);
* the fields of one input are ``u_rho . (W e_mu)``, projections in ``R^d_out``: the
  competitor law is N(0, 1) (``gaussian``) or the projection law of ``R^d_out``
  (``sphere``); the extreme-value threshold is that of the ``p - 1`` competitors, as
  for the square memory.

Public functions
----------------
tail_second_moment_rectangular
    ``F(kappa; ratio)``, the tail second moment of the Marchenko-Pastur law
    (``mp``: Marchenko-Pastur); ``F(kappa; 1)`` is the quarter-circle ``F(kappa)``.
rectangular_capacity
    ``p E[C_p] = F(kappa; ratio) d_in d_out`` (decoupled problem), and the original
    problem's ``N_eff = d_in min(p - 1, d_out)``.
rectangular_hebbian_capacity
    The finite-size Hebbian capacity of ``W = sum_mu u_mu e_mu^T`` with ``d_in != d_out``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from ..optimal.capacity_equation import (
    PROBLEMS,
    CapacityResult,
    CapacityArguments,
    distinct_outputs_capacity,
    old_tolerance_keywords,
    root_status,
    tolerance_settings,
)
from ..common.deprecation import accepts_old_calls
from ..common.checks import check_choice, check_int, check_kappa, check_real, check_scalar_kappa, scalar_or_array
from ..common.ensembles import check_ensemble
from ..common.validity import Validity, reports_validity
from ..common.loads import BitsPerParameter
from ..common.results import Result
from ..common.roots import BelowLimit, bracketed_root, brent
from ..optimal.cost import SAMPLE_ROUNDS, CostEstimator, expected_cost_from, field_law, rows_for
from ..hebbian.finite_size import hebbian_capacity_search
from ..asymptotic.quarter_circle import tail_second_moment

__all__ = [
    "tail_second_moment_rectangular",
    "rectangular_capacity",
    "RectangularCapacityResult",
    "rectangular_hebbian_capacity",
    "RectangularHebbianCapacityResult",
]


# --------------------------------------------------------------------------------------
# the Marchenko-Pastur tail second moment
# --------------------------------------------------------------------------------------
_LEGENDRE_NODES = 48  # Gauss-Legendre nodes on [0, phi]: the integrands are analytic there


@functools.lru_cache(maxsize=1)
def _legendre():
    x, w = np.polynomial.legendre.leggauss(_LEGENDRE_NODES)
    return 0.5 * (x + 1.0), 0.5 * w


def _mass_above(phi, lam):
    """Mass of the Marchenko-Pastur law above ``x(phi) = 1 + lam + 2 sqrt(lam) cos(phi)``.

    ``(2/pi) Int_0^phi sin^2 / (1 + lam + 2 sqrt(lam) cos)``: Gauss-Legendre where the
    integrand is far from its poles (``phi <= 2`` or ``lam <= 1/4``), otherwise the
    closed form (which has no cancellation there).
    """
    root = math.sqrt(lam)
    if phi <= 2.0 or lam <= 0.25:
        x, w = _legendre()
        psi = phi * x
        return (2.0 / math.pi) * phi * float(np.dot(w, np.sin(psi) ** 2 / (1.0 + lam + 2.0 * root * np.cos(psi))))
    ratio = (1.0 - root) / (1.0 + root)
    return (2.0 / math.pi) * ((1.0 + lam) * phi / (4.0 * lam) - math.sin(phi) / (2.0 * root)
                              - (1.0 - lam) / (2.0 * lam) * math.atan(ratio * math.tan(0.5 * phi)))


def _second_moment_above(phi):
    """``(2/pi) Int_0^phi sin^2 = (phi - sin(2 phi)/2) / pi`` (Gauss-Legendre: no cancellation at small phi)."""
    x, w = _legendre()
    return (2.0 / math.pi) * phi * float(np.dot(w, np.sin(phi * x) ** 2))


def _marchenko_pastur_tail(kappa, lam):
    if kappa == 1.0:
        return 1.0
    target = math.log(kappa)
    # small angles: kappa ~ 2 phi^3 / (3 pi (1 + sqrt lam)^2), and the mass falls faster than that
    guess = (target + math.log(1.5 * math.pi * (1.0 + math.sqrt(lam)) ** 2)) / 3.0
    lower = min(guess, math.log(math.pi)) - 1.0
    search = brent(lambda u: math.log(_mass_above(math.exp(u), lam)) - target, lower, math.log(math.pi),
                   xtol=1e-15, rtol=4 * np.finfo(float).eps, max_iter=200, require=True)
    phi = math.exp(search.root)
    residual = abs(_mass_above(phi, lam) / kappa - 1.0)
    if residual > 1e-12:  # pragma: no cover - guarded by the tests
        raise RuntimeError("tail_second_moment_rectangular: truncation angle not found "
                           f"(relative residual {residual:.3g})")
    return _second_moment_above(phi)


def tail_second_moment_rectangular(kappa, ratio):
    """``F(kappa; ratio)``: the Frobenius mass kept by the top ``kappa`` fraction of Marchenko-Pastur singular values.

    For a ``d_out x d_in`` matrix with i.i.d. entries, the squared singular values
    (``min(d_in, d_out)`` of them, mean 1) follow the Marchenko-Pastur law of ratio
    ``lam = min / max``, density ``sqrt((b - x)(x - a)) / (2 pi lam x)`` on
    ``[(1 - sqrt lam)^2, (1 + sqrt lam)^2]``.  With ``x = 1 + lam + 2 sqrt(lam) cos(phi)``
    the truncation angle solves
    ``kappa = (2/pi) Int_0^phi sin^2 / (1 + lam + 2 sqrt(lam) cos)`` and
    ``F = (phi - sin(2 phi) / 2) / pi`` (``notes/rectangular.md``).  ``F(kappa; 1)`` is
    :func:`replica.asymptotic.quarter_circle.tail_second_moment`; ``F -> kappa`` as ``lam -> 0``
    (all singular values equal); ``F(1; lam) = 1``.

    Parameters
    ----------
    kappa : float or array_like
        Rank fraction ``m / min(d_in, d_out)`` in ``(0, 1]``.
    ratio : float
        Aspect ratio ``d_out / d_in`` (> 0, finite); the law depends on
        ``min(ratio, 1 / ratio)`` only.

    Returns
    -------
    float or ndarray
        ``F``, shaped like ``kappa``.

    Raises
    ------
    ValueError
        If a ``kappa`` is outside ``(0, 1]`` or ``ratio`` is not a finite positive number.
    """
    arr = check_kappa(kappa)
    ratio = check_real(ratio, "ratio", low=0.0, low_open=True)
    lam = min(ratio, 1.0 / ratio)
    values = np.array([_marchenko_pastur_tail(float(k), lam) for k in np.atleast_1d(arr).ravel()]).reshape(arr.shape)
    return scalar_or_array(values, kappa)


def _rank_tail(d_in, d_out, kappa):
    """``F(kappa; d_out / d_in)``; the quarter-circle closed form (the same law) for a square memory."""
    if d_in == d_out:
        return float(tail_second_moment(kappa))
    return float(tail_second_moment_rectangular(kappa, d_out / d_in))


# --------------------------------------------------------------------------------------
# optimal memory
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RectangularCapacityResult(CapacityResult):
    """Finite-size capacity of a ``d_out x d_in`` memory (see :func:`rectangular_capacity`).

    The fields of :class:`replica.optimal.finite_size.CapacityResult`, with ``d = min(d_in, d_out)``
    (the largest rank), ``alpha = p_c ln p_c / (d_in d_out)``, ``effective_weights`` the
    ``N_eff`` of the budget and ``tail_second_moment`` the Marchenko-Pastur
    ``F(kappa; ratio)``.  ``status``: ``"converged"`` (residual ``<= tol``, relative stderr
    of ``E[C]`` ``<= rel_tol`` and an increasing equation at the root),
    ``"not_converged"`` or ``"max_iter"``; ``message`` gives the residual.
    """

    d_in: int = 0
    d_out: int = 0
    rank: int = 0  # round(kappa min(d_in, d_out))

    def memory_shape(self) -> tuple:
        """``(d_in, d_out, kappa)``: ``bits_per_parameter`` counts ``rank (d_in + d_out - rank)`` parameters."""
        return self.d_in, self.d_out, self.kappa


def _rectangular_result(base: CapacityResult, d_in, d_out, **changes) -> RectangularCapacityResult:
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(CapacityResult)}
    fields.update(changes)
    rank = max(1, round(base.kappa * min(d_in, d_out)))
    return RectangularCapacityResult(**fields, d_in=d_in, d_out=d_out, rank=rank)


def _op_small_load_capacity(d_in, d_out, margin, top_k, law, settings, problem):
    """Original problem with ``p_c <= d_out``: ``p E[C_p] = d_in (p - 1)`` (full rank, ``N_eff = d_in (p - 1)``)."""
    estimator = CostEstimator(margin, top_k, settings.seed, law)
    p_min = max(2.0, top_k + 1.0)
    rows = expected_cost_from(estimator, max(p_min, 0.5 * d_out), settings.rel_tol).samples

    def g(log_p):
        p = max(math.exp(log_p), p_min)
        return math.log(p * estimator.estimate(p, rows)[0]) - math.log(d_in * (p - 1.0))

    start = math.log(max(p_min, 0.5 * d_out))
    evaluations = 0
    for _ in range(SAMPLE_ROUNDS):  # the root on one fixed sample, enlarged until rel_tol holds there
        try:
            search = bracketed_root(g, start, 0.5, lower=math.log(p_min), max_iter=settings.max_iter)
        except BelowLimit:
            raise ValueError(f"d_in={d_in}, d_out={d_out}: capacity below p = {p_min:g} (the smallest p allowed "
                             f"with top_k = {top_k})") from None
        evaluations += search.evaluations
        p_c = max(math.exp(search.x), p_min)
        mean, err, _, k, _ = estimator.estimate(p_c, rows)
        if err / mean <= settings.rel_tol or search.exhausted:
            break
        rows = rows_for(err / mean * math.sqrt(rows), settings.rel_tol)
        start = search.x
    search = search._replace(evaluations=evaluations)
    h = 1e-3
    slope = (g(search.x + h) - g(search.x - h)) / (2 * h) if p_c * math.exp(-h) > p_min else math.nan
    rel = err / mean
    p_se = p_c * rel / slope if slope > 0 else math.inf
    status, converged, message = root_status(search, settings.tol, rel, settings.rel_tol, regular=slope > 0)
    log_p = math.log(p_c)
    n_weights = d_in * d_out
    return CapacityResult(
        d=min(d_in, d_out), kappa=1.0, margin=margin, top_k=top_k, p_c=p_c, stderr=p_se,
        alpha=p_c * log_p / n_weights, alpha_stderr=p_se * (log_p + 1.0) / n_weights, alpha_c=0.5,
        tail_second_moment=1.0, expected_cost=mean, expected_cost_stderr=err, samples=rows, order_statistics=k,
        converged=converged, iterations=search.evaluations, residual=search.residual, seed=settings.seed,
        status=status, message=message + f"; N_eff = d_in (p_c - 1) = {d_in * (p_c - 1.0):.6g}",
        problem=problem, ensemble=law.name, effective_weights=round(d_in * (p_c - 1.0)))


@reports_validity("rectangular_capacity")
@accepts_old_calls(old_tolerance_keywords("rectangular_capacity"))
def rectangular_capacity(d_in, d_out, kappa=1.0, *, margin=0.0, top_k=1, problem="dp", ensemble="gaussian",
                         options=None):
    """Finite-size capacity of a ``d_out x d_in`` memory of rank ``m = kappa min(d_in, d_out)``.

    Decoupled problem: ``p_c E[C_{p_c}] = F(kappa; d_out / d_in) d_in d_out``, with
    ``E[C_p]`` the water-filling cost of one target and ``p - 1`` competitors
    (:func:`replica.optimal.finite_size.expected_cost`) and ``F`` the Marchenko-Pastur tail
    second moment (:func:`tail_second_moment_rectangular`).  The root search, its checks and its
    standard error are those of :func:`replica.optimal.finite_size.capacity`, which this equals
    for ``d_in = d_out`` (bit for bit, same seed).  Original problem: the scores depend on
    ``W`` through ``U^T W`` (``p x d_in``, rank ``<= d_out``), so ``N_eff = d_in min(p - 1,
    d_out)``: the same root when ``p_c > d_out``, else the root of ``p E[C_p] = d_in (p - 1)``
    (full rank only).  Where the argument can fail (``d_out`` of the order of the number
    of pushed-down competitors, ``~ 2 ln p``): ``notes/rectangular.md``.

    Parameters
    ----------
    d_in, d_out : int
        Input and output dimensions, each ``>= 2``.
    kappa : float, optional
        Rank fraction ``m / min(d_in, d_out)`` in ``(0, 1]``.
    margin : float, optional
        Stability margin ``>= 0`` in competitor standard deviations
        (``||W||_F / sqrt(d_in d_out)`` for unit-variance embeddings).
    top_k : int, optional
        Target among the ``top_k`` best.
    problem : {"dp", "op"}, optional
        Decoupled (own candidates per input) or original (shared outputs) problem.
    ensemble : {"gaussian", "sphere"}, optional
        N(0, 1) fields, or the projection law of unit vectors of ``R^d_out``.
    options : replica.Tolerances or dict, optional
        ``rel_tol``, ``tol``, ``max_iter``, ``seed``: as in :func:`replica.optimal.finite_size.capacity`
        (unset: its defaults).  The flat keywords ``rel_tol=``, ``tol=``, ``max_iter=``,
        ``seed=`` still work, with a ``DeprecationWarning``, for one release.

    Returns
    -------
    RectangularCapacityResult
        ``p_c``, ``stderr``, ``alpha = p_c ln p_c / (d_in d_out)``, ``status``, ``message``
        and the fields of :class:`replica.optimal.finite_size.CapacityResult`, plus ``d_in``,
        ``d_out`` and ``rank``.

    Raises
    ------
    ValueError
        If ``d_in`` or ``d_out`` is below 2, another argument is out of range, or (original
        problem with ``p_c <= d_out``) ``kappa < 1``.
    TypeError
        For an unknown keyword argument.
    """
    problem = check_choice(problem, "problem", PROBLEMS)
    d_in = check_int(d_in, "d_in", low=2)
    d_out = check_int(d_out, "d_out", low=2)
    kappa = float(check_scalar_kappa(kappa))
    law = field_law(d_out, ensemble)
    margin = check_real(margin, "margin", low=0.0)
    settings = tolerance_settings(options, "rectangular_capacity")
    tail = _rank_tail(d_in, d_out, kappa)
    d = min(d_in, d_out)
    weights = None if d_in == d_out else d_in * d_out
    args = CapacityArguments(problem, d, kappa, law, margin, settings)
    base = distinct_outputs_capacity(args, top_k, weights=weights, tail=tail)
    if problem == "op" and base.p_c - 1.0 < d_out:
        if kappa != 1.0:
            raise ValueError(f"kappa must be 1 for the original problem with p_c <= d_out (d_in={d_in}, "
                             f"d_out={d_out}): a rank below min(p - 1, d_in) binds U^T W; got {kappa!r}")
        base = _op_small_load_capacity(d_in, d_out, base.margin, base.top_k, law, settings, problem)
    return _rectangular_result(base, d_in, d_out)


# --------------------------------------------------------------------------------------
# Hebbian memory
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RectangularHebbianCapacityResult(BitsPerParameter, Result):
    """Finite-size Hebbian capacity of a ``d_out x d_in`` memory (see :func:`rectangular_hebbian_capacity`).

    ``status``: ``"converged"`` (``|P - 1/2| <= tol`` at ``p_c``), ``"not_converged"``,
    ``"max_iter"`` or ``"unbracketed"`` (``p_c`` is then NaN), as for
    :class:`replica.hebbian.HebbianCapacityResult`.  ``alpha = p_c ln p_c / (d_in d_out)``;
    ``bits_per_parameter = p_c log2 p_c / (d_in d_out)`` (a property, also in ``to_dict()``).
    """

    STATUSES = ("converged", "not_converged", "max_iter", "unbracketed")

    d_in: int
    d_out: int
    ensemble: str
    problem: str
    p_c: float
    alpha: float
    alpha_c: float
    success_probability: float
    input_failure_probability: float
    converged: bool
    iterations: int
    residual: float
    status: str
    message: str
    validity: Validity | None = None  # how far the prediction was checked (replica.common.validity)
    model: str = ""  # the registry model that computed it (replica.common.registry)

    def memory_shape(self) -> tuple:
        """``(d_in, d_out, 1.0)``: a full-rank memory."""
        return self.d_in, self.d_out, 1.0


@reports_validity("rectangular_hebbian_capacity")
def rectangular_hebbian_capacity(d_in, d_out, ensemble="gaussian", *, problem="op", rel_tol=1e-9, tol=1e-6,
                                 max_iter=100):
    """Real ``p_c`` at which ``W = sum_mu u_mu e_mu^T`` (``d_out x d_in``) stores everything with probability 1/2.

    The finite-size Hebbian model of ``notes/hebbian_finite_size.md`` with the two
    dimensions in their places (``notes/rectangular.md``): norms ``|e|^2 ~ chi^2_{d_in} / d_in``,
    ``|u|^2 ~ chi^2_{d_out} / d_out``, input overlaps ``N(0, a / d_in)``, the crosstalk
    vector in ``R^d_out``.  ``problem="op"``: the other stored outputs compete (the model
    of :func:`replica.hebbian_capacity`, which this equals for ``d_in = d_out``, bit for
    bit); ``"dp"``: fresh candidates compete, independent given ``W e_mu``.

    Parameters
    ----------
    d_in, d_out : int
        Input and output dimensions, each ``>= 2``.
    ensemble : {"gaussian", "sphere"}
        Embedding ensemble.
    problem : {"op", "dp"}
        Shared outputs (the stored outputs compete) or own candidates per input.
    rel_tol, tol, max_iter
        As in :func:`replica.hebbian_capacity`.

    Returns
    -------
    RectangularHebbianCapacityResult

    Raises
    ------
    ValueError
        If ``d_in`` or ``d_out`` is below 2, or another argument is out of range.
    """
    d_in = check_int(d_in, "d_in", low=2)
    d_out = check_int(d_out, "d_out", low=2)
    check_ensemble(ensemble)
    problem = check_choice(problem, "problem", PROBLEMS)
    rel_tol = check_real(rel_tol, "rel_tol", low=1e-14, high=1e-2)
    tol = check_real(tol, "tol", low=0.0, high=0.1, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    search = hebbian_capacity_search(d_in, d_out, ensemble, rel_tol=rel_tol, tol=tol, max_iter=max_iter,
                                     competitors="stored" if problem == "op" else "fresh")
    p_c = search.p_c
    alpha = p_c * math.log(p_c) / (d_in * d_out) if math.isfinite(p_c) else math.nan
    return RectangularHebbianCapacityResult(
        d_in=d_in, d_out=d_out, ensemble=ensemble, problem=problem, p_c=p_c, alpha=alpha, alpha_c=0.125,
        success_probability=search.success_probability, input_failure_probability=search.input_failure_probability,
        converged=search.status == "converged", iterations=search.iterations, residual=search.residual,
        status=search.status, message=search.message)
