"""Generate the results tables of the README and the docs from committed result files.

Every table a reader sees in ``README.md`` (between the ``BEGIN generated`` and
``END generated`` markers) and on ``docs/results/headline.md`` is written by this script
from the CSV files of a committed reproduction run (``docs/full/``, ``docs/quick/``) and
their ``provenance.json`` (command, code commit, seed, trials, date).  Nothing in those
tables is typed by hand.

Usage::

    python docs/tables.py            # rewrite the generated blocks and pages
    python docs/tables.py --check    # exit 1 (and show a diff) if a committed table is stale

CI runs ``--check``: a changed result file without regenerated tables fails the build.

Interval kinds: the fit statuses, as defined once in
``validation.capacity.fit.FIT_STATUS_MEANINGS`` (and the glossary).
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import sys
from pathlib import Path

from validation.capacity.fit import FIT_STATUS_MEANINGS
from validation.capacity.fit import interval_text as fit_interval_text
from validation.capacity.fit import separation_bracket

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
README = ROOT / "README.md"
HEADLINE_PAGE = DOCS / "results" / "headline.md"
ZIPF_NOTE = ROOT / "notes" / "zipf.md"
ZIPF_DATA = DOCS / "zipf.json"

BEGIN = "<!-- BEGIN generated: {name} (python docs/tables.py) -->"
END = "<!-- END generated: {name} -->"

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


def headline_table(rows, meta, link: str) -> list[str]:
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


def headline_page(rows, meta) -> str:
    lines = [
        "# Headline numbers",
        "",
        "Generated by `python docs/tables.py` from `docs/full/capacity.csv` and",
        "`docs/full/provenance.json`; do not edit by hand.",
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
    return "\n".join(lines) + "\n"


def zipf_table() -> list[str]:
    """The fitted log-log slopes of the Zipf error against d (``docs/zipf.json``) beside the predicted exponents."""
    from validation.zipf import slope_rows

    data = json.loads(ZIPF_DATA.read_text())
    counts = sorted({m["trials"] for m in data["measurements"]})

    def text(s):
        return "n/a" if s is None else f"{s:+.2f}"

    out = ["| a | memory | measured slope | theory slope (same d, N) | asymptotic exponent |",
           "|---|---|---|---|---|"]
    for row in slope_rows(data["measurements"]):
        asym = ("none (E -> 1)" if row["solver"] == "hebbian" else
                "no theory" if row["solver"].startswith("adam") else text(row["asymptotic"]))
        out.append(f"| {row['a']:g} | {row['label']} | {text(row['measured'])} | {text(row['theory'])} | {asym} |")
    out += ["", f"Least-squares slopes of ln E against ln d at d = {', '.join(map(str, data['dimensions']))}, "
            f"N = {data['overload']:g} p_c(d) facts, problem `{data['problem']}`, "
            f"{' or '.join(map(str, counts))} instances per point (mean E per point; no interval on the slope); "
            "from `docs/zipf.json` by `python docs/zipf.py`, every point on [docs/zipf.md](docs/zipf.md). "
            "The optimal row is an upper bound on the best memory's error (a give-up search); so are the Adam "
            "rows (trained memories)."]
    return out


def replace_block(text: str, name: str, body: list[str]) -> str:
    begin, end = BEGIN.format(name=name), END.format(name=name)
    head, sep, rest = text.partition(begin)
    if not sep:
        raise SystemExit(f"docs/tables.py: marker {begin!r} not found")
    _old, sep2, tail = rest.partition(end)
    if not sep2:
        raise SystemExit(f"docs/tables.py: marker {end!r} not found")
    return head + begin + "\n" + "\n".join(body) + "\n" + end + tail


def generated() -> dict[Path, str]:
    rows, meta = read_run(DOCS / "full")
    readme = replace_block(README.read_text(), "headline", headline_table(rows, meta, "docs/results/headline.md"))
    zipf = zipf_table()
    readme = replace_block(readme, "zipf", zipf)
    notes = replace_block(ZIPF_NOTE.read_text(), "zipf", [line.replace("[docs/zipf.md](docs/zipf.md)", "`docs/zipf.md`")
                                                          for line in zipf])
    return {README: readme, HEADLINE_PAGE: headline_page(rows, meta), ZIPF_NOTE: notes}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a committed table differs from the data")
    args = parser.parse_args(argv)
    stale = 0
    for path, text in generated().items():
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if args.check:
            stale += 1
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       str(path.relative_to(ROOT)), "regenerated"))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"docs/tables.py --check: {stale} generated file(s) differ from the committed results; "
              "run python docs/tables.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
