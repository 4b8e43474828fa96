"""Asymptotic laws: the quarter-circle law, the extreme-value threshold and the predicted spectra.

* :mod:`replica.asymptotic.quarter_circle` -- ``alpha_c(kappa) = F(kappa)/2``, the tail
  second moment ``F`` of the quarter-circle law and the singular-value laws
  ``QuarterCircle``, ``TruncatedQuarterCircle`` (``notes/alpha_c_kappa.md``).
* :mod:`replica.asymptotic.extremes` -- the expected maximum of Gaussian competitors, the
  Gumbel expansion and the order statistics of uniforms (``notes/extreme_values.md``).
* :mod:`replica.asymptotic.spectra` -- the predicted singular-value spectra of the optimal
  and Hebbian memories (``notes/spectra.md``).
* :mod:`replica.asymptotic.finite_size_spectra` -- the spectrum of a memory that is a sum of
  ``p`` rank-one pushes at finite ``d`` and ``p / d`` (``notes/spectra.md``, section 7).
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
from .finite_size_spectra import FiniteRatioSpectrum, finite_ratio_spectrum
from .spectra import HebbianSpectrum, hebbian_spectrum, normalized_singular_values, spectrum

__all__ = [
    "QuarterCircle", "TruncatedQuarterCircle", "truncation_point", "tail_second_moment", "alpha_c",
    "alpha_c_hebbian", "alpha_c_mp", "truncation_point_mp",
    "expected_max", "extreme_value_threshold", "gumbel_expansion", "GumbelExpansion", "MaximumOfGaussians",
    "expected_max_mp", "top_order_statistics", "order_statistics_from_uniforms",
    "spectrum", "normalized_singular_values", "hebbian_spectrum", "HebbianSpectrum",
    "finite_ratio_spectrum", "FiniteRatioSpectrum",
]
