"""Solver-specific settings: one frozen options dataclass per solver.

The arguments that every solver spells the same way (``tol``, ``max_iter``,
``time_limit``, ``seed``, ``refine``, ``restarts``; :data:`SHARED_ARGUMENTS`)
are keywords of :func:`validation.solve` and of the solver functions.  Everything
specific to one solver lives in its options class, which checks its values when it is
built:

* :class:`OptimalOptions` -- ``solver="optimal"`` (``notes/optimal_solver.md``);
* :class:`LPOptions` -- ``solver="lp"`` (``notes/simulation.md``, the LP solver);
* :class:`AdamOptions` -- ``solver="adam"`` (``notes/simulation.md``, Adam);
* :class:`SVPOptions` -- ``solver="svp"`` (``notes/rank_search.md``).

``solve(..., options={...})`` builds the class from the mapping with
:meth:`SolverOptions.from_mapping`: an unknown name raises ``ValueError`` that names it
and lists the valid ones.  The solver functions also accept an instance of the class.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from replica.common.checks import check_choice, check_int, check_real

__all__ = ["SolverOptions", "OptimalOptions", "LPOptions", "AdamOptions", "SVPOptions", "MAX_NONZEROS",
           "SHARED_ARGUMENTS", "SolveBudget", "check_restarts"]

MAX_NONZEROS = 2_000_000
"""Default largest LP constraint matrix (nonzeros) that ``solver="lp"`` accepts."""

SHARED_ARGUMENTS = ("tol", "max_iter", "time_limit", "seed", "refine", "restarts")
"""Arguments that every solver understands under the same name (see :func:`validation.solve`)."""


@dataclass(frozen=True)
class SolveBudget:
    """The shared arguments of one solve (:data:`SHARED_ARGUMENTS`) as one object.

    A solver function with a ``budget`` parameter gets them this way from
    :func:`validation.solve` (those given, the others None) instead of one keyword each.
    None is the solver's default for every field.
    """

    tol: float | None = None
    max_iter: int | None = None
    time_limit: float | None = None
    seed: Any = None
    refine: bool | None = None
    restarts: int | None = None


@dataclass(frozen=True)
class SolverOptions:
    """Base of the options classes: building from a mapping, with checked names.

    Subclasses set ``SOLVER`` (the solver name used in messages) and may set
    ``ALIASES`` (deprecated option name -> current name).
    """

    SOLVER: ClassVar[str] = ""
    ALIASES: ClassVar[dict[str, str]] = {}

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The valid option names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_mapping(cls, mapping) -> SolverOptions:
        """Build the options from a mapping of names to values.

        Parameters
        ----------
        mapping : mapping or None

        Returns
        -------
        SolverOptions
            An instance of ``cls``; missing names take their defaults.

        Raises
        ------
        ValueError
            For an unknown name (the message lists the valid ones), for a name that
            is a keyword of :func:`validation.solve` (``tol``, ``max_iter``, ...), or
            for a bad value.
        """
        values: dict[str, Any] = {}
        for name, value in dict(mapping or {}).items():
            if name in cls.ALIASES:
                warnings.warn(f"option {name!r} of solver {cls.SOLVER!r} is deprecated; use "
                              f"{cls.ALIASES[name]!r}", DeprecationWarning, stacklevel=3)
                name = cls.ALIASES[name]
            if name in SHARED_ARGUMENTS:
                raise ValueError(f"{name} is an argument of solve(), not an option of solver "
                                 f"{cls.SOLVER!r}; pass {name}=... to solve()")
            if name not in cls.names():
                raise ValueError(f"unknown option {name!r} for solver {cls.SOLVER!r}; valid options: "
                                 f"{', '.join(cls.names())}")
            values[name] = value
        return cls(**values)

    @classmethod
    def coerce(cls, options) -> SolverOptions:
        """``options`` as an instance of ``cls`` (None: the defaults; a mapping: :meth:`from_mapping`).

        Raises
        ------
        ValueError
            For another options class, or as :meth:`from_mapping`.
        """
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        if isinstance(options, SolverOptions):
            raise ValueError(f"options for solver {cls.SOLVER!r} must be {cls.__name__}, got "
                             f"{type(options).__name__}")
        return cls.from_mapping(options)

    def _set(self, name, value):
        object.__setattr__(self, name, value)


@dataclass(frozen=True)
class OptimalOptions(SolverOptions):
    """Settings of the ``optimal`` solver (``notes/optimal_solver.md``).

    Attributes
    ----------
    refine_tol : float
        Certified relative gap ``(margin_bound - margin) / margin_bound`` at which the
        max-margin refinement stops (default 0.02), in (0, 1].
    refine_max_iter : int
        0 skips the refinement; otherwise (``>= 1``, default 3000) the L-BFGS iterations
        of the rank-m ridge-path refinement.  At full rank the refinement is the
        certified max-margin solver (:func:`validation.solvers.maxmargin.solve_max_margin`,
        bounded by the solve's time limit).  ``refine_iterations`` is a deprecated alias.
    stage_tol : float
        Rank m: a ridge stage ends when ``||grad|| <= stage_tol * 2 lam ||W||`` (default 1e-2).
    initial : ndarray (d, d), (Q, R) pair or None
        Warm start (default: the Hebbian W, or its truncated SVD for kappa < 1).
    active_slack : float
        Working set: competitors with margin below ``1 + active_slack * ||W||_F / d``
        (default 1.0, >= 0).
    max_active : int
        Initial cap on the working set per input (default 64; doubled while it
        truncates violated constraints).
    refresh : int
        L-BFGS iterations between full passes (default 25).
    memory : int
        L-BFGS history (default 10).
    block_elements : int
        Scores per block in full passes (default 2**23).
    give_up : bool
        Give-up mode (default False): maximise the number of recalled inputs by giving
        up the costliest unrecalled inputs and re-solving
        (:func:`validation.solvers.searches.solve_give_up`); the result is a lower bound on
        the best accuracy, status ``not_found`` when not all are recalled.  With
        ``Instance.weights`` set it gives up the largest cost per unit of frequency
        and reports the recalled mass, a lower bound on the best (``notes/zipf.md``).
    give_up_fraction : float
        Give-up mode: fraction of the unrecalled kept inputs given up per round (at
        least one), in (0, 1] (default 0.05: measured at d = 16 and 32, smaller
        fractions recall a little more at a cost of more rounds).
    give_up_readd : int
        Give-up mode: after the search, try to add back up to this many of the inputs the
        final W does not recall, one at a time (the most frequent first with
        ``Instance.weights``, else the smallest squared hinge first), each kept when the
        re-solve recalls it with every kept input (default 0: no add-back, the search as
        before).
    give_up_swaps : int
        Give-up mode: after the search and the add-back, at most this many swap attempts
        (default 0: none): give up one kept input and put back ``give_up_swap_size``
        given-up ones, re-solve, and keep the move when the W recalls every other kept
        input and more inputs in all (with ``Instance.weights``: a larger recalled mass).
        ``seed`` plays no part; ``notes/recall_accuracy.md``, section 6.
    give_up_swap_size : int
        Give-up mode: given-up inputs put back per swap attempt (default 2, >= 1).
    give_up_restarts : int
        Give-up mode: further runs of the whole search (greedy, add-back, swaps) with the
        give-up order perturbed (default 0: none); the best run is returned.  Run ``r``
        multiplies the costs by ``exp(give_up_jitter z)``, ``z`` standard normal from
        ``replica.common.seeds.restart_stream(seed, r)`` (the ``seed`` of
        :func:`validation.solve`, None: ``DEFAULT_SEED``).
    give_up_jitter : float
        Give-up restarts: standard deviation of the log-normal perturbation of the costs
        (default 0.5, > 0).
    top_k : int
        Top-k recall (default 1: plain recall).  ``k >= 2`` stores every input in the
        top k (:func:`validation.solvers.searches.solve_top_k`); must be below the number
        of candidates of the instance (checked by the solver).
    top_k_restarts : int
        Top-k mode: further runs of the search from random starts when the first does not
        store (default 0: none); restart ``r`` starts from a W with standard normal entries
        from ``replica.common.seeds.restart_stream(seed, r)`` (the ``seed`` of
        :func:`validation.solve`, None: ``DEFAULT_SEED``), and the first run that stores
        ends the search (``notes/top_k.md``, section 2).
    max_rounds : int
        Most re-solves of the give-up and top-k modes (default 100, >= 1); per run.
    start_max_iter : int
        Rank search (kappa < 1, :mod:`validation.solvers.rank_search`): L-BFGS
        iterations of one start (default 500, >= 1; storing starts used at most 436 at
        d = 8, ``notes/rank_search.md``);
        a start that uses them up has run its planned course (the factor iteration
        creeps on an unstorable instance instead of stopping).
    screen_dp : bool
        Screen the full passes of DP instances (default True,
        :class:`validation.solvers.engine.screening.DPScreen`, ``notes/optimal_solver.md``,
        section 6): an input whose untracked candidates provably stay above the
        working-set threshold has only its tracked ones regenerated.  The pass's working
        set, loss and violation counts are those of a plain pass (False), in canonical
        order; False is the reference to compare against (slower).
    rescale_dp_start : bool
        Full-rank DP decision with p > 64: scale the start to the working-set loss
        minimum along its ray, as for OP (default False: the unscaled start lets the
        first full pass reuse the start's pass, section 6).  Rank-m starts and the
        rounds of the search modes are always rescaled.

    Raises
    ------
    ValueError
        For a value out of range (named in the message).
    """

    SOLVER: ClassVar[str] = "optimal"
    ALIASES: ClassVar[dict[str, str]] = {"refine_iterations": "refine_max_iter"}

    refine_tol: float = 0.02
    refine_max_iter: int = 3000
    stage_tol: float = 1e-2
    initial: Any = field(default=None, compare=False)
    active_slack: float = 1.0
    max_active: int = 64
    refresh: int = 25
    memory: int = 10
    block_elements: int = 1 << 23
    give_up: bool = False
    give_up_fraction: float = 0.05
    give_up_readd: int = 0
    give_up_swaps: int = 0
    give_up_swap_size: int = 2
    give_up_restarts: int = 0
    give_up_jitter: float = 0.5
    top_k: int = 1
    top_k_restarts: int = 0
    max_rounds: int = 100
    start_max_iter: int = 500
    screen_dp: bool = True
    rescale_dp_start: bool = False

    def __post_init__(self):
        self._set("refine_tol", check_real(self.refine_tol, "refine_tol", low=0.0, high=1.0, low_open=True))
        self._set("refine_max_iter", check_int(self.refine_max_iter, "refine_max_iter", low=0))
        self._set("start_max_iter", check_int(self.start_max_iter, "start_max_iter", low=1))
        self._set("stage_tol", check_real(self.stage_tol, "stage_tol", low=0.0, high=1.0, low_open=True))
        self._set("active_slack", check_real(self.active_slack, "active_slack", low=0.0))
        for name in ("max_active", "refresh", "memory", "block_elements", "top_k", "max_rounds"):
            self._set(name, check_int(getattr(self, name), name, low=1))
        for name in ("give_up", "screen_dp", "rescale_dp_start"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
            self._set(name, bool(getattr(self, name)))
        self._set("give_up_fraction", check_real(self.give_up_fraction, "give_up_fraction", low=0.0, high=1.0,
                                                 low_open=True))
        for name in ("give_up_readd", "give_up_swaps", "give_up_restarts", "top_k_restarts"):
            self._set(name, check_int(getattr(self, name), name, low=0))
        self._set("give_up_swap_size", check_int(self.give_up_swap_size, "give_up_swap_size", low=1))
        self._set("give_up_jitter", check_real(self.give_up_jitter, "give_up_jitter", low=0.0, low_open=True))
        if not np.isfinite(self.give_up_jitter):
            raise ValueError(f"give_up_jitter must be finite, got {self.give_up_jitter!r}")
        if self.top_k_restarts and self.top_k == 1:
            raise ValueError(f"top_k_restarts={self.top_k_restarts} needs top_k >= 2 (restarts of the top-k search)")
        if self.give_up and self.top_k > 1:
            raise ValueError(f"give_up=True and top_k={self.top_k} cannot be combined; use one search mode")


@dataclass(frozen=True)
class LPOptions(SolverOptions):
    """Settings of the ``lp`` solver (``notes/simulation.md``, the LP solver).

    Attributes
    ----------
    max_nonzeros : int
        Largest constraint matrix accepted (default 2e6, about d = 32 near capacity;
        measured LP times: about 0.1 s at d = 8, a few seconds at d = 16, minutes at
        d = 24).
    feasibility_tolerance : float
        HiGHS primal and dual feasibility tolerance (default 1e-9, in (0, 1e-3]); also
        the violation above which constraint generation adds a constraint.
    working_set : bool
        Constraint generation instead of the full LP (default False: measured slower
        than the full LP at d = 16 and 24, because the p d equality rows dominate).
    initial_per_input, add_per_input : int
        Constraint generation: the strongest competitors per input under the Hebbian W
        to start from, and the most violated ones added per round (default 8 each).
    optimum : bool
        Constraint generation: continue until no constraint is violated, so that the
        reported ``t*`` is the exact LP optimum (default False: stop at the decision).
    method : {"highs-ipm", "highs-ds", "highs"}
        scipy ``linprog`` method (default ``highs-ipm``: 77 s against 193 s for the dual
        simplex at d = 24, p = 110, same optimum to 1e-14).

    Raises
    ------
    ValueError
        For a value out of range (named in the message).
    """

    SOLVER: ClassVar[str] = "lp"

    max_nonzeros: int = MAX_NONZEROS
    feasibility_tolerance: float = 1e-9
    working_set: bool = False
    initial_per_input: int = 8
    add_per_input: int = 8
    optimum: bool = False
    method: str = "highs-ipm"

    def __post_init__(self):
        self._set("max_nonzeros", check_int(self.max_nonzeros, "max_nonzeros", low=1))
        self._set("feasibility_tolerance", check_real(self.feasibility_tolerance, "feasibility_tolerance",
                                                      low=0.0, high=1e-3, low_open=True))
        self._set("initial_per_input", check_int(self.initial_per_input, "initial_per_input", low=1))
        self._set("add_per_input", check_int(self.add_per_input, "add_per_input", low=1))
        self._set("working_set", bool(self.working_set))
        self._set("optimum", bool(self.optimum))
        self._set("method", check_choice(self.method, "method", ("highs-ipm", "highs-ds", "highs")))


@dataclass(frozen=True)
class AdamOptions(SolverOptions):
    """Settings of the ``adam`` solver (``notes/simulation.md``, Adam).

    Attributes
    ----------
    learning_rate : float
        Adam step size (default 0.1; W entries of order 1 are reached in tens of steps).
    check_every : int
        Recall is checked every this many steps (default 10).
    beta1, beta2 : float
        Adam moment decay rates in [0, 1) (defaults 0.9, 0.999).
    epsilon : float
        Adam denominator offset (default 1e-8).
    init_scale : float
        Factor initialisation for kappa < 1: entries ``N(0, init_scale^2 / d)``
        (default 0.1).
    init : {"zero", "lecun_normal"}
        Start of a full-rank W (kappa = 1): ``"zero"`` (default; the loss is convex in
        W) or ``"lecun_normal"``, i.i.d. entries from a normal truncated at two
        standard deviations and rescaled to variance ``1 / d`` (the default kernel
        initialisation of a bias-free ``flax.linen.Dense`` layer).
    stop_accuracy : float
        Early stop once the recall fraction reaches it (checked every ``check_every``
        steps, confirmed in float64), in (0, 1] (default 1.0: every input recalled).
        A stop below 1 leaves the status ``undecided`` unless every input is recalled.
    weight_decay : float
        Decoupled (AdamW) weight decay, >= 0 (default 0): every step subtracts
        ``learning_rate * weight_decay * x`` from each parameter ``x`` besides the
        Adam step (the convention of ``optax.adamw``).
    weighted : bool
        Weight each input's cross-entropy by the instance's query frequency
        (``Instance.weights``): the loss ``sum_mu f_mu CE_mu`` is the expected
        cross-entropy of queries drawn with those frequencies (the population loss of
        ``notes/zipf.md``).  Default False: the mean ``(1/p) sum_mu CE_mu``.  An
        instance without weights is a ValueError.

    Raises
    ------
    ValueError
        For a value out of range (named in the message).
    """

    SOLVER: ClassVar[str] = "adam"

    learning_rate: float = 0.1
    check_every: int = 10
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8
    init_scale: float = 0.1
    init: str = "zero"
    stop_accuracy: float = 1.0
    weight_decay: float = 0.0
    weighted: bool = False

    def __post_init__(self):
        self._set("learning_rate", check_real(self.learning_rate, "learning_rate", low=0.0, low_open=True))
        self._set("check_every", check_int(self.check_every, "check_every", low=1))
        for name in ("beta1", "beta2"):
            self._set(name, check_real(getattr(self, name), name, low=0.0, high=1.0, high_open=True))
        self._set("epsilon", check_real(self.epsilon, "epsilon", low=0.0, low_open=True))
        self._set("init_scale", check_real(self.init_scale, "init_scale", low=0.0, low_open=True))
        self._set("init", check_choice(self.init, "init", ("zero", "lecun_normal")))
        self._set("stop_accuracy", check_real(self.stop_accuracy, "stop_accuracy", low=0.0, high=1.0,
                                              low_open=True))
        self._set("weight_decay", check_real(self.weight_decay, "weight_decay", low=0.0))
        if not isinstance(self.weighted, (bool, np.bool_)):
            raise ValueError(f"weighted must be True or False, got {self.weighted!r}")
        self._set("weighted", bool(self.weighted))



@dataclass(frozen=True)
class SVPOptions(SolverOptions):
    """Settings of the ``svp`` solver (projected gradient on the rank-m matrices, ``notes/rank_search.md``).

    Attributes
    ----------
    initial : ndarray (d, d), (Q, R) pair or None
        Start, projected onto rank m (default: the Hebbian W).
    max_active : int
        Most competitors per input in the working set that carries the gradient
        (default 64, >= 1); the loss that accepts a step is always the full one.
    block_elements : int
        Scores per block in full passes (default 2**23).
    max_backtracks : int
        Halvings of the step before the iteration is declared stationary (default 30).
    stall_tol : float
        A step that lowers the loss by less than this relative amount ends the
        iteration as stationary (default 1e-6, >= 0).

    Raises
    ------
    ValueError
        For a value out of range (named in the message).
    """

    SOLVER: ClassVar[str] = "svp"

    initial: Any = field(default=None, compare=False)
    max_active: int = 64
    block_elements: int = 1 << 23
    max_backtracks: int = 30
    stall_tol: float = 1e-6

    def __post_init__(self):
        for name in ("max_active", "block_elements", "max_backtracks"):
            self._set(name, check_int(getattr(self, name), name, low=1))
        self._set("stall_tol", check_real(self.stall_tol, "stall_tol", low=0.0))


def check_restarts(restarts):
    """``restarts`` checked: None or an integer >= 1 (bool and floats rejected).

    Raises
    ------
    ValueError
        Naming the value and the valid range.
    """
    if restarts is None:
        return None
    if isinstance(restarts, bool) or not isinstance(restarts, (numbers.Integral, np.integer)):
        raise ValueError(f"restarts must be None or an integer >= 1, got {restarts!r}")
    if int(restarts) < 1:
        raise ValueError(f"restarts must be None or an integer >= 1, got {int(restarts)}")
    return int(restarts)
