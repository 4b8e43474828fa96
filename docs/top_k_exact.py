"""Exact top-k decisions at small d beside the top-k search and ``replica.capacity(d, top_k=k)``.

For every case ``(problem, d, k)`` in ``CASES`` and load ``p`` near the theory's p_c,
``INSTANCES`` independent instances (seeds ``SeedSequence([SEED, d, p, i])``) are decided
twice: by the top-k search (``solve(instance, "optimal", options={"top_k": k})``, whose
``stored`` is certified and whose ``not_found`` is a lower-bound verdict) and by the exact
MILP :func:`validation.top_k_bound.top_k_decision` (box ``1e4``, checked at ``1e5``,
``TIME_LIMIT`` seconds per solve).  The per-instance verdicts go to
``docs/results/top_k_exact.csv``; the page ``docs/top_k_exact.md`` and the summary
``docs/results/top_k_exact.json`` are rendered from it:
per load the stored fractions of both, then p_c from the logistic fit
(``validation.capacity.fit.fit_logistic``, 95 % profile-likelihood interval) of the
search (a lower bound) and of the exact verdicts (certified for the box; undecided
instances are left out and counted), beside the theory.  See ``notes/top_k.md``.

Usage::

    python docs/top_k_exact.py            # measure every case of CASES, write the CSV and the page
    python docs/top_k_exact.py --render   # the page from the committed CSV
    python docs/top_k_exact.py --cases dp:5:2 op:5:2 --time-limit 120
                                          # measure only these cases (not yet in the CSV), append
                                          # their rows (with their time limit) and render

The CSV's ``time_limit`` column is the MILP budget of each row (rows written before the
column existed were measured at 20 s and read as such).
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
          "search_seconds", "exact_seconds", "time_limit")


def loads(d, k):
    """Integer loads around the theory p_c (at least ``k + 1`` so that k competitors exist)."""
    p_c = replica.capacity(d, top_k=k).p_c
    return sorted({max(k + 1, round(r * p_c)) for r in RATIOS})


def parse_case(text):
    """``"dp:5:2"`` -> ``("dp", 5, 2)``; ValueError naming ``--cases`` otherwise."""
    parts = text.split(":")
    try:
        problem, d, k = parts[0].lower(), int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        problem = d = k = None
    if len(parts) != 3 or problem not in ("dp", "op") or d < 2 or k < 2:
        raise ValueError(f"--cases entries must be PROBLEM:D:K with PROBLEM dp or op, D >= 2, K >= 2, got {text!r}")
    return problem, d, k


def measure(cases=CASES, time_limit=TIME_LIMIT):
    """Decide every instance of ``cases``; rows for the CSV."""
    rows = []
    for problem, d, k in cases:
        for p in loads(d, k):
            for i in range(INSTANCES):
                inst = make_instance(d, p, problem, seed=np.random.SeedSequence([SEED, d, p, i]))
                t0 = time.perf_counter()
                search = solve(inst, "optimal", options={"top_k": k})
                t1 = time.perf_counter()
                W = search.matrix() if search.status == "stored" else None
                exact = top_k_decision(inst, k, W_search=W, time_limit=time_limit)
                rows.append(dict(problem=problem, d=d, k=k, p=p, instance=i, search_status=search.status,
                                 exact_status=exact.status, exact_stored=exact.stored,
                                 box_binding=exact.box_binding, search_seconds=round(t1 - t0, 3),
                                 exact_seconds=round(exact.seconds, 3), time_limit=time_limit))
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


def read_csv(path=None):
    """Rows of the CSV; a row without ``time_limit`` (written before the column) gets 20 s."""
    with (DATA if path is None else path).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for key in ("d", "k", "p", "instance"):
            r[key] = int(r[key])
        r["time_limit"] = r.get("time_limit") or TIME_LIMIT
        for key in ("search_seconds", "exact_seconds", "time_limit"):
            r[key] = float(r[key])
    return rows


def append_rows(old, new):
    """``old + new``; ValueError if a case of ``new`` is in ``old`` already (old rows are never re-measured)."""
    have = {(r["problem"], r["d"], r["k"]) for r in old}
    clash = sorted({(r["problem"], r["d"], r["k"]) for r in new} & have)
    if clash:
        raise ValueError(f"--cases: {clash} already in {DATA.name}; remove those rows first to re-measure")
    return list(old) + list(new)


def _fit(points):
    """``(text, fit or None)``: the logistic fit of ``[(p, stored, decided)]`` and its text."""
    p, k, n = (np.array(col) for col in zip(*points))
    if n.sum() == 0:
        return "no decided trials", None
    fit = fit_logistic(p, k, n)
    return interval_text(*np.exp([fit.log_p_c, fit.log_p_c_low, fit.log_p_c_high]), fit.status), fit


def verdict(theory, fit):
    """``(text, relative)``: the theory inside, above or below the exact fit's interval, and
    ``theory / exact p_c - 1`` (None without a fit with an interval)."""
    if fit is None:
        return "no fit", None
    if fit.status != "ok":
        return f"no interval (fit {fit.status})", None
    p_c, low, high = np.exp([fit.log_p_c, fit.log_p_c_low, fit.log_p_c_high])
    rel = float(theory / p_c - 1)
    if low <= theory <= high:
        return f"inside the interval ({100 * rel:+.1f} % from the exact p_c)", rel
    side = "above" if theory > high else "below"
    return f"{side} the interval by {100 * rel:+.1f} %", rel


def search_gap(search_fit, exact_fit):
    """``search p_c / exact p_c - 1`` (negative: the search falls short), or None without two ok fits."""
    if search_fit is None or exact_fit is None or "ok" not in (search_fit.status, exact_fit.status) \
            or search_fit.status != exact_fit.status:
        return None
    return float(np.exp(search_fit.log_p_c - exact_fit.log_p_c) - 1)


def gap_trend(records):
    """One sentence per ``(problem, k)`` with two or more d: does ``|search gap|`` shrink as d grows?"""
    out = []
    for problem, k in dict.fromkeys((r["problem"], r["k"]) for r in records):
        pts = sorted((r["d"], r["search_gap"]) for r in records
                     if (r["problem"], r["k"]) == (problem, k) and r["search_gap"] is not None)
        if len(pts) < 2:
            continue
        gaps = [abs(g) for _, g in pts]
        steps = ", ".join(f"{100 * g:+.1f} % at d = {d}" for d, g in pts)
        if all(b < a for a, b in zip(gaps, gaps[1:])):
            trend = "shrinks with d"
        elif all(b > a for a, b in zip(gaps, gaps[1:])):
            trend = "grows with d"
        else:
            trend = "does not change monotonically with d"
        out.append(f"{problem.upper()}, k = {k}: the search's p_c is {steps} from the exact p_c "
                   f"(point estimates); the gap {trend}.")
    return out


def render(rows):
    """``(page, summary)``: the Markdown page and the per-case summary rows (``docs/results/top_k_exact.json``)."""
    cases = list(dict.fromkeys((r["problem"], r["d"], r["k"]) for r in rows))
    total = sum(r["search_seconds"] + r["exact_seconds"] for r in rows)
    limits = ", ".join(f"{t:g} s" for t in sorted({r["time_limit"] for r in rows}))
    lines = ["# Top-k storage decided exactly at small d", "",
             f"Produced by `python docs/top_k_exact.py` from `docs/results/top_k_exact.csv` "
             f"({len(rows)} instances, {total:.0f} s of search and MILP in total, one thread). "
             f"{INSTANCES} independent instances per load; the search is "
             "`solve(instance, 'optimal', options={'top_k': k})`; the exact decision is "
             f"`validation.top_k_decision` (box 1e4 at margin 1, infeasibility checked again at 1e5; "
             f"time limit per MILP solve: {limits}, per case in the tables).  \"exact stored\" is certified "
             "(a W checked in float64); \"exact not stored\" is certified for memories in the box; undecided "
             "instances ran out of time.  See `notes/top_k.md`.", "",
             "| problem | d | k | p | p / theory p_c | instances | search stored | exact stored | exact not stored "
             "| undecided | mean MILP s | MILP limit s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = ["", "p_c is where half of the instances are stored, from the logistic fit with its 95 % "
               "profile-likelihood interval.  The search's p_c counts `not_found` as not stored: a "
               "**lower bound**.  The exact p_c uses the decided instances only.  \"theory vs exact\" says "
               "where `replica.capacity(d, top_k=k).p_c` lies against the exact interval and by how much "
               "(theory / exact p_c - 1); \"search gap\" is search p_c / exact p_c - 1.", "",
               "| problem | d | k | theory p_c | search p_c (lower bound) | exact p_c | undecided | theory vs exact "
               "| search gap |", "|---|---|---|---|---|---|---|---|---|"]
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
            limit = "/".join(f"{t:g}" for t in sorted({r["time_limit"] for r in at}))
            lines.append(f"| {problem.upper()} | {d} | {k} | {p} | {p / theory:.2f} | {len(at)} | {s} | {e} | {ns} "
                         f"| {u} | {milp_s:.1f} | {limit} |")
            search_pts.append((p, s, len(at)))
            exact_pts.append((p, e, e + ns))
        s_text, s_fit = _fit(search_pts)
        e_text, e_fit = _fit(exact_pts)
        undecided = sum(r["exact_status"] not in ("stored", "not_stored") for r in mine)
        v_text, rel = verdict(theory, e_fit)
        gap = search_gap(s_fit, e_fit)
        gap_text = "n/a" if gap is None else f"{100 * gap:+.1f} %"
        summary.append(f"| {problem.upper()} | {d} | {k} | {theory:.2f} | {s_text} | {e_text} | {undecided} "
                       f"| {v_text} | {gap_text} |")
        records.append(dict(problem=problem, d=d, k=k, theory=theory, search=s_text, exact=e_text,
                            instances=len(mine), undecided=undecided, verdict=v_text,
                            theory_vs_exact=rel, search_gap=gap))
    trend = gap_trend(records)
    if trend:
        summary += ["", "Search against exact, as d grows (cases with an interval on both sides):", ""]
        summary += [f"* {t}" for t in trend]
    return "\n".join(lines + summary) + "\n", records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", action="store_true", help="write the page from the committed CSV")
    parser.add_argument("--cases", nargs="+", metavar="PROBLEM:D:K",
                        help="measure only these cases and append them to the CSV (e.g. dp:5:2 op:5:2)")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                        help=f"seconds per MILP solve of the measured cases (default {TIME_LIMIT:g})")
    args = parser.parse_args(argv)
    try:
        cases = None if args.cases is None else [parse_case(c) for c in args.cases]
        if not (0 < args.time_limit < float("inf")):
            raise ValueError(f"--time-limit must be positive and finite, got {args.time_limit}")
        if args.render and cases is not None:
            raise ValueError("--cases measures; it cannot be combined with --render")
        old = read_csv() if cases is not None else None
        if cases is not None:
            append_rows(old, [dict(problem=c[0], d=c[1], k=c[2]) for c in cases])  # refuse before measuring
    except ValueError as exc:
        parser.exit(2, f"top_k_exact.py: error: {exc}\n")
    if not args.render:
        set_threads(1)
        new = measure(CASES if cases is None else cases, args.time_limit)
        write_csv(new if cases is None else append_rows(old, new))
    page, records = render(read_csv())
    PAGE.write_text(page)
    SUMMARY.write_text(json.dumps(records, indent=1) + "\n")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
