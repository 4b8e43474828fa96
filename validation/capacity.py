"""Measured storage capacity: P(stored) on an adaptive grid of p and the p_c where it is 1/2.

For given (d, problem, solver, kappa, ensemble) every point of a grid of p gets
``trials`` independent instances (seeds from ``SeedSequence(seed, spawn_key=(p, trial))``,
see :func:`validation.sweep.task_seed`).  The first points are placed by a *design*
(:class:`CapacityDesign`: a log-spaced grid around the theory's finite-size p_c, or a
bracketing walk from it), and refined where the transition is: a logistic model in ln p,

    P(stored | p) = 1 / (1 + exp(slope * (ln p - ln p_c))),

is fitted to the binomial counts by maximum likelihood (:func:`fit_logistic`), and new
points go to the fitted p_c and to the fitted 20 % and 80 % points.  The 95 % interval
of p_c is the profile-likelihood interval of ln p_c (slope profiled out; deviance
<= 3.84).  ``undecided`` trials (a solver that stopped without deciding) and ``error``
trials are counted and reported, never counted as stored or not stored.

With ``criterion="accuracy:A"`` a trial counts as stored when the returned W recalls
at least the fraction ``A`` of the inputs (its ``recall_fraction``), and p_c is the
capacity at accuracy ``A`` (theory: ``replica.accuracy_capacity``); the designs and the
fit are the same.  For solvers that do not maximise the accuracy (``optimal`` and ``lp``
return the squared-hinge minimiser or the LP's W above the all-stored capacity,
``adam`` its trained W) that p_c is a lower bound on the accuracy capacity of the best
memory (``notes/recall_accuracy.md``, "In simulation").

alpha = p_c ln p_c / d^2 (natural log).

See ``notes/capacity_estimation.md`` for the design and its justification.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from scipy import optimize, special, stats

from replica.common.checks import check_choice, check_int, check_kappa, check_real
from replica.common.results import Result
from replica.common.seeds import resolve_seed

from .ensembles import ENSEMBLES, PROBLEMS
from .solvers import SOLVERS, rank_for
from .sweep import Task, run_tasks, task_seed

__all__ = ["CurvePoint", "CapacityEstimate", "CapacityDesign", "SweepSettings", "LogisticFit",
           "estimate_capacity", "fit_logistic", "theory_capacity", "storage_trial", "load", "parse_criterion",
           "DESIGNS", "PROBLEMS", "SOLVERS", "ENSEMBLES"]

DESIGNS = ("auto", "grid", "bracket")
_CHI2_95 = float(stats.chi2.ppf(0.95, 1))  # 3.841...
_MAX_SLOPE = 400.0


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


def load(d, p):
    """alpha = p ln p / d^2 (natural log)."""
    return p * math.log(p) / d ** 2


def _p_from_load(d, alpha):
    """Inverse of :func:`load` on p >= e^{-1}: solve p ln p = alpha d^2 (Lambert W)."""
    x = alpha * d * d
    return float(x / special.lambertw(x).real)


# ---------------------------------------------------------------------------------
# Theory
# ---------------------------------------------------------------------------------
def theory_capacity(d: int, solver: str, kappa: float = 1.0, ensemble: str = "gaussian",
                    accuracy: float | None = None, outputs: int | None = None, problem: str = "op",
                    top_k: int = 1) -> dict:
    """Finite-size theory prediction matching a measurement.

    ``replica.capacity(d, kappa)`` for ``optimal``/``lp``/``adam`` and
    ``replica.hebbian_capacity(d, ensemble=..., kappa=...)`` for ``hebbian``
    (``notes/finite_size_capacity.md``, ``notes/hebbian_finite_size.md``).  With an
    ``accuracy`` threshold: ``replica.accuracy_capacity`` (``notes/recall_accuracy.md``;
    the replica-symmetric optimal memory, or the Hebbian memory at kappa = 1).  With
    ``outputs=K`` distinct answers: ``replica.capacity(d, kappa, outputs=K,
    problem=problem)`` (``notes/many_to_one.md``) for the optimal memory; no theory
    (NaN) for the Hebbian memory or an accuracy threshold.  With ``top_k >= 2`` (top-k
    recall): ``replica.capacity(d, kappa, top_k=top_k)`` (``notes/top_k.md``).

    Returns
    -------
    dict
        ``p_c``, ``alpha``, ``alpha_c`` (the d -> infinity value), ``source`` (the
        function used) and, for the optimal memory, ``stderr`` of p_c.
    """
    import replica

    if outputs is not None:
        return _outputs_theory(d, solver, kappa, accuracy, outputs, problem)
    if accuracy is not None:
        return _accuracy_theory(d, solver, kappa, ensemble, accuracy)
    if solver == "hebbian":
        res = replica.hebbian_capacity(d, ensemble=ensemble, kappa=kappa)
        source = "replica.hebbian_capacity"
    elif top_k > 1:
        res = replica.capacity(d, kappa, top_k=top_k)
        source = f"replica.capacity(top_k={top_k})"
    else:
        res = replica.capacity(d, kappa)
        source = "replica.capacity"
    out = {"p_c": float(res.p_c), "alpha": float(res.alpha), "alpha_c": float(res.alpha_c), "source": source}
    if solver != "hebbian":
        out["stderr"] = float(res.stderr)
    return out


def _outputs_theory(d, solver, kappa, accuracy, outputs, problem) -> dict:
    """:func:`theory_capacity` with ``K`` distinct answers (``replica.capacity(outputs=K)``)."""
    import replica

    if solver == "hebbian" or accuracy is not None:
        return {"p_c": math.nan, "alpha": math.nan, "alpha_c": math.nan,
                "source": "none (no theory of K shared answers for the Hebbian memory or an accuracy threshold)"}
    res = replica.capacity(d, kappa, outputs=outputs, problem=problem)
    return {"p_c": float(res.p_c), "alpha": float(res.alpha), "alpha_c": float(res.alpha_c),
            "source": f"replica.capacity(outputs={outputs}, problem={problem!r})", "stderr": float(res.stderr)}


def _accuracy_theory(d, solver, kappa, ensemble, accuracy) -> dict:
    """:func:`theory_capacity` at an accuracy threshold (``replica.accuracy_capacity``)."""
    import replica

    if solver == "hebbian" and kappa != 1.0:
        return {"p_c": math.nan, "alpha": math.nan, "alpha_c": math.nan,
                "source": "none (no accuracy theory of the rank-truncated Hebbian memory)"}
    memory = "hebbian" if solver == "hebbian" else "optimal"
    res = replica.accuracy_capacity(d, accuracy, memory, ensemble, kappa)
    # d -> infinity: the Hebbian accuracy jumps at alpha = 1/2 (for A < 1), the optimal one at alpha_c(kappa)
    alpha_c = 0.5 if memory == "hebbian" else float(replica.alpha_c(kappa))
    return {"p_c": float(res.p_c), "alpha": float(res.alpha), "alpha_c": alpha_c, "stderr": float(res.stderr),
            "source": f"replica.accuracy_capacity(accuracy={accuracy:g}, memory={memory!r})"}


def _asymptotic_alpha(solver: str, kappa: float) -> float:
    """alpha_c(kappa) = F(kappa)/2 (optimal) or F(kappa)/8 (Hebbian): the grid centre without a theory p_c."""
    import replica

    return float(replica.alpha_c_hebbian(kappa) if solver == "hebbian" else replica.alpha_c(kappa))


# ---------------------------------------------------------------------------------
# Logistic fit and profile-likelihood interval
# ---------------------------------------------------------------------------------
_FIT_MESSAGES = {
    "ok": "ok",
    "separated": "no grid point inside the transition: interval from the gap between all-stored and "
                 "none-stored points",
    "unbracketed": "P(stored) = 1/2 is not bracketed by the grid; p_c is an extrapolation",
    "failed": "no decided trials: nothing to fit",
}


@dataclass(frozen=True)
class LogisticFit(Result):
    """Maximum-likelihood logistic fit of P(stored) in ln p.

    Attributes
    ----------
    log_p_c, slope : float
        ``P = 1 / (1 + exp(slope (ln p - log_p_c)))``.
    log_p_c_low, log_p_c_high : float
        95 % profile-likelihood interval of ``log_p_c`` (clipped to the search range
        when unbracketed).
    loglik : float
    status : str
        ``"ok"``; ``"separated"`` (the counts jump from all-stored to none-stored:
        slope at its cap, p_c known to lie in the gap); ``"unbracketed"`` (an end of
        the interval was not found inside the search range: P = 1/2 is not bracketed
        by the data); ``"failed"`` (no decided trials; every number is NaN).
    converged : bool
        ``status`` is ``"ok"`` or ``"separated"``.
    message : str
        What the status means, in words.
    """

    STATUSES: ClassVar[tuple] = ("ok", "separated", "unbracketed", "failed")

    log_p_c: float
    slope: float
    log_p_c_low: float
    log_p_c_high: float
    loglik: float
    status: str
    converged: bool
    message: str

    @classmethod
    def with_status(cls, status, log_p_c=math.nan, slope=math.nan, low=math.nan, high=math.nan,
                    loglik=math.nan) -> LogisticFit:
        """A fit with ``status`` and the matching ``converged`` flag and message."""
        return cls(log_p_c, slope, low, high, loglik, status, status in ("ok", "separated"),
                   _FIT_MESSAGES[status])

    @property
    def bracketed(self) -> bool:
        """Deprecated: ``status in ("ok", "separated")``."""
        return self.converged

    def probability(self, p):
        """Fitted P(stored) at ``p``."""
        return special.expit(-self.slope * (np.log(p) - self.log_p_c))

    def quantile(self, prob):
        """p where the fitted P(stored) equals ``prob``."""
        return float(math.exp(self.log_p_c - special.logit(prob) / self.slope))


def _loglik(log_p_c, slope, x, k, n):
    z = slope * (log_p_c - x)
    return float(np.sum(k * special.log_expit(z) + (n - k) * special.log_expit(-z)))


def _profile(log_p_c, x, k, n):
    """max over the slope (log-spaced search in [1e-2, _MAX_SLOPE]) of the log-likelihood."""
    res = optimize.minimize_scalar(lambda ls: -_loglik(log_p_c, math.exp(ls), x, k, n),
                                   bounds=(math.log(1e-2), math.log(_MAX_SLOPE)), method="bounded",
                                   options={"xatol": 1e-6})
    # the bounded search can stop short of the cap under separation: check the cap itself
    at_cap = _loglik(log_p_c, _MAX_SLOPE, x, k, n)
    if at_cap > -res.fun:
        return at_cap, _MAX_SLOPE
    return -res.fun, math.exp(res.x)


_SLOPE_GRID = np.exp(np.linspace(math.log(1e-2), math.log(_MAX_SLOPE), 90))


def _profile_on_grid(log_p_cs, x, k, n):
    """Profile log-likelihood on a grid of ln p_c, maximised over a log grid of slopes (coarse)."""
    z = _SLOPE_GRID[None, :, None] * (log_p_cs[:, None, None] - x[None, None, :])
    ll = (k * special.log_expit(z) + (n - k) * special.log_expit(-z)).sum(axis=2)
    return ll.max(axis=1)


def _endpoint(excess, grid, c_hat, j, step):
    """Root of ``excess`` between ``c_hat`` and the grid end in direction ``step``.

    ``j`` is the first grid index (from the coarse profile) where the excess is
    believed negative; it is checked with the precise profile and moved outwards until
    the excess is negative, then the bracket is closed inwards.  ``None`` if the excess
    stays positive up to the end of the grid.
    """
    if j is None:
        return None
    while excess(grid[j]) >= 0:
        j += step
        if j < 0 or j >= len(grid):
            return None
    inner = j - step
    a = grid[inner] if (0 <= inner < len(grid)) and ((grid[inner] - c_hat) * step > 0) else c_hat
    while excess(a) < 0:  # coarse grid was optimistic: move inwards
        inner -= step
        a = grid[inner] if (grid[inner] - c_hat) * step > 0 else c_hat
    return float(optimize.brentq(excess, min(a, grid[j]), max(a, grid[j]), xtol=1e-7))


def _maximum(grid, prof, x, k, n):
    """Maximum-likelihood ln p_c (refined from the coarse profile), its log-likelihood and slope."""
    i = int(np.argmax(prof))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = optimize.minimize_scalar(lambda c: -_profile(c, x, k, n)[0], bounds=(a, b), method="bounded",
                                   options={"xatol": 1e-7})
    c_hat = float(res.x) if -res.fun >= prof[i] else float(grid[i])
    l_max, slope = _profile(c_hat, x, k, n)
    # under complete separation the profile is flat (l = 0) on the whole gap: take its middle
    flat = np.flatnonzero(prof >= l_max - 1e-9)
    if len(flat) > 1 and slope >= _MAX_SLOPE * 0.999:
        c_hat = float(0.5 * (grid[flat[0]] + grid[flat[-1]]))
        l_max, slope = _profile(c_hat, x, k, n)
    return c_hat, l_max, slope


def fit_logistic(p, stored, decided) -> LogisticFit:
    """Fit the logistic model to counts and return the profile-likelihood interval.

    See ``notes/capacity_estimation.md`` ("Model, estimate and interval").

    Parameters
    ----------
    p : array of int
        Grid points.
    stored, decided : array of int
        Stored count and decided trials (stored + not stored) at each point.

    Returns
    -------
    LogisticFit
        Status ``"ok"``, ``"separated"`` or ``"unbracketed"``.

    Raises
    ------
    ValueError
        If there are no decided trials.
    """
    x = np.log(np.asarray(p, dtype=float))
    k = np.asarray(stored, dtype=float)
    n = np.asarray(decided, dtype=float)
    keep = n > 0
    x, k, n = x[keep], k[keep], n[keep]
    if n.sum() == 0:
        raise ValueError("decided must have at least one trial to fit P(stored)")
    span = max(x.max() - x.min(), 0.2)
    lo, hi = x.min() - span, x.max() + span
    grid = np.linspace(lo, hi, 161)
    prof = _profile_on_grid(grid, x, k, n)
    c_hat, l_max, slope = _maximum(grid, prof, x, k, n)
    target = l_max - _CHI2_95 / 2.0

    def excess(c):
        return _profile(c, x, k, n)[0] - target

    below = np.flatnonzero((grid < c_hat) & (prof < target))
    above = np.flatnonzero((grid > c_hat) & (prof < target))
    c_low = _endpoint(excess, grid, c_hat, below[-1] if len(below) else None, -1)
    c_high = _endpoint(excess, grid, c_hat, above[0] if len(above) else None, +1)
    bracketed = c_low is not None and c_high is not None
    c_low = lo if c_low is None else c_low
    c_high = hi if c_high is None else c_high
    # complete separation: every point all-stored or none-stored (slope then at its cap)
    separated = slope >= _MAX_SLOPE * 0.999 and bool(np.all((k == 0) | (k == n)))
    status = "unbracketed" if not bracketed else ("separated" if separated else "ok")
    return LogisticFit.with_status(status, c_hat, slope, float(c_low), float(c_high), l_max)


# ---------------------------------------------------------------------------------
# Result types
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CurvePoint(Result):
    """Counts at one p: ``trials`` run = stored + not_stored + undecided + errors + not_found.

    ``not_stored`` counts certified verdicts only; ``not_found`` counts the
    lower-bound verdicts of the search modes of ``optimal`` (``top_k``, ``give_up``:
    no W found, not a certificate), which the fit counts as not stored.  ``status`` is
    ``"ok"`` when at least one trial was decided (stored, not stored or not found) and
    ``"undecided"`` when none was (every trial undecided or an error); ``converged`` is
    ``status == "ok"``.
    """

    STATUSES: ClassVar[tuple] = ("ok", "undecided")

    p: int
    alpha: float
    trials: int
    stored: int
    not_stored: int
    undecided: int
    errors: int
    status: str
    converged: bool
    message: str
    not_found: int = 0

    @classmethod
    def from_counts(cls, d, p, counts) -> CurvePoint:
        """From ``[stored, not_stored, undecided, errors, trials(, not_found)]`` at ``p``."""
        stored, not_stored, undecided, errors, trials = counts[:5]
        not_found = counts[5] if len(counts) > 5 else 0
        ok = stored + not_stored + not_found > 0
        message = f"{stored} stored, {not_stored} not stored, {undecided} undecided, {errors} errors"
        if not_found:
            message += f", {not_found} not found (lower-bound verdicts)"
        return cls(p, load(d, p), trials, stored, not_stored, undecided, errors,
                   "ok" if ok else "undecided", ok, message, not_found)

    @property
    def decided(self) -> int:
        """Stored + not stored + not found trials."""
        return self.stored + self.not_stored + self.not_found


@dataclass(frozen=True)
class CapacityEstimate(Result):
    """Measured capacity of one (d, problem, solver, kappa, ensemble).

    Attributes
    ----------
    p_c, p_c_low, p_c_high : float
        Where the fitted P(stored) = 1/2 and its 95 % profile-likelihood interval.
    alpha, alpha_low, alpha_high : float
        The same as loads p ln p / d^2.
    slope : float
        Fitted logistic slope in ln p (transition width ~ 1/slope in ln p).
    curve : tuple of CurvePoint
    theory : dict
        ``{p_c, alpha, alpha_c, source}`` of :func:`theory_capacity`.
    undecided, errors : int
        Trials that were undecided or failed (excluded from the fit unless undecided
        trials are counted as not stored).
    status : str
        The fit's status (:class:`LogisticFit`): ``"ok"``, ``"separated"`` (interval
        from the gap between all-stored and none-stored points), ``"unbracketed"``
        (P = 1/2 not inside the grid; the interval is clipped and p_c is unreliable) or
        ``"failed"`` (no decided trial; p_c and its interval are NaN, ``None`` in
        ``to_dict``).
    converged : bool
        ``status`` is ``"ok"`` or ``"separated"``.
    message : str
    seed, trials : int
        Base seed and trials per grid point per round.
    seconds : float
    solver_options : dict
    design : str
        ``"grid"`` or ``"bracket"``: how the first points were placed.
    criterion : str
        ``"all"`` (stored = every input recalled) or ``"accuracy:A"`` (stored = the
        returned W recalls at least the fraction A; for solvers other than ``hebbian``
        p_c is then a lower bound on the accuracy capacity, and ``message`` says so).
    outputs : int or None
        ``K`` distinct answers shared by the facts, or None (one answer per fact; the
        key ``outputs`` is then absent from ``to_dict``).
    not_found : int
        Trials with the lower-bound verdict ``not_found`` of a search mode of
        ``optimal`` (``solver_options`` ``top_k >= 2`` or ``give_up``): counted as not
        stored, so p_c is then a LOWER BOUND on the threshold (``message`` says so;
        the key ``not_found`` is absent from ``to_dict`` when no trial had it).
    """

    STATUSES: ClassVar[tuple] = LogisticFit.STATUSES

    d: int
    problem: str
    solver: str
    kappa: float
    ensemble: str
    p_c: float
    p_c_low: float
    p_c_high: float
    alpha: float
    alpha_low: float
    alpha_high: float
    slope: float
    curve: tuple
    theory: dict
    undecided: int
    errors: int
    status: str
    converged: bool
    message: str
    seed: int
    trials: int
    seconds: float
    solver_options: dict = field(default_factory=dict)
    design: str = "grid"
    criterion: str = "all"
    outputs: int | None = None
    not_found: int = 0

    @property
    def lower_bound(self) -> bool:
        """p_c is a lower bound: some trials were ``not_found`` (or undecided counted as not stored)."""
        return self.not_found > 0 or "lower bound" in self.message

    def _payload(self) -> dict:
        return {"d": self.d, "problem": self.problem, "solver": self.solver, "kappa": self.kappa,
                "ensemble": self.ensemble, "p_c": self.p_c, "p_c_low": self.p_c_low,
                "p_c_high": self.p_c_high, "alpha": self.alpha, "alpha_low": self.alpha_low,
                "alpha_high": self.alpha_high, "slope": self.slope,
                "curve": [c.to_dict() for c in self.curve],
                "theory": {k: self.theory[k] for k in ("p_c", "alpha", "alpha_c") if k in self.theory},
                "theory_source": self.theory.get("source"),
                "undecided": self.undecided, "errors": self.errors, "status": self.status,
                "converged": self.converged, "message": self.message, "seed": self.seed,
                "trials": self.trials, "seconds": self.seconds, "solver_options": dict(self.solver_options),
                "design": self.design, "criterion": self.criterion,
                **({} if self.outputs is None else {"outputs": self.outputs}),
                **({"not_found": self.not_found} if self.not_found else {})}


# ---------------------------------------------------------------------------------
# The task function
# ---------------------------------------------------------------------------------
def _split_outputs(task: Task):
    """``(outputs, solver settings)`` from the task options (``outputs`` is for the instance)."""
    settings = dict(task.options)
    return settings.pop("outputs", None), settings


def storage_trial(task: Task) -> dict:
    """One storage trial: build the instance from the task's seed, solve it, report.

    Returns
    -------
    dict
        ``status`` (the solver's ``stored`` / ``not_stored`` / ``undecided``), ``stored``,
        ``instance_seed`` and the solver's diagnostics (margin, iterations, ...).  A
        ``not_found`` verdict (search modes of ``optimal``) is recorded as status
        ``not_stored`` with ``verdict = "not_found"``, which :class:`TrialCounts` counts
        apart; so is the ``not_found`` of the rank-m restart search of ``optimal``.

    Notes
    -----
    The option ``outputs`` (``K`` distinct answers, balanced map ``mu mod K``) goes to
    :func:`validation.make_instance`, not to the solver; at ``p < K`` it is ``p``.
    """
    from . import make_instance, solve
    from .solvers import solve_arguments

    seed = task_seed(task.seed, task.p, task.trial)
    outputs, settings = _split_outputs(task)
    if outputs is not None:  # below p = K every fact has its own answer: K = p
        outputs = min(int(outputs), task.p)
    inst = make_instance(task.d, task.p, problem=task.problem, ensemble=task.ensemble, seed=seed,
                         outputs=outputs)
    sol = solve(inst, solver=task.solver, kappa=task.kappa, **solve_arguments(settings))
    out = {k: v for k, v in sol.to_dict().items() if not isinstance(v, (list, dict))}
    out["instance_seed"] = seed
    out.update(record_status(sol))
    return out


def record_status(sol) -> dict:
    """``status``, ``stored`` (and ``verdict``) of a sweep record of the solution ``sol``.

    A ``stored`` label that the float64 recall does not confirm is recorded
    ``undecided``; the lower-bound verdict ``not_found`` (rank-m search, search modes)
    is recorded as ``not_stored`` with ``verdict="not_found"``, so that sweeps count it
    as not stored and can still tell it from a certificate.
    """
    status = sol.status
    if status == "stored" and not sol.stored:  # never trust a label over the verified recall
        status = "undecided"
    extra = {}
    if status == "not_found":
        status, extra = "not_stored", {"verdict": "not_found"}
    return {"status": status, "stored": bool(sol.stored) if status != "undecided" else None, **extra}


# ---------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------
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
            changes["kind"] = "bracket" if d >= 128 else "grid"
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
                               "outputs"})


def _split_settings(design, settings: dict):
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


_STORAGE_TRIAL = "validation.capacity:storage_trial"


def _measurement(d, problem, solver, kappa, ensemble, seed, sweep, extra):
    """(template Task with p = trial = 0, undecided_as_not_stored), checked (``ValueError`` naming the argument)."""
    task_function = extra.get("task_function")
    d = check_int(d, "d", low=2)
    check_choice(problem, "problem", PROBLEMS)
    if task_function is None:
        check_choice(solver, "solver", SOLVERS)
    kappa = float(check_kappa(kappa))
    check_choice(ensemble, "ensemble", ENSEMBLES)
    seed = resolve_seed(seed)
    lenient = extra.get("undecided_as_not_stored")
    if lenient is None:
        lenient = solver in ("adam", "svp")
    options = dict(extra.get("solver_options") or {})
    if solver == "optimal" and task_function is None:
        # storability is all that is measured: skip the max-margin refinement after "stored"
        options.setdefault("refine", False)
        if rank_for(d, kappa) < d and not options.get("give_up") and int(options.get("top_k", 1)) == 1:
            # the rank-m search: record the number of starts used with every trial
            from .solvers.rank_search import DEFAULT_RESTARTS, check_restarts

            options["restarts"] = check_restarts(options.get("restarts", DEFAULT_RESTARTS))
    if extra.get("outputs") is not None:
        options["outputs"] = check_int(extra["outputs"], "outputs", low=2)
    template = Task(task_function or _STORAGE_TRIAL, sweep.experiment, problem, solver,
                    ensemble, d, 0, kappa, seed, 0, tuple(sorted(options.items())))
    return template, bool(lenient)


# ---------------------------------------------------------------------------------
# Trial counting
# ---------------------------------------------------------------------------------
_STATUS_INDEX = {"stored": 0, "not_stored": 1, "undecided": 2, "error": 3, "not_found": 5}


class TrialCounts:
    """Counts per grid point: ``p -> [stored, not_stored, undecided, errors, trials, not_found]``.

    ``undecided_as_not_stored`` decides whether undecided trials enter the fit as
    failures (see :func:`estimate_capacity`).  With an accuracy ``threshold`` a record
    counts as stored when its ``recall_fraction`` is at least the threshold and as not
    stored otherwise (:meth:`classify`).
    """

    def __init__(self, undecided_as_not_stored: bool = False, threshold: float | None = None):
        self.lenient = undecided_as_not_stored
        self.threshold = threshold
        self.by_p: dict = {}

    def classify(self, record: dict) -> str:
        """The counted status of a trial record under the criterion."""
        status = record["status"]
        if self.threshold is None and record.get("verdict") == "not_found":
            return "not_found"
        if self.threshold is None or status == "error":
            return status
        fraction = record.get("recall_fraction")
        if fraction is None:  # a task function that measures no accuracy
            return "undecided"
        return "stored" if float(fraction) >= self.threshold else "not_stored"

    def __contains__(self, p) -> bool:
        return p in self.by_p

    def points(self) -> list:
        """The grid points so far, sorted."""
        return sorted(self.by_p)

    def done(self, p) -> int:
        """Trials run at ``p`` so far (the next trial index)."""
        return self.by_p[p][4] if p in self.by_p else 0

    def add(self, p, status: str) -> None:
        """Count one trial at ``p`` with record status ``status``."""
        c = self.by_p.setdefault(p, [0, 0, 0, 0, 0, 0])
        c[_STATUS_INDEX[status]] += 1
        c[4] += 1

    def decided(self, p) -> int:
        """Trials entering the fit at ``p``: stored + not stored + not found (+ undecided if counted as failures)."""
        c = self.by_p[p]
        return c[0] + c[1] + c[5] + (c[2] if self.lenient else 0)

    def frequency(self, p) -> float:
        """Stored fraction of the decided trials at ``p``."""
        return self.by_p[p][0] / self.decided(p)

    def any_decided(self) -> bool:
        return any(self.decided(p) for p in self.by_p)

    def sides(self):
        """(has a point with frequency > 1/2, has one with frequency < 1/2) among decided."""
        high = low = False
        for p in self.by_p:
            if self.decided(p):
                high |= self.frequency(p) > 0.5
                low |= self.frequency(p) < 0.5
        return high, low

    def mostly_undecided(self, p) -> bool:
        """More than half of the trials at ``p`` are left out of the fit."""
        c = self.by_p[p]
        return (0 if self.lenient else c[2]) + c[3] > c[4] / 2

    def fit(self) -> LogisticFit:
        """:func:`fit_logistic` of the counts; status ``"failed"`` without decided trials."""
        ps = self.points()
        decided = [self.decided(p) for p in ps]
        if sum(decided) == 0:
            return LogisticFit.with_status("failed")
        return fit_logistic(ps, [self.by_p[p][0] for p in ps], decided)

    def curve(self, d) -> tuple:
        return tuple(CurvePoint.from_counts(d, p, self.by_p[p]) for p in self.points())


class _PointRunner:
    """Runs ``trials`` more trials at grid points through :func:`validation.sweep.run_tasks`."""

    def __init__(self, template: Task, trials: int, sweep: SweepSettings, counts: TrialCounts):
        self.template, self.trials, self.sweep, self.counts = template, trials, sweep, counts
        self.first_error = None   # text of the first trial that failed with an error

    def run(self, ps) -> None:
        m = self.template
        _check_trials(m, max(ps))
        first = {p: self.counts.done(p) for p in ps}
        tasks = [dataclasses.replace(m, p=int(p), trial=t) for p in ps for t in range(first[p], first[p] + self.trials)]
        rep = run_tasks(tasks, store=self.sweep.store, executor=self.sweep.executor, progress=self.sweep.progress,
                        desc=f"{m.problem}/{m.solver} d={m.d} kappa={m.kappa:g}")
        for t in tasks:
            record = rep.records[t]
            if record["status"] == "error" and self.first_error is None:
                self.first_error = f"p={t.p} trial={t.trial}: {record.get('error')}"
            self.counts.add(t.p, self.counts.classify(record))


def _check_trials(template: Task, p: int) -> None:
    """``validation.solvers.check_problem`` for the storage trials of ``template`` up to size ``p``."""
    if template.function != _STORAGE_TRIAL:
        return
    from .solvers import check_problem, solve_arguments

    check_problem(template.d, int(p), template.problem, template.solver, template.kappa,
                  solve_arguments(_split_outputs(template)[1]).get("options"))


def _snap(ps):
    return sorted({max(2, int(round(p))) for p in ps})


# ---------------------------------------------------------------------------------
# Designs: where the first points go (one function per design, same interface)
# ---------------------------------------------------------------------------------
def _start_grid(runner: _PointRunner, design: CapacityDesign, center: float) -> None:
    """``initial_points`` log-spaced points over ``exp(+-initial_width)`` around ``center``."""
    w = design.initial_width
    runner.run(_snap(center * np.exp(np.linspace(-w, w, design.initial_points))))


def _start_bracket(runner: _PointRunner, design: CapacityDesign, center: float) -> None:
    """``center``, then single points ``exp(+-step)`` away (step doubling) until P = 1/2 is bracketed."""
    counts = runner.counts
    last = _snap([center])[0]
    runner.run([last])
    step = design.bracket_step
    for _ in range(design.max_expansions):
        high, low = counts.sides()
        if (high and low) or counts.mostly_undecided(last):
            break
        up = counts.frequency(last) >= 0.5  # mostly stored here: P = 1/2 lies at larger p
        new = [p for p in _snap([last * math.exp(step if up else -step)]) if p not in counts]
        if not new:
            break
        last = new[0]
        runner.run([last])
        step *= 2


_STARTS = {"grid": _start_grid, "bracket": _start_bracket}


def _expand(runner: _PointRunner, design: CapacityDesign) -> None:
    """Extend outwards in steps of ``exp(2 initial_width)`` until the frequencies bracket 1/2."""
    counts = runner.counts
    step = 2 * design.initial_width
    for _ in range(design.max_expansions):
        if not counts.any_decided():
            break  # nothing decided (every trial undecided or failed): more points will not help
        have_high, have_low = counts.sides()
        if have_high and have_low:
            break
        ps = counts.points()
        if not have_low:    # everything stored: go to larger p
            new = [ps[-1] * math.exp(step)]
        else:               # nothing stored: go to smaller p
            new = [max(2.0, ps[0] * math.exp(-step))]
        new = [p for p in _snap(new) if p not in counts]
        if not new:
            break
        runner.run(new)
        if counts.mostly_undecided(new[0]):
            break  # mostly undecided out there: going further would not bracket P = 1/2


def _refine(runner: _PointRunner, design: CapacityDesign) -> None:
    """``rounds`` rounds of new trials at the fitted p_c and the fitted 80 % and 20 % points."""
    counts = runner.counts
    for _ in range(design.rounds):
        fit = counts.fit()
        if fit.status == "failed":
            break
        new = _snap([math.exp(fit.log_p_c), fit.quantile(0.8), fit.quantile(0.2)])
        # keep new points near the data (a flat fit can put quantiles far away)
        ps = counts.points()
        new = [p for p in new if ps[0] / 2 <= p <= ps[-1] * 2]
        if new:
            runner.run(new)


# ---------------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------------
def _criterion_message(threshold: float, solver: str) -> str:
    """What a capacity at an accuracy threshold means for ``solver``."""
    head = (f"accuracy criterion: a trial counts as stored when the {{}} recalls >= {threshold:g} of the inputs "
            f"(p_c: half the instances reach it; the theory: mean accuracy = {threshold:g})")
    if solver == "hebbian":
        return head.format("Hebbian W") + " (exact for the Hebbian memory)"
    return (head.format("returned W") + f"; {solver} does not maximise the accuracy where not every input "
            "can be stored, so p_c is a LOWER BOUND on the accuracy capacity of the best memory")


def _messages(fit: LogisticFit, curve, counts: TrialCounts, solver: str, first_error=None) -> str:
    """The estimate's message: criterion, fit problems, left-out trials, a warning above 10 %."""
    lenient = counts.lenient
    undecided = sum(c.undecided for c in curve)
    errors = sum(c.errors for c in curve)
    total = sum(c.trials for c in curve)
    not_found = sum(c.not_found for c in curve)
    msgs = [] if counts.threshold is None else [_criterion_message(counts.threshold, solver)]
    if not_found:
        msgs.append(f"{not_found}/{total} trials not_found (the search found no W; not a certificate), "
                    "counted as not stored: p_c is a LOWER BOUND on the threshold")
    if fit.status != "ok":
        msgs.append(fit.message)
    if undecided and lenient:
        msgs.append(f"{undecided}/{total} trials undecided, counted as not stored (no storing W "
                    "found within the budget): p_c is a lower bound on the storability threshold")
    elif undecided:
        msgs.append(f"{undecided}/{total} trials undecided (excluded from the fit)")
    if errors:
        msgs.append(f"{errors}/{total} trials failed with an error (excluded; the first: {first_error})")
    if (0 if lenient else undecided) + errors > 0.1 * total:
        msgs.append("WARNING: more than 10% of trials excluded; p_c may be biased")
    return "; ".join(msgs) or "ok"


def _criterion_text(threshold) -> str:
    return "all" if threshold is None else f"accuracy:{threshold:g}"


def _estimate(m: Task, design: CapacityDesign, counts: TrialCounts, theory: dict,
              seconds: float, first_error=None) -> CapacityEstimate:
    """The :class:`CapacityEstimate` of the final counts (``ValueError`` when every trial failed)."""
    fit = counts.fit()
    curve = counts.curve(m.d)
    if first_error is not None and all(c.errors == c.trials for c in curve):
        raise ValueError(f"every trial of {m.problem}/{m.solver} d={m.d} kappa={m.kappa:g} failed with an "
                         f"error; the first: {first_error}")
    p_c, p_lo, p_hi = (math.exp(v) for v in (fit.log_p_c, fit.log_p_c_low, fit.log_p_c_high))
    outputs, options = _split_outputs(m)

    def alpha_of(p):
        return load(m.d, p) if math.isfinite(p) and p > 1 else math.nan

    return CapacityEstimate(
        m.d, m.problem, m.solver, m.kappa, m.ensemble, p_c, p_lo, p_hi, alpha_of(p_c), alpha_of(p_lo),
        alpha_of(p_hi), fit.slope, curve, theory, sum(c.undecided for c in curve), sum(c.errors for c in curve),
        fit.status, fit.converged, _messages(fit, curve, counts, m.solver, first_error), m.seed, design.trials,
        seconds, options, design.kind, _criterion_text(counts.threshold), outputs, sum(c.not_found for c in curve))


def estimate_capacity(d: int, problem: str = "op", solver: str = "optimal", kappa: float = 1.0,
                      ensemble: str = "gaussian", *, seed=0, design="auto", **settings) -> CapacityEstimate:
    """Measure P(stored) on an adaptive grid of p and locate p_c with a 95 % interval.

    See ``notes/capacity_estimation.md``.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    problem : {"op", "dp"}
    solver : {"hebbian", "optimal", "lp", "adam"}
    kappa : float
        Rank fraction in (0, 1].
    ensemble : {"gaussian", "sphere"}
    seed : None, int, SeedSequence or Generator
        Base seed (resolved by ``replica.common.seeds.resolve_seed``); trial t at p uses
        ``task_seed(seed, p, t)``.  The default 0 is the seed of the measurements in
        the README (``None`` is the package default seed).
    design : {"auto", "grid", "bracket"} or CapacityDesign
        Where the trials go (see :class:`CapacityDesign`).
    **settings
        Keywords overriding fields of ``design`` (``trials``, ``rounds``,
        ``initial_points``, ``initial_width``, ``bracket_step``, ``max_expansions``,
        ``center``) and of :class:`SweepSettings` (``executor``, ``store``,
        ``progress``, ``experiment``, or a whole ``sweep=SweepSettings(...)``), and:

        ``solver_options`` (dict)
            Passed to ``validation.solve`` through
            ``validation.solvers.solve_arguments``.  For ``optimal``, ``refine``
            defaults to False (only storability is measured).  ``{"top_k": k}``
            measures the top-k capacity (theory ``replica.capacity(d, kappa,
            top_k=k)``; ``not_found`` trials are counted as not stored and make p_c
            a lower bound, see ``notes/top_k.md``).
        ``undecided_as_not_stored`` (bool)
            Count ``undecided`` trials (budget exhausted without a storing W) as not
            stored in the fit.  The estimate is then the threshold for *finding* a
            storing memory within the budget, a lower bound on the storability
            threshold, and the message says so.  Default: True for the solvers that
            end without a decision on their own (``adam``, ``svp``), False otherwise
            (undecided trials are then excluded from the fit and reported).  For
            ``optimal`` at rank kappa d < d the restart search
            (``notes/rank_search.md``) says ``not_found`` when every planned start
            ended without storing -- counted as not stored, p_c a LOWER BOUND -- and
            ``undecided`` only when a budget cut it short.
        ``solver_options["restarts"]`` (int)
            ``optimal`` at rank kappa d < d: starts of the restart search (default
            ``validation.solvers.rank_search.DEFAULT_RESTARTS``, recorded with every
            trial and in ``solver_options`` of the estimate).
        ``criterion`` (str)
            ``"all"`` (default: stored = every input recalled) or ``"accuracy:A"``
            (stored = the returned W recalls at least the fraction ``A`` of the
            inputs, ``A`` in (0, 1]; theory ``replica.accuracy_capacity``; for
            solvers other than ``hebbian`` p_c is a lower bound on the accuracy
            capacity of the best memory, said in ``message``).
        ``task_function`` (str)
            ``"module:function"`` replacing :func:`storage_trial` (tests use
            :func:`validation.sweep.synthetic_trial`).
        ``outputs`` (int)
            ``K >= 2`` distinct answers shared by the facts (balanced map ``mu mod K``;
            ``notes/many_to_one.md``); theory ``replica.capacity(d, kappa, outputs=K,
            problem=problem)``.  Default None: one answer per fact.

    Returns
    -------
    CapacityEstimate

    Raises
    ------
    ValueError
        For out-of-range arguments or a bad ``criterion``; before any trial, for a
        solver that cannot run at this size (``validation.solvers.check_problem``:
        ``lp`` at kappa < 1 or too large, memory above the limit); after the trials,
        when every trial failed with an error (the message quotes the first).
    TypeError
        For an unknown keyword.
    """
    start = time.perf_counter()
    design, sweep, extra = _split_settings(design, settings)
    threshold = parse_criterion(extra.get("criterion", "all"))
    m, lenient = _measurement(d, problem, solver, kappa, ensemble, seed, sweep, extra)
    design = design.checked(m.d)
    if extra.get("task_function") is None:
        top_k = int(dict(extra.get("solver_options") or {}).get("top_k", 1))
        theory = theory_capacity(m.d, solver, m.kappa, ensemble, threshold, extra.get("outputs"), problem, top_k)
    else:
        theory = {"p_c": math.nan, "alpha": math.nan, "alpha_c": math.nan, "source": "none (synthetic task)"}
    center = design.center
    if center is None:
        center = theory["p_c"] if math.isfinite(theory["p_c"]) else \
            _p_from_load(m.d, _asymptotic_alpha(solver, m.kappa))
        center = check_real(center, "center", low=2.0)
    counts = TrialCounts(lenient, threshold)
    runner = _PointRunner(m, design.trials, sweep, counts)
    _STARTS[design.kind](runner, design, center)
    _expand(runner, design)
    _refine(runner, design)
    return _estimate(m, design, counts, theory, time.perf_counter() - start, runner.first_error)


# ---------------------------------------------------------------------------------
# The README table "Theory against simulation"
# ---------------------------------------------------------------------------------
#: Rows of the README table: (problem, solver, d, kappa, ensemble).
TABLE_ROWS = tuple([(prob, "optimal", d, 1.0, "gaussian") for d in (16, 32, 64) for prob in ("op", "dp")]
                   + [("op", "optimal", 32, k, "gaussian") for k in (0.25, 0.5)]
                   + [("op", "hebbian", d, 1.0, "gaussian") for d in (32, 64, 128)])


def comparison_row(est: CapacityEstimate) -> dict:
    """One row of the theory-against-simulation table from a capacity estimate."""
    th = est.theory
    th_p = th.get("p_c", math.nan)
    th_a = th.get("alpha", math.nan)
    rel = (est.p_c - th_p) / th_p if math.isfinite(th_p) else math.nan
    inside = bool(est.p_c_low <= th_p <= est.p_c_high) if math.isfinite(th_p) else False
    label = f"{'Hebbian' if est.solver == 'hebbian' else est.solver} {est.problem.upper()}"
    if est.kappa != 1.0:
        label += f" kappa={est.kappa:g}"
    return {"memory": label, "problem": est.problem, "solver": est.solver, "ensemble": est.ensemble,
            "d": est.d, "kappa": est.kappa, "p_c": est.p_c, "p_c_low": est.p_c_low, "p_c_high": est.p_c_high,
            "theory_p_c": th_p, "rel_diff": rel, "theory_inside_ci": inside, "alpha": est.alpha,
            "alpha_low": est.alpha_low, "alpha_high": est.alpha_high, "theory_alpha": th_a,
            "alpha_c": th.get("alpha_c", math.nan), "trials": sum(c.trials for c in est.curve),
            "undecided": est.undecided, "errors": est.errors, "status": est.status, "seconds": est.seconds}


def comparison_markdown(rows) -> str:
    """Markdown of the README table from :func:`comparison_row` dicts."""
    def f(x, digits):
        return "nan" if not math.isfinite(x) else f"{x:.{digits}f}"

    out = ["| memory | d | measured p_c [95% CI] | theory p_c | rel. diff | alpha measured | alpha theory |"
           " trials (undecided) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['memory']} | {r['d']} | {f(r['p_c'], 1)} [{f(r['p_c_low'], 1)}, {f(r['p_c_high'], 1)}] | "
                   f"{f(r['theory_p_c'], 1)} | {f(100 * r['rel_diff'], 1)}% | {f(r['alpha'], 3)} | "
                   f"{f(r['theory_alpha'], 3)} | {r['trials']} ({r['undecided']}) |")
    return "\n".join(out) + "\n"
