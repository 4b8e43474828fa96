"""Running many trials: task sweeps, executors and the result store.

* :mod:`.sweep`: :class:`~validation.runtime.sweep.Task`, ``run_tasks`` and the seed of
  each trial;
* :mod:`.executors`: serial and process-pool executors with pinned thread counts;
* :mod:`.store`: :class:`~validation.runtime.store.ResultStore`, the SQLite store that
  lets an interrupted sweep resume (``notes/reproduce.md``).
"""
