"""Two mechanisms that do not explain why shared outputs raise p_c (``notes/shared_outputs.md``, sections 2 and 3).

The original problem (OP) is invariant under any invertible linear map ``A`` of the outputs
(``W -> A^{-T} W`` keeps every score), so its p_c depends on the output cloud only up to
``GL(d)``; the decoupled problem (DP) is not (each block has its own cloud).  Two ways that
could make the OP's finite-size capacity differ from the per-block theory are measured here
on the exact block cost ``dist^2(y, K_mu)`` (``y ~ N(0, I_d)``, ``K_mu`` the normal cone of the
output polytope at the target: the cost of the replica theory in the space of ``y = W e``):

* **whitening**: the block cost of a cloud against the same cloud whitened to an exactly
  isotropic second moment (the representative of its ``GL(d)`` orbit), same blocks, same
  ``y`` (paired);
* **coherence of the anisotropy gradient**: ``g_mu = E_y[r k^T + k r^T]`` is the gradient of
  the block cost with respect to a linear map ``A = I + eps H`` of the outputs (``k`` the
  projection of ``y`` on ``K_mu``, ``r = y - k``).  The gain from adapting ``W`` to the outputs
  is of order ``|sum_mu g_mu|^2``; the ratio ``E|sum_mu g_mu|^2 / sum_mu E|g_mu|^2`` is 1 for
  independent blocks (DP) and measures the coherence of the blocks' gradients in the OP (two
  independent ``y`` samples per block make both estimates unbiased).

Usage::

    python -m experiments run shared_outputs_diagnostics            # measure (about 2 CPU-minutes), render
    python -m experiments run shared_outputs_diagnostics --render   # the block of notes/shared_outputs.md
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
from scipy.optimize import nnls

from experiments.pages import write_block
from experiments.provenance import read_record
from experiments.runner import run

SEED = 11
HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "shared_outputs_diagnostics.json"
NOTE = "../../notes/shared_outputs.md"
NAME = "shared_outputs_diagnostics"
WHITENING = ((16, 62, 2000, 10), (32, 182, 500, 10))       # d, p (about the DP p_c), clouds, blocks per cloud
COHERENCE = ((16, 62, 60, 4), (32, 182, 12, 4))            # d, p, clouds (OP) or groups of p blocks (DP), y per block


def _split(U, mu, y):
    """``(r, k)``: ``y = k + r``, ``k`` the projection on the normal cone of the cloud ``U`` at vertex ``mu``."""
    a = U[:, [mu]] - np.delete(U, mu, axis=1)
    lam, _ = nnls(a, -y, maxiter=3000)
    r = -a @ lam
    return r, y - r


def whitening(d, p, clouds, blocks, rng) -> dict:
    raw, white = [], []
    for _ in range(clouds):
        U = rng.standard_normal((d, p)) / math.sqrt(d)
        w, V = np.linalg.eigh(U @ U.T * (d / p))
        Uw = V @ np.diag(w ** -0.5) @ V.T @ U
        for _ in range(blocks):
            mu, y = int(rng.integers(p)), rng.standard_normal(d)
            raw.append(float(np.sum(_split(U, mu, y)[0] ** 2)))
            white.append(float(np.sum(_split(Uw, mu, y)[0] ** 2)))
    raw, white = np.asarray(raw), np.asarray(white)
    diff = white - raw
    n = len(raw)
    return {"d": d, "p": p, "clouds": clouds, "blocks": blocks, "raw": raw.mean(), "raw_se": raw.std(ddof=1) / n ** 0.5,
            "whitened": white.mean(), "difference": diff.mean(), "difference_se": diff.std(ddof=1) / n ** 0.5}


def _block_gradient(U, mu, ys):
    g = np.zeros((U.shape[0],) * 2)
    for y in ys:
        r, k = _split(U, mu, y)
        g += np.outer(r, k)
    return (g + g.T) / len(ys)


def coherence(d, p, clouds, per_block, rng, problem) -> dict:
    total, diagonal = [], []
    for _ in range(clouds):
        U = rng.standard_normal((d, p)) / math.sqrt(d)
        G1, G2, diag = np.zeros((d, d)), np.zeros((d, d)), 0.0
        for mu in range(p):
            if problem == "dp":
                U = rng.standard_normal((d, p)) / math.sqrt(d)
            g1 = _block_gradient(U, mu, rng.standard_normal((per_block, d)))
            g2 = _block_gradient(U, mu, rng.standard_normal((per_block, d)))
            G1 += g1
            G2 += g2
            diag += float(np.sum(g1 * g2))
        total.append(float(np.sum(G1 * G2)))
        diagonal.append(diag)
    total, diagonal = np.asarray(total), np.asarray(diagonal)
    n = len(total)
    return {"d": d, "p": p, "problem": problem, "groups": clouds, "y_per_block": per_block,
            "total": total.mean(), "total_se": total.std(ddof=1) / n ** 0.5,
            "diagonal": diagonal.mean(), "diagonal_se": diagonal.std(ddof=1) / n ** 0.5,
            "ratio": total.mean() / diagonal.mean()}


def measure() -> dict:
    out = {"seed": SEED, "whitening": [], "coherence": []}
    for i, (d, p, clouds, blocks) in enumerate(WHITENING):
        out["whitening"].append(whitening(d, p, clouds, blocks, np.random.default_rng([SEED, 0, i])))
    for i, (d, p, clouds, per_block) in enumerate(COHERENCE):
        for j, problem in enumerate(("op", "dp")):
            out["coherence"].append(coherence(d, p, clouds, per_block, np.random.default_rng([SEED, 1, i, j]),
                                              problem))
    return out


def markdown(data, record) -> list[str]:
    lines = [f"Measured by `python -m experiments run {NAME}` (seed {data['seed']}, "
             f"{record['wall_time_s']:.0f} s, code commit {record['code_commit']}); data "
             f"`experiments/op_vs_dp/{DATA.name}`.", "",
             "Whitening (paired: same blocks, same y):", "",
             "| d | p | blocks | E dist^2, raw cloud | whitened - raw | relative |", "|---|---|---|---|---|---|"]
    for w in data["whitening"]:
        lines.append(f"| {w['d']} | {w['p']} | {w['clouds'] * w['blocks']} | {w['raw']:.3f} +- {w['raw_se']:.3f} | "
                     f"{w['difference']:+.4f} +- {w['difference_se']:.4f} | "
                     f"{100 * w['difference'] / w['raw']:+.2f} +- {100 * w['difference_se'] / w['raw']:.2f} % |")
    lines += ["", "Coherence of the blocks' anisotropy gradients:", "",
              "| problem | d | p | groups of p blocks | E\\|sum g\\|^2 | sum E\\|g\\|^2 | ratio |",
              "|---|---|---|---|---|---|---|"]
    for c in data["coherence"]:
        lines.append(f"| {c['problem'].upper()} | {c['d']} | {c['p']} | {c['groups']} | {c['total']:.1f} +- "
                     f"{c['total_se']:.1f} | {c['diagonal']:.1f} +- {c['diagonal_se']:.1f} | {c['ratio']:.2f} |")
    return lines


def _measure(job) -> None:
    DATA.write_text(json.dumps(measure(), indent=1) + "\n")
    job.record(DATA, seed=SEED)


def _render(job) -> None:
    data = json.loads(DATA.read_text())
    record = read_record(HERE / "shared_outputs_diagnostics.provenance.json")
    write_block(job.output(NOTE), NAME, markdown(data, record), NAME)


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
