"""Bracketed root finding, shared by every capacity search of the package.

Every search for a capacity (a load ``p_c``, a margin, a kept fraction, an overlap)
has the same two phases: walk from a starting point until the equation changes sign,
then refine the bracket with Brent's method.  The walks differ (secant steps,
steps of fixed size in ``log p``, factors in ``q``), so they are given as arguments;
Brent's tolerances are arguments too, so that each search keeps its own accuracy.

The searches run in ``log p``, where ``brentq``'s absolute ``xtol`` is a relative
tolerance on ``p``.  The caller checks the residual ``|g(root)|`` against its own
``tol`` before it accepts the root, and turns a failed walk or ``converged=False``
into a status and a message of its result.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import optimize

__all__ = [
    "newton_root",
    "BRENT_RTOL",
    "BrentResult",
    "brent",
    "BracketWalk",
    "walk_bracket",
    "RootSearch",
    "BelowLimit",
    "bracketed_root",
]

BRENT_RTOL = 4 * np.finfo(float).eps
"""Default relative tolerance of :func:`brent` (that of ``scipy.optimize.brentq``)."""


class BrentResult(NamedTuple):
    """Brent's root ``root`` of a bracket, whether it converged, scipy's ``flag`` and its iterations."""

    root: float
    converged: bool
    flag: str
    iterations: int


def brent(g, lo, hi, *, xtol, rtol=BRENT_RTOL, max_iter=100, require=False) -> BrentResult:
    """Root of ``g`` in ``[lo, hi]`` (``g(lo)``, ``g(hi)`` of opposite signs) by ``scipy.optimize.brentq``.

    Parameters
    ----------
    g : callable
        The equation, ``float -> float``.
    lo, hi : float
        The bracket.
    xtol, rtol : float
        Brent's tolerances (``xtol`` absolute; relative in ``p`` for a search in ``log p``).
    max_iter : int
        Brent iterations allowed.
    require : bool
        Raise ``RuntimeError`` instead of returning ``converged=False``.

    Returns
    -------
    BrentResult

    Raises
    ------
    ValueError
        If ``g(lo)`` and ``g(hi)`` have the same sign (from ``brentq``).
    RuntimeError
        If ``require`` and the iterations ran out.
    """
    root, info = optimize.brentq(g, lo, hi, xtol=xtol, rtol=rtol, maxiter=max_iter, full_output=True, disp=False)
    if require and not info.converged:
        raise RuntimeError(f"brentq did not converge in {max_iter} iterations on [{lo!r}, {hi!r}] ({info.flag})")
    return BrentResult(root, bool(info.converged), info.flag, info.iterations)


class BracketWalk(NamedTuple):
    """A walk of :func:`walk_bracket`: the bracket ``(lo, hi)``, the last point and value, steps, success."""

    lo: float
    hi: float
    x: float  # the last point evaluated
    value: float  # g(x)
    steps: int
    found: bool  # g left the ``inside`` region at x: (lo, hi) brackets a root


def _ordered(previous, x):
    if previous is None:
        return x, x
    return (previous, x) if previous <= x else (x, previous)


def walk_bracket(g, start, advance, *, inside, previous=None, give_up=None, max_steps=None) -> BracketWalk:
    """Evaluate ``g`` at ``start``, ``advance(start)``, ... while ``inside(g(x))`` holds.

    The walk stops with ``found=True`` at the first point where ``inside`` fails; the
    bracket is then that point and the one before it (``previous`` before the first).
    It stops with ``found=False`` at a point still inside when ``give_up(x)`` holds or
    after ``max_steps`` advances.  ``g`` is evaluated once per point, in order.

    Parameters
    ----------
    g : callable
        The equation.
    start : float
        First point.
    advance : callable
        The next point from the current one.
    inside : callable
        ``inside(value)``: the sign has not changed yet.
    previous : float, optional
        The other end of the bracket if the walk stops at ``start``.
    give_up : callable, optional
        ``give_up(x)`` at a point still inside: stop without a bracket.
    max_steps : int, optional
        Advances allowed.

    Returns
    -------
    BracketWalk
    """
    x, steps = start, 0
    while True:
        value = g(x)
        if not inside(value):
            return BracketWalk(*_ordered(previous, x), x, value, steps, True)
        if (max_steps is not None and steps >= max_steps) or (give_up is not None and give_up(x)):
            return BracketWalk(*_ordered(previous, x), x, value, steps, False)
        previous, x, steps = x, advance(x), steps + 1


class RootSearch(NamedTuple):
    """A root search: the root ``x``, the evaluations of the equation, ``|g(x)|`` and whether it ran out."""

    x: float
    evaluations: int
    residual: float
    exhausted: bool  # max_iter reached before the root was bracketed and refined


class BelowLimit(Exception):
    """Raised by :func:`bracketed_root` when the equation is positive already at its lower limit."""


def bracketed_root(g, x0, slope_guess, *, lower=-math.inf, xtol=1e-11, rtol=1e-14, max_iter=100) -> RootSearch:
    """Root of an increasing smooth ``g``: secant steps (overshooting 2 %) to a bracket, then :func:`brent`.

    At most ``max_iter`` secant steps and ``max_iter`` Brent iterations.  ``lower`` is a
    hard lower limit of ``x``; :class:`BelowLimit` is raised when ``g(lower) > 0``.  The
    residual ``|g(x)|`` is evaluated at the root (one more evaluation).
    """
    count = 0

    def call(x):
        nonlocal count
        count += 1
        return g(x)

    x_a, g_a = x0, call(x0)
    slope = slope_guess
    for _ in range(max_iter):
        if g_a == 0.0:
            return RootSearch(x_a, count, 0.0, False)
        x_b = max(x_a - 1.02 * g_a / slope, lower)
        if x_b == x_a:  # stuck at the lower limit with g > 0
            raise BelowLimit()
        g_b = call(x_b)
        if g_a * g_b <= 0.0:
            break
        secant = (g_b - g_a) / (x_b - x_a)
        slope = secant if secant > 0.1 * slope_guess else slope_guess
        x_a, g_a = x_b, g_b
    else:
        return RootSearch(x_a, count, abs(g_a), True)
    if g_b == 0.0:
        return RootSearch(x_b, count, 0.0, False)
    found = brent(call, min(x_a, x_b), max(x_a, x_b), xtol=xtol, rtol=rtol, max_iter=max_iter)
    return RootSearch(found.root, count, abs(call(found.root)), not found.converged)


def newton_root(f, x0, lower, xtol, max_iter) -> RootSearch:
    """Root of an increasing ``g`` from ``f(x) = (g, g')``: Newton steps kept inside the known bracket.

    Stops at the first point whose Newton step is below ``xtol`` (that point is the root,
    its ``|g|`` the residual).  Steps that leave the bracket bisect it (or, before a sign
    change, walk by growing steps); below ``lower`` the point is held at ``lower``, and
    :class:`BelowLimit` is raised when ``g(lower) > 0``.
    """
    lo, hi, lo_known = lower, math.inf, False
    x, count, g = max(float(x0), lower), 0, math.inf
    walk = 0.3
    for _ in range(max_iter):
        g, slope = f(x)
        count += 1
        if g == 0.0:
            return RootSearch(x, count, 0.0, False)
        if g < 0.0:
            lo, lo_known = x, True
        else:
            if x <= lower:
                raise BelowLimit()
            hi = x
        new = x - g / slope if slope is not None and slope > 0.0 and math.isfinite(slope) else math.nan
        if not (math.isfinite(new) and (new > lo or (not lo_known and new >= lower)) and new < hi):
            if lo_known and math.isfinite(hi):
                new = 0.5 * (lo + hi)
            elif lo_known:
                new, walk = x + walk, 2.0 * walk
            else:
                new, walk = max(x - walk, lower), 2.0 * walk
        new = float(max(new, lower))
        if abs(new - x) <= xtol:
            return RootSearch(x, count, abs(g), False)
        x = new
    return RootSearch(x, count, abs(g), True)
