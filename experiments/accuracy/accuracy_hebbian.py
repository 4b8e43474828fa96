"""Measured Hebbian recall accuracy against the load, beside ``replica.hebbian_accuracy``.

Writes ``experiments/accuracy/README.md`` (the table, its run time and seed) and
``experiments/accuracy/accuracy_hebbian.png`` (accuracy against alpha = p ln p / d^2, theory curves,
the alpha = 1/8 and 1/2 marks).  The measurement is ``validation.accuracy.measure_accuracy``
(solver ``hebbian``, problem ``op``) at d = 64 and 128, both ensembles, loads
``alpha = 1/8, 1/4, 3/8, 1/2, 3/4, 1`` (integer p nearest to ``p ln p = alpha d^2``),
``TRIALS`` instances per load, run in this process (one core).
See ``notes/recall_accuracy.md``, "In simulation".

The curves are saved in ``experiments/accuracy/accuracy_hebbian.json`` (``AccuracyCurve.to_dict``) with a
provenance record; ``--render`` rewrites the page block and the figure from them.

Usage::

    python -m experiments.accuracy.accuracy_hebbian            # measure (about 1 min), write data, page and .png
    python -m experiments.accuracy.accuracy_hebbian --render   # page and .png from the committed data
"""

from __future__ import annotations

import math
import pathlib
import time

import numpy as np

import replica
from replica.common.ensembles import ENSEMBLES
from replica.common.seeds import DEFAULT_SEED
from validation.measurements.accuracy import AccuracyCurve, loads_from_alpha, measure_accuracy
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record, read_results, write_results
from experiments.runner import run

DIMENSIONS = (64, 128)
ALPHAS = (1 / 8, 1 / 4, 3 / 8, 1 / 2, 3 / 4, 1.0)
TRIALS = 40
SEED = DEFAULT_SEED
HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "accuracy_hebbian.json", HERE / "accuracy_hebbian.provenance.json"


def _fraction(a: float) -> str:
    return {0.125: "1/8", 0.25: "1/4", 0.375: "3/8", 0.5: "1/2", 0.75: "3/4", 1.0: "1"}.get(a, f"{a:g}")


def measure():
    """The four curves (d x ensemble) and the seconds they took."""
    start = time.perf_counter()
    curves = [measure_accuracy(d, loads_from_alpha(d, ALPHAS), solver="hebbian", ensemble=e, seed=SEED,
                               trials=TRIALS, progress=False)
              for d in DIMENSIONS for e in ENSEMBLES]
    return curves, time.perf_counter() - start


def markdown(curves, seconds) -> str:
    lines = ["# Hebbian recall accuracy: simulation beside `replica.hebbian_accuracy`", "",
             f"Produced by `python -m experiments.accuracy.accuracy_hebbian` in {seconds:.0f} s (one process), seed {SEED}, "
             f"{TRIALS} instances per load (problem `op`, instance seeds `task_seed(seed, p, trial)`).  "
             "Measured: mean recall fraction of the Hebbian W over the instances, 95 % interval "
             "`mean +- t_{0.975, n-1} sd / sqrt(n)` between instances.  `z = (measured - theory) / s.e.`; "
             "\"inside\": the theory value lies in the interval.  See `notes/recall_accuracy.md`.", "",
             "| d | ensemble | alpha | p | theory | measured | 95 % interval | s.e. | z | inside |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in curves:
        for a, pt in zip(ALPHAS, c.points):
            lines.append(f"| {c.d} | {c.ensemble} | {_fraction(a)} | {pt.p} | {pt.theory:.4f} | {pt.accuracy:.4f} | "
                         f"[{pt.ci_low:.4f}, {pt.ci_high:.4f}] | {pt.stderr:.4f} | {pt.z:+.2f} | "
                         f"{'yes' if pt.theory_inside else 'no'} |")
    points = [pt for c in curves for pt in c.points]
    inside = sum(pt.theory_inside for pt in points)
    worst = max(points, key=lambda pt: abs(pt.z))
    lines += ["", f"The theory lies inside the interval at {inside} of {len(points)} loads; largest |z| = "
              f"{abs(worst.z):.2f} (p = {worst.p}), largest |measured - theory| = "
              f"{max(abs(pt.accuracy - pt.theory) for pt in points):.4f}; mean z = "
              f"{np.mean([pt.z for pt in points]):+.2f}.", ""]
    return "\n".join(lines)


def figure(curves, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colours = {(64, "gaussian"): "C0", (64, "sphere"): "C1", (128, "gaussian"): "C2", (128, "sphere"): "C3"}
    grid = np.linspace(0.06, 1.1, 40)
    for c in curves:
        colour = colours[(c.d, c.ensemble)]
        ax.plot(grid, replica.hebbian_accuracy(c.d, np.array(_real_loads(c.d, grid)), c.ensemble), color=colour, lw=1.2,
                label=f"theory d={c.d} {c.ensemble}")
        alpha = [pt.alpha for pt in c.points]
        acc = np.array([pt.accuracy for pt in c.points])
        err = np.array([[pt.accuracy - pt.ci_low for pt in c.points], [pt.ci_high - pt.accuracy for pt in c.points]])
        ax.errorbar(alpha, acc, yerr=err, fmt="o", ms=4, color=colour, capsize=2,
                    label=f"measured d={c.d} {c.ensemble}")
    for a, text in ((1 / 8, "1/8: all stored (d→∞)"), (1 / 2, "1/2: accuracy jump (d→∞)")):
        ax.axvline(a, color="0.5", ls="--", lw=0.8)
        ax.text(a + 0.01, 0.03, text, rotation=90, va="bottom", fontsize=8, color="0.3")
    ax.set_xlabel(r"load $\alpha = p \ln p / d^2$")
    ax.set_ylabel("recall accuracy (fraction of the p facts)")
    ax.set_title(f"Hebbian memory: accuracy against load ({TRIALS} instances per point, 95 % intervals)")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(0.05, 1.1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _real_loads(d, alphas):
    """Real p with p ln p = alpha d^2 (Lambert W), for the theory curves."""
    from scipy import special

    x = np.asarray(alphas) * d * d
    return list(x / special.lambertw(x).real)


def _measure(job) -> None:
    curves, seconds = measure()
    write_results(DATA, curves)
    job.record(DATA, seed=SEED, seconds=seconds)


def _render(job) -> None:
    seconds = read_record(PROVENANCE)["wall_time_s"]
    curves = read_results(DATA, AccuracyCurve)  # the page shows what the data file holds
    text = markdown(curves, seconds)
    write_block(HERE / "README.md", "accuracy_hebbian", demote_headings(text), "accuracy_hebbian")
    figure(curves, HERE / "accuracy_hebbian.png")
    print(text)
    if not all(math.isfinite(pt.z) for c in curves for pt in c.points):
        print("note: some z undefined (zero spread)")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
