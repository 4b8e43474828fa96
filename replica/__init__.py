"""Replica theory of linear associative memories: capacities, thresholds, spectra.

Pure functions of the parameters (no random instances).  The asymptotic results:

* ``alpha_c(kappa)``: capacity ``p ln p / d^2`` of an optimal rank-``kappa d`` memory,
  ``F(kappa)/2`` with ``F`` the tail second moment of the quarter-circle law
  (``alpha_c(1) = 1/2``); ``alpha_c_hebbian(kappa) = F(kappa)/8``.
* ``expected_max(n)``, ``extreme_value_threshold(n)``, ``MaximumOfGaussians``,
  ``gumbel_expansion``: the extreme-value threshold of the competitors.
* ``QuarterCircle``, ``TruncatedQuarterCircle``: the predicted singular-value laws.

Derivations are in the project's ``notes/`` folder.
"""

from __future__ import annotations

from .extremes import (
    GumbelExpansion,
    MaximumOfGaussians,
    expected_max,
    expected_max_mp,
    extreme_value_threshold,
    gumbel_expansion,
    order_statistics_from_uniforms,
    top_order_statistics,
)
from .quarter_circle import (
    QuarterCircle,
    TruncatedQuarterCircle,
    alpha_c,
    alpha_c_hebbian,
    alpha_c_mp,
    tail_second_moment,
    truncation_point,
    truncation_point_mp,
)

try:
    from importlib.metadata import version as _version

    __version__ = _version("linear-memory-capacity")
except Exception:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.1.0"

__all__ = [
    "GumbelExpansion",
    "MaximumOfGaussians",
    "QuarterCircle",
    "TruncatedQuarterCircle",
    "alpha_c",
    "alpha_c_hebbian",
    "alpha_c_mp",
    "expected_max",
    "expected_max_mp",
    "extreme_value_threshold",
    "gumbel_expansion",
    "order_statistics_from_uniforms",
    "tail_second_moment",
    "top_order_statistics",
    "truncation_point",
    "truncation_point_mp",
]
