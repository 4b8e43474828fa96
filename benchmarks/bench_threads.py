"""Threads per solve: ``validation solve`` with the default, 1 and 2 numba/BLAS threads.

For d = 16 and d = 256 (OP, optimal solver, decision only), each setting runs in a
fresh process (imports and the kernel warm-up outside the timing), once on the idle
machine and once beside a CPU-bound busy-loop process.  d = 16 at p = 62 (the theory's
p_c; best of 5 solves); d = 256 at p = 7000 (1.17 x the theory's p_c = 6000, a
``not_stored`` decision that takes about 30 s on one thread; at p_c itself one solve
takes minutes), with a 90 s time limit.  Prints a markdown table of solve seconds and
the ratio default / best.  ``default`` is what ``validation solve`` does without
``--threads`` (one thread per process, see ``validation.solvers.set_threads``); on
this 2-core machine ``2 threads`` is also numba's own default, the behaviour before
the thread policy.

Run: ``python benchmarks/bench_threads.py`` (about 4-5 minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

_SOLVE = """
import json, sys, time
from validation import make_instance, solve
from validation.solvers import set_threads
threads = {threads}
if threads is not None:
    set_threads(threads)
inst = make_instance({d}, {p}, "op", seed=0)
solve(make_instance(8, 20, seed=1), "optimal")  # warm-up: kernels compiled / loaded
best = None
for _ in range({repeats}):
    start = time.perf_counter()
    sol = solve(inst, "optimal", refine=False, time_limit=90.0)
    seconds = time.perf_counter() - start
    best = seconds if best is None else min(best, seconds)
print(json.dumps({{"seconds": best, "status": sol.status}}))
"""

_BUSY = "while True:\n    pass\n"

# (d, p, repeats); theory p_c from validation.capacity.theory_capacity: 61.6 (d=16), 6000 (d=256)
CASES = ((16, 62, 5), (256, 7000, 1))
SETTINGS = (("default", None, {}), ("1 thread", 1, {}), ("2 threads", 2, {}))


def _clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(extra)
    return env


def solve_seconds(d, p, repeats, threads, env) -> tuple:
    """(best seconds of ``repeats`` decision solves, status) in a fresh process."""
    code = _SOLVE.format(threads=threads, d=d, p=p, repeats=repeats)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_clean_env(env),
                         timeout=900, check=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    return row["seconds"], row["status"]


def main() -> int:
    lines = ["| d | p | machine | " + " | ".join(s[0] for s in SETTINGS) + " | default / best | status |",
             "|---|---|---|" + "---|" * len(SETTINGS) + "---|---|"]
    for loaded in (False, True):
        busy = subprocess.Popen([sys.executable, "-c", _BUSY]) if loaded else None
        try:
            time.sleep(0.5 if loaded else 0.0)
            for d, p, repeats in CASES:
                results = [solve_seconds(d, p, repeats, threads, env) for _, threads, env in SETTINGS]
                seconds = [r[0] for r in results]
                ratio = seconds[0] / min(seconds)
                lines.append(f"| {d} | {p} | {'1 busy process' if loaded else 'idle'} | "
                             + " | ".join(f"{s:.3f}" for s in seconds)
                             + f" | {ratio:.2f} | {'/'.join(sorted({r[1] for r in results}))} |")
                print(lines[-1], file=sys.stderr, flush=True)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
    print(f"Solve seconds (fresh process per cell, warm-up excluded), {os.cpu_count()} CPUs.\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
