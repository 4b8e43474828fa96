"""Hebbian Zipf errors: ``validation.measure_zipf`` against a plain numpy loop, one thread.

The plain loop is what a user writes without the package (as the scaling-law code of
Cabannes, Dohmatob and Bietti does it, in numpy, float64): for every instance draw the
inputs ``E`` and outputs ``U`` (``d x N``, entries N(0, 1/d)), form the Hebbian memory
``W = U diag(w) E^T`` (``w = 1`` or the Zipf frequencies), all ``N x N`` scores
``U^T W E``, the argmax of every column, and the error ``sum_mu f_mu 1{argmax != mu}``.
``measure_zipf(d, N, a, solvers=(memory,), trials=T, problem="op")`` does the same
measurement with the package's instances, memories and recall check (a float32 score
screen with a float64 verdict, ``validation.measurements.recall.recalled_from_images``),
plus its bookkeeping and the theory beside it.

Both run in this process with one BLAS and one numba thread (set before numpy is
imported), after a warm-up; each timing is the best of ``--repeats`` runs of ``T``
instances, alternating the two so that load changes hit both.  The table gives ms per
instance and the ratio package / plain (below 1: the package is faster).  Written to
``--out`` (default ``benchmarks/zipf_hebbian.md``) with the command, the thread counts and
the CPU.

Usage::

    python benchmarks/bench_zipf_hebbian.py --d 64 --N 1000 --trials 500
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def plain_numpy(d, N, a, trials, weighted, seed=0):
    """Mean Hebbian Zipf error of ``trials`` instances, the plain numpy way (module docstring)."""
    rng = np.random.default_rng(seed)
    f = np.arange(1, N + 1, dtype=np.float64) ** -a
    f /= f.sum()
    w = f if weighted else np.ones(N)
    index = np.arange(N)
    errors = np.empty(trials)
    for t in range(trials):
        E = rng.standard_normal((d, N)) / np.sqrt(d)
        U = rng.standard_normal((d, N)) / np.sqrt(d)
        W = (U * w) @ E.T
        S = U.T @ (W @ E)
        errors[t] = f[S.argmax(axis=0) != index].sum()
    return float(errors.mean())


def package(d, N, a, trials, weighted, seed=0):
    from validation.measurements.zipf import measure_zipf

    memory = "hebbian_frequency" if weighted else "hebbian"
    return measure_zipf(d, N, a, solvers=(memory,), trials=trials, problem="op", seed=seed).points[0].error


def best_of(fn, repeats, *args):
    times, value = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn(*args)
        times.append(time.perf_counter() - t0)
    return min(times), value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--d", type=int, nargs="+", default=[64])
    parser.add_argument("--N", type=int, default=1000)
    parser.add_argument("--a", type=float, default=2.0)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "zipf_hebbian.md")
    args = parser.parse_args(argv)

    from _machine import cpu_target

    package(8, 50, args.a, 2, True)  # compile the numba kernels, load the theory tables
    package(8, 50, args.a, 2, False)
    rows = []
    for d in args.d:
        for weighted in (True, False):
            plain_s = package_s = np.inf
            for _ in range(args.repeats):  # alternate, so that a change of load hits both
                s, plain_e = best_of(plain_numpy, 1, d, args.N, args.a, args.trials, weighted)
                plain_s = min(plain_s, s)
                s, package_e = best_of(package, 1, d, args.N, args.a, args.trials, weighted)
                package_s = min(package_s, s)
            rows.append((d, "frequency" if weighted else "none", plain_s / args.trials * 1e3,
                         package_s / args.trials * 1e3, package_s / plain_s, plain_e, package_e))
            print(rows[-1], flush=True)
    lines = [
        "# Hebbian Zipf errors: `measure_zipf` against a plain numpy loop",
        "",
        f"Written by `python benchmarks/bench_zipf_hebbian.py --d {' '.join(map(str, args.d))} --N {args.N} "
        f"--a {args.a} --trials {args.trials} --repeats {args.repeats}`; one BLAS and one numba thread; "
        f"CPU {cpu_target()}, numpy {np.__version__}.  Best of {args.repeats} runs of {args.trials} "
        "instances each, the two alternating.  The errors are means over the instances (different draws: "
        "they agree within their sampling error, not digit for digit).",
        "",
        "| d | weights | plain numpy, ms per instance | `measure_zipf`, ms per instance | ratio package / plain "
        "| error, plain | error, package |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {d} | {w} | {p:.2f} | {q:.2f} | {r:.2f} | {e1:.4f} | {e2:.4f} |" for d, w, p, q, r, e1, e2 in rows]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
