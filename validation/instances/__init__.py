"""Random memory problems: the instance, its ensembles and the DP candidate generator.

* :mod:`.instance`: :class:`~validation.instances.instance.Instance`, one problem
  (inputs, targets, candidate outputs, weights) and its checks;
* :mod:`.ensembles`: :func:`~validation.instances.ensembles.make_instance`, the
  original (OP) and decoupled (DP) problems of each ensemble, ``EmbeddingModel`` and
  ``FactSettings``;
* ``_candidate_kernels``: the counter-based DP candidates as numba kernels (never
  stored, regenerated where needed; ``notes/simulation.md``).

The bottom layer of ``validation``: the solvers import it, it imports no solver.
"""
