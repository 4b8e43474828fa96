"""Theory tables of rectangular memories and of the Hebbian rule with correlated embeddings.

Writes ``experiments/rectangular/README.md`` and its data ``experiments/rectangular/rectangular_theory.json``:

1. ``replica.variants.tail_second_moment_rectangular(kappa, ratio)`` on a grid;
2. ``replica.variants.rectangular_capacity`` (DP, OP, rank 1/2) and ``rectangular_hebbian_capacity``
   (stored outputs / fresh candidates) for several shapes, default seed;
3. the per-input failure rate of the rectangular Hebbian model
   (``replica.hebbian.model.memory_failure_probability``) beside sampled memories
   (``FAILURE_INSTANCES`` instances, seed ``FAILURE_SEED``);
4. ``replica.variants.covariance_hebbian_accuracy`` at d = 32, p = 12 for power-law spectra beside
   sampled Hebbian memories (numpy, ``INSTANCES`` instances, seed ``SEED``; mean over
   instances +- its standard error between instances).

See ``notes/rectangular.md`` and ``notes/covariance.md``.

Usage::

    python -m experiments.rectangular.rectangular_theory
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np

from replica import power_law_spectrum
from replica.variants import (covariance_hebbian_accuracy, rectangular_capacity, rectangular_hebbian_capacity,
                              tail_second_moment_rectangular)
from replica.hebbian.model import memory_failure_probability
from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import run

HERE = pathlib.Path(__file__).resolve().parent
PROVENANCE = HERE / "rectangular_theory.provenance.json"
KAPPAS = (0.1, 0.25, 0.5, 0.75)
RATIOS = (1.0, 0.5, 0.25, 0.1, 0.01)
SHAPES = ((32, 32), (16, 64), (64, 16), (8, 128), (128, 8), (4, 256), (256, 4))
COVARIANCE_D, COVARIANCE_P = 32, 12
EXPONENTS = ((0.0, 0.0), (0.5, 0.5), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0))
INSTANCES = 2000
SEED = 7
FAILURE_CASES = (("gaussian", 8, 32, 12), ("gaussian", 32, 8, 12), ("sphere", 8, 32, 16), ("sphere", 32, 8, 16))
FAILURE_INSTANCES = 3000
FAILURE_SEED = 2


def _embeddings(rng, n, d, ensemble):
    x = rng.standard_normal((n, d))
    return x / math.sqrt(d) if ensemble == "gaussian" else x / np.linalg.norm(x, axis=1, keepdims=True)


def sampled_failure(ensemble, d_in, d_out, p, instances, seed, fresh):
    """Per-input failure rate of sampled d_out x d_in Hebbian memories: (mean over instances, s.e.)."""
    rng = np.random.default_rng(seed)
    fails = np.empty(instances)
    for i in range(instances):
        E = _embeddings(rng, p, d_in, ensemble)
        U = _embeddings(rng, p, d_out, ensemble)
        Y = E @ (U.T @ E).T
        target = np.sum(U * Y, axis=1)
        if fresh:
            V = _embeddings(rng, p * (p - 1), d_out, ensemble).reshape(p, p - 1, d_out)
            best = np.einsum("mrk,mk->mr", V, Y).max(axis=1)
        else:
            S = U @ Y.T
            np.fill_diagonal(S, -np.inf)
            best = S.max(axis=0)
        fails[i] = np.mean(best >= target)
    return float(fails.mean()), float(fails.std(ddof=1) / math.sqrt(instances))


def sampled_accuracy(d, p, lam_in, lam_out, instances, seed, fresh):
    """Recall accuracy of sampled Hebbian memories, e = Sigma_in^1/2 g, u = Sigma_out^1/2 g: (mean, s.e.)."""
    rng = np.random.default_rng(seed)
    accuracy = np.empty(instances)
    for i in range(instances):
        E = rng.standard_normal((p, d)) * np.sqrt(lam_in / d)
        U = rng.standard_normal((p, d)) * np.sqrt(lam_out / d)
        Y = E @ (U.T @ E).T
        target = np.sum(U * Y, axis=1)
        if fresh:
            V = rng.standard_normal((p, p - 1, d)) * np.sqrt(lam_out / d)
            best = np.einsum("mrk,mk->mr", V, Y).max(axis=1)
        else:
            S = U @ Y.T
            np.fill_diagonal(S, -np.inf)
            best = S.max(axis=0)
        accuracy[i] = np.mean(best < target)
    return float(accuracy.mean()), float(accuracy.std(ddof=1) / math.sqrt(instances))


def compute():
    data = {"tail": [], "capacity": [], "failure": [], "covariance": []}
    for kappa in KAPPAS:
        tails = {str(r): float(tail_second_moment_rectangular(kappa, r)) for r in RATIOS}
        data["tail"].append({"kappa": kappa, **tails})
    for d_in, d_out in SHAPES:
        dp = rectangular_capacity(d_in, d_out)
        op = rectangular_capacity(d_in, d_out, problem="op")
        half = rectangular_capacity(d_in, d_out, 0.5)
        stored = rectangular_hebbian_capacity(d_in, d_out)
        fresh = rectangular_hebbian_capacity(d_in, d_out, problem="dp")
        data["capacity"].append({
            "d_in": d_in, "d_out": d_out, "dp_p_c": dp.p_c, "dp_stderr": dp.stderr, "dp_alpha": dp.alpha,
            "op_p_c": op.p_c, "op_stderr": op.stderr, "half_rank_F": half.tail_second_moment,
            "half_rank_p_c": half.p_c, "hebbian_op_p_c": stored.p_c, "hebbian_dp_p_c": fresh.p_c,
            "statuses": [r.status for r in (dp, op, half, stored, fresh)]})
    for ensemble, d_in, d_out, p in FAILURE_CASES:
        for fresh in (True, False):
            competitors = "fresh" if fresh else "stored"
            mean, se = sampled_failure(ensemble, d_in, d_out, p, FAILURE_INSTANCES, FAILURE_SEED, fresh)
            data["failure"].append({"ensemble": ensemble, "d_in": d_in, "d_out": d_out, "p": p,
                                    "competitors": competitors,
                                    "model": memory_failure_probability(d_in, d_out, p, ensemble, competitors),
                                    "sampled": mean, "sampled_stderr": se})
    d, p = COVARIANCE_D, COVARIANCE_P
    for ex_in, ex_out in EXPONENTS:
        lam_in, lam_out = power_law_spectrum(d, ex_in), power_law_spectrum(d, ex_out)
        dp = covariance_hebbian_accuracy(d, p, input_spectrum=lam_in, output_spectrum=lam_out)
        op = covariance_hebbian_accuracy(d, p, input_spectrum=lam_in, output_spectrum=lam_out, problem="op")
        s_dp, se_dp = sampled_accuracy(d, p, lam_in, lam_out, INSTANCES, SEED, True)
        s_op, se_op = sampled_accuracy(d, p, lam_in, lam_out, INSTANCES, SEED, False)
        data["covariance"].append({
            "exponent_in": ex_in, "exponent_out": ex_out, "r_in": dp.input_effective_rank,
            "r_out": dp.output_effective_rank, "dp_theory": dp.accuracy, "dp_theory_stderr": dp.stderr,
            "dp_sampled": s_dp, "dp_sampled_stderr": se_dp, "op_model": op.accuracy, "op_sampled": s_op,
            "op_sampled_stderr": se_op})
    return data


def render(data, seconds):
    lines = ["# Rectangular memories and correlated embeddings: theory tables", "",
             f"Produced by `python -m experiments.rectangular.rectangular_theory` in {seconds:.0f} s (one process), data in "
             "`experiments/rectangular/rectangular_theory.json`.  Theory values use the default seed of `replica`; the sampled "
             f"accuracies are means over {INSTANCES} numpy instances (seed {SEED}) +- their standard error "
             "between instances.  See `notes/rectangular.md` and `notes/covariance.md`.", "",
             "## F(kappa; ratio): the Frobenius mass kept by the top kappa fraction of singular values", "",
             "| kappa | " + " | ".join(f"ratio {r:g}" for r in RATIOS) + " |",
             "|---|" + "---|" * len(RATIOS)]
    for row in data["tail"]:
        lines.append(f"| {row['kappa']:g} | " + " | ".join(f"{row[str(r)]:.6f}" for r in RATIOS) + " |")
    lines += ["", "## Capacities of d_out x d_in memories", "",
              "DP, OP: `rectangular_capacity(d_in, d_out, problem=...)` (full rank; p_c +- Monte-Carlo stderr); "
              "rank 1/2: `rectangular_capacity(d_in, d_out, 0.5)`; Hebbian: `rectangular_hebbian_capacity` with "
              "the stored outputs (OP) or fresh candidates (DP) as competitors.", "",
              "| d_in | d_out | DP p_c | alpha = p ln p / (d_in d_out) | OP p_c | F(1/2; ratio) | rank-1/2 p_c "
              "| Hebbian OP p_c | Hebbian DP p_c |",
              "|---|---|---|---|---|---|---|---|---|"]
    for row in data["capacity"]:
        lines.append(f"| {row['d_in']} | {row['d_out']} | {row['dp_p_c']:.2f} +- {row['dp_stderr']:.2f} | "
                     f"{row['dp_alpha']:.4f} | {row['op_p_c']:.2f} +- {row['op_stderr']:.2f} | "
                     f"{row['half_rank_F']:.4f} | {row['half_rank_p_c']:.2f} | {row['hebbian_op_p_c']:.2f} | "
                     f"{row['hebbian_dp_p_c']:.2f} |")
    lines += ["", "## Per-input failure rate of rectangular Hebbian memories", "",
              f"Model: `memory_failure_probability(d_in, d_out, p, ensemble, competitors)`; sampled: "
              f"{FAILURE_INSTANCES} numpy instances (seed {FAILURE_SEED}), mean over instances +- s.e.", "",
              "| ensemble | d_in | d_out | p | competitors | model | sampled |", "|---|---|---|---|---|---|---|"]
    for row in data["failure"]:
        lines.append(f"| {row['ensemble']} | {row['d_in']} | {row['d_out']} | {row['p']} | {row['competitors']} | "
                     f"{row['model']:.4f} | {row['sampled']:.4f} +- {row['sampled_stderr']:.4f} |")
    d, p = COVARIANCE_D, COVARIANCE_P
    lines += ["", f"## Hebbian accuracy with power-law covariances (d = {d}, p = {p})", "",
              "Spectra `power_law_spectrum(d, exponent)`; DP theory: `covariance_hebbian_accuracy` (exact "
              "conditional law, 100000 draws, +- Monte-Carlo stderr); OP model: the finite-size model at the "
              "effective ranks.", "",
              "| exponent in | exponent out | r_in | r_out | DP theory | DP sampled | OP model | OP sampled |",
              "|---|---|---|---|---|---|---|---|"]
    for row in data["covariance"]:
        lines.append(f"| {row['exponent_in']:g} | {row['exponent_out']:g} | {row['r_in']:.2f} | {row['r_out']:.2f} | "
                     f"{row['dp_theory']:.4f} +- {row['dp_theory_stderr']:.1g} | "
                     f"{row['dp_sampled']:.4f} +- {row['dp_sampled_stderr']:.4f} | {row['op_model']:.4f} | "
                     f"{row['op_sampled']:.4f} +- {row['op_sampled_stderr']:.4f} |")
    return "\n".join(lines) + "\n"


def _measure(job) -> None:
    data = compute()
    (HERE / "rectangular_theory.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    job.record("rectangular_theory.json", seed=SEED)


def _render(job) -> None:
    data = json.loads((HERE / "rectangular_theory.json").read_text())
    seconds = read_record(PROVENANCE)["wall_time_s"]
    write_block(HERE / "README.md", "rectangular_theory", demote_headings(render(data, seconds)), "rectangular_theory")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
