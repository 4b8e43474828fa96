"""The measurement trial of ``validation reproduce``: one memory near capacity, its spectrum and scores.

:func:`measurement_trial` is a task function of :func:`validation.runtime.sweep.run_tasks`
(``"validation.reproduce:measurement_trial"``).  See ``notes/reproduce.md``.
"""

from __future__ import annotations

import numpy as np

from ..capacity import record_status
from ..capacity.trials import trial_instance
from ..measurements.spectra_and_scores import score_distribution, spectrum
from ..solvers import solve, solve_arguments
from ..runtime.sweep import Task, task_seed

__all__ = ["measurement_trial"]


def _memory_matrix(solution):
    if solution.W is not None:
        return np.asarray(solution.W, float)
    q, r = solution.factors
    return np.asarray(q, float) @ np.asarray(r, float).T


def measurement_trial(task: Task) -> dict:
    """Solve one instance and measure its singular values and scores.

    Scores are in competitor standard deviations, ``S / (||W||_F / d)``
    (:func:`validation.measurements.spectra_and_scores.score_distribution`: targets read through the instance's
    target map); singular values in the units of ``replica.asymptotic.spectra.spectrum(kappa)``
    (:func:`validation.measurements.spectra_and_scores.spectrum`: the ``round(kappa d)`` largest, times
    ``sqrt(F(kappa)) sqrt(d) / ||W||_F``; ``notes/spectra.md``).  At most
    ``max_competitors`` (option, default 3000) competitor scores are kept, uniformly
    sampled (seeded by the instance seed).  The option ``outputs`` (``K`` distinct answers,
    balanced map ``mu mod K``; ``K = p`` below ``p = K``) goes to the instance.
    """
    seed = task_seed(task.seed, task.p, task.trial)
    inst, opts = trial_instance(task, seed)
    max_comp = int(opts.pop("max_competitors", 3000))
    sol = solve(inst, solver=task.solver, kappa=task.kappa, **solve_arguments(opts))
    base = {**record_status(sol), "instance_seed": seed, "margin": float(sol.margin), "converged": bool(sol.converged),
            "iterations": int(sol.iterations), "seconds": float(sol.seconds), "rank": int(sol.rank)}
    w = _memory_matrix(sol)
    if not float(np.linalg.norm(w)) > 0:  # e.g. an infeasibility certificate without a memory: nothing to measure
        return {**base, "singular_values": [], "targets": [], "top_competitors": [], "competitors": [],
                "note": "solver returned W = 0"}
    spec = spectrum(w, task.kappa)
    dist = score_distribution(inst, w, max_competitors=max_comp, seed=seed)
    return {**base, "singular_values": spec.values.tolist(), "targets": dist.targets.tolist(),
            "top_competitors": dist.top_competitors.tolist(), "competitors": dist.competitors.tolist()}
