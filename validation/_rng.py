"""Counter-based random candidates for the decoupled problem (DP), as numba kernels.

In the decoupled problem every input ``mu`` has its own ``p`` candidate outputs
``u^(mu)_rho`` (``rho = 0..p-1``; ``rho = mu`` is the target).  Storing them all
would take ``8 d p^2`` bytes (2.3 GB at d = 128, p = 1500), so they are never
stored: every coordinate is a pure function of ``(key, mu, rho, j)`` and is
regenerated wherever it is needed.  See ``notes/simulation.md``.

The generator
-------------
``mix64`` is the splitmix64 finaliser (Stafford's "Mix13" variant, as in
``java.util.SplittableRandom``)::

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    z =  z ^ (z >> 31)

For a candidate ``(mu, rho)`` the stream seed is
``s = mix64(mix64(key + (mu + 1) * G) + (rho + 1) * G2)`` and coordinate ``j``
uses the 64-bit word ``w_j = mix64(s + (j + 1) * G)`` (``G = 0x9E3779B97F4A7C15``,
``G2 = 0xD1B54A32D192ED03``, all arithmetic mod 2^64).  ``z_j`` is a standard
normal made from ``w_j`` by the Marsaglia-Tsang ziggurat in Doornik's ZIGNOR form
(128 layers): the top 53 bits give ``u = 2 U - 1`` with ``U = ((w >> 11) + 0.5) 2^-53``,
the low 7 bits the layer ``i``; ``z = u x_i`` is accepted when ``|u| < x_{i+1}/x_i``
(97.2 % of draws: one minus the mean of the 128 ratios).  The rejection and tail
steps draw further words ``mix64(mix64(s + (j + 1) G) + a G2)``, ``a = 1, 2, ...``, so coordinate ``j`` stays
a function of ``(key, mu, rho, j)`` alone.  The ziggurat is exact in law (up to
the 53-bit resolution of the uniforms); it is about 4 times faster than
Box-Muller or an inverse-CDF transform here (about 5 ns per coordinate).  The
``gaussian`` ensemble (code 0) scales ``z`` by ``1 / sqrt(d)``; the ``sphere``
ensemble (code 1) divides ``z`` by its Euclidean norm.  Every candidate is
computed independently of every other one, so results are bitwise identical
whatever the number of threads or the order of evaluation.

Kernels (all ``cache=True``; the ``parallel=True`` ones split the outer loop over
inputs or pairs with ``prange`` and respect ``NUMBA_NUM_THREADS`` /
``numba.set_num_threads``).  Every DP candidate in the package is generated here:

``dp_fill_pairs(key, ensemble_code, mus, rhos, out)``
    ``out[k] = u^(mus[k])_(rhos[k])`` for int64 ``mus, rhos`` (n,) and ``out`` (n, d),
    float64 or float32.  Instances (targets, ``Instance.candidates``), the LP's
    constraint rows and the ``optimal`` solver's working set use it.  Parallel.
``dp_scores_into(key, ensemble_code, images, out)``
    ``images`` float64 (p, d) with ``images[mu] = W @ e_mu``; writes
    ``out[rho, mu] = u^(mu)_rho . images[mu]`` for all ``rho, mu`` into ``out``
    float64 (p, p).  No candidate is stored (one length-d buffer per input).
    Parallel over ``mu``.
``dp_combinations_into(key, ensemble_code, coefficients, out)``
    ``coefficients`` float64 (p, p) indexed ``[rho, mu]``; writes
    ``out[mu] = sum_rho coefficients[rho, mu] * u^(mu)_rho`` into ``out`` (p, d).
    Gradients of any score-based loss then follow from ``out.T @ inputs``
    (``sum_{rho,mu} c[rho,mu] u^(mu)_rho e_mu^T``).  Parallel.  The size ``d`` is
    ``out.shape[1]`` and ``p`` is ``coefficients.shape[0]``.
``dp_listed_margins(key, ensemble_code, images, targets, mus, cols, out, norms)``
    The margins of a block of inputs against listed candidates:
    ``out[i, k] = (targets[mus[i]] - u^(mus[i])_(cols[i, k])) . images[i]``, and
    ``norms[i]`` the largest norm among them (skipped for a length-0 ``norms``).
    Parallel.
``dp_block_margins(key, ensemble_code, images, targets, mus, n_candidates, out)`` (Python)
    ``dp_listed_margins`` against all ``n_candidates`` candidates of every input (the
    ``optimal`` solver's full pass).
``dp_block_scan(key, ensemble_code, images, targets, mus, n_candidates, out, norms)`` (Python)
    The same with the largest candidate norm of every input (the screened full pass).

``dp_pairs(key, ensemble_code, mus, rhos, d, dtype=float64)`` (Python)
    ``dp_fill_pairs`` into a new (n, d) array.

``_fill_candidate(key, ensemble_code, mu, rho, out_row)`` (njit, serial)
    Write candidate ``(mu, rho)`` into the length-d float64 ``out_row``; the
    building block of all the kernels above.

``key`` is a ``numpy.uint64`` (``Instance.dp_key``) and ``ensemble_code`` an int
(``ENSEMBLE_CODES[name]``, ``Instance.ensemble_code``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "ENSEMBLE_CODES",
    "mix64",
    "counter_normal",
    "dp_fill_pairs",
    "dp_scores_into",
    "dp_combinations_into",
    "dp_block_margins",
    "dp_block_scan",
    "dp_listed_margins",
    "dp_pairs",
]

ENSEMBLE_CODES = {"gaussian": 0, "sphere": 1}

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_GOLDEN2 = np.uint64(0xD1B54A32D192ED03)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_ONE = np.uint64(1)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2^-53


@numba.njit(cache=True, inline="always")
def mix64(z):
    """splitmix64 finaliser of a uint64 (bijective on 64-bit words)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@numba.njit(cache=True, inline="always")
def _stream_seed(key, mu, rho):
    s = mix64(key + (np.uint64(mu) + _ONE) * _GOLDEN)
    return mix64(s + (np.uint64(rho) + _ONE) * _GOLDEN2)


def _ziggurat_tables(layers=128, edge=3.442619855899, volume=9.91256303526217e-3):
    """Layer edges x_i and ratios x_{i+1}/x_i of Marsaglia-Tsang's ziggurat (Doornik's ZIGNOR)."""
    x = np.zeros(layers + 1)
    f = math.exp(-0.5 * edge * edge)
    x[0] = volume / f
    x[1] = edge
    for i in range(2, layers):
        x[i] = math.sqrt(-2.0 * math.log(volume / x[i - 1] + f))
        f = math.exp(-0.5 * x[i] * x[i])
    ratio = x[1:] / x[:-1]
    return x, ratio


_ZIG_X, _ZIG_RATIO = _ziggurat_tables()
_ZIG_EDGE = 3.442619855899
_LOW7 = np.uint64(0x7F)


@numba.njit(cache=True, inline="always")
def _word_uniform(w):
    return (np.float64(np.int64(w >> _S11)) + 0.5) * _TWO_M53


# The generator proper is compiled eagerly, without fastmath, for fixed argument types.
# numba compiles a lazily typed callee with the flags of the first caller that needs it
# (and caches that version), so a fastmath kernel compiled first would otherwise change
# the last bits of every candidate for every later caller.
_EXACT = {"cache": True, "fastmath": False}


@numba.njit("float64(uint64, int64, uint64)", **_EXACT)
def _ziggurat_slow(seed, j, first_word):
    """Rare branch of the ziggurat (about 2.8 % of draws): more words from sub-stream (j, a)."""
    w = first_word
    base = mix64(seed + (np.uint64(j) + _ONE) * _GOLDEN)
    attempt = np.uint64(0)
    while True:
        u = 2.0 * _word_uniform(w) - 1.0
        i = np.int64(w & _LOW7)
        if abs(u) < _ZIG_RATIO[i]:
            return u * _ZIG_X[i]
        if i == 0:
            # tail beyond the edge R (Marsaglia 1964)
            while True:
                attempt += _ONE
                a = _word_uniform(mix64(base + attempt * _GOLDEN2))
                attempt += _ONE
                b = _word_uniform(mix64(base + attempt * _GOLDEN2))
                x = math.log(a) / _ZIG_EDGE
                y = math.log(b)
                if -2.0 * y >= x * x:
                    return x - _ZIG_EDGE if u < 0.0 else _ZIG_EDGE - x
        x = u * _ZIG_X[i]
        f0 = math.exp(-0.5 * (_ZIG_X[i] * _ZIG_X[i] - x * x))
        f1 = math.exp(-0.5 * (_ZIG_X[i + 1] * _ZIG_X[i + 1] - x * x))
        attempt += _ONE
        c = _word_uniform(mix64(base + attempt * _GOLDEN2))
        if f1 + c * (f0 - f1) < 1.0:
            return x
        attempt += _ONE
        w = mix64(base + attempt * _GOLDEN2)


@numba.njit(cache=True, inline="always")
def counter_normal(seed, j):
    """Standard normal number ``j`` of the stream ``seed`` (ziggurat on counter words)."""
    w = mix64(seed + (np.uint64(j) + _ONE) * _GOLDEN)
    u = 2.0 * _word_uniform(w) - 1.0
    i = np.int64(w & _LOW7)
    if abs(u) < _ZIG_RATIO[i]:
        return u * _ZIG_X[i]
    return _ziggurat_slow(seed, j, w)


@numba.njit("void(uint64, int64, int64, int64, float64[:])", **_EXACT)
def _fill_candidate(key, ensemble_code, mu, rho, out_row):
    """Write candidate (mu, rho) into ``out_row`` (length d)."""
    d = out_row.shape[0]
    seed = _stream_seed(key, mu, rho)
    for j in range(d):
        out_row[j] = counter_normal(seed, j)
    if ensemble_code == 1:
        norm2 = 0.0
        for k in range(d):
            norm2 += out_row[k] * out_row[k]
        scale = 1.0 / math.sqrt(norm2)
    else:
        scale = 1.0 / math.sqrt(d)
    for k in range(d):
        out_row[k] *= scale


@numba.njit(cache=True, parallel=True, fastmath=True)
def dp_fill_pairs(key, ensemble_code, mus, rhos, out):
    """``out[k] = u^(mus[k])_(rhos[k])`` (out float32 or float64, shape (n, d))."""
    n, d = out.shape
    for k in numba.prange(n):
        buf = np.empty(d)
        _fill_candidate(key, ensemble_code, mus[k], rhos[k], buf)
        for j in range(d):
            out[k, j] = buf[j]


@numba.njit(cache=True, parallel=True)
def dp_scores_into(key, ensemble_code, images, out):
    """``out[rho, mu] = u^(mu)_rho . images[mu]`` for the (p, d) array ``images``."""
    p, d = images.shape
    for mu in numba.prange(p):
        buf = np.empty(d)
        for rho in range(out.shape[0]):
            _fill_candidate(key, ensemble_code, mu, rho, buf)
            acc = 0.0
            for k in range(d):
                acc += buf[k] * images[mu, k]
            out[rho, mu] = acc


@numba.njit(cache=True, parallel=True)
def dp_combinations_into(key, ensemble_code, coefficients, out):
    """``out[mu] = sum_rho coefficients[rho, mu] * u^(mu)_rho``; zero coefficients are skipped."""
    p = coefficients.shape[1]
    d = out.shape[1]
    for mu in numba.prange(p):
        buf = np.empty(d)
        for k in range(d):
            out[mu, k] = 0.0
        for rho in range(coefficients.shape[0]):
            c = coefficients[rho, mu]
            if c == 0.0:
                continue
            _fill_candidate(key, ensemble_code, mu, rho, buf)
            for k in range(d):
                out[mu, k] += c * buf[k]


def dp_block_margins(key, ensemble_code, images, targets, mus, n_candidates, out):
    """DP margins of a block of inputs against all their candidates, in float64.

    ``out[i, rho] = (targets[mus[i]] - u^(mus[i])_rho) . images[i]`` for every
    ``rho < n_candidates`` (the target column, ``rho = mus[i]`` or ``f(mus[i])`` with ``K``
    answers, comes out as 0 up to rounding and is masked by the caller).
    """
    dp_block_scan(key, ensemble_code, images, targets, mus, n_candidates, out, np.empty(0))


def dp_block_scan(key, ensemble_code, images, targets, mus, n_candidates, out, norms):
    """:func:`dp_block_margins` plus the largest candidate norm of every input of the block.

    ``norms[i] = max_rho ||u^(mus[i])_rho||`` over all ``n_candidates`` candidates (the
    target included), for the screening bound of ``notes/optimal_solver.md`` (section 6);
    a length-0 ``norms`` skips them.
    """
    cols = np.broadcast_to(np.arange(n_candidates, dtype=np.int64), (len(mus), n_candidates))
    dp_listed_margins(key, ensemble_code, images, targets, mus, cols, out, norms)


@numba.njit(cache=True, parallel=True, fastmath=True)
def dp_listed_margins(key, ensemble_code, images, targets, mus, cols, out, norms):
    """DP margins of a block of inputs against listed candidates, in float64.

    ``out[i, k] = (targets[mus[i]] - u^(mus[i])_(cols[i, k])) . images[i]`` for the
    (n, L) int64 array ``cols``, and ``norms[i]`` the largest norm of the listed
    candidates of row ``i`` (skipped when ``norms`` has length 0).
    """
    n, d = images.shape
    with_norms = norms.shape[0] > 0
    for i in numba.prange(n):
        buf = np.empty(d)
        mu = mus[i]
        t = 0.0
        for j in range(d):
            t += targets[mu, j] * images[i, j]
        largest = 0.0
        for k in range(cols.shape[1]):
            _fill_candidate(key, ensemble_code, mu, cols[i, k], buf)
            s = 0.0
            for j in range(d):
                s += buf[j] * images[i, j]
            out[i, k] = t - s
            if with_norms:
                q = 0.0
                for j in range(d):
                    q += buf[j] * buf[j]
                largest = max(largest, q)
        if with_norms:
            norms[i] = math.sqrt(largest)


def dp_pairs(key, ensemble_code: int, mus, rhos, d: int, dtype=np.float64) -> np.ndarray:
    """The candidates ``u^(mus[k])_(rhos[k])`` as a new (n, d) array (``dp_fill_pairs``)."""
    mus = np.ascontiguousarray(mus, dtype=np.int64)
    rhos = np.ascontiguousarray(rhos, dtype=np.int64)
    out = np.empty((mus.size, int(d)), dtype=dtype)
    if mus.size:
        dp_fill_pairs(np.uint64(key), int(ensemble_code), mus, rhos, out)
    return out
