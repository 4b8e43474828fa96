"""Time to decide storability: ``optimal`` against L-BFGS-B (scipy) and Adam, plus GEMM rates.

Every solve runs in its own child process (so that its peak resident set is its own),
after a warm-up solve on a small instance (numba compilation is never timed); a solve
shorter than 1 s is repeated (up to 5 times, 1 s in total) and its median time kept.  The
parent prints one row per (d, p, seed, solver), then a summary with min/median/max
times and ratios measured in the same run, and the GFLOP/s of the ``optimal``
solver's full-pass score computation against numpy's GEMM at the same shape.

Usage (see benchmarks/README.md)::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/bench_solvers.py \
        --d 32 64 128 --seeds 3 --adam-max-d 64 --json results.json

Contenders
----------
optimal   ``validation.solvers.optimal.solve_optimal(refine=False)``: certified decision.
lbfgs     ``scipy.optimize.minimize(method="L-BFGS-B")`` on the squared hinge
          ``sum (1 - margin)_+^2`` over dense W, float64 numpy, full p x p scores at every
          evaluation, stopped early as soon as every input is recalled (checked in the
          callback).  "not_stored" means: converged (or maxiter) without recalling all,
          which is not a certificate.
adam      ``validation.solvers.adam.solve_adam`` (softmax cross-entropy, step budget);
          never says not_stored (budget exhausted -> undecided).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np


# ----------------------------------------------------------------------------- child


def _lbfgs_baseline(instance, maxiter=15000):
    """The natural quick solution: L-BFGS-B on the squared hinge over dense W."""
    from scipy.optimize import minimize

    E, U, d, p = instance.inputs, instance.targets, instance.d, instance.p
    if instance.problem != "op":
        raise ValueError("the L-BFGS-B baseline is written for OP (dense shared outputs)")
    offdiag = ~np.eye(p, dtype=bool)
    state = {"stored": False, "evals": 0}

    def fun(w):
        W = w.reshape(d, d)
        S = U @ W @ E.T                                  # S[rho, mu]
        M = np.diag(S)[None, :] - S                      # margins
        R = np.where(offdiag, np.maximum(1.0 - M, 0.0), 0.0)
        B = -2.0 * R
        B[np.diag_indices(p)] = 2.0 * R.sum(axis=0)      # d/dS of sum R^2 (with sign)
        G = -(U.T @ B @ E)
        state["evals"] += 1
        state["last_min"] = float(np.min(M[offdiag]))
        return float(np.sum(R * R)), G.ravel()

    def callback(intermediate_result):
        if state.get("last_min", -1.0) > 0.0:
            state["stored"] = True
            raise StopIteration

    W0 = (U.T @ E).ravel()
    res = minimize(fun, W0, jac=True, method="L-BFGS-B", callback=callback,
                   options={"maxiter": maxiter, "maxfun": 2 * maxiter})
    W = res.x.reshape(d, d)
    S = instance.scores(W)
    M = np.diag(S)[None, :] - S
    stored = bool(np.min(M[offdiag]) > 0)
    return {"status": "stored" if stored else "not_stored*", "iterations": int(res.nit),
            "evals": state["evals"]}


def _timed(run, budget=1.0, max_repeats=5):
    """Run ``run()`` repeatedly (at least once; again while the total is under ``budget``
    seconds, at most ``max_repeats`` times) and return (median seconds, repeats, result).
    Millisecond solves are timed several times, long ones once."""
    times, total, out = [], 0.0, None
    while not times or (total < budget and len(times) < max_repeats):
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
        total += times[-1]
    return statistics.median(times), len(times), out


def _child(args):
    from validation import make_instance
    from validation.solvers.optimal import solve_optimal

    # warm-up on a small instance that takes every code path (numba compilation and
    # cache loading are never timed): p = 100 > 64 uses the working-set kernels
    warm = make_instance(16, 100, problem=args.problem, seed=0)
    inst = make_instance(args.d, args.p, problem=args.problem, seed=args.seed)
    if args.solver == "optimal":
        solve_optimal(warm, refine=False)
        seconds, repeats, sol = _timed(lambda: solve_optimal(inst, refine=False,
                                                             time_limit=args.time_limit))
        out = {"status": sol.status, "iterations": sol.iterations,
               "margin_bound": sol.info.get("margin_bound"),
               "full_passes": sol.info.get("full_passes")}
    elif args.solver == "lbfgs":
        _lbfgs_baseline(warm)
        seconds, repeats, out = _timed(lambda: _lbfgs_baseline(inst))
    elif args.solver == "adam":
        from validation.solvers.adam import solve_adam
        solve_adam(warm, max_iter=20)
        seconds, repeats, sol = _timed(lambda: solve_adam(inst, max_iter=args.adam_steps))
        out = {"status": sol.status, "iterations": sol.iterations}
    else:
        raise ValueError(f"solver must be optimal, lbfgs or adam, got {args.solver!r}")
    out["seconds"] = seconds
    out["repeats"] = repeats
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(out))
    return 0


# ----------------------------------------------------------------------------- parent


def _run_child(solver, d, p, seed, problem, opts):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--solver", solver,
           "--d", str(d), "--p", str(p), "--seed", str(seed), "--problem", problem,
           "--adam-steps", str(opts.adam_steps), "--time-limit", str(opts.time_limit)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.child_timeout)
    if proc.returncode != 0:
        return {"status": "error", "seconds": float("nan"), "peak_rss_mb": float("nan"),
                "error": proc.stderr.strip().splitlines()[-1:] or ["?"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _gemm_rates(d, p, repeats=5):
    """numpy GEMM rate and the optimal solver's full-pass score rate at (p x d)(d x p)."""
    from validation import make_instance
    from validation.solvers import optimal as opt
    from validation.solvers.engine.decision import score_sigma
    from validation.solvers.engine.problem import ConstraintProblem, full_pass

    rng = np.random.default_rng(0)
    rates = {}
    for dtype in (np.float64, np.float32):
        A = rng.normal(size=(p, d)).astype(dtype)
        B = rng.normal(size=(p, d)).astype(dtype)
        A @ B.T
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            A @ B.T
            times.append(time.perf_counter() - t0)
        rates[f"numpy_gemm_{np.dtype(dtype).name}"] = 2.0 * p * p * d / min(times) / 1e9
    inst = make_instance(d, p, seed=0)
    prob = ConstraintProblem(inst)
    # a representative solver state: the W after 30 L-BFGS iterations
    W = opt.solve_optimal(inst, refine=False, max_iter=30).W
    thr = 1.0 + score_sigma(W, d)
    defaults = opt.OptimalOptions()
    cap = defaults.max_active
    full_pass(prob, W, thr, cap, defaults.block_elements)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        full_pass(prob, W, thr, cap, defaults.block_elements)
        times.append(time.perf_counter() - t0)
    rates["optimal_full_pass"] = 2.0 * p * p * d / min(times) / 1e9
    Y = prob.images(W).astype(np.float32)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step = prob.rows_per_block(defaults.block_elements)
        for s in range(0, p, step):
            Y[s:s + step] @ prob.targets32.T
        times.append(time.perf_counter() - t0)
    rates["optimal_blocked_scores_only"] = 2.0 * p * p * d / min(times) / 1e9
    return rates


def _fmt(x, nd=3):
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{nd}g}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--solver", default="optimal")
    ap.add_argument("--d", type=int, nargs="+", default=[32, 64, 128])
    ap.add_argument("--p", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.95, 1.05])
    ap.add_argument("--problem", default="op")
    ap.add_argument("--solvers", nargs="+", default=["optimal", "lbfgs", "adam"])
    ap.add_argument("--adam-max-d", type=int, default=64)
    ap.add_argument("--adam-steps", type=int, default=20000)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--child-timeout", type=float, default=1800.0)
    ap.add_argument("--json", default=None, help="write all rows to this file")
    ap.add_argument("--gemm-only", action="store_true", help="only the GFLOP/s table")
    opts = ap.parse_args(argv)
    if opts.child:
        opts.d = opts.d[0]
        return _child(opts)

    from replica.optimal.finite_size import capacity

    print(f"# bench_solvers  {time.strftime('%Y-%m-%d %H:%M:%S')}  cpus={os.cpu_count()}  "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}  "
          f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}  "
          f"loadavg={os.getloadavg()[0]:.2f}")
    rows = []
    for d in ([] if opts.gemm_only else opts.d):
        p_c = capacity(d).p_c
        for frac in opts.fractions:
            p = int(round(frac * p_c))
            for seed in range(opts.seeds):
                for solver in opts.solvers:
                    if solver == "adam" and d > opts.adam_max_d:
                        continue
                    res = _run_child(solver, d, p, seed, opts.problem, opts)
                    row = {"d": d, "p": p, "p_over_pc": frac, "theory_p_c": p_c, "seed": seed,
                           "solver": solver, **res}
                    rows.append(row)
                    print(f"d={d:4d} p={p:6d} ({frac:.2f} p_c) seed={seed} {solver:8s} "
                          f"{row['status']:12s} {row['seconds']:9.3f} s  "
                          f"rss {row['peak_rss_mb']:7.1f} MB  it={row.get('iterations', '-')}",
                          flush=True)
    # summary: per (d, frac) min/median/max per solver, ratios vs optimal, agreement
    print("\n| d | p/p_c | solver | decisions | time min / median / max (s) | median ratio to optimal "
          "| peak RSS max (MB) |")
    print("|---|---|---|---|---|---|---|")
    for d in ([] if opts.gemm_only else opts.d):
        for frac in opts.fractions:
            sel = [r for r in rows if r["d"] == d and r["p_over_pc"] == frac]
            ref = {r["seed"]: r for r in sel if r["solver"] == "optimal"}
            med_ref = statistics.median([r["seconds"] for r in ref.values()]) if ref else float("nan")
            for solver in opts.solvers:
                rs = [r for r in sel if r["solver"] == solver]
                if not rs:
                    continue
                ts = [r["seconds"] for r in rs]
                decisions = ",".join(r["status"] for r in rs)
                med = statistics.median(ts)
                print(f"| {d} | {frac:.2f} | {solver} | {decisions} | {min(ts):.3g} / {med:.3g} / "
                      f"{max(ts):.3g} | {med / med_ref:.3g} | {max(r['peak_rss_mb'] for r in rs):.0f} |")
    print("\n| d | p | numpy dgemm GFLOP/s | numpy sgemm GFLOP/s | optimal blocked scores GFLOP/s "
          "| optimal full pass (scores + selection) GFLOP/s | ratio full pass / sgemm "
          "| ratio full pass / dgemm |")
    print("|---|---|---|---|---|---|---|---|")
    gemm = []
    for d in opts.d:
        p = int(round(capacity(d).p_c))
        g = _gemm_rates(d, p)
        gemm.append({"d": d, "p": p, **g})
        print(f"| {d} | {p} | {g['numpy_gemm_float64']:.3g} | {g['numpy_gemm_float32']:.3g} | "
              f"{g['optimal_blocked_scores_only']:.3g} | {g['optimal_full_pass']:.3g} | "
              f"{g['optimal_full_pass'] / g['numpy_gemm_float32']:.2f} | "
              f"{g['optimal_full_pass'] / g['numpy_gemm_float64']:.2f} |", flush=True)
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump({"rows": rows, "gemm": gemm, "loadavg": os.getloadavg()}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
