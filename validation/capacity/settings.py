"""The keywords of :func:`~validation.capacity.estimate_capacity`: design, sweep and measurement settings.

:class:`CapacityDesign` says where the trials go, :class:`SweepSettings` how they are run
and kept; :func:`split_settings` sorts the keywords into the two and the measurement's
own (``solver_options``, ``criterion``, ...), and :func:`measurement_template` checks the
measurement and builds the task every trial is a copy of.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from replica.common.checks import check_choice, check_int, check_kappa, check_real
from replica.common.seeds import resolve_seed

from ..ensembles import ENSEMBLES, PROBLEMS
from ..solvers.engine.registry import solver_names, solver_spec
from ..sweep import Task
from .trials import STORAGE_TRIAL, instance_options

__all__ = ["DESIGNS", "BRACKET_FROM_D", "CapacityDesign", "SweepSettings", "parse_criterion", "split_settings",
           "measurement_template"]

DESIGNS = ("auto", "grid", "bracket")
BRACKET_FROM_D = 128
"""Smallest d at which the design ``"auto"`` is ``"bracket"`` (``"grid"`` below)."""


def parse_criterion(criterion) -> float | None:
    """The accuracy threshold of ``criterion``: ``None`` for ``"all"``, ``A`` for ``"accuracy:A"``.

    Raises
    ------
    ValueError
        If ``criterion`` is neither ``"all"`` nor ``"accuracy:A"`` with a number ``A`` in (0, 1].
    """
    text = str(criterion).strip()
    if text == "all":
        return None
    kind, _, value = text.partition(":")
    try:
        threshold = float(value) if kind == "accuracy" else math.nan
    except ValueError:
        threshold = math.nan
    if not 0.0 < threshold <= 1.0:  # NaN fails too
        raise ValueError(f"criterion must be 'all' or 'accuracy:A' with A in (0, 1] (e.g. 'accuracy:0.99'); "
                         f"got {criterion!r}")
    return threshold


@dataclass(frozen=True)
class CapacityDesign:
    """Where the trials of :func:`estimate_capacity` go (``notes/capacity_estimation.md``, "Grid").

    Attributes
    ----------
    kind : {"auto", "grid", "bracket"}
        How the first points are placed.  ``"grid"``: ``initial_points`` log-spaced
        points over ``exp(+-initial_width)`` around the centre, then outward steps of
        ``exp(2 initial_width)`` until P = 1/2 is bracketed.  ``"bracket"``: the centre
        alone, then one point at a time, ``exp(+-bracket_step)`` away from the last one in
        the direction its frequency points to, the step doubling each time, until
        bracketed.  ``"auto"``: ``"bracket"`` for ``d >= 128`` (the theory is within a
        few per cent of the measured p_c and the transition is narrow, so the wide grid
        spends most trials far above p_c, where deciding "not stored" costs the most),
        ``"grid"`` below.  Refinement rounds are the same in both.
    trials : int
        Independent instances per grid point per round, ``>= 1``.
    rounds : int
        Refinement rounds after the first points (each adds up to 3 points), ``>= 0``.
    initial_points : int
        Points of the initial grid (log-spaced), ``>= 2``.
    initial_width : float
        Half width of the initial grid in ln p around its centre, ``> 0``.
    bracket_step : float
        First step of the bracketing design in ln p, ``> 0``.
    max_expansions : int
        How often the points may be extended outwards to bracket P = 1/2.
    center : float, optional
        Centre of the first points, ``>= 2`` (default: the theory p_c; the asymptotic
        alpha_c(kappa) if there is no theory value).
    """

    kind: str = "auto"
    trials: int = 20
    rounds: int = 2
    initial_points: int = 5
    initial_width: float = 0.25
    bracket_step: float = 0.05
    max_expansions: int = 6
    center: float | None = None

    def checked(self, d: int) -> CapacityDesign:
        """Validated copy with ``kind`` resolved for dimension ``d``; ``ValueError`` when out of range."""
        changes = {"trials": check_int(self.trials, "trials", low=1),
                   "rounds": check_int(self.rounds, "rounds", low=0),
                   "initial_points": check_int(self.initial_points, "initial_points", low=2),
                   "initial_width": check_real(self.initial_width, "initial_width", low=0.0, low_open=True),
                   "kind": check_choice(self.kind, "design", DESIGNS),
                   "bracket_step": check_real(self.bracket_step, "bracket_step", low=0.0, low_open=True),
                   "max_expansions": check_int(self.max_expansions, "max_expansions", low=0)}
        if changes["kind"] == "auto":
            changes["kind"] = "bracket" if d >= BRACKET_FROM_D else "grid"
        if self.center is not None:
            changes["center"] = check_real(self.center, "center", low=2.0)
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class SweepSettings:
    """How the trials of :func:`estimate_capacity` are run and kept.

    Attributes
    ----------
    executor : optional
        From :func:`validation.sweep.make_executor`; ``None`` runs serially.
    store : ResultStore, optional
        Persist and reuse trials (resumable).
    progress : bool, optional
        Progress bar on stderr.
    experiment : str
        Experiment name in the store key.
    """

    executor: object = None
    store: object = None
    progress: bool | None = None
    experiment: str = "capacity"


_DESIGN_KEYS = frozenset(f.name for f in dataclasses.fields(CapacityDesign)) - {"kind"}
_SWEEP_KEYS = frozenset(f.name for f in dataclasses.fields(SweepSettings))
_MEASUREMENT_KEYS = frozenset({"solver_options", "task_function", "undecided_as_not_stored", "criterion",
                               "outputs", "generator"})


def split_settings(design, settings: dict):
    """(CapacityDesign, SweepSettings, measurement keywords) from the keywords of :func:`estimate_capacity`."""
    settings = dict(settings)
    unknown = set(settings) - _DESIGN_KEYS - _SWEEP_KEYS - _MEASUREMENT_KEYS - {"sweep"}
    if unknown:
        raise TypeError(f"estimate_capacity() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    if not isinstance(design, CapacityDesign):
        design = CapacityDesign(kind=design)
    design = dataclasses.replace(design, **{k: settings.pop(k) for k in _DESIGN_KEYS & set(settings)})
    sweep = settings.pop("sweep", None) or SweepSettings()
    sweep = dataclasses.replace(sweep, **{k: settings.pop(k) for k in _SWEEP_KEYS & set(settings)})
    return design, sweep, settings


def measurement_template(d, problem, solver, kappa, ensemble, seed, sweep, extra):
    """(template Task with p = trial = 0, undecided_as_not_stored), checked (``ValueError`` naming the argument)."""
    task_function = extra.get("task_function")
    d = check_int(d, "d", low=2)
    check_choice(problem, "problem", PROBLEMS)
    if task_function is None:
        check_choice(solver, "solver", solver_names())
    kappa = float(check_kappa(kappa))
    check_choice(ensemble, "ensemble", ENSEMBLES)
    seed = resolve_seed(seed)
    lenient = extra.get("undecided_as_not_stored")
    if lenient is None:
        lenient = solver_spec(solver).undecided_as_not_stored
    options = dict(extra.get("solver_options") or {})
    if task_function is None:
        # the sweep defaults (decisions only) and the rank-m search's number of starts
        options = solver_spec(solver).sweep_task_options(d, kappa, options)
    if extra.get("outputs") is not None:
        options["outputs"] = check_int(extra["outputs"], "outputs", low=2)
    options.update(instance_options(problem, extra.get("generator")))
    template = Task(task_function or STORAGE_TRIAL, sweep.experiment, problem, solver,
                    ensemble, d, 0, kappa, seed, 0, tuple(sorted(options.items())))
    return template, bool(lenient)
