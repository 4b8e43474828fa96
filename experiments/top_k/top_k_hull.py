"""The k-set hull limit at the loads of the exact top-k decisions.

For every case ``(problem, d, k)`` and load ``p`` of ``experiments/top_k/top_k_exact.csv`` the
hull factor ``H_k(p) = replica.variants.top_k_hull.k_set_hull_factor(d, p, k, problem,
clouds=CLOUDS, seed=SEED)`` is computed: the probability that every target has halfspace
depth ``< k`` among its candidates, which every memory needs to store the instance at top
``k`` (``notes/top_k.md``, section 6).  So the exact stored fraction at each load must lie
below ``H_k(p)`` up to its sampling error, and ``1 - H_k`` is the most the k-set limit can take
from ``P(stored)`` there.  The values go to ``experiments/top_k/top_k_hull.json``; the page
block (``experiments/top_k/README.md``) sets them beside the exact counts.

Usage::

    python -m experiments.top_k.top_k_hull            # compute the hull factors, write the JSON and the page block
    python -m experiments.top_k.top_k_hull --render   # the page block from the committed JSON
"""

from __future__ import annotations

import json
import pathlib
import time

import replica
from experiments.pages import write_block
from experiments.runner import run
from experiments.top_k.top_k_exact import read_csv
from replica.variants.top_k_hull import k_set_hull_factor
from validation.measurements.intervals import wilson_interval

CLOUDS = 400
SEED = 0
HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "top_k_hull.json"
PAGE = HERE / "README.md"


def loads() -> list[tuple]:
    """``(problem, d, k, p, exact stored, exact decided, instances)`` of every load of the exact decisions."""
    out = {}
    for r in read_csv():
        key = (r["problem"], int(r["d"]), int(r["k"]), int(r["p"]))
        stored, decided, n = out.get(key, (0, 0, 0))
        status = r["exact_status"]
        out[key] = (stored + (status == "stored"), decided + (status in ("stored", "not_stored")), n + 1)
    return [key + value for key, value in sorted(out.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0],
                                                                              kv[0][3]))]


def measure() -> list[dict]:
    rows = []
    for problem, d, k, p, *_ in loads():
        t0 = time.perf_counter()
        h = k_set_hull_factor(d, p, k, problem, clouds=CLOUDS, seed=SEED)
        rows.append(dict(problem=problem, d=d, k=k, p=p, hull=h.hull, hull_stderr=h.stderr, recallable=h.recallable,
                         clouds=h.clouds, seconds=round(time.perf_counter() - t0, 2)))
        print(f"{problem} d={d} k={k} p={p}: H_k = {h.hull:.3f} +- {h.stderr:.3f} ({rows[-1]['seconds']} s)",
              flush=True)
    return rows


def render(rows) -> str:
    counts = {key[:4]: key[4:] for key in loads()}
    theory = {}
    lines = [
        "## The k-set hull limit at the loads of the exact decisions",
        "",
        f"Produced by `python -m experiments.top_k.top_k_hull` from `experiments/top_k/top_k_hull.json` "
        f"({len(rows)} loads, {sum(r['seconds'] for r in rows):.0f} s in one process): "
        f"`replica.variants.top_k_hull.k_set_hull_factor(d, p, k, problem, clouds={CLOUDS}, seed={SEED})`, the "
        "probability that every target has halfspace depth < k among its candidates (exact depths of "
        f"{CLOUDS} Gaussian clouds; +- its Monte-Carlo standard error).  No memory of any size stores an "
        "instance at top k without it, so the exact stored fraction must lie below it (up to the 95 % Wilson "
        "interval of 10 instances) and 1 - H_k is the most the k-set limit can take from P(stored).  "
        "\"exact stored\" counts the instances a W was found for (certified) among those decided "
        "(`experiments/top_k/top_k_exact.csv`); \"p / theory p_c\" is against `replica.capacity(d, top_k=k).p_c`.",
        "",
        "| problem | d | k | p | p / theory p_c | exact stored / decided | stored fraction [95 % Wilson] "
        "| hull factor H_k(p) | fraction below H_k |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    worst = {}
    for r in rows:
        key = (r["problem"], r["d"], r["k"])
        if key not in theory:
            theory[key] = replica.capacity(r["d"], top_k=r["k"]).p_c
        stored, decided, _ = counts[key + (r["p"],)]
        if decided:
            low, high = wilson_interval(stored, decided)
            fraction = f"{stored / decided:.2f} [{low:.2f}, {high:.2f}]"
            below = "yes" if low <= r["hull"] + 2 * r["hull_stderr"] else "no"
        else:
            fraction, below = "none decided", "n/a"
        ratio = r["p"] / theory[key]
        if 0.9 <= ratio <= 1.1:
            worst[key] = min(worst.get(key, 1.0), r["hull"])
        lines.append(f"| {r['problem'].upper()} | {r['d']} | {r['k']} | {r['p']} | {ratio:.2f} | {stored} / {decided} "
                     f"| {fraction} | {r['hull']:.3f} +- {r['hull_stderr']:.3f} | {below} |")
    lines += ["", "Smallest hull factor at the loads within 10 % of the theory's p_c, per case "
              "(the most the k-set limit can lower P(stored) there is one minus it):", "",
              "| problem | d | k | smallest H_k(p), 0.9 <= p / theory p_c <= 1.1 |", "|---|---|---|---|"]
    lines += [f"| {key[0].upper()} | {key[1]} | {key[2]} | {value:.3f} |" for key, value in worst.items()]
    return "\n".join(lines) + "\n"


def _measure(job) -> int:
    rows = measure()
    DATA.write_text(json.dumps(rows, indent=1) + "\n")
    job.record(DATA, seed=SEED, clouds=CLOUDS)
    return 0


def _render(job) -> None:
    write_block(PAGE, "top_k_hull", render(json.loads(DATA.read_text())), "top_k_hull")
    print(f"wrote {PAGE}")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
