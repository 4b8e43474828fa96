"""Benchmark of the finite-size theory.

Times, in one run:

* ``replica.optimal.finite_size.expected_cost(p)`` to 1e-3 relative standard error, for p up to
  1e7, against a plain Monte-Carlo baseline measured in the same run: full vectors of
  p - 1 normal competitors plus a normal target, exact water filling
  (``water_filling_cost``), sample mean.  The baseline's time to reach the same
  relative standard error is extrapolated from a short measured run
  (time x (measured rel. stderr / 1e-3)^2); the relative difference of the two
  estimates is printed in units of their combined standard error.
* ``replica.optimal.finite_size.capacity(d)`` for d up to 1e5 (goal: < 2 s at d = 1e5).

Usage::

    NUMBA_NUM_THREADS=1 python benchmarks/bench_theory.py [--repeats 3] [--quick]

Targets: capacity at d = 1e5 under 2 s; expected_cost to 1e-3 in under 1 s up to
p = 1e7.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time

import numpy as np

from replica.optimal.finite_size import capacity, expected_cost, water_filling_cost


def _timed(func, repeats):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = func()
        times.append(time.perf_counter() - start)
    return out, times


def _plain_monte_carlo(p, budget_seconds, rng, max_block_bytes=2**27):
    """Plain Monte Carlo with full normal vectors until ``budget_seconds`` (at least 2 samples)."""
    n = int(p) - 1
    block = max(1, min(4096, max_block_bytes // (8 * n)))
    values = []
    start = time.perf_counter()
    while True:
        target = rng.standard_normal(block)
        competitors = rng.standard_normal((block, n))
        values.append(np.atleast_1d(water_filling_cost(target, competitors)))
        count = sum(v.size for v in values)
        if time.perf_counter() - start > budget_seconds and count >= 2:
            break
    elapsed = time.perf_counter() - start
    vals = np.concatenate(values)
    mean = float(vals.mean())
    stderr = float(vals.std(ddof=1) / math.sqrt(vals.size))
    return mean, stderr, vals.size, elapsed


def _fmt_times(times):
    return f"{min(times):7.3f} {statistics.median(times):7.3f} {max(times):7.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller baseline budgets")
    args = parser.parse_args(argv)
    budget = 0.5 if args.quick else 2.0

    print(f"# machine: {platform.platform()}, {os.cpu_count()} cpus, python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print(f"# date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, repeats {args.repeats}")
    expected_cost(50.0)  # warm up imports and caches outside the timings
    capacity(16)

    print("\n## expected_cost(p) to rel. stderr 1e-3 vs plain Monte Carlo (full normal vectors)")
    header = (f"{'p':>10} {'E[C_p]':>10} {'rel_se':>8} {'t_min':>7} {'t_med':>7} {'t_max':>7} "
              f"{'base_mean':>10} {'base_rel_se':>11} {'base_n':>8} {'base_t(1e-3)':>12} {'speedup':>10} "
              f"{'diff/se':>8}")
    print(header)
    rng = np.random.default_rng(2026)
    for p in (10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000):
        result, times = _timed(lambda p=p: expected_cost(p), args.repeats)
        base_budget = budget if p <= 1_000_000 else 2 * budget
        b_mean, b_se, b_n, b_t = _plain_monte_carlo(p, base_budget, rng)
        b_rel = b_se / b_mean
        t_needed = b_t * (b_rel / 1e-3) ** 2
        diff = (result.mean - b_mean) / math.hypot(result.stderr, b_se)
        print(f"{p:>10.0e} {result.mean:>10.5f} {result.rel_stderr:>8.1e} {_fmt_times(times)} "
              f"{b_mean:>10.5f} {b_rel:>11.2e} {b_n:>8d} {t_needed:>12.3g} "
              f"{t_needed / statistics.median(times):>10.3g} {diff:>8.2f}")
        sys.stdout.flush()

    print("\n## capacity(d) (p_c E[C_{p_c}] = d^2), target < 2 s at d = 1e5")
    print(f"{'d':>8} {'p_c':>14} {'stderr':>10} {'alpha':>9} {'alpha_se':>9} {'t_min':>7} {'t_med':>7} {'t_max':>7}")
    for d in (16, 32, 64, 128, 256, 512, 1024, 10_000, 100_000):
        result, times = _timed(lambda d=d: capacity(d), args.repeats)
        print(f"{d:>8d} {result.p_c:>14.6g} {result.stderr:>10.3g} {result.alpha:>9.5f} "
              f"{result.alpha_stderr:>9.1e} {_fmt_times(times)}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
