"""The estimator :func:`estimate_capacity`: its phases, and the estimate's message."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from replica.common.checks import check_real

from ..runtime.sweep import Task
from .design import STARTS, PointRunner, expand, refine
from .fit import LogisticFit
from .loads import load, p_from_load
from .results import CapacityEstimate
from .settings import CapacityDesign, SweepSettings, capacity_settings, measurement_template, parse_criterion
from .theory import asymptotic_alpha, theory_capacity
from .trials import TrialCounts, estimate_message, split_instance_options

__all__ = ["estimate_capacity"]


@dataclass
class _Estimation:
    """What the phases of :func:`estimate_capacity` share: the checked measurement, its settings and counts."""

    template: Task
    design: CapacityDesign
    sweep: SweepSettings
    counts: TrialCounts
    theory: dict


def _prepare(d, problem, solver, kappa, ensemble, seed, design, options) -> _Estimation:
    """The checked arguments of :func:`estimate_capacity`, the theory beside them and empty counts."""
    sweep, extra = options.sweep("capacity"), options.measurement()
    threshold = parse_criterion(extra.get("criterion", "all"))
    m, lenient = measurement_template(d, problem, solver, kappa, ensemble, seed, sweep, extra)
    design = design.checked(m.d)
    return _Estimation(m, design, sweep, TrialCounts(lenient, threshold), _theory(m, threshold, extra))


def _theory(m: Task, threshold, extra: dict) -> dict:
    """:func:`theory_capacity` of the measurement (none for a synthetic task function)."""
    if extra.get("task_function") is None:
        top_k = int(dict(extra.get("solver_options") or {}).get("top_k", 1))
        return theory_capacity(m.d, m.solver, m.kappa, m.ensemble, threshold, extra.get("outputs"), m.problem,
                               top_k)
    return {"p_c": math.nan, "alpha": math.nan, "alpha_c": math.nan, "source": "none (synthetic task)"}


def _center(run: _Estimation) -> float:
    """Centre of the first points: the design's, the theory p_c, or p at the asymptotic alpha_c."""
    center = run.design.center
    if center is None:
        m = run.template
        center = run.theory["p_c"] if math.isfinite(run.theory["p_c"]) else \
            p_from_load(m.d, asymptotic_alpha(m.solver, m.kappa))
        center = check_real(center, "center", low=2.0)
    return center


def _messages(fit: LogisticFit, curve, counts: TrialCounts, solver: str, first_error=None) -> str:
    """The estimate's message: criterion, fit problems, left-out trials, a warning above 10 %."""
    return estimate_message(None if fit.status == "ok" else fit.message, curve, counts, solver, first_error)


def _criterion_text(threshold) -> str:
    return "all" if threshold is None else f"accuracy:{threshold:g}"


def _estimate(run: _Estimation, seconds: float, first_error=None) -> CapacityEstimate:
    """The :class:`CapacityEstimate` of the final counts (``ValueError`` when every trial failed)."""
    m, design, counts, theory = run.template, run.design, run.counts, run.theory
    fit = counts.fit()
    curve = counts.curve(m.d, m.kappa)
    if first_error is not None and all(c.errors == c.trials for c in curve):
        raise ValueError(f"every trial of {m.problem}/{m.solver} d={m.d} kappa={m.kappa:g} failed with an "
                         f"error; the first: {first_error}")
    p_c, p_lo, p_hi = (math.exp(v) for v in (fit.log_p_c, fit.log_p_c_low, fit.log_p_c_high))
    family, options = split_instance_options(m)

    def alpha_of(p):
        return load(m.d, p) if math.isfinite(p) and p > 1 else math.nan

    return CapacityEstimate(
        m.d, m.problem, m.solver, m.kappa, m.ensemble, p_c, p_lo, p_hi, alpha_of(p_c), alpha_of(p_lo),
        alpha_of(p_hi), fit.slope, curve, theory, sum(c.undecided for c in curve), sum(c.errors for c in curve),
        fit.status, fit.converged, _messages(fit, curve, counts, m.solver, first_error), m.seed, design.trials,
        seconds, options, design.kind, _criterion_text(counts.threshold), family["outputs"],
        sum(c.not_found for c in curve), family["generator"])


def estimate_capacity(d: int, problem: str = "op", solver: str = "optimal", kappa: float = 1.0,
                      ensemble: str = "gaussian", *, seed=None, design="auto", options=None,
                      **flat) -> CapacityEstimate:
    """Measure P(stored) on an adaptive grid of p and locate p_c with a 95 % interval.

    See ``notes/capacity_estimation.md``.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    problem : {"op", "dp"}
        Original problem (shared outputs, the default of every measurement) or decoupled
        problem; ``replica.capacity`` defaults to ``"dp"``, the same theory for a square
        memory with one answer per fact (``docs/glossary.md``, "problem").
    solver : {"hebbian", "optimal", "lp", "adam", "svp"}
    kappa : float
        Rank fraction in (0, 1].
    ensemble : {"gaussian", "sphere"}
    seed : None, int, SeedSequence or Generator
        Base seed (``replica.common.seeds.resolve_seed``; ``None``: the package default
        seed); trial t at p uses ``task_seed(seed, p, t)``.
    design : {"auto", "grid", "bracket"} or CapacityDesign
        Where the trials go (see :class:`CapacityDesign`: ``trials``, ``rounds``,
        ``initial_points``, ``initial_width``, ``bracket_step``, ``max_expansions``,
        ``center``).
    options : CapacityOptions or dict, optional
        What counts as stored and how the trials run (see :class:`CapacityOptions`:
        ``solver_options``, ``criterion``, ``undecided_as_not_stored``, ``outputs``,
        ``generator``, ``task_function``, ``executor``, ``store``, ``progress``,
        ``experiment``).  Default ``CapacityOptions()``.
    **flat
        Deprecated (``DeprecationWarning``, for one release): the fields of
        :class:`CapacityDesign` and :class:`CapacityOptions` as keywords, and
        ``sweep=SweepSettings(...)``; they replace those of ``design`` and ``options``.

    Returns
    -------
    CapacityEstimate

    Raises
    ------
    ValueError
        For out-of-range arguments, an unknown key of ``options`` or a bad ``criterion``; before any trial, for a
        solver that cannot run at this size (``validation.solvers.check_problem``:
        ``lp`` at kappa < 1 or too large, memory above the limit); after the trials,
        when every trial failed with an error (the message quotes the first).
    TypeError
        For an unknown keyword.
    """
    start = time.perf_counter()
    design, options = capacity_settings(design, options, flat, "estimate_capacity", stacklevel=3)
    run = _prepare(d, problem, solver, kappa, ensemble, seed, design, options)
    center = _center(run)
    runner = PointRunner(run.template, run.design.trials, run.sweep, run.counts)
    STARTS[run.design.kind](runner, run.design, center)
    expand(runner, run.design)
    refine(runner, run.design)
    return _estimate(run, time.perf_counter() - start, runner.first_error)
