"""One large solve of the ``optimal`` solver with a time limit: time, decision, peak RSS.

Usage (see benchmarks/README.md)::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/bench_scale.py \
        --d 512 --problem op --fraction 1.0 --time-limit 900

p is ``fraction * replica.optimal.finite_size.capacity(d).p_c`` (theory).  The warm-up solve on
a tiny instance (numba compilation) is not timed.  The peak resident set is that of
the whole process (``resource.getrusage``), which runs nothing else.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, required=True)
    ap.add_argument("--problem", default="op", choices=["op", "dp"])
    ap.add_argument("--fraction", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=900.0)
    ap.add_argument("--refine", action="store_true")
    ap.add_argument("--max-active", type=int, default=None)
    opts = ap.parse_args(argv)

    from replica.optimal.finite_size import capacity
    from validation import make_instance
    from validation.solvers.optimal import solve_optimal

    solve_optimal(make_instance(8, 16, problem=opts.problem, seed=0), refine=False)
    p_c = capacity(opts.d).p_c
    p = int(round(opts.fraction * p_c))
    t0 = time.perf_counter()
    inst = make_instance(opts.d, p, problem=opts.problem, seed=opts.seed)
    t_inst = time.perf_counter() - t0
    extra = {} if opts.max_active is None else {"max_active": opts.max_active}
    sol = solve_optimal(inst, refine=opts.refine, time_limit=opts.time_limit, options=extra)
    out = {"d": opts.d, "problem": opts.problem, "p": p, "theory_p_c": p_c, "seed": opts.seed,
           "instance_seconds": t_inst, **sol.to_dict(),
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
