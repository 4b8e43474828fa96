r"""
A small capacity sweep against the theory
==========================================

The capacity :math:`p_c` at a finite ``d`` is where half of the random instances are
storable. ``validation.estimate_capacity`` measures P(stored) with the certified optimal
solver at a few numbers of pairs ``p`` around the theory's value, fits a logistic curve
in :math:`\ln p` and returns :math:`p_c` with a 95 % profile-likelihood interval. The
finite-size theory ``replica.capacity(d)`` predicts :math:`p_c` without drawing a single
instance.

This sweep is small (``d = 16``, 12 instances per point, one refinement round) so that it
runs in seconds; the results pages measure the same with hundreds of trials up to
``d = 256``.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import norm

import replica
import validation
from validation.capacity import CapacityDesign
from validation.solvers import set_threads

set_threads(1)

d = 16
theory = replica.capacity(d)
print(f"theory:   p_c = {theory.p_c:.2f}, load alpha = {theory.alpha:.3f}")

estimate = validation.estimate_capacity(d=d, problem="dp", solver="optimal", seed=0,
                                        design=CapacityDesign(trials=12, rounds=1))
print(f"measured: p_c = {estimate.p_c:.2f} [{estimate.p_c_low:.2f}, {estimate.p_c_high:.2f}] "
      f"(fit {estimate.status}, {sum(point.trials for point in estimate.curve)} instances)")

# %%
# P(stored) at each p, with Wilson intervals
# -------------------------------------------
# Every instance is decided (``stored`` or a ``not_stored`` certificate), so each point
# is a binomial count. The Wilson score interval stays inside [0, 1] at counts of 0 or
# all.


def wilson(successes, trials, level=0.95):
    """Wilson score interval of a binomial proportion."""
    z = norm.ppf(0.5 + level / 2)
    phat = successes / trials
    centre = (phat + z**2 / (2 * trials)) / (1 + z**2 / trials)
    half = z * np.sqrt(phat * (1 - phat) / trials + z**2 / (4 * trials**2)) / (1 + z**2 / trials)
    return centre - half, centre + half


points = sorted(estimate.curve, key=lambda point: point.p)
p = np.array([point.p for point in points], dtype=float)
decided = np.array([point.stored + point.not_stored + point.not_found for point in points])
stored = np.array([point.stored for point in points])
low, high = wilson(stored, decided)
for row in zip(p, stored, decided, low, high):
    print("p = {:5.0f}: stored {:2d} / {:2d}, 95 % Wilson [{:.2f}, {:.2f}]".format(*row))

# %%
# The figure: the measured points, the fitted curve (the logistic in :math:`\ln p`
# through :math:`p_c` with the fitted slope) and the theory's :math:`p_c`.

grid = np.linspace(p.min() * 0.95, p.max() * 1.05, 200)
fitted = 1 / (1 + np.exp(estimate.slope * (np.log(grid) - np.log(estimate.p_c))))

fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
frequency = stored / decided
yerr = np.clip([frequency - low, high - frequency], 0, None)  # 0 up to rounding at 0 or all
ax.errorbar(p, frequency, yerr=yerr, fmt="o",
            capsize=3, label="measured (Wilson 95 %)")
ax.plot(grid, fitted, color="tab:blue", alpha=0.6, label="logistic fit")
ax.axvspan(estimate.p_c_low, estimate.p_c_high, color="tab:blue", alpha=0.12, label="measured $p_c$, 95 %")
ax.axvline(theory.p_c, color="black", ls="--", label=f"theory $p_c$ = {theory.p_c:.1f}")
ax.set_xlabel("pairs p")
ax.set_ylabel("P(stored)")
ax.set_title(f"optimal memory, decoupled problem, d = {d}")
ax.legend(fontsize=8)
plt.show()
