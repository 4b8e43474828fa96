"""Finite-ratio spectrum of a memory that is a sum of ``p`` rank-one pushes (``notes/spectra.md``, section 7).

At capacity the optimal memory is its dual (stability) sum: every stored pair ``mu``
contributes one rank-one term, the push ``v_mu e_mu^T`` that moves the fields of its
block by the water-filling displacement, of squared size ``C_mu`` (the block's
water-filling cost, ``notes/finite_size_capacity.md``).  In the decoupled problem the
push directions are independent of each other and of the inputs, so

    G = sum_mu sqrt(C_mu) u_mu e_mu^T,   u_mu, e_mu independent uniform unit vectors,

and the rank-``m`` optimum keeps the top ``m`` singular triplets of its own dual sum.
At ``d -> infinity`` with ``p / d -> infinity`` the singular values of ``G`` follow the
quarter circle (``replica.spectrum``); at the ratios of a simulation (``p_c / d`` is 5 to
21 for ``d`` = 32 to 256 at ``kappa = 1/2``) they do not: the fourth moment of the full
spectrum is ``2 + r / c`` with ``c = p / d`` and ``r = E[C^2] / E[C]^2`` (free
probability, exact as ``d -> infinity`` at fixed ``c``), so the law is wider than the
quarter circle; after the top-``m`` truncation and the normalisation by its own
Frobenius norm (:func:`replica.asymptotic.spectra.normalized_singular_values`) its
smallest kept values lie below ``s_kappa``, where the limit law has no mass.

:func:`finite_ratio_spectrum` samples ``G`` at the given ``d`` and block costs and returns
the law of its normalised kept singular values at that ``d``: the expected empirical CDF,
the expected mass below ``s_kappa``, and the distribution of the KS distance of a pool of
``n`` memories to ``replica.spectrum(kappa)`` (what a measurement on ``n`` memories
reports).  It draws the directions; the costs are an argument, so that this layer does
not depend on the memory models: for the optimal memory at load ``p`` pass ``memories``
rows of ``p`` water-filling costs, e.g.
``replica.optimal.sample_optimal_scores(p, margin, size=memories * p).cost.reshape(memories, p)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..common.checks import as_float_array, check_int, check_memory, check_scalar_kappa
from ..common.results import Result
from ..common.seeds import resolve_seed

__all__ = ["FiniteRatioSpectrum", "finite_ratio_spectrum", "pooled_ks"]


def pooled_ks(cdf_values) -> float:
    """KS statistic of a sample given the law's CDF at its values (as ``scipy.stats.kstest``).

    Parameters
    ----------
    cdf_values : array_like
        ``F(x_i)`` for the sample ``x_1, ..., x_n`` (any order), ``F`` the continuous law.

    Returns
    -------
    float
        ``max_i max(i / n - F_(i), F_(i) - (i - 1) / n)`` over the sorted values.
    """
    f = np.sort(np.ravel(as_float_array(cdf_values, "cdf_values")))
    if f.size == 0:
        raise ValueError("cdf_values must contain at least one value")
    i = np.arange(1, f.size + 1)
    return float(max(np.max(i / f.size - f), np.max(f - (i - 1) / f.size)))


@dataclass(frozen=True)
class FiniteRatioSpectrum(Result):
    """Normalised kept singular values of ``memories`` sampled dual sums at one ``d`` and load ``p``.

    Attributes
    ----------
    d, p, kappa, rank : the memory size, the number of pushes (stored pairs), the rank
        fraction and ``rank = max(1, round(kappa d))``, the number of kept values.
    memories : int
        Number of sampled memories (rows of ``values``).
    seed : int
        Seed of the push directions.
    values : ndarray, shape (memories, rank)
        ``normalized_singular_values(s, kappa)`` of each sampled memory, decreasing.
    truncation_point : float
        ``s_kappa`` of ``replica.spectrum(kappa)`` (0 for ``kappa = 1``).
    below, below_stderr : float
        Expected fraction of the kept values below ``s_kappa`` (the mean over the sampled
        memories) and its Monte-Carlo standard error.
    ratio, cost_ratio, effective_ratio : float
        ``c = p / d``, ``r = E[C^2] / E[C]^2`` over the given costs, and ``c / r``.
    fourth_moment : float
        ``2 + r / c``: the fourth moment of the *full* spectrum of ``G`` in units of
        ``||G||_F / sqrt(d)`` as ``d -> infinity`` at fixed ``c`` and cost law (the
        quarter circle has 2).
    status, converged, message
        A Monte-Carlo estimate: ``status`` is always ``"ok"`` and ``converged`` True; the
        precision is ``below_stderr``.
    model : str
        ``"finite_ratio"``, the model's name under :func:`replica.spectrum`.
    validity : replica.common.validity.Validity or None
        How far the model was checked at this ``d`` (set by :func:`replica.spectrum`;
        ``None`` from this function).
    """

    STATUSES = ("ok",)

    d: int
    p: int
    kappa: float
    rank: int
    memories: int
    seed: int
    values: np.ndarray
    truncation_point: float
    below: float
    below_stderr: float
    ratio: float
    cost_ratio: float
    effective_ratio: float
    fourth_moment: float
    status: str = "ok"
    converged: bool = True
    message: str = ""
    model: str = "finite_ratio"
    validity: Any = None

    def cdf(self, x):
        """Expected empirical CDF of the normalised kept values: mean over memories of ``#{s_i <= x} / rank``."""
        arr = as_float_array(x, "x")
        flat = np.sort(self.values.ravel())
        out = np.searchsorted(flat, np.atleast_1d(arr), side="right") / flat.size
        return out.reshape(arr.shape) if arr.ndim else float(out[0])

    def _law_cdf(self) -> np.ndarray:
        from .spectra import spectrum

        return np.asarray(spectrum(self.kappa).cdf(self.values))

    def ks_distances(self, n, draws=400, seed=None) -> np.ndarray:
        """KS distances to ``replica.spectrum(kappa)`` of ``draws`` pools of ``n`` distinct sampled memories.

        The law of what a measurement that pools ``n`` memories reports (``n <= memories``;
        the pools are drawn without replacement within a pool, independently across pools).
        """
        n = check_int(n, "n", low=1, high=self.memories)
        draws = check_int(draws, "draws", low=1)
        rng = np.random.default_rng(np.random.SeedSequence([resolve_seed(seed), n]))
        law = self._law_cdf()
        return np.array([pooled_ks(law[rng.choice(self.memories, n, replace=False)]) for _ in range(draws)])

    def below_fractions(self, n, draws=400, seed=None) -> np.ndarray:
        """Fractions below ``s_kappa`` of ``draws`` pools of ``n`` distinct sampled memories."""
        n = check_int(n, "n", low=1, high=self.memories)
        draws = check_int(draws, "draws", low=1)
        rng = np.random.default_rng(np.random.SeedSequence([resolve_seed(seed), n, 1]))
        per = np.mean(self.values < self.truncation_point, axis=1)
        return np.array([per[rng.choice(self.memories, n, replace=False)].mean() for _ in range(draws)])

    def asymptotic_below(self) -> float:
        """Mass below ``s_kappa`` of the ``d -> infinity`` law at the same effective ratio (leading order).

        ``hebbian_spectrum(c / r)`` (the product law with the same fourth moment ``2 + r / c``),
        truncated to its top ``kappa`` fraction and renormalised as
        ``normalized_singular_values`` does; 0 for ``kappa = 1``.  The difference to
        :attr:`below` is the part due to the finite number of kept values.
        """
        if self.kappa == 1.0:
            return 0.0
        from scipy import integrate

        from .quarter_circle import tail_second_moment
        from .spectra import hebbian_spectrum

        law = hebbian_spectrum(self.effective_ratio)
        cut = float(law.ppf(1.0 - self.kappa))
        kept, _ = integrate.quad(lambda s: s * s * law.pdf(s), cut, law.upper, limit=200)
        scaled = self.truncation_point * math.sqrt(kept / float(tail_second_moment(self.kappa)))
        return max(0.0, (float(law.cdf(scaled)) - (1.0 - self.kappa)) / self.kappa)

    def _payload(self) -> dict:
        out = {k: getattr(self, k) for k in ("d", "p", "kappa", "rank", "memories", "seed", "truncation_point",
                                             "below", "below_stderr", "ratio", "cost_ratio", "effective_ratio",
                                             "fourth_moment", "model", "validity")}
        out["mean_values"] = self.values.mean(axis=0)
        return out


def _check_costs(costs) -> np.ndarray:
    arr = as_float_array(costs, "costs")
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(f"costs must be a 2-d array (memories >= 2, p >= 1), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("costs must be finite and non-negative")
    if np.any(arr.sum(axis=1) <= 0):
        raise ValueError("every row of costs must have a positive sum")
    return arr


def finite_ratio_spectrum(d, costs, kappa=1.0, *, seed=None) -> FiniteRatioSpectrum:
    """Law of the normalised kept singular values of a dual sum of ``p`` pushes at finite ``d``.

    Each row ``C`` of ``costs`` gives one memory
    ``G = sum_mu sqrt(C_mu) u_mu e_mu^T`` (``u_mu, e_mu`` independent uniform unit vectors
    of ``R^d``); its ``round(kappa d)`` largest singular values are put in the units of
    ``replica.spectrum(kappa)`` by
    :func:`replica.asymptotic.spectra.normalized_singular_values` (the top-``m``
    truncation normalised by its own Frobenius norm), as a measured rank-``m`` memory is.
    ``notes/spectra.md``, section 7.

    Parameters
    ----------
    d : int
        Memory size, ``>= 2``.
    costs : array_like, shape (memories, p)
        Squared push strengths, one row of ``p`` per sampled memory (``memories >= 2``);
        for the optimal memory the water-filling costs of ``p`` independent blocks
        (``replica.optimal.sample_optimal_scores(p, margin).cost``).  Only their law
        matters, and only up to scale.
    kappa : float
        Rank fraction in (0, 1].
    seed : None, int, SeedSequence or Generator
        Seed of the directions (``None``: ``DEFAULT_SEED``); stored in the result.

    Returns
    -------
    FiniteRatioSpectrum
        Sampled values, the expected mass below ``s_kappa`` with its standard error, the
        ratios ``c``, ``r``, ``c / r`` and the fourth moment ``2 + r / c``.

    Raises
    ------
    ValueError
        For ``d < 2``, ``kappa`` outside (0, 1], costs that are not a finite non-negative
        2-d array with at least two rows and positive row sums, or a bad ``seed``.
    """
    from .quarter_circle import truncation_point
    from .spectra import normalized_singular_values

    d = check_int(d, "d", low=2)
    kappa = check_scalar_kappa(kappa)
    costs = _check_costs(costs)
    seed = resolve_seed(seed)
    memories, p = costs.shape
    check_memory(8.0 * (3 * d * p + d * d), f"finite_ratio_spectrum(d={d}, p={p})")
    rank = max(1, int(round(kappa * d)))
    streams = np.random.SeedSequence(seed).spawn(memories)
    values = np.empty((memories, rank))
    for i, (row, stream) in enumerate(zip(costs, streams)):
        rng = np.random.default_rng(stream)
        left = rng.standard_normal((d, p))
        right = rng.standard_normal((d, p))
        left *= np.sqrt(row) / np.linalg.norm(left, axis=0)
        right /= np.linalg.norm(right, axis=0)
        s = np.linalg.svd(left @ right.T, compute_uv=False)
        s[rank:] = 0.0
        values[i] = normalized_singular_values(s, kappa)
    cut = 0.0 if kappa == 1.0 else float(truncation_point(kappa))
    per = np.mean(values < cut, axis=1)
    ratio = p / d
    cost_ratio = float(np.mean(costs * costs) / np.mean(costs) ** 2)
    return FiniteRatioSpectrum(
        d=d, p=p, kappa=kappa, rank=rank, memories=memories, seed=seed, values=values, truncation_point=cut,
        below=float(per.mean()), below_stderr=float(per.std(ddof=1) / math.sqrt(memories)), ratio=ratio,
        cost_ratio=cost_ratio, effective_ratio=ratio / cost_ratio, fourth_moment=2.0 + cost_ratio / ratio,
        message=f"{memories} sampled memories at d = {d}, p = {p}, kappa = {kappa:g}: "
                f"{per.mean():.4f} +- {per.std(ddof=1) / math.sqrt(memories):.4f} of the kept values below s_kappa")
