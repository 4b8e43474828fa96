"""Exact top-k decisions at small d beside the top-k search and ``replica.capacity(d, top_k=k)``.

For every case ``(problem, d, k)`` in ``CASES`` and load ``p`` near the theory's p_c,
``INSTANCES`` independent instances (seeds ``SeedSequence([SEED, d, p, i])``) are decided
twice: by the top-k search (``solve(instance, "optimal", options={"top_k": k})``, whose
``stored`` is certified and whose ``not_found`` is a lower-bound verdict) and by the exact
MILP :func:`validation.top_k_bound.top_k_decision` (box ``1e4``, checked at ``1e5``,
``TIME_LIMIT`` seconds per solve).  The per-instance verdicts go to
``docs/results/top_k_exact.csv``; the page ``docs/top_k_exact.md`` and the summary
``docs/results/top_k_exact.json`` (read by ``docs/tables.py``) are rendered from it:
per load the stored fractions of both, then p_c from the logistic fit
(``validation.capacity.fit.fit_logistic``, 95 % profile-likelihood interval) of the
search (a lower bound) and of the exact verdicts (certified for the box; undecided
instances are left out and counted), beside the theory.  See ``notes/top_k.md``.

Usage::

    python docs/top_k_exact.py            # measure, write the CSV and the page
    python docs/top_k_exact.py --render   # the page from the committed CSV
"""

from __future__ import annotations

import argparse
import csv
import json
import pathlib
import time

import numpy as np

import replica
from validation import make_instance, solve
from validation.capacity.fit import fit_logistic, interval_text
from validation.solvers import set_threads
from validation.top_k_bound import top_k_decision

CASES = (("dp", 3, 2), ("op", 3, 2), ("dp", 4, 2), ("op", 4, 2), ("dp", 3, 5), ("op", 3, 5))
RATIOS = (0.8, 0.9, 1.0, 1.1, 1.25)  # loads p = round(ratio * theory p_c), duplicates dropped
INSTANCES = 10
TIME_LIMIT = 20.0
SEED = 0
HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "results" / "top_k_exact.csv"
PAGE = HERE / "top_k_exact.md"
SUMMARY = HERE / "results" / "top_k_exact.json"
FIELDS = ("problem", "d", "k", "p", "instance", "search_status", "exact_status", "exact_stored", "box_binding",
          "search_seconds", "exact_seconds")


def loads(d, k):
    """Integer loads around the theory p_c (at least ``k + 1`` so that k competitors exist)."""
    p_c = replica.capacity(d, top_k=k).p_c
    return sorted({max(k + 1, round(r * p_c)) for r in RATIOS})


def measure():
    """Decide every instance; rows for the CSV."""
    rows = []
    for problem, d, k in CASES:
        for p in loads(d, k):
            for i in range(INSTANCES):
                inst = make_instance(d, p, problem, seed=np.random.SeedSequence([SEED, d, p, i]))
                t0 = time.perf_counter()
                search = solve(inst, "optimal", options={"top_k": k})
                t1 = time.perf_counter()
                W = search.matrix() if search.status == "stored" else None
                exact = top_k_decision(inst, k, W_search=W, time_limit=TIME_LIMIT)
                rows.append(dict(problem=problem, d=d, k=k, p=p, instance=i, search_status=search.status,
                                 exact_status=exact.status, exact_stored=exact.stored,
                                 box_binding=exact.box_binding, search_seconds=round(t1 - t0, 3),
                                 exact_seconds=round(exact.seconds, 3)))
            done = [r for r in rows if (r["problem"], r["d"], r["k"], r["p"]) == (problem, d, k, p)]
            print(f"{problem} d={d} k={k} p={p}: search stored {sum(r['search_status'] == 'stored' for r in done)}, "
                  f"exact stored {sum(r['exact_status'] == 'stored' for r in done)}, undecided "
                  f"{sum(r['exact_status'] in ('time_limit', 'failed') for r in done)}", flush=True)
    return rows


def write_csv(rows):
    DATA.parent.mkdir(exist_ok=True)
    with DATA.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def read_csv():
    with DATA.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for key in ("d", "k", "p", "instance"):
            r[key] = int(r[key])
        for key in ("search_seconds", "exact_seconds"):
            r[key] = float(r[key])
    return rows


def _fit(points):
    """``(text, status)`` of the logistic fit of ``[(p, stored, decided)]``."""
    p, k, n = (np.array(col) for col in zip(*points))
    if n.sum() == 0:
        return "no decided trials", "none"
    fit = fit_logistic(p, k, n)
    return interval_text(*np.exp([fit.log_p_c, fit.log_p_c_low, fit.log_p_c_high]), fit.status), fit.status


def render(rows):
    """``(page, summary)``: the Markdown page and the per-case summary rows (for ``docs/tables.py``)."""
    cases = list(dict.fromkeys((r["problem"], r["d"], r["k"]) for r in rows))
    total = sum(r["search_seconds"] + r["exact_seconds"] for r in rows)
    lines = ["# Top-k storage decided exactly at small d", "",
             f"Produced by `python docs/top_k_exact.py` from `docs/results/top_k_exact.csv` "
             f"({len(rows)} instances, {total:.0f} s of search and MILP in total, one thread). "
             f"{INSTANCES} independent instances per load; the search is "
             "`solve(instance, 'optimal', options={'top_k': k})`; the exact decision is "
             f"`validation.top_k_decision` (box 1e4 at margin 1, infeasibility checked again at 1e5, "
             f"{TIME_LIMIT:g} s per MILP solve).  \"exact stored\" is certified (a W checked in float64); "
             "\"exact not stored\" is certified for memories in the box; undecided instances ran out of "
             "time.  See `notes/top_k.md`.", "",
             "| problem | d | k | p | p / theory p_c | instances | search stored | exact stored | exact not stored "
             "| undecided | mean MILP s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = ["", "p_c is where half of the instances are stored, from the logistic fit with its 95 % "
               "profile-likelihood interval.  The search's p_c counts `not_found` as not stored: a "
               "**lower bound**.  The exact p_c uses the decided instances only.", "",
               "| problem | d | k | theory p_c | search p_c (lower bound) | exact p_c | undecided | theory vs exact |",
               "|---|---|---|---|---|---|---|---|"]
    records = []
    for problem, d, k in cases:
        theory = replica.capacity(d, top_k=k).p_c
        mine = [r for r in rows if (r["problem"], r["d"], r["k"]) == (problem, d, k)]
        search_pts, exact_pts = [], []
        for p in sorted({r["p"] for r in mine}):
            at = [r for r in mine if r["p"] == p]
            s = sum(r["search_status"] == "stored" for r in at)
            e = sum(r["exact_status"] == "stored" for r in at)
            ns = sum(r["exact_status"] == "not_stored" for r in at)
            u = len(at) - e - ns
            milp_s = np.mean([r["exact_seconds"] for r in at])
            lines.append(f"| {problem.upper()} | {d} | {k} | {p} | {p / theory:.2f} | {len(at)} | {s} | {e} | {ns} "
                         f"| {u} | {milp_s:.1f} |")
            search_pts.append((p, s, len(at)))
            exact_pts.append((p, e, e + ns))
        s_text, _ = _fit(search_pts)
        e_text, e_status = _fit(exact_pts)
        undecided = sum(r["exact_status"] not in ("stored", "not_stored") for r in mine)
        verdict = "no fit" if e_status == "none" else _verdict(theory, exact_pts)
        summary.append(f"| {problem.upper()} | {d} | {k} | {theory:.2f} | {s_text} | {e_text} | {undecided} "
                       f"| {verdict} |")
        records.append(dict(problem=problem, d=d, k=k, theory=theory, search=s_text, exact=e_text,
                            instances=len(mine), undecided=undecided, verdict=verdict))
    return "\n".join(lines + summary) + "\n", records


def _verdict(theory, exact_pts):
    """Theory inside or outside the exact fit's interval."""
    p, k, n = (np.array(col) for col in zip(*exact_pts))
    fit = fit_logistic(p, k, n)
    if fit.status != "ok":
        return f"fit {fit.status}"
    p_c, low, high = np.exp([fit.log_p_c, fit.log_p_c_low, fit.log_p_c_high])
    if low <= theory <= high:
        return "inside the interval"
    side = "above" if theory > high else "below"
    return f"theory {side} by {100 * (theory / p_c - 1):+.1f} %"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", action="store_true", help="write the page from the committed CSV")
    args = parser.parse_args(argv)
    if not args.render:
        set_threads(1)
        write_csv(measure())
    page, records = render(read_csv())
    PAGE.write_text(page)
    SUMMARY.write_text(json.dumps(records, indent=1) + "\n")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
