"""The seed policy of the package.

Every randomised function takes ``seed``: ``None``, an ``int`` >= 0, a
``numpy.random.SeedSequence`` or a ``numpy.random.Generator``.

* ``None`` (the default everywhere) means :data:`DEFAULT_SEED`, so that every result is
  reproducible unless the user asks for another stream.
* An ``int`` or a ``SeedSequence`` is used as given.
* A ``Generator`` is consumed for one 63-bit integer, which becomes the seed.

The integer actually used is stored in every result (``seed`` field) so that a run can
be repeated from its output alone.  Independent tasks get streams from
``SeedSequence.spawn`` or, in sweeps, from a documented hash of (seed, p, trial).
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["DEFAULT_SEED", "MAX_SEED", "RESTART_TAG", "resolve_seed", "as_generator", "restart_stream"]

DEFAULT_SEED = 20261130
"""The package's default seed (used when ``seed=None``)."""

MAX_SEED = 2**63 - 1
"""Largest integer seed (seeds are stored as signed 64-bit integers)."""

RESTART_TAG = 2**32 - 1
"""First spawn-key word of the restart streams of the solvers' searches (:func:`restart_stream`)."""


def resolve_seed(seed, name: str = "seed") -> int:
    """Turn any accepted ``seed`` into the integer that reproduces it.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
    name : str
        Argument name for error messages.

    Returns
    -------
    int
        In ``[0, MAX_SEED]``.

    Raises
    ------
    ValueError
        For a negative or too large integer, a bool, or any other type.
    """
    if seed is None:
        return DEFAULT_SEED
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, MAX_SEED, endpoint=True))
    if isinstance(seed, np.random.SeedSequence):
        state = seed.generate_state(2, dtype=np.uint32)
        return int((int(state[0]) << 31) ^ int(state[1])) & MAX_SEED
    if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise ValueError(
            f"{name} must be None, an integer in [0, 2**63 - 1], a numpy SeedSequence or a "
            f"numpy Generator; got {seed!r}")
    value = int(seed)
    if not 0 <= value <= MAX_SEED:
        raise ValueError(f"{name} must be an integer in [0, 2**63 - 1], got {value}")
    return value


def as_generator(seed, name: str = "seed") -> np.random.Generator:
    """A ``numpy.random.Generator`` for ``seed`` (a Generator is returned as it is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(resolve_seed(seed, name))


def restart_stream(seed, r: int) -> np.random.SeedSequence:
    """The stream of restart ``r`` of a seeded search: ``SeedSequence(seed, spawn_key=(RESTART_TAG, r))``.

    ``seed`` is resolved by :func:`resolve_seed` first.  The spawn key has two words and
    the first is ``2**32 - 1``, which no load ``p`` reaches, so the stream differs from
    those of an instance made with the same seed (``make_instance`` draws from
    ``SeedSequence(seed).spawn(3)``, spawn keys ``(0,)``, ``(1,)``, ``(2,)``) and from the
    sweeps' task streams (spawn keys ``(p, trial)``): a restart never reuses the draws of
    the instance's vectors, however the two seeds are chosen.
    """
    return np.random.SeedSequence(resolve_seed(seed), spawn_key=(RESTART_TAG, int(r)))
