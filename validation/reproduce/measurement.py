"""The measurement trial of ``validation reproduce``: one memory near capacity, its spectrum and scores.

:func:`measurement_trial` is a task function of :func:`validation.sweep.run_tasks`
(``"validation.reproduce:measurement_trial"``).  See ``notes/reproduce.md``.
"""

from __future__ import annotations

import numpy as np

from replica.spectra import normalized_singular_values

from ..capacity import record_status
from ..ensembles import make_instance
from ..solvers import solve, solve_arguments
from ..sweep import Task, task_seed

__all__ = ["measurement_trial"]


def _memory_matrix(solution):
    if solution.W is not None:
        return np.asarray(solution.W, float)
    q, r = solution.factors
    return np.asarray(q, float) @ np.asarray(r, float).T


def measurement_trial(task: Task) -> dict:
    """Solve one instance and measure its singular values and scores.

    Scores are in competitor standard deviations, ``S / (||W||_F / d)``; singular
    values in the units of ``replica.spectra.spectrum(kappa)`` (the ``round(kappa d)``
    largest, times ``sqrt(F(kappa)) sqrt(d) / ||W||_F``; ``notes/spectra.md``).  At most
    ``max_competitors`` (option, default 3000) competitor scores are kept, uniformly
    sampled.
    """
    opts = dict(task.options)
    max_comp = int(opts.pop("max_competitors", 3000))
    seed = task_seed(task.seed, task.p, task.trial)
    inst = make_instance(task.d, task.p, problem=task.problem, ensemble=task.ensemble, seed=seed)
    sol = solve(inst, solver=task.solver, kappa=task.kappa, **solve_arguments(opts))
    base = {**record_status(sol), "instance_seed": seed, "margin": float(sol.margin), "converged": bool(sol.converged),
            "iterations": int(sol.iterations), "seconds": float(sol.seconds), "rank": int(sol.rank)}
    w = _memory_matrix(sol)
    fro = float(np.linalg.norm(w))
    if not fro > 0:  # e.g. an infeasibility certificate without a memory: nothing to measure
        return {**base, "singular_values": [], "targets": [], "top_competitors": [], "competitors": [],
                "note": "solver returned W = 0"}
    sv_norm = normalized_singular_values(np.linalg.svd(w, compute_uv=False), task.kappa)
    scores = np.asarray(inst.scores(w), float) / (fro / task.d)
    targets = np.diag(scores).copy()
    masked = scores.copy()
    np.fill_diagonal(masked, -np.inf)
    top = masked.max(axis=0)
    off = scores[~np.eye(task.p, dtype=bool)]
    rng = np.random.default_rng(seed)
    comp = off if off.size <= max_comp else rng.choice(off, size=max_comp, replace=False)
    return {**base, "singular_values": sv_norm.tolist(), "targets": targets.tolist(), "top_competitors": top.tolist(),
            "competitors": comp.tolist()}
