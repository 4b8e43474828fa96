"""Adam cross-entropy capacity (the protocol of Nichani, Lee & Bietti) beside the optimal memory.

Writes ``experiments/ce_protocol/README.md`` (tables, run time, seeds) and ``experiments/ce_protocol/ce_capacity.png``
(alpha = N ln N / d^2 against d: Adam-CE per seed and mean, the paper's reference line
``d^2 = 1.3 N ln N``, the theory's 99 %-accuracy capacity and the optimal solver).

* Adam-CE: :func:`validation.ce_protocol.ce_capacity` with the paper's settings
  (``CEProtocol``: learning rate 1000, 4096 steps, early stop at accuracy 0.99, sphere
  ensemble, weight decay 0, lecun-normal start) in the guided mode: the search starts
  at the load of the previous dimension's measured mean alpha (0.77, the paper's line,
  at the first d) and brackets by ``BRACKET`` before bisecting to 1 %.  At d = 8, 16, 32
  the paper's own bisection from the middle of ``[d, d^2/2]`` runs too, as a check.
* optimal: ``validation.capacity.estimate_capacity(d, "op", "optimal", "sphere",
  options=CapacityOptions(criterion="accuracy:0.99"))`` -- P(the returned W recalls >= 99 %) = 1/2, a lower bound
  on the best memory's 99 %-accuracy capacity (the solver maximises the margin of the
  all-stored problem, not the accuracy), above its all-stored capacity.
* theory: ``replica.accuracy_capacity(d, accuracy=0.99)``: Gaussian competitor fields
  (no sphere theory yet).

Everything runs in this process on one thread.  See ``notes/ce_protocol.md``.

What the page and the figure show is saved in ``experiments/ce_protocol/ce_capacity.json`` with a provenance
record; ``--render`` rewrites both from the committed data.

Usage::

    python -m experiments.ce_protocol.ce_capacity            # about 25 minutes on one core
    python -m experiments.ce_protocol.ce_capacity --render   # the page and the figure from the committed data
"""

from __future__ import annotations

import json
import math
import pathlib
import time
from types import SimpleNamespace

import numpy as np

import replica
from replica.common.seeds import DEFAULT_SEED
from validation.capacity import CapacityDesign, CapacityOptions, estimate_capacity
from validation.measurements.ce_protocol import CEProtocol, ce_capacity
from validation.solvers import set_threads
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import run

DIMENSIONS = (8, 16, 32, 64, 128)
SEEDS = {8: 5, 16: 5, 32: 5, 64: 5, 128: 1}
BRACKET = {128: 1.05}          # bracketing factor (default 1.1)
PAPER_CHECK = (8, 16, 32)      # dimensions where the paper's midpoint bisection also runs
OPTIMAL_TRIALS, OPTIMAL_ROUNDS = 4, 2
THEORY_DIMENSIONS = (8, 11, 16, 22, 32, 45, 64, 90, 128)
ACCURACY = 0.99
SEED = DEFAULT_SEED
PAPER_C = 1.3                  # d^2 = 1.3 N ln N in the paper's figure
HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "ce_capacity.json", HERE / "ce_capacity.provenance.json"


def alpha_of(n, d):
    return n * math.log(n) / d**2 if n and math.isfinite(n) else math.nan


def measure():
    """Adam-CE (guided and paper bisection), optimal and theory at every dimension."""
    adam, paper, optimal, theory = {}, {}, {}, {}
    start_alpha = 1 / PAPER_C
    for d in DIMENSIONS:
        t = time.perf_counter()
        settings = CEProtocol(start_alpha=start_alpha, bracket_factor=BRACKET.get(d, 1.1))
        adam[d] = ce_capacity(d, accuracy=ACCURACY, seeds=SEEDS[d], seed=SEED, settings=settings,
                              progress=True)
        if math.isfinite(adam[d].alpha):
            start_alpha = adam[d].alpha
        print(f"d={d}: Adam-CE {adam[d].capacities} ({time.perf_counter() - t:.0f} s)", flush=True)
        if d in PAPER_CHECK:
            paper[d] = ce_capacity(d, accuracy=ACCURACY, seeds=SEEDS[d], seed=SEED, progress=True)
        optimal[d] = estimate_capacity(d, problem="op", solver="optimal", ensemble="sphere", seed=SEED,
                                       design=CapacityDesign(trials=OPTIMAL_TRIALS, rounds=OPTIMAL_ROUNDS),
                                       options=CapacityOptions(criterion=f"accuracy:{ACCURACY}"))
        print(f"d={d}: optimal p_c {optimal[d].p_c:.1f}", flush=True)
    for d in sorted(set(THEORY_DIMENSIONS) | set(DIMENSIONS)):
        theory[d] = replica.accuracy_capacity(d, accuracy=ACCURACY)
    return adam, paper, optimal, theory


def _ce_summary(r) -> dict:
    return {"mean": r.mean, "minimum": r.minimum, "maximum": r.maximum, "alpha": r.alpha,
            "capacities": list(r.capacities), "status": r.status,
            "per_seed": [{"alpha": s.alpha, "status": s.status, "runs": len(s.trials)} for s in r.per_seed]}


def save(adam, paper, optimal, theory) -> None:
    """What the page and the figure show, as JSON (keys: the dimensions as strings)."""
    data = {"adam": {d: _ce_summary(r) for d, r in adam.items()},
            "paper": {d: _ce_summary(r) for d, r in paper.items()},
            "optimal": {d: {"p_c": e.p_c, "p_c_low": e.p_c_low, "p_c_high": e.p_c_high, "alpha": e.alpha}
                        for d, e in optimal.items()},
            "theory": {d: {"p_c": t.p_c} for d, t in theory.items()}}
    DATA.write_text(json.dumps(data, indent=1) + "\n")


def load():
    """The saved ``(adam, paper, optimal, theory)``, as objects with the attributes the page reads."""
    def ce(r):
        per_seed = [SimpleNamespace(alpha=s["alpha"], status=s["status"], trials=range(s["runs"]))
                    for s in r["per_seed"]]
        return SimpleNamespace(**{**r, "per_seed": per_seed})

    data = json.loads(DATA.read_text())
    adam, paper = ({int(d): ce(r) for d, r in data[key].items()} for key in ("adam", "paper"))
    optimal, theory = ({int(d): SimpleNamespace(**r) for d, r in data[key].items()} for key in ("optimal", "theory"))
    return adam, paper, optimal, theory


def _range(r):
    return f"{r.minimum:.0f}-{r.maximum:.0f}"


def markdown(adam, paper, optimal, theory, seconds):
    lines = [
        "# Adam cross-entropy capacity at 99 % accuracy beside the optimal memory",
        "",
        "Generated by `experiments/ce_protocol/ce_capacity.py` (protocol: `notes/ce_protocol.md`). "
        f"Wall time {seconds / 60:.1f} min on one core; base seed {SEED} (instances of seed "
        "number s at load N: `validation.ce_protocol.trial_seed(seed, s, N)`; optimal trials: "
        "`task_seed(seed, p, t)`).",
        "",
        "Adam-CE: the paper's settings (lr 1000, 4096 full-batch steps, early stop at accuracy "
        ">= 0.99, weight decay 0, lecun-normal start, unit-norm inputs and answers), guided "
        "bisection to 1 % (start at the previous d's mean alpha, bracket factor 1.1; 1.05 at "
        f"d = 128). Seeds per d: {', '.join(f'{d}: {SEEDS[d]}' for d in DIMENSIONS)} (one seed at "
        "d = 128: a failing run there costs about 150 s; d = 256 is left out, one run at its "
        "capacity would take about half an hour).",
        "",
        "optimal: `estimate_capacity(..., solver='optimal', ensemble='sphere', "
        f"design=CapacityDesign(trials={OPTIMAL_TRIALS}, rounds={OPTIMAL_ROUNDS}), "
        "options=CapacityOptions(criterion='accuracy:0.99'))`, where "
        "half the instances reach 99 % recall with the returned W: a **lower bound** on the "
        "best memory's 99 %-accuracy capacity (and above its all-stored capacity). theory: "
        "`replica.accuracy_capacity(d, accuracy=0.99)`, **Gaussian** theory (no sphere theory "
        "exists yet).",
        "",
        "| d | seeds | Adam-CE N (mean) | range | alpha Adam | optimal p_c (lower bound) | 95 % interval "
        "| alpha optimal | theory p_c (gaussian) | alpha theory | Adam / optimal | Adam / theory |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in DIMENSIONS:
        a, o, th = adam[d], optimal[d], theory[d]
        lines.append(
            f"| {d} | {len(a.per_seed)} | {a.mean:.1f} | {_range(a)} | {a.alpha:.3f} | {o.p_c:.1f} | "
            f"{o.p_c_low:.1f}-{o.p_c_high:.1f} | {o.alpha:.3f} | {th.p_c:.1f} | {alpha_of(th.p_c, d):.3f} | "
            f"{a.mean / o.p_c:.3f} | {a.mean / th.p_c:.3f} |")
    lines += ["", f"Paper's line: alpha = 1 / {PAPER_C} = {1 / PAPER_C:.3f}.", "",
              "Per-seed capacities (guided search) and runs used:", ""]
    for d in DIMENSIONS:
        runs = [len(s.trials) for s in adam[d].per_seed]
        lines.append(f"- d = {d}: {', '.join(f'{c:.0f}' for c in adam[d].capacities)} "
                     f"(runs {runs}; status {adam[d].status})")
    lines += ["", "The paper's bisection (first trial at the middle of [d, d^2/2]) against the "
              "guided search, same seeds:", "",
              "| d | paper bisection mean | range | guided mean | range |", "|---|---|---|---|---|"]
    for d in PAPER_CHECK:
        p, a = paper[d], adam[d]
        lines.append(f"| {d} | {p.mean:.1f} | {_range(p)} | {a.mean:.1f} | {_range(a)} |")
    lines += ["", "Figure: `experiments/ce_protocol/ce_capacity.png`.", ""]
    return "\n".join(lines)


def figure(adam, optimal, theory, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for d in DIMENSIONS:
        per = [s.alpha for s in adam[d].per_seed if s.status == "ok"]
        ax.scatter([d] * len(per), per, s=12, color="tab:blue", alpha=0.4)
    ds = np.array(DIMENSIONS)
    ax.plot(ds, [adam[d].alpha for d in ds], "o-", color="tab:blue", label="Adam-CE (mean; dots: seeds)")
    ax.plot(ds, [optimal[d].alpha for d in ds], "s-", color="tab:green",
            label="optimal solver, 99 % (lower bound)")
    td = sorted(theory)
    ax.plot(td, [alpha_of(theory[d].p_c, d) for d in td], "--", color="tab:red",
            label="theory, 99 % accuracy (gaussian)")
    ax.axhline(1 / PAPER_C, color="gray", ls=":", label=r"paper: $d^2 = 1.3\,N\ln N$")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("d")
    ax.set_ylabel(r"$\alpha = N \ln N / d^2$")
    ax.set_title("Capacity at 99 % recall accuracy (sphere ensemble)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def _measure(job) -> None:
    set_threads(1)
    save(*measure())
    job.record(DATA, seed=SEED)


def _render(job) -> None:
    seconds = read_record(PROVENANCE)["wall_time_s"]
    adam, paper, optimal, theory = load()  # the page shows what the data file holds
    figure(adam, optimal, theory, HERE / "ce_capacity.png")
    write_block(HERE / "README.md", "ce_capacity", demote_headings(markdown(adam, paper, optimal, theory, seconds)),
                "ce_capacity")
    print(f"wrote experiments/ce_protocol/README.md and experiments/ce_protocol/ce_capacity.png ({seconds / 60:.1f} min)")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
