"""Where the time of one ``optimal`` decision goes, in GEMM-equivalents.

Runs ``solve(make_instance(d, p, problem, seed), "optimal", refine=False)`` at
``p = round(f p_c(d))`` under ``cProfile``, in one process with one numba and one BLAS
thread (``validation.solvers.set_threads(1)``), after a warm-up that compiles the numba
kernels.  Prints the functions with the largest own time, each in seconds and in
GEMM-equivalents (own time / the time of one float32 ``(p x d) @ (d x p)`` score GEMM,
best of 7, measured in the same run), and the decision's total.

Numba kernels show up as single calls (their time is their own); numpy's ``@`` shows up
inside the Python function that calls it (``images``: the images ``E W^T`` of the
inputs; ``combine``: the gradient's ``V^T E``).

Usage::

    python benchmarks/profile_decision.py --d 256 --f 1.05 --problem op --seed 0
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from bench_max_margin import gemm_seconds


def profile(d, fraction, problem, seed, top):
    """(header line, rows (own seconds, GEMM-eq, calls, function)) of one profiled decision."""
    import replica
    from validation.instances.ensembles import make_instance
    from validation.solvers import set_threads, solve

    set_threads(1)
    for kind in ("op", "dp"):  # compile every kernel the decision may use
        solve(make_instance(16, 40, kind, seed=1), "optimal", refine=False)
    p = int(round(fraction * replica.capacity(d).p_c))
    instance = make_instance(d, p, problem, seed=seed)
    gemm = gemm_seconds(p, d)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    sol = solve(instance, "optimal", refine=False)
    prof.disable()
    seconds = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats
    rows = sorted(((tt, tt / gemm, nc, f"{fn.rsplit('/', 1)[-1]}:{line} {name}")
                   for (fn, line, name), (_cc, nc, tt, _ct, _callers) in stats.items()), reverse=True)
    header = (f"d = {d}, p = {p} ({fraction} p_c), {problem}, seed {seed}: {sol.status}, "
              f"{seconds:.2f} s = {seconds / gemm:.1f} GEMM-equivalents (GEMM {gemm * 1e3:.1f} ms), "
              f"{sol.iterations} iterations, {sol.info.get('full_passes')} full passes")
    return header, rows[:top]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--f", type=float, default=1.05, help="p as a fraction of the theory p_c(d)")
    parser.add_argument("--problem", choices=("op", "dp"), default="op")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=int, default=12, help="functions shown")
    args = parser.parse_args(argv)
    header, rows = profile(args.d, args.f, args.problem, args.seed, args.top)
    print(header)
    print()
    print("| own time (s) | GEMM-eq | calls | function |")
    print("|---:|---:|---:|---|")
    for tt, eq, nc, name in rows:
        print(f"| {tt:.3f} | {eq:.2f} | {nc} | `{name}` |")


if __name__ == "__main__":
    main()
