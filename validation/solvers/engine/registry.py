"""The solver registry: one :class:`SolverSpec` per solver, the one place that knows solver rules.

:func:`validation.solve`, :func:`~validation.solvers.check_problem`,
:func:`~validation.solvers.solver_bytes` and :func:`~validation.solvers.solve_arguments`
read the spec of a solver instead of testing its name.  A spec states

* ``entry`` -- the solver function (module and function name, imported when first
  used: the one import by name of the package), and ``options``, its options class;
* ``not_stored`` -- what its ``not_stored`` verdict certifies: ``"class"`` (no W of the
  class, rank m, stores the instance: a certificate), ``"rule"`` (the rule's own W
  does not store it) or ``"never"`` (the solver never says ``not_stored``);
* ``memory`` -- its working memory at the start of a solve, in bytes;
* its sweep defaults -- ``sweep_options`` (settings a capacity or accuracy sweep adds
  unless given: ``optimal`` measures decisions with ``refine=False``),
  ``rank_search`` (the rank-m restart search that runs at kappa < 1),
  ``undecided_as_not_stored`` (the capacity fit counts an ``undecided`` trial as not
  stored unless told otherwise) and ``not_found_as_not_stored`` (a ``not_found``
  verdict, a lower bound, counts as not stored and is reported apart);
* ``capacity_theory`` and ``accuracy_theory`` -- the replica prediction a measurement
  goes with (``"hebbian"``, ``"optimal"`` or None);
* ``shared`` -- the shared arguments (:data:`SHARED_ARGUMENTS`) it takes; ``seed`` is
  accepted by every solver and ignored by the deterministic ones;
* ``check_size`` and ``search_modes`` -- optional set-up checks without an instance
  (``lp``) and the search modes that options select (``optimal``: give-up, top-k);
* ``rectangular`` -- it solves rectangular instances (``d_in != d_out``, full rank,
  without a search mode): ``optimal``, ``lp`` and ``hebbian``.

A contributor adds a solver with one module and one :func:`register_solver` call.

Beside the solvers, the registry knows the *memories* a measurement runs that are not one
solver's plain solve: the Zipf error (:func:`validation.measure_zipf`, ``notes/zipf.md``)
measures the weighted give-up search, the Hebbian rule, the frequency-weighted Hebbian
memory and Adam on the plain and the frequency-weighted cross-entropy.  Each is a
:class:`MemorySpec` (its run, label, what its error bounds and its theory);
:func:`register_memory` adds one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from replica.common.checks import check_choice

from .options import SHARED_ARGUMENTS, AdamOptions, LPOptions, OptimalOptions, SVPOptions, check_restarts
from .solution import rank_for

__all__ = ["EntryPoint", "SolverSpec", "register_solver", "unregister_solver", "solver_spec", "solver_names",
           "search_mode", "rank_solver", "NOT_STORED_MEANINGS", "HEBBIAN_THEORY", "OPTIMAL_THEORY",
           "dense_solve_bytes", "MemorySpec", "register_memory", "memory_spec", "memory_names", "MEMORY_BOUNDS"]

HEBBIAN_THEORY = "hebbian"
"""The theory memory of the Hebbian rule (``capacity_theory``, ``accuracy_theory``): ``replica.hebbian_*``."""
OPTIMAL_THEORY = "optimal"
"""The theory memory of the best W (``capacity_theory``, ``accuracy_theory``): ``replica.capacity`` and co."""

NOT_STORED_MEANINGS = ("class", "rule", "never")
"""Values of :attr:`SolverSpec.not_stored`: a certificate for the class of W, the rule's own W, never said."""


@dataclass(frozen=True)
class EntryPoint:
    """A function named by its module and function name, imported when first needed."""

    module: str
    function: str

    def load(self, solver=None):
        """The function (imports its module).

        Parameters
        ----------
        solver : str, optional
            The solver it belongs to, for the message of a missing module.

        Raises
        ------
        ImportError
            When the module is not available in this installation (naming it).
        """
        try:
            module = importlib.import_module(self.module)
        except ImportError as exc:
            if getattr(exc, "name", None) == self.module:
                what = self.function if solver is None else f"solver {solver!r}"
                raise ImportError(
                    f"{what} needs the module {self.module}, which is not available "
                    f"in this installation ({exc})") from exc
            raise
        return getattr(module, self.function)


def dense_solve_bytes(d, p, problem, rank, options):
    """``hebbian`` (and an unregistered name): W, its SVD and the float64 ``p x p`` verification scores."""
    return 8.0 * 4.0 * d * d + 2.0 * 8.0 * p * p


def _optimal_bytes(d, p, problem, rank, options):
    """``optimal``: unknowns times iteration vectors and L-BFGS pairs, work arrays, a block, working set, DP screen."""
    o = OptimalOptions.coerce(options)
    unknowns = d * d if rank >= d else 2.0 * d * rank
    active = p * min(p - 1.0, float(o.max_active))
    working = active * (24.0 + (4.0 * d if problem == "dp" else 0.0))
    block = 12.0 * min(float(o.block_elements), p * p)
    # DP full-pass screen: per input its images, the tracked competitors and bounds
    screen = p * (8.0 * d + 4.0 * max(256.0, (p - 1.0) / 8.0) + 24.0) if problem == "dp" else 0.0
    return 8.0 * unknowns * (12.0 + 2.0 * o.memory) + 8.0 * 6.0 * p * d + block + working + screen


def _lp_bytes(d, p, problem, rank, options):
    """``lp``: W, its SVD, the verification scores and the constraint matrix (16 bytes per nonzero)."""
    lp_nonzeros = EntryPoint("validation.solvers.lp", "lp_nonzeros").load()
    return 8.0 * 4.0 * d * d + 2.0 * 8.0 * p * p + 16.0 * float(lp_nonzeros(int(d), int(p)))


def _adam_bytes(d, p, problem, rank, options):
    """``adam``: W and its two moments, the ``p x p`` scores and a ``p x d`` work array."""
    return 8.0 * 6.0 * d * d + 2.0 * 8.0 * p * p + 8.0 * 2.0 * p * d


def _svp_bytes(d, p, problem, rank, options):
    """``svp``: W, its SVD and step, work arrays, a full-pass block and the working set."""
    o = SVPOptions.coerce(options)
    active = p * min(p - 1.0, float(o.max_active))
    working = active * (24.0 + (4.0 * d if problem == "dp" else 0.0))
    return 8.0 * 8.0 * d * d + 8.0 * 6.0 * p * d + 12.0 * min(float(o.block_elements), p * p) + working


def _optimal_search_modes(options):
    """The search mode that ``OptimalOptions`` select: give-up, top-k, or None (the decision)."""
    if options.give_up:
        return EntryPoint("validation.solvers.searches", "solve_give_up")
    if options.top_k > 1:
        return EntryPoint("validation.solvers.searches", "solve_top_k")
    return None


@dataclass(frozen=True)
class SolverSpec:
    """What the package knows about one solver (module docstring).

    Attributes
    ----------
    name : str
        The name ``solve(instance, solver=name)`` takes.
    entry : EntryPoint
        ``function(instance, kappa=..., **shared, options=...)`` returning a :class:`validation.Solution`.
    options : type or None
        Its :class:`~validation.solvers.engine.options.SolverOptions` subclass (None: no options).
    not_stored : {"class", "rule", "never"}
        What its ``not_stored`` certifies (:data:`NOT_STORED_MEANINGS`).
    memory : callable
        ``memory(d, p, problem, rank, options) -> float``: bytes at the start of a solve
        (``d``, ``p``, ``rank`` as floats), beside the instance.
    shared : tuple of str
        The shared arguments it takes.
    sweep_options : mapping
        Settings a sweep adds unless given (``{"refine": False}``: decisions only).
    rank_search : EntryPoint or None
        The rank-m restart search run at rank ``m < d`` when no search mode is on; sweeps
        record its ``restarts`` with every trial.
    undecided_as_not_stored : bool
        Capacity default: count an ``undecided`` trial as not stored (solvers that cannot
        certify non-storability); otherwise it is left out of the fit.
    not_found_as_not_stored : bool
        A ``not_found`` trial counts as not stored (a lower bound on p_c, reported apart).
    capacity_theory, accuracy_theory : {"hebbian", "optimal"} or None
        The replica prediction of the measured capacity and accuracy.
    objective : str or None
        The training objective of a baseline that trains W on a loss rather than deciding
        storability (``adam``: ``"cross_entropy"``, the factual-recall protocol); None
        for the others.
    check_size : EntryPoint or None
        ``check(d, p, kappa, options)`` raising ``ValueError`` for a size the solver cannot run.
    search_modes : callable or None
        ``search_modes(options) -> EntryPoint or None``: a search mode selected by options,
        which the solver's own function runs after its checks.
    rectangular : bool
        It solves rectangular instances (``Instance.d`` None) at full rank, without a
        search mode.
    """

    name: str
    entry: EntryPoint
    options: type | None
    not_stored: str
    memory: Callable = dense_solve_bytes
    shared: tuple = ()
    sweep_options: Mapping = field(default_factory=dict)
    rank_search: EntryPoint | None = None
    undecided_as_not_stored: bool = False
    not_found_as_not_stored: bool = True
    capacity_theory: str | None = "optimal"
    accuracy_theory: str | None = None
    objective: str | None = None
    check_size: EntryPoint | None = None
    search_modes: Callable | None = None
    rectangular: bool = False

    def __post_init__(self):
        check_choice(self.not_stored, "not_stored", NOT_STORED_MEANINGS)
        unknown = sorted(set(self.shared) - set(SHARED_ARGUMENTS))
        if unknown:
            raise ValueError(f"shared arguments of solver {self.name!r} must be among {SHARED_ARGUMENTS}, "
                             f"got {unknown}")

    # -- what the measurements, the reproduction and the command lines ask of a solver --

    @property
    def is_hebbian(self) -> bool:
        """Its capacity goes with the Hebbian theory (``replica.hebbian_*``), not the optimal memory's."""
        return self.capacity_theory == HEBBIAN_THEORY

    @property
    def label(self) -> str:
        """The name of its memory in tables and figure titles (``"Hebbian"`` or the solver name)."""
        return "Hebbian" if self.is_hebbian else self.name

    @property
    def accuracy_is_exact(self) -> bool:
        """Its W is the memory its theory describes (a rule's own W): its accuracy is no lower bound."""
        return self.not_stored == "rule"

    @property
    def trains_cross_entropy(self) -> bool:
        """It trains on the softmax cross-entropy (the protocol of ``notes/ce_protocol.md``)."""
        return self.objective == "cross_entropy"

    @property
    def has_search_modes(self) -> bool:
        """It has the search modes ``give_up`` and ``top_k`` (``notes/top_k.md``, ``notes/recall_accuracy.md``)."""
        return self.search_modes is not None

    @property
    def takes_restarts(self) -> bool:
        """It takes the setting ``restarts`` of the rank-m search."""
        return "restarts" in self.shared

    @property
    def takes_run_options(self) -> bool:
        """It takes the solve options of ``validation reproduce`` (time limit, ``refine``, ``restarts``, give-up)."""
        return self.takes_restarts and self.has_search_modes

    @property
    def scales_to_large_d(self) -> bool:
        """It can run the large-d capacity estimates: it has no size limit of its own (the LP has one)."""
        return self.check_size is None

    def searches_rank(self, d, rank) -> bool:
        """At rank ``rank < d`` it runs the rank-m restart search (``notes/rank_search.md``)."""
        return self.rank_search is not None and rank < d

    def time_limited_options(self, time_limit) -> dict:
        """Options of a decision with a wall-time budget per solve (the sweep defaults and ``time_limit``).

        ``{}`` for a solver without sweep defaults (it runs on its own budgets).
        """
        return dict(self.sweep_options, time_limit=time_limit) if self.sweep_options else {}

    def decision_settings(self) -> dict:
        """Options of a capacity decision: storability only (the sweep defaults; ``optimal``: ``refine=False``)."""
        return dict(self.sweep_options)

    def rank_search_settings(self, kappa, restarts) -> dict:
        """Options of a rank-constrained solve: ``restarts`` starts of the rank-m search at ``kappa < 1``."""
        return {"restarts": restarts} if self.rank_search is not None and kappa < 1.0 else {}

    def capacity_ensemble(self, hebbian_ensemble) -> str:
        """Ensemble of its capacity estimates ``hebbian_ensemble`` for the Hebbian rule, else gaussian."""
        return hebbian_ensemble if self.is_hebbian else "gaussian"

    def accuracy_reference(self) -> str:
        """The solver whose accuracy theory its curve is compared with (a cross-entropy baseline: :func:`rank_solver`).

        A solver trained on the cross-entropy has no accuracy theory of its own; its curve is
        set beside the best memory's, the one of the rank-m capable certified solver.
        """
        return rank_solver() if self.trains_cross_entropy else self.name

    def uses_rank_search(self, d, kappa, options) -> bool:
        """True when a solve at ``(d, kappa)`` with ``options`` (the options class) runs the rank search."""
        if self.rank_search is None or rank_for(int(d), kappa) >= int(d):
            return False
        return self.search_mode(options) is None

    def sweep_task_options(self, d, kappa, options, restarts=True) -> dict:
        """The solver settings a sweep stores with every trial: ``options`` plus the sweep defaults.

        ``sweep_options`` are added unless given; with ``restarts`` (capacity sweeps) a
        trial that runs the rank search records its number of starts (``restarts``,
        default ``DEFAULT_RESTARTS`` of the search's module), so that it is stored with
        the trial.  Search modes are read from the flat mapping (``give_up``, ``top_k``).

        Parameters
        ----------
        d : int
        kappa : float
        options : mapping or None
            Flat solver settings (shared arguments and options, as a sweep stores them).
        restarts : bool
            Record the rank search's ``restarts`` (default True).

        Returns
        -------
        dict

        Raises
        ------
        ValueError
            For ``restarts`` not None or an integer >= 1.
        """
        out = dict(options or {})
        for name, value in self.sweep_options.items():
            out.setdefault(name, value)
        if restarts and self.rank_search is not None and rank_for(int(d), kappa) < int(d) \
                and not out.get("give_up") and int(out.get("top_k", 1)) == 1:
            default = EntryPoint(self.rank_search.module, "DEFAULT_RESTARTS").load()
            out["restarts"] = check_restarts(out.get("restarts", default))
        return out

    def search_mode(self, options):
        """The search-mode :class:`EntryPoint` that ``options`` select (None: the plain solve)."""
        if self.search_modes is None:
            return None
        return self.search_modes(self.options.coerce(options) if self.options is not None else options)


_SPECS: dict = {}


def register_solver(spec: SolverSpec, replace: bool = False) -> SolverSpec:
    """Add a solver to the registry (then :func:`validation.solve` runs it by name).

    Parameters
    ----------
    spec : SolverSpec
    replace : bool
        Replace a registered spec of the same name (default False).

    Returns
    -------
    SolverSpec

    Raises
    ------
    ValueError
        If ``spec`` is not a :class:`SolverSpec` or its name is taken (without ``replace``).
    """
    if not isinstance(spec, SolverSpec):
        raise ValueError(f"spec must be a SolverSpec, got {type(spec).__name__}")
    if spec.name in _SPECS and not replace:
        raise ValueError(f"solver {spec.name!r} is registered already; pass replace=True to replace it")
    _SPECS[spec.name] = spec
    return spec


def unregister_solver(name: str) -> None:
    """Remove a solver from the registry (``KeyError`` if it is not registered)."""
    del _SPECS[name]


def solver_names() -> tuple:
    """The registered solver names, in registration order."""
    return tuple(_SPECS)


def solver_spec(name: str) -> SolverSpec:
    """The spec of a registered solver.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the registered ones).
    """
    return _SPECS[check_choice(name, "solver", solver_names())]


def rank_solver() -> str:
    """The solver of rank-constrained memories (kappa < 1): the first registered one with a rank-m search."""
    return next(name for name in solver_names() if solver_spec(name).rank_search is not None)


def search_mode(solver, options):
    """The search-mode function that ``options`` select for ``solver`` (None: the plain solve)."""
    entry = solver_spec(solver).search_mode(options)
    return None if entry is None else entry.load()


def __getattr__(name):
    if name == "SOLVERS":  # the registered names, also after register_solver
        return solver_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_FULL = ("tol", "max_iter", "time_limit")
register_solver(SolverSpec(
    "hebbian", EntryPoint("validation.solvers.hebbian", "solve_hebbian"), None, not_stored="rule",
    capacity_theory="hebbian", accuracy_theory="hebbian", rectangular=True))
register_solver(SolverSpec(
    "optimal", EntryPoint("validation.solvers.optimal", "solve_optimal"), OptimalOptions, not_stored="class",
    memory=_optimal_bytes, shared=_FULL + ("seed", "refine", "restarts"), sweep_options={"refine": False},
    rank_search=EntryPoint("validation.solvers.rank_search", "solve_rank_search"), accuracy_theory="optimal",
    search_modes=_optimal_search_modes, rectangular=True))
register_solver(SolverSpec(
    "lp", EntryPoint("validation.solvers.lp", "solve_lp"), LPOptions, not_stored="class", memory=_lp_bytes,
    shared=_FULL, accuracy_theory="optimal", check_size=EntryPoint("validation.solvers.lp", "check_lp_size"),
    rectangular=True))
register_solver(SolverSpec(
    "adam", EntryPoint("validation.solvers.adam", "solve_adam"), AdamOptions, not_stored="never",
    memory=_adam_bytes, shared=("max_iter", "time_limit", "seed"), undecided_as_not_stored=True,
    objective="cross_entropy"))
register_solver(SolverSpec(
    "svp", EntryPoint("validation.solvers.svp", "solve_svp"), SVPOptions, not_stored="class", memory=_svp_bytes,
    shared=_FULL, undecided_as_not_stored=True))


# ----------------------------------------------------------------------------------
# the memories a measurement runs (the Zipf error)
# ----------------------------------------------------------------------------------

MEMORY_BOUNDS = ("exact", "upper_bound")
"""Values of :attr:`MemorySpec.bound`: the error of the memory named, or an upper bound on the best memory's."""


@dataclass(frozen=True)
class MemorySpec:
    """A memory that a measurement runs on weighted instances (the Zipf error, ``notes/zipf.md``).

    Attributes
    ----------
    name : str
        The name ``measure_zipf(solvers=...)`` takes.
    label : str
        Its name in tables and legends.
    run : EntryPoint
        ``run(instance, settings) -> (W, budget_ended)``: the memory of one instance
        (``settings``: the measurement's :class:`validation.measurements.zipf.ZipfSettings`).
    bound : {"exact", "upper_bound"}
        ``exact``: the error of the memory it names; ``upper_bound``: the error of a W
        found by a search or training, an upper bound on the error of the best memory.
    measures : str
        What its error is, in words.
    theory : mapping or None
        Keyword arguments of ``replica.zipf_error`` beside ``d, N, a`` (None: no theory).
    theory_source : str
        The theory's name in tables (or why there is none).
    theory_ensemble : bool
        The theory takes the instances' ensemble.
    theory_stderr : bool
        The theory has a Monte-Carlo standard error.
    exponent : callable or None
        ``exponent(a)``: the asymptotic exponent of d in the error at fixed N (None: none known).
    """

    name: str
    label: str
    run: EntryPoint
    bound: str
    measures: str
    theory: Mapping | None = None
    theory_source: str = "none"
    theory_ensemble: bool = False
    theory_stderr: bool = False
    exponent: Callable | None = None

    def __post_init__(self):
        check_choice(self.bound, "bound", MEMORY_BOUNDS)


_MEMORIES: dict = {}


def register_memory(spec: MemorySpec, replace: bool = False) -> MemorySpec:
    """Add a memory that measurements run (then ``measure_zipf(solvers=[name])`` measures it).

    Raises
    ------
    ValueError
        If ``spec`` is not a :class:`MemorySpec` or its name is taken (without ``replace``).
    """
    if not isinstance(spec, MemorySpec):
        raise ValueError(f"spec must be a MemorySpec, got {type(spec).__name__}")
    if spec.name in _MEMORIES and not replace:
        raise ValueError(f"memory {spec.name!r} is registered already; pass replace=True to replace it")
    _MEMORIES[spec.name] = spec
    return spec


def memory_names() -> tuple:
    """The registered memory names, in registration order."""
    return tuple(_MEMORIES)


def memory_spec(name: str) -> MemorySpec:
    """The spec of a registered memory (``ValueError`` listing the registered ones for an unknown name)."""
    return _MEMORIES[check_choice(name, "solvers", memory_names())]


_RUNS = "validation.measurements.zipf_memories"
_NO_CE_THEORY = "none (no theory of the cross-entropy memory)"
register_memory(MemorySpec(
    "optimal", "optimal, weighted give-up (upper bound on the best E)", EntryPoint(_RUNS, "weighted_give_up"),
    "upper_bound", "error of the W of the weighted give-up search (largest squared hinge per unit of "
    "frequency given up first): its recalled mass is a lower bound on the best, so this is an upper "
    "bound on the error of the best memory",
    theory={"memory": "optimal"}, theory_source="replica.zipf_error(memory='optimal') (replica-symmetric)",
    theory_stderr=True, exponent=lambda a: -2.0 * (a - 1.0)))
register_memory(MemorySpec(
    "hebbian", "Hebbian", EntryPoint(_RUNS, "hebbian_rule"), "exact",
    "error of the Hebbian memory W = sum_mu u_mu e_mu^T",
    theory={"memory": "hebbian", "weights": None}, theory_source="replica.zipf_error(memory='hebbian')",
    theory_ensemble=True))
register_memory(MemorySpec(
    "hebbian_frequency", "Hebbian, w = f", EntryPoint(_RUNS, "frequency_weighted_hebbian"), "exact",
    "error of the frequency-weighted Hebbian memory W = sum_mu f_mu u_mu e_mu^T",
    theory={"memory": "hebbian", "weights": "frequency"},
    theory_source="replica.zipf_error(memory='hebbian', weights='frequency')", theory_ensemble=True,
    theory_stderr=True, exponent=lambda a: -(a - 1.0) / (2.0 * a)))
register_memory(MemorySpec(
    "adam", "Adam-CE", EntryPoint(_RUNS, "adam_cross_entropy"), "upper_bound",
    "error of the W trained by Adam on the unweighted cross-entropy for the step "
    "budget: an upper bound on the error of the best memory", theory_source=_NO_CE_THEORY))
register_memory(MemorySpec(
    "adam_frequency", "Adam-CE, f-weighted", EntryPoint(_RUNS, "adam_weighted_cross_entropy"), "upper_bound",
    "error of the W trained by Adam on the frequency-weighted cross-entropy "
    "sum_mu f_mu CE_mu for the step budget: an upper bound on the error of the best memory",
    theory_source=_NO_CE_THEORY))
