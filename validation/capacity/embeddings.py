"""Capacity of a set of given embeddings: P(stored) against p for facts sampled from N given facts.

The facts are given as a ``.npz`` file with the arrays ``inputs`` (N x d_in), ``outputs``
(K x d_out) and, optionally, ``answers`` (the row of ``outputs`` answering each of the N
facts; default fact ``mu`` answers row ``mu``, which needs ``K = N``).  A trial at ``p``
draws ``p`` of the N facts without replacement, seeded by ``task_seed(seed, p, trial)``
(reproducible), and solves the original problem of those facts
(:meth:`validation.Instance.from_embeddings`): the candidates are the distinct answers of
the sampled facts, as in the OP the theory counts.  The adaptive sweep and the logistic
fit are those of :func:`validation.capacity.estimate_capacity`; the estimate is set beside
the Gaussian theory of the same shape, ``replica.capacity(d, kappa)`` (square) or
``replica.variants.rectangular_capacity(d_in, d_out)`` (``notes/capacity_estimation.md``, "Given
embeddings").  The grid never goes past the N facts: a point the design places above N
is measured at p = N instead (once), and when every load tried stores, up to all N facts,
the estimate says so (status ``"all_facts_stored"``: p_c > N, not a fit).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
import time

import numpy as np

from replica.common.loads import bits_per_parameter

from ..instances.ensembles import Instance
from ..solvers import solve, solve_arguments
from ..solvers.engine.registry import solver_spec
from ..runtime.sweep import Task, task_seed
from .design import STARTS, PointRunner, expand, refine
from .results import FACTS_STORED, CapacityEstimate
from .settings import capacity_settings, measurement_template, parse_criterion
from .theory import theory_capacity
from .trials import TrialCounts, estimate_message, record_status, split_instance_options

__all__ = ["EMBEDDING_TRIAL", "load_embeddings", "sample_facts", "embedding_trial", "embedding_theory",
           "estimate_embedding_capacity"]

EMBEDDING_TRIAL = "validation.capacity.embeddings:embedding_trial"
"""The ``function`` of the trials of :func:`estimate_embedding_capacity`."""

_KEYS = ("embeddings", "embeddings_digest")


def _digest(path) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_embeddings(path):
    """The checked arrays of an embeddings file and its SHA-256: ``(inputs, outputs, answers, digest)``.

    Parameters
    ----------
    path : str or path-like
        A ``.npz`` file (``numpy.savez``) with ``inputs`` (N x d_in), ``outputs``
        (K x d_out) and optionally ``answers`` (length N).

    Returns
    -------
    inputs, outputs : ndarray, float64
    answers : ndarray of int64, shape (N,)
        ``arange(N)`` when the file has none.
    digest : str

    Raises
    ------
    ValueError
        A file that cannot be read as ``.npz``, a missing array, or arrays that
        :meth:`validation.Instance.from_embeddings` refuses (its message).
    """
    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: np.array(data[name]) for name in data.files}
    except (OSError, ValueError) as exc:
        raise ValueError(f"embeddings {path!r} cannot be read as a .npz file: {exc}") from None
    missing = [name for name in ("inputs", "outputs") if name not in arrays]
    if missing:
        raise ValueError(f"embeddings {path!r} has no array {missing[0]!r} (it has {sorted(arrays)})")
    whole = Instance.from_embeddings(arrays["inputs"], arrays["outputs"], arrays.get("answers"))
    return whole.inputs, whole.table, whole.target_index.astype(np.int64), _digest(path)


@functools.lru_cache(maxsize=4)
def _cached(path: str, digest: str):
    inputs, outputs, answers, found = load_embeddings(path)
    if found != digest:
        raise ValueError(f"embeddings {path!r} changed during the measurement (SHA-256 {found[:12]}..., "
                         f"expected {digest[:12]}...)")
    return inputs, outputs, answers


def sample_facts(inputs, outputs, answers, p, seed) -> Instance:
    """The OP instance of ``p`` facts drawn without replacement from the given ones.

    ``numpy.random.default_rng(seed).choice(N, p, replace=False)``, sorted, picks the
    facts; the candidates are their distinct answers (in the order of ``outputs``).  With
    ``p`` distinct answers the instance has one answer per fact (``outputs=None``).
    """
    N = inputs.shape[0]
    if not 2 <= p <= N:
        raise ValueError(f"p must lie in [2, N] = [2, {N}] (the number of given facts), got {p}")
    facts = np.sort(np.random.default_rng(seed).choice(N, size=p, replace=False))
    mine = answers[facts]
    used, local = np.unique(mine, return_inverse=True)
    if used.size == p:
        return Instance.from_embeddings(inputs[facts], outputs[mine], seed=seed)
    return Instance.from_embeddings(inputs[facts], outputs[used], answers=local.reshape(-1), seed=seed)


def embedding_trial(task: Task) -> dict:
    """One trial of :func:`estimate_embedding_capacity`: sample ``task.p`` facts, solve, report.

    The task options ``embeddings`` (the file) and ``embeddings_digest`` (its SHA-256,
    checked) name the facts; the others go to the solver.  The record is that of
    :func:`validation.capacity.storage_trial`.
    """
    settings = dict(task.options)
    path, digest = (settings.pop(k) for k in _KEYS)
    inputs, outputs, answers = _cached(path, digest)
    seed = task_seed(task.seed, task.p, task.trial)
    inst = sample_facts(inputs, outputs, answers, task.p, seed)
    sol = solve(inst, solver=task.solver, kappa=task.kappa, **solve_arguments(settings))
    out = {k: v for k, v in sol.to_dict().items() if not isinstance(v, (list, dict))}
    out["instance_seed"] = seed
    out.update(record_status(sol))
    return out


def embedding_theory(d_in: int, d_out: int, solver: str, kappa: float = 1.0) -> dict:
    """The Gaussian theory of a ``d_out x d_in`` memory beside a measurement on given embeddings.

    Square: :func:`validation.capacity.theory_capacity` (``replica.capacity(d, kappa)``,
    ``replica.hebbian_capacity`` for ``hebbian``).  Rectangular:
    ``replica.variants.rectangular_capacity(d_in, d_out, problem="op")``
    (``replica.variants.rectangular_hebbian_capacity`` for ``hebbian``).  The dictionary of
    :func:`theory_capacity` with ``bits_per_parameter`` added.
    """
    from replica import variants

    if d_in == d_out:
        out = theory_capacity(d_in, solver, kappa)
    else:
        if solver_spec(solver).is_hebbian:
            res, source = variants.rectangular_hebbian_capacity(d_in, d_out), \
                "replica.variants.rectangular_hebbian_capacity"
        else:
            res, source = variants.rectangular_capacity(d_in, d_out, kappa, problem="op"), \
                "replica.variants.rectangular_capacity(problem='op')"
        out = {"p_c": float(res.p_c), "alpha": float(res.alpha), "alpha_c": float(res.alpha_c), "source": source}
    out["bits_per_parameter"] = bits_per_parameter(out["p_c"], d_in, d_out, kappa)
    return out


def _check_solver(solver, kappa, d_in, d_out):
    spec = solver_spec(solver)
    if d_in != d_out and (not spec.rectangular or kappa != 1.0):
        raise ValueError(f"the embeddings are rectangular (d_in={d_in}, d_out={d_out}): solver {solver!r} at "
                         f"kappa={kappa:g} cannot solve them (rectangular instances need kappa = 1 and a solver "
                         f"that takes them)")
    return spec


def _reshaped(est: CapacityEstimate, d_in, d_out, theory, path, n_facts) -> CapacityEstimate:
    """The estimate with the loads and bits of a ``d_out x d_in`` memory, the theory and the file."""
    def alpha(p):
        return p * math.log(p) / (d_in * d_out) if math.isfinite(p) and p > 1 else math.nan

    curve = tuple(dataclasses.replace(c, alpha=alpha(c.p), bits_per_parameter=bits_per_parameter(
        c.p, d_in, d_out, est.kappa)) for c in est.curve)
    options = {k: v for k, v in est.solver_options.items() if k not in _KEYS}
    return dataclasses.replace(est, ensemble="given", alpha=alpha(est.p_c), alpha_low=alpha(est.p_c_low),
                               alpha_high=alpha(est.p_c_high), curve=curve, theory=theory, solver_options=options,
                               d_in=d_in, d_out=d_out, embeddings=os.fspath(path), facts=n_facts)


class _FactsRunner(PointRunner):
    """A :class:`PointRunner` that never runs a point above the N given facts (``counts.limit``).

    A point above N stands for N: N is measured in its place when it has no trials yet,
    and the point is dropped once it has.
    """

    def run(self, ps) -> None:
        limit = self.counts.limit
        kept = {int(p) for p in ps if p <= limit}
        if any(p > limit for p in ps) and limit not in self.counts:
            kept.add(limit)
        if kept:
            super().run(sorted(kept))


def _measure(n_facts, d, solver, kappa, seed, design, options):
    """The trials of the grid, up to p = N: ``(template, checked design, counts, first error)``.

    The designs of :func:`estimate_capacity` (first points, outward expansion,
    refinement) with the points capped at N by :class:`_FactsRunner`; no refinement when
    every load tried stored, up to N (there is then no transition below N to refine).
    """
    sweep, extra = options.sweep("embedding_capacity"), options.measurement()
    threshold = parse_criterion(extra.get("criterion", "all"))
    template, lenient = measurement_template(d, "op", solver, kappa, "gaussian", seed, sweep, extra)
    design = design.checked(d)
    if not 2 <= design.center <= n_facts:
        raise ValueError(f"center must lie in [2, N] = [2, {n_facts}] (N, the number of given facts), "
                         f"got {design.center!r}")
    counts = TrialCounts(lenient, threshold, limit=n_facts)
    runner = _FactsRunner(template, design.trials, sweep, counts)
    STARTS[design.kind](runner, design, design.center)
    expand(runner, design)
    if not counts.stored_up_to_limit():
        refine(runner, design)
    return template, design, counts, runner.first_error


def _estimate(template: Task, design, counts: TrialCounts, theory: dict, first_error, seconds: float):
    """The :class:`CapacityEstimate` of the counts (square loads; ``ValueError`` when every trial failed).

    With every load tried stored up to N the status is ``"all_facts_stored"`` and no fit
    is made: ``p_c_low = N``, ``p_c_high`` infinite, ``p_c`` and ``slope`` NaN.
    """
    m, n = template, counts.limit
    curve = counts.curve(m.d, m.kappa)
    if first_error is not None and all(c.errors == c.trials for c in curve):
        raise ValueError(f"every trial of the given embeddings ({m.solver}, kappa={m.kappa:g}) failed with an "
                         f"error; the first: {first_error}")
    if counts.stored_up_to_limit():
        status, converged, slope = FACTS_STORED, False, math.nan
        p_c, p_lo, p_hi = math.nan, float(n), math.inf
        said = (f"all {n} given facts stored: p_c > {n} (every decided trial stored at every load tried, up to "
                f"p = {n}; not a fit: measuring p_c needs more facts)")
    else:
        fit = counts.fit()
        status, converged, slope = fit.status, fit.converged, fit.slope
        p_c, p_lo, p_hi = (math.exp(v) for v in (fit.log_p_c, fit.log_p_c_low, fit.log_p_c_high))
        said = None if fit.status == "ok" else fit.message
        if fit.status == "unbracketed" and n in counts:
            said += f" (the grid stops at p = {n}, the number of given facts)"
    family, options = split_instance_options(m)
    criterion = "all" if counts.threshold is None else f"accuracy:{counts.threshold:g}"
    return CapacityEstimate(
        m.d, m.problem, m.solver, m.kappa, m.ensemble, p_c, p_lo, p_hi, math.nan, math.nan, math.nan, slope,
        curve, theory, sum(c.undecided for c in curve), sum(c.errors for c in curve), status, converged,
        estimate_message(said, curve, counts, m.solver, first_error), m.seed, design.trials, seconds, options,
        design.kind, criterion, family["outputs"], sum(c.not_found for c in curve), family["generator"])


def estimate_embedding_capacity(path, solver: str = "optimal", kappa: float = 1.0, *, seed=None, design="auto",
                                options=None, **flat) -> CapacityEstimate:
    """Measure P(stored) of ``p`` facts sampled from given embeddings, and locate p_c.

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file of :func:`load_embeddings`.
    solver : str
        A registered solver; rectangular embeddings need one that takes rectangular
        instances, at ``kappa = 1``.
    kappa : float
        Rank fraction in (0, 1].
    seed : None, int, SeedSequence or Generator
        Base seed: trial ``t`` at ``p`` samples its facts with ``task_seed(seed, p, t)``.
    design : {"auto", "grid", "bracket"} or CapacityDesign
        As in :func:`estimate_capacity`; the first points are centred on the Gaussian
        theory's p_c (at most N, the number of facts) unless ``center`` is given (in
        [2, N]).  No point lies above N: where the design would go past N it measures
        p = N, once.
    options : CapacityOptions or dict, optional
        As in :func:`estimate_capacity` (``solver_options``, ``criterion``,
        ``undecided_as_not_stored``, ``executor``, ``store``, ``progress``,
        ``experiment``, default ``"embedding_capacity"``), not ``outputs``, ``generator``
        or ``task_function``.
    **flat
        Deprecated (``DeprecationWarning``, for one release): the fields of
        ``CapacityDesign`` and ``CapacityOptions`` as keywords, as in :func:`estimate_capacity`.

    Returns
    -------
    CapacityEstimate
        ``ensemble="given"``, ``problem="op"``, ``d = min(d_in, d_out)``, with ``d_in``,
        ``d_out``, ``embeddings`` (the file) and ``facts`` (N) set; loads
        ``p ln p / (d_in d_out)``; ``theory`` from :func:`embedding_theory`.  Every grid
        point is at most N.  When every load tried stored, up to all N facts, the
        status is ``"all_facts_stored"`` (``message``: "all N given facts stored: p_c >
        N"): not a fit, ``p_c_low = N`` and ``p_c`` NaN; the capacity of such a geometry
        cannot be measured with N facts.

    Raises
    ------
    ValueError
        As :func:`load_embeddings` and :func:`estimate_capacity`; a solver that cannot
        solve rectangular embeddings; a keyword that does not apply; a ``center``
        outside [2, N].
    """
    start = time.perf_counter()
    design, options = capacity_settings(design, options, flat, "estimate_embedding_capacity", stacklevel=3)
    for name in ("outputs", "generator", "task_function"):
        if getattr(options, name) is not None:
            raise ValueError(f"{name} does not apply to given embeddings")
    inputs, outputs, _, digest = load_embeddings(path)
    n_facts, d_in, d_out = inputs.shape[0], inputs.shape[1], outputs.shape[1]
    d = min(d_in, d_out)
    spec = _check_solver(solver, float(kappa), d_in, d_out)
    theory = embedding_theory(d_in, d_out, solver, float(kappa))
    if design.center is None:
        p_c = theory["p_c"] if math.isfinite(theory["p_c"]) else 0.5 * n_facts
        design = dataclasses.replace(design, center=float(min(max(p_c, 2.0), n_facts)))
    solver_options = spec.sweep_task_options(d, float(kappa), options.solver_options)
    solver_options.update({"embeddings": os.path.abspath(os.fspath(path)), "embeddings_digest": digest})
    lenient = spec.undecided_as_not_stored if options.undecided_as_not_stored is None else \
        options.undecided_as_not_stored
    options = dataclasses.replace(options, task_function=EMBEDDING_TRIAL, solver_options=solver_options,
                                  undecided_as_not_stored=lenient)
    template, checked, counts, first_error = _measure(n_facts, d, solver, kappa, seed, design, options)
    est = _estimate(template, checked, counts, theory, first_error, time.perf_counter() - start)
    return _reshaped(est, d_in, d_out, theory, path, n_facts)
