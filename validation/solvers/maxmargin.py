"""Certified max-margin W at full rank: the front end of :func:`solve_max_margin`.

The max-margin memory solves the convex QP ``min (1/2) ||W||_F^2`` subject to every
margin constraint ``m_i(W) >= 1``, by dual block coordinate ascent with a certified
duality gap: the verified ``margin`` (a lower bound on the best normalised margin) and
the ``margin_bound`` (an upper bound), stopping when their relative gap is at most
``tol``. The method, its working set and its certificates are described in the engine
module :mod:`validation.solvers.engine.dual_ascent` and in ``notes/max_margin.md``.
"""

from __future__ import annotations

from .engine.dual_ascent import DualAscentRun, checked_max_margin_arguments
from .engine.dual_working_set import MaxMarginOptions, MaxMarginResult
from .engine.warmup import warm_up_max_margin

__all__ = ["solve_max_margin", "MaxMarginResult", "MaxMarginOptions"]


def solve_max_margin(instance, W0=None, *, tol=0.02, max_iter=100000, time_limit=None, seed=None,
                     callback=None, options=None) -> MaxMarginResult:
    """Max-margin W of a full-rank instance, with a certified relative gap.

    Parameters
    ----------
    instance : validation.Instance
        OP or DP instance (``make_instance``), any number of distinct answers.
    W0 : array_like, shape (d, d), optional
        A memory that stores the instance (e.g. ``solve(instance, "optimal",
        refine=False).W``): it seeds the first working set and is returned when the
        budget ends before the dual iterate is better.  Default: the Hebbian W seeds the
        working set.
    tol : float, optional
        Certified relative gap at which the solve stops (default 0.02), in (0, 1).
    max_iter : int, optional
        Most sweeps over the working set (default 100000).
    time_limit : float or None, optional
        Wall-time budget in seconds (default: none); checked between sweeps.  The first
        call of a process compiles the numba kernels first, outside this budget.
    seed : None, int, SeedSequence or Generator, optional
        Order of the inputs in the sweeps (``None``: ``DEFAULT_SEED``).
    callback : callable, optional
        ``callback(state)`` after every full pass with a dict (``phase``,
        ``iterations``, ``full_passes``, ``margin``, ``estimate``, ``bound``, ``gap``,
        ``repairs``, ``seconds``).  With a callback, Ctrl-C ends the solve with status
        ``"interrupted"`` and the best verified state.
    options : MaxMarginOptions or mapping, optional
        Working-set and sweep settings (:class:`MaxMarginOptions`).

    Returns
    -------
    MaxMarginResult
        ``margin`` (verified, float64, all constraints), ``margin_bound`` (certified upper
        bound on the optimum), ``gap``, ``status``.

    Raises
    ------
    ValueError
        For ``tol`` outside (0, 1), ``max_iter < 1``, a non-positive ``time_limit``, a
        ``W0`` that is not a finite (d, d) array, a ``callback`` that is not callable,
        bad options.

    Notes
    -----
    Derivation, certificates and cost: ``notes/max_margin.md``.
    """
    args = checked_max_margin_arguments(instance, W0, tol, max_iter, time_limit, callback, options)
    warm_up_max_margin()
    return DualAscentRun(instance, seed=seed, **args).run()
