"""Measured p_c(kappa) of rank-constrained memories, OP and DP, beside the finite-size theory.

For the original (OP) and decoupled (DP) problem at kappa = 0.25, 0.5, 0.75 and the
dimensions of ``ROWS`` this script runs
``validation.estimate_capacity(d, problem, "optimal", kappa=kappa, options=CapacityOptions(solver_options={"restarts": R}))``
(one process, one thread, serial executor) and writes ``experiments/rank/README.md``: the
measured p_c (logistic fit in ln p, 95 % profile-likelihood interval;
``notes/capacity_estimation.md``) beside the finite-size conjecture
``replica.capacity(d, kappa=kappa)`` (``p_c E[C_{p_c}] = F(kappa) d^2``,
``notes/finite_size_capacity.md``).  At rank m "not stored" cannot be certified (the
problem is not convex, ``notes/rank_search.md``): a trial whose ``R`` starts all end
without storing is ``not_found`` and counted as not stored, so every measured p_c
with a ``not_found`` trial is a LOWER BOUND; the page shows the counts.  ``R`` is the
saturated setting of ``experiments/rank/README.md``.  The page is rewritten after every
row, so an interrupted run leaves the rows it finished.

The rows are saved in ``experiments/rank/rank_capacity.json`` with a provenance record; ``--render`` rewrites
the page block, and the summary table in section 7 of ``notes/rank_search.md``, from them.

Usage::

    python -m experiments.rank.rank_capacity                 # every row of ROWS (about 26 min)
    python -m experiments.rank.rank_capacity --render        # the page from the committed data
    python -m experiments.rank.rank_capacity --d 16 32       # only these dimensions (the page holds the rows of the run)
    python -m experiments.rank.rank_capacity --store DIR     # trials kept in the result store DIR (reused on a rerun)
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import replica
from validation.capacity import CapacityDesign, CapacityOptions, estimate_capacity
from validation.solvers import set_threads
from validation.runtime.store import ResultStore
from validation.runtime.sweep import make_executor
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import run

SEED = 0
# d -> starts per search (the saturated setting of experiments/rank/README.md: at d = 16, 32 eight
# starts store nearly all that 32 store, notes/rank_search.md section 7; fewer at d = 64, where a
# not_found search costs 3-4 s per start)
RESTARTS = {16: 8, 32: 8, 64: 4}
KAPPAS = (0.25, 0.5, 0.75)
# d -> (trials per grid point, refinement rounds, half-width of the first grid in ln p)
DESIGN = {16: (32, 2, 0.25), 32: (16, 1, 0.2), 64: (8, 1, 0.1)}
ROWS = tuple((d, problem, kappa) for d in (16, 32, 64) for kappa in KAPPAS for problem in ("dp", "op"))
HERE = pathlib.Path(__file__).resolve().parent
PAGE = HERE / "README.md"
NOTE = HERE.parent.parent / "notes" / "rank_search.md"
DATA, PROVENANCE = HERE / "rank_capacity.json", HERE / "rank_capacity.provenance.json"


def measure(d, problem, kappa, store=None):
    """The estimate of one row (a :class:`validation.capacity.CapacityEstimate`)."""
    trials, rounds, width = DESIGN[d]
    return estimate_capacity(d, problem, "optimal", kappa=kappa, seed=SEED,
                             design=CapacityDesign("grid", trials=trials, rounds=rounds, initial_width=width),
                             options=CapacityOptions(executor=make_executor("serial"), progress=False,
                                                     solver_options={"restarts": RESTARTS[d]}, store=store))


def _num(x):
    return "nan" if x is None or x != x else f"{x:.1f}"


def summary(d, problem, kappa, est, theory, seconds) -> dict:
    """What the page shows of one row (a JSON-safe dict; NaN as None)."""
    out = est.to_dict()
    return {"d": d, "problem": problem, "kappa": kappa, "theory": theory, "p_c": out["p_c"],
            "p_c_low": out["p_c_low"], "p_c_high": out["p_c_high"], "lower_bound": bool(est.lower_bound),
            "trials": sum(c["trials"] for c in out["curve"]), "not_found": est.not_found,
            "undecided": est.undecided, "starts": RESTARTS[d], "seconds": seconds}


def _row(r) -> str:
    rel = "nan" if r["p_c"] is None else f"{_rel(r):+.1f} %"
    kind = "lower bound" if r["lower_bound"] else "estimate"
    return (f"| {r['problem'].upper()} | {r['d']} | {r['kappa']:g} | {r['theory']:.1f} | {_num(r['p_c'])} "
            f"[{_num(r['p_c_low'])}, {_num(r['p_c_high'])}] | {rel} | {kind} | {r['trials']} | "
            f"{r['not_found']} | {r['undecided']} | {r['starts']} | {r['seconds']:.0f} |")


def write(rows, seconds, done) -> str:
    state = "" if done else " (partial: the run was still going when this was written)"
    head = ("| problem | d | kappa | theory p_c | measured p_c [95% CI] | rel. diff | kind | trials | "
            "not_found | undecided | starts | s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    text = (f"# Rank-constrained memories: measured p_c(kappa)\n\n"
            f"Generated by `python -m experiments.rank.rank_capacity`{state}: "
            f"`validation.estimate_capacity(d, problem, \"optimal\", kappa=kappa, seed={SEED}, "
            f"design=CapacityDesign(\"grid\"), options=CapacityOptions(solver_options={{\"restarts\": R}}))` (R: "
            "column *starts*) in one process and one "
            f"thread, {seconds:.0f} s in all (last column: seconds per row).  Theory: the finite-size "
            f"conjecture `replica.capacity(d, kappa=kappa)` (`notes/finite_size_capacity.md`).  "
            f"`stored` is verified in float64; `not_stored` only comes from the full-rank certificate; "
            f"a trial whose R starts all ended without storing is `not_found` and counted as "
            f"not stored, so a row with `not_found` trials is a LOWER BOUND on the rank-m p_c "
            f"(column *kind*).  `undecided` trials (a budget cut the search) are left out of the fit.  "
            f"The number of starts is the saturated setting of `experiments/rank/README.md`.  A rerun with "
            f"`--store DIR` reuses the trials in the store: then the seconds are those of the rerun.\n\n"
            + head + "\n".join(_row(r) for r in rows) + "\n")
    write_block(PAGE, "rank_capacity", demote_headings(text), "rank_capacity")
    write_block(NOTE, "rank_capacity_summary", note_summary(rows), "rank_capacity")
    return text


def _rel(r) -> float:
    return 100 * (r["p_c"] / r["theory"] - 1)


def note_summary(rows) -> str:
    """The note's table: measured p_c beside the conjecture per kappa, DP and OP, and the ranges of the differences."""
    found = {(r["problem"], r["d"], r["kappa"]): r for r in rows if r["p_c"] is not None}
    dims = sorted({r["d"] for r in rows})
    kappas = sorted({r["kappa"] for r in rows})
    head = ("| $\\kappa$ | " + " | ".join(f"{q.upper()} $d = {d}$" for q in ("dp", "op") for d in dims) + " |\n"
            + "|---" * (1 + 2 * len(dims)) + "|")
    lines = [head]
    for kappa in kappas:
        cells = []
        for q in ("dp", "op"):
            for d in dims:
                r = found.get((q, d, kappa))
                cells.append("-" if r is None else f"{r['p_c']:.1f} vs {r['theory']:.1f} ({_rel(r):+.1f} %)")
        lines.append(f"| {kappa:g} | " + " | ".join(cells) + " |")
    ranges, inside = [], []
    for q in ("dp", "op"):
        mine = [r for key, r in found.items() if key[0] == q]
        if mine:
            ranges.append(f"{q.upper()} {min(map(_rel, mine)):+.1f} to {max(map(_rel, mine)):+.1f} %")
        hits = [r for r in mine if r["p_c_low"] is not None and r["p_c_high"] is not None
                and r["p_c_low"] <= r["theory"] <= r["p_c_high"]]
        where = ", ".join(f"d = {r['d']} kappa = {r['kappa']:g}" for r in hits)
        inside.append(f"{len(hits)} of the {len(mine)} {q.upper()} rows" + (f" ({where})" if hits else ""))
    lines += ["", f"Measured against theory: {'; '.join(ranges)}. The theory lies inside the 95 % interval of "
                  f"{' and '.join(inside)}.  Every row with `not_found` trials is a lower bound (column *kind* "
                  "of the page)."]
    return "\n".join(lines) + "\n"


def _arguments(parser) -> None:
    parser.add_argument("--d", type=int, nargs="+", default=None, help="only these dimensions")
    parser.add_argument("--store", default=None, metavar="DIR",
                        help="folder of a result store (trials reused on a rerun)")


def _measure(job) -> None:
    store = None if job.args.store is None else ResultStore(job.args.store)
    set_threads(1)
    rows = []
    for d, problem, kappa in ROWS:
        if job.args.d is not None and d not in job.args.d:
            continue
        t0 = time.perf_counter()
        est = measure(d, problem, kappa, store)
        theory = replica.capacity(d, kappa=kappa).p_c
        rows.append(summary(d, problem, kappa, est, theory, time.perf_counter() - t0))
        sys.stderr.write(_row(rows[-1]) + "\n")
        DATA.write_text(json.dumps(rows, indent=1) + "\n")
        write(rows, job.elapsed(), done=False)
    job.record(DATA, seed=SEED)


def _render(job) -> None:
    sys.stdout.write(write(json.loads(DATA.read_text()), read_record(PROVENANCE)["wall_time_s"], done=True))


def main(argv=None) -> int:
    return run(__file__, "rank-m p_c(kappa) against the finite-size theory", measure=_measure, render=_render,
               argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
