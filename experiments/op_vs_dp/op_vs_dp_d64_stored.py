"""OP against DP at d = 64 just below the measured p_c, on stored instances only.

Solves three instances per problem at p = 0.97 x the measured p_c of
``op_vs_dp_d64/capacity.csv`` (the optimal-memory rows) with the max-margin refinement on, keeps the
instances that are stored, and writes their spectra and score statistics (units
||W||_F / d) to ``op_vs_dp_d64_stored.json`` (with its provenance record) and the block
``op_vs_dp_d64_stored`` of this folder's README.

Usage::

    python -m experiments.op_vs_dp.op_vs_dp_d64_stored            # measure (a few minutes), then render
    python -m experiments.op_vs_dp.op_vs_dp_d64_stored --render   # render from the committed data
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from validation import make_instance, solve
from validation.measurements.spectra_and_scores import score_distribution, spectrum

from experiments.pages import write_block
from experiments.provenance import read_record
from experiments.runner import run

HERE = Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "op_vs_dp_d64_stored.json", HERE / "op_vs_dp_d64_stored.provenance.json"
D = 64
CAPACITY = HERE / "op_vs_dp_d64" / "capacity.csv"
SEEDS = (1000, 1001, 1002)
COLUMNS = ("fourth_moment", "largest_sv", "competitor_sd", "target_mean", "target_sd", "top_competitor_mean",
           "median_gap")


def measured_p_c() -> dict:
    """``{problem: p_c}`` of the optimal memory at d = 64 in ``op_vs_dp_d64/capacity.csv``."""
    with CAPACITY.open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["solver"] == "optimal" and int(r["d"]) == D
                and float(r["kappa"]) == 1.0]
    return {r["problem"]: float(r["p_c"]) for r in rows}


def measure() -> list[dict]:
    """One row per problem: the means over the stored instances (``stored`` of ``trials``)."""
    out = []
    for problem, p_c in measured_p_c().items():
        p = int(round(0.97 * p_c))
        rows = []
        for seed in SEEDS:
            inst = make_instance(D, p, problem, seed=seed)
            sol = solve(inst, "optimal", refine=True, options={"refine_max_iter": 1500})
            if not sol.stored:
                continue
            sp, sc = spectrum(sol.W), score_distribution(inst, sol.W)
            rows.append((sp.fourth_moment, float(np.max(sp.values)), float(np.asarray(sc.competitors).std()),
                         float(np.mean(sc.targets)), float(np.std(sc.targets)), float(np.mean(sc.top_competitors)),
                         float(np.median(np.asarray(sc.targets) - np.asarray(sc.top_competitors)))))
        means = dict(zip(COLUMNS, np.mean(np.array(rows), axis=0).tolist())) if rows else {}
        out.append({"problem": problem, "p": p, "stored": len(rows), "trials": len(SEEDS), **means})
    return out


def render(rows) -> list[str]:
    lines = ["| problem | p | stored | sv 4th moment | largest sv | competitor sd | target mean | target sd |"
             " top competitor mean | median target - top competitor | target / competitor sd |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["stored"]:
            lines.append(f"| {r['problem'].upper()} | {r['p']} | 0/{r['trials']} | | | | | | | | |")
            continue
        lines.append(f"| {r['problem'].upper()} | {r['p']} | {r['stored']}/{r['trials']} | {r['fourth_moment']:.3f} | "
                     f"{r['largest_sv']:.3f} | {r['competitor_sd']:.3f} | {r['target_mean']:.3f} | "
                     f"{r['target_sd']:.3f} | {r['top_competitor_mean']:.3f} | {r['median_gap']:.4f} | "
                     f"{r['target_mean'] / r['competitor_sd']:.3f} |")
    record = read_record(PROVENANCE)
    lines += ["", f"Measured by `{record['command']}` at code commit {record['code_commit']}, "
              f"{record['date']}, {record['wall_time_s']:.0f} s; seeds {', '.join(map(str, SEEDS))}; data "
              "`op_vs_dp_d64_stored.json`."]
    return lines


def _measure(job) -> None:
    DATA.write_text(json.dumps(measure(), indent=1) + "\n")
    job.record(DATA, seed=list(SEEDS))


def _render(job) -> None:
    text = render(json.loads(DATA.read_text()))
    write_block(HERE / "README.md", "op_vs_dp_d64_stored", text, "op_vs_dp_d64_stored")
    print("\n".join(text))


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=list(SEEDS))


if __name__ == "__main__":
    raise SystemExit(main())
