"""A certified bracket on the best recalled Zipf mass at small d, beside ``replica.zipf_error``.

For every case ``(d, N, a, top)`` of ``CASES``, ``INSTANCES`` independent DP instances
(seeds ``SeedSequence([SEED, d, N, i])``, gaussian ensemble) of ``N`` facts with query
frequencies ``f_mu = mu^-a / H_{N,a}`` (``replica.zipf_frequencies``):

* **lower end**: the weighted give-up search ``solve(instance, "optimal", options={"give_up": True,
  ...})`` (with add-back, swaps and restarts, ``SEARCH``), and the incumbents of the MILP below;
  the largest recalled mass of a W in the box, checked in float64 by
  ``validation.recall.recall_check`` (strict, ties fail);
* **upper end**: the weighted MILP of ``validation.accuracy_bound.accuracy_bound`` (box ``1e4``
  at margin 1, ``TIME_LIMIT`` seconds, no check at ``10 B``) over the ``top`` most frequent
  facts, the others counted as recalled: certified for every W in the box.

The error bracket of one instance is ``[1 - upper, 1 - lower]``; its mean over the instances
is a bracket on the mean best error of these instances (the sampling error of that mean over
instances is given beside it: the instance-to-instance spread, not a certified quantity).
Each instance also records ``nonvertex_mass``, the frequency of its facts whose target is not
a vertex of its candidates' hull (never recalled; one LP per fact), for the hull control
variate of :func:`case_summaries`.
Per-instance rows go to ``experiments/zipf/zipf_bracket.csv``; the block ``zipf_bracket``
of ``experiments/zipf/README.md`` is rendered from them.  See ``notes/zipf.md`` (section 7)
and ``notes/accuracy_bound.md`` (section 7).

Usage::

    python -m experiments.zipf.zipf_bracket           # measure every case, then the page
    python -m experiments.zipf.zipf_bracket --render  # the page from the committed data
"""

from __future__ import annotations

import csv
import math
import pathlib
import time
import warnings

import numpy as np

import replica
from replica import ZipfFacts, zipf_error, zipf_frequencies
from replica.variants.few_outputs import is_vertex, nonvertex_probability
from validation import FactSettings, make_instance, solve
from validation.bounds.accuracy import accuracy_bound
from validation.solvers import set_threads
from experiments.pages import write_block
from experiments.scoreboard.measurements import hull_control_variate
from experiments.provenance import read_record
from experiments.runner import run

CASES = ((6, 30, 1.5, 18), (6, 30, 2.0, 18), (8, 44, 2.0, 22), (10, 60, 2.0, 22))  # (d, N, a, top)
INSTANCES = 24
SEARCH = {"give_up": True, "give_up_readd": 30, "give_up_swaps": 30, "give_up_restarts": 2}
TIME_LIMIT = 8.0
BOX = 1e4
SEED = 0
HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "zipf_bracket.csv", HERE / "zipf_bracket.provenance.json"
PAGE = HERE / "README.md"
FIELDS = ("d", "N", "a", "top", "instance", "search_mass", "lower_mass", "upper_mass", "any_mass", "status",
          "search_seconds", "bound_seconds", "nonvertex_count", "nonvertex_mass", "theory_error", "knapsack_error")


def measure(cases=CASES, instances=INSTANCES):
    """Rows of FIELDS: one per instance of every case."""
    set_threads(1)
    rows = []
    for d, N, a, top in cases:
        f = zipf_frequencies(N, a)
        theory = zipf_error(d, ZipfFacts(N, a)).error
        knapsack = zipf_error(d, ZipfFacts(N, a), model="knapsack").error
        for i in range(instances):
            inst = make_instance(d, N, "dp", seed=np.random.SeedSequence([SEED, d, N, i]),
                                 facts=FactSettings(weights=f))
            t0 = time.perf_counter()
            sol = solve(inst, "optimal", seed=SEED, options=SEARCH)
            t1 = time.perf_counter()
            r = accuracy_bound(inst, W_search=sol.matrix(), box=BOX, time_limit=TIME_LIMIT, check_box=False,
                               top=top)
            row = dict(d=d, N=N, a=a, top=top, instance=i, search_mass=r.search_mass, lower_mass=r.mass_lower,
                       upper_mass=r.mass_upper, any_mass=r.mass_any, status=r.status, search_seconds=t1 - t0,
                       bound_seconds=r.seconds, **nonvertices(inst, f), theory_error=theory, knapsack_error=knapsack)
            rows.append(row)
            print(f"d={d} N={N} a={a:g} top={top} #{i}: E in [{1 - r.mass_upper:.4f}, {1 - r.mass_lower:.4f}] "
                  f"({r.status}); search E {1 - r.search_mass:.4f}; theory {theory:.4f}", flush=True)
    return rows


def nonvertices(inst, f) -> dict:
    """The number and the frequency of the facts whose target is not a vertex of its candidates' hull (never recalled)."""
    lost = [mu for mu in range(inst.p) if not is_vertex(inst.candidates(mu), int(inst.target_index[mu]))]
    return {"nonvertex_count": len(lost), "nonvertex_mass": float(sum(f[mu] for mu in lost))}


def write_data(rows):
    with open(DATA, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.9g}" if isinstance(v, float) else v) for k, v in row.items()})


def read_rows(path=DATA) -> list[dict]:
    """The committed rows, with their types."""
    ints = ("d", "N", "top", "instance", "nonvertex_count")
    with open(path, newline="") as fh:
        return [{k: (int(v) if k in ints else v if k == "status" else float(v)) for k, v in r.items()}
                for r in csv.DictReader(fh)]


def case_summaries(rows) -> list[dict]:
    """Per case: the mean error bracket, its instance spread and the theory.

    Keys: ``d, N, a, top, instances, low, high`` (the mean of ``1 - upper`` and of
    ``1 - lower``: a certified bracket on the mean best error of the instances, for W in
    the box), ``low_se, high_se`` (standard errors of those means over the instances),
    ``search`` (mean error of the search alone), ``closed`` (instances with
    ``upper - lower <= 1e-5``), ``statuses``, ``theory`` and ``knapsack`` (``replica.zipf_error``
    with its default model and with ``model="knapsack"``, as recorded), ``lost`` (the mean
    non-vertex mass), ``counted`` and ``counted_se`` (the fraction of non-vertex targets over
    the instances' facts and its standard error over the instances: an independent measure
    of ``pi``), ``pi`` (``pi(d, N)`` of the cloud statistics, for the page) and ``cv_low,
    cv_high, cv_low_se, cv_high_se``: the bracket with the hull control variate, each
    instance's non-vertex mass ``L_i`` (exact, by LP) replaced by its expectation
    (``E[L_i] = pi`` since the frequencies sum to 1), estimated by the counted fraction:
    ``mean(max(low_i, L_i) - L_i) + counted``, ``mean(high_i - L_i) + counted`` (measured
    only: no theory enters it; ``max(low_i, L_i)`` because the best error is at least the
    non-vertex mass, which the MILP leaves out for facts beyond ``top``).
    """
    cases = {}
    for r in rows:
        cases.setdefault((r["d"], r["N"], r["a"], r["top"]), []).append(r)
    out = []
    for (d, N, a, top), at in cases.items():
        low = np.array([1.0 - r["upper_mass"] for r in at])
        high = np.array([1.0 - r["lower_mass"] for r in at])
        n = len(at)
        statuses = {s: sum(r["status"] == s for r in at) for s in sorted({r["status"] for r in at})}
        lost = np.array([r["nonvertex_mass"] for r in at])
        counted = np.array([r["nonvertex_count"] / N for r in at])
        cv_low, cv_high = (np.array(x) for x in hull_control_variate(at))
        out.append(dict(d=d, N=N, a=a, top=top, instances=n, low=float(low.mean()), high=float(high.mean()),
                        lost=float(lost.mean()), pi=nonvertex_probability(d, N), cv_low=float(cv_low.mean()),
                        counted=float(counted.mean()), counted_se=float(counted.std(ddof=1) / math.sqrt(n)),
                        cv_high=float(cv_high.mean()),
                        cv_low_se=float(cv_low.std(ddof=1) / math.sqrt(n)),
                        cv_high_se=float(cv_high.std(ddof=1) / math.sqrt(n)),
                        knapsack=at[0]["knapsack_error"],
                        low_se=float(low.std(ddof=1) / math.sqrt(n)), high_se=float(high.std(ddof=1) / math.sqrt(n)),
                        search=float(np.mean([1.0 - r["search_mass"] for r in at])),
                        closed=sum(r["upper_mass"] - r["lower_mass"] <= 1e-5 for r in at),
                        statuses=statuses, theory=at[0]["theory_error"]))
    return out


def page_block(rows, seconds) -> list[str]:
    tail = {(d, N, a, top): float(zipf_frequencies(N, a)[top:].sum()) for d, N, a, top in
            {(r["d"], r["N"], r["a"], r["top"]) for r in rows}}
    out = [
        f"Produced by `python -m experiments.zipf.zipf_bracket` in {seconds:.0f} s (one thread), seed {SEED}; "
        "data `experiments/zipf/zipf_bracket.csv`.  DP instances (gaussian ensemble), N facts with "
        "$f_\\mu \\propto \\mu^{-a}$, every fact with its own N - 1 competitors.  **Lower end** of the best "
        "recalled mass: the weighted give-up search "
        f"(`{', '.join(f'{k}={v}' for k, v in SEARCH.items())}`) and the MILP incumbents, a W of the box "
        "checked in float64.  **Upper end**: the weighted MILP of `validation.accuracy_bound` over the `top` "
        f"most frequent facts (the others counted as recalled; box {BOX:g} at margin 1, {TIME_LIMIT:g} s per "
        "solve): certified for every W with max |W_jk| <= 1e4 times its smallest margin on the facts it "
        "recalls.  Error E = 1 - recalled mass.  The bracket is the mean over the instances of the "
        "per-instance brackets [1 - upper, 1 - lower]: a certified bracket on the mean best E of these "
        "instances; ± is the standard error of each mean over the instances (their spread, which the "
        "theory's expectation also has to meet).  **Hull**: a fact whose target is not a vertex of the convex "
        "hull of its N candidates is never recalled; L = the frequency of such facts in an instance (exact, "
        "one LP per fact), π(d, N) = P(a target is not a vertex) "
        "(`replica.variants.few_outputs.nonvertex_probability(d, N)`), and E[L] = π; the "
        "fraction of non-vertex targets among the instances' facts (counted by LP) measures π independently.  "
        "**Control variate**: the bracket with each instance's L replaced by its expectation, estimated by the "
        "counted non-vertex fraction π̂: [mean(max(1 - upper, L) - L) + π̂, mean(1 - lower - L) + π̂] (the best E "
        "is at least L, which the MILP leaves out for the facts beyond `top`), the same "
        "expectation without the spread of which heavy facts happen to be non-vertices (most of the spread at "
        "a = 2), and measured only (no theory enters it; ± adds the s.e. of π̂ to that of the mean).  Theory: "
        "`replica.zipf_error(d, ZipfFacts(N, a))` with its default model `hull_knapsack` (facts lost with "
        "probability π, the knapsack over the rest) and with `model=\"knapsack\"` (no hull), as recorded.", "",
        "| d | N | a | top | weight left out | instances | E bracket (mean) | ± s.e. (low, high) | "
        "search alone | closed | MILP statuses | mean L | non-vertex fraction ± s.e. | π(d, N) | "
        "bracket, control variate | ± s.e. | hull_knapsack | knapsack | hull_knapsack - bracket |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in case_summaries(rows):
        nearest = min(max(c["theory"], c["cv_low"]), c["cv_high"])
        statuses = ", ".join(f"{n} {s}" for s, n in c["statuses"].items())
        out.append(f"| {c['d']} | {c['N']} | {c['a']:g} | {c['top']} | {tail[(c['d'], c['N'], c['a'], c['top'])]:.4f} "
                   f"| {c['instances']} | [{c['low']:.4f}, {c['high']:.4f}] | {c['low_se']:.4f}, {c['high_se']:.4f} "
                   f"| {c['search']:.4f} | {c['closed']}/{c['instances']} | {statuses} "
                   f"| {c['lost']:.4f} | {c['counted']:.4f} ± {c['counted_se']:.4f} | {c['pi']:.4f} "
                   f"| [{c['cv_low']:.4f}, {c['cv_high']:.4f}] "
                   f"| {c['cv_low_se']:.4f}, {c['cv_high_se']:.4f} | {c['theory']:.4f} | {c['knapsack']:.4f} "
                   f"| {c['theory'] - nearest:+.4f} |")
    out += ["", "Per instance (E bracket [1 - upper, 1 - lower]; L the non-vertex mass):", "",
            "| d | N | a | instance | E bracket | L | search E | MILP status | search s | bound s |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['d']} | {r['N']} | {r['a']:g} | {r['instance']} | [{1 - r['upper_mass']:.4f}, "
                   f"{1 - r['lower_mass']:.4f}] | {r['nonvertex_mass']:.4f} | {1 - r['search_mass']:.4f} | {r['status']} | "
                   f"{r['search_seconds']:.1f} | {r['bound_seconds']:.1f} |")
    return out


def _measure(job) -> None:
    warnings.simplefilter("ignore", replica.TheoryOffWarning)
    write_data(measure())
    job.record(DATA, seed=SEED)


def _render(job) -> None:
    write_block(PAGE, "zipf_bracket", page_block(read_rows(), read_record(PROVENANCE)["wall_time_s"]),
                "zipf_bracket")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
