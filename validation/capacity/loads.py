"""The load alpha = p ln p / d^2 (natural log) and its inverse p(alpha) (Lambert W)."""

from __future__ import annotations

import math

from scipy import special

__all__ = ["load", "p_from_load"]


def load(d, p):
    """alpha = p ln p / d^2 (natural log)."""
    return p * math.log(p) / d ** 2


def p_from_load(d, alpha):
    """Inverse of :func:`load` on p >= e^{-1}: solve p ln p = alpha d^2 (Lambert W)."""
    x = alpha * d * d
    return float(x / special.lambertw(x).real)
