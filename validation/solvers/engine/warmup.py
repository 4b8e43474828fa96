"""Compilation of the numba kernels once per process, before the clock of the first solve starts.

Two warm-ups, on tiny instances: :func:`warm_up_max_margin` compiles the kernels of the
certified max-margin solver (:mod:`validation.solvers.engine.dual_ascent`,
``validation.solvers.engine._maxmargin_kernels``), :func:`warm_up` those of the decision run
(:mod:`validation.solvers.engine.decision`, ``validation.solvers.engine._optimal_kernels``: OP and DP, full rank
and factors, the ridge-path refinement) and then the max-margin ones.  JIT compilation
never counts against a ``time_limit``.
"""

from __future__ import annotations

from .decision import DecisionRun, monitored
from .dual_ascent import DualAscentRun
from .dual_working_set import MaxMarginOptions
from .options import OptimalOptions

__all__ = ["warm_up", "warm_up_max_margin"]

_warm: dict = {"done": False}      # the decision kernels of this process are compiled
_warm_mm: dict = {"done": False}   # the max-margin kernels of this process are compiled


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel once per process, on tiny instances.

    Called before the clock of the first solve starts, so that JIT compilation never
    counts against a ``time_limit``.  Covers OP and DP, full rank and factors, the
    sparse working set, the ridge-path refinement and the certified max-margin solver.
    """
    if _warm["done"]:
        return
    _warm["done"] = True
    from validation.instances.ensembles import make_instance

    with monitored(None):
        for problem in ("op", "dp"):
            instance = make_instance(6, 40, problem, seed=0)
            for kappa in (1.0, 0.5):
                DecisionRun(instance, kappa, tol=1e-3, max_iter=50, time_limit=None, refine=True,
                            options=OptimalOptions(max_active=2)).run()
        warm_up_max_margin()


def warm_up_max_margin() -> None:
    """Compile (or load from numba's cache) the max-margin kernels once per process, on tiny instances."""
    if _warm_mm["done"]:
        return
    _warm_mm["done"] = True
    from validation.instances.ensembles import make_instance

    for problem in ("op", "dp"):
        DualAscentRun(make_instance(4, 6, problem, seed=0), None, tol=0.5, max_iter=2, time_limit=None, seed=0,
                      callback=None, options=MaxMarginOptions()).run()
