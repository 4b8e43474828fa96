"""Measured p_c of rectangular memories (W is d_out x d_in), OP and DP, beside the theory.

For every ``(d_in, d_out)`` of ``SHAPES`` (aspect ratios d_out / d_in = 1/4, 1/2, 2, 4)
and problem (DP, OP) this script measures P(stored) on a grid of p and fits p_c with the
capacity machinery of :mod:`validation.capacity`:

* a trial at ``(p, trial)`` is ``make_instance(None, p, problem, seed=task_seed(row_seed, p,
  trial), embeddings=EmbeddingModel(d_in=d_in, d_out=d_out))`` solved by ``solve(inst, "optimal", refine=False,
  time_limit=TIME_LIMIT)`` (the sweep setting of ``optimal``: certified decisions only),
  its verdict counted by ``validation.capacity.record_status``; ``undecided`` trials are
  counted and left out of the fit (the capacity default for ``optimal``);
* the grid: a walk up from ``p = P_START`` by factors of ``STEP`` with ``COARSE_TRIALS``
  trials per point until a point stores none of its decided trials, then ``FINE_TRIALS``
  more trials at ``FINE_POINTS`` log-spaced points from the walk's fitted 90 % point to its
  10 % point (at least ``p_c exp(+-FINE_WIDTH)``, at most a factor 2 either side);
* p_c: ``validation.capacity.fit_logistic`` (logistic in ln p, 95 % profile-likelihood
  interval, ``notes/capacity_estimation.md``); per point a 95 % Wilson interval of
  P(stored) (``validation.intervals.wilson_interval``) in the data file.

The theory column calls ``replica.variants.rectangular_capacity(d_in, d_out, problem=...)``
(``.p_c``, ``notes/rectangular.md``).  Writes ``experiments/rectangular/README.md`` and the data ``experiments/rectangular/rectangular.json``
(rewritten after every row, so an interrupted run leaves the rows it finished).

Usage::

    python -m experiments.rectangular.rectangular          # about 2 minutes on one core
"""

from __future__ import annotations

import json
import math
import pathlib
import sys
import time

import numpy as np

from validation import EmbeddingModel, make_instance, solve
from validation.capacity import fit_logistic, record_status
from validation.measurements.intervals import wilson_interval
from validation.solvers import set_threads
from validation.runtime.sweep import task_seed

from replica.variants import rectangular_capacity
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import run

SEED = 0
SHAPES = ((32, 8), (32, 16), (16, 32), (8, 32))
PROBLEMS = ("dp", "op")
P_START, STEP, P_MAX = 8, 1.25, 600
COARSE_TRIALS, FINE_TRIALS, FINE_POINTS, FINE_WIDTH = 4, 32, 7, 0.1
TIME_LIMIT = 30.0
HERE = pathlib.Path(__file__).resolve().parent
PAGE, DATA = HERE / "README.md", HERE / "rectangular.json"
PROVENANCE = HERE / "rectangular.provenance.json"


def row_seed(d_in, d_out, problem) -> int:
    """The seed of a row: ``SeedSequence([SEED, d_in, d_out, 0 (DP) or 1 (OP)])``."""
    state = np.random.SeedSequence([SEED, d_in, d_out, PROBLEMS.index(problem)]).generate_state(2, np.uint32)
    return (int(state[0]) << 32 | int(state[1])) & ((1 << 63) - 1)


class Row:
    """The trials of one (d_in, d_out, problem): counts per p."""

    def __init__(self, d_in, d_out, problem):
        self.d_in, self.d_out, self.problem = d_in, d_out, problem
        self.seed = row_seed(d_in, d_out, problem)
        self.counts = {}   # p -> [stored, not_stored, undecided]

    def run(self, p, trials):
        """``trials`` more trials at ``p`` (trial indices continue from those already run)."""
        c = self.counts.setdefault(p, [0, 0, 0])
        start = sum(c)
        for trial in range(start, start + trials):
            inst = make_instance(None, p, self.problem, seed=task_seed(self.seed, p, trial),
                                 embeddings=EmbeddingModel(d_in=self.d_in, d_out=self.d_out))
            status = record_status(solve(inst, "optimal", refine=False, time_limit=TIME_LIMIT))["status"]
            c[("stored", "not_stored", "undecided").index(status)] += 1
        return c

    def fit(self):
        ps = sorted(self.counts)
        return fit_logistic(ps, [self.counts[p][0] for p in ps], [self.counts[p][0] + self.counts[p][1] for p in ps])

    def measure(self):
        p = P_START
        while p <= P_MAX:
            stored, not_stored, _ = self.run(p, COARSE_TRIALS)
            if stored == 0 and not_stored > 0:
                break
            p = max(p + 1, int(round(p * STEP)))
        coarse = self.fit()
        center = math.log(coarse.quantile(0.5)) if coarse.status == "ok" else \
            (coarse.log_p_c if math.isfinite(coarse.log_p_c) else math.log(p))
        half = FINE_WIDTH
        if coarse.status == "ok":  # from the fitted 10 % to the 90 % point, within a factor 2
            half = min(math.log(2.0), max(FINE_WIDTH, abs(math.log(coarse.quantile(0.1)) - center)))
        for q in sorted({int(round(math.exp(x))) for x in np.linspace(center - half, center + half, FINE_POINTS)}):
            if q >= 2:
                self.run(q, FINE_TRIALS)
        return self.fit()


def theory(d_in, d_out, problem):
    """``replica.variants.rectangular_capacity(d_in, d_out, problem=problem).p_c``."""
    return float(rectangular_capacity(d_in, d_out, problem=problem).p_c)


def _num(x):
    return "nan" if x is None or not math.isfinite(x) else f"{x:.1f}"


def record(row, fit, seconds):
    ps = sorted(row.counts)
    stored = np.array([row.counts[p][0] for p in ps])
    decided = stored + np.array([row.counts[p][1] for p in ps])
    low, high = wilson_interval(stored, np.maximum(decided, 1))
    p_c = math.exp(fit.log_p_c) if math.isfinite(fit.log_p_c) else None
    return {
        "d_in": row.d_in, "d_out": row.d_out, "problem": row.problem, "aspect": row.d_out / row.d_in,
        "seed": row.seed, "p_c": p_c,
        "p_c_low": math.exp(fit.log_p_c_low) if math.isfinite(fit.log_p_c_low) else None,
        "p_c_high": math.exp(fit.log_p_c_high) if math.isfinite(fit.log_p_c_high) else None,
        "slope": fit.slope if math.isfinite(fit.slope) else None, "fit_status": fit.status,
        "theory_p_c": theory(row.d_in, row.d_out, row.problem), "seconds": seconds,
        "points": [{"p": p, "stored": int(row.counts[p][0]), "not_stored": int(row.counts[p][1]),
                    "undecided": int(row.counts[p][2]),
                    "wilson_low": float(low[i]) if decided[i] else None,
                    "wilson_high": float(high[i]) if decided[i] else None} for i, p in enumerate(ps)],
    }


def markdown(rows, seconds, done) -> str:
    state = "" if done else " (partial: the run was still going when this was written)"
    lines = [
        "# Rectangular memories: measured p_c beside the theory", "",
        f"Generated by `python -m experiments.rectangular.rectangular`{state} in {seconds:.0f} s (one process, one thread); data "
        "in `experiments/rectangular/rectangular.json`.  A memory is `W` (d_out x d_in); inputs N(0, I/d_in), outputs and "
        "candidates N(0, I/d_out).  Every trial is a certified decision of `solve(inst, \"optimal\", "
        f"refine=False, time_limit={TIME_LIMIT:g})` (stored: float64 recall of every input; not stored: "
        "the Gordan-type certificate); undecided trials are counted and left out of the fit.  Grid: a walk "
        f"from p = {P_START} by factors of {STEP} ({COARSE_TRIALS} trials per point) up to the first point "
        f"that stores none, then {FINE_TRIALS} trials at {FINE_POINTS} points from its fitted 90 % to its "
        "10 % point.  p_c: logistic "
        "fit in ln p with its 95 % profile-likelihood interval (`validation.capacity.fit_logistic`); the "
        "95 % Wilson intervals of P(stored) per point are in the data file.  Seeds: "
        "`task_seed(SeedSequence([0, d_in, d_out, problem]), p, trial)`.  The load column is "
        "p_c ln p_c / (d_in d_out), the square load p ln p / d^2 with d^2 -> d_in d_out.  Theory: "
        "`replica.variants.rectangular_capacity(d_in, d_out, problem=...).p_c`.", "",
        "| problem | d_in | d_out | d_out/d_in | measured p_c [95% CI] | fit | load | theory p_c | "
        "trials s / ns / u | s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        pts = r["points"]
        s, ns, u = (sum(pt[k] for pt in pts) for k in ("stored", "not_stored", "undecided"))
        th = f"{r['theory_p_c']:.1f}"
        load = "nan" if r["p_c"] is None else f"{r['p_c'] * math.log(r['p_c']) / (r['d_in'] * r['d_out']):.3f}"
        lines.append(f"| {r['problem'].upper()} | {r['d_in']} | {r['d_out']} | {r['aspect']:g} | {_num(r['p_c'])} "
                     f"[{_num(r['p_c_low'])}, {_num(r['p_c_high'])}] | {r['fit_status']} | {load} | {th} | "
                     f"{s} / {ns} / {u} | {r['seconds']:.0f} |")
    lines.append("")
    return "\n".join(lines)


def _measure(job) -> None:
    set_threads(1)
    rows = []
    for d_in, d_out in SHAPES:
        for problem in PROBLEMS:
            t0 = time.perf_counter()
            row = Row(d_in, d_out, problem)
            fit = row.measure()
            rows.append(record(row, fit, time.perf_counter() - t0))
            sys.stderr.write(f"{problem} {d_in}x{d_out}: p_c {_num(rows[-1]['p_c'])} ({rows[-1]['seconds']:.0f} s)\n")
            DATA.write_text(json.dumps({"seed": SEED, "rows": rows}, indent=1) + "\n")
            write_block(PAGE, "rectangular", demote_headings(markdown(rows, job.elapsed(), done=False)), "rectangular")
    job.record(DATA, seed=SEED)


def _render(job) -> None:
    seconds = read_record(PROVENANCE)["wall_time_s"]
    text = markdown(json.loads(DATA.read_text())["rows"], seconds, done=True)
    write_block(PAGE, "rectangular", demote_headings(text), "rectangular")
    if not job.render_only:
        sys.stdout.write(text)


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
