"""One storage trial (the sweep task of a capacity estimate) and the counting of its verdicts.

A trial builds its instance from ``task_seed(seed, p, trial)`` and solves it
(:func:`storage_trial`); :class:`TrialCounts` keeps the counts per grid point under the
criterion (``"all"`` or ``"accuracy:A"``) and fits them.
"""

from __future__ import annotations

from ..instances.ensembles import EmbeddingModel, FactSettings, check_generator, make_instance
from ..solvers import check_problem, solve, solve_arguments
from ..solvers.engine.registry import solver_spec
from ..runtime.sweep import Task, task_seed
from .fit import LogisticFit, fit_logistic
from .results import CurvePoint

__all__ = ["STORAGE_TRIAL", "storage_trial", "record_status", "split_instance_options", "instance_options",
           "trial_instance", "check_trials", "TrialCounts", "criterion_message", "estimate_message"]

STORAGE_TRIAL = "validation.capacity:storage_trial"
"""The ``function`` of the storage-trial tasks (part of every stored trial's key)."""


def split_instance_options(task: Task):
    """``(instance options, solver settings)`` from the task options: ``outputs`` and ``generator``
    (each None when absent) are for the instance, the rest for the solver."""
    settings = dict(task.options)
    return {"outputs": settings.pop("outputs", None), "generator": settings.pop("generator", None)}, settings


def instance_options(problem: str, generator=None) -> dict:
    """Task options of the instance family: ``{"generator": g}`` for the DP (``g`` checked by
    :func:`validation.instances.ensembles.check_generator`, default the current generator), none for the OP."""
    return {"generator": check_generator(generator)} if problem == "dp" else {}


def trial_instance(task: Task, seed: int):
    """``(instance, solver settings)`` of a storage or measurement trial: the instance options
    (``outputs``, ``K = p`` below ``p = K``; ``generator``) go to :func:`validation.make_instance`,
    the rest to the solver."""
    family, settings = split_instance_options(task)
    outputs = family["outputs"]
    if outputs is not None:  # below p = K every fact has its own answer: K = p
        outputs = min(int(outputs), task.p)
    inst = make_instance(task.d, task.p, problem=task.problem, seed=seed, generator=task.generator,
                         embeddings=EmbeddingModel(task.ensemble), facts=FactSettings(outputs=outputs))
    return inst, settings


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
    The options ``outputs`` (``K`` distinct answers, balanced map ``mu mod K``; at ``p < K``
    it is ``p``) and ``generator`` (DP) go to :func:`validation.make_instance`, not to the
    solver (:func:`trial_instance`).
    """
    seed = task_seed(task.seed, task.p, task.trial)
    inst, settings = trial_instance(task, seed)
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


def check_trials(template: Task, p: int) -> None:
    """``validation.solvers.check_problem`` for the storage trials of ``template`` up to size ``p``."""
    if template.function != STORAGE_TRIAL:
        return
    check_problem(template.d, int(p), template.problem, template.solver, template.kappa,
                  solve_arguments(split_instance_options(template)[1]).get("options"))


_STATUS_INDEX = {"stored": 0, "not_stored": 1, "undecided": 2, "error": 3, "not_found": 5}


class TrialCounts:
    """Counts per grid point: ``p -> [stored, not_stored, undecided, errors, trials, not_found]``.

    ``undecided_as_not_stored`` decides whether undecided trials enter the fit as
    failures (see :func:`estimate_capacity`).  With an accuracy ``threshold`` a record
    counts as stored when its ``recall_fraction`` is at least the threshold and as not
    stored otherwise (:meth:`classify`).  ``limit`` is the largest p that can be measured
    (the N facts of given embeddings; None: no limit): a point above it stands for the
    limit itself in the look-ups (``p in counts``, :meth:`done`, :meth:`decided`,
    :meth:`frequency`, :meth:`mostly_undecided`), so a design that steps past the limit
    finds it measured there.
    """

    def __init__(self, undecided_as_not_stored: bool = False, threshold: float | None = None,
                 limit: int | None = None):
        self.lenient = undecided_as_not_stored
        self.threshold = threshold
        self.limit = limit
        self.by_p: dict = {}

    def key(self, p):
        """The grid point that stands for ``p``: ``p`` itself, or the ``limit`` when ``p`` lies above it."""
        return p if self.limit is None or p <= self.limit else self.limit

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
        return self.key(p) in self.by_p

    def points(self) -> list:
        """The grid points so far, sorted."""
        return sorted(self.by_p)

    def done(self, p) -> int:
        """Trials run at ``p`` so far (the next trial index)."""
        p = self.key(p)
        return self.by_p[p][4] if p in self.by_p else 0

    def add(self, p, status: str) -> None:
        """Count one trial at ``p`` (not above ``limit``) with record status ``status``."""
        if self.limit is not None and p > self.limit:
            raise ValueError(f"p must lie in [2, {self.limit}] (the limit of the counts), got {p}")
        c = self.by_p.setdefault(p, [0, 0, 0, 0, 0, 0])
        c[_STATUS_INDEX[status]] += 1
        c[4] += 1

    def decided(self, p) -> int:
        """Trials entering the fit at ``p``: stored + not stored + not found (+ undecided if counted as failures)."""
        c = self.by_p[self.key(p)]
        return c[0] + c[1] + c[5] + (c[2] if self.lenient else 0)

    def frequency(self, p) -> float:
        """Stored fraction of the decided trials at ``p``."""
        return self.by_p[self.key(p)][0] / self.decided(p)

    def any_decided(self) -> bool:
        return any(self.decided(p) for p in self.by_p)

    def stored_up_to_limit(self) -> bool:
        """Every decided trial at every point was stored, and some were decided at ``limit`` itself.

        Then P(stored) = 1/2 lies above the limit: with N given facts, all N are stored and
        p_c > N.  False without a limit.
        """
        if self.limit is None or self.limit not in self.by_p or not self.decided(self.limit):
            return False
        return all(self.by_p[p][0] == self.decided(p) for p in self.by_p)

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
        c = self.by_p[self.key(p)]
        return (0 if self.lenient else c[2]) + c[3] > c[4] / 2

    def fit(self) -> LogisticFit:
        """:func:`fit_logistic` of the counts; status ``"failed"`` without decided trials."""
        ps = self.points()
        decided = [self.decided(p) for p in ps]
        if sum(decided) == 0:
            return LogisticFit.with_status("failed")
        return fit_logistic(ps, [self.by_p[p][0] for p in ps], decided)

    def curve(self, d, kappa=1.0) -> tuple:
        return tuple(CurvePoint.from_counts(d, p, self.by_p[p], kappa) for p in self.points())


def criterion_message(threshold: float, solver: str) -> str:
    """What a capacity at the accuracy ``threshold`` means for ``solver``."""
    head = (f"accuracy criterion: a trial counts as stored when the {{}} recalls >= {threshold:g} of the inputs "
            f"(p_c: half the instances reach it; the theory: mean accuracy = {threshold:g})")
    if solver_spec(solver).accuracy_is_exact:
        return head.format("Hebbian W") + " (exact for the Hebbian memory)"
    return (head.format("returned W") + f"; {solver} does not maximise the accuracy where not every input "
            "can be stored, so p_c is a LOWER BOUND on the accuracy capacity of the best memory")


def estimate_message(status_message, curve, counts: TrialCounts, solver: str, first_error=None) -> str:
    """The message of a capacity estimate: criterion, status, left-out trials, a warning above 10 %.

    ``status_message`` says what the estimate's status means (None when it is ``ok``);
    ``curve`` holds the :class:`CurvePoint` of every grid point.
    """
    lenient = counts.lenient
    undecided = sum(c.undecided for c in curve)
    errors = sum(c.errors for c in curve)
    total = sum(c.trials for c in curve)
    not_found = sum(c.not_found for c in curve)
    msgs = [] if counts.threshold is None else [criterion_message(counts.threshold, solver)]
    if not_found:
        msgs.append(f"{not_found}/{total} trials not_found (the search found no W; not a certificate), "
                    "counted as not stored: p_c is a LOWER BOUND on the threshold")
    if status_message:
        msgs.append(status_message)
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
