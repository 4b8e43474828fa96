"""Measured recall accuracy against the load p, next to the theory curve.

The *accuracy* of a memory W on an instance is the fraction of its ``p`` inputs that
W recalls (``Solution.recall_fraction``, verified in float64).  For each load ``p``,
``trials`` independent instances are built and solved through the sweep machinery
(:func:`validation.runtime.sweep.run_tasks` with :func:`validation.capacity.storage_trial`;
instance seeds ``task_seed(seed, p, trial)``, so a capacity run and an accuracy run with
the same base seed see the same instances), and the mean accuracy gets a 95 %
confidence interval.  Theory beside it: :func:`replica.hebbian_accuracy` (exact in the
finite-size Hebbian model) for ``hebbian``; :func:`replica.variants.optimal_accuracy` (the
replica-symmetric prediction of the *largest* accuracy) for ``optimal`` and ``lp``;
none for ``adam``.

What the measurement is depends on the solver (``notes/recall_accuracy.md``, "In
simulation"): for ``hebbian`` it is the accuracy of the Hebbian memory itself; for
``optimal``, ``lp`` and ``adam`` it is the accuracy of the returned W.  Where every
trial stores all ``p`` inputs that is the best accuracy (1); above the all-stored
capacity the optimal solver returns the squared-hinge minimiser, which does not
maximise the number of recalled inputs, so its accuracy is only a *lower bound* on the
best accuracy.  Each point says which (``bound``).  With
``solver_options={"give_up": True}`` the optimal solver searches for the most recalled
inputs (:func:`validation.solvers.searches.solve_give_up`): a tighter lower bound, still
labelled ``lower_bound`` (``notes/recall_accuracy.md``, "Give-up mode").
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import stats

from replica.common.checks import check_choice, check_int, check_kappa, check_real
from replica.common.results import Result
from replica.common.seeds import resolve_seed

from ..capacity.loads import load, p_from_load
from ..capacity.trials import STORAGE_TRIAL, instance_options
from ..instances.ensembles import ENSEMBLES, PROBLEMS
from .intervals import wilson_interval
from ..solvers.engine.registry import HEBBIAN_THEORY, OPTIMAL_THEORY, solver_names, solver_spec
from ..runtime.sweep import Task, run_tasks

__all__ = ["AccuracySettings", "AccuracyPoint", "AccuracyCurve", "measure_accuracy", "loads_from_alpha",
           "theory_accuracy"]

_CONFIDENCE = 0.95
_Z = float(stats.norm.ppf(0.5 + _CONFIDENCE / 2))  # normal quantile of the Wilson interval
_LOWER_BOUND = ("accuracy of the returned W (for optimal above the all-stored capacity: the squared-hinge "
                "iterate at which non-storability was certified, not an accuracy maximiser; for adam: the "
                "trained W): a lower bound on the best accuracy")
_GIVE_UP = ("accuracy of the W of the give-up search (optimal with give_up=True: the costliest unrecalled inputs "
            "given up and the rest re-solved until every kept input is recalled): a lower bound on the best "
            "accuracy")


def loads_from_alpha(d: int, alphas) -> list:
    """Integer loads ``p >= 2`` nearest to ``p ln p = alpha d^2`` for each ``alpha > 0``."""
    d = check_int(d, "d", low=2)
    out = []
    for a in alphas:
        a = check_real(a, "alpha", low=0.0, low_open=True)
        out.append(max(2, int(round(p_from_load(d, a)))))
    return out


def theory_accuracy(d: int, p: int, solver: str, ensemble: str = "gaussian", kappa: float = 1.0):
    """``(value, stderr, source)`` of the theory curve at ``p`` (NaN and ``"none ..."`` without one).

    ``replica.hebbian_accuracy`` (exact in the finite-size Hebbian model, kappa = 1
    only) for ``hebbian``; ``replica.variants.optimal_accuracy`` (replica-symmetric prediction of
    the largest accuracy, with its Monte-Carlo standard error) for ``optimal``/``lp``;
    none for ``adam``.  ``notes/recall_accuracy.md``.
    """
    import replica

    memory = solver_spec(solver).accuracy_theory
    if memory == HEBBIAN_THEORY:
        if kappa != 1.0:
            return math.nan, math.nan, "none (no finite-size theory of the rank-truncated Hebbian memory)"
        return float(replica.hebbian_accuracy(d, p, ensemble)), 0.0, "replica.hebbian_accuracy"
    if memory == OPTIMAL_THEORY:
        res = replica.variants.optimal_accuracy(d, p, kappa)
        return (float(res.accuracy), float(res.stderr),
                "replica.variants.optimal_accuracy (replica-symmetric prediction)")
    return math.nan, math.nan, f"none ({solver} has no accuracy theory)"


# ---------------------------------------------------------------------------------
# Result types
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class AccuracyPoint(Result):
    """Measured accuracy at one load ``p`` (``trials`` instances) beside the theory.

    Attributes
    ----------
    p : int
    alpha : float
        ``p ln p / d^2``.
    trials, errors : int
        Instances that gave an accuracy, and trials that failed with an error (left out).
    stored : int
        Trials whose W recalls every input.
    accuracy : float
        Mean over the trials of the per-instance recall fraction.
    stderr : float
        Between-instance standard error ``sd / sqrt(trials)``.
    ci_low, ci_high : float
        95 % interval of the expected accuracy: ``accuracy +- t_{0.975, n-1} sd / sqrt(n)``
        over the ``n = trials`` instances (the instances are independent; the inputs of
        one instance share W and are not, so a binomial interval over all ``n p``
        inputs would not be justified).  With zero spread (every instance the same
        accuracy, e.g. all 1) this interval is empty; the pooled Wilson score interval
        over the ``n p`` inputs is used instead and ``status`` is ``"degenerate"``.
    theory, theory_stderr : float
        The theory value at ``p`` and its Monte-Carlo standard error (NaN: no theory).
    z : float
        ``(accuracy - theory) / sqrt(stderr^2 + theory_stderr^2)`` (NaN when undefined).
    bound : str
        ``"exact"`` (the accuracy of the memory named by the solver: the Hebbian rule,
        or every trial stored so the best accuracy is 1) or ``"lower_bound"`` (the
        accuracy of the returned W of a solver that does not maximise the accuracy).
    status : str
        ``"ok"`` (t interval), ``"degenerate"`` (zero spread: Wilson interval of the
        pooled inputs) or ``"failed"`` (fewer than 2 trials gave an accuracy; the
        numbers are NaN, ``None`` in ``to_dict``).
    converged : bool
        ``status != "failed"``.
    message : str
    """

    STATUSES: ClassVar[tuple] = ("ok", "degenerate", "failed")

    p: int
    alpha: float
    trials: int
    errors: int
    stored: int
    accuracy: float
    stderr: float
    ci_low: float
    ci_high: float
    theory: float
    theory_stderr: float
    z: float
    bound: str
    status: str
    converged: bool
    message: str

    @property
    def theory_inside(self) -> bool:
        """The theory value lies in ``[ci_low, ci_high]``."""
        return bool(self.ci_low <= self.theory <= self.ci_high)

    def _payload(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["theory_inside"] = self.theory_inside
        return out

    @classmethod
    def from_dict(cls, data: dict) -> AccuracyPoint:
        """The point of a :meth:`to_dict` payload (``None`` read back as NaN), e.g. from a saved JSON file."""
        return cls(**{f.name: math.nan if data[f.name] is None else data[f.name] for f in dataclasses.fields(cls)})


def _point(d, p, fractions, errors, stored, theory, exact) -> AccuracyPoint:
    """The :class:`AccuracyPoint` of the per-instance recall fractions at ``p``."""
    n = len(fractions)
    value, theory_se = theory
    bound = "exact" if exact or stored == n > 0 else "lower_bound"
    if n < 2:
        return AccuracyPoint(p, load(d, p), n, errors, stored, math.nan, math.nan, math.nan, math.nan, value,
                             theory_se, math.nan, bound, "failed", False,
                             f"{n} trial(s) gave an accuracy ({errors} errors): at least 2 are needed")
    a = np.asarray(fractions, dtype=float)
    spread = bool(np.any(a != a[0]))
    mean, sd = (float(a.mean()), float(a.std(ddof=1))) if spread else (float(a[0]), 0.0)
    stderr = sd / math.sqrt(n)
    if spread:
        half = float(stats.t.ppf(0.5 + _CONFIDENCE / 2, n - 1)) * stderr
        low, high, status = max(0.0, mean - half), min(1.0, mean + half), "ok"
        message = f"mean of {n} instances +- t_{{0.975,{n - 1}}} sd/sqrt(n)"
    else:
        low, high = (float(v) for v in wilson_interval(mean * n * p, n * p, z=_Z))
        status = "degenerate"
        message = (f"all {n} instances have accuracy {mean:.6g}: Wilson interval of the {n * p} pooled "
                   "inputs (treats inputs as independent)")
    scale = math.sqrt(stderr ** 2 + theory_se ** 2)
    z = (mean - value) / scale if scale > 0 and math.isfinite(value) else math.nan
    if errors:
        message += f"; {errors} trials failed with an error (left out)"
    return AccuracyPoint(p, load(d, p), n, errors, stored, mean, stderr, low, high, value, theory_se, z,
                         bound, status, True, message)


@dataclass(frozen=True)
class AccuracyCurve(Result):
    """Measured accuracy against the load for one (d, problem, solver, ensemble, kappa).

    Attributes
    ----------
    d, problem, solver, ensemble, kappa
    points : tuple of AccuracyPoint
        One per load, in increasing ``p``.
    theory_source : str
        The theory curve: ``replica.hebbian_accuracy``, ``replica.variants.optimal_accuracy``
        (replica-symmetric prediction) or ``none ...``.
    measures : str
        What the measured accuracy is, in words.
    seed, trials : int
        Base seed (trial t at p uses ``task_seed(seed, p, t)``) and trials per load.
    seconds : float
    status : str
        ``"ok"`` (every point measured, every measurement exact for its memory),
        ``"lower_bound"`` (every point measured, at least one is the accuracy of a
        returned W that need not be the best: a lower bound on the best accuracy) or
        ``"failed"`` (some point has fewer than 2 trials with an accuracy).
    converged : bool
        False exactly when some point failed.
    message : str
        What the status means for this solver.
    """

    STATUSES: ClassVar[tuple] = ("ok", "lower_bound", "failed")

    d: int
    problem: str
    solver: str
    ensemble: str
    kappa: float
    points: tuple
    theory_source: str
    measures: str
    seed: int
    trials: int
    seconds: float
    status: str
    converged: bool
    message: str

    def rows(self) -> list:
        """One JSON-safe dict per point, with the curve's d, solver and ensemble."""
        head = {"d": self.d, "problem": self.problem, "solver": self.solver, "ensemble": self.ensemble,
                "kappa": self.kappa}
        return [{**head, **pt.to_dict()} for pt in self.points]

    def _payload(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["points"] = [pt.to_dict() for pt in self.points]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> AccuracyCurve:
        """The curve of a :meth:`to_dict` payload, e.g. from a saved JSON file.

        Examples
        --------
        >>> from validation.measurements.accuracy import measure_accuracy
        >>> curve = measure_accuracy(8, [6, 10], solver="hebbian", trials=4, seed=0, progress=False)
        >>> AccuracyCurve.from_dict(curve.to_dict()).to_dict() == curve.to_dict()
        True
        """
        fields = {f.name: data[f.name] for f in dataclasses.fields(cls)}
        fields["points"] = tuple(AccuracyPoint.from_dict(pt) for pt in data["points"])
        return cls(**fields)


# ---------------------------------------------------------------------------------
# The measurement
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class AccuracySettings:
    """Settings of :func:`measure_accuracy` beyond the measurement's key.

    Attributes
    ----------
    trials : int
        Instances per load, ``>= 2``.
    solver_options : dict
        Passed to ``validation.solve`` through ``validation.solvers.solve_arguments``
        (``max_iter``, ``time_limit``, solver-specific keys).  For ``optimal``,
        ``refine`` defaults to False (the max-margin refinement does not change which
        inputs are recalled).
    executor : optional
        From :func:`validation.runtime.sweep.make_executor`; ``None`` runs serially.
    store : ResultStore, optional
        Persist and reuse trials.
    progress : bool, optional
        Progress bar on stderr.
    experiment : str
        Experiment name in the store key.
    """

    trials: int = 20
    solver_options: dict = dataclasses.field(default_factory=dict)
    executor: object = None
    store: object = None
    progress: bool | None = None
    experiment: str = "accuracy"


_SETTING_KEYS = frozenset(f.name for f in dataclasses.fields(AccuracySettings))


def _settings(settings: dict) -> AccuracySettings:
    settings = dict(settings)
    base = settings.pop("settings", None) or AccuracySettings()
    unknown = set(settings) - _SETTING_KEYS
    if unknown:
        raise TypeError(f"measure_accuracy() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    base = dataclasses.replace(base, **settings)
    return dataclasses.replace(base, trials=check_int(base.trials, "trials", low=2))


def _template(d, problem, solver, ensemble, kappa, seed, s: AccuracySettings) -> Task:
    """The Task of trial 0 at p = 0, arguments checked (``ValueError`` naming the argument)."""
    d = check_int(d, "d", low=2)
    check_choice(problem, "problem", PROBLEMS)
    check_choice(solver, "solver", solver_names())
    check_choice(ensemble, "ensemble", ENSEMBLES)
    kappa = float(check_kappa(kappa))
    options = solver_spec(solver).sweep_task_options(d, kappa, s.solver_options, restarts=False)
    options.update(instance_options(problem))
    return Task(STORAGE_TRIAL, s.experiment, problem, solver, ensemble, d, 0, kappa,
                resolve_seed(seed), 0, tuple(sorted(options.items())))


def _measured(solver, options) -> str:
    """What the curve measures (the lower-bound text of the solver, or of the give-up search)."""
    return _GIVE_UP if solver_spec(solver).has_search_modes and dict(options or {}).get("give_up") else _LOWER_BOUND


def _curve_status(points, solver, options=None):
    if any(pt.status == "failed" for pt in points):
        return "failed", "some load has fewer than 2 trials with an accuracy"
    if any(pt.bound == "lower_bound" for pt in points):
        return "lower_bound", f"{solver}: {_measured(solver, options)} where not every trial stored all inputs"
    return "ok", "ok"


def measure_accuracy(d, loads, *, problem="op", solver="hebbian", ensemble="gaussian", kappa=1.0, seed=None,
                     **settings) -> AccuracyCurve:
    """Mean recall accuracy against the load ``p``, with 95 % intervals, beside the theory.

    See ``notes/recall_accuracy.md`` ("In simulation").

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    loads : sequence of int
        Loads ``p >= 2`` (see :func:`loads_from_alpha` for loads given as alpha).
    problem : {"op", "dp"}
    solver : {"hebbian", "optimal", "lp", "adam", "svp"}
    ensemble : {"gaussian", "sphere"}
    kappa : float
        Rank fraction in (0, 1].
    seed : None, int, SeedSequence or Generator
        Base seed (``None``: ``DEFAULT_SEED``); trial t at p uses ``task_seed(seed, p, t)``.
    **settings
        Fields of :class:`AccuracySettings` (``trials``, ``solver_options``,
        ``executor``, ``store``, ``progress``, ``experiment``) or a whole
        ``settings=AccuracySettings(...)``.

    Returns
    -------
    AccuracyCurve

    Raises
    ------
    ValueError
        For out-of-range arguments (a load below 2, ``trials < 2``, unknown names).
    TypeError
        For an unknown keyword.
    """
    start = time.perf_counter()
    s = _settings(settings)
    m = _template(d, problem, solver, ensemble, kappa, seed, s)
    ps = sorted({check_int(p, "p", low=2) for p in loads})
    if not ps:
        raise ValueError("loads must hold at least one p >= 2, got none")
    tasks = [dataclasses.replace(m, p=p, trial=t) for p in ps for t in range(s.trials)]
    rep = run_tasks(tasks, store=s.store, executor=s.executor, progress=s.progress,
                    desc=f"accuracy {m.problem}/{m.solver} d={m.d}")
    points, source = [], ""
    exact = solver_spec(solver).accuracy_is_exact
    for p in ps:
        recs = [rep.records[t] for t in tasks if t.p == p]
        good = [r for r in recs if r["status"] != "error" and r.get("recall_fraction") is not None]
        value, theory_se, source = theory_accuracy(m.d, p, solver, ensemble, m.kappa)
        points.append(_point(m.d, p, [float(r["recall_fraction"]) for r in good], len(recs) - len(good),
                             sum(bool(r.get("stored")) for r in good), (value, theory_se), exact))
    status, message = _curve_status(points, solver, s.solver_options)
    measures = "accuracy of the Hebbian memory" if exact else _measured(solver, s.solver_options) + \
        " (exact, = 1, where every trial stored all inputs)"
    return AccuracyCurve(m.d, m.problem, m.solver, m.ensemble, m.kappa, tuple(points), source, measures, m.seed,
                         s.trials, time.perf_counter() - start, status, status != "failed", message)
