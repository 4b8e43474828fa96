"""Certified bounds on the best recall of one instance, from a mixed-integer program (MILP).

* :mod:`.accuracy`: :func:`~validation.bounds.accuracy.accuracy_bound`, the bracket
  [search, bound] on the largest count of recalled inputs (``notes/accuracy_bound.md``);
* :mod:`.weighted`: its weighted mode, a bracket on the recalled query weight;
* :mod:`.top_k`: :func:`~validation.bounds.top_k.top_k_decision`, exact top-k storage
  (``notes/top_k.md``);
* :mod:`.milp`: the program they share (constraint rows, box, tolerances, messages).
"""
