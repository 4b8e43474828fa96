"""Generate the results tables of the README and the docs from committed result files.

Every table a reader sees in ``README.md`` (between the ``BEGIN generated`` and
``END generated`` markers) and on ``experiments/capacity/README.md`` is written by this script
from the CSV files of a committed reproduction run (``experiments/reproduction/full/``, ``experiments/reproduction/quick/``) and
their ``provenance.json`` (command, code commit, seed, trials, date), from the records
of the single capacity sweeps of ``benchmarks/bench_goals.py`` (``benchmarks/goals/sweep_*.json``:
command, estimate, wall time, date, commit), and from the DP estimates of both candidate
generators (``experiments/capacity/dp_generators.json``, page ``experiments/capacity/README.md``).  Nothing in
those tables is typed by hand.

Usage::

    python -m experiments.capacity.headline            # rewrite the generated blocks and pages
    python -m experiments.capacity.headline --check    # exit 1 (and show a diff) if a committed table is stale

CI runs ``--check``: a changed result file without regenerated tables fails the build.

Interval kinds: the fit statuses, as defined once in
``validation.capacity.fit.FIT_STATUS_MEANINGS`` (and the glossary).
"""

from __future__ import annotations

import csv
import difflib
import json
import sys
from pathlib import Path

from validation.capacity.fit import FIT_STATUS_MEANINGS
from validation.capacity.fit import interval_text as fit_interval_text
from validation.capacity.fit import separation_bracket

from experiments.pages import demote_headings, replace_block
from experiments.provenance import read_record
from experiments.runner import run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
README = ROOT / "README.md"
CAPACITY_PAGE = HERE / "README.md"
ZIPF_NOTE = ROOT / "notes" / "zipf.md"
ZIPF_DATA = ROOT / "experiments" / "zipf" / "zipf.json"
ACCURACY_NOTE = ROOT / "notes" / "recall_accuracy.md"
ACCURACY_DATA = ROOT / "experiments" / "accuracy" / "accuracy_search.csv"
TOP_K_NOTE = ROOT / "notes" / "top_k.md"
TOP_K_DATA = ROOT / "experiments" / "top_k" / "top_k_exact.json"
SWEEP_RECORDS = ROOT / "benchmarks" / "goals"
DP_GENERATORS_DATA = HERE / "dp_generators.json"
FULL_RUN = ROOT / "experiments" / "reproduction" / "full"
EXPERIMENT = "headline"


# the headline rows: (problem, solver, d) of the full run's capacity table
HEADLINE_ROWS = (("dp", "optimal", 64), ("op", "optimal", 64), ("dp", "optimal", 128), ("op", "optimal", 128),
                 ("dp", "optimal", 256), ("op", "optimal", 256), ("op", "hebbian", 64), ("op", "hebbian", 128))
MEMORY = {"optimal": "optimal", "hebbian": "Hebbian"}


def read_run(folder: Path):
    """The capacity rows (each with its success curve) and the provenance of one committed run."""
    meta = json.loads((folder / "provenance.json").read_text())
    with open(folder / "capacity.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with open(folder / "success_curves.csv", newline="") as fh:
        curves = list(csv.DictReader(fh))
    for r in rows:
        key = (r["problem"], r["solver"], r["d"], float(r["kappa"]))
        r["curve"] = [c for c in curves if (c["problem"], c["solver"], c["d"], float(c["kappa"])) == key]
    return rows, meta


def interval_text(row) -> str:
    """p_c with its interval, labelled by the kind of interval the fit status gives.

    A ``separated`` fit shows the two loads of its curve that bracket p_c (all trials
    stored at the lower, none at the upper).
    """
    low, high = float(row["p_c_low"]), float(row["p_c_high"])
    if row["status"] == "separated" and (bracket := separation_bracket(row.get("curve", ()))) is not None:
        low, high = bracket
    return fit_interval_text(float(row["p_c"]), low, high, row["status"])


def rel_diff(row) -> float:
    """(measured p_c - theory p_c) / theory p_c, from the row's own numbers."""
    return (float(row["p_c"]) - float(row["theory_p_c"])) / float(row["theory_p_c"])


def capacity_row(row) -> str:
    theory = float(row["theory_p_c"])
    diff = rel_diff(row)
    measured = interval_text(row)
    diff_text = f"{100 * diff:+.1f} %" if row["status"] == "ok" else "(not a measurement)"
    return (f"| {MEMORY.get(row['solver'], row['solver'])} {row['problem'].upper()} | {int(row['d'])} | "
            f"{measured} | {theory:.1f} | {diff_text} | {int(row['trials'])} |")


def headline_table(rows, meta, link: str, sweeps=()) -> list[str]:
    by_key = {(r["problem"], r["solver"], int(r["d"])): r for r in rows if float(r["kappa"]) == 1.0}
    out = [
        "| memory | d | measured p_c | theory p_c | difference | trials |",
        "|---|---|---|---|---|---|",
    ]
    out += [capacity_row(by_key[key]) for key in HEADLINE_ROWS if key in by_key]
    out.append("")
    out.append(f"From `{meta['command']}` (code {meta['code_commit']}, seed {meta['seed']}, "
               f"{meta['trials']} trials in all, {meta['date']}); every row and the others are on [{link}]"
               f"({link}). \"95 % PL\": profile-likelihood interval of the logistic fit; \"bracket\": all "
               "trials stored at the lower load and none at the upper one, so no interval was fitted.")
    if sweeps:
        sizes = ", ".join(f"{e['problem'].upper()} d = {int(e['d'])}" for e in (r["estimate"] for r in sweeps))
        out[-1] += f" Single sweeps outside the run ({sizes}) are on the same page."
    return out


def full_table(rows, meta) -> list[str]:
    out = [
        "| memory | d | kappa | measured p_c | theory p_c | difference | fit status | trials |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        diff = f"{100 * rel_diff(r):+.1f} %" if r["status"] == "ok" else "(not a measurement)"
        out.append(f"| {MEMORY.get(r['solver'], r['solver'])} {r['problem'].upper()} | {int(r['d'])} | "
                   f"{float(r['kappa']):g} | {interval_text(r)} | {float(r['theory_p_c']):.1f} | {diff} | "
                   f"`{r['status']}` | {int(r['trials'])} |")
    return out


def sweep_records() -> list[dict]:
    """The recorded single capacity sweeps (``benchmarks/goals/sweep_*.json``), by d."""
    records = [json.loads(path.read_text()) for path in sorted(SWEEP_RECORDS.glob("sweep_*.json"))]
    records = [r for r in records if "estimate" in r]   # a sweep stopped before its end has none
    return sorted(records, key=lambda r: (int(r["estimate"]["d"]), r["estimate"]["problem"]))


def sweeps_table(records) -> list[str]:
    """p_c of each recorded sweep beside the theory, with its trials, wall time and provenance."""
    out = [
        "| memory | d | measured p_c | theory p_c | difference | trials (per load) | undecided | design, seed | "
        "wall time | code, date |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rec in records:
        e = rec["estimate"]
        row = {"p_c": e["p_c"], "p_c_low": e["p_c_low"], "p_c_high": e["p_c_high"], "status": e["status"],
               "theory_p_c": e["theory"]["p_c"], "curve": e["curve"]}
        total = sum(int(point["trials"]) for point in e["curve"])
        diff = f"{100 * rel_diff(row):+.1f} %" if e["status"] == "ok" else "(not a measurement)"
        out.append(f"| {MEMORY.get(e['solver'], e['solver'])} {e['problem'].upper()} | {int(e['d'])} | "
                   f"{interval_text(row)} | {float(e['theory']['p_c']):.1f} | {diff} | {total} ({int(e['trials'])}) | "
                   f"{int(e['undecided'])} | {e['design']}, {e['seed']} | {rec['seconds'] / 60:.1f} min | "
                   f"{rec['commit']}, {rec['date']} |")
    return out


def headline_page(rows, meta, sweeps=()) -> str:
    lines = [
        "# Headline numbers",
        "",
        "Generated by `python -m experiments.capacity.headline` from `experiments/reproduction/full/capacity.csv`,",
        "`experiments/reproduction/full/provenance.json` and the sweep records `benchmarks/goals/sweep_*.json`; do not",
        "edit by hand.",
        "",
        f"Run: `{meta['command']}` at code commit {meta['code_commit']} (committed in "
        f"{meta['committed_in']}), seed {meta['seed']}, {meta['trials']} trials, {meta['date']}, "
        f"{meta['wall_seconds'] / 60:.1f} min on {meta['machine']}.",
        "",
        "Rank-constrained rows (kappa < 1) are **lower bounds**: at rank m only `stored` is",
        "certified and a search whose starts all fail counts as not stored. Full-rank rows of the",
        "optimal solver are certified in both directions.",
        "",
        "Interval kinds (fit statuses):",
        "",
        *[f"- `{status}`: {meaning}." for status, meaning in FIT_STATUS_MEANINGS.items()],
        "",
        "The difference to the theory is given only where an interval was fitted.",
        "",
    ]
    lines += full_table(rows, meta)
    lines += [
        "",
        "## p_c(d)",
        "",
        "Drawn by `python -m experiments run pc_of_d` from the full run's rows above, the single "
        "sweeps below and the OP sweep at d = 512 (`experiments/capacity/capacity_d512_op.md`): full-rank optimal memory, "
        "bars for fitted intervals and brackets, open markers where no interval was fitted.",
        "",
        "![measured capacity of the optimal memory against the finite-size theory](pc_of_d.png)",
    ]
    if sweeps:
        lines += [
            "",
            "## Single sweeps",
            "",
            "Capacity sweeps run alone, outside the reproduction (`benchmarks/bench_goals.py --long`, "
            "which records each, with its command, in `benchmarks/goals/`). Wall time: the whole "
            "sweep on the machine of the record.",
            "",
        ]
        lines += sweeps_table(sweeps)
    return "\n".join(lines) + "\n"


def _estimate_interval(est) -> str:
    """``interval_text`` of an estimate dict (``CapacityEstimate.to_dict()``), a bracket when separated."""
    row = {"p_c": est["p_c"], "p_c_low": est["p_c_low"], "p_c_high": est["p_c_high"], "status": est["status"],
           "curve": est["curve"]}
    return interval_text(row)


def _curve_text(points) -> str:
    """``p: stored/decided`` of every point of a success curve."""
    return ", ".join(f"{int(float(c['p']))}: {int(c['stored'])}/{int(c['stored']) + int(c['not_stored'])}"
                     for c in sorted(points, key=lambda c: float(c["p"])))


def dp_generators_page() -> str:
    """The DP capacity of generators 1 and 2, side by side (``experiments/capacity/dp_generators.json``)."""
    data = json.loads(DP_GENERATORS_DATA.read_text())
    record = {**read_record(DP_GENERATORS_DATA.with_name("dp_generators.provenance.json")), "workers": data["workers"]}
    by = {(int(e["d"]), int(e["generator"])): e for e in data["estimates"]}
    dims = sorted({d for d, _ in by})
    lines = [
        "# DP capacity with the two candidate generators",
        "",
        "Generated by `python -m experiments.capacity.headline` from `experiments/capacity/dp_generators.json`, written by "
        f"`{record['command']}` at code commit {record['code_commit']}, {record['date']}, "
        f"{record['wall_time_s']:.0f} s with {record['workers']} worker processes; do not edit by hand.",
        "",
        "The decoupled problem's candidates come from a counter-based generator "
        "(`notes/simulation.md`, section 2). Generator 1 made the DP results committed before generator 2 "
        "was added; generator 2 is the current one. Both estimates of a row use the design, trials per point, "
        "seed and solver options of the full reproduction's DP estimates, so every trial has the same inputs "
        "in both and other candidates: the two are independent measurements of the same capacity. "
        "Intervals: \"95 % PL\" is the profile-likelihood interval of the logistic fit (fit status `ok`). "
        "Full-rank decisions of the optimal solver are certified in both directions. `wall` is the time of "
        "the estimate, one after the other in the same run.",
        "",
        "| d | theory p_c | generator 1: measured p_c | trials | wall | generator 2: measured p_c | trials | wall "
        "| generator 2 inside generator 1's interval |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for d in dims:
        one, two = by[(d, 1)], by[(d, 2)]
        inside = one["p_c_low"] <= two["p_c"] <= one["p_c_high"] if one["status"] == "ok" else None
        cells = [f"{_estimate_interval(e)} | {sum(int(c['trials']) for c in e['curve'])} | {e['wall_s']:.1f} s"
                 for e in (one, two)]
        lines.append(f"| {d} | {one['theory']['p_c']:.1f} | {cells[0]} | {cells[1]} | "
                     f"{'-' if inside is None else ('yes' if inside else 'no')} |")
    lines += [
        "",
        "Trials stored of those decided, per load p:",
        "",
        "| d | generator 1 | generator 2 |",
        "|---|---|---|",
    ]
    lines += [f"| {d} | {_curve_text(by[(d, 1)]['curve'])} | {_curve_text(by[(d, 2)]['curve'])} |" for d in dims]
    return "\n".join(lines) + "\n"


def zipf_table() -> list[str]:
    """The fitted log-log slopes of the Zipf error against d (``experiments/zipf/zipf.json``) beside the predicted exponents."""
    from validation.measurements.zipf import slope_rows, slope_text as text

    data = json.loads(ZIPF_DATA.read_text())
    counts = sorted({m["trials"] for m in data["measurements"]})

    out = ["| a | memory | measured slope | theory slope (same d, N) | asymptotic exponent |",
           "|---|---|---|---|---|"]
    for row in slope_rows(data["measurements"]):
        asym = ("none (E -> 1)" if row["solver"] == "hebbian" else
                "no theory" if row["theory"] is None else text(row["asymptotic"]))
        out.append(f"| {row['a']:g} | {row['label']} | {text(row['measured'])} | {text(row['theory'])} | {asym} |")
    out += ["", f"Least-squares slopes of ln E against ln d at d = {', '.join(map(str, data['dimensions']))}, "
            f"N = {data['overload']:g} p_c(d) facts, problem `{data['problem']}`, "
            f"{' or '.join(map(str, counts))} instances per point (mean E per point; no interval on the slope); "
            "from `experiments/zipf/zipf.json` by `python -m experiments.zipf.zipf`, every point on [experiments/zipf/README.md](experiments/zipf/README.md). "
            "The optimal row is an upper bound on the best memory's error (a give-up search); so are the Adam "
            "rows (trained memories)."]
    return out


def _mean_se(values) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else float("nan")
    return mean, (var / n) ** 0.5


def accuracy_verdict(search, bound, theory) -> str:
    """Where the theory lies against the bracket [search, bound] of mean counts, with 2 standard errors.

    ``search`` and ``bound``: (mean, s.e.) over the instances.  "above the bound" when
    ``theory > bound_mean + 2 se``, "below the search" when ``theory < search_mean - 2 se``,
    "inside" otherwise; a bound that equals p everywhere is "not tested".

    >>> accuracy_verdict((25.0, 0.3), (25.6, 0.4), 25.66), accuracy_verdict((16.0, 0.2), (16.1, 0.1), 17.4)
    ('inside', 'above the bound')
    """
    (s_mean, s_se), (b_mean, b_se) = search, bound
    if theory > b_mean + 2.0 * b_se:
        return "above the bound"
    if theory < s_mean - 2.0 * s_se:
        return "below the search"
    return "inside"


def _accuracy_cases() -> dict:
    """``experiments/accuracy/accuracy_search.csv`` grouped by case ``(d, problem, ratio)``, in that order."""
    with ACCURACY_DATA.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    cases: dict = {}
    for r in rows:
        cases.setdefault((int(r["d"]), r["problem"], float(r["ratio"])), []).append(r)
    return dict(sorted(cases.items()))


def _bound_is_trivial(at) -> bool:
    return all(int(r["bound_upper"]) == int(r["p"]) for r in at)


def accuracy_excess_line(cases) -> str:
    """The theory against the mean certified bound, per DP case whose bound is below p."""
    excess = []
    for (d, problem, ratio), at in cases.items():
        if problem != "dp" or _bound_is_trivial(at):
            continue
        bound = _mean_se([int(r["bound_upper"]) for r in at])[0]
        closed = sum(r["bound_status"] == "exact" for r in at)
        excess.append(f"d = {d}, {ratio:g} p_c: {100 * (float(at[0]['theory']) / bound - 1):+.1f} % "
                      f"({closed}/{len(at)} closed)")
    return ("Theory against the mean certified bound (DP, where the bound is below p): " + "; ".join(excess)
            + ". A positive value with every bracket closed means the replica-symmetric count is more than the "
            "best memory in the box recalls.")


def accuracy_table() -> list[str]:
    """The bracket [best search, certified bound] of the recalled count above capacity beside the theory
    (``experiments/accuracy/accuracy_search.csv``)."""
    cases = _accuracy_cases()
    first = next(iter(cases.values()))[0]
    best = max((k for k in first if k.startswith("restarts_")), key=lambda k: int(k.split("_")[1]))
    out = ["| problem | d | p / p_c | p | instances | best search (lower) | certified bound (upper) | closed | "
           "theory | theory against the bracket |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (d, problem, ratio), at in cases.items():
        p, theory = int(at[0]["p"]), float(at[0]["theory"])
        search = _mean_se([max(int(r[best]), int(r["bound_lower"])) for r in at])
        bound = _mean_se([int(r["bound_upper"]) for r in at])
        closed = sum(r["bound_status"] == "exact" for r in at)
        trivial = _bound_is_trivial(at)
        verdict = "not tested (bound = p)" if trivial else accuracy_verdict(search, bound, theory)
        if problem == "op" and not trivial:
            verdict += " (DP theory)"
        out.append(f"| {problem.upper()} | {d} | {ratio:g} | {p} | {len(at)} | {search[0]:.2f} ± {search[1]:.2f} | "
                   f"{bound[0]:.2f} ± {bound[1]:.2f} | {closed}/{len(at)} | {theory:.2f} | {verdict} |")
    out += ["", accuracy_excess_line(cases)]
    out += ["", "Mean recalled count over the instances ± its standard error. Lower end: the best W found (the "
            f"give-up search with add-back, swaps and {best.split('_')[1]} restarts, or the MILP's incumbent), "
            "recall checked in float64. Upper end: the certified MILP bound for memories in the box "
            "(`validation.accuracy_bound`); `closed`: instances where the two meet. Theory: "
            "`replica.variants.optimal_accuracy(d, p).accuracy * p`, the replica-symmetric expected count of the DP "
            "(beside the OP for reference). Verdict: above the bound or below the search by more than 2 standard "
            "errors of that end's mean, or inside. From `experiments/accuracy/accuracy_search.csv` by "
            "`python -m experiments.accuracy.accuracy_search`; every instance on [experiments/accuracy/README.md](experiments/accuracy/README.md)."]
    return out


def _top_k_records() -> list[dict]:
    """The per-case summary of the exact top-k decisions (``experiments/top_k/top_k_exact.json``)."""
    return json.loads(TOP_K_DATA.read_text())


def top_k_table() -> list[str]:
    """Theory p_c against the top-k search (a lower bound) and the exact MILP decision, per case."""
    out = ["| problem | k | d | instances (loads) | theory p_c | search p_c (lower bound) | with restarts "
           "(lower bound) | exact p_c (decided) | undecided | exact p_c, undecided either way | theory against the "
           "exact decision |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    records = _top_k_records()
    for r in records:
        either = "as decided" if not r["undecided"] else r["undecided_text"]
        out.append(f"| {r['problem'].upper()} | {r['k']} | {r['d']} | {r['instances']} ({len(r['loads'])}) | "
                   f"{r['theory']:.2f} | {r['search']} | {r['restarts']} | {r['exact']} | {r['undecided']} | "
                   f"{either} | {r['verdict']} |")
    out += ["", "p_c: the load where half of the instances are stored, from a logistic fit (95 % profile-likelihood "
            "interval, or the bracket of two loads when the fit is separated). Search: "
            "`solve(instance, 'optimal', options={'top_k': k})`, `not_found` counted as not stored, so a lower "
            f"bound; with restarts: the same with `top_k_restarts={records[0]['top_k_restarts']}`. Exact: a W from "
            "either search or from "
            "`validation.top_k_decision`, a MILP whose `not_stored` is certified for memories in a "
            "box (checked again at 10x); instances it leaves undecided in its time limit are counted, and the last "
            "interval column fits them once all as not stored and once all as stored. From "
            "`experiments/top_k/top_k_exact.json` by `python -m experiments.top_k.top_k_exact`; every load on "
            "[experiments/top_k/README.md](experiments/top_k/README.md)."]
    return out


def generated() -> dict[Path, str]:
    """Every page this script writes, with its generated blocks filled from the committed data."""
    rows, meta = read_run(FULL_RUN)
    sweeps = sweep_records()
    zipf, accuracy, top_k = zipf_table(), accuracy_table(), top_k_table()
    readme = README.read_text()
    readme = replace_block(readme, "headline", headline_table(rows, meta, "experiments/capacity/README.md", sweeps),
                           EXPERIMENT, where="README.md")

    def note(path, name, lines, page):
        # the notes name the experiment page as code, not as a link relative to the README
        link = f"[{page}]({page})"
        return replace_block(path.read_text(), name, [line.replace(link, f"`{page}`") for line in lines], EXPERIMENT,
                             where=str(path.relative_to(ROOT)))

    page = replace_block(CAPACITY_PAGE.read_text(), "headline", demote_headings(headline_page(rows, meta, sweeps)),
                         EXPERIMENT)
    page = replace_block(page, "dp_generators", demote_headings(dp_generators_page()), EXPERIMENT)
    return {README: readme, CAPACITY_PAGE: page,
            ZIPF_NOTE: note(ZIPF_NOTE, "zipf", zipf, "experiments/zipf/README.md"),
            ACCURACY_NOTE: note(ACCURACY_NOTE, "accuracy", accuracy, "experiments/accuracy/README.md"),
            TOP_K_NOTE: note(TOP_K_NOTE, "top_k", top_k, "experiments/top_k/README.md")}


def _arguments(parser) -> None:
    parser.add_argument("--check", action="store_true", help="fail if a committed table differs from the data")


def _render(job) -> int:
    stale = 0
    for path, text in generated().items():
        path = job.declared(path)  # a declared output of experiment.toml, or a file of this folder
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if job.args.check:
            stale += 1
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       str(path.relative_to(ROOT)), "regenerated"))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"experiments/capacity/headline.py --check: {stale} generated file(s) differ from the committed results; "
              "run python -m experiments run headline --render", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    return run(__file__, __doc__, render=_render, argv=argv, arguments=_arguments)


if __name__ == "__main__":
    raise SystemExit(main())
