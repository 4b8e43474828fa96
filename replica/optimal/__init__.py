"""The optimal memory at finite size: capacity, largest margin, expected cost, score laws.

At capacity the replica-symmetric overlap ``q`` tends to 1 and the capacity solves
``p E[C_p] = F(kappa) d^2`` with ``C_p`` the water-filling cost of one block of fields
(``notes/finite_size_capacity.md``).  The front end is :mod:`replica.optimal.finite_size`;
the pieces:

* :mod:`replica.optimal.water_filling` -- the exact cost ``C_p`` of given fields;
* :mod:`replica.optimal.order_statistics` -- the common random numbers (top order
  statistics of the competitors);
* :mod:`replica.optimal.cost` -- ``E[C_p]`` and the field laws;
* :mod:`replica.optimal.capacity_equation` -- the root of the capacity equation with one
  answer per fact;
* :mod:`replica.optimal.outputs` -- ``K`` distinct answers shared by many facts
  (``notes/many_to_one.md``);
* :mod:`replica.optimal.sphere` -- the exact field law of unit-norm embeddings
  (``notes/sphere_ensemble.md``);
* :mod:`replica.optimal.scores` -- the predicted score laws of the optimal memory;
* :mod:`replica.optimal.image_margin` -- the largest margin with the block's exact least
  move in the image space R^d (``notes/max_margin.md``, section 11);
* :mod:`replica.optimal.shared_outputs` -- the original problem's capacity with the
  shared-outputs term (``notes/shared_outputs.md``; model ``shared_outputs`` of
  ``replica.capacity``);
* :mod:`replica.optimal.finite_spectrum` -- the spectrum at finite ``d`` and load ``p``
  (``notes/spectra.md``, section 7; model ``finite_ratio`` of ``replica.spectrum``).
"""

from __future__ import annotations

from .capacity_equation import Tolerances
from .finite_size import (
    DEFAULT_SEED,
    ENSEMBLES,
    MAX_TOP_K,
    PROBLEMS,
    CapacityResult,
    ExpectedCostResult,
    MarginCapacityResult,
    capacity,
    expected_cost,
    max_margin,
    water_filling_cost,
)
from .image_margin import ImageMarginResult, ImageMarginWarning, max_margin_image
from .outputs import capacity_many_to_one, effective_weights, two_field_cost
from .scores import (
    OptimalScoreLaws,
    OptimalScoreSample,
    ScoreSummary,
    optimal_score_laws,
    sample_optimal_scores,
    summarize_scores,
)
from .sphere import ProjectionLaw

__all__ = [
    "DEFAULT_SEED", "ENSEMBLES", "PROBLEMS", "MAX_TOP_K",
    "water_filling_cost", "expected_cost", "ExpectedCostResult", "capacity", "CapacityResult", "max_margin",
    "MarginCapacityResult", "Tolerances", "max_margin_image", "ImageMarginResult", "ImageMarginWarning",
    "capacity_many_to_one", "effective_weights", "two_field_cost",
    "ProjectionLaw",
    "optimal_score_laws", "OptimalScoreLaws", "sample_optimal_scores", "OptimalScoreSample", "summarize_scores",
    "ScoreSummary",
]
