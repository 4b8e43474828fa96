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

__all__ = ["LOAD_INVERSIONS", "load", "p_from_load", "free_parameters", "bits_per_parameter", "BitsPerParameter"]

LOAD_INVERSIONS = ("fixed_point", "newton", "lambertw")
"""Methods of :func:`p_from_load`."""

_FIXED_POINT_STEPS = 60


def load(d, p) -> float:
    """The load ``alpha = p ln p / d^2`` (natural log) of ``p`` pairs in dimension ``d``."""
    return p * math.log(p) / d ** 2


def free_parameters(d_in, d_out=None, kappa=1.0) -> int:
    """Free parameters of a ``d_out x d_in`` memory of rank ``m``: ``m (d_in + d_out - m)``.

    ``m = max(1, round(kappa min(d_in, d_out)))`` (Python's round: halves to even), the
    rank of the rank-constrained memories.  At full rank (``kappa = 1``) this is
    ``d_in d_out``; at rank ``m`` it is the dimension of the manifold of rank-``m``
    matrices (``W = Q R^T`` with ``Q``: ``d_out x m``, ``R``: ``d_in x m``, less the
    ``m^2`` of an invertible ``m x m`` change of basis).

    Parameters
    ----------
    d_in : int
        Input dimension (``d`` of a square memory).
    d_out : int, optional
        Output dimension (default ``d_in``).
    kappa : float
        Rank fraction in (0, 1].

    Returns
    -------
    int
    """
    d_out = d_in if d_out is None else d_out
    m = max(1, round(kappa * min(d_in, d_out)))
    return int(m * (d_in + d_out - m))


def bits_per_parameter(p, d_in, d_out=None, kappa=1.0) -> float:
    """Capacity in bits per free parameter: ``p log2 p / free_parameters(d_in, d_out, kappa)``.

    ``p log2 p`` is the information of the answers of ``p`` facts with ``p`` distinct
    answers (``log2 p`` bits each); at full rank of a square memory this is
    ``alpha / ln 2`` for the load ``alpha = p ln p / d^2``, so the asymptotic capacity
    ``alpha_c = 1/2`` is ``1 / (2 ln 2) ~= 0.72`` bits per parameter
    (``notes/bits_per_parameter.md``).

    Parameters
    ----------
    p : float
        Number of facts (a capacity ``p_c``; real).
    d_in, d_out, kappa
        As in :func:`free_parameters`.

    Returns
    -------
    float
        NaN when ``p`` is NaN, infinite or not positive.
    """
    p = float(p)
    if not math.isfinite(p) or p <= 0.0:
        return math.nan
    return p * math.log2(p) / free_parameters(d_in, d_out, kappa)


class BitsPerParameter:
    """Mixin of the capacity results: the property ``bits_per_parameter`` of ``p_c``, also in ``to_dict()``.

    A result class derives from it before :class:`replica.common.results.Result`; it has a
    ``p_c`` field and ``d`` and ``kappa`` fields (square) or overrides :meth:`memory_shape`.
    """

    def memory_shape(self) -> tuple:
        """``(d_in, d_out, kappa)`` of the memory whose parameters are counted."""
        return self.d, self.d, getattr(self, "kappa", 1.0)

    @property
    def bits_per_parameter(self) -> float:
        """``p_c log2 p_c / (free parameters)`` (:func:`bits_per_parameter`); NaN when ``p_c`` is."""
        d_in, d_out, kappa = self.memory_shape()
        return bits_per_parameter(self.p_c, d_in, d_out, kappa)

    def _payload(self) -> dict:
        out = super()._payload()
        out["bits_per_parameter"] = self.bits_per_parameter
        return out


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
