"""Variants of the memory problem, built on the optimal and Hebbian theories.

* :mod:`replica.variants.accuracy` -- the fraction of facts recalled and the capacity at
  a threshold accuracy (``notes/recall_accuracy.md``).
* :mod:`replica.variants.accuracy_finite` -- the best count at the integer ``p``, with the
  outputs' hull (``notes/recall_accuracy.md``, section 7).
* :mod:`replica.variants.zipf` -- the recall error of facts asked with Zipf frequencies
  (``notes/zipf.md``); its pieces in :mod:`replica.variants.zipf_facts` (the frequencies
  and the facts seen in ``T`` samples) and :mod:`replica.variants.zipf_memories` (the
  knapsack of the optimal memory, the Gaussian model of the weighted Hebbian memory).
* :mod:`replica.variants.rectangular` -- ``d_out x d_in`` memories (``notes/rectangular.md``);
  :mod:`replica.variants.few_outputs` -- the same with few outputs, where the outputs' hull
  limits the capacity (``notes/rectangular_few_outputs.md``); :mod:`replica.variants.top_k_hull`
  -- the same limit for top-k recall, a target of halfspace depth ``>= k`` (``notes/top_k.md``).
* :mod:`replica.variants.covariance` -- correlated embeddings ``Sigma^{1/2} g``
  (``notes/covariance.md``).

The rank (``kappa``), ``K`` distinct outputs and the sphere ensemble are options of
:func:`replica.optimal.capacity` itself.
"""

from __future__ import annotations

from .accuracy import (
    AccuracyCapacityResult,
    OptimalAccuracyResult,
    accuracy_capacity,
    hebbian_accuracy,
    optimal_accuracy,
)
from .covariance import CovarianceHebbianAccuracy, covariance_hebbian_accuracy, effective_rank, power_law_spectrum
from .rectangular import (
    RectangularCapacityResult,
    RectangularHebbianCapacityResult,
    rectangular_capacity,
    rectangular_hebbian_capacity,
    tail_second_moment_rectangular,
)
from .accuracy_finite import FiniteSizeAccuracyResult, finite_size_accuracy
from .few_outputs import FewOutputsCapacityResult, few_outputs_capacity
from .top_k_hull import KSetHullFactor, k_set_hull_factor
from .zipf import ZipfError, ZipfFacts, knapsack_kept, zipf_error, zipf_frequencies

__all__ = [
    "hebbian_accuracy", "optimal_accuracy", "OptimalAccuracyResult", "accuracy_capacity", "AccuracyCapacityResult",
    "zipf_error", "ZipfError", "ZipfFacts", "knapsack_kept", "zipf_frequencies",
    "rectangular_capacity", "RectangularCapacityResult", "tail_second_moment_rectangular",
    "rectangular_hebbian_capacity", "RectangularHebbianCapacityResult",
    "few_outputs_capacity", "FewOutputsCapacityResult", "k_set_hull_factor", "KSetHullFactor",
    "finite_size_accuracy", "FiniteSizeAccuracyResult",
    "power_law_spectrum", "effective_rank", "covariance_hebbian_accuracy", "CovarianceHebbianAccuracy",
]
