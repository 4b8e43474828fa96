"""Counter-based random candidates for the decoupled problem (DP), as numba kernels.

In the decoupled problem every input ``mu`` has its own ``p`` candidate outputs
``u^(mu)_rho`` (``rho = 0..p-1``; ``rho = mu`` is the target).  Storing them all
would take ``8 d p^2`` bytes (2.3 GB at d = 128, p = 1500), so they are never
stored: every coordinate is a pure function of ``(key, mu, rho, j)`` and is
regenerated wherever it is needed.  See ``notes/simulation.md``.

The generators
--------------
Both start from a 64-bit stream seed per candidate.  ``mix64`` is the splitmix64
finaliser (Stafford's "Mix13" variant, as in ``java.util.SplittableRandom``)::

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    z =  z ^ (z >> 31)

and the stream seed of candidate ``(mu, rho)`` is
``s = mix64(mix64(key + (mu + 1) * G) + (rho + 1) * G2)`` (``G = 0x9E3779B97F4A7C15``,
``G2 = 0xD1B54A32D192ED03``, all arithmetic mod 2^64).  Every instance records its
generator (``Instance.generator``); the two give different candidates from the same key.

**Generator 1** (every result made before generator 2 existed; ``make_instance(generator=1)``).
Coordinate ``j`` uses the 64-bit word ``w_j = mix64(s + (j + 1) * G)``.  ``z_j`` is a
standard normal made from ``w_j`` by the Marsaglia-Tsang ziggurat in Doornik's ZIGNOR form
(128 layers): the top 53 bits give ``u = 2 U - 1`` with ``U = ((w >> 11) + 0.5) 2^-53``,
the low 7 bits the layer ``i``; ``z = u x_i`` is accepted when ``|u| < x_{i+1}/x_i``
(97.2 % of draws: one minus the mean of the 128 ratios).  The rejection and tail
steps draw further words ``mix64(mix64(s + (j + 1) G) + a G2)``, ``a = 1, 2, ...``, so
coordinate ``j`` stays a function of ``(key, mu, rho, j)`` alone.  Exact in law up to the
53-bit resolution of the uniforms; one coordinate at a time (the branches and the 64-bit
multiplies do not vectorise on AVX2).

**Generator 2** (the default).  With ``lo, hi`` the low and high 32-bit halves of ``s``
and ``h32`` Wellons' ``lowbias32`` hash, word ``j`` is ``w_j = h32(h32(j ^ lo) ^ hi)``
(32-bit arithmetic), for ``j < 2 m``, ``m = ceil(d / 2)``.  Coordinates ``i`` and
``i + m`` come from words ``a = w_i`` and ``b = w_(i+m)`` by Box-Muller in float32::

    u   = (float32(a >> 1) + 0.5) 2^-31                   in (0, 1]
    r   = sqrt(-2 ln u)                                    (Cephes' logf polynomial)
    phi = (float32(b >> 8) + 0.5) (pi / 4) 2^-24           in (0, pi / 4)
    (c, s) = (cos phi, sin phi)                            (Cephes' polynomials)
    (z_i, z_(i+m)) = r (c, s), swapped if bit 0 of b is set, the first negated if
    bit 1 is set, the second if bit 2 is set                (the eight octants)

and coordinate ``2m - 1`` is dropped when ``d`` is odd.  No branch and no table, so LLVM
vectorises both loops (8 lanes on AVX2, 16 on AVX-512).  Every step is an IEEE float32
or integer operation with one rounding (no fastmath, no fused multiply-add), so the
values are the same on every CPU; ``tests/validation/test_ensembles.py`` checks them
against a NumPy transcription.  Exact in law up to float32 resolution: ``u`` has 31 bits
(radius at most ``sqrt(64 ln 2) = 6.66``, ``P(r > 6.66) = 2^-32 = 2.3e-10``) and the angle 27 bits.

The ``gaussian`` ensemble scales ``z`` by ``1 / sqrt(d)`` (in float64); the ``sphere``
ensemble divides ``z`` by its Euclidean norm.  Every candidate is computed independently
of every other one, so results are bitwise identical whatever the number of threads or
the order of evaluation.

Kernels (all ``cache=True``; the ``parallel=True`` ones split the outer loop over
inputs or pairs with ``prange`` and respect ``NUMBA_NUM_THREADS`` /
``numba.set_num_threads``).  Every DP candidate in the package is generated here:

``dp_fill_pairs(key, code, mus, rhos, out)``
    ``out[k] = u^(mus[k])_(rhos[k])`` for int64 ``mus, rhos`` (n,) and ``out`` (n, d),
    float64 or float32.  Instances (targets, ``Instance.candidates``), the LP's
    constraint rows and the ``optimal`` solver's working set use it.  Parallel.
``dp_scores_into(key, code, images, out)``
    ``images`` float64 (p, d) with ``images[mu] = W @ e_mu``; writes
    ``out[rho, mu] = u^(mu)_rho . images[mu]`` for all ``rho, mu`` into ``out``
    float64 (p, p).  No candidate is stored (one length-d buffer per input).
    Parallel over ``mu``.
``dp_combinations_into(key, code, coefficients, out)``
    ``coefficients`` float64 (p, p) indexed ``[rho, mu]``; writes
    ``out[mu] = sum_rho coefficients[rho, mu] * u^(mu)_rho`` into ``out`` (p, d).
    Gradients of any score-based loss then follow from ``out.T @ inputs``
    (``sum_{rho,mu} c[rho,mu] u^(mu)_rho e_mu^T``).  Parallel.  The size ``d`` is
    ``out.shape[1]`` and ``p`` is ``coefficients.shape[0]``.
``dp_listed_margins(key, code, images, targets, mus, cols, out, norms)``
    The margins of a block of inputs against listed candidates:
    ``out[i, k] = (targets[mus[i]] - u^(mus[i])_(cols[i, k])) . images[i]``, and
    ``norms[i]`` the largest norm among them (skipped for a length-0 ``norms``).
    Parallel.
``dp_block_margins(key, code, images, targets, mus, n_candidates, out)`` (Python)
    ``dp_listed_margins`` against all ``n_candidates`` candidates of every input (the
    ``optimal`` solver's full pass).
``dp_block_scan(key, code, images, targets, mus, n_candidates, out, norms)`` (Python)
    The same with the largest candidate norm of every input (the screened full pass).

``dp_pairs(key, code, mus, rhos, d, dtype=float64)`` (Python)
    ``dp_fill_pairs`` into a new (n, d) array.

``_fill_candidate(key, code, mu, rho, out_row, words, normals)`` (njit, serial)
    Write candidate ``(mu, rho)`` into the length-d float64 ``out_row`` (``words`` uint32
    and ``normals`` float32: scratch of length ``scratch_size(d)``); the building block of
    all the kernels above.

``key`` is a ``numpy.uint64`` (``Instance.dp_key``) and ``code`` the candidate law's
integer code, ``candidate_code(ensemble, generator)`` (``Instance.candidate_code``).
"""

from __future__ import annotations

import math
import os

import numba
import numpy as np
from llvmlite import ir as llvm_ir
from numba import types
from numba.core.extending import intrinsic

__all__ = [
    "ENSEMBLE_CODES",
    "GENERATORS",
    "DEFAULT_GENERATOR",
    "GENERATOR_VARIABLE",
    "default_generator",
    "candidate_code",
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

#: Versions of the DP candidate generator (module docstring); 1 is the one of every result
#: made before version 2 was added.
GENERATORS = (1, 2)
#: The generator of new instances (``make_instance(generator=None)``) unless the environment
#: variable ``LINEAR_MEMORY_DP_GENERATOR`` names another (:func:`default_generator`).
DEFAULT_GENERATOR = 2
#: Environment variable that sets the default generator (``1`` reruns scripts on the DP
#: instances of results made before generator 2).
GENERATOR_VARIABLE = "LINEAR_MEMORY_DP_GENERATOR"


def default_generator() -> int:
    """The generator of new DP instances: ``$LINEAR_MEMORY_DP_GENERATOR`` if set, else
    ``DEFAULT_GENERATOR``; ValueError for a value that is not one of ``GENERATORS``."""
    text = os.environ.get(GENERATOR_VARIABLE, "").strip()
    if not text:
        return DEFAULT_GENERATOR
    if text not in {str(g) for g in GENERATORS}:
        raise ValueError(f"{GENERATOR_VARIABLE} must be one of {GENERATORS}, got {text!r}")
    return int(text)


def candidate_code(ensemble: str, generator: int) -> int:
    """The kernels' integer code of a candidate law: ``ENSEMBLE_CODES[ensemble] + 2 (generator - 1)``."""
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    return ENSEMBLE_CODES[ensemble] + 2 * (int(generator) - 1)

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


# --- generator 2: 32-bit counter words and a float32 Box-Muller transform, vectorised ---

_U8 = np.uint32(8)
_U1 = np.uint32(1)
_U23 = np.uint32(23)
_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_MANTISSA = np.uint32(0x007FFFFF)
_HALF_BITS = np.uint32(0x3F000000)
_F = np.float32
_SQRT_HALF = _F(0.70710678118654752440)
_TWO_M31 = _F(2.0 ** -31)
_QUARTER_PI_M24 = _F(math.pi / 4.0 * 2.0 ** -24)


@intrinsic
def _float_bits(typingctx, x):
    """The IEEE bits of a float32 as a uint32 (an LLVM bitcast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.uint32))
    return types.uint32(types.float32), codegen


@intrinsic
def _bits_float(typingctx, x):
    """The float32 with the IEEE bits of a uint32 (an LLVM bitcast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))
    return types.float32(types.uint32), codegen


def _lowbias32(builder, x):
    """Wellons' lowbias32 hash of an LLVM i32 (bijective; two 32-bit multiplies)."""
    i32 = llvm_ir.IntType(32)
    for shift, factor in ((16, 0x7FEB352D), (15, 0x846CA68B)):
        x = builder.mul(builder.xor(x, builder.lshr(x, llvm_ir.Constant(i32, shift))), llvm_ir.Constant(i32, factor))
    return builder.xor(x, builder.lshr(x, llvm_ir.Constant(i32, 16)))


@intrinsic
def _word32(typingctx, j, lo, hi):
    """Word ``h32(h32(j ^ lo) ^ hi)`` (``j`` taken mod 2^32), in 32-bit lanes.

    Written as LLVM IR: numba widens 32-bit integer arithmetic to 64 bits, which AVX2
    vectorises with emulated 64-bit multiplies.
    """
    def codegen(context, builder, signature, args):
        j32 = builder.trunc(args[0], llvm_ir.IntType(32))
        return _lowbias32(builder, builder.xor(_lowbias32(builder, builder.xor(j32, args[1])), args[2]))
    return types.uint32(types.int64, types.uint32, types.uint32), codegen


@intrinsic
def _bit_set(typingctx, b, k):
    """Whether bit ``k`` (a constant) of the uint32 ``b`` is set, tested in 32-bit lanes."""
    def codegen(context, builder, signature, args):
        i32 = llvm_ir.IntType(32)
        mask = builder.shl(llvm_ir.Constant(i32, 1), builder.trunc(args[1], i32))
        return builder.icmp_unsigned("!=", builder.and_(args[0], mask), llvm_ir.Constant(i32, 0))
    return types.boolean(types.uint32, types.int64), codegen


@numba.njit(cache=True, inline="always")
def _neg2log(u):
    """``-2 ln u`` for a float32 ``u`` in (0, 1], in float32 (Cephes' ``logf``)."""
    b = _float_bits(u)
    e = _F(np.int32(b >> _U23) - 126)
    m = _bits_float((b & _MANTISSA) | _HALF_BITS)       # u = m 2^e, m in [1/2, 1)
    small = m < _SQRT_HALF
    e = e - _F(1.0) if small else e
    x = (m + m - _F(1.0)) if small else (m - _F(1.0))
    z = x * x
    y = (((((((((_F(7.0376836292e-2) * x - _F(1.1514610310e-1)) * x + _F(1.1676998740e-1)) * x
               - _F(1.2420140846e-1)) * x + _F(1.4249322787e-1)) * x - _F(1.6668057665e-1)) * x
             + _F(2.0000714765e-1)) * x - _F(2.4999993993e-1)) * x + _F(3.3333331174e-1)) * x) * z
    y = y + _F(-2.12194440e-4) * e
    y = y - _F(0.5) * z
    return _F(-2.0) * (x + y + _F(0.693359375) * e)


@numba.njit(cache=True, inline="always")
def _radius(a):
    """Box-Muller radius ``sqrt(-2 ln u)`` of the word ``a``, ``u = (a >> 1 + 1/2) 2^-31`` in (0, 1]."""
    return math.sqrt(_neg2log((_F(np.int32(a >> _U1)) + _F(0.5)) * _TWO_M31))


@numba.njit(cache=True, inline="always")
def _angle(b):
    """``phi = (b >> 8 + 1/2) (pi / 4) 2^-24`` in (0, pi / 4) of the word ``b``, and ``phi^2``."""
    phi = (_F(np.int32(b >> _U8)) + _F(0.5)) * _QUARTER_PI_M24
    return phi, phi * phi


@numba.njit(cache=True, inline="always")
def _sin(phi, z):
    """``sin(phi)`` on [0, pi / 4] (Cephes' ``sinf`` polynomial; ``z = phi^2``)."""
    return ((_F(-1.9515295891e-4) * z + _F(8.3321608736e-3)) * z - _F(1.6666654611e-1)) * z * phi + phi


@numba.njit(cache=True, inline="always")
def _cos(z):
    """``cos(phi)`` on [0, pi / 4] (Cephes' ``cosf`` polynomial; ``z = phi^2``)."""
    return (((_F(2.443315711809948e-5) * z - _F(1.388731625493765e-3)) * z + _F(4.166664568298827e-2)) * z * z
            - _F(0.5) * z + _F(1.0))


@numba.njit(cache=True, inline="always")
def _first(b, c, s):
    """First normal of the pair, over ``r``: ``c`` or ``s`` (bit 0 of ``b``: swap), negated by bit 1."""
    x = s if _bit_set(b, 0) else c
    return -x if _bit_set(b, 1) else x


@numba.njit(cache=True, inline="always")
def _second(b, c, s):
    """Second normal of the pair, over ``r``: ``s`` or ``c`` (bit 0 of ``b``: swap), negated by bit 2."""
    x = c if _bit_set(b, 0) else s
    return -x if _bit_set(b, 2) else x


@numba.njit("void(uint64, float64, float64[::1], uint32[::1], float32[::1])", **_EXACT)
def _fill_generator2(seed, scale, out_row, words, normals):
    """``out_row[j] = float64(z_j) * scale`` for the generator-2 normals ``z_j`` of stream ``seed``.

    Three loops, each of which LLVM vectorises: the words into the uint32 scratch ``words``,
    pair ``i`` (words ``i`` and ``i + m``, ``m = ceil(d / 2)``) into normals ``i`` and ``i + m``
    of the float32 scratch ``normals`` (both of length ``2 m``), and the scaled widening.
    """
    m = normals.shape[0] // 2
    lo = np.uint32(seed & _LOW32)
    hi = np.uint32(seed >> _S32)
    for j in range(2 * m):
        words[j] = _word32(j, lo, hi)
    for i in range(m):
        b = words[i + m]
        r = _radius(words[i])
        phi, z = _angle(b)
        c = _cos(z)
        s = _sin(phi, z)
        normals[i] = r * _first(b, c, s)
        normals[i + m] = r * _second(b, c, s)
    for j in range(out_row.shape[0]):
        out_row[j] = np.float64(normals[j]) * scale


@numba.njit("void(uint64, int64, int64, int64, float64[::1], uint32[::1], float32[::1])", **_EXACT)
def _fill_candidate(key, code, mu, rho, out_row, words, normals):
    """Write candidate (mu, rho) of the candidate law ``code`` into ``out_row`` (length d).

    ``words`` (uint32) and ``normals`` (float32) are scratch of length :func:`scratch_size`
    ``(d)``, used by generator 2.
    """
    d = out_row.shape[0]
    seed = _stream_seed(key, mu, rho)
    sphere = code & 1 == 1
    if code >= 2:
        _fill_generator2(seed, 1.0 if sphere else 1.0 / math.sqrt(d), out_row, words, normals)
        if not sphere:
            return
    else:
        for j in range(d):
            out_row[j] = counter_normal(seed, j)
    if sphere:
        norm2 = 0.0
        for k in range(d):
            norm2 += out_row[k] * out_row[k]
        scale = 1.0 / math.sqrt(norm2)
    else:
        scale = 1.0 / math.sqrt(d)
    for k in range(d):
        out_row[k] *= scale


@numba.njit(cache=True, inline="always")
def scratch_size(d):
    """Length ``2 ceil(d / 2)`` of the scratch arrays of :func:`_fill_candidate`."""
    return 2 * ((d + 1) // 2)


@numba.njit(cache=True, parallel=True, fastmath=True)
def dp_fill_pairs(key, code, mus, rhos, out):
    """``out[k] = u^(mus[k])_(rhos[k])`` (out float32 or float64, shape (n, d))."""
    n, d = out.shape
    for k in numba.prange(n):
        buf = np.empty(d)
        _fill_candidate(key, code, mus[k], rhos[k], buf, np.empty(scratch_size(d), np.uint32),
                        np.empty(scratch_size(d), np.float32))
        for j in range(d):
            out[k, j] = buf[j]


@numba.njit(cache=True, parallel=True)
def dp_scores_into(key, code, images, out):
    """``out[rho, mu] = u^(mu)_rho . images[mu]`` for the (p, d) array ``images``."""
    p, d = images.shape
    for mu in numba.prange(p):
        buf = np.empty(d)
        words, normals = np.empty(scratch_size(d), np.uint32), np.empty(scratch_size(d), np.float32)
        for rho in range(out.shape[0]):
            _fill_candidate(key, code, mu, rho, buf, words, normals)
            acc = 0.0
            for k in range(d):
                acc += buf[k] * images[mu, k]
            out[rho, mu] = acc


@numba.njit(cache=True, parallel=True)
def dp_combinations_into(key, code, coefficients, out):
    """``out[mu] = sum_rho coefficients[rho, mu] * u^(mu)_rho``; zero coefficients are skipped."""
    p = coefficients.shape[1]
    d = out.shape[1]
    for mu in numba.prange(p):
        buf = np.empty(d)
        words, normals = np.empty(scratch_size(d), np.uint32), np.empty(scratch_size(d), np.float32)
        for k in range(d):
            out[mu, k] = 0.0
        for rho in range(coefficients.shape[0]):
            c = coefficients[rho, mu]
            if c == 0.0:
                continue
            _fill_candidate(key, code, mu, rho, buf, words, normals)
            for k in range(d):
                out[mu, k] += c * buf[k]


def dp_block_margins(key, code, images, targets, mus, n_candidates, out):
    """DP margins of a block of inputs against all their candidates, in float64.

    ``out[i, rho] = (targets[mus[i]] - u^(mus[i])_rho) . images[i]`` for every
    ``rho < n_candidates`` (the target column, ``rho = mus[i]`` or ``f(mus[i])`` with ``K``
    answers, comes out as 0 up to rounding and is masked by the caller).
    """
    dp_block_scan(key, code, images, targets, mus, n_candidates, out, np.empty(0))


def dp_block_scan(key, code, images, targets, mus, n_candidates, out, norms):
    """:func:`dp_block_margins` plus the largest candidate norm of every input of the block.

    ``norms[i] = max_rho ||u^(mus[i])_rho||`` over all ``n_candidates`` candidates (the
    target included), for the screening bound of ``notes/optimal_solver.md`` (section 6);
    a length-0 ``norms`` skips them.
    """
    cols = np.broadcast_to(np.arange(n_candidates, dtype=np.int64), (len(mus), n_candidates))
    dp_listed_margins(key, code, images, targets, mus, cols, out, norms)


@numba.njit(cache=True, parallel=True, fastmath=True)
def dp_listed_margins(key, code, images, targets, mus, cols, out, norms):
    """DP margins of a block of inputs against listed candidates, in float64.

    ``out[i, k] = (targets[mus[i]] - u^(mus[i])_(cols[i, k])) . images[i]`` for the
    (n, L) int64 array ``cols``, and ``norms[i]`` the largest norm of the listed
    candidates of row ``i`` (skipped when ``norms`` has length 0).
    """
    n, d = images.shape
    with_norms = norms.shape[0] > 0
    for i in numba.prange(n):
        buf = np.empty(d)
        words, normals = np.empty(scratch_size(d), np.uint32), np.empty(scratch_size(d), np.float32)
        mu = mus[i]
        t = 0.0
        for j in range(d):
            t += targets[mu, j] * images[i, j]
        largest = 0.0
        for k in range(cols.shape[1]):
            _fill_candidate(key, code, mu, cols[i, k], buf, words, normals)
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


def dp_pairs(key, code: int, mus, rhos, d: int, dtype=np.float64) -> np.ndarray:
    """The candidates ``u^(mus[k])_(rhos[k])`` as a new (n, d) array (``dp_fill_pairs``)."""
    mus = np.ascontiguousarray(mus, dtype=np.int64)
    rhos = np.ascontiguousarray(rhos, dtype=np.int64)
    out = np.empty((mus.size, int(d)), dtype=dtype)
    if mus.size:
        dp_fill_pairs(np.uint64(key), int(code), mus, rhos, out)
    return out
