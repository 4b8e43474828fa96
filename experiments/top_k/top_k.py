"""Measured top-k capacity of the optimal memory beside ``replica.capacity(d, top_k=k)``.

Writes ``experiments/top_k/README.md``: for k in ``TOP_K`` and d in ``DIMENSIONS`` (problem ``dp``,
and ``op`` at the dimensions in ``OP_DIMENSIONS``) the measured p_c
(``validation.capacity.estimate_capacity`` with ``options=CapacityOptions(solver_options={"top_k": k})``,
``TRIALS`` instances per grid point, ``ROUNDS`` refinement rounds, seed ``SEED``, run
serially in this process) with its 95 % profile-likelihood interval, the theory and the
relative difference, and how many verdicts were certified.  For k = 1 both verdicts
are certified; for k >= 2 ``stored`` is certified (float64 top-k recall of every input)
and the search's ``not_found`` is not, so the measured p_c is a lower bound.
See ``notes/top_k.md``.

Each estimate's summary is saved in ``experiments/top_k/top_k.json`` with a provenance record; ``--render``
rewrites the page block from them.

Usage::

    python -m experiments.top_k.top_k            # measure (about 7 min), write the data and the page
    python -m experiments.top_k.top_k --render   # the page from the committed data
"""

from __future__ import annotations

import json
import pathlib

from validation.capacity import CapacityDesign, CapacityOptions, estimate_capacity
from validation.solvers import set_threads
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import run

DIMENSIONS = (16, 32)
OP_DIMENSIONS = (16,)
TOP_K = (1, 2, 5)
TRIALS = 20
ROUNDS = 2
SEED = 0
HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "top_k.json", HERE / "top_k.provenance.json"


def measure():
    """Estimates for every (problem, d, k) and the seconds of each."""
    rows = []
    cases = [("dp", d) for d in DIMENSIONS] + [("op", d) for d in OP_DIMENSIONS]
    for problem, d in cases:
        for k in TOP_K:
            options = {"top_k": k} if k > 1 else None
            est = estimate_capacity(d, problem, "optimal", seed=SEED, design=CapacityDesign(trials=TRIALS, rounds=ROUNDS),
                                    options=CapacityOptions(solver_options=options, progress=False))
            rows.append(summary(problem, k, est))
            print(f"{problem} d={d} k={k}: p_c {est.p_c:.1f} [{est.p_c_low:.1f}, {est.p_c_high:.1f}] theory "
                  f"{est.theory['p_c']:.1f} ({est.seconds:.0f} s)", flush=True)
    return rows


def summary(problem, k, est) -> dict:
    """What the page shows of one estimate (a JSON-safe dict)."""
    return {"problem": problem, "k": k, "d": est.d, "p_c": est.p_c, "p_c_low": est.p_c_low, "p_c_high": est.p_c_high,
            "theory_p_c": est.theory["p_c"], "stored": sum(c.stored for c in est.curve),
            "not_stored": sum(c.not_stored for c in est.curve), "not_found": est.not_found,
            "undecided": est.undecided, "status": est.status, "message": est.message, "seconds": est.seconds}


def _verdicts(row) -> str:
    return f"{row['stored']} / {row['not_stored']} / {row['not_found']} / {row['undecided']}"


_INTRO = """# Top-k capacity: simulation beside `replica.capacity(d, top_k=k)`

Produced by `python -m experiments.top_k.top_k` in {seconds:.0f} s (one process, one thread), seed {seed}, {trials}
instances per grid point, {rounds} refinement rounds (`validation.capacity.estimate_capacity(d, problem,
'optimal', options=CapacityOptions(solver_options={{'top_k': k}}))`).  p_c is where half the instances are stored (every target in
the top k, verified in float64); 95 % profile-likelihood interval.  Verdicts: stored (certified) / not
stored (certified, k = 1 only) / not found (the top-k search found no W: a lower-bound verdict, counted as
not stored) / undecided.  With not-found verdicts the measured p_c is a **lower bound** on the top-k
threshold.  See `notes/top_k.md`.

| problem | d | k | measured p_c [95 % CI] | theory p_c | rel. diff | verdicts s / ns / nf / u | measured p_c is |
"""


def markdown(rows, seconds) -> str:
    lines = [_INTRO.format(seconds=seconds, seed=SEED, trials=TRIALS, rounds=ROUNDS).rstrip("\n"),
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        th = r["theory_p_c"]
        kind = "a lower bound" if r["not_found"] else "certified"
        lines.append(f"| {r['problem'].upper()} | {r['d']} | {r['k']} | {r['p_c']:.1f} [{r['p_c_low']:.1f}, "
                     f"{r['p_c_high']:.1f}] | {th:.1f} | {100 * (r['p_c'] - th) / th:+.1f} % | {_verdicts(r)} | {kind} |")
    lines += ["", "Status and message of each estimate:", ""]
    for r in rows:
        lines.append(f"- {r['problem'].upper()} d={r['d']} k={r['k']}: {r['status']}; {r['message']} "
                     f"({r['seconds']:.0f} s)")
    lines.append("")
    return "\n".join(lines)


def _measure(job) -> None:
    set_threads(1)
    rows = measure()
    DATA.write_text(json.dumps(rows, indent=1) + "\n")
    job.record(DATA, seed=SEED)


def _render(job) -> None:
    seconds = read_record(PROVENANCE)["wall_time_s"]
    rows = json.loads(DATA.read_text())  # the page shows what the data file holds
    text = markdown(rows, seconds)
    write_block(HERE / "README.md", "top_k", demote_headings(text), "top_k")
    print(text)


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
