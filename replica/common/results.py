"""The result contract shared by every public result type.

Every result of a computation in ``replica`` and ``validation`` is a frozen dataclass
that derives from :class:`Result` and carries three fields with one meaning everywhere
(modelled on scipy's ``OptimizeResult`` / ``RootResults``):

``status``
    A short word from the type's documented set ``STATUSES``.
``converged``
    ``True`` when the method reached its own stopping criterion and the result can be
    used as stated by ``status``; ``False`` when a budget, a failed check or a
    non-convergence cut it short.  For closed forms it is always ``True``.
``message``
    One line in words: what happened.

``to_dict()`` returns a JSON-safe dictionary: ``json.dumps(r.to_dict(), allow_nan=False)``
works for every result, failed ones included.  Non-finite floats become ``None``, numpy
scalars become Python numbers, arrays become lists (or are left out by the type).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

__all__ = ["Result", "json_safe", "finite_or_none", "numpy_to_json"]


def finite_or_none(value) -> float | None:
    """``float(value)`` when it is finite, else ``None`` (JSON has no NaN or Infinity)."""
    if value is None:
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def numpy_to_json(value):
    """The ``default`` hook of ``json.dump`` for numpy values: arrays as lists, scalars as Python numbers.

    Unlike :func:`json_safe` it keeps NaN and infinities (``json`` writes them as ``NaN``
    and ``Infinity``), for files that this package reads back itself.
    """
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def json_safe(value: Any) -> Any:
    """Convert ``value`` recursively into plain JSON types.

    Non-finite floats become ``None``; numpy scalars become ``int``/``float``/``bool``;
    arrays and tuples become lists; dictionary keys become strings.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return finite_or_none(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if dataclasses.is_dataclass(value) and hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


class Result:
    """Base of every public result type (a mixin for frozen dataclasses).

    A subclass declares the dataclass fields ``status: str``, ``converged: bool`` and
    ``message: str`` and sets the class attribute ``STATUSES`` to its documented set
    of status words.  It may override :meth:`_payload` to choose what ``to_dict``
    emits (the default: every field that is not an array).  ``__post_init__`` checks
    that ``status`` is one of ``STATUSES``.
    """

    STATUSES: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self):
        status = getattr(self, "status", None)
        if self.STATUSES and status not in self.STATUSES:
            raise ValueError(
                f"{type(self).__name__}.status must be one of {', '.join(map(repr, self.STATUSES))}; "
                f"got {status!r}")

    def _payload(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray) and value.size > 64:
                continue
            out[f.name] = value
        return out

    def to_dict(self) -> dict:
        """JSON-safe dictionary of the result (no NaN, no Infinity, no numpy types)."""
        payload = self._payload()
        for key in ("status", "converged", "message"):
            payload.setdefault(key, getattr(self, key))
        return json_safe(payload)
