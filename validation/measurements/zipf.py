"""Measured recall error of facts with Zipf frequencies, beside ``replica.zipf_error``.

``N`` facts with ``N`` distinct outputs are asked with frequencies
``f_mu = mu^(-a) / H_{N,a}`` (``make_instance(d, N, facts=FactSettings(weights=f))``), and the
error of a memory W on one instance is the frequency mass of the facts it does not recall,

    E = sum_mu f_mu 1{mu not recalled},

recall checked in float64 (:func:`validation.solvers.assess`).  :func:`measure_zipf`
builds ``trials`` independent instances (seeds ``task_seed(seed, N, t)`` of
:mod:`validation.runtime.sweep`, as the accuracy sweeps) and reports per solver the mean of
``E`` over the instances and its standard error.  The memories (``notes/zipf.md``; each
registered as a :class:`~validation.solvers.engine.registry.MemorySpec` and run by
:mod:`validation.measurements.zipf_memories`):

``optimal``
    The weighted give-up search of the optimal solver
    (:func:`validation.solvers.searches.solve_give_up` with the instance's weights): it
    gives up the largest squared hinge per unit of frequency, the analogue of the order
    ``C_mu / f_mu`` of the knapsack (section 2).  Its recalled mass is a lower bound on
    the best recalled mass, so its ``E`` is an *upper bound* on the error of the best
    full-rank memory, beside ``replica.zipf_error(memory="optimal")``.
``hebbian``
    The Hebbian rule ``W = sum_mu u_mu e_mu^T`` (unweighted; the error of this memory
    itself), beside ``replica.zipf_error(memory="hebbian")``.
``hebbian_frequency``
    The frequency-weighted Hebbian memory ``W = sum_mu f_mu u_mu e_mu^T``, beside
    ``replica.zipf_error(memory="hebbian", weights="frequency")`` (section 3).
``adam``
    Adam on the (unweighted) softmax cross-entropy, ``adam_steps`` steps from W = 0
    (:mod:`validation.solvers.adam`); the error of the trained W, no theory.
``adam_frequency``
    Adam on the frequency-weighted cross-entropy ``sum_mu f_mu CE_mu`` (option
    ``weighted=True``), the expected loss of queries drawn from the Zipf law, as a
    model trained on Zipf samples sees it; the error of the trained W, no theory.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from replica.common.checks import check_choice, check_int, check_real
from replica.common.results import Result
from replica.common.seeds import resolve_seed
from replica.variants import zipf_frequencies

from ..instances.ensembles import ENSEMBLES, PROBLEMS, EmbeddingModel, FactSettings, make_instance
from ..solvers import assess
from ..solvers.engine.registry import memory_names, memory_spec
from ..runtime.sweep import task_seed
from .recall import recalled_from_images

__all__ = ["ZipfSettings", "ZIPF_SOLVERS", "ZIPF_LABELS", "ZipfPoint", "ZipfMeasurement", "measure_zipf",
           "zipf_frequencies",
           "theory_zipf_error", "predicted_exponent", "fitted_slope", "slope_rows", "slope_text", "zipf_series",
           "ZIPF_THEORY",
           "overloaded_facts", "zipf_theory_curves"]

ZIPF_SOLVERS = memory_names()
"""The memories a Zipf measurement runs (the registry's, :class:`~validation.solvers.engine.registry.MemorySpec`)."""

ZIPF_THEORY = tuple(name for name in ZIPF_SOLVERS if memory_spec(name).theory is not None)
"""The Zipf memories with a theory in ``replica.zipf_error`` (the trained Adam memories have none)."""

ZIPF_LABELS = {name: memory_spec(name).label for name in ZIPF_SOLVERS}
"""Table and legend names of the Zipf solvers."""


@dataclass(frozen=True)
class ZipfSettings:
    """How :func:`measure_zipf` builds its instances and runs its memories.

    Attributes
    ----------
    ensemble : {"gaussian", "sphere"}
    adam_steps : int
        Adam steps per instance, ``>= 1`` (default 300).
    give_up_fraction : float
        Fraction of the unrecalled kept facts the give-up search gives up per round,
        in (0, 1] (default 0.05, the solver's default).
    time_limit : float, optional
        Wall-time budget per solve in seconds (``optimal``, ``adam``, ``adam_frequency``).
    progress : bool, optional
        One line per instance on stderr.

    Raises
    ------
    ValueError
        For an unknown ensemble, ``adam_steps < 1``, ``give_up_fraction`` outside (0, 1]
        or ``time_limit <= 0``.
    """

    ensemble: str = "gaussian"
    adam_steps: int = 300
    give_up_fraction: float = 0.05
    time_limit: float | None = None
    progress: bool | None = None

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "ensemble", check_choice(self.ensemble, "ensemble", ENSEMBLES))
        set_(self, "adam_steps", check_int(self.adam_steps, "adam_steps", low=1))
        set_(self, "give_up_fraction", check_real(self.give_up_fraction, "give_up_fraction", low=0.0, high=1.0,
                                                  low_open=True))
        if self.time_limit is not None:
            set_(self, "time_limit", check_real(self.time_limit, "time_limit", low=0.0, low_open=True))


def predicted_exponent(solver, a):
    """Asymptotic exponent of d in E for N fixed and large (``notes/zipf.md``, sections 4-5), or None.

    ``optimal``: ``-2 (a - 1)``; ``hebbian_frequency``: ``-(a - 1) / (2 a)``; None for the
    unweighted Hebbian memory (E tends to 1 once ``N ln N > d^2 / 2``) and for Adam (no
    theory).

    >>> predicted_exponent("optimal", 1.5), predicted_exponent("hebbian_frequency", 2.0)
    (-1.0, -0.25)
    """
    exponent = memory_spec(solver).exponent
    return None if exponent is None else exponent(a)


def fitted_slope(d, e):
    """Least-squares slope of ln E against ln d over the points with E > 0 (None with fewer than 2).

    >>> round(fitted_slope(np.array([16.0, 32.0, 64.0]), np.array([0.4, 0.2, 0.1])), 12)
    -1.0
    """
    d, e = np.asarray(d, dtype=float), np.asarray(e, dtype=float)
    keep = e > 0
    if keep.sum() < 2:
        return None
    return float(np.polyfit(np.log(d[keep]), np.log(e[keep]), 1)[0])


def slope_text(slope) -> str:
    """A slope as a table cell: ``+0.25`` or ``n/a`` (None)."""
    return "n/a" if slope is None else f"{slope:+.2f}"


def zipf_series(measurements, a, solver, key="error"):
    """(d, values) of one solver at exponent ``a`` in increasing d, from ``to_dict()`` measurements."""
    pts = sorted((m["d"], pt[key]) for m in measurements if m["a"] == a for pt in m["points"]
                 if pt["solver"] == solver)
    return (np.array([d for d, _ in pts], dtype=float),
            np.array([np.nan if v is None else v for _, v in pts], dtype=float))


def slope_rows(measurements) -> list:
    """The fitted log-log slopes of E against d, per exponent and solver, beside the theory's.

    ``measurements``: :meth:`ZipfMeasurement.to_dict` dicts (as ``docs/zipf.json`` holds
    them) at several d.  Each row: ``a``, ``solver``, ``label``, ``dims``, ``measured``
    (slope of the mean E), ``theory`` (the slope of ``replica.zipf_error`` at the same d
    and N; None without a theory), ``asymptotic`` (:func:`predicted_exponent`) and
    ``trials`` (the instance counts of the points).
    """
    rows = []
    for a in sorted({m["a"] for m in measurements}):
        solvers = [s for s in ZIPF_SOLVERS if any(pt["solver"] == s for m in measurements if m["a"] == a
                                                 for pt in m["points"])]
        for solver in solvers:
            d, e = zipf_series(measurements, a, solver)
            _, th = zipf_series(measurements, a, solver, "theory")
            _, n = zipf_series(measurements, a, solver, "trials")
            theory = fitted_slope(d, th) if np.isfinite(th).all() else None
            rows.append({"a": a, "solver": solver, "label": ZIPF_LABELS[solver], "dims": [int(x) for x in d],
                         "measured": fitted_slope(d, e), "theory": theory,
                         "asymptotic": predicted_exponent(solver, a), "trials": sorted({int(x) for x in n})})
    return rows


def overloaded_facts(d, overload) -> int:
    """``round(overload * replica.capacity(d).p_c)``: the number of facts ``overload`` times the all-stored capacity."""
    import replica

    return int(round(overload * replica.capacity(d).p_c))


def zipf_theory_curves(dims, exponents, overload, solvers=("optimal", "hebbian", "hebbian_frequency")) -> list:
    """``replica.zipf_error`` along ``dims`` at ``N = overloaded_facts(d, overload)``, per exponent and solver.

    Each curve: ``{"a", "solver", "d": [...], "N": [...], "error": [...]}`` (solvers without a
    theory are left out).
    """
    dims = sorted(int(d) for d in dims)
    facts = [overloaded_facts(d, overload) for d in dims]
    return [{"a": a, "solver": s, "d": dims, "N": facts,
             "error": [theory_zipf_error(d, n, a, s)[0] for d, n in zip(dims, facts)]}
            for a in exponents for s in solvers if s in ZIPF_THEORY]


def theory_zipf_error(d, N, a, solver, ensemble="gaussian"):
    """``(value, stderr, source)`` of ``replica.zipf_error`` for a solver (NaN and ``"none"`` without one)."""
    import replica

    spec = memory_spec(solver)
    if spec.theory is None:
        return math.nan, math.nan, spec.theory_source
    extra = {"ensemble": ensemble} if spec.theory_ensemble else {}
    theory = dict(spec.theory)
    facts = replica.ZipfFacts(N, a, weights=theory.pop("weights", None))
    res = replica.zipf_error(d, facts, **theory, **extra)
    return float(res.error), float(res.stderr) if spec.theory_stderr else 0.0, spec.theory_source


@dataclass(frozen=True)
class ZipfPoint(Result):
    """Measured error of one solver at one ``(d, N, a)`` beside its theory.

    Attributes
    ----------
    solver : str
    error : float
        Mean over the instances of ``E = sum_mu f_mu 1{mu not recalled}``.
    stderr : float
        Between-instance standard error ``sd / sqrt(trials)`` (ddof 1).
    trials, failures : int
        Instances that gave an error, and solves that raised (left out).
    budget_ended : int
        Solves that ended on a step or time budget (``undecided``; ``adam`` always
        unless it stores everything): their W is still measured.
    recalled : float
        Mean number of facts recalled.
    theory, theory_stderr : float
        ``replica.zipf_error`` and its Monte-Carlo standard error (NaN: no theory).
    theory_source, measures : str
    bound : {"exact", "upper_bound"}
        ``exact``: the error of the memory the solver names (Hebbian rules);
        ``upper_bound``: the error of a W found by a search or training, an upper bound
        on the error of the best memory.
    status : {"ok", "failed"}
        ``failed``: fewer than 2 instances gave an error (numbers NaN).
    converged : bool
    message : str
    """

    STATUSES: ClassVar[tuple] = ("ok", "failed")

    solver: str
    error: float
    stderr: float
    trials: int
    failures: int
    budget_ended: int
    recalled: float
    theory: float
    theory_stderr: float
    theory_source: str
    measures: str
    bound: str
    status: str
    converged: bool
    message: str


@dataclass(frozen=True)
class ZipfMeasurement(Result):
    """Measured Zipf errors of several solvers on the same instances.

    Attributes
    ----------
    d, N : int
    a : float
    problem, ensemble : str
    seed : int
        Base seed; instance ``t`` has seed ``task_seed(seed, N, t)``.
    trials : int
        Instances built.
    adam_steps : int
    give_up_fraction : float
    points : tuple of ZipfPoint
        One per solver, in the order asked.
    seconds : float
    status : {"ok", "failed"}
        ``failed`` when some solver's point failed.
    converged : bool
    message : str
    """

    STATUSES: ClassVar[tuple] = ("ok", "failed")

    d: int
    N: int
    a: float
    problem: str
    ensemble: str
    seed: int
    trials: int
    adam_steps: int
    give_up_fraction: float
    points: tuple
    seconds: float
    status: str
    converged: bool
    message: str

    def point(self, solver) -> ZipfPoint:
        """The point of ``solver`` (``KeyError`` if it was not measured)."""
        for pt in self.points:
            if pt.solver == solver:
                return pt
        raise KeyError(solver)

    def rows(self) -> list:
        """One JSON-safe dict per solver, with the measurement's d, N, a, problem and ensemble."""
        head = {"d": self.d, "N": self.N, "a": self.a, "problem": self.problem, "ensemble": self.ensemble,
                "seed": self.seed}
        return [{**head, **pt.to_dict()} for pt in self.points]

    def _payload(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["points"] = [pt.to_dict() for pt in self.points]
        return out


def _one_error(inst, solver, settings):
    """``(E, recalled count, budget ended)`` of one memory on one weighted instance."""
    W, ended = memory_spec(solver).run.load(solver)(inst, settings)
    if inst.problem == "op":  # shared candidates: the float32 screen, the float64 verdict (recalled_from_images)
        recalled = recalled_from_images(inst.table, inst.inputs @ np.asarray(W, dtype=np.float64).T,
                                        None if inst.outputs is None else inst.target_index)
    else:
        recalled = assess(inst, W)[3]
    return math.fsum(inst.weights[~recalled].tolist()), int(recalled.sum()), ended


def _point(solver, values, failures, ended, recalled, theory) -> ZipfPoint:
    value, theory_se, source = theory
    bound, measures = memory_spec(solver).bound, memory_spec(solver).measures
    n = len(values)
    if n < 2:
        return ZipfPoint(solver, math.nan, math.nan, n, failures, ended, math.nan, value, theory_se, source,
                         measures, bound, "failed", False,
                         f"{n} instance(s) gave an error ({failures} failed): at least 2 are needed")
    e = np.asarray(values, dtype=np.float64)
    stderr = float(e.std(ddof=1)) / math.sqrt(n)
    message = f"mean of {n} instances +- sd/sqrt(n)"
    if ended:
        message += f"; {ended} solves ended on their budget (their W measured)"
    if failures:
        message += f"; {failures} solves failed with an error (left out)"
    return ZipfPoint(solver, float(e.mean()), stderr, n, failures, ended, float(np.mean(recalled)), value,
                     theory_se, source, measures, bound, "ok", True, message)


_FLAT_SETTINGS = tuple(f.name for f in dataclasses.fields(ZipfSettings))


def _settings(settings, flat) -> ZipfSettings:
    """``settings`` as :class:`ZipfSettings`, with the deprecated flat keywords of :func:`measure_zipf` folded in."""
    if settings is None:
        settings = ZipfSettings()
    elif not isinstance(settings, ZipfSettings):
        raise ValueError(f"settings must be a ZipfSettings, got {type(settings).__name__}")
    unknown = sorted(set(flat) - set(_FLAT_SETTINGS))
    if unknown:
        raise TypeError(f"measure_zipf() got unexpected keyword arguments {unknown}")
    if flat:
        warnings.warn(f"measure_zipf({', '.join(f'{k}=...' for k in flat)}) is deprecated; pass "
                      f"settings=ZipfSettings({', '.join(f'{k}=...' for k in flat)})", DeprecationWarning,
                      stacklevel=3)
        settings = dataclasses.replace(settings, **flat)
    return settings


def measure_zipf(d, N, a, solvers=("optimal", "hebbian", "adam"), trials=8, problem="op", seed=None, *,
                 settings=None, **flat) -> ZipfMeasurement:
    """Mean recall error ``E = sum_mu f_mu 1{mu not recalled}`` per solver, beside the theory.

    See the module docstring and ``notes/zipf.md``.  Every solver sees the same
    ``trials`` instances ``make_instance(d, N, problem, seed=task_seed(seed, N, t),
    embeddings=EmbeddingModel(ensemble), facts=FactSettings(weights=zipf_frequencies(N, a)))``.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    N : int
        Number of facts (and distinct outputs), ``N >= 2``.
    a : float
        Zipf exponent, ``a >= 0`` (``a <= 1`` is allowed: ``N`` is finite), as
        ``replica.zipf_error`` accepts for finite ``N``.
    solvers : sequence of {"optimal", "hebbian", "hebbian_frequency", "adam", "adam_frequency"}
        The memories measured (the registry's :func:`~validation.solvers.engine.registry.memory_names`).
    trials : int
        Instances, ``>= 2``.
    problem : {"op", "dp"}
    seed : None, int, SeedSequence or Generator
        Base seed (``None``: ``DEFAULT_SEED``).
    settings : ZipfSettings, optional
        Ensemble, Adam steps, give-up fraction, time limit per solve and progress lines
        (default ``ZipfSettings()``).
    **flat
        Deprecated: the fields of :class:`ZipfSettings` as keywords (``ensemble``,
        ``adam_steps``, ``give_up_fraction``, ``time_limit``, ``progress``), with a
        ``DeprecationWarning``; they replace those of ``settings``.

    Returns
    -------
    ZipfMeasurement

    Raises
    ------
    ValueError
        Naming the argument: ``d < 2``, ``N < 2``, ``a < 0``, ``trials < 2``, an
        unknown or repeated solver, problem or ensemble, ``adam_steps < 1``,
        ``give_up_fraction`` outside (0, 1], ``time_limit <= 0``.
    """
    start = time.perf_counter()
    d = check_int(d, "d", low=2)
    N = check_int(N, "N", low=2)
    a = check_real(a, "a", low=0.0)
    trials = check_int(trials, "trials", low=2)
    problem = check_choice(problem, "problem", PROBLEMS)
    settings = _settings(settings, flat)
    if isinstance(solvers, str):
        solvers = (solvers,)
    solvers = tuple(check_choice(s, "solvers", ZIPF_SOLVERS) for s in solvers)
    if not solvers or len(set(solvers)) != len(solvers):
        raise ValueError(f"solvers must name at least one solver of {ZIPF_SOLVERS}, each once, got {solvers}")
    seed = resolve_seed(seed)
    errors = _errors((d, N, a), solvers, trials, problem, seed, settings, start)
    points = tuple(_point(s, *errors[s], theory_zipf_error(d, N, a, s, settings.ensemble)) for s in solvers)
    failed = [pt.solver for pt in points if pt.status == "failed"]
    status = "failed" if failed else "ok"
    message = (f"{trials} instances per solver, mean +- standard error" if not failed
               else f"fewer than 2 instances gave an error for {', '.join(failed)}")
    return ZipfMeasurement(d, N, a, problem, settings.ensemble, seed, trials, settings.adam_steps,
                           settings.give_up_fraction, points, time.perf_counter() - start, status, status == "ok",
                           message)


def _errors(point, solvers, trials, problem, seed, settings, start) -> dict:
    """Per solver ``(values, failures, budget ended, recalled counts)`` over the ``trials`` instances at
    ``point = (d, N, a)``."""
    d, N, a = point
    f = zipf_frequencies(N, a)
    values = {s: [] for s in solvers}
    recalled = {s: [] for s in solvers}
    failures = dict.fromkeys(solvers, 0)
    ended = dict.fromkeys(solvers, 0)
    for t in range(trials):
        inst = make_instance(d, N, problem, seed=task_seed(seed, N, t),
                             embeddings=EmbeddingModel(settings.ensemble), facts=FactSettings(weights=f))
        for s in solvers:
            try:
                e, n_rec, budget = _one_error(inst, s, settings)
            except (ArithmeticError, RuntimeError, MemoryError) as exc:
                failures[s] += 1
                if settings.progress:
                    print(f"zipf d={d} N={N} a={a} trial {t}: {s} failed: {exc}", file=sys.stderr)
                continue
            values[s].append(e)
            recalled[s].append(n_rec)
            ended[s] += budget
        if settings.progress:
            done = ", ".join(f"{s} E={values[s][-1]:.4g}" for s in solvers if len(values[s]) > 0)
            print(f"zipf d={d} N={N} a={a}: instance {t + 1}/{trials} ({done}), "
                  f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
    return {s: (values[s], failures[s], ended[s], recalled[s]) for s in solvers}
