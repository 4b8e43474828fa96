r"""
Capacity against rank: the alpha_c(kappa) table and curve
=========================================================

A linear memory ``W`` (d x d) of rank ``m = kappa d`` stores ``p`` input/output pairs
when every input's target output scores above all other outputs. As ``d`` grows, the
largest storable ``p`` follows the load :math:`\alpha = p \ln p / d^2`, and the replica
theory gives its threshold :math:`\alpha_c(\kappa)` in closed form:
``replica.alpha_c(kappa)`` for the optimal memory, ``replica.alpha_c_hebbian(kappa)``
for the Hebbian rule (the sum of the outer products of the pairs, truncated to rank
``m``). At full rank the optimal memory stores :math:`\alpha_c(1) = 1/2`, four times
the Hebbian rule's :math:`1/8`, and the ratio is 4 at every rank.
"""

import matplotlib.pyplot as plt
import numpy as np

import replica
from validation.solvers import set_threads

set_threads(1)  # one numba and one BLAS thread, as in every example

# %%
# The table
# ---------
# The threshold at a few rank fractions. Both functions are closed forms (no random
# numbers); the ratio shows how much the optimal memory gains over the rule.

kappas = [0.05, 0.1, 0.25, 0.5, 0.75, 1.0]
print(f"{'kappa':>6} {'alpha_c':>10} {'alpha_c_hebbian':>16} {'ratio':>7}")
for kappa in kappas:
    optimal = replica.alpha_c(kappa)
    hebbian = replica.alpha_c_hebbian(kappa)
    print(f"{kappa:6.2f} {optimal:10.5f} {hebbian:16.5f} {optimal / hebbian:7.3f}")

# %%
# The curve
# ---------
# Capacity per unit rank falls as the rank grows: a memory of rank ``kappa d`` holds
# more than ``kappa`` times the full-rank capacity.

grid = np.linspace(0.02, 1.0, 50)
optimal = np.array([replica.alpha_c(k) for k in grid])
hebbian = np.array([replica.alpha_c_hebbian(k) for k in grid])

fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
ax.plot(grid, optimal, label=r"optimal, $\alpha_c(\kappa)$")
ax.plot(grid, hebbian, "--", label=r"Hebbian, $\alpha_c^{\mathrm{Hebb}}(\kappa)$")
ax.plot(grid, grid * replica.alpha_c(1.0), ":", color="gray", label=r"$\kappa\,\alpha_c(1)$")
ax.set_xlabel(r"rank fraction $\kappa = m/d$")
ax.set_ylabel(r"capacity load $\alpha_c = p_c \ln p_c / d^2$")
ax.legend()
ax_ratio.plot(grid, optimal / hebbian)
ax_ratio.set_xlabel(r"rank fraction $\kappa$")
ax_ratio.set_ylabel("optimal / Hebbian")
plt.show()
