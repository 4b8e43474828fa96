"""Thread counts of a process: one numba and one BLAS thread per process unless the user says otherwise.

Every entry point (:func:`validation.solve`, the sweeps of :mod:`validation.runtime.sweep`)
applies :func:`set_threads` once, so that parallel sweeps never oversubscribe the
cores (``benchmarks/threads.md``).
"""

from __future__ import annotations

import os

from replica.common.checks import check_int

__all__ = ["BLAS_THREAD_VARIABLES", "set_threads", "thread_count", "ensure_threads"]

BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Variables that set the BLAS thread count (read by the libraries when they load)."""

# what the user set, read when this module is first imported (before any worker
# environment of validation.runtime.sweep is in place)
_USER_NUMBA_THREADS = os.environ.get("NUMBA_NUM_THREADS")
_USER_BLAS_THREADS = next((os.environ[v] for v in BLAS_THREAD_VARIABLES if os.environ.get(v)), None)
_threads: dict = {}   # the counts applied in this process ("set" once applied)


def set_threads(threads=None) -> dict:
    """Set the numba and BLAS thread counts of this process.

    Parameters
    ----------
    threads : int, optional
        Threads for both.  ``None``: the default policy, one thread each, except that a
        ``NUMBA_NUM_THREADS`` (numba) or ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` /
        ``MKL_NUM_THREADS`` (BLAS) set by the user before the first import is left in
        charge.  Sweeps run one thread per worker process; on a shared or small machine
        several threads per solve oversubscribe the cores and can be many times slower
        (``benchmarks/threads.md``).

    Returns
    -------
    dict
        ``{"numba": n, "blas": n}``, the counts in force (``None``: left to the library).

    Raises
    ------
    ValueError
        If ``threads`` is not an integer >= 1.

    Notes
    -----
    BLAS is limited with ``threadpoolctl`` (libraries already loaded) and through the
    variables above (libraries loaded later, child processes); numba with
    ``numba.set_num_threads`` (capped at the pool size numba started with).
    """
    import numba
    from threadpoolctl import threadpool_limits

    if threads is not None:
        threads = check_int(threads, "threads", low=1)
    numba_n = threads if threads is not None else (None if _USER_NUMBA_THREADS else 1)
    blas_n = threads if threads is not None else (None if _USER_BLAS_THREADS else 1)
    if numba_n is not None:
        numba.set_num_threads(min(numba_n, numba.config.NUMBA_NUM_THREADS))
        numba_n = numba.get_num_threads()
    if blas_n is not None:
        threadpool_limits(limits=blas_n)
        for var in BLAS_THREAD_VARIABLES:
            os.environ[var] = str(blas_n)
    _threads.update(numba=numba_n, blas=blas_n, set=True)
    return {"numba": numba_n, "blas": blas_n}


def thread_count() -> int:
    """numba threads per process in force (1 unless :func:`set_threads` or ``NUMBA_NUM_THREADS`` chose more)."""
    import numba

    ensure_threads()
    return int(numba.get_num_threads())


def ensure_threads() -> None:
    """Apply the default thread policy of :func:`set_threads` unless a count is already in force."""
    if "set" not in _threads:
        set_threads()
