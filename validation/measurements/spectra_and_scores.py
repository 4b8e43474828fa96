"""Measurements on a memory: normalised singular values and score distributions.

* Singular values are divided by ``||W||_F / sqrt(d)``, so their mean square is 1
  and a d x d matrix with i.i.d. N(0, 1/d) entries follows the quarter-circle
  law on [0, 2] (``notes/spectra.md``; ``replica`` holds the predicted laws).
* Scores are divided by the competitor standard deviation ``||W||_F / d`` (the
  standard deviation of ``u^T W e`` for independent ``u, e`` with covariance
  ``I/d``), as in ``notes/spectra.md``.

See ``notes/simulation.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replica.common.checks import check_int
from replica.common.results import Result
from replica.common.seeds import as_generator, resolve_seed
from replica.optimal.scores import summarize_scores
from replica.asymptotic.spectra import normalized_singular_values

from ..instances.ensembles import check_square_instance
from .recall import competitor_scale, top_competitors

__all__ = [
    "Spectrum",
    "spectrum",
    "ScoreDistribution",
    "score_distribution",
]


def _as_matrix(W) -> np.ndarray:
    if hasattr(W, "matrix") and callable(W.matrix):  # a Solution
        W = W.matrix()
    mat = np.asarray(W, dtype=np.float64)
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1] or mat.shape[0] < 1:
        raise ValueError(f"W must be a square 2-d array, got shape {mat.shape}")
    if not np.all(np.isfinite(mat)):
        raise ValueError("W must be finite")
    return mat


def _summary(values):
    """``replica.optimal.summarize_scores`` of a sample (mean, std with ddof=1, quantiles); None if empty."""
    return summarize_scores(values) if np.size(values) else None


@dataclass(frozen=True, eq=False)
class Spectrum(Result):
    """Normalised singular values of a memory.

    A measurement: ``status`` is always ``"ok"``.  ``to_dict`` gives the moments and a
    :class:`replica.optimal.ScoreSummary` of the values (no arrays).

    Attributes
    ----------
    values : ndarray (round(kappa d),)
        ``s sqrt(F(kappa)) / (||W||_F / sqrt(d))`` for the ``round(kappa d)`` largest
        ``s``, descending (``replica.normalized_singular_values``); with ``kappa = 1``
        all ``d`` values and ``mean(values**2) = 1``.
    d : int
        Size of ``W``.
    numerical_rank : int
        Values above ``d * eps * max(values)``.
    second_moment, fourth_moment : float
        ``mean(s^2)`` and ``mean(s^4)`` of ``values`` (``kappa = 1``: 1 up to rounding
        and, for the quarter circle, 2; ``kappa < 1``: the moments of
        ``replica.spectrum(kappa)``).
    """

    STATUSES = ("ok",)

    values: np.ndarray = field(repr=False)
    d: int
    numerical_rank: int
    second_moment: float
    fourth_moment: float
    status: str = "ok"
    converged: bool = True
    message: str = "singular values of W in units of ||W||_F / sqrt(d)"

    def _payload(self) -> dict:
        return {"d": self.d, "numerical_rank": self.numerical_rank,
                "second_moment": self.second_moment, "fourth_moment": self.fourth_moment,
                "summary": _summary(self.values)}


def spectrum(W, kappa=1.0) -> Spectrum:
    """Normalised singular values and their moments (``notes/spectra.md``).

    The values are ``replica.normalized_singular_values(s, kappa)`` of the singular
    values ``s`` of ``W``: the units of ``replica.spectrum(kappa)`` (for ``kappa = 1``
    all ``d`` values in units of ``||W||_F / sqrt(d)``, mean square 1; for a rank
    fraction ``kappa < 1`` the ``round(kappa d)`` largest, times ``sqrt(F(kappa))``).

    Parameters
    ----------
    W : array_like (d, d) or Solution
    kappa : float
        Rank fraction in (0, 1] whose law the units are those of (default 1).

    Returns
    -------
    Spectrum

    Raises
    ------
    ValueError
        If W is not square and finite, W = 0, or ``kappa`` is outside (0, 1].
    """
    singular = np.linalg.svd(_as_matrix(W), compute_uv=False)
    if not np.any(singular > 0.0):
        raise ValueError("W is zero: its normalised singular values are undefined")
    values = normalized_singular_values(singular, kappa)
    d = singular.size
    cut = d * np.finfo(float).eps * values[0]
    return Spectrum(values=values, d=d, numerical_rank=int(np.sum(values > cut)),
                    second_moment=float(np.mean(values**2)), fourth_moment=float(np.mean(values**4)))


@dataclass(frozen=True, eq=False)
class ScoreDistribution(Result):
    """Scores of a memory on an instance, in units of ``||W||_F / d``.

    A measurement: ``status`` is always ``"ok"``.  ``to_dict`` gives a
    :class:`replica.optimal.ScoreSummary` of each sample (no arrays).

    Attributes
    ----------
    unit : float
        ``||W||_F / d``, the competitor standard deviation the scores are divided by.
    targets : ndarray (p,)
        ``S[t(mu), mu] / unit``, with ``t = instance.target_index`` (the diagonal
        ``t(mu) = mu`` unless the instance has ``outputs=K`` shared answers; then ``S``
        is ``K x p`` and ``t`` its target map).
    top_competitors : ndarray (p,)
        ``max_{rho != t(mu)} S[rho, mu] / unit``.
    competitors : ndarray (n,)
        All competitor scores ``S[rho, mu] / unit`` (``rho != t(mu)``, in the row-major
        order of ``S``), or a uniform random subsample of ``max_competitors`` of them.
    competitors_subsampled : bool
    margins : ndarray (p,)
        ``targets - top_competitors``.
    seed : int
        Seed of the subsample.
    """

    STATUSES = ("ok",)

    unit: float
    targets: np.ndarray = field(repr=False)
    top_competitors: np.ndarray = field(repr=False)
    competitors: np.ndarray = field(repr=False)
    competitors_subsampled: bool
    margins: np.ndarray = field(repr=False)
    seed: int
    status: str = "ok"
    converged: bool = True
    message: str = "scores in units of ||W||_F / d"

    def _payload(self) -> dict:
        return {"unit": self.unit, "competitors_subsampled": self.competitors_subsampled,
                "seed": self.seed, "targets": _summary(self.targets),
                "top_competitors": _summary(self.top_competitors),
                "competitors": _summary(self.competitors), "margins": _summary(self.margins)}


def score_distribution(instance, W, max_competitors=1_000_000, seed=None) -> ScoreDistribution:
    """Target, top-competitor and competitor scores in competitor-std units.

    Parameters
    ----------
    instance : validation.Instance
    W : array_like (d, d) or Solution
    max_competitors : int
        Keep at most this many competitor scores (uniform subsample without
        replacement beyond it; default 1e6).
    seed : None, int, SeedSequence or Generator
        Seed of the subsample (``None``: ``DEFAULT_SEED``); the integer used is stored.

    Returns
    -------
    ScoreDistribution

    Raises
    ------
    ValueError
        If ``instance`` is rectangular (``d_in != d_out``), W has the wrong shape, is zero,
        ``max_competitors < 1`` or ``seed`` is bad.

    Notes
    -----
    The unit ``||W||_F / d`` is the exact standard deviation of a competitor score
    ``u^T W e`` when ``u`` and ``e`` are independent with ``E[u u^T] = E[e e^T] = I/d``
    (both ensembles).  See ``notes/simulation.md``.
    """
    check_square_instance(instance, "score_distribution")
    mat = _as_matrix(W)
    max_competitors = check_int(max_competitors, "max_competitors", low=1)
    seed = resolve_seed(seed)
    unit = competitor_scale(mat)
    if unit == 0.0:
        raise ValueError("W is zero: scores in competitor-std units are undefined")
    S = instance.scores(mat) / unit
    p = S.shape[1]
    index = np.asarray(instance.target_index)
    targets = S[index, np.arange(p)].copy()
    _, top = top_competitors(S, index)
    is_competitor = np.ones(S.shape, dtype=bool)
    is_competitor[index, np.arange(p)] = False
    competitors = S[is_competitor]
    subsampled = competitors.size > max_competitors
    if subsampled:
        competitors = competitors[as_generator(seed).choice(competitors.size, size=max_competitors, replace=False)]
    return ScoreDistribution(unit=unit, targets=targets, top_competitors=top, competitors=competitors,
                             competitors_subsampled=subsampled, margins=targets - top, seed=seed)
