"""Saturation of the rank-m search: the fraction stored against the number of starts.

For OP and DP at d = 16 and 32, kappa = 0.25 and 0.5, and three loads around the
finite-size theory ``replica.capacity(d, kappa=kappa).p_c`` (0.9, 1.0 and 1.1 times it),
this script solves ``TRIALS[d]`` instances with
``validation.solve(instance, "optimal", kappa=kappa, restarts=MAX_STARTS, refine=False)``
(one process, one thread).  The search runs its starts in a fixed order and stops at
the first that stores (``notes/rank_search.md``), and a start does not depend on how
many starts are planned, so one run with ``MAX_STARTS`` starts gives, for every
``R <= MAX_STARTS``, the verdict of the search with ``restarts=R``: stored iff the
storing start (``info["stored_start"]``) is below ``R``.  The page
``experiments/rank/README.md`` gives P(stored) with its 95 % Wilson interval for
R = 1, 2, 4, 8, 16, 32, the counts of ``not_stored`` (full-rank certificate),
``not_found`` (lower-bound verdict) and ``undecided`` trials, and the saturation
point: the smallest R from which on every P(stored | R') lies in the interval of
P(stored | 32).  A summary (where the stored instances were stored, what fewer starts lose)
goes into section 7 of ``notes/rank_search.md``.

The per-trial records are kept (and reused on a rerun) in ``experiments/rank/rank_saturation.jsonl``, the
committed data, with a provenance record; ``--render`` rewrites the page block from them without solving.

Usage::

    python -m experiments.rank.rank_saturation              # measure (about 12 min), write the data and the page
    python -m experiments.rank.rank_saturation --records F  # per-trial records kept (and reused) in F instead
    python -m experiments.rank.rank_saturation --render     # the page from the committed data
"""

from __future__ import annotations

import json
import pathlib
import sys

import replica
from validation import make_instance, solve
from validation.figures import wilson_interval
from validation.solvers import set_threads
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import run

SEED = 0
MAX_STARTS = 32
STARTS = (1, 2, 4, 8, 16, 32)
LOADS = (0.9, 1.0, 1.1)
TRIALS = {16: 24, 32: 12}
TIME_LIMIT = 600.0
CONFIGS = tuple((d, problem, kappa) for d in (16, 32) for kappa in (0.5, 0.25) for problem in ("dp", "op"))
HERE = pathlib.Path(__file__).resolve().parent
PAGE = HERE / "README.md"
NOTE = HERE.parent.parent / "notes" / "rank_search.md"
DATA, PROVENANCE = HERE / "rank_saturation.jsonl", HERE / "rank_saturation.provenance.json"


def _key(d, problem, kappa, p, trial):
    return f"{d}/{problem}/{kappa}/{p}/{trial}"


def run_trial(d, problem, kappa, p, trial) -> dict:
    """One instance, one search with ``MAX_STARTS`` starts: the record the page is built from."""
    inst = make_instance(d, p, problem, seed=SEED * 1_000_003 + trial)
    sol = solve(inst, "optimal", kappa=kappa, restarts=MAX_STARTS, refine=False, seed=SEED + trial,
                time_limit=TIME_LIMIT)
    return {"key": _key(d, problem, kappa, p, trial), "status": sol.status,
            "stored_start": sol.info.get("stored_start"), "starts_tried": sol.info.get("starts_tried"),
            "seconds": sol.seconds}


def stored_within(records, starts) -> tuple[int, int]:
    """(stored, decided) of the search with ``starts`` starts, from the ``MAX_STARTS`` records.

    An ``undecided`` record is left out of both counts unless it stored within ``starts``
    starts (it cannot have: an undecided search stored at no start).
    """
    stored = sum(r["stored_start"] is not None and r["stored_start"] < starts for r in records)
    decided = sum(r["status"] != "undecided" for r in records)
    return stored, decided


def saturation_point(records) -> int | None:
    """Smallest R in ``STARTS`` from which on every P(stored | R') lies in the interval at ``MAX_STARTS``."""
    s_max, n = stored_within(records, MAX_STARTS)
    if n == 0:
        return None
    low, high = wilson_interval(s_max, n)
    inside = [low - 1e-12 <= stored_within(records, r)[0] / n <= high + 1e-12 for r in STARTS]
    for i, r in enumerate(STARTS):
        if all(inside[i:]):
            return r
    return None  # pragma: no cover - R = MAX_STARTS is always inside its own interval


def _cell(records, starts) -> str:
    s, n = stored_within(records, starts)
    if n == 0:
        return "-"
    low, high = wilson_interval(s, n)
    return f"{s / n:.2f} [{low:.2f}, {high:.2f}]"


def table(results) -> str:
    """Markdown: one row per (config, load)."""
    head = ("| problem | d | kappa | p (load / p_c theory) | " + " | ".join(f"R = {r}" for r in STARTS)
            + " | saturated at R | not_stored / not_found / undecided | trials | s per trial |")
    out = [head, "|" + "---|" * (len(STARTS) + 8)]
    for (d, problem, kappa, p, load), records in results:
        counts = [sum(r["status"] == s for r in records) for s in ("not_stored", "not_found", "undecided")]
        sat = saturation_point(records)
        seconds = sum(r["seconds"] for r in records) / max(1, len(records))
        out.append(f"| {problem.upper()} | {d} | {kappa:g} | {p} ({load:.2f}) | "
                   + " | ".join(_cell(records, r) for r in STARTS)
                   + f" | {'-' if sat is None else sat} | {' / '.join(map(str, counts))} | {len(records)} | "
                   f"{seconds:.1f} |")
    return "\n".join(out) + "\n"


def write(results, seconds, done) -> str:
    state = "" if done else " (partial: the run was still going when this was written)"
    text = (f"# Saturation of the rank-m search\n\n"
            f"Generated by `python -m experiments.rank.rank_saturation`{state} in one process and one thread, "
            f"{seconds:.0f} s in all.  Per row: `TRIALS` instances "
            f"(`make_instance(d, p, problem, seed=trial)`), each solved once by "
            f"`solve(instance, \"optimal\", kappa=kappa, restarts={MAX_STARTS}, refine=False, "
            f"seed=trial, time_limit={TIME_LIMIT:g})`; the column R = r is the verdict of the "
            f"search with `restarts=r` (the starts run in a fixed order and stop at the first "
            f"that stores, so the first r starts of the {MAX_STARTS}-start run are that search).  "
            f"Cells: P(stored) [95 % Wilson interval] over the decided trials.  `stored` is "
            f"verified in float64; `not_stored` is the full-rank certificate; `not_found` means "
            f"that all {MAX_STARTS} starts ended without storing -- a lower-bound verdict, not a "
            f"certificate -- so every P(stored) here is a lower bound on the fraction of "
            f"instances storable at rank kappa d.  *Saturated at R*: the smallest R from which "
            f"on every P(stored | R') lies in the interval of P(stored | {MAX_STARTS}).  Loads: "
            f"multiples of the finite-size theory `replica.capacity(d, kappa=kappa).p_c` "
            f"(`notes/alpha_c_kappa.md`).\n\n" + table(results))
    write_block(PAGE, "rank_saturation", demote_headings(text), "rank_saturation")
    write_block(NOTE, "rank_saturation_summary", summary(results), "rank_saturation")
    return text


def _plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary(results) -> str:
    """The note's summary of the run: where the stored instances were stored, and what fewer starts lose."""
    records = [r for _, rs in results for r in rs]
    first = [r["stored_start"] for r in records if r["stored_start"] is not None]
    by = {"start 0": sum(s == 0 for s in first), "start 1": sum(s == 1 for s in first),
          "starts 2-7": sum(2 <= s < 8 for s in first), f"starts 8-{MAX_STARTS - 1}": sum(s >= 8 for s in first)}
    counts = {s: sum(r["status"] == s for r in records) for s in ("not_stored", "not_found", "undecided")}
    stored = len(first)
    lines = [f"* {stored} of {len(records)} instances stored: "
             + ", ".join(f"{n} by {where}" for where, n in by.items()) + ". "
             + ", ".join(f"{n} `{s}`" for s, n in counts.items()) + "."]
    losses = []
    for r in (8, 1):
        lost = stored - sum(s < r for s in first)
        losses.append(f"`restarts={r}` loses {lost} of the {stored} ({100 * lost / max(1, stored):.1f} %)")
    change = max(results, key=lambda item: (stored_within(item[1], MAX_STARTS)[0] - stored_within(item[1], 1)[0])
                 / max(1, stored_within(item[1], 1)[1]))
    (d, problem, kappa, p, load), rs = change
    one, n = stored_within(rs, 1)
    full, _ = stored_within(rs, MAX_STARTS)
    lines.append(f"* {losses[0]}, {losses[1]}. The largest change of P(stored) in one row: {problem.upper()}, $d = {d}$, "
                 f"$\\kappa = {kappa:g}$ (rank {int(round(kappa * d))}) at {load:.1f} $p_c$, {one} of {n} stored at "
                 f"$R = 1$ and {full} of {n} at $R = {MAX_STARTS}$.")
    for d in sorted({key[0] for key, _ in results}):
        late = sum(r["stored_start"] is not None and r["stored_start"] > 0
                   for key, rs in results if key[0] == d for r in rs)
        lines.append(f"* At $d = {d}$, {_plural(late, 'instance')} needed a start after the first.")
    return "\n".join(lines) + "\n"


def _load_records(path):
    if path is None or not path.exists():
        return {}
    with path.open() as fh:
        return {r["key"]: r for r in map(json.loads, fh) if r}


def _arguments(parser) -> None:
    parser.add_argument("--records", type=pathlib.Path, default=DATA,
                        help="JSON-lines file of per-trial records (reused on a rerun; default: the committed data)")


def _results(job) -> list:
    """Every configuration with its trial records; a trial not recorded yet is solved (not with --render)."""
    records_file = job.args.records
    set_threads(1)
    cache = _load_records(records_file)
    results = []
    for d, problem, kappa in CONFIGS:
        p_theory = replica.capacity(d, kappa=kappa).p_c
        for load in LOADS:
            p = int(round(load * p_theory))
            records = []
            for trial in range(TRIALS[d]):
                key = _key(d, problem, kappa, p, trial)
                if key not in cache:
                    if job.render_only:
                        raise SystemExit(f"{records_file} has no record {key}: measure again (without --render)")
                    cache[key] = run_trial(d, problem, kappa, p, trial)
                    with records_file.open("a") as fh:
                        fh.write(json.dumps(cache[key]) + "\n")
                records.append(cache[key])
            results.append(((d, problem, kappa, p, load), records))
            if not job.render_only:
                sys.stderr.write(f"{problem} d={d} kappa={kappa} p={p}: {stored_within(records, MAX_STARTS)} "
                                 f"{job.elapsed():.0f} s\n")
                write(results, job.elapsed(), done=False)
    return results


def _measure(job) -> None:
    results = _results(job)
    seconds = job.elapsed()
    if job.args.records == DATA:
        job.record(DATA, seed=SEED, seconds=seconds)
    sys.stdout.write(write(results, seconds, done=True))


def _render(job) -> None:
    if job.render_only:  # a measurement has written the page with its own time
        sys.stdout.write(write(_results(job), read_record(PROVENANCE)["wall_time_s"], done=True))


def main(argv=None) -> int:
    return run(__file__, "saturation of the rank-m search", measure=_measure, render=_render, argv=argv,
               arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
