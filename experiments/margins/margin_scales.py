"""Per-input field scales of the certified max-margin memory (diagnostic for ``notes/max_margin.md``).

For d = 16, p = round(0.4 p_c(16)) = 25 (decoupled problem, seeds ``SeedSequence([0, d, p, t])``,
t = 0, 1, 2, the instances of ``experiments/margins/margins.py``) and both ensembles, it solves the max-margin
problem (``solve(inst, "optimal", refine=True, options={"refine_tol": 0.005})``) and prints, per
instance: the normalised margin, how many inputs sit at the minimum margin (within 1 %), the
mean and standard deviation over inputs of ``sigma_mu = sqrt(d) |W e_mu| / ||W||_F`` (the
competitor standard deviation of input mu in units of ``||W||_F / d``), the correlation of
``sigma_mu`` with ``|e_mu|`` and ``E lambda^2`` of the eigenvalues of ``W^T W`` over their mean
(2 for the quarter circle).  Writes ``experiments/margins/margin_scales.txt``.

Usage::

    python -m experiments.margins.margin_scales
"""

from __future__ import annotations

import pathlib

import numpy as np

import replica
from validation import EmbeddingModel, make_instance, solve
from validation.solvers import set_threads

HERE = pathlib.Path(__file__).resolve().parent


def main() -> None:
    set_threads(1)
    d = 16
    p = int(round(0.4 * replica.capacity(d).p_c))
    lines = [f"d = {d}, p = {p}, decoupled problem, certified gap 0.5 %"]
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
            corr = np.corrcoef(lengths, sigma)[0, 1] if ensemble == "gaussian" else float("nan")
            lam = np.linalg.svd(W, compute_uv=False) ** 2
            lam /= lam.mean()
            at_min = int(np.sum(per_input <= per_input.min() * 1.01))
            lines.append(f"{ensemble} t={t}: margin {sol.margin:.4f}, inputs at the minimum {at_min}/{p}, "
                         f"sigma mean {sigma.mean():.3f} sd {sigma.std():.3f}, corr(|e|, sigma) {corr:.2f}, "
                         f"E lambda^2 {np.mean(lam ** 2):.2f}")
    text = "\n".join(lines) + "\n"
    (HERE / "margin_scales.txt").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
