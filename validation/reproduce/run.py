"""Running ``validation reproduce``: every stage of the plan through one executor and one result store.

The stages run in the order of :func:`reproduce`: capacity estimates, measurements near
capacity, accuracy curves, estimates with ``K`` distinct answers, the Zipf errors.  With a pool of 2 or
more workers the large-d estimates run in a second thread alongside them (the
*background lane*, :class:`BackgroundLane`), sharing the pool.  The theory curves and
:func:`validation.reproduce.report.write_outputs` follow.  See ``notes/reproduce.md``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from replica import alpha_c
from replica.common.results import Result

from ..measurements.accuracy import loads_from_alpha, measure_accuracy
from ..capacity import CapacityDesign, CapacityOptions, estimate_capacity, theory_capacity
from ..runtime.executors import terminate_executor
from ..solvers import check_problem
from ..solvers.engine.registry import solver_spec
from ..runtime.store import ResultStore
from ..runtime.sweep import run_tasks
from ..measurements.zipf import ZipfSettings, measure_zipf, overloaded_facts, zipf_theory_curves
from .config import QUICK, ReproduceConfig
from .plan import (accuracy_runs, in_run_order, measurement_specs, measurement_tasks, optimal_accuracy_options,
                   solve_options, split_alongside)
from .report import ReproduceData, write_outputs
from .saved import save_run

__all__ = ["ReproduceResult", "reproduce", "run_status", "RunContext", "BackgroundLane"]


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


@dataclass(frozen=True)
class RunContext:
    """What every stage of a run shares: the configuration, the store, the executor and where messages go.

    Attributes
    ----------
    config : ReproduceConfig
    store : ResultStore
        A connection used in the thread that opened it.
    executor : object or None
        From :func:`validation.runtime.sweep.make_executor`; ``None`` runs serially.
    progress : bool or None
        Progress bars on stderr.
    log : file-like or None
        Where one-line stage messages go.
    """

    config: ReproduceConfig
    store: ResultStore
    executor: object = None
    progress: bool | None = None
    log: object = None

    def say(self, text) -> None:
        """Write one stage message to ``log`` (nothing without one)."""
        if self.log is not None:
            self.log.write(text + "\n")
            self.log.flush()


def _estimate_all(ctx: RunContext, runs, lane="") -> list:
    """The capacity estimates ``runs`` (from :func:`~validation.reproduce.plan.capacity_runs`) as
    ``CapacityEstimate.to_dict()`` dicts."""
    config = ctx.config
    estimates = []
    for problem, solver, d, kappa, design, options in runs:
        ensemble = solver_spec(solver).capacity_ensemble(config.hebbian_ensemble)
        ctx.say(f"capacity{lane}: {problem} {solver} d={d} kappa={kappa:g}")
        t0 = time.perf_counter()
        est = estimate_capacity(d, problem, solver, kappa, ensemble, seed=config.seed, design=design,
                                options=dataclasses.replace(options, executor=ctx.executor, store=ctx.store,
                                                            progress=ctx.progress))
        estimates.append({**_estimate_record(est), "wall_s": time.perf_counter() - t0})
        if lane:
            ctx.say(f"capacity{lane}: {problem} {solver} d={d} done in {estimates[-1]['wall_s']:.0f} s "
                    f"(p_c = {estimates[-1]['p_c']:.1f}, {estimates[-1]['status']})")
    return estimates


_ALONGSIDE = " (alongside)"


def _estimate_alongside(ctx: RunContext, path, runs) -> list:
    """:func:`_estimate_all` with its own connection to the result store (for a second thread)."""
    with ResultStore(path) as store:
        return _estimate_all(dataclasses.replace(ctx, store=store, progress=False), runs, lane=_ALONGSIDE)


class BackgroundLane:
    """``fn(*args)`` in a daemon thread (so an interrupted run does not wait for it at exit).

    The large-d capacity estimates run this way alongside the other stages
    (:func:`~validation.reproduce.plan.split_alongside`).
    """

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


def _measure(ctx: RunContext, specs):
    """Run the measurements of ``specs``: ((problem, solver, kappa, p) -> records, tasks, failed)."""
    config = ctx.config
    dm = config.spectra_dim
    for prob, solver, kappa, _, p in specs:  # before any trial: the sizes the solvers can take
        check_problem(dm, p, prob, solver, kappa)
    tasks = measurement_tasks(config, specs)
    ctx.say(f"measurements at d={dm}: {len(tasks)} solves")
    rep = run_tasks(tasks, ctx.store, ctx.executor, progress=ctx.progress, desc=f"spectra/scores d={dm}")
    measurements, failed = {}, 0
    for t in tasks:
        rec = rep.records[t]
        if rec.get("status") == "error":
            failed += 1
            continue
        measurements.setdefault((t.problem, t.solver, t.kappa, t.p), []).append(rec)
    return measurements, len(tasks), failed


def _measure_accuracy(ctx: RunContext) -> list:
    """The accuracy curves of the configuration (:func:`~validation.reproduce.plan.accuracy_runs`), as
    ``AccuracyCurve`` objects."""
    config = ctx.config
    curves = []
    for solver, d, alphas, ensemble, opts in accuracy_runs(config):
        ctx.say(f"accuracy: {solver} d={d}")
        # options are not part of the store key: extra optimal options get their own experiment name
        extra = sorted(optimal_accuracy_options(config)) if solver == config.optimal_solver else []
        curves.append(measure_accuracy(d, loads_from_alpha(d, alphas), solver=solver, ensemble=ensemble,
                                       seed=config.seed, trials=config.accuracy_trials, solver_options=opts,
                                       executor=ctx.executor, store=ctx.store, progress=ctx.progress,
                                       experiment="_".join(["accuracy", *extra])))
    return curves


def _estimate_outputs(ctx: RunContext) -> list:
    """Capacity estimates with ``K`` distinct answers at ``outputs_dim`` (records with key ``outputs``)."""
    config = ctx.config
    d = config.outputs_dim
    opts = solve_options(config, config.optimal_solver, 1.0)
    design = CapacityDesign(trials=config.trials, rounds=config.rounds, initial_points=config.initial_points)
    records = []
    for problem in ("op", "dp"):
        for k in config.outputs_grid:
            ctx.say(f"capacity: {problem} {config.optimal_solver} d={d} outputs={k}")
            # K is an instance option, not part of the store key: one experiment name per K
            options = CapacityOptions(solver_options=opts, outputs=k, executor=ctx.executor, store=ctx.store,
                                      progress=ctx.progress, experiment=f"outputs{k}")
            est = estimate_capacity(d, problem, config.optimal_solver, 1.0, "gaussian", seed=config.seed,
                                    design=design, options=options)
            records.append(_estimate_record(est))
    return records


def _measure_zipf(ctx: RunContext) -> dict:
    """The Zipf error measurements of the configuration (figure 8): ``{"measurements": [...], "theory_curves":
    [...]}``, the measurements as ``ZipfMeasurement.to_dict()`` dicts.

    They run in this process, one (d, a) after the other (no result store: a resumed run measures them
    again); instance seeds depend on ``config.seed``, N and the instance only.
    """
    config = ctx.config
    measurements = []
    for a in config.zipf_exponents:
        for d in config.zipf_dims:
            n = overloaded_facts(d, config.zipf_overload)
            ctx.say(f"zipf: d={d} N={n} a={a:g}")
            settings = ZipfSettings(adam_steps=config.zipf_adam_steps, time_limit=config.time_limit, progress=False)
            res = measure_zipf(d, n, a, solvers=config.zipf_solvers, trials=config.zipf_trials, problem="op",
                               seed=config.seed, settings=settings)
            measurements.append(res.to_dict())
    dims = sorted(set(config.zipf_dims))
    grid = sorted({int(round(x)) for x in np.geomspace(dims[0], dims[-1], 9)} | set(dims)) if dims else []
    curves = zipf_theory_curves(grid, config.zipf_exponents, config.zipf_overload, config.zipf_solvers)
    return {"measurements": measurements, "theory_curves": curves}


def run_status(estimates, failed_measurements, accuracy=(), zipf=()) -> tuple:
    """(status, message) of a run from its estimates, failed measurements, accuracy curves and Zipf measurements."""
    bad = [f"{e['solver']} {e['problem']} d={e['d']} kappa={e['kappa']:g}: {e['status']}"
           for e in estimates if not e["converged"]]
    if failed_measurements:
        bad.append(f"{failed_measurements} measurement trials failed")
    bad += [f"accuracy {c.solver} d={c.d}: {c.message}" for c in accuracy if not c.converged]
    bad += [f"zipf d={m['d']} a={m['a']:g}: {m['message']}" for m in zipf if not m["converged"]]
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
        From :func:`validation.runtime.sweep.make_executor`; ``None`` runs serially.
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
    ctx = RunContext(config, ResultStore(out), executor, progress, log)
    stages = {}

    def timed(name, fn, *args):
        t0 = time.perf_counter()
        value = fn(*args)
        stages[name] = time.perf_counter() - t0
        return value

    runs, alongside = split_alongside(config, executor)
    lane = None
    try:
        if alongside:
            lane = BackgroundLane(_estimate_alongside, ctx, ctx.store.path, alongside)
        estimates = timed("capacity estimates", _estimate_all, ctx, runs)
        specs = measurement_specs(config, estimates)
        measurements, measured, failed = timed("spectra and scores", _measure, ctx, specs)
        accuracy = timed("accuracy curves", _measure_accuracy, ctx)
        outputs = timed("K distinct answers", _estimate_outputs, ctx)
        zipf = timed("Zipf errors", _measure_zipf, ctx) if config.zipf_dims else None
        if lane is not None:
            lane.check()
            ctx.say("waiting for the large-d capacity estimates")
            more = timed("waiting for the large-d estimates", lane.result)
            estimates = in_run_order(config, runs + alongside, estimates + more)
    except BaseException:
        if lane is not None:
            terminate_executor(executor)  # ends the sweep of the other thread too
        raise
    finally:
        ctx.store.close()
    ctx.say("theory curves")
    theory = timed("theory curves", _theory_curves, config)
    ctx.say("figures and report")
    # the estimates that ran alongside, by (problem, solver, d, kappa): the report names them
    run = {"stages": stages, "start": start, "workers": _workers(executor),
           "alongside": None if lane is None else (lane.seconds, [r[:4] for r in alongside])}
    data = ReproduceData(estimates, specs, measurements, theory, accuracy, outputs, zipf)
    written = write_outputs(out, config, data, run)
    save_run(out, config, data, written["run"])
    zipf_measurements = zipf["measurements"] if zipf else []
    trials_run = (sum(c["trials"] for e in estimates + outputs for c in e["curve"]) + measured
                  + sum(pt.trials + pt.errors for c in accuracy for pt in c.points)
                  + sum(m["trials"] for m in zipf_measurements))
    status, message = run_status(estimates + outputs, failed, accuracy, zipf_measurements)
    return ReproduceResult(out, written["report"], tuple(written["figures"]), tuple(written["tables"]),
                           time.perf_counter() - start, trials_run, status, status == "ok", message,
                           config.to_dict())


def _workers(executor) -> str:
    """A short description of ``executor`` for the report."""
    kind = getattr(executor, "kind", None)
    if kind is None:
        return "serial (one process)"
    n = getattr(executor, "workers", None)
    return kind + (f", {n} worker{'s' if n != 1 else ''}" if n else "")


def _theory_curves(config):
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
