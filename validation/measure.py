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

import math
from dataclasses import dataclass, field

import numpy as np

from replica.common.checks import check_int

from .recall import competitor_scale, top_competitors

__all__ = [
    "normalised_singular_values",
    "Spectrum",
    "spectrum",
    "ScoreDistribution",
    "score_distribution",
    "summarise",
]

_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)


def _as_matrix(W) -> np.ndarray:
    if hasattr(W, "matrix") and callable(W.matrix):  # a Solution
        W = W.matrix()
    mat = np.asarray(W, dtype=np.float64)
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1] or mat.shape[0] < 1:
        raise ValueError(f"W must be a square 2-d array, got shape {mat.shape}")
    if not np.all(np.isfinite(mat)):
        raise ValueError("W must be finite")
    return mat


def summarise(values) -> dict:
    """Moments and quantiles of a sample (JSON-friendly).

    Parameters
    ----------
    values : array_like

    Returns
    -------
    dict
        ``count``, ``mean``, ``std``, ``skewness``, ``excess_kurtosis``, ``min``,
        ``max`` and ``q01 .. q99`` (quantiles 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99).
    """
    arr = np.asarray(values, dtype=np.float64).ravel()
    out = {"count": int(arr.size)}
    if arr.size == 0:
        return out
    mean = float(arr.mean())
    std = float(arr.std())
    out.update(mean=mean, std=std, min=float(arr.min()), max=float(arr.max()))
    if std > 0:
        z = (arr - mean) / std
        out["skewness"] = float(np.mean(z**3))
        out["excess_kurtosis"] = float(np.mean(z**4) - 3.0)
    else:
        out["skewness"] = out["excess_kurtosis"] = 0.0
    for q, v in zip(_QUANTILES, np.quantile(arr, _QUANTILES)):
        out[f"q{int(round(q * 100)):02d}"] = float(v)
    return out


def normalised_singular_values(W) -> np.ndarray:
    """Singular values of W divided by ``||W||_F / sqrt(d)`` (mean square 1), descending.

    Parameters
    ----------
    W : array_like (d, d) or Solution

    Returns
    -------
    ndarray (d,)

    Raises
    ------
    ValueError
        If W is not square and finite, or W = 0.
    """
    mat = _as_matrix(W)
    norm = np.linalg.norm(mat)
    if norm == 0.0:
        raise ValueError("W is zero: its normalised singular values are undefined")
    return np.linalg.svd(mat, compute_uv=False) / (norm / math.sqrt(mat.shape[0]))


@dataclass(frozen=True, eq=False)
class Spectrum:
    """Normalised singular values of a memory.

    Attributes
    ----------
    values : ndarray (d,)
        ``s / (||W||_F / sqrt(d))``, descending; ``mean(values**2) = 1``.
    d : int
    numerical_rank : int
        Values above ``d * eps * max(values)``.
    second_moment, fourth_moment : float
        ``mean(s^2)`` (1 up to rounding) and ``mean(s^4)`` (quarter circle: 2).
    """

    values: np.ndarray = field(repr=False)
    d: int
    numerical_rank: int
    second_moment: float
    fourth_moment: float

    def to_dict(self) -> dict:
        """Moments and quantiles, no arrays."""
        return {"d": self.d, "numerical_rank": self.numerical_rank,
                "second_moment": self.second_moment, "fourth_moment": self.fourth_moment,
                "summary": summarise(self.values)}


def spectrum(W) -> Spectrum:
    """Normalised singular values and their moments (``notes/spectra.md``).

    Parameters
    ----------
    W : array_like (d, d) or Solution

    Returns
    -------
    Spectrum

    Raises
    ------
    ValueError
        If W is not square and finite, or W = 0.
    """
    values = normalised_singular_values(W)
    d = values.size
    cut = d * np.finfo(float).eps * values[0]
    return Spectrum(values=values, d=d, numerical_rank=int(np.sum(values > cut)),
                    second_moment=float(np.mean(values**2)), fourth_moment=float(np.mean(values**4)))


@dataclass(frozen=True, eq=False)
class ScoreDistribution:
    """Scores of a memory on an instance, in units of ``||W||_F / d``.

    Attributes
    ----------
    unit : float
        ``||W||_F / d``, the competitor standard deviation the scores are divided by.
    targets : ndarray (p,)
        ``S[mu, mu] / unit``.
    top_competitors : ndarray (p,)
        ``max_{rho != mu} S[rho, mu] / unit``.
    competitors : ndarray (n,)
        All competitor scores ``S[rho, mu] / unit`` (rho != mu), or a uniform random
        subsample of ``max_competitors`` of them.
    competitors_subsampled : bool
    margins : ndarray (p,)
        ``targets - top_competitors``.
    """

    unit: float
    targets: np.ndarray = field(repr=False)
    top_competitors: np.ndarray = field(repr=False)
    competitors: np.ndarray = field(repr=False)
    competitors_subsampled: bool
    margins: np.ndarray = field(repr=False)

    def to_dict(self) -> dict:
        """Summary moments and quantiles of each sample (no arrays)."""
        return {"unit": self.unit, "competitors_subsampled": self.competitors_subsampled,
                "targets": summarise(self.targets),
                "top_competitors": summarise(self.top_competitors),
                "competitors": summarise(self.competitors),
                "margins": summarise(self.margins)}


def score_distribution(instance, W, max_competitors=1_000_000, seed=0) -> ScoreDistribution:
    """Target, top-competitor and competitor scores in competitor-std units.

    Parameters
    ----------
    instance : validation.Instance
    W : array_like (d, d) or Solution
    max_competitors : int
        Keep at most this many competitor scores (uniform subsample without
        replacement beyond it; default 1e6).
    seed : int
        Seed of the subsample.

    Returns
    -------
    ScoreDistribution

    Raises
    ------
    ValueError
        If W has the wrong shape, is zero, or ``max_competitors < 1``.

    Notes
    -----
    The unit ``||W||_F / d`` is the exact standard deviation of a competitor score
    ``u^T W e`` when ``u`` and ``e`` are independent with ``E[u u^T] = E[e e^T] = I/d``
    (both ensembles).  See ``notes/simulation.md``.
    """
    mat = _as_matrix(W)
    max_competitors = check_int(max_competitors, "max_competitors", low=1)
    unit = competitor_scale(mat)
    if unit == 0.0:
        raise ValueError("W is zero: scores in competitor-std units are undefined")
    S = instance.scores(mat) / unit
    p = S.shape[1]
    targets = np.diag(S).copy()
    _, top = top_competitors(S)
    mask = ~np.eye(p, dtype=bool)
    n_comp = p * (p - 1)
    if n_comp > max_competitors:
        rng = np.random.default_rng(seed)
        pick = rng.choice(n_comp, size=max_competitors, replace=False)
        competitors = S[mask][pick]
        sub = True
    else:
        competitors = S[mask]
        sub = False
    return ScoreDistribution(unit=unit, targets=targets, top_competitors=top, competitors=competitors,
                             competitors_subsampled=sub, margins=targets - top)
