"""Simulations of linear associative memories: instances, solvers, measurements.

``make_instance`` builds a random memory problem (original or decoupled),
``Instance.from_embeddings`` the original problem of given vectors (a trained model's
embeddings: ``notes/simulation.md``, "Facts in given embeddings"), and ``solve``
runs one of the solvers (``hebbian``, ``optimal``, ``lp``, ``adam``, ``svp``) on it.
"""

from __future__ import annotations

import os as _os
import sys as _sys
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

# Modules that moved; their old paths keep working for one release (DeprecationWarning).
_ENGINE = ("solution", "threads", "options", "memories", "problem", "screening", "lbfgs", "certificate", "start",
           "decision", "dual_ascent", "warmup", "registry")
_MOVED = {
    "validation.measure": "validation.spectra_and_scores",
    "validation.solvers.modes": "validation.solvers.searches",
    "validation.reproduce.measurement": "validation.reproduce.spectra_trial",
    **{f"validation.solvers.{name}": f"validation.solvers.engine.{name}" for name in _ENGINE},
}


class _MovedModules:
    """Import hook: an old module path imports the module at its new path, with a DeprecationWarning."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _MOVED:
            return None
        import importlib.util

        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        import importlib
        import warnings

        warnings.warn(f"module {spec.name} is deprecated: it moved to {_MOVED[spec.name]}", DeprecationWarning,
                      stacklevel=2)
        return importlib.import_module(_MOVED[spec.name])

    def exec_module(self, module):
        pass


if not any(isinstance(finder, _MovedModules) for finder in _sys.meta_path):
    _sys.meta_path.insert(0, _MovedModules())

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
    "estimate_embedding_capacity": "validation.capacity",
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
