"""Measured give-up accuracy of the optimal memory above capacity, beside ``replica.variants.optimal_accuracy``.

Writes ``experiments/accuracy/README.md`` (the table, its run time and seed) and
``experiments/accuracy/accuracy_optimal.png`` (accuracy against alpha, theory curves).  The measurement
is ``validation.accuracy.measure_accuracy`` (solver ``optimal``, problem ``dp``) at
d = 16 and 32 and loads ``p = f * p_c`` for ``f`` in ``FACTORS`` (``p_c =
replica.capacity(d).p_c``), ``TRIALS`` instances per load, twice on the same instances:
with ``solver_options={"give_up": True}`` (the give-up search, a lower bound on the
best accuracy) and without (the plain decision solver: the recall fraction of its
returned W).  Run in this process (one core).  See ``notes/recall_accuracy.md``,
"Give-up mode".

The curves are saved in ``experiments/accuracy/accuracy_optimal.json`` (``AccuracyCurve.to_dict``, give-up then
plain for each d) with a provenance record; ``--render`` rewrites the page block and the figure from them.

Usage::

    python -m experiments.accuracy.accuracy_optimal            # measure (about 4 min), write data, page and .png
    python -m experiments.accuracy.accuracy_optimal --render   # page and .png from the committed data
"""

from __future__ import annotations

import pathlib
import time

import numpy as np

import replica
from validation.measurements.accuracy import measure_accuracy
from validation.solvers import set_threads
from validation.measurements.accuracy import AccuracyCurve
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record, read_results, write_results
from experiments.runner import run

DIMENSIONS = (16, 32)
FACTORS = (1.0, 1.25, 1.5, 1.75, 2.0)
TRIALS = 16
PROBLEM = "dp"
SEED = 0
HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "accuracy_optimal.json", HERE / "accuracy_optimal.provenance.json"


def loads(d) -> list:
    p_c = replica.capacity(d).p_c
    return [int(round(f * p_c)) for f in FACTORS]


def measure():
    """(give-up curve, plain curve) per d, and the seconds they took."""
    start = time.perf_counter()
    out = []
    for d in DIMENSIONS:
        pair = tuple(measure_accuracy(d, loads(d), problem=PROBLEM, solver="optimal", seed=SEED, trials=TRIALS,
                                      solver_options=options, progress=False)
                     for options in ({"give_up": True}, None))
        out.append(pair)
        print(f"d={d}: {pair[0].seconds:.0f} s give-up, {pair[1].seconds:.0f} s plain", flush=True)
    return out, time.perf_counter() - start


_INTRO = """# Optimal memory above capacity: give-up accuracy beside `replica.variants.optimal_accuracy`

Produced by `python -m experiments.accuracy.accuracy_optimal` in {seconds:.0f} s (one process, one thread), seed {seed},
{trials} instances per load (problem `{problem}`, instance seeds `task_seed(seed, p, trial)`; the same
instances for both columns).  **Give-up**: mean recall fraction of the W of the give-up search
(`solve(..., 'optimal', options={{'give_up': True}})`), a **lower bound** on the best accuracy of each
instance; 95 % interval `mean +- t sd / sqrt(n)` between instances.  **Plain**: the recall fraction of the
decision solver's returned W (the squared-hinge iterate at which non-storability was certified).  Theory:
the replica-symmetric `replica.variants.optimal_accuracy(d, p)` (+- its Monte-Carlo s.e.).  Difference = give-up -
theory.  See `notes/recall_accuracy.md`.

| d | p / p_c | p | alpha | theory | give-up [95 % CI] | give-up - theory | plain [95 % CI] | all stored (give-up) |
"""


def markdown(curves, seconds) -> str:
    lines = [_INTRO.format(seconds=seconds, seed=SEED, trials=TRIALS, problem=PROBLEM).rstrip("\n"),
             "|---|---|---|---|---|---|---|---|---|"]
    for give_up, plain in curves:
        for f, g, q in zip(FACTORS, give_up.points, plain.points):
            lines.append(f"| {give_up.d} | {f:g} | {g.p} | {g.alpha:.3f} | {g.theory:.4f} +- {g.theory_stderr:.4f} | "
                         f"{g.accuracy:.4f} [{g.ci_low:.4f}, {g.ci_high:.4f}] | {g.accuracy - g.theory:+.4f} | "
                         f"{q.accuracy:.4f} [{q.ci_low:.4f}, {q.ci_high:.4f}] | {g.stored}/{g.trials} |")
    diffs = [g.accuracy - g.theory for give_up, _ in curves for g in give_up.points]
    gains = [g.accuracy - q.accuracy for give_up, plain in curves for g, q in zip(give_up.points, plain.points)]
    lines += ["", f"Give-up minus theory: mean {np.mean(diffs):+.4f}, range [{min(diffs):+.4f}, {max(diffs):+.4f}]; "
              f"give-up minus plain: mean {np.mean(gains):+.4f}.  Status of the curves: "
              + "; ".join(f"d={g.d} {g.status}" for g, _ in curves) + ".", ""]
    return "\n".join(lines)


def figure(curves, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for colour, (give_up, plain) in zip(("C0", "C1"), curves):
        d = give_up.d
        p_c = replica.capacity(d).p_c
        grid = np.linspace(0.9 * p_c, 2.1 * p_c, 25)
        theory = [replica.variants.optimal_accuracy(d, p).accuracy for p in grid]
        ax.plot(grid * np.log(grid) / d ** 2, theory, color=colour, lw=1.2,
                label=f"theory d={d} (replica.variants.optimal_accuracy)")
        for curve, marker, name in ((give_up, "o", "give-up (lower bound)"), (plain, "x", "plain decision W")):
            alpha = [pt.alpha for pt in curve.points]
            acc = np.array([pt.accuracy for pt in curve.points])
            err = np.array([[pt.accuracy - pt.ci_low for pt in curve.points],
                            [pt.ci_high - pt.accuracy for pt in curve.points]])
            ax.errorbar(alpha, acc, yerr=err, fmt=marker, ms=4, color=colour, capsize=2,
                        label=f"measured d={d}: {name}", alpha=1.0 if marker == "o" else 0.6)
    ax.set_xlabel(r"load $\alpha = p \ln p / d^2$")
    ax.set_ylabel("recall accuracy (fraction of the p facts)")
    ax.set_title(f"Optimal memory (DP) above capacity: {TRIALS} instances per point, 95 % intervals")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center right", bbox_to_anchor=(1.0, 0.33))
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _measure(job) -> None:
    set_threads(1)
    curves, seconds = measure()
    write_results(DATA, [curve for pair in curves for curve in pair])
    job.record(DATA, seed=SEED, seconds=seconds)


def _render(job) -> None:
    seconds = read_record(PROVENANCE)["wall_time_s"]
    saved = read_results(DATA, AccuracyCurve)  # the page shows what the data file holds: (give-up, plain) per d
    curves = list(zip(saved[0::2], saved[1::2]))
    text = markdown(curves, seconds)
    write_block(HERE / "README.md", "accuracy_optimal", demote_headings(text), "accuracy_optimal")
    figure(curves, HERE / "accuracy_optimal.png")
    print(text)


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
