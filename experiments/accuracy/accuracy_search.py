"""How far the give-up search is from the best recall count at small d: moves and restarts beside the MILP bound.

For every case ``(problem, d, ratio)`` with ``p = round(ratio * replica.capacity(d).p_c)``,
``INSTANCES`` independent instances (seeds ``SeedSequence([SEED, d, p, i])``) are searched
four ways, each a W whose recall is checked in float64 (a **lower bound** on the best count):

* ``greedy``: ``solve(instance, "optimal", options={"give_up": True})``;
* ``add_back``: plus ``give_up_readd=READD``;
* ``swaps``: plus ``give_up_swaps=SWAPS`` (swap size 2);
* ``restarts_R``: plus ``give_up_restarts=R`` (``seed=SEED``) for R in ``RESTARTS``, read from one
  solve with the largest R: the run scores are recorded per run (``info["run_scores"]``) and
  restart ``r`` does not depend on how many follow, so R restarts are the first ``R + 1`` runs
  (time: the sum of their ``info["run_seconds"]``).

Beside them the MILP of :func:`validation.accuracy_bound.accuracy_bound` (box ``1e4`` at
margin 1, ``TIME_LIMIT`` seconds, no check at ``10 B``, the best search W as its cut) gives a
**certified upper bound for memories in the box** and its own lower bound.  Per-instance counts go
to ``experiments/accuracy/accuracy_search.csv``; the page ``experiments/accuracy/README.md`` is rendered from it.  See
``notes/recall_accuracy.md`` (section 6) and ``notes/accuracy_bound.md``.

Usage::

    python -m experiments.accuracy.accuracy_search                  # every case in CASES, then the page
    python -m experiments.accuracy.accuracy_search --case dp:8:1.25 # one case (its rows replaced in the CSV)
    python -m experiments.accuracy.accuracy_search --render         # the page from the committed CSV
"""

from __future__ import annotations

import csv
import pathlib
import time

import numpy as np

import replica
from validation import make_instance, solve
from validation.bounds.accuracy import accuracy_bound
from validation.solvers import set_threads
from experiments.pages import demote_headings, write_block
from experiments.runner import run

CASES = tuple((problem, d, ratio) for d in (6, 8, 10) for problem in ("dp", "op") for ratio in (1.25, 2.0))
INSTANCES = 8
READD = 30
SWAPS = 30
RESTARTS = (2, 4, 8)
TIME_LIMIT = 10.0
SEED = 0
HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "accuracy_search.csv"
PAGE = HERE / "README.md"
METHODS = ("greedy", "add_back", "swaps") + tuple(f"restarts_{r}" for r in RESTARTS)
FIELDS = (("problem", "d", "ratio", "p", "instance") + METHODS + tuple(f"seconds_{m}" for m in METHODS)
          + ("bound_lower", "bound_upper", "bound_status", "bound_seconds", "theory", "time_limit"))


def load(d, ratio):
    """The integer load ``round(ratio * p_c)``, ``p_c = replica.capacity(d).p_c``."""
    return round(ratio * replica.capacity(d).p_c)


def _timed(inst, options):
    t0 = time.perf_counter()
    sol = solve(inst, "optimal", seed=SEED, options={"give_up": True, **options})
    return sol, time.perf_counter() - t0


def measure_case(problem, d, ratio, done=None, time_limit=TIME_LIMIT):
    """Rows of one case: every search and the MILP (``time_limit`` seconds) on ``INSTANCES`` instances
    (``done(rows)`` after each instance: the CSV is written as it goes)."""
    p = load(d, ratio)
    theory = replica.variants.optimal_accuracy(d, p).accuracy * p
    rows = []
    for i in range(INSTANCES):
        inst = make_instance(d, p, problem, seed=np.random.SeedSequence([SEED, d, p, i]))
        row = dict(problem=problem, d=d, ratio=ratio, p=p, instance=i, theory=round(theory, 3),
                   time_limit=time_limit)
        settings = {"greedy": {}, "add_back": {"give_up_readd": READD},
                    "swaps": {"give_up_readd": READD, "give_up_swaps": SWAPS}}
        for name, options in settings.items():
            sol, seconds = _timed(inst, options)
            row[name], row[f"seconds_{name}"] = sol.info["recalled"], round(seconds, 3)
        sol, _ = _timed(inst, {**settings["swaps"], "give_up_restarts": max(RESTARTS)})
        scores, seconds = sol.info["run_scores"], sol.info["run_seconds"]
        for r in RESTARTS:
            row[f"restarts_{r}"] = max(scores[:r + 1])
            row[f"seconds_restarts_{r}"] = round(sum(seconds[:r + 1]), 3)
        bound = accuracy_bound(inst, W_search=sol.matrix(), time_limit=time_limit, check_box=False)
        row.update(bound_lower=bound.recalled_lower, bound_upper=bound.recalled_upper,
                   bound_status=bound.status, bound_seconds=round(bound.seconds, 3))
        print(" ".join(f"{k}={row[k]}" for k in ("problem", "d", "p", "instance") + METHODS
                       + ("bound_lower", "bound_upper", "bound_status")), flush=True)
        rows.append(row)
        if done is not None:
            done(rows)
    return rows


def write_csv(rows):
    with DATA.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def _sorted(rows):
    return sorted(rows, key=lambda r: (r["d"], r["problem"], r["ratio"], r["instance"]))


def read_csv():
    if not DATA.exists():
        return []
    with DATA.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for key in ("d", "p", "instance", "bound_lower", "bound_upper") + METHODS:
            r[key] = int(r[key])
        for key in ("ratio", "bound_seconds", "theory") + tuple(f"seconds_{m}" for m in METHODS):
            r[key] = float(r[key])
        r["time_limit"] = float(r.get("time_limit") or TIME_LIMIT)  # rows written before the column: 10 s
    return rows


def _key(r):
    return (r["problem"], r["d"], r["ratio"])


def _limits(rows) -> str:
    """The MILP time limits (s) of some rows, e.g. ``10`` or ``10/60``."""
    return "/".join(f"{t:g}" for t in sorted({r["time_limit"] for r in rows}))


def render(rows):
    """The Markdown page."""
    cases = sorted({_key(r) for r in rows}, key=lambda k: (k[1], k[0], k[2]))
    total = sum(sum(r[f"seconds_{m}"] for m in ("greedy", "add_back", "swaps", f"restarts_{max(RESTARTS)}"))
                + r["bound_seconds"] for r in rows)
    lines = [
        "# The give-up search against the certified bound at small d", "",
        f"Produced by `python -m experiments.accuracy.accuracy_search` from `experiments/accuracy/accuracy_search.csv` ({len(rows)} "
        f"instances, {total:.0f} s of search and MILP in total, one thread, `nice`).  {INSTANCES} "
        "independent instances per case (seeds `SeedSequence([0, d, p, i])`), "
        "`p = round(ratio * replica.capacity(d).p_c)`.", "",
        "**Lower bounds** (a W found and checked in float64): `greedy` is "
        "`solve(instance, 'optimal', options={'give_up': True})`; `+add-back` adds "
        f"`give_up_readd={READD}`; `+swaps` adds `give_up_swaps={SWAPS}` (swap size 2); `+restarts R` adds "
        "`give_up_restarts=R` (`seed=0`, cost jitter 0.5; R restarts are the first R + 1 runs of one solve "
        "with 8); `MILP lower` is the count of the MILP's best W in the box (its incumbent or the search W).  "
        "**Upper bound**: `MILP upper` is the certified bound of `validation.accuracy_bound.accuracy_bound` "
        f"for memories in the box `[-1e4, 1e4]` at margin 1 (every W with normalised margin at least "
        "`d / 1e4`), with the time limit per solve of the column `MILP limit` (s), no check at 10 B; `exact` "
        "counts the instances where it "
        "closed (lower = upper).  `theory` is `replica.variants.optimal_accuracy(d, p).accuracy * p`, the "
        "replica-symmetric expected count (the theory of the decoupled problem, DP; beside OP for "
        "reference only).  See `notes/recall_accuracy.md` (section 6) and `notes/accuracy_bound.md`.", "",
        "## Mean recalled count per case", "",
        "Means over the instances of a case; in brackets the number of instances on which the "
        "column is above the column to its left (restarts: above the previous R).", "",
        "| problem | d | p / p_c | p | n | greedy | +add-back | +swaps | "
        + " | ".join(f"+restarts {r}" for r in RESTARTS)
        + " | MILP lower | MILP upper | exact | MILP limit | theory |",
        "|---|---|---|---|---|" + "---|" * (len(METHODS) + 5)]
    for case in cases:
        at = [r for r in rows if _key(r) == case]
        cells = []
        for j, m in enumerate(METHODS):
            mean = np.mean([r[m] for r in at])
            if j == 0:
                cells.append(f"{mean:.2f}")
            else:
                up = sum(r[m] > r[METHODS[j - 1]] for r in at)
                cells.append(f"{mean:.2f} ({up})")
        exact = sum(r["bound_status"] == "exact" for r in at)
        lines.append(f"| {case[0].upper()} | {case[1]} | {case[2]:g} | {at[0]['p']} | {len(at)} | "
                     + " | ".join(cells)
                     + f" | {np.mean([r['bound_lower'] for r in at]):.2f}"
                     f" | {np.mean([r['bound_upper'] for r in at]):.2f}"
                     f" | {exact}/{len(at)} | {_limits(at)}"
                     f" | {at[0]['theory']:.2f} |")
    exact_rows = [r for r in rows if r["bound_status"] == "exact"]
    best = f"restarts_{max(RESTARTS)}"
    lines += ["", f"On the {len(exact_rows)} instances where the MILP closed, the exact count in the box is reached by "
              + ", ".join(f"`{m}` on {sum(r[m] == r['bound_lower'] for r in exact_rows)}" for m in METHODS)
              + f"; `{best}` is above `greedy` on {sum(r[best] > r['greedy'] for r in rows)} of all {len(rows)} "
              f"instances and above `restarts_{sorted(RESTARTS)[-2]}` on "
              f"{sum(r[best] > r[f'restarts_{sorted(RESTARTS)[-2]}'] for r in rows)}.  `MILP lower` can be below "
              "the search: it counts only a W inside the box, and a search W that needs a larger box does not "
              f"count there (on {sum(r['bound_lower'] < r[best] for r in rows)} instances)."]
    lines += ["", "## Mean seconds per instance", "",
              "Wall time of each search on its own (restarts: the runs it needs, out of the solve with 8), "
              "and of the MILP.", "",
              "| problem | d | p / p_c | " + " | ".join(m.replace("_", " ") for m in METHODS) + " | MILP |",
              "|---|---|---|" + "---|" * (len(METHODS) + 1)]
    for case in cases:
        at = [r for r in rows if _key(r) == case]
        lines.append(f"| {case[0].upper()} | {case[1]} | {case[2]:g} | "
                     + " | ".join(f"{np.mean([r[f'seconds_{m}'] for r in at]):.1f}" for m in METHODS)
                     + f" | {np.mean([r['bound_seconds'] for r in at]):.1f} |")
    lines += ["", "## Per instance", "",
              "| problem | d | p | instance | " + " | ".join(m.replace("_", " ") for m in METHODS)
              + " | MILP [lower, upper] | status |",
              "|---|---|---|---|" + "---|" * (len(METHODS) + 2)]
    for case in cases:
        for r in (r for r in rows if _key(r) == case):
            lines.append(f"| {r['problem'].upper()} | {r['d']} | {r['p']} | {r['instance']} | "
                         + " | ".join(str(r[m]) for m in METHODS)
                         + f" | [{r['bound_lower']}, {r['bound_upper']}] | {r['bound_status']} |")
    return "\n".join(lines) + "\n"


def _parse_case(text):
    try:
        problem, d, ratio = text.split(":")
        return problem, int(d), float(ratio)
    except ValueError:
        raise SystemExit(f"--case must be problem:d:ratio (e.g. dp:8:1.25), got {text!r}") from None


def _arguments(parser) -> None:
    parser.add_argument("--case", action="append", type=_parse_case, help="measure one case problem:d:ratio")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                        help="seconds per MILP of the cases measured (default %(default)s; kept per row)")


def _measure(job) -> None:
    set_threads(1)
    cases = job.args.case or CASES
    rows = [r for r in read_csv() if _key(r) not in set(cases)]
    for case in cases:
        rows += measure_case(*case, done=lambda new, old=tuple(rows): write_csv(_sorted(list(old) + new)),
                             time_limit=job.args.time_limit)
    write_csv(_sorted(rows))
    job.record(DATA, seed=SEED, cases=[":".join(map(str, c)) for c in cases], time_limit=job.args.time_limit)


def _render(job) -> None:
    write_block(PAGE, "accuracy_search", demote_headings(render(read_csv())), "accuracy_search")
    print(f"wrote {PAGE}")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
