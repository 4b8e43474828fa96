"""Measured storage capacity: P(stored) on an adaptive grid of p and the p_c where it is 1/2.

For given (d, problem, solver, kappa, ensemble) every point of a grid of p gets
``trials`` independent instances (seeds from ``SeedSequence(seed, spawn_key=(p, trial))``,
see :func:`validation.sweep.task_seed`).  The grid starts around the theory's
finite-size p_c and is refined where the transition is: a logistic model in ln p,

    P(stored | p) = 1 / (1 + exp(slope * (ln p - ln p_c))),

is fitted to the binomial counts by maximum likelihood, and new points go to the
fitted p_c and to the fitted 20 % and 80 % points.  The 95 % interval of p_c is the
profile-likelihood interval of ln p_c (slope profiled out; deviance <= 3.84).
``undecided`` trials (a solver that stopped without deciding) and ``error`` trials are
counted and reported, never counted as stored or not stored.

alpha = p_c ln p_c / d^2 (natural log).

See ``notes/capacity_estimation.md`` for the design and its justification.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special, stats

from replica.common.checks import check_choice, check_int, check_kappa, check_real

from .sweep import Task, run_tasks, task_seed

__all__ = ["CurvePoint", "CapacityEstimate", "LogisticFit", "estimate_capacity", "fit_logistic",
           "theory_capacity", "storage_trial", "load", "PROBLEMS", "SOLVERS", "ENSEMBLES"]

PROBLEMS = ("op", "dp")
SOLVERS = ("hebbian", "optimal", "lp", "adam")
ENSEMBLES = ("gaussian", "sphere")
_CHI2_95 = float(stats.chi2.ppf(0.95, 1))  # 3.841...
_MAX_SLOPE = 400.0


def load(p, d):
    """alpha = p ln p / d^2 (natural log)."""
    return p * math.log(p) / d ** 2


def _p_from_load(alpha, d):
    """Inverse of :func:`load` on p >= e^{-1}: solve p ln p = alpha d^2 (Lambert W)."""
    x = alpha * d * d
    return float(x / special.lambertw(x).real)


# ---------------------------------------------------------------------------------
# Theory
# ---------------------------------------------------------------------------------
def theory_capacity(d: int, solver: str, kappa: float = 1.0, ensemble: str = "gaussian") -> dict:
    """Finite-size theory prediction matching a measurement.

    ``replica.capacity(d, kappa)`` for ``optimal``/``lp``/``adam`` and
    ``replica.hebbian_capacity(d, ensemble=...)`` for ``hebbian`` (the Hebbian one is
    also given ``kappa`` when it accepts it).

    Returns
    -------
    dict
        ``p_c``, ``alpha``, ``alpha_c`` (the d -> infinity value) and ``source`` (the
        function used).  If the theory function is unavailable, ``p_c`` and ``alpha``
        are ``nan`` and ``source`` says why.
    """
    import replica

    try:
        if solver == "hebbian":
            func = getattr(replica, "hebbian_capacity", None)
            if func is None:
                from replica.hebbian import hebbian_capacity as func
            try:
                res = func(d, kappa=kappa, ensemble=ensemble) if kappa != 1.0 else func(d, ensemble=ensemble)
            except TypeError:
                if kappa != 1.0:
                    raise
                res = func(d, ensemble=ensemble)
            source = "replica.hebbian_capacity"
        else:
            func = getattr(replica, "capacity", None)
            if func is None:
                from replica.finite_size import capacity as func
            res = func(d, kappa)
            source = "replica.capacity"
    except (AttributeError, ImportError) as exc:
        return {"p_c": math.nan, "alpha": math.nan, "alpha_c": math.nan,
                "source": f"unavailable ({type(exc).__name__}: {exc})"}
    get = (lambda name: res.get(name)) if isinstance(res, dict) else (lambda name: getattr(res, name, None))
    out = {"p_c": float(get("p_c")), "alpha": float(get("alpha")),
           "alpha_c": float(get("alpha_c")) if get("alpha_c") is not None else math.nan,
           "source": source}
    stderr = get("stderr")
    if stderr is not None:
        out["stderr"] = float(stderr)
    return out


def _asymptotic_alpha(solver: str, kappa: float) -> float:
    """alpha_c(kappa) = F(kappa)/2 (optimal) or F(kappa)/8 (Hebbian); a fallback grid centre."""
    theta = optimize.brentq(lambda th: 1.0 - (2 * th + math.sin(2 * th)) / math.pi - kappa, 0.0, math.pi / 2)
    big_f = 1.0 - (2 * theta - math.sin(4 * theta) / 2) / math.pi
    return big_f / (8.0 if solver == "hebbian" else 2.0)


# ---------------------------------------------------------------------------------
# Logistic fit and profile-likelihood interval
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogisticFit:
    """Maximum-likelihood logistic fit of P(stored) in ln p.

    Attributes
    ----------
    log_p_c, slope : float
        ``P = 1 / (1 + exp(slope (ln p - log_p_c)))``.
    log_p_c_low, log_p_c_high : float
        95 % profile-likelihood interval of ``log_p_c``.
    bracketed : bool
        The data contain points on both sides of P = 1/2 (both ends of the interval
        were found inside the search range).
    loglik : float
    status : str
        ``"ok"``, ``"separated"`` (the counts jump from all-stored to none-stored:
        slope at its cap, p_c known to lie in the gap) or ``"unbracketed"``.
    """

    log_p_c: float
    slope: float
    log_p_c_low: float
    log_p_c_high: float
    bracketed: bool
    loglik: float
    status: str

    def probability(self, p):
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


def fit_logistic(p, stored, decided) -> LogisticFit:
    """Fit the logistic model to counts and return the profile-likelihood interval.

    Parameters
    ----------
    p : array of int
        Grid points.
    stored, decided : array of int
        Stored count and decided trials (stored + not stored) at each point.

    Returns
    -------
    LogisticFit

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
    i = int(np.argmax(prof))
    # refine the maximum
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
    target = l_max - _CHI2_95 / 2.0

    def excess(c):
        return _profile(c, x, k, n)[0] - target

    bracketed = True
    below = np.flatnonzero((grid < c_hat) & (prof < target))
    above = np.flatnonzero((grid > c_hat) & (prof < target))
    c_low = _endpoint(excess, grid, c_hat, below[-1] if len(below) else None, -1)
    c_high = _endpoint(excess, grid, c_hat, above[0] if len(above) else None, +1)
    if c_low is None:
        c_low, bracketed = lo, False
    if c_high is None:
        c_high, bracketed = hi, False
    # complete separation: every point all-stored or none-stored (slope then at its cap)
    separated = slope >= _MAX_SLOPE * 0.999 and bool(np.all((k == 0) | (k == n)))
    status = "unbracketed" if not bracketed else ("separated" if separated else "ok")
    return LogisticFit(c_hat, slope, float(c_low), float(c_high), bracketed, l_max, status)


# ---------------------------------------------------------------------------------
# Result types
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CurvePoint:
    """Counts at one p: ``trials`` run = stored + not_stored + undecided + errors."""

    p: int
    alpha: float
    trials: int
    stored: int
    not_stored: int
    undecided: int
    errors: int

    @property
    def decided(self) -> int:
        return self.stored + self.not_stored

    def to_dict(self) -> dict:
        return {"p": self.p, "alpha": self.alpha, "trials": self.trials, "stored": self.stored,
                "not_stored": self.not_stored, "undecided": self.undecided, "errors": self.errors}


@dataclass(frozen=True)
class CapacityEstimate:
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
        Trials that were undecided or failed (excluded from the fit).
    status : str
        ``"ok"``, ``"separated"`` (interval from the gap between all-stored and
        none-stored points) or ``"unbracketed"`` (P = 1/2 not inside the grid; the
        interval is clipped and p_c is unreliable).
    message : str
    seed, trials : int
        Base seed and trials per grid point per round.
    seconds : float
    solver_options : dict
    design : str
        ``"grid"`` or ``"bracket"``: how the first points were placed.
    """

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
    message: str
    seed: int
    trials: int
    seconds: float
    solver_options: dict = field(default_factory=dict)
    design: str = "grid"

    def to_dict(self) -> dict:
        return {"d": self.d, "problem": self.problem, "solver": self.solver, "kappa": self.kappa,
                "ensemble": self.ensemble, "p_c": self.p_c, "p_c_low": self.p_c_low,
                "p_c_high": self.p_c_high, "alpha": self.alpha, "alpha_low": self.alpha_low,
                "alpha_high": self.alpha_high, "slope": self.slope,
                "curve": [c.to_dict() for c in self.curve],
                "theory": {k: self.theory[k] for k in ("p_c", "alpha", "alpha_c") if k in self.theory},
                "theory_source": self.theory.get("source"),
                "undecided": self.undecided, "errors": self.errors, "status": self.status,
                "message": self.message, "seed": self.seed, "trials": self.trials,
                "seconds": self.seconds, "solver_options": dict(self.solver_options),
                "design": self.design}


# ---------------------------------------------------------------------------------
# The task function
# ---------------------------------------------------------------------------------
def storage_trial(task: Task) -> dict:
    """One storage trial: build the instance from the task's seed, solve it, report.

    Returns
    -------
    dict
        ``status`` (the solver's ``stored`` / ``not_stored`` / ``undecided``), ``stored``,
        ``instance_seed`` and the solver's diagnostics (margin, iterations, ...).
    """
    from . import make_instance, solve
    from .solvers import solve_arguments

    seed = task_seed(task.seed, task.p, task.trial)
    inst = make_instance(task.d, task.p, problem=task.problem, ensemble=task.ensemble, seed=seed)
    sol = solve(inst, solver=task.solver, kappa=task.kappa, **solve_arguments(task.options))
    out = {k: v for k, v in sol.to_dict().items() if not isinstance(v, (list, dict))}
    out["instance_seed"] = seed
    status = sol.status
    if status == "stored" and not sol.stored:  # never trust a label over the verified recall
        status = "undecided"
    out["status"] = status
    out["stored"] = bool(sol.stored) if status != "undecided" else None
    return out


# ---------------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------------
def estimate_capacity(d: int, problem: str = "op", solver: str = "optimal", kappa: float = 1.0,
                      ensemble: str = "gaussian", *, trials: int = 20, seed: int = 0,
                      rounds: int = 2, initial_points: int = 5, initial_width: float = 0.25,
                      executor=None, store=None, progress=None, experiment: str = "capacity",
                      solver_options: dict | None = None, task_function: str | None = None,
                      undecided_as_not_stored: bool | None = None,
                      center: float | None = None, max_expansions: int = 6,
                      design: str = "auto", bracket_step: float = 0.05) -> CapacityEstimate:
    """Measure P(stored) on an adaptive grid of p and locate p_c with a 95 % interval.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    problem : {"op", "dp"}
    solver : {"hebbian", "optimal", "lp", "adam"}
    kappa : float
        Rank fraction in (0, 1].
    ensemble : {"gaussian", "sphere"}
    trials : int
        Independent instances per grid point per round, ``>= 1``.
    seed : int
        Base seed (``>= 0``); trial t at p uses ``task_seed(seed, p, t)``.
    rounds : int
        Refinement rounds after the initial grid (each adds up to 3 points).
    initial_points : int
        Points of the initial grid (log-spaced), ``>= 2``.
    initial_width : float
        Half width of the initial grid in ln p around its centre.
    executor : optional
        From :func:`validation.sweep.make_executor`; ``None`` runs serially.
    store : ResultStore, optional
        Persist and reuse trials (resumable).
    progress : bool, optional
        Progress bar on stderr.
    experiment : str
        Experiment name in the store key.
    solver_options : dict, optional
        Passed to ``validation.solve``.  For ``optimal``, ``refine`` defaults to False
        (only storability is measured).
    undecided_as_not_stored : bool, optional
        Count ``undecided`` trials (budget exhausted without a storing W) as not stored
        in the fit.  The estimate is then the threshold for *finding* a storing memory
        within the budget, a lower bound on the storability threshold, and the message
        says so.  Default (None): True for the solvers that cannot certify
        non-storability (``adam``, and ``optimal`` at rank kappa d < d, a non-convex
        problem), False otherwise (undecided trials are then excluded from the fit).
    task_function : str, optional
        ``"module:function"`` replacing :func:`storage_trial` (tests use
        :func:`validation.sweep.synthetic_trial`).
    center : float, optional
        Centre of the initial grid (default: the theory p_c; the asymptotic
        alpha_c(kappa) if the theory is unavailable).
    max_expansions : int
        How often the grid may be extended outwards to bracket P = 1/2.
    design : {"auto", "grid", "bracket"}
        How the first points are placed.  ``"grid"``: ``initial_points`` log-spaced
        points over ``exp(+-initial_width)`` around the centre, then outward steps of
        ``exp(2 initial_width)`` until P = 1/2 is bracketed.  ``"bracket"``: the centre
        alone, then one point at a time, ``exp(+-bracket_step)`` away from the last one in
        the direction its frequency points to, the step doubling each time, until
        bracketed.  ``"auto"`` (default): ``"bracket"`` for ``d >= 128`` (the theory is
        within a few per cent of the measured p_c and the transition is narrow, so the
        wide grid spends most trials far above p_c, where deciding "not stored" costs
        the most: at d = 256, 60-170 s per trial at 1.13-1.28 p_c against 11-26 s at
        p_c, measured), ``"grid"`` below.  Refinement rounds are the same in both.
    bracket_step : float
        First step of the bracketing design in ln p.

    Returns
    -------
    CapacityEstimate

    Raises
    ------
    ValueError
        For out-of-range arguments.
    """
    start = time.perf_counter()
    d = check_int(d, "d", low=2)
    check_choice(problem, "problem", PROBLEMS)
    if task_function is None:
        check_choice(solver, "solver", SOLVERS)
    kappa = float(check_kappa(kappa))
    check_choice(ensemble, "ensemble", ENSEMBLES)
    trials = check_int(trials, "trials", low=1)
    seed = check_int(seed, "seed", low=0)
    rounds = check_int(rounds, "rounds", low=0)
    initial_points = check_int(initial_points, "initial_points", low=2)
    initial_width = check_real(initial_width, "initial_width", low=0.0, low_open=True)
    check_choice(design, "design", ("auto", "grid", "bracket"))
    bracket_step = check_real(bracket_step, "bracket_step", low=0.0, low_open=True)
    if design == "auto":
        design = "bracket" if d >= 128 else "grid"
    if undecided_as_not_stored is None:
        undecided_as_not_stored = solver == "adam" or (solver == "optimal" and float(kappa) < 1.0)
    solver_options = dict(solver_options or {})
    if solver == "optimal" and task_function is None:
        # storability is all that is measured: skip the max-margin refinement after "stored"
        solver_options.setdefault("refine", False)
    options = tuple(sorted(solver_options.items()))
    function = task_function or "validation.capacity:storage_trial"

    theory = theory_capacity(d, solver, kappa, ensemble) if task_function is None else \
        {"p_c": math.nan, "alpha": math.nan, "alpha_c": math.nan, "source": "none (synthetic task)"}
    if center is None:
        center = theory["p_c"] if math.isfinite(theory["p_c"]) else \
            _p_from_load(_asymptotic_alpha(solver, kappa), d)
    center = check_real(center, "center", low=2.0)

    counts: dict = {}       # p -> [stored, not_stored, undecided, errors, trials_run]

    def run_points(ps):
        tasks = []
        for p in ps:
            done = counts.get(p, [0, 0, 0, 0, 0])[4]
            tasks += [Task(function, experiment, problem, solver, ensemble, d, int(p), kappa, seed, t, options)
                      for t in range(done, done + trials)]
        rep = run_tasks(tasks, store=store, executor=executor, progress=progress,
                        desc=f"{problem}/{solver} d={d} kappa={kappa:g}")
        for t in tasks:
            rec = rep.records[t]
            c = counts.setdefault(t.p, [0, 0, 0, 0, 0])
            c[{"stored": 0, "not_stored": 1, "undecided": 2, "error": 3}[rec["status"]]] += 1
            c[4] += 1

    def snap(ps):
        return sorted({max(2, int(round(p))) for p in ps})

    def sides():
        """(has a point with frequency > 1/2, has one with frequency < 1/2) among decided."""
        high = low = False
        for c in counts.values():
            n = _decided(c, undecided_as_not_stored)
            if n:
                high |= c[0] / n > 0.5
                low |= c[0] / n < 0.5
        return high, low

    def mostly_undecided(p):
        c = counts[p]
        return (0 if undecided_as_not_stored else c[2]) + c[3] > c[4] / 2

    if design == "bracket":
        last = snap([center])[0]
        run_points([last])
        step = bracket_step
        for _ in range(max_expansions):
            high, low = sides()
            if (high and low) or mostly_undecided(last):
                break
            c = counts[last]
            n = _decided(c, undecided_as_not_stored)
            up = c[0] / n >= 0.5  # mostly stored here: P = 1/2 lies at larger p
            new = [p for p in snap([last * math.exp(step if up else -step)]) if p not in counts]
            if not new:
                break
            last = new[0]
            run_points([last])
            step *= 2
    else:
        run_points(snap(center * np.exp(np.linspace(-initial_width, initial_width, initial_points))))
    # extend outwards until P = 1/2 is bracketed by the observed frequencies
    for _ in range(max_expansions):
        if not any(_decided(c, undecided_as_not_stored) for c in counts.values()):
            break  # nothing decided (every trial undecided or failed): more points will not help
        have_high, have_low = sides()
        if have_high and have_low:
            break
        ps = sorted(counts)
        step = 2 * initial_width
        if not have_low:    # everything stored: go to larger p
            new = [ps[-1] * math.exp(step)]
        else:               # nothing stored: go to smaller p
            new = [max(2.0, ps[0] * math.exp(-step))]
        new = [p for p in snap(new) if p not in counts]
        if not new:
            break
        run_points(new)
        if mostly_undecided(new[0]):
            break  # mostly undecided out there: going further would not bracket P = 1/2
    for _ in range(rounds):
        fit = _fit(counts, undecided_as_not_stored)
        if fit is None:
            break
        lo_q, hi_q = fit.quantile(0.8), fit.quantile(0.2)
        new = snap([math.exp(fit.log_p_c), lo_q, hi_q])
        # keep new points near the data (a flat fit can put quantiles far away)
        pmin, pmax = min(counts) / 2, max(counts) * 2
        new = [p for p in new if pmin <= p <= pmax]
        if new:
            run_points(new)
    fit = _fit(counts, undecided_as_not_stored)
    curve = tuple(CurvePoint(p, load(p, d), c[4], c[0], c[1], c[2], c[3])
                  for p, c in sorted(counts.items()))
    undecided = sum(c.undecided for c in curve)
    errors = sum(c.errors for c in curve)
    total = sum(c.trials for c in curve)
    msgs = []
    if fit is None:
        p_c = p_lo = p_hi = slope = math.nan
        status = "unbracketed"
        msgs.append("no decided trials: nothing to fit")
    else:
        p_c, p_lo, p_hi = (math.exp(v) for v in (fit.log_p_c, fit.log_p_c_low, fit.log_p_c_high))
        slope = fit.slope
        status = fit.status
        if status == "unbracketed":
            msgs.append("P(stored) = 1/2 is not bracketed by the grid; p_c is an extrapolation")
        elif status == "separated":
            msgs.append("no grid point inside the transition: interval from the gap between "
                        "all-stored and none-stored points")
    if undecided and undecided_as_not_stored:
        msgs.append(f"{undecided}/{total} trials undecided, counted as not stored (no storing W "
                    "found within the budget): p_c is a lower bound on the storability threshold")
    elif undecided:
        msgs.append(f"{undecided}/{total} trials undecided (excluded from the fit)")
    if errors:
        msgs.append(f"{errors}/{total} trials failed with an error (excluded; see the store)")
    if (0 if undecided_as_not_stored else undecided) + errors > 0.1 * total:
        msgs.append("WARNING: more than 10% of trials excluded; p_c may be biased")

    def alpha_of(p):
        return load(p, d) if math.isfinite(p) and p > 1 else math.nan

    return CapacityEstimate(d, problem, solver, kappa, ensemble, p_c, p_lo, p_hi, alpha_of(p_c),
                            alpha_of(p_lo), alpha_of(p_hi), slope, curve, theory, undecided, errors,
                            status, "; ".join(msgs) or "ok", seed, trials, time.perf_counter() - start,
                            solver_options, design)


def _decided(c, undecided_as_not_stored=False):
    """Trials entering the fit at one point: stored + not stored (+ undecided if counted as failures)."""
    return c[0] + c[1] + (c[2] if undecided_as_not_stored else 0)


def _fit(counts, undecided_as_not_stored=False):
    ps = sorted(counts)
    stored = [counts[p][0] for p in ps]
    decided = [_decided(counts[p], undecided_as_not_stored) for p in ps]
    if sum(decided) == 0:
        return None
    return fit_logistic(ps, stored, decided)


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
