"""Recall accuracy: the expected fraction of the ``p`` facts that a memory recalls.

Machine-learning measurements of associative memories report the *accuracy* (the
fraction of the ``p`` inputs whose output wins the argmax) and call capacity the
largest ``p`` at a threshold accuracy such as 99 %.  The rest of the package predicts
``P(all p stored)``; this module predicts the accuracy.  Derivations:
``notes/recall_accuracy.md``.

Public functions
----------------
hebbian_accuracy
    ``1 - hebbian_input_failure_probability``: exact in the finite-size Hebbian model
    (linearity of expectation; no independence between inputs is needed).
optimal_accuracy
    Replica-symmetric ``q -> 1`` prediction of the largest fraction of facts a rank
    ``kappa d`` memory recalls: the costliest water-filling blocks are given up.
accuracy_capacity
    The largest ``p`` whose predicted accuracy is at least a threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ..common.deprecation import accepts_old_calls
from ..common.checks import check_at_least, check_choice, check_int, check_real, check_scalar_kappa, scalar_or_array
from ..common.ensembles import check_ensemble
from ..common.loads import BitsPerParameter, p_from_load
from ..common.validity import Validity, reports_validity
from ..common.results import Result
from ..common.roots import brent, walk_bracket
from ..common.seeds import resolve_seed
from ..hebbian.finite_size import hebbian_input_failure_probability
from ..asymptotic.quarter_circle import tail_second_moment
from ..optimal.capacity_equation import settings_dict
from ..optimal.scores import sample_optimal_scores

__all__ = [
    "MEMORIES",
    "hebbian_accuracy",
    "optimal_accuracy",
    "OptimalAccuracyResult",
    "accuracy_capacity",
    "AccuracyCapacityResult",
]

MEMORIES = ("optimal", "hebbian")
_DEFAULT_SIZE = 100_000  # Monte-Carlo samples of C_p for the optimal memory

_RS_CAVEAT = ("replica-symmetric q -> 1 prediction; counting errors is not convex, so replica "
              "symmetry may not be exact above capacity (against certified brackets of the best count "
              "at d = 6-10 it is too high at d = 6: notes/recall_accuracy.md, section 6)")


def _check_accuracy_threshold(accuracy):
    return check_real(accuracy, "accuracy", low=0.0, high=1.0, low_open=True)


# --------------------------------------------------------------------------------------
# Hebbian memory
# --------------------------------------------------------------------------------------
def hebbian_accuracy(d, p, ensemble="gaussian"):
    """Expected fraction of the ``p`` facts recalled by ``W_H = sum_mu u_mu e_mu^T``.

    By linearity of expectation the expected accuracy is ``1 - f(d, p)`` with ``f``
    the per-input failure probability of the finite-size Hebbian model
    (:func:`replica.hebbian.hebbian_input_failure_probability`); unlike
    ``P(all stored) = (1 - f)^p`` it needs no independence between inputs.  As
    ``d -> infinity`` it tends to 1 for ``alpha = p ln p / d^2 < 1/2`` and to 0 above
    (four times the all-stored threshold 1/8), with a transition of width about
    ``1/sqrt(2 ln p)`` in ``alpha``.  ``notes/recall_accuracy.md``.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : float or array_like
        Number of stored associations, every entry ``>= 2`` (real values interpolate).
    ensemble : {"gaussian", "sphere"}
        Embedding ensemble: i.i.d. N(0, I/d) or uniform unit vectors.

    Returns
    -------
    float or ndarray
        The expected accuracy, in ``[0, 1]``, with the shape of ``p``.

    Raises
    ------
    ValueError
        If ``d < 2``, an entry of ``p`` is below 2 or not finite, or the ensemble is unknown.
    """
    d = check_int(d, "d", low=2)
    check_ensemble(ensemble)
    loads = check_at_least(p, "p", 2.0)
    values = np.array([1.0 - hebbian_input_failure_probability(d=d, p=float(x), ensemble=ensemble)
                       for x in loads.ravel()]).reshape(loads.shape)
    return scalar_or_array(values, p)


# --------------------------------------------------------------------------------------
# optimal memory
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OptimalAccuracyResult(Result):
    """Predicted largest recall accuracy of a rank ``kappa d`` memory (see :func:`optimal_accuracy`).

    ``accuracy`` is the fraction of blocks kept, ``threshold_cost`` the water-filling
    cost ``theta`` above which blocks are given up (``inf`` when everything is stored),
    ``load_ratio = p mean(C_p) / (F(kappa) d^2)`` (below 1: everything is stored).
    ``stderr`` and ``load_ratio_stderr`` are Monte-Carlo standard errors of the sample
    of ``samples`` costs drawn with ``seed``.  ``status``: ``"ok"`` (the root of the
    budget equation was found and its residual checked) or ``"not_converged"``
    (residual check failed).  ``message`` carries the replica-symmetry caveat.
    """

    STATUSES = ("ok", "not_converged")

    d: int
    p: float
    kappa: float
    alpha: float  # p ln p / d^2
    accuracy: float
    stderr: float
    threshold_cost: float
    load_ratio: float
    load_ratio_stderr: float
    tail_second_moment: float  # F(kappa)
    samples: int
    seed: int
    residual: float  # |p L(a) - F d^2| / (F d^2), L the partial mean of the sorted costs
    status: str
    converged: bool
    message: str
    validity: Validity | None = None  # how far the prediction was checked (replica.common.validity)
    model: str = ""  # the registry model that computed it (replica.common.registry)


class _KeptBlocks:
    """Sorted sample of ``C_p`` and the budget equation ``p L(a) = F d^2`` on it.

    ``L(a)`` is the mean of the cheapest fraction ``a`` of the sample (piecewise linear
    in ``a``: the marginal block is kept fractionally), i.e. ``E[C 1{C <= theta}]`` with
    ``theta`` the ``a``-quantile of ``C``.
    """

    def __init__(self, costs, p, budget):
        self.costs = np.sort(np.asarray(costs, dtype=np.float64))
        self.n = self.costs.size
        self.partial = np.concatenate(([0.0], np.cumsum(self.costs))) / self.n
        self.per_block = budget / p  # the budget F d^2 shared among p blocks

    def partial_mean(self, a):
        return float(np.interp(a * self.n, np.arange(self.n + 1.0), self.partial))

    def load_ratio(self):
        mean = float(self.partial[-1])
        stderr = float(np.std(self.costs, ddof=1) / math.sqrt(self.n))
        return mean / self.per_block, stderr / self.per_block

    def kept_fraction(self):
        """``(a, theta, stderr, residual)``; ``a = 1`` and ``theta = inf`` below capacity."""
        if self.partial[-1] <= self.per_block:
            return 1.0, math.inf, 0.0, 0.0
        a = brent(lambda x: self.partial_mean(x) - self.per_block, 0.0, 1.0,
                  xtol=1e-15, rtol=4 * np.finfo(float).eps, max_iter=200, require=True).root
        theta = float(self.costs[min(int(a * self.n), self.n - 1)])
        kept = self.costs <= theta
        influence = kept * (1.0 - self.costs / theta)  # delta method: da = dF - dH / theta
        stderr = float(np.std(influence, ddof=1) / math.sqrt(self.n))
        residual = abs(self.partial_mean(a) - self.per_block) / self.per_block
        return float(a), theta, stderr, float(residual)


def _check_d_kappa_size(d, kappa, size):
    return (check_int(d, "d", low=2), check_scalar_kappa(kappa),
            check_int(size, "size", low=100))


def _optimal_prediction(d, p, kappa, size, seed):
    """The kept blocks at load ``p`` on the common-random-number sample fixed by ``seed``."""
    budget = float(tail_second_moment(kappa)) * float(d) ** 2
    costs = sample_optimal_scores(p=p, size=size, seed=seed).cost
    return _KeptBlocks(costs, p, budget)


@reports_validity("optimal_accuracy")
def optimal_accuracy(d, p, kappa=1.0, *, size=_DEFAULT_SIZE, tol=1e-9, seed=None):
    """Largest expected fraction of the ``p`` facts that any rank ``kappa d`` memory recalls.

    Replica-symmetric ``q -> 1`` picture (``notes/recall_accuracy.md``): each input is a
    block of fields that is either satisfied at its water-filling cost ``C_p``
    (:func:`replica.optimal.finite_size.water_filling_cost`) or given up at no cost; the budget
    is ``F(kappa) d^2``, and the most blocks are kept by giving up the costliest.  The
    fraction recalled ``a`` solves ``p E[C_p 1{C_p <= theta}] = F(kappa) d^2`` with
    ``a = P(C_p <= theta)``; below capacity (``p E[C_p] <= F d^2``) ``a = 1``.
    ``E`` is a Monte-Carlo mean over ``size`` exact samples of ``C_p``
    (:func:`replica.optimal.scores.sample_optimal_scores`, common random numbers across ``p``),
    and the standard error comes from the influence function
    ``1{C <= theta} (1 - C / theta)``.  Counting errors is not convex, so replica
    symmetry may not be exact here; the result's message says so.  Against certified
    brackets of the best count at d = 6 to 10 (``notes/recall_accuracy.md``, section 6)
    the prediction lies above the certified bound at d = 6, 1.25 p_c, and at it at d = 8.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : float
        Number of facts (blocks), ``p >= 2``; real allowed.
    kappa : float, optional
        Rank fraction in ``(0, 1]`` (for ``kappa < 1`` the budget ``F(kappa) d^2`` is the
        conjecture of ``notes/finite_size_capacity.md``).
    size : int, optional
        Monte-Carlo samples of ``C_p``, ``>= 100``.
    tol : float, optional
        Accepted relative residual of the budget equation, in ``(0, 1e-2]``.
    seed : None, int, SeedSequence or Generator, optional
        Seed of the sample (``None``: ``DEFAULT_SEED``); the integer used is stored.

    Returns
    -------
    OptimalAccuracyResult

    Raises
    ------
    ValueError
        If ``d < 2``, ``p < 2``, ``kappa`` outside ``(0, 1]``, ``size < 100``, ``tol``
        outside ``(0, 1e-2]`` or a bad ``seed``.
    """
    d, kappa, size = _check_d_kappa_size(d, kappa, size)
    p = check_real(p, "p", low=2.0)
    tol = check_real(tol, "tol", low=0.0, high=1e-2, low_open=True)
    seed = resolve_seed(seed)
    blocks = _optimal_prediction(d, p, kappa, size, seed)
    accuracy, theta, stderr, residual = blocks.kept_fraction()
    ratio, ratio_se = blocks.load_ratio()
    ok = residual <= tol
    verdict = "all stored" if accuracy == 1.0 else f"costliest {1.0 - accuracy:.3g} of the blocks given up"
    message = (f"{verdict} (load ratio {ratio:.4g} +- {ratio_se:.2g}); residual {residual:.2g} "
               f"(tol {tol:.2g}){'' if ok else ', root not accepted'}; {_RS_CAVEAT}")
    return OptimalAccuracyResult(
        d=d, p=p, kappa=kappa, alpha=p * math.log(p) / d**2, accuracy=accuracy, stderr=stderr,
        threshold_cost=theta, load_ratio=ratio, load_ratio_stderr=ratio_se,
        tail_second_moment=float(tail_second_moment(kappa)), samples=size, seed=seed, residual=residual,
        status="ok" if ok else "not_converged", converged=ok, message=message)


# --------------------------------------------------------------------------------------
# accuracy capacity
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AccuracyCapacityResult(BitsPerParameter, Result):
    """Largest ``p`` whose predicted accuracy is at least ``accuracy`` (see :func:`accuracy_capacity`).

    ``p_c`` is real; ``alpha = p_c ln p_c / d^2``; ``achieved`` is the predicted
    accuracy at ``p_c``.  ``stderr`` (optimal memory only; 0 for the Hebbian
    quadrature) is the Monte-Carlo error of ``p_c`` by the delta method.  ``seed`` is
    the seed of the optimal-memory sample (``None`` for the Hebbian memory).
    ``status``: ``"converged"`` (the root's residual ``|achieved - accuracy| <= tol``),
    ``"not_converged"`` (residual check failed), ``"max_iter"`` (Brent's method ran out
    of iterations) or ``"unbracketed"`` (no ``p >= 2`` reaches the threshold, or the
    accuracy stays above it up to ``p = 1e12``; ``p_c`` is then NaN).  ``bits_per_parameter``
    (a property, also in ``to_dict()``): ``p_c log2 p_c`` over the free parameters
    (``replica.common.loads.bits_per_parameter``).
    """

    STATUSES = ("converged", "not_converged", "max_iter", "unbracketed")

    d: int
    accuracy: float  # the threshold
    memory: str
    ensemble: str
    kappa: float
    p_c: float
    stderr: float
    alpha: float
    achieved: float
    iterations: int
    residual: float
    seed: int | None
    status: str
    converged: bool
    message: str
    validity: Validity | None = None  # how far the prediction was checked (replica.common.validity)
    model: str = ""  # the registry model that computed it (replica.common.registry)


_P_MAX = 1e12


class _AccuracyGap:
    """``h(log p)``: predicted accuracy minus the threshold, counting evaluations.

    For the optimal memory below capacity, ``1 - load_ratio`` is added, so that ``h``
    stays continuous and positive up to capacity (a threshold of 1 is then the
    all-stored capacity of the same sample).  ``noise`` is the Monte-Carlo standard
    error of ``h`` at the last point.
    """

    def __init__(self, d, threshold, memory, ensemble, kappa, size, seed):
        self.d, self.threshold, self.memory, self.ensemble = d, threshold, memory, ensemble
        self.kappa, self.size, self.seed = kappa, size, seed
        self.calls = 0
        self.accuracy = self.noise = math.nan

    def __call__(self, log_p):
        self.calls += 1
        p = math.exp(log_p)
        if self.memory == "hebbian":
            self.accuracy, self.noise = hebbian_accuracy(self.d, p, self.ensemble), 0.0
            return self.accuracy - self.threshold
        blocks = _optimal_prediction(self.d, p, self.kappa, self.size, self.seed)
        self.accuracy, _, self.noise, _ = blocks.kept_fraction()
        if self.accuracy < 1.0:
            return self.accuracy - self.threshold
        ratio, self.noise = blocks.load_ratio()
        return 1.0 - self.threshold + (1.0 - ratio)

    def guess(self):
        """Starting load: ``p ln p = d^2 / 8`` (Hebbian) or ``d^2 / 2`` (optimal)."""
        return max(p_from_load(self.d, 0.125 if self.memory == "hebbian" else 0.5), 2.0)

    def bracket(self):
        """``(lo, hi)`` in ``log p`` with ``h(lo) >= 0 > h(hi)``, or a failure message."""
        lo_limit, step = math.log(2.0), math.log(2.0)
        x = math.log(self.guess())
        if self(x) >= 0.0:
            walk = walk_bracket(self, x + step, lambda y: y + step, inside=lambda value: value >= 0.0, previous=x,
                                give_up=lambda y: y > math.log(_P_MAX))
            if not walk.found:
                return None, f"accuracy still >= {self.threshold:g} at p = {_P_MAX:g}"
            return (walk.lo, walk.hi), None
        if x > lo_limit:
            walk = walk_bracket(self, max(x - step, lo_limit), lambda y: max(y - step, lo_limit),
                                inside=lambda value: value < 0.0, previous=x, give_up=lambda y: not y > lo_limit)
            if walk.found:
                return (walk.lo, walk.hi), None
        return None, f"accuracy below {self.threshold:g} already at p = 2"


def _check_capacity_arguments(d, accuracy, memory, ensemble, kappa):
    d = check_int(d, "d", low=2)
    accuracy = _check_accuracy_threshold(accuracy)
    check_choice(memory, "memory", MEMORIES)
    check_ensemble(ensemble)
    kappa = check_scalar_kappa(kappa)
    if memory == "hebbian" and kappa != 1.0:
        raise ValueError(f"kappa must be 1 for memory='hebbian' (finite-size theory of the rank-truncated "
                         f"Hebbian memory not implemented), got {kappa!r}")
    return d, accuracy, kappa


_CAPACITY_SETTINGS = ("size", "seed", "tol", "max_iter")


def _check_options(options):
    """``(size, seed, tol, max_iter)`` of ``options`` (``None``, ``replica.Tolerances`` or dict), seed unchecked."""
    options = settings_dict(options, "accuracy_capacity()")
    unknown = sorted(set(options) - set(_CAPACITY_SETTINGS))
    if unknown:
        raise ValueError(f"options has unknown keys {unknown}; the keys are {list(_CAPACITY_SETTINGS)}")
    size = check_int(options.get("size", _DEFAULT_SIZE), "options['size']", low=100)
    tol = check_real(options.get("tol", 1e-6), "tol", low=0.0, high=1e-2, low_open=True)
    max_iter = check_int(options.get("max_iter", 100), "max_iter", low=1)
    return size, options.get("seed"), tol, max_iter


def _old_seed_keyword(args, kwargs):
    """``accuracy_capacity(..., seed=, tol=, max_iter=)``, the call style before these moved into ``options``."""
    flat = [name for name in ("seed", "tol", "max_iter") if name in kwargs]
    if not flat:
        return None
    kwargs = dict(kwargs)
    options = settings_dict(kwargs.get("options"), "accuracy_capacity()")
    for name in flat:
        value = kwargs.pop(name)
        if name in options:
            raise TypeError(f"accuracy_capacity() got {name} twice: as a keyword and in options")
        options[name] = value
    kwargs["options"] = options
    keywords = ", ".join(f"{name}=" for name in flat)
    return args, kwargs, (f"accuracy_capacity({keywords}) is deprecated and will be removed in the next release; "
                          f"pass options=replica.Tolerances({keywords}) or options={{...}}")


@reports_validity("accuracy_capacity")
@accepts_old_calls(_old_seed_keyword)
def accuracy_capacity(d, accuracy=0.99, memory="optimal", ensemble="gaussian", kappa=1.0, *, options=None):
    """Largest ``p`` whose predicted recall accuracy is at least ``accuracy``.

    The accuracy is :func:`optimal_accuracy` (``memory="optimal"``) or
    :func:`hebbian_accuracy` (``memory="hebbian"``); both decrease in ``p``.  The load
    is bracketed by factors of 2 from the asymptotic guess and found by Brent's method
    on ``log p`` (for the optimal memory on one common-random-number sample, so the
    accuracy is continuous in ``p``); the root is accepted only if
    ``|accuracy(p_c) - accuracy| <= tol``.  When no bracket exists the result has
    ``status="unbracketed"`` and ``p_c = NaN``.  ``notes/recall_accuracy.md``.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    accuracy : float, optional
        Threshold accuracy in ``(0, 1]`` (1: the optimal memory's all-stored capacity of
        the sample; no Hebbian load reaches it).
    memory : {"optimal", "hebbian"}, optional
    ensemble : {"gaussian", "sphere"}, optional
        Hebbian ensemble.  The optimal-memory theory has Gaussian competitor fields and
        does not depend on it (recorded only).
    kappa : float, optional
        Rank fraction in ``(0, 1]``; must be 1 for the Hebbian memory.
    options : replica.Tolerances or mapping, optional
        ``"tol"``, the accepted ``|accuracy(p_c) - accuracy|`` in ``(0, 1e-2]`` (default
        1e-6); ``"max_iter"``, the iterations of Brent's method (``>= 1``, default 100);
        the Monte-Carlo sample of ``C_p`` of the optimal memory: ``"size"``, its number
        of samples (``>= 100``, default 100000), and ``"seed"`` (None, int, SeedSequence
        or Generator; ``None``: ``DEFAULT_SEED``).  A ``replica.Tolerances(tol=,
        max_iter=, seed=)`` sets the same keys.  The keywords ``seed=``, ``tol=`` and
        ``max_iter=`` are still accepted, with a ``DeprecationWarning``, for one release.

    Returns
    -------
    AccuracyCapacityResult

    Raises
    ------
    ValueError
        If ``accuracy`` is outside ``(0, 1]``, ``memory`` or ``ensemble`` is unknown,
        ``kappa`` is outside ``(0, 1]`` (or not 1 for the Hebbian memory), ``options``
        has an unknown key, or ``d``, ``size``, ``tol``, ``max_iter`` or ``seed`` is out
        of range.
    """
    d, accuracy, kappa = _check_capacity_arguments(d, accuracy, memory, ensemble, kappa)
    size, seed, tol, max_iter = _check_options(options)
    seed = resolve_seed(seed) if memory == "optimal" else None
    gap = _AccuracyGap(d, accuracy, memory, ensemble, kappa, size, seed)
    common = dict(d=d, accuracy=accuracy, memory=memory, ensemble=ensemble, kappa=kappa, seed=seed)
    bracket, failure = gap.bracket()
    if bracket is None:
        return AccuracyCapacityResult(p_c=math.nan, stderr=math.nan, alpha=math.nan, achieved=math.nan,
                                      iterations=gap.calls, residual=math.nan, status="unbracketed",
                                      converged=False, message=failure, **common)
    found = brent(gap, *bracket, xtol=1e-10, max_iter=max_iter)
    return _capacity_result(gap, found.root, found.converged, tol, common)


def _capacity_result(gap, log_p, brent_converged, tol, common) -> AccuracyCapacityResult:
    """Residual check and delta-method standard error at the root ``log_p``."""
    value = gap(log_p)
    achieved, noise = float(gap.accuracy), float(gap.noise)
    # d h / d log p by a common-random-number difference on the side of the root's own
    # regime (h has a kink at the all-stored capacity of the optimal memory)
    h = 1e-3 if achieved < 1.0 else -1e-3
    slope = float((gap(log_p + h) - value) / h)
    p_c = math.exp(log_p)
    residual = float(abs(value))
    stderr = p_c * noise / abs(slope) if slope != 0.0 else math.inf
    if not brent_converged:
        status = "max_iter"
    else:
        status = "converged" if residual <= tol else "not_converged"
    message = (f"{status}: |accuracy(p_c) - {gap.threshold:g}| = {residual:.2g} (tol {tol:.2g}), "
               f"{gap.calls} evaluations")
    if gap.memory == "optimal":
        message += f"; {_RS_CAVEAT}"
    return AccuracyCapacityResult(p_c=p_c, stderr=stderr, alpha=p_c * log_p / gap.d**2, achieved=achieved,
                                  iterations=gap.calls, residual=residual, status=status,
                                  converged=status == "converged", message=message, **common)
