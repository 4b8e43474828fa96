"""The configurations of ``validation reproduce``: what a run measures, quick and full.

See ``notes/reproduce.md`` for the configurations, runtimes and sizes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from replica.common.results import json_safe

__all__ = ["ReproduceConfig", "QUICK", "FULL"]


@dataclass(frozen=True)
class ReproduceConfig:
    """What a reproduce run measures.

    Attributes
    ----------
    name : str
        ``"quick"`` or ``"full"`` (the report's title).
    optimal_solver : str
        Solver used for "optimal" memories (``optimal``; ``lp`` is the exact reference).
    optimal_dims : tuple of int
        d of the OP/DP full-rank capacity estimates.
    hebbian_dims : tuple of int
        d of the Hebbian capacity estimates.
    hebbian_ensemble : str
    kappa_dim : int
        d of the rank-constrained estimates.
    kappas : tuple of float
        Rank fractions (< 1) estimated at ``kappa_dim``.
    trials, rounds, initial_points : int
        Passed to :func:`~validation.capacity.estimate_capacity`.
    spectra_dim : int
        d of the spectra / score measurements (and of the OP-vs-DP comparison).
    spectra_instances : int
        Instances per spectra / score configuration.
    spectra_kappa : float
        Rank fraction of the rank-constrained spectrum.
    theory_dims : tuple of int
        d of the finite-size theory curve in figure 2.
    seed : int
    time_limit : float
        Wall-time budget (s) of one optimal solve; a solve that runs out is ``undecided``.
    accuracy_dims : tuple of int
        d of the Hebbian accuracy curves (figure 6).
    accuracy_alphas : tuple of float
        Loads ``alpha = p ln p / d^2`` of the Hebbian accuracy curves.
    accuracy_optimal_dims : tuple of int
        d of the optimal solver's accuracy curves.
    accuracy_optimal_alphas : tuple of float
        Loads of the optimal solver's and Adam's accuracy curves.
    accuracy_optimal_options : tuple of (str, value)
        Extra options of the optimal solver's accuracy trials; the default
        ``(("give_up", True),)`` runs its give-up search (the most facts it can verify
        recalled: a lower bound on the best accuracy, ``notes/recall_accuracy.md``).
    accuracy_adam_dims : tuple of int
        d of the Adam cross-entropy accuracy curves (``ensemble="sphere"``, learning rate,
        step budget and start of :class:`validation.measurements.ce_protocol.CEProtocol`, run until
        every input is recalled or the budget ends).
    accuracy_trials : int
        Instances per accuracy point.
    outputs_dim : int
        d of the capacity estimates with ``K`` distinct answers (figure 7).
    outputs_grid : tuple of int
        The ``K`` of those estimates (OP and DP each).
    scale_runs : tuple of (str, int, int, int)
        ``(problem, d, trials, rounds)`` of further full-rank capacity estimates at large
        ``d`` with the bracketing design (first step ``scale_step`` in ln p around the
        theory p_c), so that the OP-DP gap can be followed with ``d``.  Run only with
        ``optimal_solver="optimal"`` (the LP's memory grows as ``d p^2``).
    scale_step : float
        First step of those brackets in ln p.
    scale_time_limit : float
        Wall-time budget (s) of one solve of those estimates.
    rank_restarts : int
        Starts of the rank-m search (``restarts`` of :func:`validation.solve`) in the
        rank-constrained capacity estimates and measurements.
    zipf_dims : tuple of int
        d of the Zipf error measurements (figure 8; empty: none).  At each d there are
        ``N = round(zipf_overload * replica.capacity(d).p_c)`` facts with frequencies
        ``mu^-a`` (:func:`validation.measurements.zipf.measure_zipf`, problem ``op``).
    zipf_exponents : tuple of float
        Zipf exponents a of those measurements.
    zipf_trials : int
        Instances per (d, a), shared by the solvers.
    zipf_overload : float
        N over the all-stored capacity p_c(d).
    zipf_solvers : tuple of str
        Memories measured (:data:`validation.measurements.zipf.ZIPF_SOLVERS`).
    zipf_adam_steps : int
        Adam steps of the cross-entropy memories.
    """

    name: str
    optimal_solver: str
    optimal_dims: tuple
    hebbian_dims: tuple
    hebbian_ensemble: str
    kappa_dim: int
    kappas: tuple
    trials: int
    rounds: int
    initial_points: int
    spectra_dim: int
    spectra_instances: int
    spectra_kappa: float
    theory_dims: tuple
    seed: int = 2026
    time_limit: float = 60.0
    accuracy_dims: tuple = (16, 32, 64)
    accuracy_alphas: tuple = (0.0625, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0)
    accuracy_optimal_dims: tuple = (8,)
    accuracy_optimal_alphas: tuple = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
    accuracy_optimal_options: tuple = (("give_up", True),)
    accuracy_adam_dims: tuple = ()
    accuracy_trials: int = 6
    outputs_dim: int = 8
    outputs_grid: tuple = (2, 4, 8, 16)
    scale_runs: tuple = ()
    scale_step: float = 0.01
    scale_time_limit: float = 3600.0
    rank_restarts: int = 8
    zipf_dims: tuple = ()
    zipf_exponents: tuple = (1.5, 2.0)
    zipf_trials: int = 4
    zipf_overload: float = 2.0
    zipf_solvers: tuple = ("optimal", "hebbian", "hebbian_frequency", "adam_frequency")
    zipf_adam_steps: int = 1000

    def to_dict(self) -> dict:
        """JSON-safe dictionary of the configuration."""
        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, values: dict) -> ReproduceConfig:
        """The configuration of a :meth:`to_dict` payload (its lists read back as tuples)."""
        return cls(**{key: _tuples(value) for key, value in values.items()})


def _tuples(value):
    """Lists (from JSON) back to the tuples a configuration holds, at every depth."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


QUICK = ReproduceConfig(name="quick", optimal_solver="optimal", optimal_dims=(8, 12, 16),
                        hebbian_dims=(8, 16, 32), hebbian_ensemble="gaussian", kappa_dim=12,
                        kappas=(0.5,), trials=8, rounds=1, initial_points=4, spectra_dim=16,
                        spectra_instances=3, spectra_kappa=0.5, theory_dims=(8, 12, 16, 24, 32, 64, 128, 256),
                        time_limit=10.0, accuracy_optimal_dims=(6, 8, 10), accuracy_adam_dims=(6, 8, 10),
                        zipf_dims=(8, 12, 16), zipf_trials=3)
FULL = ReproduceConfig(name="full", optimal_solver="optimal", optimal_dims=(16, 32, 64),
                       hebbian_dims=(16, 32, 64, 128), hebbian_ensemble="gaussian", kappa_dim=32,
                       kappas=(0.25, 0.5, 0.75), trials=12, rounds=1, initial_points=5, spectra_dim=64,
                       spectra_instances=8, spectra_kappa=0.5,
                       theory_dims=(16, 24, 32, 48, 64, 96, 128, 256, 512, 1024),
                       accuracy_dims=(16, 32, 64, 128), accuracy_optimal_dims=(8, 16, 32),
                       accuracy_adam_dims=(8, 16, 32), accuracy_trials=10, outputs_dim=16,
                       outputs_grid=(2, 4, 8, 16, 32, 64),
                       scale_runs=(("op", 128, 8, 1), ("dp", 128, 8, 1), ("op", 256, 8, 0), ("dp", 256, 4, 0)),
                       zipf_dims=(16, 32, 64), zipf_trials=3)
