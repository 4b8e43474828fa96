"""Benchmark: vectorised alpha_c(kappa) against a plain scipy.integrate.quad evaluation.

Run:  python benchmarks/bench_alpha_c.py [--n 1000000] [--baseline 1000] [--repeats 3]

Baseline (measured in the same run): for each kappa, brentq on the quad-evaluated tail mass
Int_s^2 rho_QC = kappa for s_kappa, then quad of s^2 rho_QC on [s_kappa, 2]; timed on a
subset. Prints the per-value time ratio and the largest relative difference (on the subset
and, for accuracy, against the mpmath reference on a few values).  Target: >= 1000x.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from scipy import integrate, optimize

from replica import alpha_c, alpha_c_mp


def quad_alpha_c(kappa: float) -> float:
    def density(s):
        return np.sqrt(4.0 - s * s) / np.pi

    s_kappa = optimize.brentq(lambda s: integrate.quad(density, s, 2.0)[0] - kappa, 0.0, 2.0,
                              xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return 0.5 * integrate.quad(lambda s: s * s * density(s), s_kappa, 2.0)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--baseline", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    kappas = rng.uniform(1e-6, 1.0, args.n)
    alpha_c(kappas[:10])  # warm-up
    fast_times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        fast = alpha_c(kappas)
        fast_times.append(time.perf_counter() - t0)
    subset = kappas[: args.baseline]
    base_times = []
    for _ in range(max(1, args.repeats // 2)):
        t0 = time.perf_counter()
        base = np.array([quad_alpha_c(k) for k in subset])
        base_times.append(time.perf_counter() - t0)
    per_fast = np.array(fast_times) / args.n
    per_base = np.array(base_times) / subset.size
    ratio = np.median(per_base) / np.median(per_fast)
    diff_base = np.max(np.abs(fast[: subset.size] / base - 1.0))
    probe = subset[:20]
    ref = np.array([float(v) for v in alpha_c_mp(probe, dps=30)])
    diff_mp_fast = np.max(np.abs(alpha_c(probe) / ref - 1.0))
    diff_mp_base = np.max(np.abs(base[:20] / ref - 1.0))

    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"vectorised alpha_c: {args.n} values, per value min/median/max = "
          f"{per_fast.min() * 1e9:.0f}/{np.median(per_fast) * 1e9:.0f}/{per_fast.max() * 1e9:.0f} ns")
    print(f"quad + brentq baseline: {subset.size} values, per value min/median/max = "
          f"{per_base.min() * 1e6:.0f}/{np.median(per_base) * 1e6:.0f}/{per_base.max() * 1e6:.0f} us")
    print(f"speed-up per value (median/median): {ratio:.0f}x   (goal >= 1000x)")
    print(f"largest relative difference vectorised vs quad (subset): {diff_base:.2e}")
    print(f"largest relative difference vs mpmath (30 digits, 20 values): "
          f"vectorised {diff_mp_fast:.2e}, quad {diff_mp_base:.2e}")


if __name__ == "__main__":
    main()
