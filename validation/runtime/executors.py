"""Executors for sweeps: a process pool that can be rebuilt or terminated, dask, and serial.

:func:`make_executor` builds a process pool (``spawn``, one numba / BLAS thread per
worker unless ``validation.solvers.set_threads`` chose more, explicit ``max_workers``)
or a ``dask.distributed`` executor (``Client(address)`` for a scheduler, else a
``LocalCluster`` of single-threaded processes).  Any object with
``submit(fn, *args) -> concurrent.futures.Future`` works with
:func:`validation.runtime.sweep.run_tasks`.

Worker processes are started with SIGINT blocked (:func:`spawning`) and ignore it
(:func:`worker_init`), so a Ctrl-C reaches the calling process only, which then ends
them (:func:`terminate_executor`).  Several sweeps in different threads may share one
:class:`ProcessPool`: a pool broken by one of them is rebuilt once, and a terminated
pool refuses new tasks with ``RuntimeError``.

See ``notes/reproduce.md``.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import signal
import threading

from replica.common.checks import check_choice, check_int

from ..solvers.engine.threads import BLAS_THREAD_VARIABLES

__all__ = ["make_executor", "terminate_executor", "ProcessPool", "DaskExecutor", "SerialExecutor", "worker_init",
           "spawning", "THREAD_VARIABLES"]

THREAD_VARIABLES = ("NUMBA_NUM_THREADS", *BLAS_THREAD_VARIABLES)


def worker_init(threads: int = 1) -> None:
    """Worker set-up: SIGINT ignored (the parent ends the workers), ``threads`` numba / BLAS threads."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for var in THREAD_VARIABLES:
        os.environ[var] = str(threads)
    from ..solvers.engine.threads import set_threads

    set_threads(threads)


@contextlib.contextmanager
def spawning(threads: int):
    """While worker processes may be started: thread variables set to ``threads``, SIGINT blocked.

    A blocked signal stays blocked in a child across ``exec``, so a spawned worker
    never sees the terminal's SIGINT (not even before its initializer ran); a SIGINT
    that arrives meanwhile is delivered to this process when the block ends.
    """
    saved = {v: os.environ.get(v) for v in THREAD_VARIABLES}
    for v in THREAD_VARIABLES:
        os.environ[v] = str(threads)
    main = threading.current_thread() is threading.main_thread()
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        for v, val in saved.items():
            if val is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = val
        if main:  # last: a pending SIGINT is raised here
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class ProcessPool:
    """A spawn-context process pool that can be rebuilt after a worker died, or terminated."""

    kind = "local process pool"

    def __init__(self, workers: int):
        import multiprocessing

        from ..solvers.engine.threads import thread_count

        self.workers = workers
        self.threads = thread_count()
        self._ctx = multiprocessing.get_context("spawn")
        self._pool = None
        self._terminated = False
        self._lock = threading.Lock()  # several sweeps (threads) may share the pool
        self._new_pool()

    def _new_pool(self):
        self._pool = cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx,
                                            initializer=worker_init, initargs=(self.threads,))

    def _check_open(self):
        if self._terminated:
            raise RuntimeError("the process pool was terminated (after an interrupt or a fault); "
                               "make a new executor")

    def rebuild(self):
        """Replace the pool if it is broken (a pool that another sweep rebuilt already is kept)."""
        with self._lock:
            self._check_open()
            if self._pool is not None and not getattr(self._pool, "_broken", True):
                return
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
            self._new_pool()

    def submit(self, fn, *args):
        """Submit ``fn(*args)`` to the pool (starting its workers on demand); a ``Future``."""
        with self._lock:
            self._check_open()
            with spawning(self.threads):  # workers are started on demand, inside submit
                return self._pool.submit(fn, *args)

    def terminate(self, timeout: float = 2.0):
        """End the workers now (SIGTERM, then SIGKILL after ``timeout`` s) and join them.

        The pool takes no more tasks afterwards: ``submit`` and ``rebuild`` raise
        ``RuntimeError``, so a sweep in another thread stops instead of starting new workers.
        """
        with self._lock:
            self._terminated = True
        if self._pool is None:
            return
        processes = list((getattr(self._pool, "_processes", None) or {}).values())
        for proc in processes:
            proc.terminate()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None
        for proc in processes:
            proc.join(timeout)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout)

    def shutdown(self, wait=True, cancel_futures=False):
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
            self._pool = None


class DaskExecutor:
    """concurrent.futures view of a dask.distributed client (closes what it opened)."""

    kind = "dask"

    def __init__(self, workers: int, scheduler: str | None, connect_timeout: float = 10.0):
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - optional dependency
            raise ValueError("--executor dask needs dask.distributed: "
                             "pip install 'linear-memory-capacity[dask]'") from None
        self.cluster = None
        self.workers = workers
        if scheduler:
            try:
                self.client = Client(scheduler, timeout=connect_timeout)
            except (OSError, TimeoutError) as exc:
                raise ValueError(f"dask scheduler {scheduler!r} is unreachable "
                                 f"(no answer within {connect_timeout:g} s: {type(exc).__name__})") from None
            self.client.run(worker_init)
        else:
            env = {v: "1" for v in THREAD_VARIABLES}
            self.cluster = LocalCluster(n_workers=workers, processes=True, threads_per_worker=1,
                                        dashboard_address=None, env=env)
            self.client = Client(self.cluster)
        self._executor = self.client.get_executor(pure=False)

    def submit(self, fn, *args):
        return self._executor.submit(fn, *args)

    def rebuild(self):  # dask reschedules tasks of dead workers itself
        pass

    def shutdown(self, wait=True, cancel_futures=False):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    terminate = shutdown


class SerialExecutor:
    """Runs tasks in the calling process (workers=0): useful for debugging and tiny runs."""

    def submit(self, fn, *args):
        # an exception is kept in the future; KeyboardInterrupt goes straight to the caller
        fut = cf.Future()
        try:
            fut.set_result(fn(*args))
        except Exception as exc:  # noqa: BLE001 - delivered through the future
            fut.set_exception(exc)
        return fut

    def rebuild(self):
        pass

    def shutdown(self, wait=True, cancel_futures=False):
        pass

    terminate = shutdown


def make_executor(executor: str = "local", workers: int | None = None, scheduler: str | None = None):
    """Build an executor for :func:`validation.runtime.sweep.run_tasks`.

    Parameters
    ----------
    executor : {"local", "dask", "serial"}
        ``local``: process pool (spawn, one numba/BLAS thread per worker).  ``dask``:
        ``dask.distributed`` (``scheduler`` address, or a local cluster of
        single-threaded worker processes).  ``serial``: run in this process.
    workers : int, optional
        Number of worker processes (default: number of CPUs, at least 1).
    scheduler : str, optional
        Address of a running dask scheduler (``tcp://host:8786``); only with ``dask``.

    Returns
    -------
    executor
        Object with ``submit``, ``rebuild`` and ``shutdown``.

    Raises
    ------
    ValueError
        Unknown executor, ``workers < 1``, ``scheduler`` without ``dask``, or a scheduler
        that does not answer within 10 s.
    """
    check_choice(executor, "executor", ("local", "dask", "serial"))
    workers = check_int(os.cpu_count() or 1 if workers is None else workers, "workers", low=1)
    if scheduler and executor != "dask":
        raise ValueError(f"scheduler is only used with executor 'dask', got executor {executor!r}")
    if executor == "serial":
        return SerialExecutor()
    if executor == "dask":
        return DaskExecutor(workers, scheduler)
    return ProcessPool(workers)



def terminate_executor(executor) -> None:
    """End the workers of ``executor`` now: ``executor.terminate()`` if it has one (others are left alone)."""
    terminate = getattr(executor, "terminate", None)
    if terminate is not None:
        terminate()
