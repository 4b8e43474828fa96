"""DP candidate generation per coordinate: the package's generator against a vectorised 32-bit trial.

The decoupled problem regenerates its ``p^2`` candidates at every full pass
(``validation._rng``, ``notes/simulation.md``), so the nanoseconds per coordinate bound
what a DP decision costs.  This script times, in one process with one numba thread, the
loop every DP kernel runs: make candidate ``(mu, rho)`` (d coordinates) and take its dot
product with a length-d image.

* **baseline**: the package's generator (``validation._rng._fill_candidate``:
  splitmix64 words, 128-layer ziggurat, one coordinate at a time).
* **trial**: a generator written so that LLVM vectorises it on AVX2 (not used by the
  package).  From the same 64-bit stream seed ``s`` of the candidate, word ``j`` is the
  32-bit hash ``h(h(j ^ s_lo) ^ s_hi)`` with ``h`` Wellons' ``lowbias32`` (two 32-bit
  multiplies, ``vpmulld``); a 256-layer ziggurat (low 8 bits: layer, high 24 bits: u)
  takes every coordinate whose quick test passes in one vector loop and marks the others
  NaN; a scalar scan then sends those through the exact slow path (wedges and tail, as in
  the package, with 64-bit words).  Its stages are timed cumulatively:

  - ``hash``: the 32-bit words only;
  - ``fast path``: + the ziggurat's vector loop and the dot product, rejected coordinates
    left at 0 (a lower bound on any generator of this shape);
  - ``scan``: + the scalar scan that finds the rejected coordinates (set to 0);
  - ``complete``: + the exact slow path: a complete generator.

Each stage is given in ns per coordinate and as the ratio baseline / stage, for each
``--d``.  The complete trial's law is checked on ``--law-draws`` normals (mean,
variance, fourth moment, Kolmogorov-Smirnov p-value, tail fractions beyond 2 and 3
against the gaussian's), and its measured rejection rate against the table's
``1 - mean(x_{i+1} / x_i)``.  The table and a JSON record go to ``--out`` (default
``benchmarks/dp_generator.md``) and ``benchmarks/goals/dp_generator.json`` (read by
``bench_goals.py`` for the goal "a DP generator at least 3x faster per coordinate").

Usage::

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_dp_generator.py
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import llvmlite.binding  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from validation import _rng  # noqa: E402

HERE = Path(__file__).resolve().parent

# --- the trial generator -----------------------------------------------------------------

def _tables(layers):
    """Ziggurat tables (edge x_1 = r, layer volume v) of Marsaglia and Tsang for ``layers`` layers.

    r is the root of the closing condition (the top layer's rectangle has volume v), found
    by bisection; 128 layers give the package's r = 3.442619855899.
    """
    def top_gap(r):
        f = math.exp(-0.5 * r * r)
        v = r * f + math.sqrt(math.pi / 2) * math.erfc(r / math.sqrt(2))
        x = r
        for _ in range(2, layers):
            if v / x + f >= 1.0:
                return 1.0, v
            x = math.sqrt(-2.0 * math.log(v / x + f))
            f = math.exp(-0.5 * x * x)
        return v - x * (1.0 - f), v

    lo, hi = 2.0, 5.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if top_gap(mid)[0] > 0 else (lo, mid)
    edge = 0.5 * (lo + hi)
    x, ratio = _rng._ziggurat_tables(layers, edge, top_gap(edge)[1])
    return edge, x, ratio


_U1, _U2 = np.uint32(0x7FEB352D), np.uint32(0x846CA68B)
_U16, _U15 = np.uint32(16), np.uint32(15)
_LOW32, _S32 = np.uint64(0xFFFFFFFF), np.uint64(32)
_CHUNK = 32


@numba.njit(inline="always")
def _h32(x):
    """Wellons' lowbias32, kept in 32-bit arithmetic so that it vectorises (vpmulld)."""
    x = np.uint32(x ^ (x >> _U16))
    x = np.uint32(x * _U1)
    x = np.uint32(x ^ (x >> _U15))
    x = np.uint32(x * _U2)
    return np.uint32(x ^ (x >> _U16))


@numba.njit
def _words(k1, k2, words):
    for j in range(words.shape[0]):
        words[j] = _h32(np.uint32(_h32(np.uint32(np.uint32(j) ^ k1)) ^ k2))


@numba.njit
def _package_loop(key, images, n_candidates):
    """The package generator: candidates (mu, rho) of every image row and their dot products."""
    n, d = images.shape
    buf = np.empty(d)
    total = 0.0
    for mu in range(n):
        for rho in range(n_candidates):
            _rng._fill_candidate(key, 0, mu, rho, buf)
            acc = 0.0
            for k in range(d):
                acc += buf[k] * images[mu, k]
            total += acc
    return total, 0


def make_trial(layers):
    """The trial generator with ``layers`` ziggurat layers: (timing loop, normals sampler).

    The tables are module-level constants of the compiled functions (closure variables), so
    that LLVM sees they cannot alias the output and vectorises the quick-test loop.
    """
    edge, x_table, ratio = _tables(layers)
    bits = layers.bit_length() - 1
    mask = np.uint32(layers - 1)
    shift = np.int32(bits)
    scale = 2.0 ** (bits - 31)

    @numba.njit(inline="always")
    def uniform(w):
        """u in (-1, 1) from the top 32 - bits bits of the word, read as signed."""
        return (np.float64(np.int32(np.int32(w) >> shift)) + 0.5) * scale

    @numba.njit
    def fast_path(words, buf):
        # uniform(w) written out, the shift kept in int32 and the table read unconditionally:
        # otherwise LLVM does not vectorise this loop (a call, an int64 -> float64
        # conversion, a conditional load)
        for j in range(words.shape[0]):
            w = words[j]
            i = w & mask
            u = (np.float64(np.int32(np.int32(w) >> shift)) + 0.5) * scale
            z = u * x_table[i]
            buf[j] = z if abs(u) < ratio[i] else np.nan

    @numba.njit
    def slow_path(seed, j, u, i):
        """The ziggurat's wedge and tail steps for one rejected coordinate (exact in law)."""
        base = _rng.mix64(seed + (np.uint64(j) + _rng._ONE) * _rng._GOLDEN)
        attempt = np.uint64(0)
        while True:
            if abs(u) < ratio[i]:
                return u * x_table[i]
            if i == 0:
                while True:
                    attempt += _rng._ONE
                    a = _rng._word_uniform(_rng.mix64(base + attempt * _rng._GOLDEN2))
                    attempt += _rng._ONE
                    b = _rng._word_uniform(_rng.mix64(base + attempt * _rng._GOLDEN2))
                    x = math.log(a) / edge
                    if -2.0 * math.log(b) >= x * x:
                        return x - edge if u < 0.0 else edge - x
            x = u * x_table[i]
            f0 = math.exp(-0.5 * (x_table[i] * x_table[i] - x * x))
            f1 = math.exp(-0.5 * (x_table[i + 1] * x_table[i + 1] - x * x))
            attempt += _rng._ONE
            if f1 + _rng._word_uniform(_rng.mix64(base + attempt * _rng._GOLDEN2)) * (f0 - f1) < 1.0:
                return x
            attempt += _rng._ONE
            w = _rng.mix64(base + attempt * _rng._GOLDEN2)
            u = 2.0 * _rng._word_uniform(w) - 1.0
            i = np.int64(w & np.uint64(layers - 1))

    @numba.njit
    def trial_dot(seed, buf, words, image, stage):
        """Candidate ``seed`` into ``buf``, its dot product with ``image`` and the rejected count.

        stage 0: the words only; 1: + the vector loop and the dot product, chunks of 32
        coordinates with a rejected coordinate left out (a lower bound on the whole); 2:
        complete (those chunks are fixed through the slow path and summed).
        """
        _words(np.uint32(seed & _LOW32), np.uint32(seed >> _S32), words)
        if stage == 0:
            return np.float64(words[0]), 0
        fast_path(words, buf)
        d = buf.shape[0]
        total = 0.0
        rejected = 0
        for c in range(0, d, _CHUNK):
            stop = min(c + _CHUNK, d)
            s = 0.0
            for j in range(c, stop):
                s += buf[j] * image[j]
            if s != s:
                if stage == 1:
                    continue
                s = 0.0
                for j in range(c, stop):
                    if buf[j] != buf[j]:
                        rejected += 1
                        buf[j] = slow_path(seed, j, uniform(words[j]), np.int64(words[j] & mask))
                    s += buf[j] * image[j]
            total += s
        return total, rejected

    @numba.njit
    def loop(stage, key, images, n_candidates):
        n, d = images.shape
        buf = np.empty(d)
        words = np.empty(d, np.uint32)
        total = 0.0
        rejected = 0
        for mu in range(n):
            for rho in range(n_candidates):
                acc, r = trial_dot(_rng._stream_seed(key, mu, rho), buf, words, images[mu], stage)
                total += acc
                rejected += r
        return total, rejected

    @numba.njit
    def normals(key, n, d):
        out = np.empty((n, d))
        words = np.empty(d, np.uint32)
        image = np.zeros(d)
        for r in range(n):
            trial_dot(_rng._stream_seed(key, 0, r), out[r], words, image, 2)
        return out

    return loop, normals, float(1 - ratio.mean())


def _ns_per_coordinate(loop, stage, d, candidates, repeats):
    images = np.random.default_rng(0).standard_normal((8, d))
    n_candidates = max(1, candidates // 8)
    run = (lambda key, n: loop(key, images, n)) if stage is None else (lambda key, n: loop(stage, key, images, n))
    run(np.uint64(1), 2)  # compile
    best = np.inf
    for r in range(repeats):
        t0 = time.perf_counter()
        _, rejected = run(np.uint64(7 + r), n_candidates)
        best = min(best, time.perf_counter() - t0)
    return best / (8 * n_candidates * d) * 1e9, rejected / (8 * n_candidates * d)


def law_check(normals, draws, layers, table_rejection):
    z = normals(np.uint64(2026), max(1, draws // 128), 128).ravel()
    return {"layers": layers, "draws": z.size, "mean": z.mean(), "variance": z.var(),
            "fourth_moment": np.mean(z ** 4), "ks_p": stats.kstest(z, "norm").pvalue,
            "beyond_2": np.mean(np.abs(z) > 2), "gauss_beyond_2": 2 * stats.norm.sf(2),
            "beyond_3": np.mean(np.abs(z) > 3), "gauss_beyond_3": 2 * stats.norm.sf(3),
            "table_rejection": table_rejection}


STAGES = (("hash", 0), ("vector loop", 1), ("complete", 2))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--layers", type=int, nargs="+", default=[256, 1024], help="ziggurat layers of the trial")
    parser.add_argument("--candidates", type=int, default=40000, help="candidates per timing")
    parser.add_argument("--repeats", type=int, default=5, help="timings per stage (the best is kept)")
    parser.add_argument("--law-draws", type=int, default=2_000_000)
    parser.add_argument("--out", default=str(HERE / "dp_generator.md"))
    parser.add_argument("--record", default=str(HERE / "goals" / "dp_generator.json"))
    args = parser.parse_args(argv)
    if any(n < 2 or n & (n - 1) or n > 4096 for n in args.layers):
        parser.error("--layers must be powers of two from 2 to 4096")
    numba.set_num_threads(1)
    t_start = time.perf_counter()
    trials = {layers: make_trial(layers) for layers in args.layers}
    rows = []
    for d in args.d:
        base, _ = _ns_per_coordinate(_package_loop, None, d, args.candidates, args.repeats)
        rows.append({"d": d, "generator": "package (splitmix64, 128 layers)", "stage": "complete",
                     "ns_per_coordinate": base, "speedup": 1.0, "rejected": None})
        for layers in args.layers:
            for name, stage in STAGES:
                ns, rejected = _ns_per_coordinate(trials[layers][0], stage, d, args.candidates, args.repeats)
                rows.append({"d": d, "generator": f"trial (32-bit hash, {layers} layers)", "stage": name,
                             "ns_per_coordinate": ns, "speedup": base / ns,
                             "rejected": rejected if stage == 2 else None})
                print(f"d = {d}, {layers} layers, {name}: {ns:.3g} ns per coordinate, {base / ns:.3g}x", flush=True)
    laws = [law_check(trials[n][1], args.law_draws, n, trials[n][2]) for n in args.layers]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    command = "python benchmarks/bench_dp_generator.py " + " ".join(argv if argv is not None else sys.argv[1:])
    record = {"command": command.strip(), "date": datetime.date.today().isoformat(), "commit": commit,
              "rows": rows, "laws": laws, "package_table_rejection": float(1 - _rng._ZIG_RATIO.mean()),
              "seconds": time.perf_counter() - t_start}
    Path(args.record).write_text(json.dumps(record, indent=1) + "\n")
    Path(args.out).write_text(render(record, args))
    print(render(record, args))
    return 0


def render(record, args):
    cpu = numba.config.CPU_NAME or llvmlite.binding.get_host_cpu_name()
    lines = [
        "# DP candidate generation per coordinate",
        "",
        f"Written by `{record['command']}` on {record['date']}, commit {record['commit']}, {platform.machine()}, "
        f"numba {numba.__version__}, CPU `{cpu}`; one numba thread; wall time {record['seconds']:.0f} s. "
        f"Each row: the best of {args.repeats} timings of {args.candidates} candidates of dimension d, each "
        "generated and dotted with a length-d image; `speedup` = the package generator's time / the row's. "
        "The trial's stages are cumulative: `hash` (the 32-bit words only), `vector loop` (+ the ziggurat's "
        "quick test in one vector loop and the dot product; chunks with a rejected coordinate are left out, so "
        "this is a lower bound on any generator of this shape), `complete` (+ the exact slow path for the "
        "rejected coordinates: a whole generator). `rejected`: share of coordinates that fail the quick test. "
        "The trial is not used by the package (see the script's docstring).",
        "",
        "| d | generator | stage | ns per coordinate | speedup | rejected |",
        "|---|---|---|---|---|---|",
        *(f"| {r['d']} | {r['generator']} | {r['stage']} | {r['ns_per_coordinate']:.3g} | {r['speedup']:.3g} | "
          f"{'-' if r['rejected'] is None else format(r['rejected'], '.3g')} |" for r in record["rows"]),
        "",
        f"Quick-test rejection rate from the tables, 1 - mean(x_(i+1) / x_i): package (128 layers) "
        f"{record['package_table_rejection']:.4f}; "
        + "; ".join(f"{law['layers']} layers {law['table_rejection']:.4f}" for law in record["laws"]) + ".",
        "",
        "Law of the complete trial generator (gaussian: fourth moment 3, P(|z| > 2) = "
        f"{record['laws'][0]['gauss_beyond_2']:.5f}, P(|z| > 3) = {record['laws'][0]['gauss_beyond_3']:.6f}):",
        "",
        "| layers | normals | mean | variance | fourth moment | KS p-value | P(abs z > 2) | P(abs z > 3) |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {law['layers']} | {law['draws']} | {law['mean']:.2e} | {law['variance']:.5f} | "
          f"{law['fourth_moment']:.4f} | {law['ks_p']:.3g} | {law['beyond_2']:.5f} | {law['beyond_3']:.6f} |"
          for law in record["laws"]),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
