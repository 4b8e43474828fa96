"""Solvers for memory problems behind one interface: ``solve(instance, solver=...)``.

* ``hebbian`` -- ``W = sum_mu u_mu e_mu^T`` (best rank-m approximation for kappa < 1).
* ``optimal`` -- certified decision and max-margin W by L-BFGS on the squared hinge
  (:func:`validation.solvers.optimal.solve_optimal`, ``notes/optimal_solver.md``); with
  ``options={"give_up": True}`` or ``{"top_k": k}`` a search for the most recalled
  inputs or for top-k storage (:mod:`validation.solvers.searches`, status ``not_found``
  when it ends without a storing W: a lower bound, not a certificate).
  At kappa < 1 (rank ``m < d``) ``optimal`` is a restart search
  (:mod:`validation.solvers.rank_search`, ``restarts`` starts, status ``not_found``
  when none stores: a lower bound).
* ``svp`` -- projected gradient onto the rank-m matrices (singular value projection,
  :mod:`validation.solvers.svp`, ``notes/rank_search.md``).
* ``lp`` -- exact feasibility by linear programming (HiGHS), small d, full rank.
* ``adam`` -- Adam on the softmax cross-entropy (baseline with a step budget).

Every solver has one entry in the registry (:mod:`validation.solvers.engine.registry`): its
function, options class, what its verdicts certify, memory estimate and sweep defaults;
:func:`solve`, :func:`check_problem`, :func:`solver_bytes` and :func:`solve_arguments`
read it, and :func:`~validation.solvers.engine.registry.register_solver` adds a solver.

The solver functions share argument names: ``solver(instance, kappa=1.0, *, tol,
max_iter, time_limit, seed, refine, options)``, each taking only those it uses (see
:data:`SHARED_ARGUMENTS` and ``SolverSpec.shared``); the settings specific to one solver are a frozen options
dataclass (:class:`OptimalOptions`, :class:`SVPOptions`, :class:`LPOptions`, :class:`AdamOptions`), which
:func:`solve` builds from a mapping.

Layout (imports run downward only): the engine, :mod:`validation.solvers.engine` (the
result type, options, threads, memories, the registry, the constraint problem, L-BFGS, the
decision run, the certified max margin, warm-up), is a subpackage of its own; the solver
modules beside it (``hebbian``, ``optimal``, ``searches``, ``rank_search``, ``svp``, ``lp``,
``adam``, ``maxmargin``, ``rank_margin``) import the engine, never one another nor this
front end.

Every solver returns a :class:`Solution` (a :class:`replica.common.results.Result`)
whose ``stored`` flag is verified in float64 by :func:`validation.measurements.recall.recall_check`
on the returned W.  What ``status`` and ``converged`` mean for each solver is in
``notes/simulation.md``.
"""

from __future__ import annotations

import inspect
import warnings

from replica.common.checks import check_kappa, check_memory

from .engine.options import (
    SHARED_ARGUMENTS,
    AdamOptions,
    LPOptions,
    OptimalOptions,
    SolveBudget,
    SolverOptions,
    SVPOptions,
    check_restarts,
)
from .engine.registry import dense_solve_bytes, register_solver, solver_names, solver_spec
from .engine.solution import STATUSES, Solution, assess, rank_for
from .engine.threads import BLAS_THREAD_VARIABLES, ensure_threads, set_threads, thread_count

__all__ = ["Solution", "solve", "solve_arguments", "SHARED_ARGUMENTS", "SOLVERS", "STATUSES", "rank_for",
           "assess", "check_problem", "solver_bytes", "set_threads", "thread_count", "BLAS_THREAD_VARIABLES",
           "OptimalOptions", "LPOptions", "AdamOptions", "SVPOptions", "SolverOptions", "SolveBudget",
           "register_solver"]


def __getattr__(name):
    if name == "SOLVERS":  # the registered solver names (a tuple), also after register_solver
        return solver_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def solver_bytes(d: int, p: int, problem: str = "op", solver: str = "optimal", kappa: float = 1.0,
                 options=None) -> float:
    """Estimated bytes a solve needs at its start, beside the instance (``ensembles.instance_bytes``).

    ``optimal``: the unknowns (``d^2``, or ``2 d m`` at rank m) times the vectors of the
    iteration and the L-BFGS pairs, ``p x d`` work arrays, one full-pass block and the
    first working set (``p * max_active`` constraints; for DP each with its own
    float32 candidate of length d; for DP also the full-pass screen,
    ``p (8 d + 4 L + 24)`` with ``L = max(256, (p - 1) / 8)`` tracked competitors per
    input).  ``hebbian`` and ``lp``: W, its SVD and the
    float64 ``p x p`` score matrix of the verification (``lp`` also its constraint
    matrix, 16 bytes per nonzero).  ``adam``: W and its two moments, the ``p x p``
    scores and a ``p x d`` work array.  The working set of ``optimal`` may grow later.
    """
    spec = solver_spec(solver) if solver in solver_names() else None
    d, p = float(d), float(p)
    rank = float(rank_for(int(d), kappa))
    memory = dense_solve_bytes if spec is None else spec.memory  # unregistered: the closed-form estimate
    return memory(d, p, problem, rank, options)


def check_problem(d: int, p: int, problem: str = "op", solver: str = "optimal", kappa: float = 1.0,
                  options=None) -> None:
    """Check before building anything that ``solver`` can run on a ``(d, p)`` instance.

    Raises the ``ValueError`` that :func:`solve` would raise later: ``lp`` at kappa < 1
    or with an LP above ``max_nonzeros``, and an instance plus solve above the memory
    limit (``replica.common.checks.check_memory``: half the available memory, or
    ``LINEAR_MEMORY_LIMIT_BYTES``).

    Raises
    ------
    ValueError
        Naming the solver, the sizes and the limit.
    """
    from validation.instances.ensembles import instance_bytes

    spec = solver_spec(solver)
    kappa = float(check_kappa(kappa))
    if spec.check_size is not None:
        spec.check_size.load()(d, p, kappa, _parse_options(spec, options))
    need = instance_bytes(d, p) + solver_bytes(d, p, problem, spec.name, kappa, _parse_options(spec, options))
    check_memory(need, f"solver {spec.name!r} at d={d}, p={p}, problem {problem!r}")


# deprecated spellings of shared arguments that stored sweep settings may still hold
_DEPRECATED = {"max_iterations": "max_iter"}


def solve_arguments(settings) -> dict:
    """Split a flat settings mapping into :func:`solve` keyword arguments.

    Sweeps store one flat dictionary of solver settings per task; this puts the shared
    names (:data:`SHARED_ARGUMENTS`) into their own keywords and everything else into
    ``options``.  The deprecated spelling ``max_iterations`` is read as ``max_iter``
    (with a ``DeprecationWarning``), so that stored tasks keep running.

    Parameters
    ----------
    settings : mapping or None

    Returns
    -------
    dict
        Keyword arguments for :func:`solve` (without ``instance``, ``solver``, ``kappa``).

    Raises
    ------
    ValueError
        If a shared argument is given under both its name and its deprecated spelling.
    """
    flat = dict(settings or {})
    for old, new in _DEPRECATED.items():
        if old in flat:
            warnings.warn(f"solver setting {old!r} is deprecated; use {new!r}", DeprecationWarning,
                          stacklevel=2)
            if new in flat:
                raise ValueError(f"{new} given twice (as {new!r} and as its deprecated spelling {old!r})")
            flat[new] = flat.pop(old)
    out = {name: flat.pop(name) for name in SHARED_ARGUMENTS if name in flat}
    if flat:
        out["options"] = flat
    return out


def solve(instance, solver="optimal", *, kappa=1.0, tol=None, max_iter=None, time_limit=None,
          seed=None, refine=None, options=None, restarts=None) -> Solution:
    """Solve a memory problem: find W that recalls every input, or decide it cannot.

    Parameters
    ----------
    instance : validation.Instance
        From :func:`validation.make_instance`.
    solver : {"optimal", "hebbian", "lp", "adam", "svp"}
        See the module docstring and ``notes/simulation.md``.
    kappa : float
        Rank ratio in (0, 1]; the rank is ``max(1, round(kappa d))``.  ``lp``
        supports only ``kappa = 1``.
    tol : float, optional
        The solver's decision tolerance (``optimal``: ``not_stored`` when no W can
        reach a normalised margin above ``tol``; ``lp``: threshold on the LP optimum).
        ``None`` takes the solver's default.  Not taken by ``hebbian`` and ``adam``.
    max_iter : int, optional
        Iteration budget (``optimal``: L-BFGS iterations of the decision phase;
        ``adam``: steps; ``lp``: constraint-generation rounds).
    time_limit : float, optional
        Wall-time budget in seconds; the status is ``undecided`` when it runs out.
    seed : None, int, SeedSequence or Generator, optional
        For solvers with random initialisation (``adam`` at ``kappa < 1``; ``None``
        there is the instance's seed; the random starts of the ``optimal`` rank search
        and the cost perturbations of its give-up restarts (``give_up_restarts``), ``None``
        there is ``DEFAULT_SEED``); the deterministic solvers ignore it.
    refine : bool, optional
        ``optimal`` only: after ``stored``, continue towards the max-margin W.
    options : mapping or options dataclass, optional
        Solver-specific settings: :class:`OptimalOptions`, :class:`LPOptions`,
        :class:`AdamOptions`, :class:`SVPOptions` (``hebbian`` has none).  A mapping is
        turned into the solver's class; an unknown name raises ``ValueError`` listing the
        valid ones.
    restarts : int, optional
        ``optimal`` at rank ``m < d`` (without ``give_up`` / ``top_k``): the most starts
        of the restart search (:func:`validation.solvers.rank_search.solve_rank_search`,
        ``notes/rank_search.md``); ``None`` (default) is the production setting
        :data:`validation.solvers.rank_search.DEFAULT_RESTARTS` (32 starts, ending at the
        first that stores).  At full rank (one convex solve decides) and in the search
        modes it is checked and ignored.  Other solvers do not take it.

    Returns
    -------
    Solution

    Raises
    ------
    ValueError
        For an unknown solver, kappa outside (0, 1], an instance that is not an
        :class:`validation.Instance`, bad or unknown options, an argument the solver
        does not take, ``restarts`` not an integer >= 1, an LP too large to handle, or a solve whose working memory
        (:func:`solver_bytes`) is above the memory limit (checked before it starts).
    """
    from validation.instances.ensembles import Instance

    if not isinstance(instance, Instance):
        raise ValueError(f"instance must be a validation.Instance, got {type(instance).__name__}")
    spec = solver_spec(solver)
    solver = spec.name
    kappa = float(check_kappa(kappa))
    ensure_threads()
    restarts = check_restarts(restarts)
    if restarts is not None and "restarts" not in spec.shared:
        raise ValueError(f"solver {solver!r} does not take restarts; got restarts={restarts!r}")
    parsed = _parse_options(spec, options)
    entry = spec.entry
    if instance.d is None:
        _check_rectangular(spec, instance, kappa, parsed)
    elif spec.uses_rank_search(instance.d, kappa, parsed):
        entry = spec.rank_search
    function = entry.load(solver)
    kwargs = _shared_keywords(spec, function, tol=tol, max_iter=max_iter, time_limit=time_limit,
                              seed=seed, refine=refine, restarts=restarts)
    if parsed is not None:
        kwargs["options"] = parsed
    d = instance.d if instance.d is not None else max(instance.d_in, instance.d_out)  # memory: the larger side
    check_memory(solver_bytes(d, instance.p, instance.problem, solver, kappa, parsed),
                 f"solver {solver!r} at d={d}, p={instance.p}, problem {instance.problem!r}")
    return function(instance, kappa=kappa, **kwargs)


def _check_rectangular(spec, instance, kappa, parsed):
    """A rectangular instance: a solver that takes it (registry), full rank, no search mode."""
    where = f"a rectangular instance (d_in={instance.d_in}, d_out={instance.d_out})"
    if not spec.rectangular:
        takes = [name for name in solver_names() if solver_spec(name).rectangular]
        raise ValueError(f"solver {spec.name!r} does not solve {where}; solvers that do: {takes}")
    if kappa != 1.0:
        raise ValueError(f"kappa must be 1 for {where}: rank-constrained rectangular memories are "
                         f"not supported, got kappa={kappa!r}")
    if parsed is not None and spec.search_mode(parsed) is not None:
        raise ValueError(f"the search modes (give_up, top_k) do not take {where}")


def _parse_options(spec, options):
    """``options`` as the solver's options dataclass (None for none given)."""
    cls = spec.options
    if options is None:
        return None
    if cls is None:
        if isinstance(options, SolverOptions) or len(dict(_as_mapping(options))):
            raise ValueError(f"solver {spec.name!r} takes no options, got {options!r}; valid options: none")
        return None
    if isinstance(options, SolverOptions):
        return cls.coerce(options)
    return cls.from_mapping(_as_mapping(options))


def _as_mapping(options):
    try:
        return dict(options)
    except (TypeError, ValueError):
        raise ValueError(f"options must be a mapping of solver settings, got "
                         f"{type(options).__name__}") from None


def _shared_keywords(spec, function, **shared):
    """The shared arguments given (not None) that ``function`` takes.

    An argument the solver does not take (``spec.shared``) raises, except ``seed``, which
    every solver accepts (the deterministic ones ignore it); one the solver takes but this
    function does not (``optimal``: ``seed`` and ``restarts`` at full rank and in the
    search modes) is dropped.  A function with a ``budget`` parameter gets them as one
    :class:`~validation.solvers.engine.options.SolveBudget`.
    """
    takes = inspect.signature(function).parameters
    out = {}
    for name, value in shared.items():
        if value is None:
            continue
        if name not in spec.shared and name != "seed":
            raise ValueError(f"solver {spec.name!r} does not take {name}; got {name}={value!r}")
        if name in takes or "budget" in takes:
            out[name] = value
    return {"budget": SolveBudget(**out)} if "budget" in takes else out
