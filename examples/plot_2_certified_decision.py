r"""
A certified decision and its margin
===================================

``validation.solve(instance, "optimal")`` decides whether *any* memory ``W`` stores all
``p`` pairs of an instance, not only whether one method found one:

* ``stored``: the returned ``W`` recalls every input, checked in float64, and its
  ``margin`` (the smallest gap between a target score and the best competitor, in units
  of :math:`\lVert W\rVert_F / d`) is positive;
* ``not_stored``: a certificate that **no** ``W`` of the allowed rank recalls every
  input. The certificate bounds the best normalised margin of every ``W`` by
  ``info["margin_bound"]``, at most the tolerance ``tol``: a statement about the whole
  class of memories, not about the returned one (whose own margin is negative).

Here we solve instances at ``d = 16`` and a growing number of pairs: instances of the
decoupled problem (``problem="dp"``: each input has its own candidate outputs), the
problem of the finite-size theory ``replica.capacity``. The original problem
(``problem="op"``: the inputs share their outputs) is solved the same way; its
threshold lies a few per cent higher at this size.
"""

import matplotlib.pyplot as plt
import numpy as np

import replica
import validation
from validation.solvers import set_threads

set_threads(1)

# %%
# One decision
# ------------
# Below the capacity the solver returns a storing memory with its margin; above it, a
# certificate.

d = 16
for p in (45, 75):
    instance = validation.make_instance(d=d, p=p, problem="dp", seed=1)
    solution = validation.solve(instance, "optimal")
    print(f"p = {p}: status {solution.status}, margin {solution.margin:+.4f}, "
          f"recalled {solution.recall_fraction:.0%}")
    print(f"    {solution.message}")
    if solution.status == "not_stored":
        print(f"    every W has normalised margin <= {solution.info['margin_bound']:.6f} "
              f"(tol {solution.info['tol']})")

# %%
# The decision against the number of pairs
# ----------------------------------------
# The margin of the optimal memory falls as pairs are added and crosses zero near the
# finite-size theory's ``p_c`` (``replica.capacity(d)``). Each point is one
# instance; the colour is the solver's verdict.

loads = np.arange(30, 86, 4)
margins, statuses = [], []
for p in loads:
    solution = validation.solve(validation.make_instance(d=d, p=int(p), problem="dp", seed=2), "optimal")
    margins.append(solution.margin)
    statuses.append(solution.status)
margins = np.array(margins)
statuses = np.array(statuses)
theory = replica.capacity(d)
print(f"theory: p_c = {theory.p_c:.1f} at d = {d} (load {theory.alpha:.3f})")
print("verdicts:", dict(zip(*np.unique(statuses, return_counts=True))))

fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
for status, colour in (("stored", "tab:blue"), ("not_stored", "tab:red")):
    chosen = statuses == status
    ax.plot(loads[chosen], margins[chosen], "o", color=colour, label=status)
ax.axhline(0, color="black", lw=0.8)
ax.axvline(theory.p_c, color="gray", ls="--", label=f"theory $p_c$ = {theory.p_c:.1f}")
ax.set_xlabel("pairs p")
ax.set_ylabel(r"margin / ($\|W\|_F / d$)")
ax.set_title(f"optimal memory, d = {d}")
ax.legend()
plt.show()
