"""The facts of :func:`replica.variants.zipf.zipf_error`: Zipf frequencies, in bins, seen in ``T`` samples.

``N`` facts are queried with frequencies ``f_mu = mu^(-a) / H_{N,a}``.  The theory treats
the first 256 facts one by one and the others in bins of consecutive ranks (edges in the
ratio 1.02), with the power sums of each bin by Euler-Maclaurin; with ``T`` training
samples, fact ``mu`` is seen with probability ``1 - (1 - f_mu)^T`` (``notes/zipf.md``,
sections 2 and 6).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..common.checks import check_int, check_real

__all__ = ["zipf_frequencies", "FactBins", "zipf_fact_bins", "unseen_sums", "ZipfFacts"]

_EXACT_FACTS = 256  # facts mu <= this are treated one by one; beyond, in geometric bins
_BIN_RATIO = 1.02  # ratio of the edges of consecutive bins of facts
_LEGENDRE_NODES = 8  # per bin of ranks, for the sums over the facts seen in T samples


def zipf_frequencies(N, a) -> np.ndarray:
    """``f_mu = mu^(-a) / sum_nu nu^(-a)`` for ``mu = 1..N``: the query frequencies of the facts.

    The one definition of the Zipf frequencies, for the theory
    (:func:`replica.variants.zipf.zipf_error` with weights given per fact) and the
    measurement (``validation.zipf``); see ``notes/zipf.md``.

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
class FactBins:
    """Facts in bins of consecutive ranks: count, mean frequency, mean squared frequency, mass."""

    count: np.ndarray
    freq: np.ndarray
    freq2: np.ndarray
    mass: np.ndarray
    normaliser: float  # H_{N,a}
    lo: np.ndarray | None = None  # first rank of each bin
    hi: np.ndarray | None = None  # one past the last rank of each bin


@functools.lru_cache(maxsize=64)
def zipf_fact_bins(N, a):
    """The ``N`` facts with ``f_mu = mu^-a / H_{N,a}``: one by one up to 256, then bins of ratio 1.02.

    Remembered for the last 64 ``(N, a)``; the arrays are read-only.
    """
    edges = list(range(1, min(N, _EXACT_FACTS) + 2))
    while edges[-1] <= N:
        edges.append(min(max(edges[-1] + 1, math.ceil(edges[-1] * _BIN_RATIO)), N + 1))
    lo, hi = np.array(edges[:-1]), np.array(edges[1:])
    sums = np.array([_power_sum(a, int(x), int(y)) for x, y in zip(lo, hi)])
    sums2 = np.array([_power_sum(2.0 * a, int(x), int(y)) for x, y in zip(lo, hi)])
    count = (hi - lo).astype(np.float64)
    total = float(sums.sum())
    arrays = dict(count=count, freq=sums / (count * total), freq2=sums2 / (count * total**2), mass=sums / total,
                  lo=lo, hi=hi)
    for x in arrays.values():
        x.flags.writeable = False
    return FactBins(normaliser=total, **arrays)


def unseen_sums(facts, a, T):
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


@dataclass(frozen=True)
class ZipfFacts:
    """The facts of :func:`zipf_error`: ``N`` facts asked with frequencies ``f_mu ∝ mu^-a``.

    The values are checked by :func:`zipf_error` (a ``ValueError`` names the bad one).

    Attributes
    ----------
    N : int or None
        Number of facts, ``>= 2``; ``None`` or ``inf`` for infinitely many (``a > 1``
        needed; the result is then ``"degenerate"``: infinitely many outputs compete).
    a : float
        Zipf exponent, ``>= 0`` (``a > 1`` when ``N`` is infinite).
    weights : None, "frequency" or array_like
        Weights of the Hebbian memory (positive; normalised to sum 1, the message says
        so when they did not).  Must be None for the optimal memory.
    samples : int or None
        Number ``T >= 1`` of training samples; None (default): infinitely many, every
        fact seen (the result is then the same as without the argument, bit for bit).
        With ``T``, ``weights`` must be None or ``"frequency"`` (empirical frequencies).
    """

    N: int | float | None
    a: float
    weights: object = None
    samples: int | None = None
