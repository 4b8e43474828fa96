"""Sweeps: run many independent trials through a ``concurrent.futures``-style executor.

A *task* (:class:`Task`) is one trial: a key (experiment, problem, solver, ensemble,
d, p, kappa, seed, trial), options, and the dotted name of a *task function*
``func(task) -> dict`` that returns a record with ``status`` in
``{"stored", "not_stored", "undecided"}`` (plus whatever it measured).

:func:`run_tasks` skips tasks already finished in the :class:`~validation.runtime.store.ResultStore`,
submits the rest (a bounded window, so a killed sweep loses at most the tasks in
flight), writes each result to the store as soon as it arrives (one commit per task,
from the calling process only, so the store never sees concurrent writers) and shows
a progress bar with ETA on stderr.

Faults: an exception in a task function is caught in the worker and stored as a row
with ``status = "error"`` and the error text; a worker process that dies (segfault,
``os._exit``) breaks a process pool, which is rebuilt, and tasks that were in flight
twice when a pool broke are re-run alone so the one that kills its worker is found
and recorded as an error.  The sweep goes on in both cases.

Interrupts: worker processes are started with SIGINT blocked, so a Ctrl-C reaches the
calling process only; :func:`run_tasks` then terminates and joins the workers and
re-raises ``KeyboardInterrupt``.  Finished tasks are in the store already; tasks in
flight are not recorded, and a rerun computes them.

Threads: several :func:`run_tasks` calls may share one executor from different threads
(``validation reproduce`` runs its large-d estimates alongside the other stages this
way), each with its own :class:`~validation.runtime.store.ResultStore` connection, opened in that
thread to a store file that exists already (a connection is used in the thread that
opened it; two connections that create a new file at once can collide).  A process
pool broken by one of them is rebuilt once; a terminated pool refuses new tasks, so a
sweep in another thread ends with ``RuntimeError`` instead of starting new workers.

Executors (:mod:`validation.runtime.executors`, re-exported here): :func:`make_executor` builds a
process pool (``spawn``, one numba / BLAS thread per worker unless
``validation.solvers.set_threads`` chose more, explicit ``max_workers``) or a
``dask.distributed`` executor (``Client(address)`` for a scheduler, else a
``LocalCluster`` of single-threaded processes).  Any object with
``submit(fn, *args) -> concurrent.futures.Future`` works; :func:`terminate_executor`
ends the workers of one now.

Seeds: trial ``t`` at size ``p`` of a run with base seed ``s`` uses
``SeedSequence(s, spawn_key=(p, t))`` — the same stream as
``SeedSequence(s).spawn(p + 1)[p].spawn(t + 1)[t]`` — so a task's randomness depends on
its key only, never on the order or the machine it ran on.  The integer seed handed
to ``make_instance`` is stored with the result.

See ``notes/reproduce.md``.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import math
import os
import sys
import time
import traceback
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from typing import ClassVar

import numpy as np

from replica.common.results import Result, json_safe

from ..instances._candidate_kernels import default_generator
from .executors import ProcessPool, SerialExecutor, make_executor, terminate_executor
from .store import KEY_COLUMNS, ResultStore, package_version

__all__ = ["Task", "run_tasks", "make_executor", "terminate_executor", "task_seed", "synthetic_trial",
           "SweepReport", "keyed_version"]


@dataclass(frozen=True)
class Task:
    """One trial of a sweep.

    Attributes
    ----------
    function : str
        ``"module:function"`` of the task function ``func(task) -> dict``.
    experiment, problem, solver, ensemble : str
    d, p : int
    kappa : float
    seed : int
        Base seed of the run (the per-task stream is :func:`task_seed`).
    trial : int
    options : tuple of (name, value) pairs
        Extra options for the task function (hashable, so a Task is hashable).
    """

    function: str
    experiment: str
    problem: str
    solver: str
    ensemble: str
    d: int
    p: int
    kappa: float
    seed: int
    trial: int
    options: tuple = ()

    @property
    def generator(self) -> int | None:
        """DP: the candidate generator of the task's instances (option ``generator``, default
        ``validation.instances._candidate_kernels.default_generator()``); None for the OP, whose
        instances do not use one."""
        if self.problem != "dp":
            return None
        generator = dict(self.options).get("generator")
        return default_generator() if generator is None else int(generator)

    def key(self, version: str) -> dict:
        """The store key: the key columns, ``version`` marked with the DP generator (:func:`keyed_version`)."""
        out = {c: getattr(self, c) for c in KEY_COLUMNS if c != "version"}
        out["kappa"] = float(out["kappa"])
        out["version"] = keyed_version(version, self.generator)
        return out

    def key_tuple(self, version: str) -> tuple:
        k = self.key(version)
        return tuple(k[c] for c in KEY_COLUMNS)

    def to_dict(self) -> dict:
        """JSON-safe dictionary of the task (options as a mapping)."""
        out = asdict(self)
        out["options"] = dict(self.options)
        return json_safe(out)


def keyed_version(version: str, generator: int | None) -> str:
    """The ``version`` column of a trial: the package version, with ``+dp-generator<g>`` for a DP
    trial of generator ``g >= 2``.

    DP trials of generator 1 (every trial stored before generator 2 existed) keep the plain
    version, so old stores still load and serve them; a trial of another generator never
    matches one of them (``notes/reproduce.md``).
    """
    return version if generator in (None, 1) else f"{version}+dp-generator{int(generator)}"


def task_seed(seed: int, p: int, trial: int) -> int:
    """Integer seed of trial ``trial`` at size ``p``: from ``SeedSequence(seed, spawn_key=(p, trial))``.

    Returns a non-negative 63-bit integer (the value passed to ``make_instance``).
    """
    ss = np.random.SeedSequence(int(seed), spawn_key=(int(p), int(trial)))
    hi, lo = (int(x) for x in ss.generate_state(2, np.uint32))
    return ((hi << 32) | lo) & ((1 << 63) - 1)


def _resolve(function: str):
    module, _, name = function.partition(":")
    if not name:
        raise ValueError(f"task function must look like 'module:function', got {function!r}")
    return getattr(importlib.import_module(module), name)


def execute_task(task: Task) -> dict:
    """Run one task in the current process; exceptions become an ``error`` record."""
    start = time.perf_counter()
    try:
        record = dict(_resolve(task.function)(task))
        if record.get("status") not in ("stored", "not_stored", "undecided"):
            raise ValueError(f"task function returned status {record.get('status')!r}")
    except Exception as exc:  # noqa: BLE001 - a failing task must not stop the sweep
        tb = traceback.format_exc(limit=4)
        record = {"status": "error", "stored": None,
                  "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
                  "traceback": tb[-2000:]}
    record.setdefault("seconds", time.perf_counter() - start)
    record.setdefault("wall_seconds", time.perf_counter() - start)
    return record


@dataclass(frozen=True)
class SweepReport(Result):
    """Outcome of :func:`run_tasks`.

    Attributes
    ----------
    records : dict
        Task -> record (including tasks already in the store).
    computed, reused, errors : int
        Tasks computed now, taken from the store, and recorded as errors now.
    seconds : float
        Wall-clock time of the call.
    status : str
        ``"ok"`` (no task failed now) or ``"errors"`` (``errors`` tasks were recorded
        with status ``error``; a rerun tries them again).
    converged : bool
        ``status == "ok"``.
    message : str
    """

    STATUSES: ClassVar[tuple] = ("ok", "errors")

    records: dict = field(repr=False)
    computed: int
    reused: int
    errors: int
    seconds: float
    status: str
    converged: bool
    message: str

    @classmethod
    def of(cls, records, computed, reused, errors, seconds) -> SweepReport:
        """A report with the status and message that the counts imply."""
        message = f"{computed} computed, {reused} reused, {errors} errors"
        return cls(records, computed, reused, errors, seconds, "errors" if errors else "ok", errors == 0,
                   message)

    def _payload(self) -> dict:
        return {"computed": self.computed, "reused": self.reused, "errors": self.errors,
                "seconds": self.seconds}


def _progress(total, desc, enabled):
    from tqdm.auto import tqdm

    # shown only once a sweep has run for 2 s, so short runs stay quiet
    return tqdm(total=total, desc=desc, file=sys.stderr, disable=not enabled, smoothing=0.1,
                mininterval=0.5, leave=False, dynamic_ncols=True, delay=2.0)


def _split_finished(tasks, store, version):
    """(records of the tasks finished in ``store``, the tasks still to run)."""
    if store is None:
        return {}, list(tasks)
    done = store.finished_keys()
    records, todo = {}, []
    for t in tasks:
        if t.key_tuple(version) in done:
            records[t] = store.get(t.key(version))
        else:
            todo.append(t)
    return records, todo


def _error_record(text: str) -> dict:
    return {"status": "error", "stored": None, "error": text}


class _SweepRun:
    """The tasks of one :func:`run_tasks` call in flight: submit, collect, record, recover."""

    def __init__(self, executor, store, version, records, bar):
        self.executor, self.store, self.version, self.records, self.bar = executor, store, version, records, bar
        self.errors = 0
        self.pending: dict = {}            # future -> task
        self.breaks: dict = {}             # task -> pool breaks it was in flight for

    def record(self, task, rec) -> None:
        """Keep one finished record (and commit it to the store)."""
        rec = dict(rec)
        rec.setdefault("instance_seed", None)
        if rec["status"] == "error":
            self.errors += 1
        if self.store is not None:
            self.store.put(task.key(self.version), rec)
        self.records[task] = rec
        self.bar.update(1)

    def drain(self, todo, window: int) -> None:
        """Run every task of ``todo`` with at most ``window`` in flight."""
        self.breaks = {t: 0 for t in todo}
        queue, isolated = list(todo), []
        while queue or self.pending:
            refused = False
            while queue and len(self.pending) < window:
                t = queue.pop(0)
                try:
                    self.pending[self.executor.submit(execute_task, t)] = t
                except BrokenProcessPool:
                    # a worker died after the last wait: the pool takes nothing until it is rebuilt
                    queue.insert(0, t)
                    refused = True
                    break
            if refused and not self.pending:
                self._recover([], queue, isolated)
                continue
            done_set, _ = cf.wait(list(self.pending), return_when=cf.FIRST_COMPLETED)
            broken = self._collect(done_set, queue)
            if broken:
                self._recover(broken, queue, isolated)
            if isolated and not queue and not self.pending:
                _run_isolated(isolated, self.record)
                isolated = []

    def _collect(self, done_set, queue) -> list:
        """Record the finished futures; return the tasks whose process pool broke."""
        broken = []
        for fut in done_set:
            t = self.pending.pop(fut)
            try:
                self.record(t, fut.result())
            except BrokenProcessPool:
                broken.append(t)
            except cf.CancelledError:
                queue.insert(0, t)
            except Exception as exc:  # noqa: BLE001 - e.g. dask KilledWorker
                self.record(t, _error_record(f"{type(exc).__name__}: {exc}".splitlines()[0][:500]))
        return broken

    def _recover(self, broken, queue, isolated) -> None:
        """Every task in flight fails with the pool: collect them all, rebuild, requeue.

        A task in flight for two breaks is set aside to run alone (:func:`_run_isolated`).
        """
        for fut in list(self.pending):
            broken.append(self.pending.pop(fut))
        self.executor.rebuild()
        for t in broken:
            self.breaks[t] += 1
            (isolated if self.breaks[t] >= 2 else queue).append(t)
        queue.sort(key=lambda t: self.breaks[t], reverse=True)


def run_tasks(tasks, store: ResultStore | None = None, executor=None, *, progress: bool | None = None,
              desc: str = "sweep", window: int | None = None, version: str | None = None) -> SweepReport:
    """Run ``tasks`` (skipping those finished in ``store``) and return every record.

    Parameters
    ----------
    tasks : iterable of Task
    store : ResultStore, optional
        Where finished tasks are read from and written to (one commit per task).
        ``None``: nothing is persisted.
    executor : object, optional
        From :func:`make_executor` or any object with ``submit(fn, *args)`` returning a
        ``concurrent.futures.Future``.  ``None``: run serially in this process.
    progress : bool, optional
        Progress bar on stderr (default: when stderr is a terminal).
    desc : str
        Progress-bar label.
    window : int, optional
        Most tasks in flight at once (default: 2 x workers + 2).
    version : str, optional
        Package version in the store key (default: the installed version).

    Returns
    -------
    SweepReport
    """
    start = time.perf_counter()
    tasks = list(dict.fromkeys(tasks))  # de-duplicate, keep order
    version = package_version() if version is None else version
    records, todo = _split_finished(tasks, store, version)
    reused = len(records)
    own_executor = executor is None
    if own_executor:
        executor = SerialExecutor()
    if progress is None:
        progress = sys.stderr.isatty()
    workers = getattr(executor, "workers", None) or getattr(executor, "_max_workers", None) or 2
    run = _SweepRun(executor, store, version, records, _progress(len(todo), desc, progress and len(todo) > 0))
    try:
        run.drain(todo, window or (2 * workers + 2))
    except BaseException:
        # KeyboardInterrupt (or a fault of the sweep itself): end the workers now; what
        # finished is in the store, what was in flight is not recorded
        terminate_executor(executor)
        raise
    finally:
        run.bar.close()
        if own_executor:
            executor.shutdown()
    return SweepReport.of(records, len(todo), reused, run.errors, time.perf_counter() - start)


def _run_isolated(tasks, record) -> None:
    """Run suspected worker killers one at a time in a fresh single-worker pool."""
    for t in tasks:
        pool = ProcessPool(1)
        try:
            rec = pool.submit(execute_task, t).result()
        except BrokenProcessPool:
            rec = _error_record("worker process died while running this task (run alone to confirm)")
        except BaseException:
            pool.terminate()
            raise
        pool.shutdown(wait=True)
        record(t, rec)


# ---------------------------------------------------------------------------------
# A task with a known answer, for testing the sweep and the capacity estimator.
# ---------------------------------------------------------------------------------
def synthetic_trial(task: Task) -> dict:
    """Known-answer stand-in for a storage trial (testing only).

    ``P(stored) = 1 / (1 + exp(slope * (ln p - ln p_c)))`` with ``p_c`` and ``slope``
    from the task options (defaults ``p_c = 100``, ``slope = 8``), drawn from the task's
    own seed stream.  Fault injection for tests: option ``raise_on`` (list of
    ``(p, trial)`` pairs) raises ``RuntimeError``; ``exit_on`` kills the worker process
    with ``os._exit(3)``; ``sleep`` sleeps that many seconds; ``undecided_on`` returns
    ``undecided``; ``undecided_when_not_stored`` reports every failure as ``undecided``
    (a solver that cannot certify non-storability).
    """
    opts = dict(task.options)
    here = (task.p, task.trial)
    if here in [tuple(x) for x in opts.get("raise_on", ())]:
        raise RuntimeError(f"injected failure at p={task.p} trial={task.trial}")
    if here in [tuple(x) for x in opts.get("exit_on", ())]:
        os._exit(3)
    if opts.get("sleep"):
        time.sleep(float(opts["sleep"]))
    seed = task_seed(task.seed, task.p, task.trial)
    if here in [tuple(x) for x in opts.get("undecided_on", ())]:
        return {"status": "undecided", "stored": None, "instance_seed": seed}
    p_c = float(opts.get("p_c", 100.0))
    slope = float(opts.get("slope", 8.0))
    prob = 1.0 / (1.0 + math.exp(slope * (math.log(task.p) - math.log(p_c))))
    u = float(np.random.default_rng(seed).random())
    stored = bool(u < prob)
    if not stored and opts.get("undecided_when_not_stored"):
        return {"status": "undecided", "stored": None, "instance_seed": seed, "u": u}
    return {"status": "stored" if stored else "not_stored", "stored": stored,
            "instance_seed": seed, "u": u}
