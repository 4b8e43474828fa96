"""A stand-in base class for ``scipy.stats.rv_continuous`` until the first instance is made.

``import scipy.stats`` takes about half a second, most of ``import replica``; the laws of
:mod:`replica.asymptotic` (``MaximumOfGaussians``, ``QuarterCircle``, ...) are
``rv_continuous`` subclasses, so importing their modules would pay it even when no law is
used.  Their classes derive from :class:`DeferredContinuous` instead; making the first
instance of any of them imports ``scipy.stats`` and replaces ``DeferredContinuous`` by
``rv_continuous`` in the bases of every direct subclass, so instances are ordinary
``rv_continuous`` objects (``isinstance`` holds, every scipy method is there).
"""

from __future__ import annotations

__all__ = ["DeferredContinuous", "DeferredModule", "rebase"]


def rebase() -> None:
    """Put ``scipy.stats.rv_continuous`` in place of :class:`DeferredContinuous` in every subclass's bases."""
    from scipy import stats

    for sub in DeferredContinuous.__subclasses__():
        sub.__bases__ = tuple(stats.rv_continuous if base is DeferredContinuous else base for base in sub.__bases__)
        # the type's cached constructor slot still calls a Python __new__: give it one that takes the arguments
        sub.__new__ = staticmethod(_new)


def _new(cls, *args, **kwargs):
    return object.__new__(cls)


class DeferredContinuous:
    """Base of the package's ``scipy.stats`` laws until the first instance (then ``rv_continuous``)."""

    def __new__(cls, *args, **kwargs):
        rebase()
        return _new(cls)


class DeferredModule:
    """A module imported on first attribute access (``special = DeferredModule("scipy.special")``).

    ``import scipy.special`` takes about 0.3 s; the asymptotic modules name it at import
    time but use it only inside their functions.
    """

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attribute):
        module = self._module
        if module is None:
            import importlib

            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self):
        return f"DeferredModule({self._name!r})"
