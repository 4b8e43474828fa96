"""The solver engine: what the solver modules of :mod:`validation.solvers` are built from.

Bottom to top (imports run downward only):

* :mod:`~validation.solvers.engine.solution` (the result type, statuses, the rank rule),
  :mod:`~validation.solvers.engine.options` (the options classes),
  :mod:`~validation.solvers.engine.threads` (BLAS and numba threads) and
  :mod:`~validation.solvers.engine.memories` (Hebbian W, truncated SVD, factor convention);
* :mod:`~validation.solvers.engine.registry`: one spec per solver and per measured memory,
  the one place that knows solver rules;
* the numba kernels ``_optimal_kernels`` and ``_maxmargin_kernels``;
* :mod:`~validation.solvers.engine.problem` (constraints, working set, full passes),
  :mod:`~validation.solvers.engine.screening` (the DP screen),
  :mod:`~validation.solvers.engine.lbfgs` (L-BFGS, exact line search),
  :mod:`~validation.solvers.engine.certificate` (the aggregated not-stored bound),
  :mod:`~validation.solvers.engine.start` (unknowns and starting points);
* :mod:`~validation.solvers.engine.dual_working_set` and
  :mod:`~validation.solvers.engine.dual_ascent` (the certified max margin),
  :mod:`~validation.solvers.engine.decision` (the decision run) and
  :mod:`~validation.solvers.engine.warmup` (numba compilation on small instances).

The solver modules (``hebbian``, ``optimal``, ``searches``, ``rank_search``, ``svp``,
``lp``, ``adam``, ``maxmargin``, ``rank_margin``) import the engine, never one another
nor the front end :mod:`validation.solvers`.
"""
