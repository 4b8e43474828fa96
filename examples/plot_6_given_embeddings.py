r"""
Facts in correlated embeddings
==============================

A fact is an input (a subject's representation) whose answer is one of the outputs
(rows of an unembedding). In the original problem (``problem="op"``) the ``p`` inputs
share the ``p`` outputs: a memory stores the facts when each input's answer scores
above every other output. Real embeddings are not isotropic: their covariance has a
low *effective rank* :math:`(\operatorname{tr}\Sigma)^2 / \operatorname{tr}\Sigma^2`.

``validation.EmbeddingModel`` draws inputs and outputs with given covariances, and the
solvers decide each instance as before. Arrays of your own (an embedding matrix and the
rows of an unembedding) go through ``validation.Instance.from_embeddings(inputs,
outputs, answers=None, weights=None)`` into the same solvers; this example draws its
embeddings so that it runs anywhere.

What it shows: a covariance that is merely *anisotropic* (full rank) leaves the optimal
memory's capacity unchanged, because the scores :math:`u_\rho^\top W e_\mu` with
:math:`e = \Sigma_{\mathrm{in}}^{1/2} g` and :math:`u = \Sigma_{\mathrm{out}}^{1/2} h` are
those of the isotropic vectors ``g, h`` and the memory
:math:`\Sigma_{\mathrm{out}}^{1/2} W \Sigma_{\mathrm{in}}^{1/2}`: any invertible linear
map of the embeddings is absorbed by ``W``. The Hebbian rule cannot adapt and loses
recall. Embeddings confined to fewer directions than ``d`` (a singular covariance) lower
the capacity of every memory.
"""

import matplotlib.pyplot as plt
import numpy as np

import replica
import validation
from validation.solvers import set_threads

set_threads(1)

# %%
# Three geometries at d = 16
# --------------------------
# Isotropic Gaussian vectors; a power-law covariance (eigenvalues :math:`\propto i^{-1}`
# for the inputs, :math:`i^{-1/2}` for the outputs, ``replica.power_law_spectrum``);
# and inputs confined to 10 of the 16 directions.

d = 16
spectra = {
    "isotropic": (np.ones(d), np.ones(d)),
    "power law (full rank)": (replica.power_law_spectrum(d, 1.0), replica.power_law_spectrum(d, 0.5)),
    "inputs of rank 10": (np.r_[np.ones(10), np.zeros(d - 10)], np.ones(d)),
}
for name, (inputs, outputs) in spectra.items():
    print(f"{name:>22}: effective rank of the inputs {replica.effective_rank(inputs):4.1f}, "
          f"of the outputs {replica.effective_rank(outputs):4.1f}")

# %%
# Optimal and Hebbian memories against the number of facts
# --------------------------------------------------------
# Six instances per point. For the optimal memory each is decided (stored, or a
# certificate that no memory stores it); for the Hebbian rule we record the fraction of
# facts it recalls, beside ``replica.variants.covariance_hebbian_accuracy``. The instances of the
# three geometries share their seeds: the isotropic and the full-rank power-law points
# of the optimal memory coincide, verdict for verdict.

loads = np.array([16, 24, 32, 40, 48, 56, 64])
trials = 6
stored, recall, recall_theory = {}, {}, {}
for name, (input_spectrum, output_spectrum) in spectra.items():
    embeddings = validation.EmbeddingModel(input_covariance=input_spectrum, output_covariance=output_spectrum)
    stored[name], recall[name], recall_theory[name] = [], [], []
    for p in loads:
        instances = [validation.make_instance(d=d, p=int(p), problem="op", seed=1000 * t + int(p),
                                              embeddings=embeddings) for t in range(trials)]
        verdicts = [validation.solve(instance, "optimal").status for instance in instances]
        stored[name].append(verdicts.count("stored") / trials)
        recall[name].append(np.mean([validation.solve(instance, "hebbian").recall_fraction
                                     for instance in instances]))
        recall_theory[name].append(replica.variants.covariance_hebbian_accuracy(
            d, int(p), input_spectrum=input_spectrum, output_spectrum=output_spectrum, problem="op",
            size=20_000, seed=0).accuracy)
    print(f"{name:>22}: optimal stored fraction {np.round(stored[name], 2).tolist()}")
    print(f"{'':>22}  Hebbian recall {np.round(recall[name], 2).tolist()}")

fig, (ax, ax_hebb) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
for (name, values), marker, size in zip(stored.items(), "osd", (10, 5, 6)):
    ax.plot(loads, values, marker + "-", markersize=size, label=name)
    line, = ax_hebb.plot(loads, recall[name], marker, label=name)
    ax_hebb.plot(loads, recall_theory[name], "-", color=line.get_color(), alpha=0.6)
ax.axvline(replica.capacity(d).p_c, color="gray", ls="--", label="isotropic theory $p_c$")
ax.set_xlabel("facts p")
ax.set_ylabel("P(stored)")
ax.set_title(f"optimal memory, d = {d}")
ax.legend(fontsize=8)
ax_hebb.set_xlabel("facts p")
ax_hebb.set_ylabel("fraction recalled")
ax_hebb.set_title("Hebbian rule (points) and its theory (lines)")
plt.show()
