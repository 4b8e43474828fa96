"""The Hebbian memory ``W = sum_mu u_mu e_mu^T`` at finite size (``notes/hebbian_finite_size.md``).

* :mod:`replica.hebbian.finite_size` -- the front end: success and failure
  probabilities, the capacity at a success probability, the score laws.
* :mod:`replica.hebbian.model` -- the quadrature of the failure probability of one
  input (Gaussian and sphere ensembles, stored and fresh competitors).
* :mod:`replica.hebbian.scores` -- the moments and laws of the target and competitor
  scores.
"""

from __future__ import annotations

from .finite_size import (
    HebbianCapacityResult,
    hebbian_capacity,
    hebbian_input_failure_probability,
    hebbian_success_probability,
)
from .scores import HebbianScoreLaws, HebbianScoreMoments, hebbian_score_laws, hebbian_score_moments

__all__ = [
    "hebbian_input_failure_probability", "hebbian_success_probability", "hebbian_capacity",
    "HebbianCapacityResult", "hebbian_score_moments", "HebbianScoreMoments", "hebbian_score_laws",
    "HebbianScoreLaws",
]
