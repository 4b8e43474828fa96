"""``validation reproduce``: every theory-against-simulation figure, CSV tables and report.md.

The run is a list of experiments; every trial goes through :func:`validation.sweep.run_tasks`
into one :class:`~validation.store.ResultStore` in the output folder, so an
interrupted run started again recomputes nothing that finished.

1. capacity estimates (``validation.capacity.estimate_capacity``) for OP and DP with
   the optimal solver, the Hebbian rule, and rank-constrained optimal memories;
2. measurements near capacity (singular values, scores in competitor-std units) of
   optimal memories (full rank and rank kappa, OP and DP) and Hebbian memories;
3. recall accuracy against the load (``validation.accuracy.measure_accuracy``) of the
   Hebbian memory, of the optimal solver's give-up search (above capacity a lower bound
   on the best accuracy) and of Adam on the cross-entropy (the protocol of
   ``notes/ce_protocol.md``, unit-norm embeddings), each at several d;
4. capacity estimates with ``K`` distinct answers shared by the facts (OP and DP,
   ``notes/many_to_one.md``) at one d.

From those, :mod:`validation.figures` draws the seven figures and :func:`write_report`
writes ``report.md`` whose text is generated from the numbers.

See ``notes/reproduce.md`` for the configurations, runtimes and sizes.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import ClassVar

import numpy as np

from replica.common.results import Result, json_safe

from .capacity import estimate_capacity, record_status, theory_capacity
from .store import ResultStore
from .sweep import Task, run_tasks, task_seed
from .sweep import _terminate as _terminate_executor

__all__ = ["ReproduceConfig", "QUICK", "FULL", "reproduce", "measurement_trial", "ReproduceResult"]


@dataclass(frozen=True)
class ReproduceConfig:
    """What a reproduce run measures.

    Attributes
    ----------
    name : str
    optimal_solver : str
        Solver used for "optimal" memories (``optimal``; ``lp`` is the exact reference).
    optimal_dims : tuple of int
        d of the OP/DP full-rank capacity estimates.
    hebbian_dims : tuple of int
        d of the Hebbian capacity estimates.
    hebbian_ensemble : str
    kappa_dim : int
        d of the rank-constrained estimates.
    kappas : tuple of float
        Rank fractions (< 1) estimated at ``kappa_dim``.
    trials, rounds, initial_points : int
        Passed to :func:`~validation.capacity.estimate_capacity`.
    spectra_dim : int
        d of the spectra / score measurements (and of the OP-vs-DP comparison).
    spectra_instances : int
        Instances per spectra / score configuration.
    spectra_kappa : float
        Rank fraction of the rank-constrained spectrum.
    theory_dims : tuple of int
        d of the finite-size theory curve in figure 2.
    seed : int
    time_limit : float
        Wall-time budget (s) of one optimal solve; a solve that runs out is ``undecided``.
    accuracy_dims : tuple of int
        d of the Hebbian accuracy curves (figure 6).
    accuracy_alphas : tuple of float
        Loads ``alpha = p ln p / d^2`` of the Hebbian accuracy curves.
    accuracy_optimal_dims : tuple of int
        d of the optimal solver's accuracy curves.
    accuracy_optimal_alphas : tuple of float
        Loads of the optimal solver's and Adam's accuracy curves.
    accuracy_optimal_options : tuple of (str, value)
        Extra options of the optimal solver's accuracy trials; the default
        ``(("give_up", True),)`` runs its give-up search (the most facts it can verify
        recalled: a lower bound on the best accuracy, ``notes/recall_accuracy.md``).
    accuracy_adam_dims : tuple of int
        d of the Adam cross-entropy accuracy curves (``ensemble="sphere"``, learning rate,
        step budget and start of :class:`validation.ce_protocol.CEProtocol`, run until
        every input is recalled or the budget ends).
    accuracy_trials : int
        Instances per accuracy point.
    outputs_dim : int
        d of the capacity estimates with ``K`` distinct answers (figure 7).
    outputs_grid : tuple of int
        The ``K`` of those estimates (OP and DP each).
    scale_runs : tuple of (str, int, int, int)
        ``(problem, d, trials, rounds)`` of further full-rank capacity estimates at large
        ``d`` with the bracketing design (first step ``scale_step`` in ln p around the
        theory p_c), so that the OP-DP gap can be followed with ``d``.  Run only with
        ``optimal_solver="optimal"`` (the LP's memory grows as ``d p^2``).
    scale_step : float
        First step of those brackets in ln p.
    scale_time_limit : float
        Wall-time budget (s) of one solve of those estimates.
    rank_restarts : int
        Starts of the rank-m search (``restarts`` of :func:`validation.solve`) in the
        rank-constrained capacity estimates and measurements.
    """

    name: str
    optimal_solver: str
    optimal_dims: tuple
    hebbian_dims: tuple
    hebbian_ensemble: str
    kappa_dim: int
    kappas: tuple
    trials: int
    rounds: int
    initial_points: int
    spectra_dim: int
    spectra_instances: int
    spectra_kappa: float
    theory_dims: tuple
    seed: int = 2026
    time_limit: float = 60.0
    accuracy_dims: tuple = (16, 32, 64)
    accuracy_alphas: tuple = (0.0625, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0)
    accuracy_optimal_dims: tuple = (8,)
    accuracy_optimal_alphas: tuple = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
    accuracy_optimal_options: tuple = (("give_up", True),)
    accuracy_adam_dims: tuple = ()
    accuracy_trials: int = 6
    outputs_dim: int = 8
    outputs_grid: tuple = (2, 4, 8, 16)
    scale_runs: tuple = ()
    scale_step: float = 0.01
    scale_time_limit: float = 3600.0
    rank_restarts: int = 8

    def to_dict(self) -> dict:
        """JSON-safe dictionary of the configuration."""
        return json_safe(asdict(self))


QUICK = ReproduceConfig(name="quick", optimal_solver="optimal", optimal_dims=(8, 12, 16),
                        hebbian_dims=(8, 16, 32), hebbian_ensemble="gaussian", kappa_dim=12,
                        kappas=(0.5,), trials=8, rounds=1, initial_points=4, spectra_dim=16,
                        spectra_instances=3, spectra_kappa=0.5, theory_dims=(8, 12, 16, 24, 32, 64, 128, 256),
                        time_limit=10.0, accuracy_optimal_dims=(6, 8, 10), accuracy_adam_dims=(6, 8, 10))
FULL = ReproduceConfig(name="full", optimal_solver="optimal", optimal_dims=(16, 32, 64),
                       hebbian_dims=(16, 32, 64, 128), hebbian_ensemble="gaussian", kappa_dim=32,
                       kappas=(0.25, 0.5, 0.75), trials=12, rounds=1, initial_points=5, spectra_dim=64,
                       spectra_instances=8, spectra_kappa=0.5,
                       theory_dims=(16, 24, 32, 48, 64, 96, 128, 256, 512, 1024),
                       accuracy_dims=(16, 32, 64, 128), accuracy_optimal_dims=(8, 16, 32),
                       accuracy_adam_dims=(8, 16, 32), accuracy_trials=10, outputs_dim=16,
                       outputs_grid=(2, 4, 8, 16, 32, 64),
                       scale_runs=(("op", 128, 8, 1), ("dp", 128, 8, 1), ("op", 256, 8, 0), ("dp", 256, 4, 0)))


# ---------------------------------------------------------------------------------
# Measurement task
# ---------------------------------------------------------------------------------
def _memory_matrix(solution):
    if solution.W is not None:
        return np.asarray(solution.W, float)
    q, r = solution.factors
    return np.asarray(q, float) @ np.asarray(r, float).T


def measurement_trial(task: Task) -> dict:
    """Solve one instance and measure its singular values and scores.

    Scores are in competitor standard deviations, ``S / (||W||_F / d)``; singular
    values in the units of ``replica.spectra.spectrum(kappa)`` (the ``round(kappa d)``
    largest, times ``sqrt(F(kappa)) sqrt(d) / ||W||_F``; ``notes/spectra.md``).  At most
    ``max_competitors`` (option, default 3000) competitor scores are kept, uniformly
    sampled.
    """
    from replica.spectra import normalized_singular_values

    from . import make_instance, solve
    from .solvers import solve_arguments

    opts = dict(task.options)
    max_comp = int(opts.pop("max_competitors", 3000))
    seed = task_seed(task.seed, task.p, task.trial)
    inst = make_instance(task.d, task.p, problem=task.problem, ensemble=task.ensemble, seed=seed)
    sol = solve(inst, solver=task.solver, kappa=task.kappa, **solve_arguments(opts))
    base = {**record_status(sol), "instance_seed": seed, "margin": float(sol.margin), "converged": bool(sol.converged),
            "iterations": int(sol.iterations), "seconds": float(sol.seconds), "rank": int(sol.rank)}
    w = _memory_matrix(sol)
    fro = float(np.linalg.norm(w))
    if not fro > 0:  # e.g. an infeasibility certificate without a memory: nothing to measure
        return {**base, "singular_values": [], "targets": [], "top_competitors": [], "competitors": [],
                "note": "solver returned W = 0"}
    sv_norm = normalized_singular_values(np.linalg.svd(w, compute_uv=False), task.kappa)
    scores = np.asarray(inst.scores(w), float) / (fro / task.d)
    targets = np.diag(scores).copy()
    masked = scores.copy()
    np.fill_diagonal(masked, -np.inf)
    top = masked.max(axis=0)
    off = scores[~np.eye(task.p, dtype=bool)]
    rng = np.random.default_rng(seed)
    comp = off if off.size <= max_comp else rng.choice(off, size=max_comp, replace=False)
    return {**base, "singular_values": sv_norm.tolist(), "targets": targets.tolist(), "top_competitors": top.tolist(),
            "competitors": comp.tolist()}


# ---------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReproduceResult(Result):
    """Paths written by :func:`reproduce` and the run's statistics.

    Attributes
    ----------
    out, report : str
        Output folder and the path of ``report.md``.
    figures, tables : tuple of str
        Paths of the PNG figures and CSV tables.
    seconds : float
    trials_run : int
        Trials of the run (computed now or reused from the store).
    status : str
        ``"ok"`` (every capacity estimate converged and no measurement failed) or
        ``"incomplete"`` (the message names the estimates that are unbracketed or
        failed and counts the failed measurements; the outputs are written anyway).
    converged : bool
        ``status == "ok"``.
    message : str
    config : dict
        :meth:`ReproduceConfig.to_dict` of the run.
    """

    STATUSES: ClassVar[tuple] = ("ok", "incomplete")

    out: str
    report: str
    figures: tuple
    tables: tuple
    seconds: float
    trials_run: int
    status: str
    converged: bool
    message: str
    config: dict = field(default_factory=dict)


def _say(progress_stream, text):
    if progress_stream is not None:
        progress_stream.write(text + "\n")
        progress_stream.flush()


def _solve_options(config: ReproduceConfig, solver: str, kappa: float, time_limit=None, *,
                   decision=True) -> dict:
    """Options of one ``optimal`` trial: the time limit, the rank-m starts at kappa < 1 and, for a
    capacity trial (``decision``), storability only (no max-margin refinement)."""
    if solver != "optimal":
        return {}
    opts = {"time_limit": config.time_limit if time_limit is None else time_limit}
    if decision:
        opts["refine"] = False
    if kappa < 1.0:
        opts["restarts"] = config.rank_restarts
    return opts


def _scale_runs(config: ReproduceConfig) -> tuple:
    """``config.scale_runs``, or none for the LP reference (its memory grows as d p^2: small d only)."""
    return config.scale_runs if config.optimal_solver == "optimal" else ()


def _capacity_runs(config: ReproduceConfig) -> list:
    """(problem, solver, d, kappa, settings) of every capacity estimate of ``config``.

    ``settings`` are the keywords of :func:`~validation.capacity.estimate_capacity`
    besides the instance family (design, trials, solver options).
    """
    grid = {"trials": config.trials, "rounds": config.rounds, "initial_points": config.initial_points}

    def run(problem, solver, d, kappa):
        return problem, solver, d, kappa, {**grid, "solver_options": _solve_options(config, solver, kappa)}

    runs = [run(prob, config.optimal_solver, d, 1.0) for d in config.optimal_dims for prob in ("op", "dp")]
    runs += [run("op", "hebbian", d, 1.0) for d in config.hebbian_dims]
    # rank constraints need the projected-gradient solver (the LP is full rank only)
    runs += [run("op", "optimal", config.kappa_dim, k) for k in config.kappas]
    if config.kappa_dim not in config.optimal_dims or config.optimal_solver != "optimal":
        runs.append(run("op", "optimal", config.kappa_dim, 1.0))
    for prob, d, trials, rounds in _scale_runs(config):
        scale = {"trials": trials, "rounds": rounds, "design": "bracket", "bracket_step": config.scale_step,
                 "solver_options": _solve_options(config, config.optimal_solver, 1.0, config.scale_time_limit)}
        runs.append((prob, config.optimal_solver, d, 1.0, scale))
    return runs


def _estimate_all(config: ReproduceConfig, store, executor, progress, log, runs, lane="") -> list:
    """The capacity estimates ``runs`` (from :func:`_capacity_runs`) as ``CapacityEstimate.to_dict()`` dicts."""
    estimates = []
    for problem, solver, d, kappa, settings in runs:
        ensemble = config.hebbian_ensemble if solver == "hebbian" else "gaussian"
        _say(log, f"capacity{lane}: {problem} {solver} d={d} kappa={kappa:g}")
        t0 = time.perf_counter()
        est = estimate_capacity(d, problem, solver, kappa, ensemble, seed=config.seed, executor=executor,
                                store=store, progress=progress, **settings)
        estimates.append({**_estimate_record(est), "wall_s": time.perf_counter() - t0})
        if lane:
            _say(log, f"capacity{lane}: {problem} {solver} d={d} done in {estimates[-1]['wall_s']:.0f} s "
                      f"(p_c = {estimates[-1]['p_c']:.1f}, {estimates[-1]['status']})")
    return estimates


_ALONGSIDE = " (alongside)"


def _split_alongside(config: ReproduceConfig, executor) -> tuple:
    """(runs of this thread, runs alongside it): the large-d estimates run in a second thread.

    With a pool of 2 or more workers the large-d estimates (``scale_runs``; the one at
    ``spectra_dim`` excepted, since the measurements start from it) run in a thread of
    their own alongside every other stage, sharing the pool: a bracketing point of a few
    long trials leaves workers idle while its last trial runs, and the other stages fill
    them.  The estimates and every trial are the same either way (each trial's seed
    depends on its key only).  A serial run keeps one thread.
    """
    runs = _capacity_runs(config)
    if (getattr(executor, "workers", None) or 0) < 2:
        return runs, []
    large = {(prob, d) for prob, d, _, _ in _scale_runs(config) if d != config.spectra_dim}
    alongside = [r for r in runs if r[4].get("design") == "bracket" and (r[0], r[2]) in large]
    # the longest chain first: the short trials of the other stages fill its idle workers
    alongside.sort(key=lambda r: (r[2], r[0] == "dp"), reverse=True)
    return [r for r in runs if r not in alongside], alongside


def _in_run_order(config: ReproduceConfig, runs, estimates) -> list:
    """``estimates`` (one per run of ``runs``) in the order of :func:`_capacity_runs`."""
    order = _capacity_runs(config)
    position = {}
    for run, est in zip(runs, estimates):
        i = next(k for k, r in enumerate(order) if r == run and k not in position)
        position[i] = est
    return [position[k] for k in sorted(position)]


def _estimate_alongside(config: ReproduceConfig, path, executor, log, runs) -> list:
    """:func:`_estimate_all` with its own connection to the result store (for a second thread)."""
    with ResultStore(path) as store:
        return _estimate_all(config, store, executor, False, log, runs, lane=_ALONGSIDE)


class _Alongside:
    """``fn(*args)`` in a daemon thread (so an interrupted run does not wait for it at exit)."""

    def __init__(self, fn, *args):
        self.value = self.error = None
        self.seconds = math.nan
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True,
                                        name="reproduce-alongside")
        self._thread.start()

    def _run(self, fn, args):
        t0 = time.perf_counter()
        try:
            self.value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
            self.error = exc
        finally:
            self.seconds = time.perf_counter() - t0

    def check(self):
        """Re-raise the thread's exception if it has failed."""
        if self.error is not None:
            raise self.error

    def result(self):
        """Wait for the thread; its value, or its exception re-raised."""
        self._thread.join()
        self.check()
        return self.value


_FLOAT_KEYS = ("p_c", "p_c_low", "p_c_high", "alpha", "alpha_low", "alpha_high", "slope")


def _estimate_record(est) -> dict:
    """``est.to_dict()`` with NaN where the JSON form has ``None``: the tables and figures compute with floats."""
    out = est.to_dict()
    out.update({k: math.nan for k in _FLOAT_KEYS if out[k] is None})
    out["theory"] = {k: (math.nan if v is None else v) for k, v in out["theory"].items()}
    return out


def _measurement_specs(config: ReproduceConfig, estimates) -> list:
    """(problem, solver, kappa, ensemble, p) of the measurements near capacity at ``spectra_dim``."""
    dm = config.spectra_dim
    by_key = {(e["problem"], e["solver"], e["d"], e["kappa"]): e for e in estimates}

    def p_near(problem, solver, kappa):
        est = by_key.get((problem, solver, dm, kappa))
        if est is not None and math.isfinite(est["p_c"]):
            return max(2, int(round(est["p_c"])))
        th = theory_capacity(dm, solver, kappa, "gaussian")["p_c"]
        return max(2, int(round(th)))

    specs = []
    for problem in ("op", "dp"):
        for kappa in (1.0, config.spectra_kappa):
            solver = config.optimal_solver if kappa == 1.0 else "optimal"
            specs.append((problem, solver, kappa, "gaussian", p_near(problem, solver, kappa)))
    # Hebbian memories at the same p as the optimal OP one (same load)
    specs.append(("op", "hebbian", 1.0, config.hebbian_ensemble, specs[0][4]))
    return specs


def _measure(config: ReproduceConfig, specs, store, executor, progress, log):
    """Run the measurements of ``specs``: ((problem, solver, kappa, p) -> records, tasks, failed)."""
    from .solvers import check_problem

    dm = config.spectra_dim
    for prob, solver, kappa, _, p in specs:  # before any trial: the sizes the solvers can take
        check_problem(dm, p, prob, solver, kappa)
    tasks = [Task("validation.reproduce:measurement_trial", "measure", prob, solver, ens, dm, p, kappa,
                  config.seed, t, tuple(_solve_options(config, solver, kappa, decision=False).items()))
             for prob, solver, kappa, ens, p in specs
             for t in range(config.spectra_instances)]
    _say(log, f"measurements at d={dm}: {len(tasks)} solves")
    rep = run_tasks(tasks, store, executor, progress=progress, desc=f"spectra/scores d={dm}")
    measurements, failed = {}, 0
    for t in tasks:
        rec = rep.records[t]
        if rec.get("status") == "error":
            failed += 1
            continue
        measurements.setdefault((t.problem, t.solver, t.kappa, t.p), []).append(rec)
    return measurements, len(tasks), failed


def _accuracy_runs(config: ReproduceConfig) -> list:
    """(solver, d, alphas, ensemble, options) of every accuracy curve of ``config``."""
    from .ce_protocol import CEProtocol

    runs = [("hebbian", d, config.accuracy_alphas, config.hebbian_ensemble, {}) for d in config.accuracy_dims]
    opts = _optimal_accuracy_options(config)
    if config.optimal_solver == "optimal":
        opts.setdefault("time_limit", config.time_limit)
    runs += [(config.optimal_solver, d, config.accuracy_optimal_alphas, "gaussian", opts)
             for d in config.accuracy_optimal_dims]
    ce = CEProtocol()
    adam = {"max_iter": ce.max_iter, **dataclasses.asdict(ce.adam_options(1.0))}
    runs += [("adam", d, config.accuracy_optimal_alphas, ce.ensemble, adam) for d in config.accuracy_adam_dims]
    return runs


def _optimal_accuracy_options(config: ReproduceConfig) -> dict:
    """``accuracy_optimal_options`` as a dict; they are options of ``optimal`` only (none for ``lp``)."""
    return dict(config.accuracy_optimal_options) if config.optimal_solver == "optimal" else {}


def _measure_accuracy(config: ReproduceConfig, store, executor, progress, log) -> list:
    """The accuracy curves of ``config`` (:func:`_accuracy_runs`), as ``AccuracyCurve`` objects."""
    from .accuracy import loads_from_alpha, measure_accuracy

    curves = []
    for solver, d, alphas, ensemble, opts in _accuracy_runs(config):
        _say(log, f"accuracy: {solver} d={d}")
        # options are not part of the store key: extra optimal options get their own experiment name
        extra = sorted(_optimal_accuracy_options(config)) if solver == config.optimal_solver else []
        curves.append(measure_accuracy(d, loads_from_alpha(d, alphas), solver=solver, ensemble=ensemble,
                                       seed=config.seed, trials=config.accuracy_trials, solver_options=opts,
                                       executor=executor, store=store, progress=progress,
                                       experiment="_".join(["accuracy", *extra])))
    return curves


def _estimate_outputs(config: ReproduceConfig, store, executor, progress, log) -> list:
    """Capacity estimates with ``K`` distinct answers at ``outputs_dim`` (records with key ``outputs``)."""
    d = config.outputs_dim
    opts = _solve_options(config, config.optimal_solver, 1.0)
    records = []
    for problem in ("op", "dp"):
        for k in config.outputs_grid:
            _say(log, f"capacity: {problem} {config.optimal_solver} d={d} outputs={k}")
            # K is an instance option, not part of the store key: one experiment name per K
            est = estimate_capacity(d, problem, config.optimal_solver, 1.0, "gaussian", trials=config.trials,
                                    seed=config.seed, rounds=config.rounds, initial_points=config.initial_points,
                                    executor=executor, store=store, progress=progress, solver_options=opts,
                                    outputs=k, experiment=f"outputs{k}")
            records.append(_estimate_record(est))
    return records


def _run_status(estimates, failed_measurements, accuracy=()) -> tuple:
    """(status, message) of a run from its estimates, failed measurements and accuracy curves."""
    bad = [f"{e['solver']} {e['problem']} d={e['d']} kappa={e['kappa']:g}: {e['status']}"
           for e in estimates if not e["converged"]]
    if failed_measurements:
        bad.append(f"{failed_measurements} measurement trials failed")
    bad += [f"accuracy {c.solver} d={c.d}: {c.message}" for c in accuracy if not c.converged]
    return ("incomplete", "; ".join(bad)) if bad else ("ok", "ok")


def reproduce(out, config: ReproduceConfig = QUICK, executor=None, progress=None, log=None) -> ReproduceResult:
    """Run every experiment of ``config``, then write figures, tables and ``report.md`` to ``out``.

    See ``notes/reproduce.md``.

    Parameters
    ----------
    out : str
        Output folder (holds ``results.sqlite``; rerunning reuses finished trials).
    config : ReproduceConfig
    executor : optional
        From :func:`validation.sweep.make_executor`; ``None`` runs serially.
    progress : bool, optional
        Progress bars on stderr.
    log : file-like, optional
        Where one-line stage messages go (e.g. ``sys.stderr``).

    Returns
    -------
    ReproduceResult
    """
    start = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    store = ResultStore(out)
    stages = {}

    def timed(name, fn, *args):
        t0 = time.perf_counter()
        value = fn(*args)
        stages[name] = time.perf_counter() - t0
        return value

    runs, alongside = _split_alongside(config, executor)
    lane = None
    try:
        if alongside:
            lane = _Alongside(_estimate_alongside, config, store.path, executor, log, alongside)
        estimates = timed("capacity estimates", _estimate_all, config, store, executor, progress, log, runs)
        specs = _measurement_specs(config, estimates)
        measurements, measured, failed = timed("spectra and scores", _measure, config, specs, store, executor,
                                               progress, log)
        accuracy = timed("accuracy curves", _measure_accuracy, config, store, executor, progress, log)
        outputs = timed("K distinct answers", _estimate_outputs, config, store, executor, progress, log)
        if lane is not None:
            lane.check()
            _say(log, "waiting for the large-d capacity estimates")
            more = timed("waiting for the large-d estimates", lane.result)
            estimates = _in_run_order(config, runs + alongside, estimates + more)
    except BaseException:
        if lane is not None:
            _terminate_executor(executor)  # ends the sweep of the other thread too
        raise
    finally:
        store.close()
    _say(log, "theory curves")
    theory = timed("theory curves", _theory_curves, config)
    _say(log, "figures and report")
    run = {"stages": stages, "start": start, "workers": _workers(executor),
           "alongside": None if lane is None else (lane.seconds, alongside)}
    written = write_outputs(out, config, estimates, specs, measurements, theory, accuracy, outputs, run)
    trials_run = (sum(c["trials"] for e in estimates + outputs for c in e["curve"]) + measured
                  + sum(pt.trials + pt.errors for c in accuracy for pt in c.points))
    status, message = _run_status(estimates + outputs, failed, accuracy)
    return ReproduceResult(out, written["report"], tuple(written["figures"]), tuple(written["tables"]),
                           time.perf_counter() - start, trials_run, status, status == "ok", message,
                           config.to_dict())


def _workers(executor) -> str:
    """A short description of ``executor`` for the report."""
    kind = getattr(executor, "kind", None)
    if kind is None:
        return "serial (one process)"
    n = getattr(executor, "workers", None)
    return kind + (f", {n} workers" if n else "")


def _theory_curves(config):
    from replica import alpha_c

    curves = {"optimal": [], "hebbian": []}
    for d in config.theory_dims:
        th = theory_capacity(d, "optimal", 1.0)
        curves["optimal"].append({"d": d, "p_c": th["p_c"], "alpha": th["alpha"]})
        th = theory_capacity(d, "hebbian", 1.0, config.hebbian_ensemble)
        curves["hebbian"].append({"d": d, "p_c": th["p_c"], "alpha": th["alpha"]})
    kappa = np.linspace(0.01, 1.0, 100)
    kappa_curve = {"kappa": kappa.tolist(), "alpha_c": [float(alpha_c(k)) for k in kappa],
                   "dof": (0.5 * (2 * kappa - kappa ** 2)).tolist()}
    return {"alpha_d": curves, "kappa": kappa_curve}


# ---------------------------------------------------------------------------------
# Outputs: one function per table and per figure
# ---------------------------------------------------------------------------------
_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def _write_csv(path, rows, columns):
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow(r)
    return path


def _summary_columns(name, values) -> dict:
    """``{name}_mean``, ``{name}_sd`` (ddof=1) and ``{name}_q05`` ... ``{name}_q95`` of a sample (NaN if empty)."""
    from replica import summarize_scores

    keys = [f"{name}_q{int(q * 100):02d}" for q in _QUANTILES]
    if len(values) == 0:
        return {f"{name}_mean": math.nan, f"{name}_sd": math.nan, **dict.fromkeys(keys, math.nan)}
    summary = summarize_scores(values, _QUANTILES)
    return {f"{name}_mean": summary.mean, f"{name}_sd": summary.std,
            **dict(zip(keys, summary.quantiles.values()))}


def _cat(records, name):
    return np.concatenate([np.asarray(r[name], float) for r in records]) if records else np.zeros(0)


def _fmt(x, digits=3):
    return "nan" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _trials(e) -> int:
    return sum(c["trials"] for c in e["curve"])


def _table_capacity(out, estimates):
    """``capacity.csv``: one row per capacity estimate; returns (path, rows)."""
    rows = []
    for e in estimates:
        th = e["theory"]
        rel = (e["p_c"] - th["p_c"]) / th["p_c"] if math.isfinite(th.get("p_c", math.nan)) else math.nan
        rows.append({"problem": e["problem"], "solver": e["solver"], "ensemble": e["ensemble"], "d": e["d"],
                     "kappa": e["kappa"], "p_c": e["p_c"], "p_c_low": e["p_c_low"], "p_c_high": e["p_c_high"],
                     "alpha": e["alpha"], "alpha_low": e["alpha_low"], "alpha_high": e["alpha_high"],
                     "theory_p_c": th.get("p_c"), "theory_alpha": th.get("alpha"),
                     "alpha_c": th.get("alpha_c"), "rel_diff_p_c": rel, "status": e["status"],
                     "undecided": e["undecided"], "errors": e["errors"], "trials": _trials(e),
                     "not_found": e.get("not_found", 0), "wall_s": e.get("wall_s", math.nan)})
    path = _write_csv(os.path.join(out, "capacity.csv"), rows, list(rows[0]) if rows else [])
    return path, rows


def _table_success_curves(out, estimates):
    """``success_curves.csv``: the counts of every grid point of every estimate."""
    rows = [{"problem": e["problem"], "solver": e["solver"], "d": e["d"], "kappa": e["kappa"], **c}
            for e in estimates for c in e["curve"]]
    return _write_csv(os.path.join(out, "success_curves.csv"), rows,
                      ["problem", "solver", "d", "kappa", "p", "alpha", "trials", "stored", "not_stored",
                       "undecided", "errors"])


def _reldiff(measured, theory):
    if theory is None or not (math.isfinite(measured) and math.isfinite(theory)):
        return "no theory value"
    return f"{100 * (measured - theory) / theory:+.1f}%"


def _figure_success(out, estimates):
    """Figure 1 and its text: P(stored) against the load."""
    from . import figures

    path = figures.plot_success(estimates, os.path.join(out, "fig1_success_probability.png"))
    lines = []
    for e in sorted(estimates, key=lambda e: (e["solver"] == "hebbian", e["problem"], e["d"])):
        if e["kappa"] != 1.0:
            continue
        th = e["theory"]
        lines.append(f"- {e['solver']} {e['problem'].upper()}, d = {e['d']}: measured alpha = "
                     f"{_fmt(e['alpha'])} [{_fmt(e['alpha_low'])}, {_fmt(e['alpha_high'])}], finite-size theory "
                     f"{_fmt(th.get('alpha', math.nan))} ({_reldiff(e['alpha'], th.get('alpha'))})")
    text = ("Theory: the optimal memory's capacity tends to alpha_c = 1/2 and the Hebbian rule's to 1/8 "
            "as d grows; at finite d the finite-size theory (dashed) predicts p_c(d). "
            "Measured (95% profile-likelihood intervals):\n\n" + "\n".join(lines))
    return path, text


def _figure_alpha_vs_d(out, estimates, theory):
    """Figure 2 and its text: measured alpha(d) against 1/ln p with the theory curves."""
    from . import figures

    path = figures.plot_alpha_vs_d(estimates, theory["alpha_d"], os.path.join(out, "fig2_alpha_vs_d.png"))
    inside = [e for e in estimates if e["kappa"] == 1.0 and math.isfinite(e["theory"].get("p_c", math.nan))]
    n_in = sum(1 for e in inside if e["p_c_low"] <= e["theory"]["p_c"] <= e["p_c_high"])
    opt_op = sorted([e for e in inside if e["solver"] != "hebbian" and e["problem"] == "op"], key=lambda e: e["d"])
    trend = ""
    if len(opt_op) >= 2:
        trend = (f" The measured OP alpha goes from {_fmt(opt_op[0]['alpha'])} at d = {opt_op[0]['d']} to "
                 f"{_fmt(opt_op[-1]['alpha'])} at d = {opt_op[-1]['d']}.")
    dmax = max(q["d"] for q in theory["alpha_d"]["optimal"])
    th_big = [q for q in theory["alpha_d"]["optimal"] if q["d"] == dmax][0]
    text = (f"Theory: alpha(d) decreases towards 1/2 (optimal) with corrections of order ln ln p / ln p; "
            f"the finite-size theory gives alpha = {_fmt(th_big['alpha'])} even at d = {dmax}. "
            f"Measured: the theory p_c lies inside the 95% interval for {n_in} of {len(inside)} "
            f"full-rank estimates.{trend}")
    return path, text


def _kappa_points(config, estimates) -> list:
    """Rows of the rank-constrained estimates (OP, optimal, d = ``kappa_dim``)."""
    points = []
    for e in estimates:
        if e["solver"] == "optimal" and e["d"] == config.kappa_dim and e["problem"] == "op":
            th = e["theory"]
            points.append({"kappa": e["kappa"], "d": e["d"], "alpha": e["alpha"], "alpha_low": e["alpha_low"],
                           "alpha_high": e["alpha_high"],
                           "theory_alpha": th["alpha"], "alpha_c": th["alpha_c"], "status": e["status"],
                           "undecided": e["undecided"], "trials": _trials(e),
                           "not_found": e.get("not_found", 0)})
    return points


def _table_alpha_kappa(out, points):
    """``alpha_kappa.csv``: the rank-constrained estimates."""
    return _write_csv(os.path.join(out, "alpha_kappa.csv"), points,
                      ["kappa", "d", "alpha", "alpha_low", "alpha_high", "theory_alpha", "alpha_c", "status",
                       "undecided", "trials", "not_found"])


def _figure_alpha_kappa(out, config, theory, points):
    """Figure 3 and its text: alpha_c(kappa) with the finite-size-corrected points."""
    from . import figures

    path = figures.plot_alpha_kappa(theory["kappa"], points, os.path.join(out, "fig3_alpha_kappa.png"))
    lines = []
    for q in sorted(points, key=lambda q: q["kappa"]):
        corr = q["alpha"] * q["alpha_c"] / q["theory_alpha"]
        dof = 0.5 * (2 * q["kappa"] - q["kappa"] ** 2)
        lines.append(f"- kappa = {q['kappa']:g}: measured alpha = {_fmt(q['alpha'])} vs finite-size theory "
                     f"{_fmt(q['theory_alpha'])} ({_reldiff(q['alpha'], q['theory_alpha'])}); corrected "
                     f"{_fmt(corr)} vs alpha_c = F/2 = {_fmt(q['alpha_c'])} (degree-of-freedom count {_fmt(dof)}); "
                     f"fit status {q['status']}, {q['undecided']}/{q['trials']} trials undecided"
                     + (f"; a LOWER BOUND: {q['not_found']}/{q['trials']} trials not_found (a rank-m search "
                        f"that found no W, counted as not stored)" if q["not_found"] else ""))
    text = ("Theory: alpha_c(kappa) = F(kappa)/2 with F the tail second moment of the quarter circle; the "
            "finite-size equation p_c E[C_p] = F(kappa) d^2 is a conjecture. Corrected point = measured alpha "
            f"x alpha_c(kappa) / finite-size alpha(d = {config.kappa_dim}, kappa).\n\n" + "\n".join(lines))
    return path, text


def _spectra(config, specs, measurements):
    """Histogram panels and moment rows of the singular values of every measured configuration."""
    from replica.spectra import hebbian_spectrum, spectrum

    dm = config.spectra_dim
    panels, rows = [], []
    for problem, solver, kappa, _ensemble, p in specs:
        recs = measurements.get((problem, solver, kappa, p), [])
        sv = _cat(recs, "singular_values")
        if solver == "hebbian":
            law = hebbian_spectrum(p / dm)
            label, support = f"finite-ratio theory c = p/d = {p / dm:.1f}", (law.lower, law.upper)
        else:
            law = spectrum(kappa)
            label = "quarter circle" if kappa == 1.0 else f"quarter circle truncated to [{law.support()[0]:.2f}, 2]"
            support = tuple(law.support())
        n_stored = sum(1 for r in recs if r.get("stored"))
        panels.append({"title": f"{solver} {problem.upper()} kappa={kappa:g}, d={dm}, p={p} "
                                f"({n_stored}/{len(recs)} stored)",
                       "values": sv, "pdf": law.pdf, "pdf_label": label, "support": support})
        rows.append({"problem": problem, "solver": solver, "kappa": kappa, "d": dm, "p": p,
                     "instances": len(recs), "stored": n_stored,
                     "sv_m2": float(np.mean(sv ** 2)) if sv.size else math.nan,
                     "sv_m4": float(np.mean(sv ** 4)) if sv.size else math.nan,
                     "sv_m2_theory": float(law.moment(2)), "sv_m4_theory": float(law.moment(4)),
                     "sv_max": float(sv.max()) if sv.size else math.nan})
    return panels, rows


def _figure_spectra(out, panels, rows):
    """Figure 4 and its text: singular-value histograms against their laws."""
    from . import figures

    path = figures.plot_spectra(panels, os.path.join(out, "fig4_spectra.png"))
    text = ("Theory: at capacity the optimal memory's singular values follow the quarter circle "
            "(second moment 1, fourth moment 2) and the rank-constrained one the truncated quarter "
            "circle; the Hebbian memory follows the finite-ratio product law (fourth moment 2 + d/p). "
            "Measured fourth moments:\n\n" + "\n".join(
                f"- {r['solver']} {r['problem'].upper()} kappa = {r['kappa']:g}, p = {r['p']}: "
                f"m4 = {_fmt(r['sv_m4'])} (theory {_fmt(r['sv_m4_theory'])}), "
                f"largest value {_fmt(r['sv_max'])} (edge 2)" for r in rows))
    return path, text


def _predicted_scores(solver, d, p, ensemble):
    """(predicted water level, predicted target mean) in competitor-std units (NaN where no theory)."""
    if solver == "hebbian":
        from replica.hebbian import hebbian_score_moments

        return math.nan, float(hebbian_score_moments(d, p, ensemble).standardized_target_mean)
    from replica.scores import optimal_score_laws

    laws = optimal_score_laws(p, size=20000)
    return laws.water_level.mean, laws.target.mean


def _scores(config, specs, measurements):
    """Histogram panels and summary rows of the scores of the full-rank configurations."""
    dm = config.spectra_dim
    panels, rows = [], []
    for problem, solver, kappa, ensemble, p in specs:
        if kappa != 1.0:
            continue
        recs = measurements.get((problem, solver, kappa, p), [])
        tg, top, comp = _cat(recs, "targets"), _cat(recs, "top_competitors"), _cat(recs, "competitors")
        row = {"problem": problem, "solver": solver, "d": dm, "p": p, "instances": len(recs)}
        for name, vals in (("target", tg), ("top_competitor", top), ("gap", tg - top), ("competitor", comp)):
            row.update(_summary_columns(name, vals))
        water, pred_target = _predicted_scores(solver, dm, p, ensemble)
        row.update(sqrt_2_ln_p=math.sqrt(2 * math.log(p)), predicted_water_level=water,
                   predicted_target_mean=pred_target)
        rows.append(row)
        lines = [(math.sqrt(2 * math.log(p)), "sqrt(2 ln p)", ":")]
        if math.isfinite(water):
            lines.append((water, "predicted water level L*", "--"))
        if solver == "hebbian" and math.isfinite(pred_target):
            lines.append((pred_target, "predicted target mean", "-."))
        panels.append({"title": f"{solver} {problem.upper()}, d={dm}, p={p} ({len(recs)} instances)",
                       "targets": tg, "top_competitors": top, "competitors": comp, "lines": lines})
    return panels, rows


def _figure_scores(out, panels, rows):
    """Figure 5 and its text: score histograms, optimal against Hebbian."""
    from . import figures

    path = figures.plot_scores(panels, os.path.join(out, "fig5_scores.png"))
    lines = []
    for r in rows:
        target = (f", predicted target mean {_fmt(r['predicted_target_mean'])}"
                  if math.isfinite(r["predicted_target_mean"]) else "")
        lines.append(f"- {r['solver']} {r['problem'].upper()} (p = {r['p']}): target mean {_fmt(r['target_mean'])}, "
                     f"sd {_fmt(r['target_sd'])}; largest competitor mean {_fmt(r['top_competitor_mean'])}; "
                     f"competitor sd {_fmt(r['competitor_sd'])} (1 if W e_mu has its average norm); "
                     f"sqrt(2 ln p) = {_fmt(r['sqrt_2_ln_p'])}; "
                     f"predicted water level {_fmt(r['predicted_water_level'])}" + target)
    text = ("Theory: the optimal memory lifts every target just above the slightly pushed-down top "
            "competitors, at the water level L*, with a small spread; the Hebbian targets are spread with "
            "about unit standard deviation (in competitor units) around the predicted mean. "
            "Scores in competitor standard deviations (score / (||W||_F/d)):\n\n" + "\n".join(lines))
    return path, text


_ACCURACY_COLUMNS = ("d", "problem", "solver", "ensemble", "kappa", "p", "alpha", "trials", "errors", "stored",
                     "accuracy", "stderr", "ci_low", "ci_high", "theory", "theory_stderr", "z", "bound", "status")


def _accuracy_rows(curves) -> list:
    """One row per accuracy point (floats, NaN kept) with the curve's d, problem, solver, ensemble, kappa."""
    return [{"d": c.d, "problem": c.problem, "solver": c.solver, "ensemble": c.ensemble, "kappa": c.kappa,
             **{k: getattr(pt, k) for k in _ACCURACY_COLUMNS[5:]}} for c in curves for pt in c.points]


def _accuracy_theory(curves, n_points=16) -> list:
    """Theory curves of figure 6: one ``{"d", "solver", "alpha", "accuracy"}`` per curve, on a dense load grid.

    Adam's curve is the best accuracy of any memory (``replica.optimal_accuracy``, gaussian
    theory): cross-entropy training cannot do better.
    """
    from .accuracy import loads_from_alpha, theory_accuracy
    from .capacity import load

    out = []
    for c in curves:
        lo, hi = min(pt.alpha for pt in c.points), max(pt.alpha for pt in c.points)
        ps = sorted(set(loads_from_alpha(c.d, np.linspace(lo, hi, n_points))) | {pt.p for pt in c.points})
        ref = "optimal" if c.solver == "adam" else c.solver
        vals = [theory_accuracy(c.d, p, ref, c.ensemble, c.kappa)[0] for p in ps]
        out.append({"d": c.d, "solver": c.solver, "alpha": [load(c.d, p) for p in ps], "accuracy": vals})
    return out


def _nearest(rows, alpha):
    return min(rows, key=lambda r: abs(r["alpha"] - alpha))


def _accuracy_text(config, rows) -> str:
    """Report paragraph of figure 6 from the measured accuracy rows."""
    heb = [_nearest([r for r in rows if r["d"] == d and r["solver"] == "hebbian"], 0.5)
           for d in config.accuracy_dims]
    lines = [f"- Hebbian, d = {r['d']}, p = {r['p']} (alpha = {_fmt(r['alpha'])}): measured accuracy "
             f"{_fmt(r['accuracy'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}], theory {_fmt(r['theory'])} "
             f"(z = {_fmt(r['z'], 1)})" for r in heb]
    give_up = _optimal_accuracy_options(config).get("give_up", False)
    what = "give-up search" if give_up else "returned W"
    above = [r for r in rows if r["solver"] == config.optimal_solver and r["bound"] == "lower_bound"]
    lines += [f"- {r['solver']} {what}, d = {r['d']}, p = {r['p']} (alpha = {_fmt(r['alpha'])}): "
              f"measured {_fmt(r['accuracy'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] (lower bound), "
              f"replica-symmetric best accuracy {_fmt(r['theory'])} "
              f"({_reldiff(r['accuracy'], r['theory'])})" for r in above]
    if not above:
        lines.append(f"- {config.optimal_solver}: every trial stored all inputs at every measured load "
                     "(accuracy 1, exact)")
    lines += _adam_lines(config, rows)
    how = ("in its give-up mode (inputs whose constraints cost most are given up and the rest re-solved) "
           "it recalls a subset it verifies in float64, a lower bound on the best accuracy" if give_up else
           "it returns the squared-hinge minimiser, which does not maximise the number of recalled inputs: "
           "its accuracy is only a lower bound on the best accuracy, so it may lie far below the theory "
           "curve without contradicting it")
    return ("Theory: replica.hebbian_accuracy gives the Hebbian memory's expected recall fraction at finite d "
            "(exact in the finite-size Hebbian model); replica.optimal_accuracy gives the replica-symmetric "
            "prediction of the largest accuracy any memory reaches, 1 below capacity. Measured: the mean "
            f"recall fraction over {config.accuracy_trials} instances per load, with 95% intervals. Above "
            f"capacity the optimal solver cannot store every input; {how}. Adam on the softmax "
            "cross-entropy (learning rate 1000, 4096 full-batch steps, unit-norm embeddings: the protocol "
            "of notes/ce_protocol.md) is measured on its final iterate; its theory line is the best "
            "accuracy of any memory (gaussian theory). Hebbian points nearest alpha = 1/2, the optimal "
            "points above capacity and Adam:\n\n" + "\n".join(lines))


def _adam_lines(config, rows) -> list:
    """Report lines of the Adam curves: the largest load with mean accuracy >= 0.99, and the accuracy at alpha ~ 1."""
    lines = []
    for d in config.accuracy_adam_dims:
        pts = sorted([r for r in rows if r["solver"] == "adam" and r["d"] == d], key=lambda r: r["alpha"])
        if not pts:
            continue
        ok = [r for r in pts if math.isfinite(r["accuracy"]) and r["accuracy"] >= 0.99]
        top = f"alpha = {_fmt(ok[-1]['alpha'])}" if ok else "no measured load"
        r = _nearest(pts, 1.0)
        lines.append(f"- Adam-CE, d = {d}: mean accuracy >= 0.99 up to {top}; at alpha = {_fmt(r['alpha'])} "
                     f"(p = {r['p']}) {_fmt(r['accuracy'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]")
    return lines


def _figure_accuracy(out, config, curves, rows):
    """Figure 6 and its text: accuracy against alpha, Hebbian, optimal and Adam, with the theory curves."""
    from . import figures

    measured = [{"d": c.d, "solver": c.solver, "points": [r for r in rows if r["d"] == c.d
                                                            and r["solver"] == c.solver]} for c in curves]
    path = figures.plot_accuracy(measured, _accuracy_theory(curves), os.path.join(out, "fig6_accuracy.png"))
    return path, _accuracy_text(config, rows)


_OUTPUTS_COLUMNS = ("problem", "solver", "d", "outputs", "p_c", "p_c_low", "p_c_high", "theory_p_c",
                    "rel_diff_p_c", "status", "undecided", "errors", "trials")


def _outputs_rows(outputs) -> list:
    """One row per estimate with ``K`` distinct answers (floats, NaN kept)."""
    rows = []
    for e in outputs:
        th = e["theory"].get("p_c", math.nan)
        rows.append({**{k: e[k] for k in ("problem", "solver", "d", "outputs", "p_c", "p_c_low", "p_c_high",
                                          "status", "undecided", "errors")},
                     "theory_p_c": th, "rel_diff_p_c": (e["p_c"] - th) / th if math.isfinite(th) else math.nan,
                     "trials": _trials(e)})
    return rows


def _outputs_theory(d, ks) -> dict:
    """Theory curves of figure 7: ``{problem: (K grid, p_c)}`` and the one-answer-per-fact p_c."""
    from replica import capacity

    grid = sorted(set(np.unique(np.geomspace(2, max(max(ks), 2 * d), 24).round().astype(int)).tolist()) | set(ks))
    curves = {prob: (grid, [capacity(d, outputs=k, problem=prob).p_c for k in grid]) for prob in ("op", "dp")}
    return {"curves": curves, "one_per_fact": capacity(d).p_c}


def _figure_outputs(out, config, rows):
    """Figure 7 and its text: p_c against the number K of distinct answers, OP and DP, with theory."""
    from . import figures

    d = config.outputs_dim
    theory = _outputs_theory(d, config.outputs_grid) if rows else {"curves": {}, "one_per_fact": math.nan}
    path = figures.plot_outputs(rows, theory, d, os.path.join(out, "fig7_outputs.png"))
    lines = [f"- {r['problem'].upper()}, K = {r['outputs']}: measured p_c = {_fmt(r['p_c'], 1)} "
             f"[{_fmt(r['p_c_low'], 1)}, {_fmt(r['p_c_high'], 1)}], theory {_fmt(r['theory_p_c'], 1)} "
             f"({_reldiff(r['p_c'], r['theory_p_c'])}); {r['undecided']}/{r['trials']} trials undecided, "
             f"fit {r['status']}" for r in rows]
    text = (f"Theory (notes/many_to_one.md): with K distinct answers the OP sees W only through K vectors, "
            f"p_c E[C_K] = d min(K - 1, d), while the DP keeps d^2 weights, p_c E[C_K] = d^2; at K = 2 the OP "
            f"is Cover's perceptron (p_c = 2d = {2 * d}). One answer per fact: p_c = "
            f"{_fmt(theory['one_per_fact'], 1)} (dotted). Measured with the optimal solver at d = {d}: "
            "stored is verified in float64 and not stored certified by a dual bound; undecided trials are "
            "counted and left out of the fit.\n\n" + "\n".join(lines))
    return path, text


_OP_VS_DP_SCORES = ("target_mean", "target_sd", "target_q05", "target_q50", "target_q95", "top_competitor_mean",
                    "gap_q05", "gap_q50")


def _table_op_vs_dp(out, config, estimates, moment_rows, score_rows):
    """``op_vs_dp.csv``: capacity, spectrum and scores of OP and DP at ``spectra_dim``; returns (path, rows)."""
    rows = []
    for problem in ("op", "dp"):
        e = next((e for e in estimates if e["problem"] == problem and e["solver"] == config.optimal_solver
                  and e["d"] == config.spectra_dim and e["kappa"] == 1.0), {})
        m = next((r for r in moment_rows if r["problem"] == problem and r["kappa"] == 1.0
                  and r["solver"] != "hebbian"), {})
        s = next((r for r in score_rows if r["problem"] == problem and r["solver"] != "hebbian"), {})
        rows.append({"problem": problem.upper(),
                     **{k: e.get(k, math.nan) for k in ("p_c", "p_c_low", "p_c_high", "alpha")},
                     "sv_m4": m.get("sv_m4", math.nan), "sv_max": m.get("sv_max", math.nan),
                     **{k: s.get(k, math.nan) for k in _OP_VS_DP_SCORES}})
    return _write_csv(os.path.join(out, "op_vs_dp.csv"), rows, list(rows[0])), rows


def write_outputs(out, config, estimates, meas_specs, measurements, theory, accuracy, outputs=(), run=None):
    """Draw the figures, write the CSV tables and ``report.md``; return their paths.

    ``run`` (optional) holds the wall times of the run (``stages``: name -> seconds,
    ``start``: its ``time.perf_counter()`` at the start, ``workers``: a description);
    the report states them, the total up to the report's own writing included.
    """
    text = {}
    cap_table, cap_rows = _table_capacity(out, estimates)
    tables = [cap_table, _table_success_curves(out, estimates)]
    fig1, text["fig1"] = _figure_success(out, estimates)
    fig2, text["fig2"] = _figure_alpha_vs_d(out, estimates, theory)
    kpoints = _kappa_points(config, estimates)
    fig3, text["fig3"] = _figure_alpha_kappa(out, config, theory, kpoints)
    tables.append(_table_alpha_kappa(out, kpoints))
    spec_panels, moment_rows = _spectra(config, meas_specs, measurements)
    fig4, text["fig4"] = _figure_spectra(out, spec_panels, moment_rows)
    tables.append(_write_csv(os.path.join(out, "spectra_moments.csv"), moment_rows, list(moment_rows[0])))
    score_panels, score_rows = _scores(config, meas_specs, measurements)
    fig5, text["fig5"] = _figure_scores(out, score_panels, score_rows)
    tables.append(_write_csv(os.path.join(out, "score_summary.csv"), score_rows,
                             list(score_rows[0]) if score_rows else []))
    cmp_table, cmp_rows = _table_op_vs_dp(out, config, estimates, moment_rows, score_rows)
    tables.append(cmp_table)
    acc_rows = _accuracy_rows(accuracy)
    tables.append(_write_csv(os.path.join(out, "accuracy.csv"), acc_rows, list(_ACCURACY_COLUMNS)))
    fig6, text["fig6"] = _figure_accuracy(out, config, accuracy, acc_rows)
    out_rows = _outputs_rows(outputs)
    tables.append(_write_csv(os.path.join(out, "outputs.csv"), out_rows, list(_OUTPUTS_COLUMNS)))
    fig7, text["fig7"] = _figure_outputs(out, config, out_rows)
    figs = [fig1, fig2, fig3, fig4, fig5, fig6, fig7]
    gap_table, gap_rows = _table_op_dp_gap(out, config, cap_rows)
    tables.append(gap_table)
    report = _write_report(out, config, figs, text, cmp_rows, cap_rows, gap_rows, run)
    return {"figures": figs, "tables": tables, "report": report}


def _md_table(rows, columns, digits=3):
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = ""
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            cells.append(_fmt(v, digits) if isinstance(v, float) else str(v))
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


_GAP_COLUMNS = ("d", "op_p_c", "op_p_c_low", "op_p_c_high", "dp_p_c", "dp_p_c_low", "dp_p_c_high", "theory_p_c",
                "op_minus_dp", "op_trials", "dp_trials", "undecided", "op_status", "dp_status")


def _table_op_dp_gap(out, config, cap_rows):
    """``op_dp_gap.csv``: full-rank OP and DP p_c side by side at every d with both; returns (path, rows)."""
    by = {(r["problem"], r["d"]): r for r in cap_rows
          if r["solver"] == config.optimal_solver and r["kappa"] == 1.0}
    rows = []
    for d in sorted({d for (_, d) in by}):
        op, dp = by.get(("op", d)), by.get(("dp", d))
        if op is None or dp is None:
            continue
        rows.append({"d": d, **{f"op_{k}": op[k] for k in ("p_c", "p_c_low", "p_c_high")},
                     **{f"dp_{k}": dp[k] for k in ("p_c", "p_c_low", "p_c_high")},
                     "theory_p_c": op["theory_p_c"], "op_minus_dp": (op["p_c"] - dp["p_c"]) / dp["p_c"],
                     "op_trials": op["trials"], "dp_trials": dp["trials"],
                     "undecided": op["undecided"] + dp["undecided"], "op_status": op["status"],
                     "dp_status": dp["status"]})
    return _write_csv(os.path.join(out, "op_dp_gap.csv"), rows, list(_GAP_COLUMNS)), rows


def _figure_sizes(config) -> list:
    """(figure, sizes) lines of the report: the d and counts behind every figure."""
    def dims(values):
        return ", ".join(str(v) for v in values) if values else "none"

    runs = _scale_runs(config)
    cap = sorted(set(config.optimal_dims) | {d for _, d, _, _ in runs})
    scale = "; ".join(f"{prob.upper()} d = {d}: {t} trials per point, {r} refinement rounds, bracketing design"
                      for prob, d, t, r in runs)
    return [
        ("1, 2", f"optimal OP and DP at d = {dims(cap)} (largest {max(cap)}); Hebbian at d = "
                 f"{dims(config.hebbian_dims)}; {config.trials} trials per point and round at d <= "
                 f"{max(config.optimal_dims)}" + (f"; {scale}" if scale else "")),
        ("3", f"OP at d = {config.kappa_dim}, kappa = {dims(config.kappas)}, {config.rank_restarts} starts "
              "of the rank-m search"),
        ("4, 5", f"d = {config.spectra_dim}, {config.spectra_instances} instances per configuration"),
        ("6", f"Hebbian d = {dims(config.accuracy_dims)}; optimal d = {dims(config.accuracy_optimal_dims)}; "
              f"Adam d = {dims(config.accuracy_adam_dims)}; {config.accuracy_trials} instances per load"),
        ("7", f"d = {config.outputs_dim}, K = {dims(config.outputs_grid)}"),
    ]


def _run_section(config, run) -> str:
    """The report's account of the run: wall times and the sizes of every figure."""
    lines = ["## The run\n"]
    if run is not None:
        total = time.perf_counter() - run["start"]
        figures = total - sum(run["stages"].values())
        lines.append(f"Wall time of this invocation: {total:.0f} s ({total / 60:.1f} min), executor: "
                     f"{run['workers']}. Trials already in `results.sqlite` are reused, so a resumed run "
                     "takes less.\n")
        lines.append("| stage | wall time (s) |\n|---|---|")
        lines += [f"| {name} | {sec:.0f} |" for name, sec in run["stages"].items()]
        lines.append(f"| figures, tables, report | {figures:.0f} |")
        lines.append("")
        if run.get("alongside"):
            seconds, runs = run["alongside"]
            names = ", ".join(f"{r[0].upper()} d = {r[2]}" for r in runs)
            lines.append(f"The large-d capacity estimates ({names}) ran in a second thread alongside the "
                         f"stages above, sharing the workers, and took {seconds:.0f} s; the main thread waited "
                         "for them in the stage so named. The estimates do not depend on this (every trial's "
                         "seed depends on its key only).\n")
    lines.append("| figure | sizes |\n|---|---|")
    lines += [f"| {fig} | {sizes} |" for fig, sizes in _figure_sizes(config)]
    return "\n".join(lines) + "\n\n"


def _write_report(out, config, figs, text, cmp_rows, cap_rows, gap_rows=(), run=None):
    path = os.path.join(out, "report.md")
    names = {"fig1": "Success probability against load", "fig2": "Capacity against 1/ln p",
             "fig3": "Rank-constrained capacity alpha_c(kappa)", "fig4": "Singular-value spectra",
             "fig5": "Score distributions, optimal against Hebbian", "fig6": "Recall accuracy against load",
             "fig7": "Capacity with K distinct answers"}
    with open(path, "w") as fh:
        fh.write(f"# Theory against simulation ({config.name} run)\n\n")
        fh.write(f"Generated by `validation reproduce{' --quick' if config.name == 'quick' else ''}`; "
                 f"seed {config.seed}; {config.trials} trials per grid point and round; optimal solver "
                 f"`{config.optimal_solver}`; every trial is in `results.sqlite` "
                 "(`validation export --out DIR --format csv`).\n\n")
        fh.write(_run_section(config, run))
        for i, (key, fig) in enumerate(zip(names, figs), start=1):
            fh.write(f"## {i}. {names[key]}\n\n![{names[key]}]({os.path.basename(fig)})\n\n{text[key]}\n\n")
        if gap_rows:
            fh.write("## OP against DP capacity with d\n\n`op_minus_dp` = (OP p_c - DP p_c) / DP p_c; 95% "
                     "profile-likelihood intervals; theory: the finite-size p_c, the same for both problems; "
                     "`op_status` / `dp_status`: the fit status (`ok`; `unbracketed`: an end of the interval "
                     "was not found, the interval is not closed).\n\n")
            fh.write(_md_table(gap_rows, list(_GAP_COLUMNS)) + "\n")
        fh.write(f"## OP against DP at d = {config.spectra_dim} near capacity\n\n")
        fh.write(_md_table(cmp_rows, list(cmp_rows[0])) + "\n")
        fh.write("## All capacity estimates\n\n")
        fh.write(_md_table(cap_rows, ["problem", "solver", "d", "kappa", "p_c", "p_c_low", "p_c_high",
                                      "theory_p_c", "rel_diff_p_c", "alpha", "theory_alpha", "status",
                                      "undecided", "errors", "trials", "wall_s"], digits=3) + "\n")
        fh.write("`wall_s`: wall time of the estimate in this invocation (seconds; trials reused from the "
                 "store cost almost nothing).\n")
    return path
