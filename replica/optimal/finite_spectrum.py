"""The spectrum of the optimal memory at a finite ``d`` and load ``p``: the finite-ratio law of its dual sum.

Model ``finite_ratio`` of :func:`replica.spectrum` (``notes/spectra.md``, section 7): the
optimal memory at load ``p`` is its dual sum ``G = sum_mu sqrt(C_mu) u_mu e_mu^T`` with
``C_mu`` the water-filling costs of ``p`` independent blocks and independent directions
(the decoupled problem); the rank-``m`` memory keeps its top ``m`` singular values.  This
module draws the costs (:func:`replica.optimal.sample_optimal_scores`, margin 0) and hands
them to :func:`replica.asymptotic.finite_ratio_spectrum`, which draws the directions.  No
parameter is fitted.

Made for the decoupled problem with gaussian embeddings (the push directions of the OP
share its outputs, which the model leaves out); evaluated in the OP too, where the
scoreboard shows it off.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..asymptotic.finite_size_spectra import FiniteRatioSpectrum, finite_ratio_spectrum
from ..common.checks import check_int, check_scalar_kappa
from ..common.seeds import resolve_seed
from .scores import sample_optimal_scores

__all__ = ["optimal_finite_spectrum"]

MODEL = "finite_ratio"


def optimal_finite_spectrum(d, p=None, kappa=1.0, *, problem="dp", memories=200, seed=None) -> FiniteRatioSpectrum:
    """Law of the normalised kept singular values of the optimal rank-``kappa d`` memory at ``d`` and load ``p``.

    ``memories`` sampled dual sums, each of ``p`` pushes with water-filling costs of
    independent blocks at margin 0 (``notes/spectra.md``, section 7).  The result is a law
    like ``replica.spectrum(kappa)``: ``cdf`` (the expected empirical CDF), ``below`` (the
    expected mass below ``s_kappa``), ``ks_distances(n)`` (the KS distance to the
    ``d -> infinity`` law that a measurement pooling ``n`` memories reports).

    Parameters
    ----------
    d : int
        Memory size, ``d >= 2``.
    p : int, optional
        Stored pairs (pushes), ``p >= 2``; ``None``: the finite-size (DP) capacity
        ``round(replica.capacity(d, kappa, model="finite_size").p_c)``, for either problem.
    kappa : float, optional
        Rank fraction in (0, 1].
    problem : {"dp", "op"}, optional
        Checked, not used: the law is the same for both problems (it is made for the DP; the
        OP's shared outputs are not in it, and the scoreboard shows it off there).
    memories : int, optional
        Sampled memories, ``2 <= memories <= 10**4`` (the precision of ``below`` and of the KS
        law grows like ``sqrt(memories)``; time per memory about ``p`` water-fillings, the
        ``d x p`` by ``p x d`` product and one SVD of ``d x d``).
    seed : None, int, SeedSequence or Generator, optional
        Seed of the costs and directions (``None``: ``DEFAULT_SEED``); the integer it resolves
        to is stored in the result, and passing it again gives the same law.

    Returns
    -------
    FiniteRatioSpectrum

    Examples
    --------
    >>> law = optimal_finite_spectrum(32, 167, 0.5, memories=50)
    >>> law.rank, 0.05 < law.below < 0.15
    (16, True)
    """
    d = check_int(d, "d", low=2)
    kappa = check_scalar_kappa(kappa)
    memories = check_int(memories, "memories", low=2, high=10**4)
    if problem not in ("dp", "op"):
        raise ValueError(f"problem must be 'dp' or 'op', got {problem!r}")
    if p is None:
        from .finite_size import capacity

        p = int(round(capacity(d, kappa).p_c))
    p = check_int(p, "p", low=2)
    seed = resolve_seed(seed)
    costs = sample_optimal_scores(p, 0.0, size=memories * p, seed=np.random.SeedSequence([seed, d, p])).cost
    law = finite_ratio_spectrum(d, costs.reshape(memories, p), kappa, seed=np.random.SeedSequence([seed, d, p, 1]))
    return dataclasses.replace(law, seed=seed)
