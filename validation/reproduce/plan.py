"""The plan of a ``validation reproduce`` run: every capacity estimate, measurement and accuracy curve.

Pure functions of a :class:`~validation.reproduce.config.ReproduceConfig`: the lists of
runs that :mod:`validation.reproduce.run` executes, in their order, with the solver
options of every trial.  See ``notes/reproduce.md``.
"""

from __future__ import annotations

import dataclasses
import math

from ..capacity import CapacityDesign, CapacityOptions, theory_capacity
from ..capacity.trials import instance_options
from ..measurements.ce_protocol import CEProtocol
from ..solvers.engine.registry import rank_solver, solver_spec
from ..runtime.sweep import Task
from .config import ReproduceConfig

__all__ = ["solve_options", "scale_runs", "capacity_runs", "split_alongside", "in_run_order", "measurement_specs",
           "measurement_tasks", "accuracy_runs", "optimal_accuracy_options"]


def solve_options(config: ReproduceConfig, solver: str, kappa: float, time_limit=None, *,
                  decision=True) -> dict:
    """Options of one ``optimal`` trial: the time limit, the rank-m starts at kappa < 1 and, for a
    capacity trial (``decision``), storability only (no max-margin refinement)."""
    if not solver_spec(solver).takes_run_options:
        return {}
    opts = {"time_limit": config.time_limit if time_limit is None else time_limit}
    if decision:
        opts.update(solver_spec(solver).decision_settings())
    opts.update(solver_spec(solver).rank_search_settings(kappa, config.rank_restarts))
    return opts


def scale_runs(config: ReproduceConfig) -> tuple:
    """``config.scale_runs``, or none for the LP reference (its memory grows as d p^2: small d only)."""
    return config.scale_runs if solver_spec(config.optimal_solver).scales_to_large_d else ()


def capacity_runs(config: ReproduceConfig) -> list:
    """(problem, solver, d, kappa, design, options) of every capacity estimate of ``config``.

    ``design`` is the :class:`~validation.capacity.CapacityDesign` and ``options`` the
    :class:`~validation.capacity.CapacityOptions` (the solver options) of
    :func:`~validation.capacity.estimate_capacity`; the caller adds how the trials run
    (executor, store, progress) with ``dataclasses.replace``.
    """
    grid = CapacityDesign(trials=config.trials, rounds=config.rounds, initial_points=config.initial_points)

    def run(problem, solver, d, kappa):
        return problem, solver, d, kappa, grid, CapacityOptions(solver_options=solve_options(config, solver, kappa))

    runs = [run(prob, config.optimal_solver, d, 1.0) for d in config.optimal_dims for prob in ("op", "dp")]
    runs += [run("op", "hebbian", d, 1.0) for d in config.hebbian_dims]
    # rank constraints need the projected-gradient solver (the LP is full rank only)
    runs += [run("op", rank_solver(), config.kappa_dim, k) for k in config.kappas]
    if config.kappa_dim not in config.optimal_dims or config.optimal_solver != rank_solver():
        runs.append(run("op", rank_solver(), config.kappa_dim, 1.0))
    for prob, d, trials, rounds in scale_runs(config):
        scale = CapacityDesign(kind="bracket", trials=trials, rounds=rounds, bracket_step=config.scale_step)
        options = CapacityOptions(solver_options=solve_options(config, config.optimal_solver, 1.0,
                                                                config.scale_time_limit))
        runs.append((prob, config.optimal_solver, d, 1.0, scale, options))
    return runs


def split_alongside(config: ReproduceConfig, executor) -> tuple:
    """(runs of this thread, runs alongside it): the large-d estimates run in a second thread.

    With a pool of 2 or more workers the large-d estimates (``scale_runs``; the one at
    ``spectra_dim`` excepted, since the measurements start from it) run in a thread of
    their own alongside every other stage, sharing the pool: a bracketing point of a few
    long trials leaves workers idle while its last trial runs, and the other stages fill
    them.  The estimates and every trial are the same either way (each trial's seed
    depends on its key only).  A serial run keeps one thread.
    """
    runs = capacity_runs(config)
    if (getattr(executor, "workers", None) or 0) < 2:
        return runs, []
    large = {(prob, d) for prob, d, _, _ in scale_runs(config) if d != config.spectra_dim}
    alongside = [r for r in runs if r[4].kind == "bracket" and (r[0], r[2]) in large]
    # the longest chain first: the short trials of the other stages fill its idle workers
    alongside.sort(key=lambda r: (r[2], r[0] == "dp"), reverse=True)
    return [r for r in runs if r not in alongside], alongside


def in_run_order(config: ReproduceConfig, runs, estimates) -> list:
    """``estimates`` (one per run of ``runs``) in the order of :func:`capacity_runs`."""
    order = capacity_runs(config)
    position = {}
    for run, est in zip(runs, estimates):
        i = next(k for k, r in enumerate(order) if r == run and k not in position)
        position[i] = est
    return [position[k] for k in sorted(position)]


def measurement_specs(config: ReproduceConfig, estimates) -> list:
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
            solver = config.optimal_solver if kappa == 1.0 else rank_solver()
            specs.append((problem, solver, kappa, "gaussian", p_near(problem, solver, kappa)))
    # Hebbian memories at the same p as the optimal OP one (same load)
    specs.append(("op", "hebbian", 1.0, config.hebbian_ensemble, specs[0][4]))
    return specs


def measurement_tasks(config: ReproduceConfig, specs) -> list:
    """The measurement trials of ``specs`` (from :func:`measurement_specs`): ``spectra_instances`` each."""
    dm = config.spectra_dim
    return [Task("validation.reproduce:measurement_trial", "measure", prob, solver, ens, dm, p, kappa,
                 config.seed, t,
                 tuple({**solve_options(config, solver, kappa, decision=False), **instance_options(prob)}.items()))
            for prob, solver, kappa, ens, p in specs
            for t in range(config.spectra_instances)]


def accuracy_runs(config: ReproduceConfig) -> list:
    """(solver, d, alphas, ensemble, options) of every accuracy curve of ``config``."""
    runs = [("hebbian", d, config.accuracy_alphas, config.hebbian_ensemble, {}) for d in config.accuracy_dims]
    opts = optimal_accuracy_options(config)
    if solver_spec(config.optimal_solver).takes_run_options:
        opts.setdefault("time_limit", config.time_limit)
    runs += [(config.optimal_solver, d, config.accuracy_optimal_alphas, "gaussian", opts)
             for d in config.accuracy_optimal_dims]
    ce = CEProtocol()
    adam = {"max_iter": ce.max_iter, **dataclasses.asdict(ce.adam_options(1.0))}
    runs += [("adam", d, config.accuracy_optimal_alphas, ce.ensemble, adam) for d in config.accuracy_adam_dims]
    return runs


def optimal_accuracy_options(config: ReproduceConfig) -> dict:
    """``accuracy_optimal_options`` as a dict; they are options of ``optimal`` only (none for ``lp``)."""
    return dict(config.accuracy_optimal_options) if solver_spec(config.optimal_solver).takes_run_options else {}

