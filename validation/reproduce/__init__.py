"""``validation reproduce``: every theory-against-simulation figure, CSV tables and report.md.

The run is a list of experiments; every trial goes through :func:`validation.runtime.sweep.run_tasks`
into one :class:`~validation.runtime.store.ResultStore` in the output folder, so an
interrupted run started again recomputes nothing that finished.

1. capacity estimates (``validation.capacity.estimate_capacity``) for OP and DP with
   the optimal solver, the Hebbian rule, and rank-constrained optimal memories;
2. measurements near capacity (singular values, scores in competitor-std units) of
   optimal memories (full rank and rank kappa, OP and DP) and Hebbian memories;
3. recall accuracy against the load (``validation.measurements.accuracy.measure_accuracy``) of the
   Hebbian memory, of the optimal solver's give-up search (above capacity a lower bound
   on the best accuracy) and of Adam on the cross-entropy (the protocol of
   ``notes/ce_protocol.md``, unit-norm embeddings), each at several d;
4. capacity estimates with ``K`` distinct answers shared by the facts (OP and DP,
   ``notes/many_to_one.md``) at one d.

From those, :mod:`validation.figures` draws the seven figures and
:func:`~validation.reproduce.report.write_outputs` writes ``report.md`` whose text is
generated from the numbers.  The run saves what it measured in ``OUT/reproduce_data.json``
(:mod:`~validation.reproduce.saved`); :func:`render_saved` (``validation reproduce --render``)
writes the figures, tables and report again from that file, without measuring.

Modules:

* :mod:`~validation.reproduce.config`: :class:`ReproduceConfig`, ``QUICK`` and ``FULL``;
* :mod:`~validation.reproduce.plan`: the runs of a configuration and their solver options;
* :mod:`~validation.reproduce.spectra_trial`: :func:`measurement_trial`, the task function
  of the measurements;
* :mod:`~validation.reproduce.run`: :func:`reproduce`, the stages and the background lane;
* :mod:`~validation.reproduce.tables`, :mod:`~validation.reproduce.sections`,
  :mod:`~validation.reproduce.report`: the CSV tables, the figures with their report
  paragraphs, and ``report.md``.

See ``notes/reproduce.md`` for the configurations, runtimes and sizes.
"""

from __future__ import annotations

from .config import FULL, QUICK, ReproduceConfig
from .spectra_trial import measurement_trial
from .report import ReproduceData, write_outputs
from .run import ReproduceResult, reproduce
from .saved import render_saved

__all__ = ["ReproduceConfig", "QUICK", "FULL", "reproduce", "measurement_trial", "ReproduceResult",
           "ReproduceData", "write_outputs", "render_saved"]
