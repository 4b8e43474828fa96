"""Measure how far results move across BLAS kernels and numba targets on one machine.

Runs one probe (closed forms, Monte-Carlo theory, one instance, a set of seeded solves)
in three child processes: the kernels this machine selects, ``OPENBLAS_CORETYPE=Haswell``
with ``NUMBA_CPU_NAME=generic``, and ``OPENBLAS_CORETYPE=Sandybridge``; then writes
``experiments/reproducibility/reproducibility_measured.md``, the largest relative difference of each quantity
from the first run.  Usage: ``python -m experiments.reproducibility.reproducibility`` (about 3 min on 2 cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from experiments import runner
from experiments.pages import write_block
from experiments.provenance import read_record

HERE = Path(__file__).resolve().parent
OUT, DATA, PROVENANCE = HERE / "README.md", HERE / "reproducibility.json", HERE / "reproducibility.provenance.json"

VARIANTS = {
    "this machine's kernels": {},
    "OPENBLAS_CORETYPE=Haswell, NUMBA_CPU_NAME=generic": {"OPENBLAS_CORETYPE": "Haswell",
                                                          "NUMBA_CPU_NAME": "generic"},
    "OPENBLAS_CORETYPE=Sandybridge": {"OPENBLAS_CORETYPE": "Sandybridge"},
}

PROBE = r'''
import hashlib, json
import replica
from validation import make_instance, solve

out = {
    "replica.alpha_c(0.25)": replica.alpha_c(0.25),
    "replica.expected_max(1e6)": float(replica.expected_max(1e6)),
    "replica.capacity(64).p_c": replica.capacity(64).p_c,
    "replica.capacity(256).p_c": replica.capacity(256).p_c,
    "replica.saddle_point(d=32, p=91).q": float(replica.saddle_point(d=32, p=91).q),
    "replica.hebbian_capacity(64).p_c": replica.hebbian_capacity(64).p_c,
}
inst = make_instance(16, 50, problem="dp", seed=1)
out["make_instance(16, 50, 'dp', seed=1) (sha1 of inputs and candidates)"] = hashlib.sha1(
    inst.inputs.tobytes() + inst.candidates(3).tobytes()).hexdigest()
cases = {
    "optimal, DP d=16 p=50": (16, 50, "dp", "optimal", {}),
    "optimal, OP d=16 p=50": (16, 50, "op", "optimal", {}),
    "optimal, DP d=64 p=500": (64, 500, "dp", "optimal", {}),
    "optimal, OP d=64 p=500": (64, 500, "op", "optimal", {}),
    "lp, OP d=8 p=20": (8, 20, "op", "lp", {}),
    "hebbian, OP d=32 p=60": (32, 60, "op", "hebbian", {}),
    "adam, OP d=16 p=40": (16, 40, "op", "adam", {}),
    "optimal give_up, OP d=16 p=70": (16, 70, "op", "optimal", {"options": {"give_up": True}}),
    "optimal kappa=0.5 (4 restarts), OP d=16 p=40": (16, 40, "op", "optimal", {"kappa": 0.5, "restarts": 4}),
}
for name, (d, p, problem, solver, kw) in cases.items():
    s = solve(make_instance(d, p, problem=problem, seed=1), solver, **kw)
    out[name] = [s.status, s.iterations, s.margin, s.recall_fraction]
print(json.dumps(out))
'''


def run(env_extra: dict) -> dict:
    env = dict(os.environ, **env_extra)
    with tempfile.TemporaryDirectory() as cache:
        env["NUMBA_CACHE_DIR"] = cache
        done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(a) if a else abs(b)


def table(runs: dict) -> list[str]:
    names = list(runs)
    base = runs[names[0]]
    head = "| quantity | " + " | ".join(f"vs {n}" for n in names[1:]) + " |"
    lines = [head, "|" + "---|" * len(names)]
    for key, value in base.items():
        cells = []
        for n in names[1:]:
            other = runs[n][key]
            if isinstance(value, list):
                same = value[0] == other[0] and value[1] == other[1] and value[3] == other[3]
                cells.append(("same status, iterations and recall" if same else
                              f"status {other[0]}, iterations {other[1]}, recall {other[3]:.3f}")
                             + f"; margin {rel(value[2], other[2]):.1e}")
            elif isinstance(value, float):
                cells.append("identical" if value == other else f"{rel(value, other):.1e}")
            else:
                cells.append("identical" if value == other else "differs")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return lines


def _measure(job) -> None:
    runs = {name: run(env) for name, env in VARIANTS.items()}
    DATA.write_text(json.dumps(runs, indent=1) + "\n")
    job.record(DATA, seed=1, variants=VARIANTS)


def _render(job) -> None:
    runs = json.loads(DATA.read_text())  # the page shows what the data file holds
    record = read_record(PROVENANCE)
    lines = [
        f"Measured on {record['date']} on one machine ({record['machine']['cpu']}, {record['machine']['cores']} "
        f"logical cores), one process per variant, each with an empty numba cache, {record['wall_time_s']:.0f} s in "
        "all. Each cell gives the relative difference from the run with this machine's own kernels "
        "(\"identical\": the same bits).",
        "",
    ] + table(runs)
    write_block(OUT, "reproducibility", lines, "reproducibility")
    print(f"wrote {OUT}")


def main(argv=None) -> int:
    return runner.run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=1)


if __name__ == "__main__":
    raise SystemExit(main())
