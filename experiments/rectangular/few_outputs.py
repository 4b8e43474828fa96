"""Rectangular memories with few outputs: certified p_c beside ``replica.variants.few_outputs_capacity``.

For ``d_out / d_in <= 1/4`` the outputs' convex hull limits the capacity (a target that is
not a vertex of its candidates' hull can never be recalled), which the budget theory
``replica.variants.rectangular_capacity`` does not see (``notes/rectangular_few_outputs.md``).

Measurement (the default; the protocol of ``rectangular.py`` with a third stage): a trial
``(p, t)`` of a row is ``make_instance(None, p, problem, seed=task_seed(row_seed, p, t),
embeddings=EmbeddingModel(d_in=d_in, d_out=d_out))`` decided by ``solve(inst, "optimal",
refine=False, time_limit=30)`` (certified both ways; undecided trials are recorded and left
out of the fit); ``row_seed`` from ``SeedSequence([SEED, d_in, d_out, 0 (DP) or 1 (OP)])``.
Grid: a walk from p = 8 by factors 1.25 (4 trials per point) to the first point that stores
none; 40 trials at 7 points around the walk's fit; 60 trials at 9 points within a factor
exp(0.12) of the second fit.  p_c: ``validation.capacity.fit_logistic`` (95 % profile
likelihood) on all points.  One process, one thread.  The committed main run
(``few_outputs_measured.json``, seed 20261207) and a pilot with another seed and without
the third stage (``few_outputs_pilot.json``, seed 20261206) each have their provenance record beside them
(``*.provenance.json``: code commit, machine, seed, wall time).  Neither was used to build the theory,
which has no fitted parameter; the rows 32 x 8 of ``rectangular.json`` were seen before.

Usage::

    python -m experiments.rectangular.few_outputs --render     # the page from the committed data (~10 s)
    python -m experiments.rectangular.few_outputs              # measure: about 40 min on one core
"""

from __future__ import annotations

import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

import replica
from validation import EmbeddingModel, make_instance, solve
from validation.capacity import fit_logistic, record_status
from validation.solvers import set_threads
from validation.runtime.sweep import task_seed

from experiments.pages import write_block
from experiments.provenance import read_record
from experiments import runner

HERE = Path(__file__).resolve().parent
MAIN, PILOT = HERE / "few_outputs_measured.json", HERE / "few_outputs_pilot.json"
SEED = 20261207
SHAPES = ((32, 4), (64, 8), (64, 16), (128, 16), (64, 4), (128, 32), (256, 16))
PROBLEMS = ("dp", "op")
P_START, STEP, P_MAX, COARSE, FINE, FINE_POINTS, DENSE, DENSE_POINTS, WIDTH = 8, 1.25, 2000, 4, 40, 7, 60, 9, 0.12


class Row:
    """The trials of one (d_in, d_out, problem): counts of stored, not stored and undecided per p."""

    def __init__(self, d_in, d_out, problem):
        self.d_in, self.d_out, self.problem = d_in, d_out, problem
        state = np.random.SeedSequence([SEED, d_in, d_out, PROBLEMS.index(problem)]).generate_state(2, np.uint32)
        self.seed = (int(state[0]) << 32 | int(state[1])) & ((1 << 63) - 1)
        self.counts = {}

    def run(self, p, trials):
        counts = self.counts.setdefault(p, [0, 0, 0])
        model = EmbeddingModel(d_in=self.d_in, d_out=self.d_out)
        for t in range(sum(counts), sum(counts) + trials):
            inst = make_instance(None, p, self.problem, seed=task_seed(self.seed, p, t), embeddings=model)
            status = record_status(solve(inst, "optimal", refine=False, time_limit=30.0))["status"]
            counts[("stored", "not_stored", "undecided").index(status)] += 1
        return counts

    def fit(self):
        ps = sorted(self.counts)
        return fit_logistic(ps, [self.counts[p][0] for p in ps], [self.counts[p][0] + self.counts[p][1] for p in ps])

    def measure(self):
        p = P_START
        while p <= P_MAX and not (self.run(p, COARSE)[0] == 0):
            p = max(p + 1, int(round(p * STEP)))
        walk = self.fit()
        center = walk.log_p_c if math.isfinite(walk.log_p_c) else math.log(p)
        for q in sorted({int(round(math.exp(x))) for x in np.linspace(center - 0.1, center + 0.1, FINE_POINTS)}):
            self.run(q, FINE)
        second = self.fit()
        center = second.log_p_c if math.isfinite(second.log_p_c) else center
        for q in sorted({int(round(math.exp(x))) for x in np.linspace(center - WIDTH, center + WIDTH, DENSE_POINTS)}):
            self.run(q, DENSE)
        return self.fit()


def measure(job) -> None:
    """Measure every shape and problem into ``few_outputs_measured.json`` (rewritten after each row), its record beside."""
    set_threads(1)
    start, rows = time.perf_counter(), []
    for d_in, d_out in SHAPES:
        for problem in PROBLEMS:
            row = Row(d_in, d_out, problem)
            fit = row.measure()
            rows.append({"d_in": d_in, "d_out": d_out, "problem": problem, "ratio": d_out / d_in,
                         "p_c": math.exp(fit.log_p_c), "p_c_low": math.exp(fit.log_p_c_low),
                         "p_c_high": math.exp(fit.log_p_c_high), "fit_status": fit.status,
                         "trials": sum(sum(c) for c in row.counts.values()),
                         "points": [{"p": p, "stored": c[0], "not_stored": c[1], "undecided": c[2]}
                                    for p, c in sorted(row.counts.items())]})
            MAIN.write_text(json.dumps({"rows": rows}, indent=1) + "\n")
            job.record(MAIN, seed=SEED, threads=1, solver='solve(inst, "optimal", refine=False, time_limit=30)',
                       note="" if len(rows) == len(SHAPES) * len(PROBLEMS) else "partial: the run was still going")
            print(f"{problem} {d_in}x{d_out}: p_c {rows[-1]['p_c']:.1f} ({time.perf_counter() - start:.0f} s)",
                  flush=True)


def compared_rows():
    """(run, row, theory, error) for every fitted row of both runs and the 32 x 8 rows of rectangular.json."""
    runs = [("main", json.loads(MAIN.read_text())["rows"]), ("pilot", json.loads(PILOT.read_text())["rows"]),
            ("rectangular.json", [r for r in json.loads((HERE / "rectangular.json").read_text())["rows"]
                                  if r["d_out"] / r["d_in"] <= 0.25])]
    out = []
    for run, rows in runs:
        for r in rows:
            if r["fit_status"] != "ok":
                continue
            theory = replica.variants.few_outputs_capacity(r["d_in"], r["d_out"], problem=r["problem"])
            out.append((run, r, theory, theory.p_c / r["p_c"] - 1.0))
    return out


def render() -> list[str]:
    warnings.simplefilter("ignore", replica.TheoryOffWarning)
    main_meta, pilot_meta = read_record(runner.record_path(MAIN)), read_record(runner.record_path(PILOT))
    lines = [f"Generated by `python -m experiments run few_outputs` from `few_outputs_measured.json` (the main run: "
             f"seed {main_meta['seed']}, code commit {main_meta['code_commit'][:10]}, {main_meta['machine']['cpu']}, "
             f"one thread, {main_meta['wall_time_s'] / 60:.0f} min on a shared machine; {main_meta['note']}) and "
             f"`few_outputs_pilot.json` (seed {pilot_meta['seed']}, the first two stages only, "
             f"{pilot_meta['wall_time_s']:.0f} s).  Measured p_c: logistic fit in ln p with its 95 % profile-likelihood "
             "interval (fit status `ok` only).  Theory: `replica.variants.few_outputs_capacity(d_in, d_out, problem)` "
             "(Monte Carlo, mean +- standard error over 3 replicas) beside the budget theory "
             "`replica.variants.rectangular_capacity`.  Error: theory / measured - 1.", "",
             "| run | problem | d_in x d_out | d_out / d_in | measured p_c [95 % PL] | trials | few-outputs theory | "
             "error | hull limit alone | budget theory (error) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for run, r, theory, error in compared_rows():
        budget = replica.variants.rectangular_capacity(r["d_in"], r["d_out"], problem=r["problem"]).p_c
        trials = sum(pt["stored"] + pt["not_stored"] for pt in r["points"])
        lines.append(f"| {run} | {r['problem'].upper()} | {r['d_in']} x {r['d_out']} | {r['d_out'] / r['d_in']:g} | "
                     f"{r['p_c']:.1f} [{r['p_c_low']:.1f}, {r['p_c_high']:.1f}] | {trials} | "
                     f"{theory.p_c:.1f} +- {theory.stderr:.1f} | {100 * error:+.1f} % | {theory.hull_only_p_c:.1f} | "
                     f"{budget:.1f} ({100 * (budget / r['p_c'] - 1):+.0f} %) |")
    errors = [abs(e) for run, _, _, e in compared_rows() if run == "main"]
    lines += ["", f"Main run: largest |error| {100 * max(errors):.1f} % over {len(errors)} rows (stated tolerance 8 %)."]
    return lines


def _render(job) -> None:
    text = render()
    write_block(HERE / "README.md", "few_outputs", text, "few_outputs")
    print("\n".join(text))


def main(argv=None) -> int:
    return runner.run(__file__, __doc__, measure=measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
