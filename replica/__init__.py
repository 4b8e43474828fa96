"""Replica theory of linear associative memories: capacities, thresholds, spectra.

Pure functions of the parameters (no random instances).  The asymptotic results:

* ``alpha_c(kappa)``: capacity ``p ln p / d^2`` of an optimal rank-``kappa d`` memory,
  ``F(kappa)/2`` with ``F`` the tail second moment of the quarter-circle law
  (``alpha_c(1) = 1/2``); ``alpha_c_hebbian(kappa) = F(kappa)/8``.
* ``expected_max(n)``, ``extreme_value_threshold(n)``, ``MaximumOfGaussians``,
  ``gumbel_expansion``: the extreme-value threshold of the competitors.
* ``QuarterCircle``, ``TruncatedQuarterCircle``: the predicted singular-value laws.
* ``hebbian_accuracy``, ``optimal_accuracy``, ``accuracy_capacity``: the fraction of
  facts recalled and the capacity at a threshold accuracy (e.g. 99 %).
* ``zipf_error``, ``zipf_frequencies``: the recall error of facts asked with Zipf
  frequencies ``f_mu = mu^-a / sum_nu nu^-a``.
* ``rectangular_capacity``, ``rectangular_hebbian_capacity``, ``tail_second_moment_rectangular``:
  ``d_out x d_in`` memories (budget ``F(kappa; ratio) d_in d_out``).
* ``covariance_hebbian_accuracy``, ``power_law_spectrum``, ``effective_rank``: correlated
  embeddings ``Sigma^{1/2} g``.

Derivations are in the project's ``notes/`` folder.
"""

from __future__ import annotations

from . import extremes as _extremes
from . import quarter_circle as _quarter_circle
from .extremes import *  # noqa: F403 - the names in extremes.__all__
from .quarter_circle import *  # noqa: F403 - the names in quarter_circle.__all__

# Heavier modules (numba kernels, quadrature tables) load on first use.
_LAZY = {
    # recall accuracy: the fraction of facts recalled (notes/recall_accuracy.md)
    "hebbian_accuracy": "replica.accuracy",
    "optimal_accuracy": "replica.accuracy",
    "OptimalAccuracyResult": "replica.accuracy",
    "accuracy_capacity": "replica.accuracy",
    "AccuracyCapacityResult": "replica.accuracy",
    # recall error of facts with Zipf frequencies (notes/zipf.md)
    "zipf_error": "replica.zipf", "ZipfError": "replica.zipf", "zipf_frequencies": "replica.zipf",
    # finite-size capacity of the decoupled problem (notes/finite_size_capacity.md)
    "water_filling_cost": "replica.finite_size",
    "expected_cost": "replica.finite_size",
    "ExpectedCostResult": "replica.finite_size",
    "capacity": "replica.finite_size",
    "CapacityResult": "replica.finite_size",
    "max_margin": "replica.finite_size",
    "MaxMarginResult": "replica.finite_size",
    # K distinct outputs: many facts share an answer (notes/many_to_one.md)
    "capacity_many_to_one": "replica.outputs",
    "effective_weights": "replica.outputs",
    "two_field_cost": "replica.outputs",
    # exact score law of unit-norm embeddings (notes/sphere_ensemble.md)
    "ProjectionLaw": "replica.sphere",
    # predicted score laws of the optimal memory (notes/finite_size_capacity.md)
    "optimal_score_laws": "replica.scores",
    "OptimalScoreLaws": "replica.scores",
    "sample_optimal_scores": "replica.scores",
    "OptimalScoreSample": "replica.scores",
    "summarize_scores": "replica.scores",
    "ScoreSummary": "replica.scores",
    # Hebbian memory at finite size (notes/hebbian_finite_size.md)
    "hebbian_success_probability": "replica.hebbian",
    "hebbian_input_failure_probability": "replica.hebbian",
    "hebbian_capacity": "replica.hebbian",
    "HebbianCapacityResult": "replica.hebbian",
    "hebbian_score_moments": "replica.hebbian",
    "HebbianScoreMoments": "replica.hebbian",
    "hebbian_score_laws": "replica.hebbian",
    "HebbianScoreLaws": "replica.hebbian",
    # d_out x d_in memories (notes/rectangular.md)
    "rectangular_capacity": "replica.rectangular",
    "RectangularCapacityResult": "replica.rectangular",
    "tail_second_moment_rectangular": "replica.rectangular",
    "rectangular_hebbian_capacity": "replica.rectangular",
    "RectangularHebbianCapacityResult": "replica.rectangular",
    # correlated embeddings (notes/covariance.md)
    "power_law_spectrum": "replica.covariance",
    "effective_rank": "replica.covariance",
    "covariance_hebbian_accuracy": "replica.covariance",
    "CovarianceHebbianAccuracy": "replica.covariance",
    # spectra (notes/spectra.md)
    "spectrum": "replica.spectra",
    "normalized_singular_values": "replica.spectra",
    "hebbian_spectrum": "replica.spectra",
    "HebbianSpectrum": "replica.spectra",
    # replica-symmetric saddle point (notes/replica_saddle.md)
    "free_entropy": "replica.saddle",
    "free_entropy_derivative": "replica.saddle",
    "saddle_point": "replica.saddle",
    "SaddlePoint": "replica.saddle",
    "sample_capacity": "replica.saddle",
    "SampleCapacity": "replica.saddle",
    "ReplicaSample": "replica.saddle",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'replica' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


try:
    from importlib.metadata import version as _version

    __version__ = _version("linear-memory-capacity")
except Exception:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.1.0"

__all__ = sorted(_LAZY) + sorted(_extremes.__all__ + _quarter_circle.__all__)
