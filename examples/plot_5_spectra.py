r"""
Spectra: the singular values of an optimal memory
==================================================

At capacity the singular values of the optimal full-rank memory follow the
quarter-circle law :math:`\sqrt{4 - s^2}/\pi` on :math:`[0, 2]` (in units of
:math:`\lVert W\rVert_F / \sqrt{d}`): the law of a random Gaussian matrix, although ``W``
is anything but random. ``replica.spectrum(kappa)`` returns the predicted law
(``replica.QuarterCircle`` at full rank, a truncated quarter circle at rank
``kappa d``) and ``replica.normalized_singular_values`` puts measured values in its
units.

At a finite ``d`` the measured law is close to the quarter circle, with a slightly
heavier upper edge (a larger fourth moment) that shrinks as ``d`` grows (the results
pages measure it up to ``d = 256``).
"""

import matplotlib.pyplot as plt
import numpy as np

import replica
import validation
from validation.solvers import set_threads

set_threads(1)

# %%
# Stored memories near capacity
# -----------------------------
# Four instances at ``d = 48``, just below the theory's :math:`p_c`; the singular values
# of every stored optimal ``W`` are pooled.

d = 48
p = int(0.95 * replica.capacity(d).p_c)
optimal_values = []
for seed in range(4):
    instance = validation.make_instance(d=d, p=p, problem="dp", seed=seed)
    solution = validation.solve(instance, "optimal")
    print(f"seed {seed}: {solution.status} (margin {solution.margin:.3f})")
    if solution.stored:
        optimal_values.append(replica.normalized_singular_values(np.linalg.svd(solution.W, compute_uv=False)))
optimal_values = np.concatenate(optimal_values)

law = replica.spectrum(1.0)
print(f"second moment of s: {np.mean(optimal_values**2):.3f} (1 by the choice of units)")
print(f"fourth moment of s: measured {np.mean(optimal_values**4):.3f}, quarter circle {law.moment(4):.3f}")
print(f"largest s: measured {optimal_values.max():.3f}, edge of the law {law.support()[1]:.1f}")

# %%
# The figure
# ----------
# The histogram of the pooled values against the density of the law, and the empirical
# distribution function against the law's (``law.cdf``): with a few hundred values the
# second is the sharper comparison.

grid = np.linspace(0, 2, 300)
fig, (ax, ax_cdf) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
ax.hist(optimal_values, bins=np.linspace(0, 2.4, 17), density=True, alpha=0.55,
        label=f"optimal W, d = {d}, p = {p}")
ax.plot(grid, law.pdf(grid), color="black", label=r"quarter circle $\sqrt{4 - s^2}/\pi$")
ax.set_xlabel(r"singular value / ($\|W\|_F / \sqrt{d}$)")
ax.set_ylabel("density")
ax.legend(fontsize=8)
values = np.sort(optimal_values)
ax_cdf.step(values, np.arange(1, len(values) + 1) / len(values), where="post", label="measured")
ax_cdf.plot(grid, law.cdf(grid), color="black", label="quarter circle")
ax_cdf.set_xlabel(r"singular value / ($\|W\|_F / \sqrt{d}$)")
ax_cdf.set_ylabel("fraction below")
ax_cdf.legend(fontsize=8)
plt.show()
