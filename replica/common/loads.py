"""The load ``alpha = p ln p / d^2`` and its inverse, in one place.

Three inversions of ``p ln p = alpha d^2`` are in use, and they are not equal to the
last bit, so each is kept under its own name and callers choose one:

* ``"fixed_point"``: 60 steps of ``p <- alpha d^2 / ln max(p, 2)`` from
  ``max(alpha d^2, 4)``.  The starting loads of ``replica.hebbian_capacity`` and
  ``replica.accuracy_capacity``.  It converges like ``(1 / ln p)^60``: to rounding for
  ``p >~ 20``, only roughly for ``p`` near ``e`` (and it does not converge where
  ``ln p < 1``); a start, not an exact inverse.
* ``"newton"``: Newton's method from ``max(alpha d^2, e)`` until the step is below
  ``1e-9 p``.
* ``"lambertw"``: the closed form ``x / W(x)`` with ``x = alpha d^2`` (``W`` the
  principal branch of Lambert's function); exact to rounding for ``p >= 1/e``.
"""

from __future__ import annotations

import math

from scipy import special

from .checks import check_choice

__all__ = ["LOAD_INVERSIONS", "load", "p_from_load"]

LOAD_INVERSIONS = ("fixed_point", "newton", "lambertw")
"""Methods of :func:`p_from_load`."""

_FIXED_POINT_STEPS = 60


def load(d, p) -> float:
    """The load ``alpha = p ln p / d^2`` (natural log) of ``p`` pairs in dimension ``d``."""
    return p * math.log(p) / d ** 2


def p_from_load(d, alpha, method="fixed_point") -> float:
    """The number of pairs ``p`` with ``p ln p = alpha d^2``: the inverse of :func:`load`.

    Parameters
    ----------
    d : int
        Dimension.
    alpha : float
        Load ``p ln p / d^2``, ``> 0``.
    method : {"fixed_point", "newton", "lambertw"}, optional
        The inversion (see the module docstring; they differ in the last bits, and
        ``"fixed_point"`` by more where ``p`` is near ``e``).

    Returns
    -------
    float
        The number of pairs ``p`` (not rounded) whose load is ``alpha``.

    Raises
    ------
    ValueError
        If ``method`` is not one of :data:`LOAD_INVERSIONS`.
    """
    method = check_choice(method, "method", LOAD_INVERSIONS)
    target = alpha * d * d
    if method == "fixed_point":
        p = max(target, 4.0)
        for _ in range(_FIXED_POINT_STEPS):
            p = target / math.log(max(p, 2.0))
        return p
    if method == "newton":
        n = max(target, math.e)
        for _ in range(100):
            step = (n * math.log(n) - target) / (math.log(n) + 1.0)
            n -= step
            if abs(step) <= 1e-9 * n:
                break
        return n
    return float(target / special.lambertw(target).real)
