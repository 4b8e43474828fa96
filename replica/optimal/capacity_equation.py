"""The capacity equation with one answer per fact: the root of ``p E[C_p] = F(kappa) d^2``.

The root is found in ``log p`` on one fixed Monte-Carlo sample (common random numbers,
:class:`replica.optimal.cost.CostEstimator`), so that the equation is smooth.  This module also
holds what every capacity of :func:`replica.optimal.finite_size.capacity` shares: the result
type, the accuracy settings and the argument checks.  Derivation:
``notes/finite_size_capacity.md``.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..common.checks import check_choice, check_int, check_kappa, check_real
from ..common.loads import BitsPerParameter
from ..common.results import Result
from ..common.validity import Validity
from ..common.roots import BelowLimit, RootSearch, bracketed_root, brent
from ..common.seeds import DEFAULT_SEED, resolve_seed
from .cost import NORMAL_LAW, SAMPLE_ROUNDS, CostEstimator, control_mean, expected_cost_from, field_law, rows_for
from .cost_table import CostTableMiss, reference_monte_carlo, tables_enabled, tabulated_estimator
from ..asymptotic.quarter_circle import tail_second_moment

__all__ = [
    "PROBLEMS",
    "MAX_TOP_K",
    "CapacityResult",
    "Tolerances",
    "TOLERANCE_FIELDS",
    "settings_dict",
    "old_tolerance_keywords",
    "tolerance_settings",
    "AccuracySettings",
    "accuracy_settings",
    "CapacityArguments",
    "capacity_arguments",
    "check_d_kappa",
    "check_accuracy",
    "root_status",
    "SampledRoot",
    "distinct_outputs_capacity",
]

PROBLEMS = ("op", "dp")
"""Original / decoupled problem, ``capacity(problem=...)``."""


def check_d_kappa(d, kappa):
    """Check ``d >= 2`` and ``kappa`` in ``(0, 1]``; return them as ``(int, float)``."""
    d = check_int(d, "d", low=2)
    kappa = float(check_kappa(kappa))
    return d, kappa


def check_accuracy(rel_tol, tol, max_iter):
    """``rel_tol`` in [1e-6, 0.5], ``tol`` in (0, 1e-2], ``max_iter >= 1``."""
    rel_tol = check_real(rel_tol, "rel_tol", low=1e-6, high=0.5)
    tol = check_real(tol, "tol", low=0.0, high=1e-2, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    return rel_tol, tol, max_iter


def root_status(search: RootSearch, tol, rel_stderr, rel_tol, regular=True):
    """``(status, converged, message)`` of a root on a Monte-Carlo sample."""
    detail = (f"residual {search.residual:.3g} (tol {tol:.3g}), relative stderr of E[C] "
              f"{rel_stderr:.3g} (rel_tol {rel_tol:.3g}), {search.evaluations} evaluations")
    if search.exhausted:
        return "max_iter", False, f"max_iter reached: {detail}"
    if search.residual <= tol and rel_stderr <= rel_tol and regular:
        return "converged", True, f"converged: {detail}"
    return "not_converged", False, f"not converged: {detail}" + ("" if regular else "; slope <= 0")


@dataclass(frozen=True)
class CapacityResult(BitsPerParameter, Result):
    """Finite-size capacity from ``p_c E[C_{p_c}] = F(kappa) d^2`` (see :func:`replica.optimal.finite_size.capacity`).

    ``status``: ``"converged"`` (residual ``<= tol``, relative stderr of ``E[C]``
    ``<= rel_tol`` and an increasing equation at the root), ``"not_converged"`` (one of
    these checks failed) or ``"max_iter"`` (the root search ran out of iterations).
    ``message`` gives the residual.  ``bits_per_parameter`` (a property, also in ``to_dict()``):
    ``p_c log2 p_c`` over the free parameters of the memory (``replica.common.loads.bits_per_parameter``).
    """

    STATUSES = ("converged", "not_converged", "max_iter")

    d: int
    kappa: float
    margin: float
    top_k: int
    p_c: float
    stderr: float  # of p_c (delta method)
    alpha: float  # p_c ln p_c / d^2
    alpha_stderr: float
    alpha_c: float  # F(kappa) / 2, the d -> infinity limit
    tail_second_moment: float  # F(kappa)
    expected_cost: float  # E[C] at p_c
    expected_cost_stderr: float
    samples: int
    order_statistics: int
    converged: bool
    iterations: int  # evaluations of the equation
    residual: float  # |log(p E[C_p] / (F d^2))| at p_c
    seed: int
    status: str
    message: str
    outputs: int | None = None  # K distinct answers (None: one per fact)
    problem: str = "dp"
    ensemble: str = "gaussian"
    effective_weights: int = 0  # N_eff in p E[C] = F N_eff: d^2, or d (K - 1) for the OP with K <= d
    validity: Validity | None = None  # how far the prediction was checked (replica.common.validity)
    model: str = ""  # the registry model that computed it (replica.common.registry)


def _initial_guess(target: float) -> float:
    # p (2 ln p - ln ln p - 1.5) ~ target, a rough finite-size form of E C_p
    log_p = math.log(max(target, 4.0))
    for _ in range(50):
        cost = max(2.0 * log_p - math.log(max(log_p, 1.0)) - 1.5, 0.5)
        log_p = max(math.log(target / cost), math.log(2.0))
    return math.exp(log_p)


class SampledRoot(NamedTuple):
    """A root on a fixed sample: the load (or the given p), the sample and E[C] there."""

    p: float
    rows: int
    mean: float
    stderr: float
    order_statistics: int
    search: RootSearch  # of the last round (evaluations: all rounds)


def _smallest_load(top_k: int) -> float:
    """The smallest ``p`` allowed with ``top_k`` (one constrained competitor)."""
    return max(2.0, top_k + 1.0)


def _load_at(log_p: float, top_k: int) -> float:
    """``exp(log_p)``, kept at or above :func:`_smallest_load`.

    ``exp(log(p_min))`` can round to just below ``p_min`` (e.g. ``p_min = 301``), where
    fewer than one competitor would be constrained.
    """
    return max(math.exp(log_p), _smallest_load(top_k))


def _solve_load(estimator, target, rows, p_guess, max_iter) -> RootSearch:
    """Root of ``log(p E[C_p]) = log(target)`` in ``log p`` with a fixed sample."""
    def g(log_p):
        p = _load_at(log_p, estimator.top_k)
        return math.log(p * estimator.estimate(p, rows)[0]) - math.log(target)

    p_min = _smallest_load(estimator.top_k)
    try:
        return bracketed_root(g, math.log(max(p_guess, p_min)), 1.1, lower=math.log(p_min),
                               max_iter=max_iter)
    except BelowLimit:
        raise ValueError(f"capacity below p = {p_min:g} (the smallest p allowed with top_k = "
                         f"{estimator.top_k}): F(kappa) d^2 < {p_min:g} E[C_{p_min:g}]; "
                         "increase d or kappa") from None


def _capacity_root(estimator, target, rel_tol, max_iter) -> SampledRoot:
    """Sample size from a pilot at the guess, then the root on one fixed sample (enlarged if needed)."""
    p_guess = max(_initial_guess(target), _smallest_load(estimator.top_k))
    rows = expected_cost_from(estimator, p_guess, rel_tol).samples
    evaluations = 0
    for _ in range(SAMPLE_ROUNDS):
        search = _solve_load(estimator, target, rows, p_guess, max_iter)
        evaluations += search.evaluations
        p_c = _load_at(search.x, estimator.top_k)
        mean, err, _, k, _ = estimator.estimate(p_c, rows)
        if err / mean <= rel_tol or search.exhausted:
            break
        rows = rows_for(err / mean * math.sqrt(rows), rel_tol)
        p_guess = p_c
    return SampledRoot(p_c, rows, mean, err, k, search._replace(evaluations=evaluations))


def _log_load_slope(estimator, root: SampledRoot, h=1e-3) -> float:
    """``d log(p E[C_p]) / d log p`` at ``p_c`` by a common-random-number difference."""
    p_c, rows = root.p, root.rows
    p_low = max(p_c * math.exp(-h), _smallest_load(estimator.top_k))
    m_plus = estimator.estimate(p_c * math.exp(h), rows)[0]
    m_minus = estimator.estimate(p_low, rows)[0] if p_low < p_c else root.mean
    return (math.log(p_c * math.exp(h) * m_plus) - math.log(p_low * m_minus)) / (h + math.log(p_c / p_low))


def _root_and_slope(margin, top_k, law, settings, target):
    """The root of ``p E[C_p] = target`` and ``d log(p E[C_p]) / d log p`` there.

    From the shipped table of the default seed (:func:`replica.optimal.cost.tabulated_estimator`:
    the same sample function, the same search, in microseconds) when it covers the call,
    else, or when the search leaves the table, by Monte Carlo (:class:`CostEstimator`).
    """
    estimator = tabulated_estimator(margin, top_k, settings.seed, law, settings.rel_tol)
    if estimator is not None:
        try:
            root = _capacity_root(estimator, target, settings.rel_tol, settings.max_iter)
            return root, _log_load_slope(estimator, root)
        except CostTableMiss:
            pass
    estimator = CostEstimator(margin, top_k, settings.seed, law)
    root = _capacity_root(estimator, target, settings.rel_tol, settings.max_iter)
    return root, _log_load_slope(estimator, root)


MAX_TOP_K = 10**5
"""Largest ``top_k`` accepted by :func:`replica.optimal.finite_size.capacity` (see its docstring)."""


def _smallest_load_cost(top_k: int, margin: float, law=NORMAL_LAW) -> float:
    """Exact ``p E[C_p]`` at ``p = top_k + 1`` (one constrained competitor).

    With one kept competitor ``c`` (the smallest of ``top_k``) the cost is
    ``(c + margin - t_1)_+^2 / 2``, whose mean over ``t_1`` is ``g(c + margin) / 2``
    (``replica.optimal.cost.NormalLaw.lift_cost``); the mean over ``c`` is :func:`control_mean`.
    """
    p_min = _smallest_load(top_k)
    return p_min * 0.5 * control_mean(p_min - 1.0, top_k, margin, law)


def _check_capacity_range(d, tail, margin, top_k, law=NORMAL_LAW, weights=None):
    """Reject ``top_k > MAX_TOP_K`` and margins for which even ``p = top_k + 1`` is above capacity.

    ``weights``: the degrees of freedom ``N`` of the budget ``F N`` (default ``d^2``).
    """
    top_k = check_int(top_k, "top_k", low=1, high=MAX_TOP_K)
    target = tail * (float(d) ** 2 if weights is None else float(weights))
    if _smallest_load_cost(top_k, margin, law) <= target:
        return top_k
    p_min = _smallest_load(top_k)
    if _smallest_load_cost(top_k, 0.0, law) > target:
        raise ValueError(f"d={d}, F(kappa)={tail:.6g}, top_k={top_k}: capacity below p = {p_min:g} (the smallest "
                         f"p allowed with top_k = {top_k}) even at margin 0: F(kappa) d^2 < {p_min:g} "
                         f"E[C_{p_min:g}]; increase d or kappa")
    largest = brent(lambda m: _smallest_load_cost(top_k, m, law) - target, 0.0, margin, xtol=1e-6, require=True).root
    raise ValueError(f"margin must lie in [0, {largest:.6g}] for d={d}, top_k={top_k} and F(kappa) = "
                     f"{tail:.6g} (above it even p = {p_min:g} exceeds the capacity), "
                     f"got {margin!r}")


@dataclass(frozen=True)
class Tolerances:
    """The numerical settings of a theory model: the keyword ``options`` of every front end.

    ``replica.capacity(d, options=replica.Tolerances(rel_tol=1e-2, seed=3))`` and the
    other front ends of :mod:`replica.quantities` take it, as do
    :func:`replica.variants.rectangular_capacity` and :func:`replica.optimal.max_margin`.  A
    field left at ``None`` takes the default of the model that runs (the optimal memory's
    capacity: ``rel_tol=1e-3``, ``tol=1e-9``, ``max_iter=100``; the Hebbian capacity:
    ``rel_tol=1e-9``, ``tol=1e-6``, ``max_iter=100``); a field set for a model that does not
    use it is a ``ValueError`` naming the model's settings.  A dict with the same keys (and
    the model's own settings, e.g. ``{"replicas": 2}`` of ``hull_budget``) is the same
    call: ``options=Tolerances(rel_tol=1e-2)`` equals ``options={"rel_tol": 1e-2}``.

    Attributes
    ----------
    rel_tol : float, optional
        Relative standard error of the Monte-Carlo mean at the root (the optimal memory:
        of ``E[C]``, in ``[1e-6, 0.5]``), or the root's relative tolerance (Hebbian).
    tol : float, optional
        Accepted residual of the equation at the root (the optimal memory: in ``(0, 1e-2]``).
    max_iter : int, optional
        Iterations allowed per root search, ``>= 1``.
    seed : None, int, SeedSequence or Generator, optional
        Seed of the model's Monte-Carlo sample (``None``: ``replica.common.seeds.DEFAULT_SEED``).
    """

    rel_tol: float | None = None
    tol: float | None = None
    max_iter: int | None = None
    seed: object = None

    def given(self) -> dict:
        """The fields that are set (not ``None``), as a dict: the settings handed to the model."""
        return {name: value for name, value in
                (("rel_tol", self.rel_tol), ("tol", self.tol), ("max_iter", self.max_iter), ("seed", self.seed))
                if value is not None}


TOLERANCE_FIELDS = ("rel_tol", "tol", "max_iter", "seed")
"""The fields of :class:`Tolerances`, the settings shared by the theory's models."""


def settings_dict(options, owner: str) -> dict:
    """``options`` (``None``, a :class:`Tolerances` or a mapping) as a new dict of the settings that are set.

    A setting ``None`` is left out (the model's default), as a :class:`Tolerances` field left
    at ``None``.  ``owner`` names the function in the error: a ``ValueError`` for any other type.
    """
    if options is None:
        return {}
    if isinstance(options, Tolerances):
        return options.given()
    if isinstance(options, Mapping):
        return {name: value for name, value in options.items() if value is not None}
    raise ValueError(f"{owner}: options must be None, a replica.Tolerances or a dict of settings; got {options!r}")


class AccuracySettings(NamedTuple):
    """The accuracy settings of :func:`replica.optimal.capacity` (its keyword-only arguments)."""

    rel_tol: float = 1e-3
    tol: float = 1e-9
    max_iter: int = 100
    seed: int = DEFAULT_SEED


def accuracy_settings(**accuracy) -> AccuracySettings:
    """Check the accuracy settings ``rel_tol``, ``tol``, ``max_iter``, ``seed``; an unknown name raises TypeError."""
    unknown = sorted(set(accuracy) - set(AccuracySettings._fields))
    if unknown:
        raise TypeError(f"capacity() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}")
    rel_tol, tol, max_iter = check_accuracy(accuracy.get("rel_tol", 1e-3), accuracy.get("tol", 1e-9),
                                             accuracy.get("max_iter", 100))
    return AccuracySettings(rel_tol, tol, max_iter, resolve_seed(accuracy.get("seed")))


def old_tolerance_keywords(owner: str, names=TOLERANCE_FIELDS, advice: str | None = None):
    """A translator for :func:`replica.common.deprecation.accepts_old_calls`: ``owner(..., rel_tol=, ...)``.

    The flat keywords ``names`` of a call go into its ``options`` (a dict of the settings
    already in ``options`` and the flat ones); a setting given both ways is a ``TypeError``.
    The warning says to pass ``options=replica.Tolerances(...)``, or ``advice`` when given.
    """

    def translate(args, kwargs):
        flat = [name for name in names if name in kwargs]
        if not flat:
            return None
        kwargs = dict(kwargs)
        given = settings_dict(kwargs.get("options"), f"{owner}()")
        old = {name: kwargs.pop(name) for name in flat}
        old = {name: value for name, value in old.items() if value is not None}
        twice = sorted(set(old) & set(given))
        if twice:
            raise TypeError(f"{owner}() got {', '.join(twice)} twice: as a keyword and in options")
        kwargs["options"] = {**given, **old}
        keywords = ", ".join(f"{name}=" for name in flat)
        return args, kwargs, (f"{owner}({keywords}) is deprecated and will be removed in the next release; pass "
                              f"{advice or f'options=replica.Tolerances({keywords})'}")

    return translate


def tolerance_settings(options, owner: str) -> AccuracySettings:
    """The checked :class:`AccuracySettings` of ``options`` (``None``, :class:`Tolerances` or dict); ``ValueError``."""
    settings = settings_dict(options, f"{owner}()")
    unknown = sorted(set(settings) - set(TOLERANCE_FIELDS))
    if unknown:
        raise ValueError(f"{owner}(): options has unknown keys {unknown}; the keys are {list(TOLERANCE_FIELDS)}")
    return accuracy_settings(**{k: v for k, v in settings.items() if v is not None})


class CapacityArguments(NamedTuple):
    """The checked arguments of :func:`replica.optimal.capacity` (``law``: the field law of the ensemble)."""

    problem: str
    d: int
    kappa: float
    law: object
    margin: float
    settings: AccuracySettings


def capacity_arguments(d, kappa, margin, problem, ensemble, accuracy: AccuracySettings) -> CapacityArguments:
    """Check the arguments of :func:`replica.optimal.capacity`, in its order; ``ValueError``.

    ``accuracy`` holds the unchecked ``rel_tol``, ``tol``, ``max_iter`` and ``seed``.
    """
    problem = check_choice(problem, "problem", PROBLEMS)
    d, kappa = check_d_kappa(d, kappa)
    law = field_law(d, ensemble)
    margin = check_real(margin, "margin", low=0.0)
    settings = accuracy_settings(**accuracy._asdict())
    return CapacityArguments(problem, d, kappa, law, margin, settings)


def distinct_outputs_capacity(args: CapacityArguments, top_k, *, weights=None, tail=None) -> CapacityResult:
    """:func:`replica.optimal.capacity` with one answer per fact: the root of ``p E[C_p] = F(kappa) d^2``.

    ``args`` are the checked arguments (:func:`capacity_arguments`).  ``weights`` replaces
    the degrees of freedom ``d^2`` and ``tail`` the spectral factor ``F(kappa)`` (the
    ``d_out x d_in`` memory of ``replica.variants.rectangular``: ``N = d_in d_out``, ``F`` of
    the Marchenko-Pastur law); ``alpha = p_c ln p_c / N``.
    """
    d, kappa, margin, law, settings, problem = args.d, args.kappa, args.margin, args.law, args.settings, args.problem
    tail = float(tail_second_moment(kappa)) if tail is None else float(tail)
    n_weights = d * d if weights is None else int(weights)
    top_k = _check_capacity_range(d, tail, margin, top_k, law, weights)
    target = tail * (float(d) ** 2 if weights is None else float(weights))
    core = None
    if weights is None and kappa == 1.0 and margin == 0.0 and top_k == 1 and law.name == "sphere":
        core = _sphere_table_core(d, settings)
    if core is None:
        try:
            root, slope = _root_and_slope(margin, top_k, law, settings, target)
        except ValueError as exc:
            raise ValueError(f"d={d}, kappa={kappa!r}, top_k={top_k}: {exc}") from None
        core = _root_core(root, slope, settings)
    p_c, p_se = core.p_c, core.stderr
    log_p = math.log(p_c)
    return CapacityResult(
        d=d, kappa=kappa, margin=margin, top_k=top_k, p_c=p_c, stderr=p_se,
        alpha=p_c * log_p / n_weights, alpha_stderr=p_se * (log_p + 1.0) / n_weights,
        alpha_c=tail / 2.0, tail_second_moment=tail, expected_cost=core.expected_cost,
        expected_cost_stderr=core.expected_cost_stderr, samples=core.samples, order_statistics=core.order_statistics,
        converged=core.converged, iterations=core.iterations, residual=core.residual,
        seed=settings.seed, status=core.status, message=core.message, problem=problem, ensemble=law.name,
        effective_weights=n_weights)



class _RootCore(NamedTuple):
    """The fields of a :class:`CapacityResult` that come from the root search (or its table)."""

    p_c: float
    stderr: float
    expected_cost: float
    expected_cost_stderr: float
    samples: int
    order_statistics: int
    iterations: int
    residual: float
    status: str
    converged: bool
    message: str


def _root_core(root: SampledRoot, slope: float, settings: AccuracySettings) -> _RootCore:
    rel = root.stderr / root.mean
    status, converged, message = root_status(root.search, settings.tol, rel, settings.rel_tol, regular=slope > 0)
    return _RootCore(root.p, root.p * rel / slope, root.mean, root.stderr, root.rows, root.order_statistics,
                     root.search.evaluations, root.search.residual, status, converged, message)


SPHERE_TABLE = Path(__file__).resolve().parent / "sphere_capacity_table.json"
"""``capacity(d, ensemble="sphere")`` at full rank, margin 0, ``top_k = 1`` and the default accuracy settings,
for ``d = 2 .. 512``: every field of the Monte-Carlo result (:func:`write_sphere_capacity_table`)."""
SPHERE_TABLE_DIMS = range(2, 513)


@functools.lru_cache(maxsize=1)
def _sphere_table() -> dict:
    if not SPHERE_TABLE.exists():
        return {}
    data = json.loads(SPHERE_TABLE.read_text())
    return {int(d): _RootCore(**entry) for d, entry in data["entries"].items()} if data["seed"] == DEFAULT_SEED \
        else {}


def _sphere_table_core(d: int, settings: AccuracySettings):
    """The tabulated root of the sphere ensemble at ``d`` (full rank, margin 0, top_k 1), or None."""
    if settings != AccuracySettings() or not tables_enabled():
        return None
    return _sphere_table().get(int(d))


def write_sphere_capacity_table(path=None, dims=SPHERE_TABLE_DIMS, progress=False) -> Path:
    """Compute the table of ``capacity(d, ensemble="sphere")`` by Monte Carlo and write it (JSON, exact floats).

    The sphere law depends on ``d``, so the table holds the root of each ``d`` (not a cost
    function of ``p``): about 1 s per ``d`` on one core, 10 minutes for ``d = 2 .. 512``.
    ``python -c "from replica.optimal.capacity_equation import write_sphere_capacity_table as w; w(progress=True)"``
    """
    path = SPHERE_TABLE if path is None else Path(path)
    settings = AccuracySettings()
    entries = {}
    with reference_monte_carlo():
        for d in dims:
            law = field_law(d, "sphere")
            _check_capacity_range(d, 1.0, 0.0, 1, law)
            root, slope = _root_and_slope(0.0, 1, law, settings, float(d) ** 2)
            entries[str(d)] = _root_core(root, slope, settings)._asdict()
            if progress and d % 16 == 0:
                print(f"d={d}: p_c={root.p!r}", flush=True)
    about = ("replica.capacity(d, ensemble='sphere') at kappa 1, margin 0, top_k 1 and the default accuracy "
             "settings: the fields of its Monte-Carlo root per d; written by "
             "replica.optimal.capacity_equation.write_sphere_capacity_table")
    path.write_text(json.dumps({"about": about, "seed": settings.seed, "entries": entries}, indent=0) + "\n")
    _sphere_table.cache_clear()
    return path
