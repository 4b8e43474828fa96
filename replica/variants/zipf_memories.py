"""The two memories of :func:`replica.variants.zipf.zipf_error`: the knapsack and the weighted Gaussian model.

* The optimal memory keeps the facts of a knapsack over the blocks' water-filling costs
  (:func:`knapsack_kept` for one instance; :func:`knapsack_expectation` for its
  Lagrangian in expectation over the law of the costs, :class:`CostLaw`).
* The weighted Hebbian memory ``W = sum_mu w_mu u_mu e_mu^T`` has Gaussian scores:
  :func:`gaussian_recall` gives the recall probability of a fact of weight ``w``,
  :func:`count_weighted_recall` that of the memory built from ``T`` samples.

Derivations: ``notes/zipf.md`` (sections 2, 3 and 6).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from ..common.checks import check_real
from ..common.roots import brent

__all__ = ["knapsack_kept", "CostLaw", "knapsack_expectation", "gaussian_recall", "competitor_bins",
           "count_weighted_recall"]

_HERMITE_NODES = 64
_LOG_W_BIN = 0.01  # width in ln w of the competitor bins of a weights array
_COUNT_GRID = 64  # target counts n = 1 .. 64 one by one, then log-spaced (count-weighted Hebbian)


# --------------------------------------------------------------------------------------
# optimal memory: the knapsack over the water-filling costs
# --------------------------------------------------------------------------------------
def knapsack_kept(frequencies, costs, budget):
    """Greedy solution of ``max sum_kept f_mu`` subject to ``sum_kept C_mu <= budget``.

    Facts are taken in decreasing ``f_mu / C_mu`` (zero costs first) while the budget
    lasts; the first fact that does not fit is the marginal one, and its ratio is the
    level ``lambda`` of the Lagrangian (fractional) solution.  The greedy value is at
    most one fact's frequency (the marginal one's) below the best 0-1 value, and the
    fractional value is an upper bound on it.

    Parameters
    ----------
    frequencies, costs : array_like
        Positive frequencies and non-negative costs of the same length.
    budget : float
        The budget, ``>= 0``.

    Returns
    -------
    kept : ndarray of bool
        The greedy kept set (a prefix in the order of decreasing ratio).
    level : float
        ``f / C`` of the marginal fact (0 when every fact fits).
    fractional : float
        The value of the fractional knapsack (kept mass plus the fitting part of the
        marginal fact).
    """
    f = np.asarray(frequencies, dtype=np.float64)
    c = np.asarray(costs, dtype=np.float64)
    if f.shape != c.shape or f.ndim != 1:
        raise ValueError(f"frequencies and costs must be 1-d arrays of one length, got {f.shape} and {c.shape}")
    if np.any(~np.isfinite(f)) or np.any(f <= 0.0):
        raise ValueError("frequencies must be finite and positive")
    if np.any(~np.isfinite(c)) or np.any(c < 0.0):
        raise ValueError("costs must be finite and non-negative")
    budget = check_real(budget, "budget", low=0.0)
    with np.errstate(divide="ignore"):
        ratio = np.where(c > 0.0, f / np.where(c > 0.0, c, 1.0), np.inf)
    order = np.argsort(-ratio, kind="stable")
    spent = np.cumsum(c[order])
    fits = spent <= budget
    n_fit = int(np.argmin(fits)) if not fits.all() else f.size  # the prefix that fits
    kept = np.zeros(f.size, dtype=bool)
    kept[order[:n_fit]] = True
    if n_fit == f.size:
        return kept, 0.0, float(f.sum())
    marginal = order[n_fit]
    left = budget - (spent[n_fit - 1] if n_fit else 0.0)
    fractional = float(f[kept].sum() + f[marginal] * left / c[marginal])
    return kept, float(ratio[marginal]), fractional


class CostLaw:
    """Interpolated law of ``C_N`` from a sorted sample, with its atom at 0.

    ``G(theta)`` is the empirical CDF made continuous by linear interpolation between
    consecutive positive order statistics (the marginal block kept fractionally, as in
    ``replica.variants.accuracy``), ``H(theta) = L(G(theta))`` with ``L(u)`` the mean of the
    cheapest fraction ``u`` of the sample, i.e. ``E[C 1{C <= theta}]``.
    """

    def __init__(self, costs):
        self.costs = np.sort(np.asarray(costs, dtype=np.float64))
        self.n = self.costs.size
        self.zeros = int(np.count_nonzero(self.costs <= 0.0))
        positive = self.costs[self.zeros:]
        self.x = np.concatenate(([0.0], positive))
        self.u = (self.zeros + np.arange(positive.size + 1.0)) / self.n
        self.partial = np.concatenate(([0.0], np.cumsum(self.costs))) / self.n
        self.mean = float(self.partial[-1])

    def cdf(self, theta):
        return np.interp(theta, self.x, self.u, left=self.u[0], right=1.0)

    def partial_mean(self, u):
        return np.interp(u * self.n, np.arange(self.n + 1.0), self.partial)


def knapsack_expectation(facts, law, budget, tol):
    """Solve ``sum_k n_k H(f_k / lambda) = budget`` in ``log lambda``; returns the pieces of the result."""
    total_cost = float(facts.count.sum()) * law.mean
    if total_cost <= budget:
        return dict(error=0.0, kept=float(facts.count.sum()), level=0.0, stderr=0.0, residual=0.0, ok=True,
                    all_kept=True)

    def excess(log_level):
        theta = facts.freq * math.exp(-log_level)
        return float(np.dot(facts.count, law.partial_mean(law.cdf(theta)))) / budget - 1.0

    c_max = float(law.costs[-1])
    c_min = float(law.x[1]) if law.x.size > 1 else c_max
    lo = math.log(float(facts.freq.min()) / c_max) - 1.0  # every theta above the largest cost: all kept
    hi = math.log(float(facts.freq.max()) / c_min) + 40.0  # every theta far below the smallest positive cost
    log_level = brent(excess, lo, hi, xtol=1e-13, max_iter=200, require=True).root
    level = math.exp(log_level)
    theta = facts.freq / level
    g = law.cdf(theta)
    error = float(np.dot(facts.mass, 1.0 - g))
    residual = abs(excess(log_level))
    # influence function of the error (delta method, no density needed; notes/zipf.md):
    # psi(c) = -lambda sum_k n_k (theta_k - c)_+
    order = np.argsort(theta)
    t_sorted, n_sorted = theta[order], facts.count[order]
    above_n = np.concatenate((np.cumsum((n_sorted)[::-1])[::-1], [0.0]))
    above_nt = np.concatenate((np.cumsum((n_sorted * t_sorted)[::-1])[::-1], [0.0]))
    first = np.searchsorted(t_sorted, law.costs, side="left")
    psi = -level * (above_nt[first] - law.costs * above_n[first])
    stderr = float(np.std(psi, ddof=1) / math.sqrt(law.n))
    return dict(error=min(max(error, 0.0), 1.0), kept=float(np.dot(facts.count, g)), level=level, stderr=stderr,
                residual=residual, ok=residual <= tol, all_kept=False)


# --------------------------------------------------------------------------------------
# Hebbian memory: the Gaussian model of the weighted scores
# --------------------------------------------------------------------------------------
def _hermite():
    x, w = special.roots_hermitenorm(_HERMITE_NODES)
    return x, w / w.sum()


def gaussian_recall(targets, comp_count, comp_w2, s2, d, ensemble):
    """P(recalled) of a fact of weight ``w`` (each entry of ``targets``) in the weighted Gaussian model.

    Target ``w + sigma_t z``, ``sigma_t^2 = (S2 - w^2) / d^2 + v w^2`` (``v = (1 + 2/d)^2 - 1``
    for the gaussian ensemble, 0 on the sphere); competitor ``rho`` independent
    ``N(0, g (w_rho^2 + w^2) / d + (S2 - w^2 - w_rho^2) / d^2)`` (``g = 1 + 2/d`` or 1);
    ``P = E_z prod_rho Phi((w + sigma_t z) / sigma_rho)``, the fact itself left out of
    the product.  Competitors come in bins (``comp_count`` facts of mean squared weight
    ``comp_w2``).
    """
    targets = np.asarray(targets, dtype=np.float64)
    g, v = ((1.0 + 2.0 / d), (1.0 + 2.0 / d) ** 2 - 1.0) if ensemble == "gaussian" else (1.0, 0.0)
    z, wz = _hermite()
    out = np.empty(targets.size)
    for i, w in enumerate(targets):
        sigma_t = math.sqrt(max(s2 - w * w, 0.0) / d**2 + v * w * w)
        t = w + sigma_t * z  # (nodes,)
        var = g * (comp_w2 + w * w) / d + np.maximum(s2 - w * w - comp_w2, 0.0) / d**2
        log_phi = special.log_ndtr(t[:, None] / np.sqrt(var)[None, :])  # (nodes, bins)
        self_var = 2.0 * g * w * w / d + max(s2 - 2.0 * w * w, 0.0) / d**2
        total = log_phi @ comp_count - special.log_ndtr(t / math.sqrt(self_var))
        out[i] = float(np.dot(wz, np.exp(total)))
    return np.clip(out, 0.0, 1.0)


def competitor_bins(weights):
    """Bins of width 0.01 in ``ln w``: counts and mean squared weights."""
    keys = np.round(np.log(weights) / _LOG_W_BIN).astype(np.int64)
    unique, inverse = np.unique(keys, return_inverse=True)
    count = np.bincount(inverse).astype(np.float64)
    w2 = np.bincount(inverse, weights=weights**2) / count
    w1 = np.bincount(inverse, weights=weights) / count
    return count, w2, w1, unique


def count_weighted_recall(facts, T, d, ensemble):
    """Per bin of facts: P(recalled | seen) of ``W = sum n_mu u_mu e_mu^T``, ``n_mu ~ Binomial(T, f_mu)``.

    Weights ``w = n / T``; competitors enter the Gaussian model by their mean squared
    weight ``E w^2 = f^2 + f (1 - f) / T`` (unseen outputs: ``w = 0``); the target's
    recall probability is computed on a grid of counts (one by one up to 64, then
    log-spaced) and averaged over the binomial law of ``n`` given ``n >= 1`` (exact sum
    for ``T f <= 40``, Gauss-Hermite over the normal approximation above).
    """
    w2 = facts.freq2 + (facts.freq - facts.freq2) / T
    s2 = float(np.dot(facts.count, w2))
    top = max(float(T) * float(facts.freq.max()) * 1.5 + 10.0 * math.sqrt(float(T) * float(facts.freq.max())), 2.0)
    top = min(top, float(T))
    grid = np.arange(1.0, min(_COUNT_GRID, top) + 1.0)
    if top > _COUNT_GRID:
        grid = np.concatenate((grid, np.geomspace(_COUNT_GRID + 1.0, top, 96)))
    recall_grid = gaussian_recall(grid / T, facts.count, w2, s2, d, ensemble)
    log_grid, log_recall = np.log(grid), np.log(np.maximum(recall_grid, 1e-300))

    def recall_at(n):
        return np.exp(np.interp(np.log(np.maximum(n, 1.0)), log_grid, log_recall))

    mean = float(T) * facts.freq
    out = np.empty(facts.count.size)
    small = mean <= 40.0
    if np.any(small):
        n = np.arange(1.0, 121.0)
        pmf = stats.binom.pmf(n[None, :], T, facts.freq[small][:, None])  # n <= T implied
        seen = -np.expm1(T * np.log1p(-facts.freq[small]))
        out[small] = (pmf * recall_at(n)[None, :]).sum(axis=1) / seen
    if np.any(~small):
        z, wz = special.roots_hermitenorm(16)
        wz = wz / wz.sum()
        m, f = mean[~small], facts.freq[~small]
        n = m[:, None] + np.sqrt(m * (1.0 - f))[:, None] * z[None, :]
        out[~small] = recall_at(np.clip(n, 1.0, float(T))) @ wz
    return np.clip(out, 0.0, 1.0)
