r"""
Score laws: how the optimal memory stores
=========================================

The optimal memory stores by *water filling*. For input :math:`\mu` the scores of the
competitors (the wrong outputs) start as Gaussians of unit variance and the target's
score as another; the optimal ``W`` lifts the target and pushes the competitors above a
water level :math:`L^*` down to it, so that after filling the target sits just above
the top competitor. The theory gives the law of every field:
``replica.optimal.optimal_score_laws(p)`` summarises it and ``replica.optimal.sample_optimal_scores(p)``
draws exact samples of it.

We compare those laws with the scores of an optimal memory found by the certified
solver, measured with ``validation.measurements.spectra_and_scores.score_distribution``. The theory
speaks in units of the competitors' standard deviation; ``score_distribution`` returns
scores in units of :math:`\lVert W\rVert_F / d`, which is that standard deviation for a
memory independent of the pairs. The optimal memory is not (it pushes its competitors
down), so we divide by the competitors' measured standard deviation as well.
"""

import matplotlib.pyplot as plt
import numpy as np

import replica
import validation
from validation.solvers import set_threads
from validation.measurements.spectra_and_scores import score_distribution

set_threads(1)

# %%
# A stored optimal memory near capacity
# -------------------------------------
# A few instances at ``d = 32`` just below the theory's :math:`p_c`, solved with the
# max-margin refinement (``refine=True``: the memory of largest margin, not only a
# storing one); we pool the scores of the stored ones.

d = 32
p = int(0.93 * replica.capacity(d).p_c)
targets, top_competitors, margins = [], [], []
for seed in range(4):
    instance = validation.make_instance(d=d, p=p, problem="dp", seed=seed)
    solution = validation.solve(instance, "optimal", refine=True)
    print(f"seed {seed}: {solution.status}, margin {solution.margin:.4f}")
    if solution.stored:
        scores = score_distribution(instance, solution)
        spread = scores.competitors.std()  # measured competitor sd, in units of ||W||_F / d
        print(f"        competitor sd {spread:.3f} x ||W||_F / d")
        targets.append(scores.targets / spread)
        top_competitors.append(scores.top_competitors / spread)
        margins.append(solution.margin / spread)  # the margin in the same units
targets = np.concatenate(targets)
top_competitors = np.concatenate(top_competitors)

# %%
# The theory's laws at the same p
# -------------------------------
# Below capacity the optimal memory keeps a positive margin ``m`` (here in competitor-sd
# units); the theory's laws at ``p`` with that margin (``margin=``) are the ones to
# compare with: the p pairs are then exactly at the capacity of margin m.

margin = float(np.mean(margins))
laws = replica.optimal.optimal_score_laws(p, margin=margin, seed=0)
sample = replica.optimal.sample_optimal_scores(p, margin=margin, size=100_000, seed=0)
print(f"p = {p}, margin {margin:.3f}: target mean, measured {targets.mean():.3f}, theory {laws.target.mean:.3f}")
print(f"        top competitor mean, measured {top_competitors.mean():.3f}, "
      f"theory {laws.top_competitor.mean:.3f}")
print(f"        before filling the top competitor would average {laws.top_competitor_before.mean:.3f} "
      f"(extreme-value threshold sqrt(2 ln p) = {laws.extreme_value_threshold:.3f})")
print(f"        fraction of targets lifted (theory): {laws.fraction_lifted:.3f}")

fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained", sharey=True)
bins = np.linspace(0, 4, 41)
for ax, measured, theory, name in ((axes[0], targets, sample.target_after, "target"),
                                   (axes[1], top_competitors, sample.top_competitor_after, "top competitor")):
    ax.hist(measured, bins=bins, density=True, alpha=0.5, label=f"measured, d = {d}")
    ax.hist(theory, bins=bins, density=True, histtype="step", lw=1.5, color="black", label="theory")
    ax.set_xlabel(f"{name} score / competitor sd")
    ax.set_title(f"{name} after filling, p = {p}")
axes[0].set_ylabel("density")
axes[1].hist(sample.top_competitor_before, bins=bins, density=True, histtype="step", ls=":", color="gray",
             label="theory, before filling")
axes[0].legend(fontsize=8)
axes[1].legend(fontsize=8)
plt.show()

# %%
# The means agree to a few per cent; the measured laws are wider than the theory's,
# which is exact as ``d`` grows at fixed load: at ``d = 32`` each score also carries
# the finite-size fluctuations of the instance and of the memory.
