"""Argument checks shared by ``replica`` and ``validation``.

Every public function validates its input with these helpers, so a bad value
raises a ``ValueError`` that names the argument, the value and the valid range.
The command-line interfaces turn that error into one line and exit status 2.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

__all__ = [
    "check_kappa",
    "check_scalar_kappa",
    "check_at_least",
    "scalar_or_array",
    "check_real",
    "check_int",
    "check_choice",
    "as_float_array",
    "check_memory",
    "memory_limit",
    "MEMORY_LIMIT_VARIABLE",
]

MEMORY_LIMIT_VARIABLE = "LINEAR_MEMORY_LIMIT_BYTES"
"""Environment variable overriding the memory limit of :func:`check_memory` (bytes)."""


def _describe(value) -> str:
    try:
        return repr(value) if not isinstance(value, np.ndarray) else f"array(shape={value.shape})"
    except Exception:  # pragma: no cover - repr of exotic objects
        return object.__repr__(value)


def as_float_array(value, name: str) -> np.ndarray:
    """Convert ``value`` to a float64 array or raise ``ValueError`` naming ``name``."""
    if isinstance(value, (str, bytes)) or value is None:
        raise ValueError(f"{name} must be a real number, got {_describe(value)}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {_describe(value)}") from None
    if arr.dtype.kind not in "f":  # pragma: no cover - asarray(float64) guarantees this
        raise ValueError(f"{name} must be a real number, got {_describe(value)}")
    return arr


def _first_bad(arr: np.ndarray, bad: np.ndarray) -> float:
    return float(arr[bad].flat[0]) if arr.ndim else float(arr)


def check_kappa(kappa, name: str = "kappa") -> np.ndarray:
    """Return ``kappa`` as a float64 array, checking 0 < kappa <= 1 and finiteness."""
    arr = as_float_array(kappa, name)
    bad = ~np.isfinite(arr) | (arr <= 0.0) | (arr > 1.0)
    if np.any(bad):
        raise ValueError(f"{name} must lie in (0, 1], got {_first_bad(arr, bad)!r}")
    return arr


def check_scalar_kappa(kappa, name: str = "kappa") -> float:
    """:func:`check_kappa` for one number: return it as a float, reject arrays."""
    arr = check_kappa(kappa, name)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    return float(arr)


def check_at_least(values, name: str, low: float) -> np.ndarray:
    """Return ``values`` as a float64 array, checking every entry is finite and >= ``low``."""
    arr = as_float_array(values, name)
    bad = ~np.isfinite(arr) | (arr < low)
    if np.any(bad):
        raise ValueError(f"{name} must be a finite number >= {low:g}, got {_first_bad(arr, bad)!r}")
    return arr


def scalar_or_array(values: np.ndarray, like):
    """Return a Python float when ``like`` was a scalar, else the array ``values``."""
    return np.asarray(values).item() if np.ndim(like) == 0 else values


def check_real(value, name: str, *, low=None, high=None, low_open=False, high_open=False,
               allow_inf=False) -> float:
    """Check a scalar real number against an interval and return it as float."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real number, got {_describe(value)}")
    x = float(value)
    lo_s = "-inf" if low is None else repr(low)
    hi_s = "inf" if high is None else repr(high)
    rng = f"{'(' if low_open or low is None else '['}{lo_s}, {hi_s}{')' if high_open or high is None else ']'}"
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise ValueError(f"{name} must be a finite number in {rng}, got {x!r}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ValueError(f"{name} must lie in {rng}, got {x!r}")
    if high is not None and (x > high or (high_open and x == high)):
        raise ValueError(f"{name} must lie in {rng}, got {x!r}")
    return x


def check_int(value, name: str, *, low=None, high=None) -> int:
    """Check an integer (bool rejected; integral floats such as 64.0 accepted)."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, (numbers.Integral, np.integer)):
        n = int(value)
    elif isinstance(value, (numbers.Real, np.floating)) and math.isfinite(float(value)) \
            and float(value) == int(value):
        n = int(value)
    else:
        raise ValueError(f"{name} must be an integer, got {_describe(value)}")
    rng = f"[{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
    if (low is not None and n < low) or (high is not None and n > high):
        raise ValueError(f"{name} must be an integer in {rng}, got {n}")
    return n


def check_choice(value, name: str, choices) -> str:
    """Check that ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def memory_limit() -> int:
    """Bytes one allocation may take: ``$LINEAR_MEMORY_LIMIT_BYTES``, else half the available memory."""
    text = os.environ.get(MEMORY_LIMIT_VARIABLE)
    if text:
        try:
            return int(float(text))
        except ValueError:
            raise ValueError(f"{MEMORY_LIMIT_VARIABLE} must be a number of bytes, got {text!r}") from None
    import psutil

    return int(psutil.virtual_memory().available // 2)


def _size(nbytes: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def check_memory(nbytes, what: str, limit=None) -> float:
    """Raise ``ValueError`` before allocating when ``nbytes`` exceeds the memory limit.

    Parameters
    ----------
    nbytes : float
        Estimated bytes of the allocation (a float, so that huge requests do not overflow).
    what : str
        What would be allocated, for the message (e.g. ``"samples=100000000"``).
    limit : int, optional
        Limit in bytes (default :func:`memory_limit`: ``$LINEAR_MEMORY_LIMIT_BYTES`` or half
        of the machine's available memory).

    Returns
    -------
    float
        ``nbytes``.

    Raises
    ------
    ValueError
        With the estimate and the limit, if ``nbytes > limit``.
    """
    source = (f"${MEMORY_LIMIT_VARIABLE}" if os.environ.get(MEMORY_LIMIT_VARIABLE)
              else f"half the available memory; set {MEMORY_LIMIT_VARIABLE} to change it")
    limit = memory_limit() if limit is None else int(limit)
    nbytes = float(nbytes)
    if nbytes > limit:
        raise ValueError(f"{what} needs about {_size(nbytes)} of memory, above the limit of "
                         f"{_size(limit)} ({source})")
    return nbytes
