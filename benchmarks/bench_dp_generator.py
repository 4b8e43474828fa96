"""DP candidate generation per coordinate: generator 2 against generator 1, on two instruction sets.

The decoupled problem regenerates its ``p^2`` candidates at every full pass
(``validation.instances._candidate_kernels``, ``notes/simulation.md``, section 2), so the
nanoseconds per coordinate bound what a DP decision costs.  This script times, in one process with one numba thread,
the package's two generators through ``validation.instances._candidate_kernels._fill_candidate``:

* ``generator``: make candidate ``(mu, rho)`` (d coordinates, float64, gaussian ensemble);
* ``generator + dot``: the same and its dot product with a length-d image (fastmath, as in
  the DP full pass ``dp_listed_margins``).

Generator 1 (splitmix64 words, 128-layer ziggurat) is the baseline of the same run;
``speedup`` = generator 1's time / generator 2's, per stage and d.  The timings run twice:
with the host CPU's vector units, and in a child process compiled for AVX2 only
(``NUMBA_CPU_NAME=haswell`` with the AVX2 feature list and its own numba cache), when the
host is not already an AVX2-only CPU.  Generator 2's law is checked on ``--law-draws``
normals (mean, variance, fourth moment, Kolmogorov-Smirnov p-value, tail fractions beyond
2, 3 and 4 against the gaussian's).  The table and a JSON record go to ``--out`` (default
``benchmarks/dp_generator.md``) and ``benchmarks/goals/dp_generator.json`` (read by
``bench_goals.py`` for the goal "a DP generator at least 3x faster per coordinate").

Usage::

    python benchmarks/bench_dp_generator.py          # one numba and BLAS thread (set here)
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import llvmlite.binding  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from _machine import cpu_target  # noqa: E402  (script directory)
from validation.instances import _candidate_kernels as _candidates  # noqa: E402

HERE = Path(__file__).resolve().parent

#: The AVX2 target of the child run: Haswell's instruction set (no AVX-512).
AVX2_ENV = {"NUMBA_CPU_NAME": "haswell",
            "NUMBA_CPU_FEATURES": "+64bit,+sse,+sse2,+sse3,+ssse3,+sse4.1,+sse4.2,+popcnt,+avx,+avx2,+fma,+bmi,"
                                  "+bmi2,+lzcnt,+f16c,+movbe,+cx16,+xsave"}
STAGES = ("generator", "generator + dot")


@numba.njit
def _loop(with_dot, code, key, images, n_candidates):
    """Candidates (mu, rho) of every image row, and (``with_dot``) their dot products."""
    n, d = images.shape
    buf = np.empty(d)
    words = np.empty(_candidates.scratch_size(d), np.uint32)
    normals = np.empty(_candidates.scratch_size(d), np.float32)
    total = 0.0
    for mu in range(n):
        for rho in range(n_candidates):
            _candidates._fill_candidate(key, code, mu, rho, buf, words, normals)
            total += _dot(buf, images[mu]) if with_dot else buf[0]
    return total


@numba.njit(fastmath=True)
def _dot(a, b):
    acc = 0.0
    for k in range(a.shape[0]):
        acc += a[k] * b[k]
    return acc


def _ns_per_coordinate(with_dot, generator, d, candidates, repeats):
    code = _candidates.candidate_code("gaussian", generator)
    images = np.random.default_rng(0).standard_normal((8, d))
    n_candidates = max(1, candidates // 8)
    _loop(with_dot, code, np.uint64(1), images, 2)  # compile
    best = np.inf
    for r in range(repeats):
        t0 = time.perf_counter()
        _loop(with_dot, code, np.uint64(7 + r), images, n_candidates)
        best = min(best, time.perf_counter() - t0)
    return best / (8 * n_candidates * d) * 1e9


def timings(dims, candidates, repeats) -> dict:
    """``{"cpu": ..., "rows": [...]}``: ns per coordinate of both generators, this process's target."""
    numba.set_num_threads(1)
    rows = []
    for d in dims:
        for stage in STAGES:
            ns = {g: _ns_per_coordinate(stage != "generator", g, d, candidates, repeats) for g in (1, 2)}
            rows.append({"d": d, "stage": stage, "generator_1": ns[1], "generator_2": ns[2],
                         "speedup": ns[1] / ns[2]})
            print(f"{cpu_target()}: d = {d}, {stage}: {ns[1]:.3g} / {ns[2]:.3g} ns per coordinate, "
                  f"{ns[1] / ns[2]:.3g}x", file=sys.stderr, flush=True)
    return {"target": cpu_target(), "rows": rows}


def law_check(draws) -> dict:
    """Generator 2's normals of ``draws // 100`` candidates of dimension 100 against N(0, 1)."""
    n = max(1, draws // 100)
    mus = np.arange(n, dtype=np.int64) // 100
    rhos = np.arange(n, dtype=np.int64) % 100
    code = _candidates.candidate_code("gaussian", 2)
    z = (_candidates.dp_pairs(np.uint64(2026), code, mus, rhos, 100) * 10.0).ravel()
    out = {"draws": z.size, "mean": z.mean(), "variance": z.var(), "fourth_moment": np.mean(z ** 4),
           "ks_p": stats.kstest(z, "norm").pvalue}
    for level in (2, 3, 4):
        out[f"beyond_{level}"] = np.mean(np.abs(z) > level)
        out[f"gauss_beyond_{level}"] = 2 * stats.norm.sf(level)
    return {k: float(v) if k != "draws" else int(v) for k, v in out.items()}


def _child_timings(args) -> dict | None:
    """The timings compiled for AVX2 only, in a child process (None when the host has no AVX-512)."""
    if "+avx512f" not in llvmlite.binding.get_host_cpu_features().flatten():
        return None
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_NUM_THREADS="1", **AVX2_ENV)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--d", *map(str, args.d),
               "--candidates", str(args.candidates), "--repeats", str(args.repeats)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        sys.stderr.write(out.stderr)
        return json.loads(out.stdout)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--candidates", type=int, default=40000, help="candidates per timing")
    parser.add_argument("--repeats", type=int, default=5, help="timings per stage (the best is kept)")
    parser.add_argument("--law-draws", type=int, default=10_000_000)
    parser.add_argument("--out", default=str(HERE / "dp_generator.md"))
    parser.add_argument("--record", default=str(HERE / "goals" / "dp_generator.json"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(timings(args.d, args.candidates, args.repeats)))
        return 0
    t_start = time.perf_counter()
    targets = [timings(args.d, args.candidates, args.repeats)]
    child = _child_timings(args)
    if child is not None:
        targets.append(child)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    command = "python benchmarks/bench_dp_generator.py " + " ".join(argv if argv is not None else sys.argv[1:])
    record = {"command": command.strip(), "date": datetime.date.today().isoformat(), "commit": commit,
              "machine": platform.machine(), "numba": numba.__version__, "targets": targets,
              "law": law_check(args.law_draws), "candidates": args.candidates, "repeats": args.repeats,
              "seconds": time.perf_counter() - t_start}
    Path(args.record).write_text(json.dumps(record, indent=1) + "\n")
    Path(args.out).write_text(render(record))
    print(render(record))
    return 0


def render(record):
    law = record["law"]
    lines = [
        "# DP candidate generation per coordinate",
        "",
        f"Written by `{record['command']}` on {record['date']}, commit {record['commit']}, {record['machine']}, "
        f"numba {record['numba']}; one numba thread; wall time {record['seconds']:.0f} s. Each entry: the best of "
        f"{record['repeats']} timings of {record['candidates']} candidates of dimension d (gaussian ensemble), "
        "in ns per coordinate; `generator + dot` adds the dot product with a length-d image, as in the DP full "
        "pass. `speedup` = generator 1's time / generator 2's, measured in the same process. The `AVX2` rows "
        "are compiled for Haswell's instruction set (`NUMBA_CPU_NAME=haswell` and its feature list) in a "
        "child process on the same CPU: they show the code an AVX2-only machine runs, timed on this one.",
        "",
        "| target | d | stage | generator 1 (ns) | generator 2 (ns) | speedup |",
        "|---|---|---|---|---|---|",
        *(f"| {t['target']} | {r['d']} | {r['stage']} | {r['generator_1']:.3g} | {r['generator_2']:.3g} | "
          f"{r['speedup']:.3g} |" for t in record["targets"] for r in t["rows"]),
        "",
        f"Law of generator 2 ({law['draws']} normals: every coordinate of {law['draws'] // 100} candidates of "
        "dimension 100, times 10; gaussian: mean 0, variance 1, fourth moment 3):",
        "",
        "| mean | variance | fourth moment | KS p-value | P(abs z > 2) | P(abs z > 3) | P(abs z > 4) |",
        "|---|---|---|---|---|---|---|",
        f"| {law['mean']:.2e} | {law['variance']:.5f} | {law['fourth_moment']:.4f} | {law['ks_p']:.3g} | "
        f"{law['beyond_2']:.5f} | {law['beyond_3']:.6f} | {law['beyond_4']:.3e} |",
        f"| gaussian | 1 | 3 | - | {law['gauss_beyond_2']:.5f} | {law['gauss_beyond_3']:.6f} | "
        f"{law['gauss_beyond_4']:.3e} |",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
