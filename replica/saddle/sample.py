"""The fixed Monte-Carlo sample of blocks behind the replica-symmetric saddle point.

:class:`ReplicaSample` holds the common random numbers of :mod:`replica.saddle.point`: the
target fields, the exact top competitors of any block size ``p`` and the conditional
law of the others, with ``ln Z(t; q)`` per block from :mod:`replica.saddle._kernels`.
``notes/replica_saddle.md`` (section "Numerics").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.polynomial.legendre import leggauss
from scipy import special

from ._kernels import _bulk_fluctuation_batch, _log_partition_batch, _mills
from ..common.checks import check_int, check_memory, check_real
from ..common.seeds import resolve_seed
from ..asymptotic.extremes import order_statistics_from_uniforms
from ..optimal.water_filling import water_filling_cost

__all__ = ["DEFAULT_SAMPLES", "DEFAULT_EXACT_COMPETITORS", "ReplicaSample", "check_p", "resolve_sample"]

DEFAULT_SAMPLES = 1024
_SAMPLE_ARRAYS = 8  # (samples, K) float64 arrays of a sample and its cached blocks
DEFAULT_EXACT_COMPETITORS = 64

_GL_X = leggauss(24)  # per side of the mode
_GL_T = leggauss(12)  # per panel of the bulk integral
_GL_DIAG = leggauss(8)  # per panel of the fluctuation diagnostic


@dataclass(frozen=True)
class _Blocks:
    target: np.ndarray  # (M,)
    tops: np.ndarray  # (M, K), decreasing
    bulk: float  # n - K competitors conditioned below tops[:, -1]
    norm: np.ndarray  # Phi(tops[:, -1]) (ones when bulk == 0)


def check_p(p, exact_competitors):
    """Check the block size ``p >= 2`` (an integer when ``p - 1 <= exact_competitors``); return it."""
    p = check_real(p, "p", low=2.0)
    n = p - 1.0
    if n <= exact_competitors and not float(p).is_integer():
        raise ValueError(f"p must be an integer when p - 1 <= exact_competitors = {exact_competitors} "
                         f"(all competitors are then sampled exactly), got {p!r}")
    return p


class ReplicaSample:
    """A fixed Monte-Carlo sample of blocks: the common random numbers of the saddle point.

    Row ``i`` holds a target field ``t_1`` (stratified: the normal quantile of
    ``(j + 1/2)/M`` for a permuted ``j``, so the targets are exactly symmetric) and
    ``K`` Latin-hypercube uniforms that :func:`replica.asymptotic.extremes.order_statistics_from_uniforms`
    maps to the ``K`` largest of ``n = p - 1`` competitors, for any ``p``.  The other
    ``n - K`` competitors enter through their conditional law (i.i.d. N(0, 1) below the
    ``K``-th).  The same rows serve every ``p``, ``q`` and margin, so ``phi(q)``,
    its derivative and ``p E[C_p]`` are deterministic smooth functions on one sample.
    See ``notes/replica_saddle.md`` (section "Numerics").

    Parameters
    ----------
    samples : int, optional
        Number of blocks ``M >= 16``.
    seed : None, int, SeedSequence or Generator, optional
        Seed of the sample (``None``: ``DEFAULT_SEED``); the integer used is stored as
        ``seed`` and in results.
    exact_competitors : int, optional
        ``K >= 2``, how many of the largest competitors are sampled exactly.  For
        ``p - 1 <= K`` every competitor is exact (then ``p`` must be an integer).

    Raises
    ------
    ValueError
        If an argument is outside its range.
    """

    def __init__(self, samples=DEFAULT_SAMPLES, seed=None, exact_competitors=DEFAULT_EXACT_COMPETITORS):
        self.samples = check_int(samples, "samples", low=16)
        self.seed = resolve_seed(seed)
        self.exact_competitors = check_int(exact_competitors, "exact_competitors", low=2)
        check_memory(8.0 * self.samples * (self.exact_competitors + 2) * _SAMPLE_ARRAYS,
                     f"ReplicaSample(samples={self.samples}, exact_competitors={self.exact_competitors})")
        seq_target, seq_comp = np.random.SeedSequence(self.seed).spawn(2)
        rng_t = np.random.default_rng(seq_target)
        rng_u = np.random.default_rng(seq_comp)
        m, k = self.samples, self.exact_competitors
        half = special.ndtri((np.arange(m // 2) + 0.5) / m)
        target = np.concatenate([half, np.zeros(m % 2), -half[::-1]])  # exactly symmetric
        self.target = target[rng_t.permutation(m)]
        uniforms = np.empty((m, k))
        for j in range(k):
            uniforms[:, j] = (rng_u.permutation(m) + rng_u.random(m)) / m
        self.uniforms = np.clip(uniforms, np.finfo(float).tiny, 1.0 - np.finfo(float).epsneg)
        self._cache: dict = {}

    def blocks(self, p) -> _Blocks:
        """Target, exact top competitors and bulk size for ``p`` (cached)."""
        p = check_p(p, self.exact_competitors)
        key = float(p)
        if key not in self._cache:
            n = p - 1.0
            k = int(min(self.exact_competitors, round(n) if n <= self.exact_competitors else n))
            tops = order_statistics_from_uniforms(n, self.uniforms[:, :k])
            bulk = n - k
            norm = special.ndtr(tops[:, -1]) if bulk > 0 else np.ones(self.samples)
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = _Blocks(self.target, np.ascontiguousarray(tops), float(bulk), norm)
        return self._cache[key]

    def control(self, p, margin=0.0):
        """Control variate of the ``sqrt(q)`` term: ``(gamma_0, D)`` (cached).

        At small ``q``, ``ln Z_i = ln Z(0) + sqrt(q) D_i gamma_0 + O(q)`` with
        ``D_i = sum_rho (t_1 - t_rho)`` and ``gamma_0 = <phi/Phi(x - margin)>`` under
        ``P_0(x) ~ phi(x) Phi(x - margin)^n``.  ``E[D] = 0`` exactly, but its sample
        mean is not, which would give the Monte-Carlo ``phi(q)`` a spurious
        ``sqrt(q)`` term (a ``q^{-1/2}`` derivative).  The targets are exactly symmetric,
        so only the competitor part ``D_i = -(sum_top t_rho + (n-K) E[t | t < t_(K)])``
        is used (``notes/replica_saddle.md``, section "Numerics").
        """
        margin = check_real(margin, "margin", low=0.0)
        blk = self.blocks(p)
        key = ("control", float(p), margin)
        if key not in self._cache:
            one = np.zeros(1)
            _, _, _, nodes, logw = _log_partition_batch(
                0.0, margin, one, blk.tops[:1], blk.bulk, blk.norm[:1], False,
                _GL_X[0], _GL_X[1], _GL_T[0], _GL_T[1])
            gamma0 = float(np.sum(np.exp(logw[0]) * np.array([_mills(u) for u in nodes[0] - margin])))
            comp = blk.tops.sum(axis=1)
            if blk.bulk > 0:
                last = blk.tops[:, -1]
                comp = comp - blk.bulk * np.exp(-0.5 * last**2 - 0.5 * math.log(2 * math.pi)
                                                 - special.log_ndtr(last))
            self._cache[key] = (gamma0, -comp)
        return self._cache[key]

    def log_partition(self, p, q, margin=0.0, derivative=True, control=True):
        """Per-block ``ln Z(t; q)`` and ``d ln Z / d q`` (NaN when ``derivative`` is False).

        With ``control`` (default) the zero-mean control term ``sqrt(q) gamma_0 D_i`` of
        :meth:`control` is subtracted, so the mean over blocks estimates ``E ln Z``
        without a spurious ``sqrt(q)`` term.  Returns ``(log_z, dlog_z, info)``;
        ``info[:, 4] > 0`` flags a block whose mode search did not converge.
        """
        q = check_real(q, "q", low=0.0, high=1.0, high_open=True)
        margin = check_real(margin, "margin", low=0.0)
        if derivative and q == 0.0:
            raise ValueError("q must lie in (0, 1) for the derivative, got 0.0")
        blk = self.blocks(p)
        log_z, dlog_z, info, _, _ = _log_partition_batch(
            q, margin, blk.target, blk.tops, blk.bulk, blk.norm, bool(derivative),
            _GL_X[0], _GL_X[1], _GL_T[0], _GL_T[1])
        if control and q > 0.0:
            gamma0, dsum = self.control(p, margin)
            log_z = log_z - math.sqrt(q) * gamma0 * dsum
            if derivative:
                dlog_z = dlog_z - gamma0 * dsum / (2.0 * math.sqrt(q))
        if not derivative:
            dlog_z[:] = np.nan
        return log_z, dlog_z, info

    def water_filling(self, p, margin=0.0):
        """Per-block water-filling cost ``C_p(t)`` on this sample and whether the bulk mattered.

        Uses :func:`replica.optimal.finite_size.water_filling_cost` on the target and the exact
        top competitors.  ``bulk_active[i]`` is True when the ``K``-th competitor is pushed
        down (the level is below it), so that competitors outside the exact top ``K``
        could matter too; it is always False when every competitor is exact.
        """
        margin = check_real(margin, "margin", low=0.0)
        blk = self.blocks(p)
        cost = np.asarray(water_filling_cost(blk.target, blk.tops, margin))
        if blk.bulk > 0:
            without_last = np.asarray(water_filling_cost(blk.target, blk.tops[:, :-1], margin))
            bulk_active = cost != without_last
        else:
            bulk_active = np.zeros(self.samples, dtype=bool)
        return cost, bulk_active

    def bulk_fluctuation(self, p, q, margin=0.0, panel=None):
        """Estimated bias of ``E ln Z`` from replacing the bulk by its conditional mean.

        Per block, ``(n - K)/2 (E_t Var_P f - Var_P m) >= 0`` (second cumulant; see
        ``notes/replica_saddle.md``, "The bulk of the competitors").  The exact
        ``E ln Z`` is larger than the computed one by about this much.
        """
        q = check_real(q, "q", low=0.0, high=1.0, high_open=True)
        margin = check_real(margin, "margin", low=0.0)
        blk = self.blocks(p)
        if blk.bulk <= 0:
            return np.zeros(self.samples)
        _, _, _, nodes, logw = _log_partition_batch(
            q, margin, blk.target, blk.tops, blk.bulk, blk.norm, False,
            _GL_X[0], _GL_X[1], _GL_T[0], _GL_T[1])
        if panel is None:
            panel = min(0.25, 0.25 * math.sqrt((1.0 - q) / max(q, 1e-300)))
        return _bulk_fluctuation_batch(q, margin, blk.target, np.ascontiguousarray(blk.tops[:, -1]),
                                       blk.bulk, blk.norm, nodes, logw, float(panel),
                                       _GL_DIAG[0], _GL_DIAG[1])


def resolve_sample(sample, seed) -> ReplicaSample:
    """The sample to use: ``sample`` as given, or the default-size sample of ``seed``."""
    if sample is None:
        return ReplicaSample(seed=seed)
    if not isinstance(sample, ReplicaSample):
        raise ValueError(f"sample must be a ReplicaSample or None, got {type(sample).__name__}")
    if seed is not None:
        raise ValueError(f"give seed or sample, not both (the sample has seed {sample.seed}), got seed={seed!r}")
    return sample
