"""The load alpha = p ln p / d^2 (natural log) and its inverse p(alpha) (Lambert W).

Both live in :mod:`replica.common.loads`; measurements invert the load by its closed
form (``method="lambertw"``).
"""

from __future__ import annotations

from replica.common.loads import load
from replica.common.loads import p_from_load as _p_from_load_any

__all__ = ["load", "p_from_load"]


def p_from_load(d, alpha):
    """Inverse of :func:`load` on p >= e^{-1}: solve p ln p = alpha d^2 (Lambert W)."""
    return _p_from_load_any(d, alpha, method="lambertw")
