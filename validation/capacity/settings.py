"""The settings of :func:`~validation.capacity.estimate_capacity`: where the trials go, what is counted, how they run.

:class:`CapacityDesign` says where the trials go (the keyword ``design``),
:class:`CapacityOptions` what counts as stored and how the trials run (the keyword
``options``); :class:`SweepSettings` is the running part of the options.
:func:`capacity_settings` reads the two keywords, with the deprecated flat keywords folded
in, and :func:`measurement_template` checks the measurement and builds the task every
trial is a copy of.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

from replica.common.checks import check_choice, check_int, check_kappa, check_real
from replica.common.seeds import resolve_seed

from ..instances.ensembles import ENSEMBLES, PROBLEMS
from ..solvers.engine.registry import solver_names, solver_spec
from ..runtime.sweep import Task
from .trials import STORAGE_TRIAL, instance_options

__all__ = ["DESIGNS", "BRACKET_FROM_D", "CapacityDesign", "CapacityOptions", "SweepSettings", "parse_criterion",
           "capacity_settings", "measurement_template"]

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
    """How the trials of :func:`estimate_capacity` are run and kept (the running fields of :class:`CapacityOptions`).

    Attributes
    ----------
    executor : optional
        From :func:`validation.runtime.sweep.make_executor`; ``None`` runs serially.
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


@dataclass(frozen=True)
class CapacityOptions:
    """What :func:`estimate_capacity` counts as stored and how its trials run: its keyword ``options``.

    ``options=CapacityOptions(criterion="accuracy:0.9", executor=ex)`` and
    ``options={"criterion": "accuracy:0.9", "executor": ex}`` are the same call.

    Attributes
    ----------
    solver_options : dict, optional
        Passed to ``validation.solve`` through ``validation.solvers.solve_arguments``
        (for ``optimal`` ``refine`` defaults to False: only storability is measured).
        ``{"top_k": k}`` measures the top-k capacity (theory ``replica.capacity(d, kappa,
        top_k=k)``; ``not_found`` trials count as not stored and make p_c a lower bound,
        ``notes/top_k.md``).  ``{"restarts": R}``: ``optimal`` at rank kappa d < d, starts
        of the restart search (default ``validation.solvers.rank_search.DEFAULT_RESTARTS``,
        recorded with every trial).
    criterion : str
        ``"all"`` (default: stored = every input recalled) or ``"accuracy:A"`` (stored =
        the returned W recalls at least the fraction ``A`` of the inputs, ``A`` in (0, 1];
        theory ``replica.accuracy_capacity``; for solvers other than ``hebbian`` p_c is a
        lower bound on the accuracy capacity of the best memory, said in ``message``).
    undecided_as_not_stored : bool, optional
        Count ``undecided`` trials (budget exhausted without a storing W) as not stored:
        the estimate is then the threshold for *finding* a storing memory within the
        budget, a lower bound on the storability threshold (the message says so).
        ``None`` (default): True for the solvers that end without a decision on their own
        (``adam``, ``svp``), False otherwise (undecided trials are then excluded and
        reported).  The restart search of ``optimal`` at rank kappa d < d
        (``notes/rank_search.md``) says ``not_found`` when every planned start ended
        without storing (counted as not stored: p_c a LOWER BOUND), and ``undecided``
        only when a budget cut it short.
    outputs : int, optional
        ``K >= 2`` distinct answers shared by the facts (balanced map ``mu mod K``;
        ``notes/many_to_one.md``); theory ``replica.capacity(d, kappa, outputs=K,
        problem=problem)``.  Default None: one answer per fact.
    generator : int, optional
        DP: the candidate generator of the instances (``make_instance(generator=)``;
        default the current one, 2).  It is recorded in the estimate and in every trial
        key, so trials of another generator are never reused.
    task_function : str, optional
        ``"module:function"`` replacing :func:`storage_trial` (tests use
        :func:`validation.runtime.sweep.synthetic_trial`).
    executor, store, progress : optional
        How the trials run and are kept (:class:`SweepSettings`).
    experiment : str, optional
        Experiment name in the store key (default: ``"capacity"``;
        ``estimate_embedding_capacity``: ``"embedding_capacity"``).
    """

    solver_options: Mapping | None = None
    criterion: str = "all"
    undecided_as_not_stored: bool | None = None
    outputs: int | None = None
    generator: int | None = None
    task_function: str | None = None
    executor: object = None
    store: object = None
    progress: bool | None = None
    experiment: str | None = None

    def sweep(self, experiment: str = "capacity") -> SweepSettings:
        """The running fields as :class:`SweepSettings` (``experiment``: the default name)."""
        return SweepSettings(self.executor, self.store, self.progress,
                             experiment if self.experiment is None else self.experiment)

    def measurement(self) -> dict:
        """The fields that say what is measured, as the dict :func:`measurement_template` reads."""
        return {name: getattr(self, name) for name in _MEASUREMENT_KEYS}


_DESIGN_KEYS = frozenset(f.name for f in dataclasses.fields(CapacityDesign)) - {"kind"}
_SWEEP_KEYS = frozenset(f.name for f in dataclasses.fields(SweepSettings))
_MEASUREMENT_KEYS = ("solver_options", "criterion", "undecided_as_not_stored", "outputs", "generator",
                     "task_function")
_OPTION_KEYS = frozenset(f.name for f in dataclasses.fields(CapacityOptions))


def _checked_options(options, owner: str) -> CapacityOptions:
    if options is None:
        return CapacityOptions()
    if isinstance(options, CapacityOptions):
        return options
    if isinstance(options, Mapping):
        unknown = sorted(set(options) - _OPTION_KEYS)
        if unknown:
            raise ValueError(f"{owner}(): options has unknown keys {unknown}; the keys are the fields of "
                             f"CapacityOptions: {', '.join(f.name for f in dataclasses.fields(CapacityOptions))}")
        return CapacityOptions(**options)
    raise ValueError(f"{owner}(): options must be None, a CapacityOptions or a dict of its fields; got {options!r}")


def _call(names) -> str:
    return ", ".join(f"{name}=..." for name in names)


def capacity_settings(design, options, flat: dict, owner: str = "estimate_capacity",
                      stacklevel: int = 4) -> tuple[CapacityDesign, CapacityOptions]:
    """``(CapacityDesign, CapacityOptions)`` of a capacity measurement, the deprecated flat keywords folded in.

    ``design`` is a kind or a :class:`CapacityDesign`, ``options`` ``None``, a
    :class:`CapacityOptions` or a dict of its fields.  ``flat``: the keywords of the call
    besides these (the fields of both, and ``sweep=SweepSettings(...)``), deprecated: they
    replace those of ``design`` and ``options``, with a ``DeprecationWarning`` that says
    what to pass instead.  An unknown keyword is a ``TypeError``.
    """
    unknown = sorted(set(flat) - _DESIGN_KEYS - _OPTION_KEYS - {"sweep"})
    if unknown:
        raise TypeError(f"{owner}() got unexpected keyword arguments: {', '.join(unknown)}")
    if not isinstance(design, CapacityDesign):
        design = CapacityDesign(kind=design)
    options = _checked_options(options, owner)
    if not flat:
        return design, options
    on_design = [k for k in flat if k in _DESIGN_KEYS]
    on_options = [k for k in flat if k in _OPTION_KEYS]
    use = []
    if on_design:
        use.append(f"design=CapacityDesign({_call(['kind'] + on_design)})")
    sweep = flat.get("sweep")
    folded = {k: flat[k] for k in on_options}
    if sweep is not None:
        folded = {**{f.name: getattr(sweep, f.name) for f in dataclasses.fields(SweepSettings)}, **folded}
    if folded:
        use.append(f"options=CapacityOptions({_call(folded)})")
    warnings.warn(f"{owner}({_call(flat)}) is deprecated and will be removed in the next release; pass "
                  f"{' and '.join(use)}", DeprecationWarning, stacklevel=stacklevel)
    design = dataclasses.replace(design, **{k: flat[k] for k in on_design})
    options = dataclasses.replace(options, **folded)
    return design, options


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
