"""The replica-symmetric saddle point of the decoupled problem (``notes/replica_saddle.md``).

* :mod:`replica.saddle.point` -- the front end: the free entropy, its derivative, the
  saddle point ``q*(p, d)`` and the capacity of one sample.
* :mod:`replica.saddle.sample` -- the sample of blocks (order statistics and quadrature
  nodes) that every evaluation shares.
* :mod:`replica.saddle._kernels` -- the numba kernels of the log partition function.
"""

from __future__ import annotations

from .point import (
    DEFAULT_EXACT_COMPETITORS,
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    ReplicaSample,
    SaddlePoint,
    SampleCapacity,
    free_entropy,
    free_entropy_derivative,
    saddle_point,
    sample_capacity,
)

__all__ = [
    "DEFAULT_SEED", "DEFAULT_SAMPLES", "DEFAULT_EXACT_COMPETITORS", "ReplicaSample", "free_entropy",
    "free_entropy_derivative", "saddle_point", "SaddlePoint", "sample_capacity", "SampleCapacity",
]
