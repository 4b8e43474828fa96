"""Exact top-k decisions at small d beside the top-k search and ``replica.capacity(d, top_k=k)``.

For every case ``(problem, d, k)`` in ``CASES`` and load ``p`` near the theory's p_c,
``INSTANCES`` independent instances (seeds ``SeedSequence([SEED, d, p, i])``) are decided
three ways: by the top-k search (``solve(instance, "optimal", options={"top_k": k})``,
whose ``stored`` is certified and whose ``not_found`` is a lower-bound verdict), where it
does not store by the same search with ``RESTARTS`` random restarts
(``top_k_restarts``, seed ``SeedSequence([SEED, d, p, i])``), and by the exact MILP
:func:`validation.top_k_bound.top_k_decision` (box ``1e4``, checked at ``1e5``,
``TIME_LIMIT`` seconds per solve, skipped when a search stored).  The per-instance verdicts
go to ``experiments/top_k/top_k_exact.csv``; the page ``experiments/top_k/README.md`` and the summary
``experiments/top_k/top_k_exact.json`` are rendered from it: per load the stored counts, then
p_c from the logistic fit (``validation.capacity.fit.fit_logistic``, 95 %
profile-likelihood interval) of both searches (lower bounds) and of the exact verdicts
(a W from any of the three, or the MILP's proof for the box; undecided instances are left
out and counted, and a range covers both ways of settling them), beside the theory.  See
``notes/top_k.md``.

Usage::

    python -m experiments.top_k.top_k_exact            # measure every case of CASES, write the CSV and the page
    python -m experiments.top_k.top_k_exact --render   # the page from the committed CSV
    python -m experiments.top_k.top_k_exact --searches # both searches again on every committed row (current code),
                                          # the MILP's verdicts kept
    python -m experiments.top_k.top_k_exact --cases dp:5:2 op:5:2 --time-limit 120
                                          # measure only these cases (not yet in the CSV), append
                                          # their rows (with their time limit) and render

The CSV's ``time_limit`` column is the MILP budget of each row (rows written before the
column existed were measured at 20 s and read as such).
"""

from __future__ import annotations

import csv
import json
import pathlib
import sys
import time

import numpy as np

import replica
from validation import make_instance, solve
from validation.capacity.fit import fit_logistic, interval_text
from validation.solvers import set_threads
from validation.bounds.top_k import top_k_decision
from experiments.pages import demote_headings, write_block
from experiments.runner import run

CASES = tuple((problem, d, k) for k in (2, 5) for d in (2, 3, 4) for problem in ("dp", "op"))
RATIOS = (0.8, 0.9, 1.0, 1.1, 1.25)  # loads p = round(ratio * theory p_c), duplicates dropped
INSTANCES = 10
TIME_LIMIT = 20.0
RESTARTS = 16  # random restarts of the top-k search (OptimalOptions.top_k_restarts)
SEED = 0
HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "top_k_exact.csv"
PAGE = HERE / "README.md"
SUMMARY = HERE / "top_k_exact.json"
FIELDS = ("problem", "d", "k", "p", "instance", "search_status", "exact_status", "exact_stored", "box_binding",
          "search_seconds", "exact_seconds", "time_limit", "restart_status", "restart_seconds")


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
                t_search = time.perf_counter() - t0
                restart = restart_search(inst, k, search, (SEED, d, p, i))
                t1 = time.perf_counter()
                W = search.matrix() if search.status == "stored" else restart.matrix() \
                    if restart.status == "stored" else None
                exact = top_k_decision(inst, k, W_search=W, time_limit=time_limit)
                rows.append(dict(problem=problem, d=d, k=k, p=p, instance=i, search_status=search.status,
                                 exact_status=exact.status, exact_stored=exact.stored,
                                 box_binding=exact.box_binding, search_seconds=round(t_search, 3),
                                 exact_seconds=round(exact.seconds, 3), time_limit=time_limit,
                                 restart_status=restart.status,
                                 restart_seconds=round(t1 - t0 - t_search, 3)))
            done = [r for r in rows if (r["problem"], r["d"], r["k"], r["p"]) == (problem, d, k, p)]
            print(f"{problem} d={d} k={k} p={p}: search stored {sum(r['search_status'] == 'stored' for r in done)}, "
                  f"exact stored {sum(r['exact_status'] == 'stored' for r in done)}, undecided "
                  f"{sum(r['exact_status'] in ('time_limit', 'failed') for r in done)}", flush=True)
    return rows


def restart_search(inst, k, search, key):
    """The top-k search with ``RESTARTS`` random restarts (seed ``SeedSequence(key)``); ``search``
    when that already stored (the restarts only run after a first run that does not store)."""
    if search.status == "stored":
        return search
    return solve(inst, "optimal", options={"top_k": k, "top_k_restarts": RESTARTS}, seed=np.random.SeedSequence(key))


def refresh_searches(rows):
    """Rows with both searches measured again by the current code (``search_*`` and
    ``restart_*`` columns); the MILP's columns are kept (its verdicts are facts about the
    instance, and a W it found stays a certificate).  A search that stores an instance the
    MILP calls not stored is a contradiction (the box would bind) and stops the run."""
    out = []
    for r in rows:
        inst = make_instance(r["d"], r["p"], r["problem"], seed=np.random.SeedSequence([SEED, r["d"], r["p"],
                                                                                         r["instance"]]))
        t0 = time.perf_counter()
        search = solve(inst, "optimal", options={"top_k": r["k"]})
        t1 = time.perf_counter()
        restart = restart_search(inst, r["k"], search, (SEED, r["d"], r["p"], r["instance"]))
        if "stored" in (search.status, restart.status) and r["exact_status"] == "not_stored":
            raise RuntimeError(f"contradiction: a search stores an instance the MILP calls not stored: {r}")
        out.append(dict(r, search_status=search.status, search_seconds=round(t1 - t0, 3),
                        restart_status=restart.status, restart_seconds=round(time.perf_counter() - t1, 3)))
    return out


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
        r["restart_status"] = r.get("restart_status") or ""
        r["restart_seconds"] = r.get("restart_seconds") or 0.0
        for key in ("search_seconds", "exact_seconds", "time_limit", "restart_seconds"):
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


def _ends(fit):
    """``(low, high)`` of a fit's interval (95 % PL or separation bracket); ``(0, inf)`` without one."""
    if fit is None or fit.status not in ("ok", "separated"):
        return 0.0, float("inf")
    return float(np.exp(fit.log_p_c_low)), float(np.exp(fit.log_p_c_high))


def undecided_range(points):
    """``(low, high)``: the exact p_c over both ways of settling the undecided instances.

    ``points``: ``[(p, stored, not_stored, undecided)]``.  The undecided instances are
    counted once all as not stored and once all as stored; the range runs from the lower
    end of the first fit's interval to the upper end of the second's (the lower and upper
    ends of both intervals are taken, so the range does not rely on the fit being monotone
    in the counts).  The low end is 0 when the first fit has no interval, the high end
    inf when the second has none.
    """
    p = np.array([pt[0] for pt in points])
    e, ns, u = (np.array([pt[i] for pt in points]) for i in (1, 2, 3))
    n = e + ns + u
    none_stored, all_stored = (_ends(fit_logistic(p, stored, n)) for stored in (e, e + u))
    lows = [lo for lo, _ in (none_stored, all_stored) if lo > 0.0]
    highs = [hi for _, hi in (none_stored, all_stored) if hi < float("inf")]
    low = min(lows) if none_stored[0] > 0.0 else 0.0
    high = max(highs) if all_stored[1] < float("inf") else float("inf")
    return low, high


def range_text(low, high):
    """``"8.2 to 9.1"``, ``"at least 12.1"`` (no upper end) or ``"at most 9.1"`` (no lower end)."""
    if high == float("inf"):
        return "no interval" if low == 0.0 else f"at least {low:.1f}"
    return f"at most {high:.1f}" if low == 0.0 else f"{low:.1f} to {high:.1f}"


def range_verdict(theory, low, high):
    """The theory inside, above or below ``[low, high]`` (the range of :func:`undecided_range`)."""
    if low == 0.0 and high == float("inf"):
        return "not tested (no interval either way)"
    if theory > high:
        return f"above that range by {100 * (theory / high - 1):+.1f} %"
    if theory < low:
        return f"below that range by {100 * (theory / low - 1):+.1f} %"
    return "inside that range"


def search_gap(search_fit, exact_fit):
    """``search p_c / exact p_c - 1`` (negative: the search falls short), or None without two ok fits."""
    if search_fit is None or exact_fit is None or "ok" not in (search_fit.status, exact_fit.status) \
            or search_fit.status != exact_fit.status:
        return None
    return float(np.exp(search_fit.log_p_c - exact_fit.log_p_c) - 1)


def gap_trend(records, key="search_gap", title="The search"):
    """One sentence per ``(problem, k)`` with two or more d: does ``|record[key]|`` shrink as d grows?"""
    out = []
    for problem, k in dict.fromkeys((r["problem"], r["k"]) for r in records):
        pts = sorted((r["d"], r[key]) for r in records
                     if (r["problem"], r["k"]) == (problem, k) and r.get(key) is not None)
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
        out.append(f"{problem.upper()}, k = {k}, {title.lower()}: p_c {steps} from the exact p_c "
                   f"(point estimates); the gap {trend}.")
    return out


def load_counts(at):
    """Counts of one load: ``s`` search stored, ``sr`` search with restarts stored (None if not
    measured), ``e`` stored by any certificate (the MILP's W or a restart's), ``ns`` MILP not
    stored, ``u`` undecided."""
    s = sum(r["search_status"] == "stored" for r in at)
    sr = None if any(not r["restart_status"] for r in at) else sum(r["restart_status"] == "stored" for r in at)
    stored = [r["exact_status"] == "stored" or r["restart_status"] == "stored" for r in at]
    clash = [r for r, st in zip(at, stored) if st and r["exact_status"] == "not_stored"]
    if clash:
        raise ValueError(f"a W stores an instance the MILP calls not stored (the box binds): {clash[0]}")
    e = sum(stored)
    ns = sum(r["exact_status"] == "not_stored" for r in at)
    return dict(s=s, sr=sr, e=e, ns=ns, u=len(at) - e - ns)


def _page_head(rows):
    total = sum(r["search_seconds"] + r["exact_seconds"] + r["restart_seconds"] for r in rows)
    limits = ", ".join(f"{t:g} s" for t in sorted({r["time_limit"] for r in rows}))
    return ["# Top-k storage decided exactly at small d", "",
            f"Produced by `python -m experiments.top_k.top_k_exact` from `experiments/top_k/top_k_exact.csv` "
            f"({len(rows)} instances, {total:.0f} s of search and MILP in total, one thread). "
            f"{INSTANCES} independent instances per load; the search is "
            "`solve(instance, 'optimal', options={'top_k': k})`, and where it does not store, again with "
            f"`top_k_restarts={RESTARTS}` (random restarts); the exact decision is "
            f"`validation.top_k_decision` (box 1e4 at margin 1, infeasibility checked again at 1e5; "
            f"time limit per MILP solve: {limits}, per case in the tables).  \"exact stored\" is certified "
            "(a W checked in float64, found by the search, its restarts or the MILP); \"exact not stored\" is "
            "certified for memories in the box; undecided instances ran out of MILP time.  See "
            "`notes/top_k.md`.", "",
            "| problem | d | k | p | p / theory p_c | instances | search stored | with restarts | exact stored "
            "| exact not stored | undecided | mean MILP s | MILP limit s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]


SUMMARY_HEAD = [
    "", "p_c is where half of the instances are stored, from the logistic fit with its 95 % "
    "profile-likelihood interval.  The search's p_c counts `not_found` as not stored: a "
    "**lower bound**, with and without restarts.  The exact p_c uses the decided instances only.  \"theory vs "
    "exact\" says where `replica.capacity(d, top_k=k).p_c` lies against the exact interval and by how much "
    "(theory / exact p_c - 1); the gaps are search p_c / exact p_c - 1.  Where instances are "
    "undecided, \"undecided either way\" fits them once all as not stored and once all as stored and "
    "runs from the lower end of the one interval to the upper end of the other: the exact p_c lies in "
    "it whatever the undecided turn out to be (up to the intervals' 95 %), and the verdict is taken "
    "against it.", "",
    "| problem | d | k | theory p_c | search p_c (lower bound) | with restarts (lower bound) | exact p_c (decided) "
    "| undecided | exact p_c, undecided either way | theory vs exact | search gap | restarts gap |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|"]


def _gap_text(gap):
    return "n/a" if gap is None else f"{100 * gap:+.1f} %"


def _case(problem, d, k, mine, lines):
    """The per-load lines of one case (appended to ``lines``), its summary line and record."""
    theory = replica.capacity(d, top_k=k).p_c
    pts = {"search": [], "restarts": [], "exact": [], "split": []}
    for p in sorted({r["p"] for r in mine}):
        at = [r for r in mine if r["p"] == p]
        c = load_counts(at)
        milp_s = np.mean([r["exact_seconds"] for r in at])
        limit = "/".join(f"{t:g}" for t in sorted({r["time_limit"] for r in at}))
        sr = "n/a" if c["sr"] is None else c["sr"]
        lines.append(f"| {problem.upper()} | {d} | {k} | {p} | {p / theory:.2f} | {len(at)} | {c['s']} | {sr} "
                     f"| {c['e']} | {c['ns']} | {c['u']} | {milp_s:.1f} | {limit} |")
        pts["search"].append((p, c["s"], len(at)))
        if c["sr"] is not None:
            pts["restarts"].append((p, c["sr"], len(at)))
        pts["exact"].append((p, c["e"], c["e"] + c["ns"]))
        pts["split"].append((p, c["e"], c["ns"], c["u"]))
    s_text, s_fit = _fit(pts["search"])
    r_text, r_fit = _fit(pts["restarts"]) if len(pts["restarts"]) == len(pts["search"]) else ("n/a", None)
    e_text, e_fit = _fit(pts["exact"])
    undecided = sum(u for *_, u in pts["split"])
    v_text, rel = verdict(theory, e_fit)
    low, high = undecided_range(pts["split"])
    if undecided:
        v_text = range_verdict(theory, low, high) + ("" if rel is None else
                                                     f" ({100 * rel:+.1f} % from the decided p_c)")
    gap, r_gap = search_gap(s_fit, e_fit), search_gap(r_fit, e_fit)
    line = (f"| {problem.upper()} | {d} | {k} | {theory:.2f} | {s_text} | {r_text} | {e_text} | {undecided} "
            f"| {range_text(low, high) if undecided else 'as decided'} | {v_text} | {_gap_text(gap)} "
            f"| {_gap_text(r_gap)} |")
    record = dict(problem=problem, d=d, k=k, theory=theory, search=s_text, restarts=r_text, exact=e_text,
                  instances=len(mine), loads=sorted({r["p"] for r in mine}), undecided=undecided,
                  undecided_range=[low, None if high == float("inf") else high],
                  undecided_text=range_text(low, high), verdict=v_text, theory_vs_exact=rel, search_gap=gap,
                  restarts_gap=r_gap, top_k_restarts=RESTARTS)
    return line, record


def render(rows):
    """``(page, summary)``: the Markdown page and the per-case summary rows (``experiments/top_k/top_k_exact.json``)."""
    cases = sorted(dict.fromkeys((r["problem"], r["d"], r["k"]) for r in rows), key=lambda c: (c[2], c[1], c[0]))
    lines, summary, records = _page_head(rows), list(SUMMARY_HEAD), []
    for problem, d, k in cases:
        mine = [r for r in rows if (r["problem"], r["d"], r["k"]) == (problem, d, k)]
        line, record = _case(problem, d, k, mine, lines)
        summary.append(line)
        records.append(record)
    for key, title in (("search_gap", "The search"), ("restarts_gap", "The search with restarts")):
        trend = gap_trend(records, key, title)
        if trend:
            summary += ["", f"{title} against exact, as d grows (cases with an interval on both sides):", ""]
            summary += [f"* {t}" for t in trend]
    return "\n".join(lines + summary) + "\n", records


def _arguments(parser) -> None:
    parser.add_argument("--cases", nargs="+", metavar="PROBLEM:D:K",
                        help="measure only these cases and append them to the CSV (e.g. dp:5:2 op:5:2)")
    parser.add_argument("--searches", action="store_true",
                        help=f"measure both searches (plain and {RESTARTS} restarts) again on every committed row "
                             "with the current code, keep the MILP columns, then render")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                        help=f"seconds per MILP solve of the measured cases (default {TIME_LIMIT:g})")


def _measure(job) -> int:
    args = job.args
    try:
        cases = None if args.cases is None else [parse_case(c) for c in args.cases]
        if not (0 < args.time_limit < float("inf")):
            raise ValueError(f"--time-limit must be positive and finite, got {args.time_limit}")
        if cases is not None and args.searches:
            raise ValueError("--cases and --searches are two different runs; give one")
        old = read_csv() if cases is not None else None
        if cases is not None:
            append_rows(old, [dict(problem=c[0], d=c[1], k=c[2]) for c in cases])  # refuse before measuring
    except ValueError as exc:  # refused before anything is measured
        print(f"top_k_exact.py: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    set_threads(1)
    if args.searches:
        write_csv(refresh_searches(read_csv()))
    else:
        new = measure(CASES if cases is None else cases, args.time_limit)
        write_csv(new if cases is None else append_rows(old, new))
    # one record for the CSV and the summary top_k_exact.json rendered from it
    job.record(DATA, seed=SEED, time_limit=args.time_limit, summary="top_k_exact.json is rendered from the CSV")
    return 0


def _render(job) -> None:
    page, records = render(read_csv())
    write_block(PAGE, "top_k_exact", demote_headings(page), "top_k_exact")
    SUMMARY.write_text(json.dumps(records, indent=1) + "\n")
    print(f"wrote {PAGE}")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
