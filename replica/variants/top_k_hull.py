"""The k-set hull limit of top-k recall: a target that no direction puts among the top k.

Input ``mu`` is top-k recalled by ``W`` when fewer than ``k`` competitors score at least its
target: ``#{rho : u_rho . y >= t . y} < k`` with ``y = W e_mu``.  Whatever ``W`` is, that needs a
direction ``y`` in which fewer than ``k`` of the differences ``a_rho = t - u_rho`` have
``a_rho . y <= 0``.  The least such count over all directions is the halfspace (Tukey)
depth of the target among its candidates, so a target of depth ``>= k`` can never be top-k
recalled: the hull limit of ``notes/rectangular_few_outputs.md`` (``k = 1``: the target is not
a vertex of its candidates' hull) for ``k >= 2`` (``notes/top_k.md``, section 6).

The depth is computed exactly (for points in general position): the count ``#{a_rho . y <
0}`` is constant on the cells of the arrangement of the hyperplanes ``a_rho . y = 0``; every
cell of that arrangement on the sphere has a vertex, a direction ``n`` orthogonal to
``d - 1`` of the ``a_rho``, and next to ``n`` the cell where those ``d - 1`` are positive
is reached (they are independent); so the depth is the least, over all ``(d - 1)``-subsets
and both signs of their normal ``n``, of the number of the other ``a_rho`` with
``a_rho . n < 0``.  The normal of ``d - 1`` vectors is their generalised cross product (the
cofactors), computed for every subset at once.

The hull factor of a load ``p`` (Gaussian candidates in ``R^d``):

* DP (every input its own ``p`` candidates): ``H_k(p) = q_k(p, d)^p``, ``q_k`` the probability
  that a given one of ``p`` i.i.d. Gaussian points has depth ``< k`` among the others;
* OP (all inputs share the same ``p`` outputs): ``H_k(p) = P(every point has depth < k)``.

``P(stored at top k | p) <= H_k(p)`` exactly, for every memory; ``H_k`` does not depend on
how many weights the memory has.  Both are estimated by Monte Carlo with a fixed seed
(:func:`k_set_hull_factor`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..common.checks import check_choice, check_int
from ..common.results import Result
from ..common.seeds import resolve_seed

__all__ = ["depth_below", "target_depth", "k_set_hull_factor", "KSetHullFactor"]

MAX_SUBSETS = 200_000
"""Largest number of ``(d - 1)``-subsets :func:`target_depth` enumerates (``C(p - 1, d - 1)``)."""


def _normals(a: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """The normal (generalised cross product) of the rows ``a[s]`` of every subset ``s`` (rows of ``subsets``)."""
    d = a.shape[1]
    rows = a[subsets]  # (subsets, d - 1, d)
    normals = np.empty((len(subsets), d))
    for j in range(d):
        minor = np.delete(rows, j, axis=2)  # (subsets, d - 1, d - 1)
        normals[:, j] = (-1) ** j * (np.linalg.det(minor) if d > 2 else minor[:, 0, 0])
    return normals


def target_depth(target, competitors) -> int:
    """Halfspace depth of ``target`` among ``competitors``: ``min_y #{rho : (t - u_rho) . y <= 0}``.

    Exact for points in general position (module docstring).  The target is top-k
    recallable by some direction iff its depth is ``< k``.

    Parameters
    ----------
    target : array_like, shape (d,)
    competitors : array_like, shape (m, d)

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If the shapes do not match, or ``C(m, d - 1)`` exceeds :data:`MAX_SUBSETS`.

    Examples
    --------
    A point inside a quadrilateral is beaten by a corner in every direction (top-2 at best);
    a corner by none:

    >>> corners = [[1, 1], [1.2, -1], [-1, 1.1], [-0.9, -1]]
    >>> target_depth([0.1, 0.05], corners), target_depth([1, 1], corners[1:])
    (1, 0)
    """
    t = np.asarray(target, dtype=np.float64)
    u = np.asarray(competitors, dtype=np.float64)
    if t.ndim != 1 or u.ndim != 2 or u.shape[1] != t.shape[0]:
        raise ValueError(f"target (d,) and competitors (m, d) must share d, got shapes {t.shape} and {u.shape}")
    a = t - u
    m, d = a.shape
    if d == 1:
        return int(min((a[:, 0] < 0).sum(), (a[:, 0] > 0).sum()))
    if m < d:  # fewer than d generic vectors: some direction makes all of them positive
        return 0
    if math.comb(m, d - 1) > MAX_SUBSETS:
        raise ValueError(f"C({m}, {d - 1}) = {math.comb(m, d - 1)} subsets exceed MAX_SUBSETS = {MAX_SUBSETS}")
    subsets = np.array(list(itertools.combinations(range(m), d - 1)), dtype=np.int64)
    signs = a @ _normals(a, subsets).T  # (m, subsets)
    signs[subsets.T, np.arange(len(subsets))] = 0.0  # the defining vectors: made positive next to n
    return int(min((signs < 0).sum(axis=0).min(), (signs > 0).sum(axis=0).min()))


def depth_below(points, k) -> np.ndarray:
    """For every point of a cloud, whether its depth among the others is ``< k`` (top-k recallable).

    Parameters
    ----------
    points : array_like, shape (p, d)
    k : int, ``>= 1``

    Returns
    -------
    ndarray of bool, shape (p,)
    """
    x = np.asarray(points, dtype=np.float64)
    k = check_int(k, "k", low=1)
    return np.array([target_depth(x[i], np.delete(x, i, axis=0)) < k for i in range(len(x))])


@dataclass(frozen=True)
class KSetHullFactor(Result):
    """The k-set hull factor ``H_k(p)`` of :func:`k_set_hull_factor` (an upper bound on ``P(stored at top k)``).

    ``status`` is always ``"converged"``: a Monte-Carlo estimate with its standard error
    (``stderr``), no iteration that could fail.
    """

    STATUSES = ("converged",)

    d: int
    p: int
    k: int
    problem: str
    hull: float  # H_k(p)
    stderr: float  # its Monte-Carlo standard error (delta method for DP)
    recallable: float  # q_k: a given target has depth < k
    clouds: int
    seed: int
    status: str = "converged"
    converged: bool = True
    message: str = ""


def k_set_hull_factor(d, p, k, problem="dp", *, clouds=400, seed=0) -> KSetHullFactor:
    """``H_k(p)``: the probability that every target can be top-k recalled by some direction.

    Module docstring; ``notes/top_k.md``, section 6.  ``P(stored at top k | p) <= H_k(p)`` for
    every memory, exactly.

    Parameters
    ----------
    d : int
        Output dimension, ``>= 1``.
    p : int
        Load (candidates per input, DP; shared outputs, OP), ``>= 2``.
    k : int
        ``1 <= k <= p - 1``.
    problem : {"dp", "op"}
    clouds : int
        Gaussian clouds of ``p`` points (every point a target in OP; one target per cloud and
        ``p`` targets per cloud in DP, all used).
    seed : int
        ``numpy.random.default_rng([seed, d, p, k])`` draws the clouds.

    Returns
    -------
    KSetHullFactor

    Examples
    --------
    With ``p <= k`` every target is in the top ``k`` of its ``p - 1`` competitors plus itself:

    >>> k_set_hull_factor(2, 3, 2).hull
    1.0
    """
    d = check_int(d, "d", low=1)
    p = check_int(p, "p", low=2)
    k = check_int(k, "k", low=1, high=p - 1)
    problem = check_choice(problem, "problem", ("dp", "op"))
    clouds = check_int(clouds, "clouds", low=2)
    seed = resolve_seed(seed)
    rng = np.random.default_rng([int(seed), d, p, k])
    per_target, all_ok = [], []
    for _ in range(clouds):
        ok = depth_below(rng.standard_normal((p, d)), k)
        per_target.append(ok.mean())
        all_ok.append(ok.all())
    q = float(np.mean(per_target))
    q_se = float(np.std(per_target, ddof=1)) / math.sqrt(clouds)
    if problem == "dp":
        hull, se = q ** p, p * q ** (p - 1) * q_se
    else:
        hull = float(np.mean(all_ok))
        se = math.sqrt(max(hull * (1 - hull), 0.25 / clouds) / clouds)
    return KSetHullFactor(d, p, k, problem, hull, se, q, clouds, int(seed), "converged", True,
                          f"{clouds} Gaussian clouds; exact depths; standard error of the Monte Carlo")
