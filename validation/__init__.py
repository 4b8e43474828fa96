"""Simulations of linear associative memories: instances, solvers, measurements.

``make_instance`` builds a random memory problem (original or decoupled), and
``solve`` runs one of the solvers (``hebbian``, ``optimal``, ``lp``, ``adam``, ``svp``) on it.
"""

from __future__ import annotations

import os as _os
import tempfile as _tempfile


def _configure_numba_cache() -> None:
    """Point numba's on-disk cache at a writable folder when the package folder is not."""
    if "NUMBA_CACHE_DIR" in _os.environ:
        return
    here = _os.path.dirname(_os.path.abspath(__file__))
    if _os.access(here, _os.W_OK):
        return
    fallback = _os.path.join(_os.path.expanduser("~"), ".cache", "linear-memory-numba")
    try:
        _os.makedirs(fallback, exist_ok=True)
    except OSError:
        fallback = _os.path.join(_tempfile.gettempdir(), "linear-memory-numba")
        _os.makedirs(fallback, exist_ok=True)
    _os.environ["NUMBA_CACHE_DIR"] = fallback


_configure_numba_cache()

_LAZY = {
    "make_instance": "validation.ensembles",
    "Instance": "validation.ensembles",
    "EmbeddingModel": "validation.ensembles",
    "FactSettings": "validation.ensembles",
    "solve": "validation.solvers",
    "Solution": "validation.solvers",
    "OptimalOptions": "validation.solvers",
    "LPOptions": "validation.solvers",
    "AdamOptions": "validation.solvers",
    "SVPOptions": "validation.solvers",
    "solve_max_margin": "validation.solvers.maxmargin",
    "MaxMarginResult": "validation.solvers.maxmargin",
    "MaxMarginOptions": "validation.solvers.maxmargin",
    "estimate_capacity": "validation.capacity",
    "CapacityEstimate": "validation.capacity",
    "measure_accuracy": "validation.accuracy",
    "accuracy_bound": "validation.accuracy_bound",
    "AccuracyBound": "validation.accuracy_bound",
    "top_k_decision": "validation.top_k_bound",
    "TopKDecision": "validation.top_k_bound",
    "AccuracyCurve": "validation.accuracy",
    "ce_capacity": "validation.ce_protocol",
    "CEProtocol": "validation.ce_protocol",
    "CECapacity": "validation.ce_protocol",
    "measure_zipf": "validation.zipf",
    "ZipfMeasurement": "validation.zipf",
    "ZipfSettings": "validation.zipf",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'validation' has no attribute {name!r}")
