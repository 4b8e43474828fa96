"""Per-input field scales of the certified max-margin memory (diagnostic for ``notes/max_margin.md``).

For d = 16, p = round(0.4 p_c(16)) = 25 (decoupled problem, seeds ``SeedSequence([0, d, p, t])``,
t = 0, 1, 2, the seeds of ``experiments/margins/margins.py``; built with the default DP candidate
generator (2), so they are other instances than that experiment's, which pins generator 1) and
both ensembles, it solves the max-margin
problem (``solve(inst, "optimal", refine=True, options={"refine_tol": 0.005})``) and prints, per
instance: the normalised margin, how many inputs sit at the minimum margin (within 1 %), the
mean and standard deviation over inputs of ``sigma_mu = sqrt(d) |W e_mu| / ||W||_F`` (the
competitor standard deviation of input mu in units of ``||W||_F / d``), the correlation of
``sigma_mu`` with ``|e_mu|`` and ``E lambda^2`` of the eigenvalues of ``W^T W`` over their mean
(2 for the quarter circle).  Saves the numbers in ``experiments/margins/margin_scales.json`` (with a
provenance record) and writes ``experiments/margins/margin_scales.txt`` from them; ``--render`` writes the
text from the committed data.

Usage::

    python -m experiments.margins.margin_scales            # measure (about 2 min), write the data and the text
    python -m experiments.margins.margin_scales --render   # the text from the committed data
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np

import replica
from validation import EmbeddingModel, make_instance, solve
from validation.solvers import set_threads
from experiments.runner import run

HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "margin_scales.json", HERE / "margin_scales.provenance.json"


def measure() -> dict:
    """The per-instance numbers, as a JSON-safe dict."""
    set_threads(1)
    d = 16
    p = int(round(0.4 * replica.capacity(d).p_c))
    rows = []
    for ensemble in ("gaussian", "sphere"):
        for t in range(3):
            inst = make_instance(d, p, "dp", seed=np.random.SeedSequence([0, d, p, t]), embeddings=EmbeddingModel(ensemble))
            sol = solve(inst, "optimal", refine=True, time_limit=30, options={"refine_tol": 0.005})
            W = sol.matrix()
            norm = np.linalg.norm(W)
            S = inst.scores(W)
            cols = np.arange(p)
            target = S[cols, cols].copy()
            S[cols, cols] = -np.inf
            per_input = (target - S.max(axis=0)) * d / norm
            sigma = np.linalg.norm(inst.inputs @ W.T, axis=1) * np.sqrt(d) / norm
            lengths = np.linalg.norm(inst.inputs, axis=1)
            corr = float(np.corrcoef(lengths, sigma)[0, 1]) if ensemble == "gaussian" else None
            lam = np.linalg.svd(W, compute_uv=False) ** 2
            lam /= lam.mean()
            rows.append({"ensemble": ensemble, "trial": t, "margin": float(sol.margin),
                         "at_minimum": int(np.sum(per_input <= per_input.min() * 1.01)),
                         "sigma_mean": float(sigma.mean()), "sigma_sd": float(sigma.std()), "corr": corr,
                         "lambda2": float(np.mean(lam ** 2))})
    return {"d": d, "p": p, "rows": rows}


def text_of(data) -> str:
    """The text file: one line per instance."""
    d, p = data["d"], data["p"]
    lines = [f"d = {d}, p = {p}, decoupled problem, certified gap 0.5 %"]
    for r in data["rows"]:
        corr = math.nan if r["corr"] is None else r["corr"]
        lines.append(f"{r['ensemble']} t={r['trial']}: margin {r['margin']:.4f}, inputs at the minimum "
                     f"{r['at_minimum']}/{p}, sigma mean {r['sigma_mean']:.3f} sd {r['sigma_sd']:.3f}, "
                     f"corr(|e|, sigma) {corr:.2f}, E lambda^2 {r['lambda2']:.2f}")
    return "\n".join(lines) + "\n"


def _measure(job) -> None:
    DATA.write_text(json.dumps(measure(), indent=1) + "\n")
    job.record(DATA, seed=0)


def _render(job) -> None:
    text = text_of(json.loads(DATA.read_text()))  # the text shows what the data file holds
    (HERE / "margin_scales.txt").write_text(text)
    print(text, end="")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, seed=0)


if __name__ == "__main__":
    raise SystemExit(main())
