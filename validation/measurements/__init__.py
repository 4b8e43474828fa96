"""What the simulations measure, beside the theory that predicts it.

Measurements of one memory (imported by the solvers, so they import no solver):

* :mod:`.recall`: the recall check (ties fail), normalised margins and top-k recall;
* :mod:`.spectra_and_scores`: singular values and score distributions of a memory;
* :mod:`.intervals`: the Wilson interval of a measured fraction.

Sweeps over many instances, built on the solvers (most run through :mod:`validation.runtime`):

* :mod:`.accuracy`: recall accuracy against the load
  (:func:`~validation.measurements.accuracy.measure_accuracy`, ``notes/recall_accuracy.md``);
* :mod:`.zipf` and :mod:`.zipf_memories`: the recall error of facts asked with Zipf
  frequencies, and the memories it is measured on (``notes/zipf.md``);
* :mod:`.ce_protocol`: the capacity of a memory trained by gradient descent on the
  cross-entropy loss (``ce_capacity``).

The package imports none of them itself.
"""
