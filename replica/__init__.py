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

from .asymptotic import extremes as _extremes
from .asymptotic import quarter_circle as _quarter_circle
from .asymptotic.extremes import *  # noqa: F403 - the names in extremes.__all__
from .asymptotic.quarter_circle import *  # noqa: F403 - the names in quarter_circle.__all__

# Heavier modules (numba kernels, quadrature tables) load on first use.
_LAZY = {
    # how far each prediction was checked against certified measurements (experiments/scoreboard)
    "Validity": "replica.common.validity", "TheoryOffWarning": "replica.common.validity",
    # recall accuracy: the fraction of facts recalled (notes/recall_accuracy.md)
    "hebbian_accuracy": "replica.variants",
    "optimal_accuracy": "replica.variants",
    "OptimalAccuracyResult": "replica.variants",
    "accuracy_capacity": "replica.variants",
    "AccuracyCapacityResult": "replica.variants",
    # recall error of facts with Zipf frequencies (notes/zipf.md)
    "zipf_error": "replica.variants", "ZipfError": "replica.variants", "zipf_frequencies": "replica.variants",
    "ZipfFacts": "replica.variants",
    # finite-size capacity of the decoupled problem (notes/finite_size_capacity.md)
    "water_filling_cost": "replica.optimal",
    "expected_cost": "replica.optimal",
    "ExpectedCostResult": "replica.optimal",
    "capacity": "replica.optimal",
    "CapacityResult": "replica.optimal",
    "max_margin": "replica.optimal",
    "MarginCapacityResult": "replica.optimal",
    "Tolerances": "replica.optimal",
    # the margin with the block cost in the image space R^d (notes/max_margin.md, section 11)
    "max_margin_image": "replica.optimal", "ImageMarginResult": "replica.optimal",
    "ImageMarginWarning": "replica.optimal",
    # K distinct outputs: many facts share an answer (notes/many_to_one.md)
    "capacity_many_to_one": "replica.optimal",
    "effective_weights": "replica.optimal",
    "two_field_cost": "replica.optimal",
    # exact score law of unit-norm embeddings (notes/sphere_ensemble.md)
    "ProjectionLaw": "replica.optimal",
    # predicted score laws of the optimal memory (notes/finite_size_capacity.md)
    "optimal_score_laws": "replica.optimal",
    "OptimalScoreLaws": "replica.optimal",
    "sample_optimal_scores": "replica.optimal",
    "OptimalScoreSample": "replica.optimal",
    "summarize_scores": "replica.optimal",
    "ScoreSummary": "replica.optimal",
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
    "rectangular_capacity": "replica.variants",
    "RectangularCapacityResult": "replica.variants",
    "tail_second_moment_rectangular": "replica.variants",
    "rectangular_hebbian_capacity": "replica.variants",
    "RectangularHebbianCapacityResult": "replica.variants",
    # correlated embeddings (notes/covariance.md)
    # d_out x d_in memories with few outputs: the hull limit (notes/rectangular_few_outputs.md)
    "few_outputs_capacity": "replica.variants", "FewOutputsCapacityResult": "replica.variants",
    # the best recall count at the integer p, with the hull correction (notes/recall_accuracy.md, section 7)
    "finite_size_accuracy": "replica.variants", "FiniteSizeAccuracyResult": "replica.variants",
    "power_law_spectrum": "replica.variants",
    "effective_rank": "replica.variants",
    "covariance_hebbian_accuracy": "replica.variants",
    "CovarianceHebbianAccuracy": "replica.variants",
    # spectra (notes/spectra.md)
    "spectrum": "replica.asymptotic",
    "normalized_singular_values": "replica.asymptotic",
    "hebbian_spectrum": "replica.asymptotic",
    "HebbianSpectrum": "replica.asymptotic",
    # replica-symmetric saddle point (notes/replica_saddle.md)
    "free_entropy": "replica.saddle",
    "free_entropy_derivative": "replica.saddle",
    "saddle_point": "replica.saddle",
    "SaddlePoint": "replica.saddle",
    "sample_capacity": "replica.saddle",
    "SampleCapacity": "replica.saddle",
    "ReplicaSample": "replica.saddle",
}


# Old names kept for one release (DeprecationWarning on access): old name -> new name.
_DEPRECATED = {"MaxMarginResult": "MarginCapacityResult"}


def __getattr__(name):
    if name in _DEPRECATED:
        import warnings

        new = _DEPRECATED[name]
        warnings.warn(f"replica.{name} is deprecated and will be removed in the next release; use replica.{new}",
                      DeprecationWarning, stacklevel=2)
        return __getattr__(new)
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'replica' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_DEPRECATED))


try:
    from importlib.metadata import version as _version

    __version__ = _version("linear-memory-capacity")
except Exception:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.1.0"

__all__ = sorted(set(_LAZY) | set(_DEPRECATED)) + sorted(_extremes.__all__ + _quarter_circle.__all__)
