"""Finite training samples of Zipf facts: measured error beside ``replica.zipf_error(..., samples=T)``.

Writes ``experiments/zipf/README.md`` and its data ``experiments/zipf/zipf_samples.csv``.  For each
dimension in ``DIMENSIONS``, exponent in ``EXPONENTS`` and number ``T`` of training
samples in ``SAMPLES``, ``INSTANCES`` independent instances: the counts ``n_mu`` of
``T`` i.i.d. draws from ``f_mu ∝ mu^-a`` over ``N`` facts (a multinomial draw), one
instance ``validation.make_instance(d, N, "op", seed=..., facts=FactSettings(weights=f))`` of all ``N``
facts (every output competes), and the memories

* ``hebbian``: ``W = sum_{mu seen} u_mu e_mu^T``;
* ``hebbian-counts``: ``W = sum_mu n_mu u_mu e_mu^T``;
* ``optimal`` (at ``OPTIMAL_DIMENSIONS``, where at most ``OPTIMAL_MAX_SEEN`` facts are seen
  in expectation): the decision solve of the ``optimal`` solver with the constraints of
  the unseen facts left out (``validation.solvers.engine.decision.DecisionRun(..., blocked=...)``,
  the restricted problem of the give-up search), so that the seen facts' targets must beat
  all ``N`` outputs.  When the seen facts cannot all be stored, a give-up search weighted
  by the frequencies: each round gives up the fraction ``GIVE_UP_FRACTION`` of the
  unrecalled kept facts with the largest squared hinge cost per unit frequency (the
  analogue of ``C_mu / f_mu``) and solves again, until every kept fact is recalled.  The
  search is greedy, so its error is an upper bound on the optimal memory's.

Recall is ``validation.recall.recall_check`` of the instance's score matrix (float64,
ties fail); ``E = sum_mu f_mu 1{mu unseen or not recalled}``.  Mean and standard error
over the instances, beside the theory.  See ``notes/zipf.md``, section 6.

Usage::

    python -m experiments.zipf.zipf_samples     # writes experiments/zipf/README.md and experiments/zipf/zipf_samples.csv
"""

from __future__ import annotations

import csv
import math
import pathlib

import numpy as np

from replica import ZipfFacts, zipf_error, zipf_frequencies
from replica.common.seeds import DEFAULT_SEED
from validation import FactSettings, make_instance
from validation.measurements.recall import recall_check
from validation.solvers.engine.decision import DecisionRun
from validation.solvers.engine.memories import hebbian_memory
from validation.solvers.engine.options import OptimalOptions
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import run

DIMENSIONS = (32, 64)
OPTIMAL_DIMENSIONS = (32,)
N = 2000
EXPONENTS = (1.5, 2.0)
SAMPLES = (10, 30, 100, 300, 1000, 3000, 10_000, 100_000)
INSTANCES = 16
OPTIMAL_INSTANCES = 8  # rows where the theory keeps every seen fact (load ratio below OPTIMAL_LOAD)
GIVE_UP_INSTANCES = 4  # rows above it (the give-up search)
OPTIMAL_LOAD = 0.8
OPTIMAL_MAX_SEEN = 700
GIVE_UP_FRACTION = 0.2
MAX_ROUNDS = 60
THEORY_SIZE = 50_000
SEED = DEFAULT_SEED
HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "zipf_samples.csv", HERE / "zipf_samples.provenance.json"
FIELDS = ("d", "a", "T", "memory", "instances", "E_mean", "E_stderr", "unseen_mean", "seen_mean",
          "recalled_seen_fraction", "E_theory", "unseen_theory", "seen_theory", "model_status")


def _optimal_recalled(instance, seen, f):
    """Recall of every input under the W of the weighted give-up search over the seen facts, and a status word.

    ``stored``: every seen fact recalled in the first solve; ``given_up``: the search ended
    with every kept fact recalled; ``undecided``: a solve or the round budget ran out first.
    """
    kept = seen.copy()
    initial = None
    for rounds in range(1, MAX_ROUNDS + 1):
        blocked = np.zeros((N, N), dtype=bool)
        blocked[~kept] = True
        options = OptimalOptions() if initial is None else OptimalOptions(initial=initial)
        sol = DecisionRun(instance, 1.0, tol=1e-3, max_iter=20000, time_limit=120.0, refine=False,
                          options=options, blocked=blocked).run()
        initial = sol.W
        scores = instance.scores(sol.W)
        recalled, _ = recall_check(scores)
        unrecalled = np.flatnonzero(kept & ~recalled)
        if unrecalled.size == 0:
            return recalled, "stored" if rounds == 1 else "given_up"
        if sol.status == "undecided":
            break
        margins = np.diag(scores)[None, unrecalled] - scores[:, unrecalled]  # (rho, mu)
        margins[unrecalled, np.arange(unrecalled.size)] = np.inf
        cost = np.square(np.maximum(1.0 - margins, 0.0)).sum(axis=0)
        count = max(1, math.ceil(GIVE_UP_FRACTION * unrecalled.size))
        kept[unrecalled[np.argsort(-cost / f[unrecalled], kind="stable")[:count]]] = False
    return recalled, "undecided"


def measure():
    """Rows of FIELDS: one per (d, a, T, memory)."""
    rows = []
    streams = iter(np.random.SeedSequence(SEED).spawn(10_000))
    for d in DIMENSIONS:
        for a in EXPONENTS:
            f = zipf_frequencies(N, a)
            for T in SAMPLES:
                theory = {
                    "hebbian": zipf_error(d, ZipfFacts(N, a, samples=T), memory="hebbian"),
                    "hebbian-counts": zipf_error(d, ZipfFacts(N, a, weights="frequency", samples=T), memory="hebbian"),
                    "optimal": zipf_error(d, ZipfFacts(N, a, samples=T), memory="optimal", options={"size": THEORY_SIZE}),
                }
                below = theory["optimal"].load_ratio < OPTIMAL_LOAD
                run_optimal = d in OPTIMAL_DIMENSIONS and theory["optimal"].seen <= OPTIMAL_MAX_SEEN
                optimal_instances = OPTIMAL_INSTANCES if below else GIVE_UP_INSTANCES
                samples = {m: [] for m in theory}
                statuses = []
                for r in range(INSTANCES):
                    ss = next(streams)
                    draw, inst_seed = ss.spawn(2)
                    counts = np.random.default_rng(draw).multinomial(T, f)
                    seen = counts > 0
                    instance = make_instance(d, N, "op", seed=inst_seed, facts=FactSettings(weights=f))
                    memories = {
                        "hebbian": hebbian_memory(instance.targets[seen], instance.inputs[seen]),
                        "hebbian-counts": hebbian_memory(instance.targets, counts[:, None] * instance.inputs),
                    }
                    for name, W in memories.items():
                        recalled, _ = recall_check(instance.scores(W))
                        samples[name].append((seen, recalled))
                    if run_optimal and r < optimal_instances:
                        recalled, status = _optimal_recalled(instance, seen, f)
                        samples["optimal"].append((seen, recalled))
                        statuses.append(status)
                for name, runs in samples.items():
                    if not runs:
                        continue
                    errors = np.array([float(np.dot(f, ~(s & rec))) for s, rec in runs])
                    unseen = np.array([float(f[~s].sum()) for s, _ in runs])
                    seen_n = np.array([float(s.sum()) for s, _ in runs])
                    frac = np.mean([float((s & rec).sum()) / max(int(s.sum()), 1) for s, rec in runs])
                    th = theory[name]
                    status = th.status if name != "optimal" else \
                        f"{th.status}; solves: " + ", ".join(f"{statuses.count(x)} {x}" for x in sorted(set(statuses)))
                    rows.append(dict(d=d, a=a, T=T, memory=name, instances=len(runs), E_mean=errors.mean(),
                                     E_stderr=errors.std(ddof=1) / math.sqrt(len(runs)),
                                     unseen_mean=unseen.mean(), seen_mean=seen_n.mean(),
                                     recalled_seen_fraction=frac, E_theory=th.error,
                                     unseen_theory=th.unseen_mass, seen_theory=th.seen, model_status=status))
                print(f"d={d} a={a} T={T}: " + "; ".join(
                    f"{r['memory']} {r['E_mean']:.4f}+-{r['E_stderr']:.4f} (theory {r['E_theory']:.4f})"
                    for r in rows if r["d"] == d and r["a"] == a and r["T"] == T), flush=True)
    return rows


_INTRO = """# Finite training samples of Zipf facts: simulation beside `zipf_error(..., samples=T)`

Produced by `python -m experiments.zipf.zipf_samples` in {seconds:.0f} s (one process, one thread), seed
`DEFAULT_SEED` = {seed}.  N = {N} facts with frequencies $f_\\mu \\propto \\mu^{{-a}}$, all N outputs
competing (OP instances, gaussian ensemble); T samples drawn i.i.d. (multinomial counts
$n_\\mu$), a fact is seen when $n_\\mu \\ge 1$ and unseen facts count as errors.  Memories:
`hebbian` $W = \\sum_{{\\mu\\ \\text{{seen}}}} u_\\mu e_\\mu^T$, `hebbian-counts`
$W = \\sum_\\mu n_\\mu u_\\mu e_\\mu^T$ ({instances} instances per row), `optimal` (d = {opt_d} only,
at most {max_seen} facts seen in expectation; {opt_instances} instances where the theory keeps every
seen fact with load ratio below {load}, else {gu_instances}): the `optimal` decision solve with the
unseen facts' constraints left out, so each seen target must beat all N outputs, and where the
seen facts cannot all be stored a give-up search weighted by the frequencies (each round gives
up {gu_fraction:g} of the unrecalled kept facts, largest squared hinge cost per unit frequency first):
a greedy search, so its E is an **upper bound** on the optimal memory's.  Solve statuses: stored
(all seen facts in the first solve), given_up (the search ended with every kept fact recalled),
undecided.  E is the measured $\\sum_\\mu f_\\mu \\mathbf{{1}}\\lbrace \\mu$ unseen or
not recalled$\\rbrace$: mean $\\pm$ standard error over the instances; "unseen" the measured unseen
mass (mean), "recalled | seen" the mean fraction of the seen facts recalled.  Theory:
`replica.zipf_error(d, ZipfFacts(N, a, weights, samples=T), memory)` (optimal: `options={{"size": {size}}}`), its `error`,
`unseen_mass` and `seen`.  Data: `experiments/zipf/zipf_samples.csv`.  See `notes/zipf.md`, section 6.

| d | a | T | memory | instances | E measured | E theory | unseen measured | unseen theory | \
seen measured | seen theory | recalled / seen | theory status |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
"""


def write_data(rows):
    with open(DATA, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})


def read_rows() -> list[dict]:
    """The committed rows of the data file, with their types."""
    ints = ("d", "T", "instances")
    text = ("memory", "model_status")
    with open(DATA, newline="") as fh:
        return [{k: (int(v) if k in ints else v if k in text else float(v)) for k, v in r.items()}
                for r in csv.DictReader(fh)]


def write(rows, seconds):
    text = _INTRO.format(seconds=seconds, seed=SEED, N=N, instances=INSTANCES,
                         opt_d=", ".join(map(str, OPTIMAL_DIMENSIONS)), opt_instances=OPTIMAL_INSTANCES,
                         load=OPTIMAL_LOAD, size=THEORY_SIZE, max_seen=OPTIMAL_MAX_SEEN,
                         gu_instances=GIVE_UP_INSTANCES, gu_fraction=GIVE_UP_FRACTION)
    for r in rows:
        text += (f"| {r['d']} | {r['a']:g} | {r['T']} | {r['memory']} | {r['instances']} | "
                 f"{r['E_mean']:.4f} ± {r['E_stderr']:.4f} | {r['E_theory']:.4f} | {r['unseen_mean']:.4f} | "
                 f"{r['unseen_theory']:.4f} | {r['seen_mean']:.1f} | {r['seen_theory']:.1f} | "
                 f"{r['recalled_seen_fraction']:.3f} | {r['model_status']} |\n")
    write_block(HERE / "README.md", "zipf_samples", demote_headings(text), "zipf_samples")


def _measure(job) -> None:
    write_data(measure())
    job.record(DATA, seed=SEED)


def _render(job) -> None:
    write(read_rows(), read_record(PROVENANCE)["wall_time_s"])


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
