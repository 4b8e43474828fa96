"""The image-space margin theory ``replica.optimal.max_margin_image`` at every measured row of the margins experiment.

Computes ``replica.optimal.max_margin_image(d, p, ensemble=e, blocks=BLOCKS, seed=SEED)`` for every
(d, ensemble, load) of ``experiments/margins/margins_measured.csv`` and writes the data
``experiments/margins/margins_image_theory.csv`` (with its provenance record); ``--render``
writes the block ``margins_image`` of ``experiments/margins/README.md`` from the committed
data only: the theory with its Monte-Carlo standard error beside the measured means with
their standard errors between instances and their 95 % sampling interval, the relative error
and the verdict against the stated tolerance (5 %), by the scoreboard's rule
(``replica.common.validity.point_verdict`` on the sampling interval).  The scoreboard
reads the same CSV.  Derivation: ``notes/max_margin.md``, section "The block cost in the
image space".

Usage::

    python -m experiments.margins.margins_image            # compute (about 30 min on one core), then render
    python -m experiments.margins.margins_image --render   # render from the committed data
"""

from __future__ import annotations

import csv
import math
import pathlib
import sys
import time
import warnings

import replica
from replica.common.validity import point_verdict
from replica.optimal.image_margin import TOLERANCE
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import run

HERE = pathlib.Path(__file__).resolve().parent
MEASURED = HERE / "margins_measured.csv"
DATA = HERE / "margins_image_theory.csv"
PROVENANCE = HERE / "margins_image_theory.provenance.json"
SEED = 1
BLOCKS = 40000
FIELDS = ("d", "ensemble", "x", "p", "theory", "theory_se", "status", "blocks", "correlation", "seconds")


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def compute() -> float:
    """The theory of every measured row; writes ``DATA`` and returns the seconds."""
    start = time.perf_counter()
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", replica.TheoryOffWarning)  # the verdicts are what this page reports
        for r in _read(MEASURED):
            t0 = time.perf_counter()
            res = replica.optimal.max_margin_image(int(r["d"]), int(r["p"]), ensemble=r["ensemble"], blocks=BLOCKS,
                                           seed=SEED)
            rows.append({"d": r["d"], "ensemble": r["ensemble"], "x": r["x"], "p": r["p"],
                         "theory": repr(float(res.margin)), "theory_se": repr(float(res.stderr)),
                         "status": res.status, "blocks": res.blocks, "correlation": f"{res.correlation:.3f}",
                         "seconds": f"{time.perf_counter() - t0:.1f}"})
            sys.stderr.write(f"{rows[-1]}\n")
    with open(DATA, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return time.perf_counter() - start


def _float(text) -> float:
    return float(text) if text not in ("", None) else math.nan


def joined():
    """Measured rows with the image-space theory, its verdict and the old theory (``margins_theory.csv``) beside them.

    The verdict is the scoreboard's (``replica.common.validity.point_verdict``) against the
    95 % sampling interval of the row (mean verified margin - t s.e. to mean certified bound
    + t s.e., ``margins_measured.csv``): ``checked`` when the tolerance band of the theory
    holds that interval, ``off`` when the theory lies outside it and misses the mean verified
    margin by more than the tolerance, ``unchecked`` otherwise.
    """
    theory = {(r["d"], r["ensemble"], r["x"]): r for r in _read(DATA)}
    old = {(r["d"], r["ensemble"], r["x"]): float(r["theory"]) for r in _read(HERE / "margins_theory.csv")}
    out = []
    for r in _read(MEASURED):
        key = (r["d"], r["ensemble"], r["x"])
        th = theory[key]
        margin, bound, low, high = (_float(r[k]) for k in ("margin", "bound", "low", "high"))
        value = float(th["theory"])
        error, verdict = point_verdict(value, "interval", margin, low, high, TOLERANCE,
                                       theory_stderr=float(th["theory_se"]))
        median = _float(r["median"])
        out.append({"d": int(r["d"]), "ensemble": r["ensemble"], "x": float(r["x"]), "p": int(r["p"]),
                    "margin": margin, "margin_se": _float(r["margin_se"]), "bound": bound,
                    "bound_se": _float(r["bound_se"]), "low": low, "high": high, "n": int(r["n"]),
                    "stored": int(r["stored"]), "not_stored": int(r["not_stored"]), "trials": int(r["trials"]),
                    "sd": _float(r["sd"]), "median": median, "median_low": _float(r["median_low"]),
                    "median_high": _float(r["median_high"]),
                    "theory": value, "se": float(th["theory_se"]), "status": th["status"],
                    "blocks": int(th["blocks"]), "correlation": float(th["correlation"]),
                    "seconds": float(th["seconds"]), "error": error, "error_low": value / high - 1.0,
                    "error_high": value / low - 1.0, "median_error": value / median - 1.0, "old": old[key],
                    "old_error": old[key] / margin - 1.0, "verdict": verdict})
    return out


def render(rows, seconds) -> str:
    tol = f"{100 * TOLERANCE:g} %"
    lines = ["# The image-space margin theory against the certified margins", "",
             f"Generated by `python -m experiments.margins.margins_image` from `experiments/margins/margins_image_theory.csv` "
             f"(computed in {seconds:.0f} s in one process: `replica.optimal.max_margin_image(d, p, ensemble=e, "
             f"blocks={BLOCKS}, seed={SEED})` at every row of `experiments/margins/margins_measured.csv`) and from the "
             "measured CSV.  Theory +- its Monte-Carlo standard error (delta method, control variate; "
             f"`notes/max_margin.md`, section \"The block cost in the image space\").  Measured "
             "(`margins_measured.csv`, the summary of the per-instance `margins_instances.csv`): the mean verified "
             "margin (lower bound) and the mean certified bound (upper bound) +- their standard errors between "
             "instances, over the n instances stored with their gap closed to 0.5 % (n / stored / trials), and "
             "the 95 % sampling interval [mean margin - t s.e., mean bound + t s.e.] (t = t_0.975,n-1).  Error: "
             "theory / mean verified margin - 1, and the range of theory / measured - 1 over the sampling "
             "interval.  Verdict (the scoreboard's rule, `replica.common.validity.point_verdict`): `checked` "
             f"when the tolerance band of the theory (theory / (1 +- {tol})) holds the whole sampling interval, "
             "`off` when the theory lies outside the sampling interval and misses the mean verified margin by "
             f"more than {tol}, `unchecked` otherwise (the interval is too wide to decide at {tol}); the theory's "
             "own Monte-Carlo error widens the sampling interval first (its 95 % interval, in quadrature).  Median: the median best margin over every "
             "decided instance (a not-stored one counts below every stored one) with its 95 % order-statistic "
             "interval, and theory / median - 1.  The old theory (`replica.max_margin`, `margins_theory.csv`) "
             "is beside it.", "",
             "| d | ensemble | p / p_c | p | image-space theory | verified margin (mean +- s.e.) | certified bound "
             "(mean +- s.e.) | 95 % sampling interval | n / stored / trials | error | error over the interval | "
             "verdict | median [95 %] | theory / median - 1 | `max_margin` | its error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        status = "" if r["status"] == "converged" else f" ({r['status']})"
        lines.append(f"| {r['d']} | {r['ensemble']} | {r['x']:.2f} | {r['p']} | {r['theory']:.3f} +- {r['se']:.3f}"
                     f"{status} | {r['margin']:.3f} +- {r['margin_se']:.3f} | {r['bound']:.3f} +- "
                     f"{r['bound_se']:.3f} | [{r['low']:.3f}, {r['high']:.3f}] | {r['n']} / {r['stored']} / "
                     f"{r['trials']} | {100 * r['error']:+.1f} % | {100 * r['error_low']:+.1f} to "
                     f"{100 * r['error_high']:+.1f} % | {r['verdict']} | {r['median']:.3f} [{r['median_low']:.3f}, "
                     f"{r['median_high']:.3f}] | {100 * r['median_error']:+.1f} % | {r['old']:.3f} | "
                     f"{100 * r['old_error']:+.1f} % |")
    lines += ["", "Per size and ensemble (loads 0.2-0.9 p_c):", "",
              "| d | ensemble | checked / off / unchecked | largest abs. error | mean error | largest abs. error of "
              "`max_margin` | largest theory s.e. (relative) | largest sampling s.e. (relative) |",
              "|---|---|---|---|---|---|---|---|"]
    for d in sorted({r["d"] for r in rows}):
        for e in ("gaussian", "sphere"):
            sel = [r for r in rows if r["d"] == d and r["ensemble"] == e]
            if not sel:
                continue
            counts = " / ".join(str(sum(r["verdict"] == v for r in sel)) for v in ("checked", "off", "unchecked"))
            lines.append(f"| {d} | {e} | {counts} | {100 * max(abs(r['error']) for r in sel):.1f} % | "
                         f"{100 * sum(r['error'] for r in sel) / len(sel):+.1f} % | "
                         f"{100 * max(abs(r['old_error']) for r in sel):.1f} % | "
                         f"{100 * max(r['se'] / r['theory'] for r in sel):.1f} % | "
                         f"{100 * max(r['margin_se'] / r['margin'] for r in sel):.1f} % |")
    return "\n".join(lines) + "\n"


def _measure(job) -> None:
    job.record(DATA, seed=SEED, seconds=compute(), blocks=BLOCKS)


def _render(job) -> None:
    seconds = read_record(PROVENANCE)["wall_time_s"]
    write_block(HERE / "README.md", "margins_image", demote_headings(render(joined(), seconds)), "margins_image")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
