"""Recall error for facts with Zipf frequencies: ``E = sum_mu f_mu 1{mu not recalled}``.

``N`` facts ``e_mu -> u_mu`` with ``N`` distinct outputs (every output competes for
every input, ``p = N``) are queried with frequencies ``f_mu = mu^(-a) / H_{N,a}``.  The
error is the frequency mass of the facts the memory does not recall.  Derivations,
approximations and the scaling laws in ``d``: ``notes/zipf.md``.

Public functions
----------------
zipf_error
    Expected error of the optimal rank ``kappa d`` memory (a knapsack over the blocks'
    water-filling costs, solved by its Lagrangian: keep fact ``mu`` iff
    ``f_mu / C_mu >= lambda``) or of the Hebbian memory ``W = sum_mu w_mu u_mu e_mu^T``
    (unweighted: the finite-size Hebbian model; weighted: a Gaussian model of the scores);
    with ``samples=T``, the memory built from ``T`` i.i.d. samples, which stores only the
    facts it has seen (``notes/zipf.md``, section 6).
knapsack_kept
    The greedy (Lagrangian) kept set of one instance with given costs, and its level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from .common.checks import check_choice, check_int, check_real, check_scalar_kappa
from .common.ensembles import check_ensemble
from .common.results import Result
from .common.roots import brent
from .common.seeds import resolve_seed
from .hebbian import hebbian_input_failure_probability
from .hebbian_model import failure_probability
from .quarter_circle import tail_second_moment
from .scores import sample_optimal_scores

__all__ = ["zipf_error", "ZipfError", "knapsack_kept", "zipf_frequencies"]

MEMORIES = ("optimal", "hebbian")
_DEFAULT_SIZE = 100_000  # Monte-Carlo samples of C_N (optimal memory)
_EXACT_FACTS = 256  # facts mu <= this are treated one by one; beyond, in geometric bins
_BIN_RATIO = 1.02  # ratio of the edges of consecutive bins of facts
_ARRAY_MAX = 1_000_000  # longest weights array accepted
_HERMITE_NODES = 64
_LOG_W_BIN = 0.01  # width in ln w of the competitor bins of a weights array
_LEGENDRE_NODES = 8  # per bin of ranks, for the sums over the facts seen in T samples
_SEEN_NODES = 5  # Gauss-Hermite nodes over the number of stored facts (unweighted Hebbian, T samples)
_COUNT_GRID = 64  # target counts n = 1 .. 64 one by one, then log-spaced (count-weighted Hebbian)
_RS_CAVEAT = ("replica-symmetric q -> 1 prediction with the costs at p = N drawn independently per fact "
              "and the budget taken in expectation; counting errors is not convex, so replica symmetry "
              "may not be exact")


# --------------------------------------------------------------------------------------
# the facts: Zipf frequencies, one by one and in bins of consecutive ranks
# --------------------------------------------------------------------------------------
def zipf_frequencies(N, a) -> np.ndarray:
    """``f_mu = mu^(-a) / sum_nu nu^(-a)`` for ``mu = 1..N``: the query frequencies of the facts.

    The one definition of the Zipf frequencies, for the theory (:func:`zipf_error` with
    weights given per fact) and the measurement (``validation.zipf``); see ``notes/zipf.md``.

    Parameters
    ----------
    N : int
        Number of facts (>= 2).
    a : float
        Zipf exponent (>= 0; ``a = 0`` gives equal frequencies).

    Returns
    -------
    ndarray
        ``f``, float64 of length ``N``, decreasing, normalised with ``math.fsum`` (the
        correctly rounded sum) so that it sums to one within an ulp.

    Raises
    ------
    ValueError
        For ``N < 2`` or ``a < 0`` (named in the message).
    """
    N = check_int(N, "N", low=2)
    a = check_real(a, "a", low=0.0)
    f = np.arange(1.0, N + 1.0) ** (-a)
    return f / math.fsum(f.tolist())


def _power_sum(s, lo, hi):
    """``sum_{mu=lo}^{hi-1} mu^(-s)`` for integers ``1 <= lo < hi <= inf`` (Euler-Maclaurin above 256)."""
    if hi - lo <= 64 or lo < _EXACT_FACTS:
        if math.isinf(hi):
            raise ValueError("an infinite sum needs lo >= 256")  # pragma: no cover - internal
        mu = np.arange(lo, hi, dtype=np.float64)
        return float(np.sum(mu ** (-s)))

    def primitive(x):  # int x^-s dx
        if math.isinf(x):
            return 0.0
        return math.log(x) if s == 1.0 else x ** (1.0 - s) / (1.0 - s)

    def corrections(x):
        if math.isinf(x):
            return 0.0
        return 0.5 * x ** (-s) + s / 12.0 * x ** (-s - 1.0) - s * (s + 1.0) * (s + 2.0) / 720.0 * x ** (-s - 3.0)

    if math.isinf(hi):
        integral = -primitive(lo) if s > 1.0 else math.inf
    else:
        integral = primitive(hi) - primitive(lo)
    return float(integral + corrections(lo) - corrections(hi))


@dataclass(frozen=True)
class _Facts:
    """Facts in bins of consecutive ranks: count, mean frequency, mean squared frequency, mass."""

    count: np.ndarray
    freq: np.ndarray
    freq2: np.ndarray
    mass: np.ndarray
    normaliser: float  # H_{N,a}
    lo: np.ndarray | None = None  # first rank of each bin
    hi: np.ndarray | None = None  # one past the last rank of each bin


def _zipf_facts(N, a):
    """The ``N`` facts with ``f_mu = mu^-a / H_{N,a}``: one by one up to 256, then bins of ratio 1.02."""
    edges = list(range(1, min(N, _EXACT_FACTS) + 2))
    while edges[-1] <= N:
        edges.append(min(max(edges[-1] + 1, math.ceil(edges[-1] * _BIN_RATIO)), N + 1))
    lo, hi = np.array(edges[:-1]), np.array(edges[1:])
    sums = np.array([_power_sum(a, int(x), int(y)) for x, y in zip(lo, hi)])
    sums2 = np.array([_power_sum(2.0 * a, int(x), int(y)) for x, y in zip(lo, hi)])
    count = (hi - lo).astype(np.float64)
    total = float(sums.sum())
    return _Facts(count=count, freq=sums / (count * total), freq2=sums2 / (count * total**2),
                  mass=sums / total, normaliser=total, lo=lo, hi=hi)


def _unseen_sums(facts, a, T):
    """Per bin: ``sum (1 - f_mu)^T`` (expected unseen facts) and ``sum f_mu (1 - f_mu)^T`` (unseen mass).

    Bins of one fact exactly; wider bins (ranks above 256) by the Euler-Maclaurin form
    ``sum_{lo <= mu < hi} g(mu) = int_{lo-1/2}^{hi-1/2} g - [g'(hi-1/2) - g'(lo-1/2)] / 24``
    with 8-node Gauss-Legendre on the integral (``notes/zipf.md``, section 6).
    """
    count = np.zeros(facts.count.size)
    mass = np.zeros(facts.count.size)
    single = facts.count == 1.0
    f = facts.freq[single]
    log_hold = T * np.log1p(-f)
    count[single] = np.exp(log_hold)
    mass[single] = f * np.exp(log_hold)
    wide = ~single
    if np.any(wide):
        x, wx = np.polynomial.legendre.leggauss(_LEGENDRE_NODES)
        left, right = facts.lo[wide] - 0.5, facts.hi[wide] - 0.5
        half = 0.5 * (right - left)
        nodes = (0.5 * (right + left))[:, None] + half[:, None] * x[None, :]

        def terms(xs):  # (1 - f)^T, f (1 - f)^T and their derivatives in the rank
            fx = xs ** (-a) / facts.normaliser
            hold = np.exp(T * np.log1p(-fx))
            dfx = -a * fx / xs
            dhold = -T * hold / (1.0 - fx) * dfx
            return hold, fx * hold, dhold, dfx * hold + fx * dhold

        h, fh, _, _ = terms(nodes)
        _, _, dh_r, dfh_r = terms(right)
        _, _, dh_l, dfh_l = terms(left)
        count[wide] = half * (h @ wx) - (dh_r - dh_l) / 24.0
        mass[wide] = half * (fh @ wx) - (dfh_r - dfh_l) / 24.0
    return np.clip(count, 0.0, facts.count), np.clip(mass, 0.0, facts.mass)


# --------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ZipfError(Result):
    """Expected recall error of ``N`` facts with Zipf frequencies (see :func:`zipf_error`).

    ``error = sum_mu f_mu P(mu not recalled)``, ``recalled_mass = 1 - error``; ``kept`` is
    the expected number of facts recalled (optimal memory: kept by the knapsack).
    ``level`` is the Lagrange multiplier ``lambda`` of the optimal memory (fact ``mu`` is
    kept iff ``f_mu / C_mu >= lambda``; 0 when every fact is kept, NaN for the Hebbian
    memory).  ``load_ratio = N mean(C_N) / (F(kappa) d^2)`` (optimal memory; below 1 every
    fact is kept).  ``stderr`` is the Monte-Carlo standard error of ``error`` from the
    sample of ``samples`` costs (0 for the Hebbian quadratures).  ``model`` names the
    computation: ``"knapsack"``, ``"hebbian-finite-size"`` (unweighted W) or
    ``"hebbian-gaussian"`` (weighted W).  ``training_samples`` is ``T`` (None: infinitely
    many, every fact seen); ``unseen_mass = sum_mu f_mu (1 - f_mu)^T`` is the part of
    ``error`` from the facts never seen (0 when ``T`` is None) and ``seen`` the expected
    number of facts seen (``N`` when ``T`` is None).  ``status``: ``"ok"`` (the budget equation or the
    quadrature was solved and checked), ``"all_kept"`` (optimal memory below capacity:
    ``error = 0``), ``"degenerate"`` (``N`` infinite: every input has infinitely many
    competitors, ``error = 1`` for either memory) or ``"not_converged"`` (the budget
    equation's residual check failed).
    """

    STATUSES = ("ok", "all_kept", "degenerate", "not_converged")

    d: int
    N: float  # inf for infinitely many facts
    a: float
    memory: str
    kappa: float
    weights: str  # "none", "frequency" or "array"
    ensemble: str
    error: float
    recalled_mass: float
    kept: float
    level: float
    load_ratio: float
    stderr: float
    samples: int
    seed: int | None
    training_samples: int | None
    unseen_mass: float
    seen: float
    residual: float
    model: str
    status: str
    converged: bool
    message: str


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


class _CostLaw:
    """Interpolated law of ``C_N`` from a sorted sample, with its atom at 0.

    ``G(theta)`` is the empirical CDF made continuous by linear interpolation between
    consecutive positive order statistics (the marginal block kept fractionally, as in
    ``replica.accuracy``), ``H(theta) = L(G(theta))`` with ``L(u)`` the mean of the
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


def _knapsack_expectation(facts, law, budget, tol):
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


def _gaussian_recall(targets, comp_count, comp_w2, s2, d, ensemble):
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


def _competitor_bins(weights):
    """Bins of width 0.01 in ``ln w``: counts and mean squared weights."""
    keys = np.round(np.log(weights) / _LOG_W_BIN).astype(np.int64)
    unique, inverse = np.unique(keys, return_inverse=True)
    count = np.bincount(inverse).astype(np.float64)
    w2 = np.bincount(inverse, weights=weights**2) / count
    w1 = np.bincount(inverse, weights=weights) / count
    return count, w2, w1, unique


# --------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------
def _check_N(N):
    if N is None or (isinstance(N, (float, np.floating)) and math.isinf(N) and N > 0):
        return math.inf
    return check_int(N, "N", low=2)


def _check_weights(weights, memory, N):
    """``("none" | "frequency" | "array", array or None, note)``."""
    if weights is None:
        return "none", None, ""
    if memory != "hebbian":
        raise ValueError(f"weights apply to memory='hebbian' only (the optimal memory has no weights), "
                         f"got weights={weights!r}")
    if isinstance(weights, str):
        check_choice(weights, "weights", ("frequency",))
        return "frequency", None, ""
    if math.isinf(N):
        raise ValueError("weights must be None or 'frequency' when N is infinite, got an array")
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"weights must be None, 'frequency' or an array of N positive numbers, "
                         f"got {weights!r}") from None
    if w.ndim != 1 or w.size != N:
        raise ValueError(f"weights must be an array of N = {N} positive numbers, got shape {w.shape}")
    if N > _ARRAY_MAX:
        raise ValueError(f"weights arrays are limited to N <= {_ARRAY_MAX}, got N = {N}")
    if np.any(~np.isfinite(w)) or np.any(w <= 0.0):
        bad = w[~np.isfinite(w) | (w <= 0.0)][0]
        raise ValueError(f"weights must be finite and positive, got {bad!r}")
    total = float(w.sum())
    note = ""
    if abs(total - 1.0) > 1e-9:
        note = f"weights normalised to sum 1 (their sum was {total:.6g}); "
    return "array", w / total, note


def zipf_error(d, N, a, memory="optimal", kappa=1.0, weights=None, seed=None, *, samples=None,
               ensemble="gaussian", size=_DEFAULT_SIZE, tol=1e-9):
    """Expected frequency mass of the facts not recalled, for Zipf frequencies ``f_mu ∝ mu^-a``.

    ``N`` facts with ``N`` distinct outputs (``p = N`` competitors per input, the OP/DP
    setting), frequencies ``f_mu = mu^-a / H_{N,a}`` and error
    ``E = sum_mu f_mu P(mu not recalled)``; ``notes/zipf.md``.

    * ``memory="optimal"``: the rank ``kappa d`` memory that maximises the recalled mass.
      Each fact is a block with water-filling cost ``C_mu`` (the law of ``C_N``,
      sampled by :func:`replica.scores.sample_optimal_scores`); the kept set solves the
      knapsack ``max sum_kept f_mu`` s.t. ``sum_kept C_mu <= F(kappa) d^2``, taken by its
      Lagrangian: keep ``mu`` iff ``C_mu <= f_mu / lambda``, with ``lambda`` set by the
      budget in expectation, ``sum_mu E[C 1{C <= f_mu / lambda}] = F d^2``.
      Replica-symmetric; the message says so.
    * ``memory="hebbian"``: ``W = sum_mu w_mu u_mu e_mu^T``.  ``weights=None`` is the
      unweighted memory: every fact has the recall probability of the finite-size
      Hebbian model (:func:`replica.hebbian.hebbian_input_failure_probability` at
      ``p = N``) and ``E`` does not depend on ``a``.  ``weights="frequency"`` (``w = f``)
      or an array of ``N`` positive weights: a Gaussian model of the scores (target
      ``w_mu``, competitor ``rho`` of variance ``(w_rho^2 + w_mu^2)/d + sum w^2 / d^2``).
      Equal weights use the finite-size model.
    * ``samples=T``: the memory is built from ``T`` i.i.d. draws of the Zipf law and
      stores only the facts seen (fact ``mu`` with probability ``q_mu = 1 - (1 - f_mu)^T``);
      unseen facts are errors, ``unseen_mass = sum_mu f_mu (1 - f_mu)^T``, and their
      outputs still compete (random outputs, not stored in ``W``).  Optimal memory: the
      knapsack over the seen facts in expectation over the seen indicators,
      ``sum_mu q_mu E[C 1{C <= f_mu / lambda}] = F d^2``.  Hebbian, ``weights=None``:
      ``W = sum_{mu seen} u_mu e_mu^T``, the finite-size model with ``n`` stored facts
      and ``N - n`` unstored competing outputs, averaged over the number ``n`` of facts
      seen.  Hebbian, ``weights="frequency"``: the empirical frequencies ``w_mu = n_mu / T``
      (``W = sum_mu n_mu u_mu e_mu^T``), the Gaussian model averaged over the binomial
      counts ``n_mu``.  ``notes/zipf.md``, section 6.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    N : int or None
        Number of facts, ``>= 2``; ``None`` or ``inf`` for infinitely many (``a > 1``
        needed; the result is then ``"degenerate"``: infinitely many outputs compete).
    a : float
        Zipf exponent, ``>= 0`` (``a > 1`` when ``N`` is infinite).
    memory : {"optimal", "hebbian"}
    kappa : float
        Rank fraction in ``(0, 1]`` (optimal memory); must be 1 for the Hebbian memory.
    weights : None, "frequency" or array_like
        Weights of the Hebbian memory (positive; normalised to sum 1, the message says
        so when they did not).  Must be None for the optimal memory.
    seed : None, int, SeedSequence or Generator
        Seed of the sample of ``C_N`` (``None``: ``DEFAULT_SEED``); optimal memory only.
    samples : int or None
        Number ``T >= 1`` of training samples; None (default): infinitely many, every
        fact seen (the result is then the same as without the argument, bit for bit).
        With ``T``, ``weights`` must be None or ``"frequency"`` (empirical frequencies).
    ensemble : {"gaussian", "sphere"}
        Embedding ensemble of the Hebbian memory (the optimal-memory theory has Gaussian
        competitor fields and does not depend on it).
    size : int
        Monte-Carlo samples of ``C_N``, ``>= 100``.
    tol : float
        Accepted relative residual of the budget equation, in ``(0, 1e-2]``.

    Returns
    -------
    ZipfError

    Raises
    ------
    ValueError
        Naming the argument: ``d < 2``, ``N < 2``, ``a < 0`` (or ``a <= 1`` with ``N``
        infinite), an unknown ``memory`` or ``ensemble``, ``kappa`` outside ``(0, 1]`` (or
        not 1 for the Hebbian memory), weights that are not positive and finite, of the
        wrong length or given for the optimal memory, ``size < 100``, ``tol`` out of range,
        ``samples`` not a positive integer (or given with a weights array).
    """
    d, N, a, kappa, (kind, w_array, note), T, size, tol, seed = _checked_arguments(
        d, N, a, memory, kappa, weights, ensemble, samples, size, tol, seed)
    common = dict(d=d, N=float(N), a=a, memory=memory, kappa=kappa, weights=kind, ensemble=ensemble, seed=seed,
                  training_samples=T)
    if math.isinf(N):
        return _infinite_N(memory, T, common)
    facts = _zipf_facts(N, a)
    if T is not None:
        unseen_count, unseen_mass = _unseen_sums(facts, a, T)
        if memory == "optimal":
            return _optimal_sampled(facts, unseen_count, unseen_mass, d, N, kappa, size, seed, tol, common)
        return _hebbian_sampled(facts, a, T, unseen_count, unseen_mass, d, N, kind, ensemble, common)
    if memory == "optimal":
        return _optimal(facts, d, N, kappa, size, seed, tol, common)
    return _hebbian(facts, d, N, a, (kind, w_array, note), ensemble, common)


def _checked_arguments(d, N, a, memory, kappa, weights, ensemble, samples, size, tol, seed):
    """The arguments of :func:`zipf_error` checked (``ValueError`` naming the bad one)."""
    d = check_int(d, "d", low=2)
    N = _check_N(N)
    a = check_real(a, "a", low=0.0)
    if math.isinf(N) and a <= 1.0:
        raise ValueError(f"a must be > 1 when N is infinite (sum_mu mu^-a diverges), got {a!r}")
    check_choice(memory, "memory", MEMORIES)
    kappa = check_scalar_kappa(kappa)
    if memory == "hebbian" and kappa != 1.0:
        raise ValueError(f"kappa must be 1 for memory='hebbian' (no finite-size theory of the rank-truncated "
                         f"Hebbian memory), got {kappa!r}")
    check_ensemble(ensemble)
    kind, w_array, note = _check_weights(weights, memory, N)
    T = _check_samples(samples, kind)
    size = check_int(size, "size", low=100)
    tol = check_real(tol, "tol", low=0.0, high=1e-2, low_open=True)
    seed = resolve_seed(seed) if memory == "optimal" else None
    return d, N, a, kappa, (kind, w_array, note), T, size, tol, seed


def _infinite_N(memory, T, common):
    """The degenerate result of ``N = inf``: every fact missed (error 1)."""
    return ZipfError(error=1.0, recalled_mass=0.0, kept=0.0, level=math.nan, load_ratio=math.inf,
                     stderr=0.0, samples=0, unseen_mass=0.0 if T is None else math.nan,
                     seen=math.inf if T is None else math.nan, residual=0.0,
                     model="knapsack" if memory == "optimal"
                     else "hebbian-gaussian", status="degenerate", converged=True,
                     message=("N infinite: every input has infinitely many competing outputs, so no "
                              "memory recalls any fact (error 1); the scaling law in d needs a finite N "
                              "(notes/zipf.md, section 4)"), **common)


def _check_samples(samples, kind):
    """``T`` as an int, or None (infinitely many samples)."""
    if samples is None:
        return None
    T = check_int(samples, "samples", low=1)
    if kind == "array":
        raise ValueError("samples applies to weights=None or 'frequency' (the weights then come from the "
                         "counts of the samples), not to a weights array")
    return T


def _optimal(facts, d, N, kappa, size, seed, tol, common):
    budget = float(tail_second_moment(kappa)) * float(d) ** 2
    law = _CostLaw(sample_optimal_scores(p=float(N), size=size, seed=seed).cost)
    solved = _knapsack_expectation(facts, law, budget, tol)
    ratio = N * law.mean / budget
    if solved["all_kept"]:
        status, verdict = "all_kept", "every fact kept (below capacity)"
    else:
        status = "ok" if solved["ok"] else "not_converged"
        verdict = (f"{solved['kept']:.6g} of {N} facts kept in expectation, error {solved['error']:.4g} "
                   f"+- {solved['stderr']:.2g}; residual {solved['residual']:.2g} (tol {tol:.2g})"
                   f"{'' if solved['ok'] else ', root not accepted'}")
    message = f"{verdict}; load ratio {ratio:.4g}; {_RS_CAVEAT}"
    return ZipfError(error=solved["error"], recalled_mass=1.0 - solved["error"], kept=solved["kept"],
                     level=solved["level"], load_ratio=ratio, stderr=solved["stderr"], samples=law.n,
                     unseen_mass=0.0, seen=float(N), residual=solved["residual"], model="knapsack", status=status,
                     converged=status != "not_converged", message=message, **common)


def _optimal_sampled(facts, unseen_count, unseen_mass, d, N, kappa, size, seed, tol, common):
    """The knapsack over the facts seen in ``T`` samples, in expectation over the seen indicators."""
    budget = float(tail_second_moment(kappa)) * float(d) ** 2
    law = _CostLaw(sample_optimal_scores(p=float(N), size=size, seed=seed).cost)
    seen = facts.count - unseen_count
    unseen = float(unseen_mass.sum())
    seen_facts = _Facts(count=seen, freq=facts.freq, freq2=facts.freq2, mass=facts.mass - unseen_mass,
                        normaliser=facts.normaliser, lo=facts.lo, hi=facts.hi)
    solved = _knapsack_expectation(seen_facts, law, budget, tol)
    n_seen = float(seen.sum())
    error = min(max(unseen + solved["error"], 0.0), 1.0)
    ratio = n_seen * law.mean / budget
    T = common["training_samples"]
    if solved["all_kept"]:
        status, verdict = "all_kept", "every seen fact kept (below capacity)"
    else:
        status = "ok" if solved["ok"] else "not_converged"
        verdict = (f"{solved['kept']:.6g} of {n_seen:.6g} seen facts kept in expectation; residual "
                   f"{solved['residual']:.2g} (tol {tol:.2g}){'' if solved['ok'] else ', root not accepted'}")
    message = (f"T = {T} samples: {n_seen:.6g} of {N} facts seen in expectation, unseen mass {unseen:.4g}; "
               f"{verdict}; error {error:.4g} +- {solved['stderr']:.2g}; load ratio of the seen facts "
               f"{ratio:.4g}; {_RS_CAVEAT}")
    return ZipfError(error=error, recalled_mass=1.0 - error, kept=solved["kept"], level=solved["level"],
                     load_ratio=ratio, stderr=solved["stderr"], samples=law.n, unseen_mass=unseen, seen=n_seen,
                     residual=solved["residual"], model="knapsack", status=status,
                     converged=status != "not_converged", message=message, **common)


def _hebbian(facts, d, N, a, weighting, ensemble, common):
    """The Hebbian branch of :func:`zipf_error` (``weighting = (kind, w_array, note)``)."""
    kind, w_array, note = weighting
    if kind == "frequency":
        equal = a == 0.0
    elif kind == "array":
        equal = bool(np.ptp(w_array) <= 1e-12 * w_array.max())
    else:
        equal = True
    if equal:
        recall = 1.0 - hebbian_input_failure_probability(d=d, p=float(N), ensemble=ensemble)
        error = 1.0 - recall
        kept = N * recall
        model = "hebbian-finite-size"
        what = "equal weights: the finite-size Hebbian model at p = N" if kind != "none" else \
            "unweighted W: the finite-size Hebbian model at p = N (the same for every fact)"
    else:
        if kind == "frequency":
            count, w2, targets = facts.count, facts.freq2, facts.freq
            s2 = float(np.dot(count, w2))
            recall_bins = _gaussian_recall(targets, count, w2, s2, d, ensemble)
            error = float(np.dot(facts.mass, 1.0 - recall_bins))
            kept = float(np.dot(count, recall_bins))
        else:
            count, w2, w1, _ = _competitor_bins(w_array)
            s2 = float(np.dot(w_array, w_array))
            recall_bins = _gaussian_recall(w1, count, w2, s2, d, ensemble)
            order = np.argsort(w1)
            log_recall = np.log(np.maximum(recall_bins[order], 1e-300))
            per_fact = np.exp(np.interp(np.log(w_array), np.log(w1[order]), log_recall))
            frequencies = facts.freq if facts.count.size == N else zipf_frequencies(N, a)
            error = float(np.dot(frequencies, 1.0 - per_fact))
            kept = float(per_fact.sum())
        model = "hebbian-gaussian"
        what = f"weighted W ({kind}): Gaussian model of the scores"
    error = min(max(error, 0.0), 1.0)
    message = (f"{note}{what}; expected {kept:.6g} of {N} facts recalled, error {error:.4g}")
    return ZipfError(error=error, recalled_mass=1.0 - error, kept=kept, level=math.nan, load_ratio=math.nan,
                     stderr=0.0, samples=0, unseen_mass=0.0, seen=float(N), residual=0.0, model=model,
                     status="ok", converged=True, message=message, **common)


def _hebbian_sampled(facts, a, T, unseen_count, unseen_mass, d, N, kind, ensemble, common):
    """The Hebbian memory of the facts seen in ``T`` samples (unweighted or count-weighted)."""
    unseen = float(unseen_mass.sum())
    seen_mass = facts.mass - unseen_mass
    n_seen = float((facts.count - unseen_count).sum())
    if kind == "none":
        # n stored facts ~ N(mean, sum q (1 - q)); the unseen count at 2T gives sum (1 - f)^(2T)
        variance = max(float(unseen_count.sum() - _unseen_sums(facts, a, 2 * T)[0].sum()), 0.0)
        z, wz = special.roots_hermitenorm(_SEEN_NODES)
        wz = wz / wz.sum()
        stored = np.clip(n_seen + math.sqrt(variance) * z, 2.0, float(N))
        fail = float(sum(w * failure_probability(d, float(n), ensemble, unstored=float(N) - float(n))
                         for n, w in zip(stored, wz)))
        fail = min(max(fail, 0.0), 1.0)
        recall_bins = np.full(facts.count.size, 1.0 - fail)
        model = "hebbian-finite-size"
        what = (f"unweighted W over the seen facts: the finite-size model with n stored facts and N - n unstored "
                f"competing outputs, n ~ {n_seen:.6g} +- {math.sqrt(variance):.3g} ({_SEEN_NODES}-node average; "
                f"n >= 2)")
    else:
        recall_bins = _count_weighted_recall(facts, T, d, ensemble)
        model = "hebbian-gaussian"
        what = "count-weighted W = sum n_mu u_mu e_mu^T: Gaussian model of the scores, averaged over the counts"
    seen_count = facts.count - unseen_count
    error = min(max(unseen + float(np.dot(seen_mass, 1.0 - recall_bins)), 0.0), 1.0)
    kept = float(np.dot(seen_count, recall_bins))
    message = (f"T = {T} samples: {n_seen:.6g} of {N} facts seen in expectation, unseen mass {unseen:.4g}; "
               f"{what}; expected {kept:.6g} facts recalled, error {error:.4g}")
    return ZipfError(error=error, recalled_mass=1.0 - error, kept=kept, level=math.nan, load_ratio=math.nan,
                     stderr=0.0, samples=0, unseen_mass=unseen, seen=n_seen, residual=0.0, model=model,
                     status="ok", converged=True, message=message, **common)


def _count_weighted_recall(facts, T, d, ensemble):
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
    recall_grid = _gaussian_recall(grid / T, facts.count, w2, s2, d, ensemble)
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
