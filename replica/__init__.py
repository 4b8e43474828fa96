"""Replica theory of linear associative memories: capacities, thresholds, spectra.

Pure functions of the parameters (no random instances).  One front end per quantity,
with its models behind it (``replica.common.registry``; ``model=`` picks one, the
default is the model the certified measurements support at that point):

* ``capacity(d, kappa, margin, top_k, d_out=, outputs=, problem=, ensemble=)``: ``p_c``
  of the optimal memory (square, rank ``kappa d``, ``d_out x d``, ``K`` answers, top-k,
  margin, unit-norm embeddings); ``hebbian_capacity``: the Hebbian rule's.
* ``max_margin(d, p)``: the largest margin at load ``p``.
* ``accuracy(d, p, memory=)``: the fraction of facts recalled; ``hebbian_accuracy``
  (vectorised in ``p``), ``accuracy_capacity`` (the load at a threshold accuracy).
* ``zipf_error(d, ZipfFacts(N, a))``: the frequency mass not recalled.
* ``spectrum(kappa)``: the singular-value law at capacity.

Every result names its ``model`` and carries ``validity``: how far that model was
checked against certified measurements (``replica.validity``).  The asymptotic results:

* ``alpha_c(kappa)``: capacity ``p ln p / d^2`` of an optimal rank-``kappa d`` memory,
  ``F(kappa)/2`` with ``F`` the tail second moment of the quarter-circle law
  (``alpha_c(1) = 1/2``); ``alpha_c_hebbian(kappa) = F(kappa)/8``.
* ``expected_max(n)``, ``extreme_value_threshold(n)``, ``MaximumOfGaussians``,
  ``gumbel_expansion``: the extreme-value threshold of the competitors.
* ``QuarterCircle``, ``TruncatedQuarterCircle``: the predicted singular-value laws.

The pieces behind the front ends (costs, score laws, the saddle point's free entropy)
are in the subpackages ``replica.optimal``, ``replica.hebbian``, ``replica.variants``,
``replica.saddle`` and ``replica.asymptotic``.  Derivations are in the project's
``notes/`` folder.
"""

from __future__ import annotations

from .asymptotic import extremes as _extremes
from .asymptotic import quarter_circle as _quarter_circle
from .asymptotic.extremes import *  # noqa: F403 - the names in extremes.__all__
from .asymptotic.quarter_circle import *  # noqa: F403 - the names in quarter_circle.__all__

# Heavier modules (numba kernels, quadrature tables) load on first use.
_LAZY = {
    # one front end per quantity, its models behind it (replica.quantities, replica.common.registry)
    "capacity": "replica.quantities", "hebbian_capacity": "replica.quantities", "max_margin": "replica.quantities",
    "accuracy": "replica.quantities", "zipf_error": "replica.variants", "spectrum": "replica.quantities",
    "accuracy_capacity": "replica.variants",
    # how far each prediction was checked against certified measurements (experiments/scoreboard)
    "Validity": "replica.common.validity", "TheoryOffWarning": "replica.common.validity",
    "validity": "replica.quantities",
    # the result types of the front ends
    "CapacityResult": "replica.optimal", "RectangularCapacityResult": "replica.variants",
    "FewOutputsCapacityResult": "replica.variants", "HebbianCapacityResult": "replica.hebbian",
    "RectangularHebbianCapacityResult": "replica.variants", "MarginCapacityResult": "replica.optimal",
    "ImageMarginResult": "replica.optimal", "ImageMarginWarning": "replica.optimal",
    "OptimalAccuracyResult": "replica.variants", "FiniteSizeAccuracyResult": "replica.variants",
    "CovarianceHebbianAccuracy": "replica.variants", "AccuracyCapacityResult": "replica.variants",
    "ZipfError": "replica.variants", "Tolerances": "replica.optimal",
    # the Hebbian memory's expected accuracy, vectorised in p (notes/recall_accuracy.md)
    "hebbian_accuracy": "replica.variants",
    # Zipf facts (notes/zipf.md) and correlated embeddings (notes/covariance.md)
    "ZipfFacts": "replica.variants", "zipf_frequencies": "replica.variants",
    "power_law_spectrum": "replica.variants", "effective_rank": "replica.variants",
    # spectra (notes/spectra.md)
    "normalized_singular_values": "replica.asymptotic", "hebbian_spectrum": "replica.asymptotic",
    "HebbianSpectrum": "replica.asymptotic",
    # replica-symmetric saddle point (notes/replica_saddle.md)
    "saddle_point": "replica.saddle", "SaddlePoint": "replica.saddle",
    "sample_capacity": "replica.saddle", "SampleCapacity": "replica.saddle",
}

# Old names kept for one release (DeprecationWarning on access): old name -> (module, what to use instead).
# Each resolves to the object it always was (the model itself, not its front end).
_DEPRECATED = {
    "MaxMarginResult": ("replica.optimal:MarginCapacityResult", "replica.MarginCapacityResult"),
    "rectangular_capacity": ("replica.variants", "replica.capacity(d_in, d_out=d_out, model='budget')"),
    "few_outputs_capacity": ("replica.variants", "replica.capacity(d_in, d_out=d_out, model='hull_budget')"),
    "capacity_many_to_one": ("replica.optimal", "replica.capacity(d, outputs=K, problem='op')"),
    "max_margin_image": ("replica.optimal", "replica.max_margin(d, p, model='image')"),
    "optimal_accuracy": ("replica.variants", "replica.accuracy(d, p, model='replica_symmetric')"),
    "finite_size_accuracy": ("replica.variants", "replica.accuracy(d, p, model='finite_size_hull')"),
    "rectangular_hebbian_capacity": ("replica.variants", "replica.hebbian_capacity(d_in, d_out=d_out)"),
    "covariance_hebbian_accuracy": ("replica.variants", "replica.accuracy(d, p, memory='hebbian', ...)"),
    "tail_second_moment_rectangular": ("replica.variants", "replica.variants.tail_second_moment_rectangular"),
    "water_filling_cost": ("replica.optimal", "replica.optimal.water_filling_cost"),
    "expected_cost": ("replica.optimal", "replica.optimal.expected_cost"),
    "ExpectedCostResult": ("replica.optimal", "replica.optimal.ExpectedCostResult"),
    "effective_weights": ("replica.optimal", "replica.optimal.effective_weights"),
    "two_field_cost": ("replica.optimal", "replica.optimal.two_field_cost"),
    "ProjectionLaw": ("replica.optimal", "replica.optimal.ProjectionLaw"),
    "optimal_score_laws": ("replica.optimal", "replica.optimal.optimal_score_laws"),
    "OptimalScoreLaws": ("replica.optimal", "replica.optimal.OptimalScoreLaws"),
    "sample_optimal_scores": ("replica.optimal", "replica.optimal.sample_optimal_scores"),
    "OptimalScoreSample": ("replica.optimal", "replica.optimal.OptimalScoreSample"),
    "summarize_scores": ("replica.optimal", "replica.optimal.summarize_scores"),
    "ScoreSummary": ("replica.optimal", "replica.optimal.ScoreSummary"),
    "hebbian_success_probability": ("replica.hebbian", "replica.hebbian.hebbian_success_probability"),
    "hebbian_input_failure_probability": ("replica.hebbian", "replica.hebbian.hebbian_input_failure_probability"),
    "hebbian_score_moments": ("replica.hebbian", "replica.hebbian.hebbian_score_moments"),
    "HebbianScoreMoments": ("replica.hebbian", "replica.hebbian.HebbianScoreMoments"),
    "hebbian_score_laws": ("replica.hebbian", "replica.hebbian.hebbian_score_laws"),
    "HebbianScoreLaws": ("replica.hebbian", "replica.hebbian.HebbianScoreLaws"),
    "free_entropy": ("replica.saddle", "replica.saddle.free_entropy"),
    "free_entropy_derivative": ("replica.saddle", "replica.saddle.free_entropy_derivative"),
    "ReplicaSample": ("replica.saddle", "replica.saddle.ReplicaSample"),
}


_SUBPACKAGES = ("optimal", "hebbian", "variants", "saddle", "asymptotic", "common", "quantities", "cli")


def __getattr__(name):
    import importlib

    if name in _DEPRECATED:
        import warnings

        where, instead = _DEPRECATED[name]
        warnings.warn(f"replica.{name} is deprecated and will be removed in the next release; use {instead}",
                      DeprecationWarning, stacklevel=2)
        module, _, attribute = where.partition(":")
        return getattr(importlib.import_module(module), attribute or name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"replica.{name}")
    if name in _LAZY:
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
