"""The two memories of :func:`replica.variants.zipf.zipf_error`: the knapsack and the weighted Gaussian model.

* The optimal memory keeps the facts of a knapsack over the blocks' water-filling costs
  (:func:`knapsack_kept` for one instance; :func:`knapsack_expectation` for its
  Lagrangian in expectation over the law of the costs, :class:`CostLaw`).
* The weighted Hebbian memory ``W = sum_mu w_mu u_mu e_mu^T``: :func:`conditional_recall`
  draws the heaviest facts exactly and takes the rest as a Gaussian field (the default
  model); :func:`gaussian_recall` takes every score as an independent Gaussian, and
  :func:`count_weighted_recall` averages it over the counts of the memory built from
  ``T`` samples.

Derivations: ``notes/zipf.md`` (sections 2, 3 and 6).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from ..common.checks import check_real
from ..common.roots import brent

__all__ = ["knapsack_kept", "CostLaw", "knapsack_expectation", "gaussian_recall", "conditional_recall",
           "conditional_error", "weight_bins", "competitor_bins", "count_weighted_recall"]

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


def knapsack_expectation(facts, law, budget, tol, vertex=1.0):
    """Solve ``sum_k n_k q H(f_k / lambda) = budget`` in ``log lambda``; returns the pieces of the result.

    ``vertex = q``: the probability that a fact can be recalled at all (its target a vertex
    of its candidates' hull); the others have an infinite cost and are lost (``q = 1``: the
    replica-symmetric knapsack).
    """
    q = float(vertex)
    lost = float(np.dot(facts.mass, np.full(facts.count.size, 1.0 - q)))
    total_cost = float(facts.count.sum()) * law.mean * q
    if total_cost <= budget:
        return dict(error=lost, kept=float(facts.count.sum()) * q, level=0.0, stderr=0.0, residual=0.0, ok=True,
                    all_kept=True)

    def excess(log_level):
        theta = facts.freq * math.exp(-log_level)
        return q * float(np.dot(facts.count, law.partial_mean(law.cdf(theta)))) / budget - 1.0

    c_max = float(law.costs[-1])
    c_min = float(law.x[1]) if law.x.size > 1 else c_max
    lo = math.log(float(facts.freq.min()) / c_max) - 1.0  # every theta above the largest cost: all kept
    hi = math.log(float(facts.freq.max()) / c_min) + 40.0  # every theta far below the smallest positive cost
    log_level = brent(excess, lo, hi, xtol=1e-13, max_iter=200, require=True).root
    level = math.exp(log_level)
    theta = facts.freq / level
    g = law.cdf(theta)
    error = float(np.dot(facts.mass, 1.0 - q * g))
    residual = abs(excess(log_level))
    # influence function of the error (delta method, no density needed; notes/zipf.md):
    # psi(c) = -lambda sum_k n_k (theta_k - c)_+
    order = np.argsort(theta)
    t_sorted, n_sorted = theta[order], facts.count[order]
    above_n = np.concatenate((np.cumsum((n_sorted)[::-1])[::-1], [0.0]))
    above_nt = np.concatenate((np.cumsum((n_sorted * t_sorted)[::-1])[::-1], [0.0]))
    first = np.searchsorted(t_sorted, law.costs, side="left")
    psi = -level * (above_nt[first] - law.costs * above_n[first])
    stderr = float(q * np.std(psi, ddof=1) / math.sqrt(law.n))
    return dict(error=min(max(error, 0.0), 1.0), kept=float(np.dot(facts.count, q * g)), level=level, stderr=stderr,
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


def _log_w_bins(weights):
    """Bins of width 0.01 in ``ln w``, increasing: their keys, the bin of every weight, and the counts."""
    keys = np.round(np.log(weights) / _LOG_W_BIN).astype(np.int64)
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, inverse, np.bincount(inverse).astype(np.float64)


def competitor_bins(weights):
    """Bins of width 0.01 in ``ln w``: counts and mean squared weights."""
    unique, inverse, count = _log_w_bins(weights)
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


# --------------------------------------------------------------------------------------
# Hebbian memory: the heavy facts exactly, the tail as a Gaussian field
# --------------------------------------------------------------------------------------
HEAVY_FACTS = 32  # facts of largest weight sampled exactly
CONDITIONAL_SAMPLES = 2000  # Monte-Carlo samples of the heavy block
_TAIL_GROUPS = 64  # groups of tail competitors (consecutive bins, equal counts)
_TAIL_TARGETS = 24  # tail targets on a grid in ln w; the recall probability is interpolated
_SAMPLE_CHUNK = 250


def _tail_log_cdf(d, ensemble):
    """``log P(u^T v < z |v| / sqrt(d))`` of an output ``u`` independent of ``v``.

    Gaussian ensemble: ``log Phi(z)``.  Sphere: ``u^T v / |v|`` is a coordinate of a uniform
    point of the sphere, ``(1 + t) / 2 ~ Beta((d - 1)/2, (d - 1)/2)`` (bounded: its tail is
    lighter than the Gaussian's), tabulated on 4001 points of ``t`` and interpolated.
    """
    if ensemble == "gaussian":
        return special.log_ndtr
    h = 0.5 * (d - 1.0)
    t = np.linspace(-1.0, 1.0, 4001)
    with np.errstate(divide="ignore"):
        lower = np.log(special.betainc(h, h, 0.5 * (1.0 + t)))
        upper = np.log1p(-special.betaincc(h, h, 0.5 * (1.0 + t)))
    table = np.maximum(np.where(t > 0.0, upper, lower), -745.0)
    root_d = math.sqrt(d)
    return lambda z: np.interp(z / root_d, t, table)


def _heavy_block_sample(d, columns, ensemble, samples, rng):
    """Gram matrices of ``columns`` inputs and outputs, and the outputs' overlaps with one Gaussian vector.

    Returns ``X = E^T E`` and ``G = U^T U`` (``samples x columns x columns``), ``UZ = U^T z``
    (``samples x columns``) and ``|z|^2`` for ``z ~ N(0, I_d)``; drawn in chunks so the
    memory does not grow with ``d``.
    """
    X = np.empty((samples, columns, columns))
    G = np.empty_like(X)
    UZ = np.empty((samples, columns))
    Z2 = np.empty(samples)
    for start in range(0, samples, _SAMPLE_CHUNK):
        m = min(_SAMPLE_CHUNK, samples - start)
        E = rng.standard_normal((m, d, columns)) / math.sqrt(d)
        U = rng.standard_normal((m, d, columns)) / math.sqrt(d)
        if ensemble == "sphere":
            E /= np.linalg.norm(E, axis=1, keepdims=True)
            U /= np.linalg.norm(U, axis=1, keepdims=True)
        z = rng.standard_normal((m, d))
        part = slice(start, start + m)
        X[part] = np.matmul(E.transpose(0, 2, 1), E)
        G[part] = np.matmul(U.transpose(0, 2, 1), U)
        UZ[part] = np.matmul(U.transpose(0, 2, 1), z[:, :, None])[:, :, 0]
        Z2[part] = np.einsum("md,md->m", z, z)
    return X, G, UZ, Z2


def conditional_recall(count, w, w2, d, ensemble, *, heavy=HEAVY_FACTS, samples=CONDITIONAL_SAMPLES, rng=None):
    """Recall probabilities of the weighted Hebbian memory: the heaviest facts exactly, the tail Gaussian.

    The facts come in bins sorted by decreasing weight (``count`` facts of weight ``w`` and
    mean squared weight ``w2``; the first bins hold one fact each).  For the input ``e_t``
    of a target of weight ``w_t``, ``W e_t = sum_nu c_nu u_nu`` with ``c_nu = w_nu e_nu^T e_t``.
    The ``H = min(heavy, facts)`` heaviest facts and the target are drawn exactly (their
    inputs, outputs and so their ``c`` and the Gram matrix of their outputs); the tail adds
    a Gaussian vector of variance ``|e_t|^2 sum_tail w^2 / d^2`` per coordinate to
    ``v = W e_t``; a tail competitor ``rho`` scores ``c_rho |u_rho|^2 + u_rho^T v``, taken
    independent given ``v`` (Gaussian of variance ``(g w_rho^2 |e_t|^2 + |v|^2) / d``; on the
    sphere the exact law of ``u^T v``).  Then, per sample, ``P = 1{target above every heavy
    score} prod_tail P(tail score < target score)`` and the mean over ``samples`` samples of
    the block (common to every target).  ``notes/zipf.md``, section 3.

    Returns
    -------
    recall : ndarray
        Per bin, the recall probability (tail bins: interpolated in ``ln w`` from a grid
        of ``_TAIL_TARGETS`` target weights).
    per_sample : ndarray
        ``samples x bins`` recall probability of each bin in each sample (the mean over
        the samples is ``recall``), for the Monte-Carlo standard error of a weighted sum.
    """
    count = np.asarray(count, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    w2 = np.asarray(w2, dtype=np.float64)
    rng = np.random.default_rng(rng)
    single = np.cumprod(count == 1.0).astype(bool)  # the leading one-fact bins
    H = int(min(heavy, int(single.sum())))
    tail = slice(H, None)
    tail_count, tail_w, tail_w2 = count[tail], w[tail], w2[tail]
    has_tail = tail_count.size > 0
    tail_sum = float(np.dot(tail_count, tail_w2))
    # tail competitors in at most _TAIL_GROUPS groups of consecutive bins with about equal counts
    if has_tail:
        cum = np.cumsum(tail_count)
        group = np.minimum((cum - 0.5 * tail_count) * _TAIL_GROUPS // cum[-1], _TAIL_GROUPS - 1).astype(np.int64)
        g_count = np.bincount(group, weights=tail_count)
        keep = g_count > 0
        g_w2 = (np.bincount(group, weights=tail_count * tail_w2)[keep]) / g_count[keep]
        g_count = g_count[keep]
    else:
        g_count = g_w2 = np.zeros(0)
    columns = H + 1  # the heavy facts, then one tail target
    X, G, UZ, Z2 = _heavy_block_sample(d, columns, ensemble, samples, rng)
    log_cdf = _tail_log_cdf(d, ensemble)
    norm4 = 1.0 + 2.0 / d if ensemble == "gaussian" else 1.0  # E |u|^4
    root_d = math.sqrt(d)
    heavy_w = np.concatenate((w[:H], [0.0]))

    def recall_of(j, w_t, own_w2):
        """Per sample, P(recalled) of the target in column ``j`` with weight ``w_t``."""
        c = heavy_w[None, :] * X[:, :, j]
        c[:, H] = 0.0
        c[:, j] = w_t * X[:, j, j]
        e2 = X[:, j, j]
        scale = np.sqrt(e2 * max(tail_sum - own_w2, 0.0) / d**2)  # per coordinate sd of the tail part of v
        scores = np.einsum("mab,mb->ma", G, c) + scale[:, None] * UZ
        v2 = np.einsum("ma,ma->m", c, scores - scale[:, None] * UZ) + 2.0 * scale * np.einsum("ma,ma->m", c, UZ) \
            + scale**2 * Z2
        target = scores[:, j]
        others = np.delete(scores, [j] if j == H else [j, H], axis=1)
        above = target > others.max(axis=1) if others.shape[1] else np.ones(target.size, dtype=bool)
        log_p = np.zeros(target.size)
        if g_count.size:
            z = target[:, None] * root_d / np.sqrt(norm4 * g_w2[None, :] * e2[:, None] + v2[:, None])
            log_p = log_cdf(z) @ g_count
            if own_w2 > 0.0:  # the target is a tail fact: not its own competitor
                log_p -= log_cdf(target * root_d / np.sqrt(norm4 * own_w2 * e2 + v2))
        return above * np.exp(log_p)

    per_sample = np.empty((samples, count.size))
    for j in range(H):
        per_sample[:, j] = recall_of(j, w[j], 0.0)
    if has_tail:
        grid = np.geomspace(tail_w.min(), tail_w.max(), _TAIL_TARGETS) if tail_w.max() > tail_w.min() \
            else np.array([tail_w.max()])
        at_grid = np.stack([recall_of(H, x, x * x) for x in grid], axis=1)  # samples x grid
        if grid.size == 1:
            per_sample[:, H:] = at_grid
        else:
            lw, lg = np.log(tail_w), np.log(grid)
            weights = np.stack([np.interp(lw, lg, np.eye(grid.size)[k]) for k in range(grid.size)], axis=1)
            per_sample[:, H:] = at_grid @ weights.T
    return per_sample.mean(axis=0), per_sample


def weight_bins(weights, frequencies):
    """Facts in bins of decreasing weight: the first ``HEAVY_FACTS`` one by one, then bins of 0.01 in ``ln w``.

    Returns count, mean weight, mean squared weight and the frequency mass of each bin.
    """
    order = np.argsort(-weights, kind="stable")
    w, f = weights[order], frequencies[order]
    head = min(HEAVY_FACTS, w.size)
    count, w1, w2, mass = [np.ones(head)], [w[:head]], [w[:head] ** 2], [f[:head]]
    if w.size > head:
        rest, f_rest = w[head:], f[head:]
        _, inverse, n = _log_w_bins(rest)
        down = slice(None, None, -1)  # the bins in decreasing weight
        count.append(n[down])
        w1.append((np.bincount(inverse, weights=rest) / n)[down])
        w2.append((np.bincount(inverse, weights=rest**2) / n)[down])
        mass.append(np.bincount(inverse, weights=f_rest)[down])
    return tuple(np.concatenate(x) for x in (count, w1, w2, mass))


def conditional_error(count, w, w2, mass, d, ensemble, seed):
    """Error ``sum mass (1 - recall)``, its Monte-Carlo standard error and the expected recalled count.

    The recall probabilities of the bins from :func:`conditional_recall`, seeded by ``seed``.
    """
    recall, per_sample = conditional_recall(count, w, w2, d, ensemble, rng=seed)
    error = float(np.dot(mass, 1.0 - recall))
    stderr = float(np.std((1.0 - per_sample) @ mass, ddof=1) / math.sqrt(per_sample.shape[0]))
    return error, stderr, float(np.dot(count, recall))
