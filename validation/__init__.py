"""Simulations of linear associative memories: instances, solvers, measurements.

``make_instance`` builds a random memory problem (original or decoupled),
``Instance.from_embeddings`` the original problem of given vectors (a trained model's
embeddings: ``notes/simulation.md``, "Facts in given embeddings"), and ``solve``
runs one of the solvers (``hebbian``, ``optimal``, ``lp``, ``adam``, ``svp``) on it.

The subpackages, bottom layer first (``docs/contributing.md``):

* ``instances``: the instance, its ensembles and the DP candidate generator;
* ``solvers``: ``solve`` and the solvers over their shared engine;
* ``measurements``: recall, spectra and scores of one memory; accuracy, Zipf error and
  cross-entropy capacity over many instances;
* ``bounds``: certified MILP bounds on the best recall (``accuracy_bound``, top-k);
* ``capacity``: the adaptive capacity estimate;
* ``runtime``: task sweeps, executors and the result store;
* ``reproduce`` and ``figures``: the paper's figures; ``cli``: the ``validation`` command.
"""

from __future__ import annotations

import os as _os
import sys as _sys
import tempfile as _tempfile
import types as _types


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
_GROUPED = {  # the modules once at the root of validation, by the subpackage that now holds them
    "instances": {"instance": "instance", "ensembles": "ensembles", "_rng": "_candidate_kernels"},
    "bounds": {"accuracy_bound": "accuracy", "weighted_bound": "weighted", "bound_milp": "milp",
               "top_k_bound": "top_k"},
    "measurements": {name: name for name in ("accuracy", "zipf", "zipf_memories", "ce_protocol",
                                             "spectra_and_scores", "recall", "intervals")},
    "runtime": {name: name for name in ("sweep", "executors", "store")},
}
_MOVED = {
    "validation.measure": "validation.measurements.spectra_and_scores",
    "validation.solvers.modes": "validation.solvers.searches",
    "validation.reproduce.measurement": "validation.reproduce.spectra_trial",
    **{f"validation.solvers.{name}": f"validation.solvers.engine.{name}" for name in _ENGINE},
    **{f"validation.{old}": f"validation.{package}.{new}" for package, names in _GROUPED.items()
       for old, new in names.items()},
}


def _moved_message(old: str) -> str:
    return f"module {old} is deprecated: it moved to {_MOVED[old]}"


class _MovedModules:
    """Import hook: an old module path imports the module at its new path, with a DeprecationWarning.

    The old path names the same module object as the new one (``sys.modules`` holds it under
    both), so the module runs once: its numba kernels and module-level state exist once.
    """

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _MOVED:
            return None
        import importlib.util

        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        import importlib
        import warnings

        warnings.warn(_moved_message(spec.name), DeprecationWarning, stacklevel=2)
        module = importlib.import_module(_MOVED[spec.name])
        # the import system sets module.__spec__ to the old path's spec next; exec_module puts it back
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state


if not any(isinstance(finder, _MovedModules) for finder in _sys.meta_path):
    _sys.meta_path.insert(0, _MovedModules())

_LAZY = {
    "make_instance": "validation.instances.ensembles",
    "Instance": "validation.instances.ensembles",
    "EmbeddingModel": "validation.instances.ensembles",
    "FactSettings": "validation.instances.ensembles",
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
    "measure_accuracy": "validation.measurements.accuracy",
    "accuracy_bound": "validation.bounds.accuracy",
    "AccuracyBound": "validation.bounds.accuracy",
    "top_k_decision": "validation.bounds.top_k",
    "TopKDecision": "validation.bounds.top_k",
    "AccuracyCurve": "validation.measurements.accuracy",
    "ce_capacity": "validation.measurements.ce_protocol",
    "CEProtocol": "validation.measurements.ce_protocol",
    "CECapacity": "validation.measurements.ce_protocol",
    "measure_zipf": "validation.measurements.zipf",
    "ZipfMeasurement": "validation.measurements.zipf",
    "ZipfSettings": "validation.measurements.zipf",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if f"validation.{name}" in _MOVED:  # validation.recall and the other old submodule paths
        import importlib
        import warnings

        warnings.warn(_moved_message(f"validation.{name}"), DeprecationWarning, stacklevel=2)
        return importlib.import_module(_MOVED[f"validation.{name}"])
    raise AttributeError(f"module 'validation' has no attribute {name!r}")


class _Package(_types.ModuleType):
    """The ``validation`` module: a public name of ``__all__`` is never shadowed by a submodule.

    Importing ``validation.accuracy_bound`` (the old path of ``validation.bounds.accuracy``)
    would otherwise bind the module to ``validation.accuracy_bound``, the function.
    """

    def __setattr__(self, name, value):
        if name in _LAZY and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
