"""The MILP of the certified accuracy bound, shared by its count and weighted modes (``notes/accuracy_bound.md``).

``constraint_rows`` builds the margin constraints of every input against its competitors;
``solve_milp`` solves the big-M program over a box of W; ``smallest_box`` and
``search_matrix`` size the box and read a search's W.  Used by
:mod:`validation.bounds.accuracy` and :mod:`validation.bounds.weighted`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import coo_matrix, hstack as sparse_hstack

from replica.common.checks import check_memory

from ..instances.ensembles import check_square_instance
from ..solvers import solve

__all__ = ["BOUND_SLACK", "BOX_TOLERANCE", "INTEGRALITY", "constraint_rows", "solve_milp", "search_matrix",
           "smallest_box", "bound_message", "BoundUnits", "count_units"]

BOUND_SLACK = 1e-6  # floor(dual bound + slack): HiGHS's bound on an integer objective
BOX_TOLERANCE = 1e-6  # relative: an incumbent at margin 1 - 1e-7 still counts as in the box
INTEGRALITY = 1e-6  # HiGHS's mip_feasibility_tolerance: z = 1 - 1e-6 passes as 1


def constraint_rows(instance):
    """The recall constraints ``a_{mu rho}^T vec(W) > 0`` of every input and competitor.

    Parameters
    ----------
    instance : validation.Instance

    Returns
    -------
    A : ndarray, float64, shape (p (n_candidates - 1), d^2)
        Row ``(mu, rho)`` is ``vec((t_mu - c_rho) e_mu^T)`` (row-major ``vec``, so
        ``A @ W.ravel()`` are the margins ``(t_mu - c_rho)^T W e_mu``).
    owner : ndarray of int64
        The input ``mu`` of every row.

    Raises
    ------
    ValueError
        If ``instance`` is not a square Instance (``d_in == d_out``), or the matrix exceeds
        the memory limit.
    """
    d = check_square_instance(instance, "constraint_rows")
    p, n = instance.p, instance.n_candidates
    rows = p * (n - 1)
    check_memory(3.0 * 8.0 * rows * (d * d + p), f"accuracy_bound(d={d}, p={p}): {rows} constraint rows")
    target = instance.target_index
    blocks = []
    for mu in range(p):
        cand = np.asarray(instance.candidates(mu), dtype=np.float64)
        diffs = cand[target[mu]] - np.delete(cand, target[mu], axis=0)
        blocks.append((diffs[:, :, None] * instance.inputs[mu][None, None, :]).reshape(n - 1, d * d))
    return np.vstack(blocks), np.repeat(np.arange(p, dtype=np.int64), n - 1)


def smallest_box(A, owner, subset, d):
    """``(t, W)``: the smallest ``max |W_jk|`` of a W with margin >= 1 on ``subset`` (LP), or (inf, None)."""
    rows = A[np.isin(owner, subset)]
    n = d * d
    if rows.shape[0] == 0:
        return 0.0, np.zeros((d, d))
    eye = np.eye(n)
    A_ub = np.vstack([np.hstack([-rows, np.zeros((rows.shape[0], 1))]),
                      np.hstack([eye, -np.ones((n, 1))]), np.hstack([-eye, -np.ones((n, 1))])])
    b_ub = np.concatenate([-np.ones(rows.shape[0]), np.zeros(2 * n)])
    c = np.zeros(n + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(None, None)] * n + [(0, None)], method="highs")
    if res.status != 0:
        return math.inf, None
    return float(res.x[-1]), res.x[:n].reshape(d, d)


def solve_milp(A, owner, p, B, time_limit, mip_rel_gap, at_least, weights=None):
    """One HiGHS solve at box B with the cut ``sum z >= at_least`` (``weights``: maximise and cut ``sum w z``)."""
    m, n = A.shape
    big_m = 1.0 + B * np.abs(A).sum(axis=1)
    z_part = coo_matrix((-big_m, (np.arange(m), owner)), shape=(m, p))
    rows = sparse_hstack([coo_matrix(A), z_part], format="csr")
    constraints = [LinearConstraint(rows, 1.0 - big_m, np.inf)]
    objective = np.ones(p) if weights is None else np.asarray(weights, dtype=np.float64)
    if at_least > 0:
        constraints.append(LinearConstraint(np.concatenate([np.zeros(n), objective])[None, :],
                                            float(at_least), np.inf))
    cost = np.concatenate([np.zeros(n), -objective])
    integrality = np.concatenate([np.zeros(n), np.ones(p)])
    bounds = Bounds(np.concatenate([np.full(n, -B), np.zeros(p)]),
                    np.concatenate([np.full(n, B), np.ones(p)]))
    return milp(cost, constraints=constraints, integrality=integrality, bounds=bounds,
                options={"time_limit": float(time_limit), "mip_rel_gap": float(mip_rel_gap), "disp": False})


def search_matrix(instance, W_search):
    """The search memory: ``W_search`` checked, or the give-up search's W for ``"give_up"``."""
    if isinstance(W_search, str):
        if W_search != "give_up":
            raise ValueError(f"W_search must be a (d, d) array, 'give_up' or None, got {W_search!r}")
        return solve(instance, "optimal", options={"give_up": True}).matrix()
    W = np.asarray(W_search, dtype=np.float64)
    if W.shape != (instance.d, instance.d) or not np.all(np.isfinite(W)):
        raise ValueError(f"W_search must be a finite (d, d) = {(instance.d, instance.d)} array, "
                         f"got shape {W.shape}")
    return W


class BoundUnits(NamedTuple):
    """How a bound message names and prints its quantity (:func:`bound_message`).

    ``name`` is what is bounded (``"count"``, ``"recalled weight"``), ``short`` its name in the
    box-check sentence, ``total`` the printed maximum, ``fmt`` the format of a value and
    ``exact_note`` what follows an exact value.
    """

    name: str
    short: str
    total: str
    fmt: str
    exact_note: str = ""


def count_units(p: int) -> BoundUnits:
    """The units of a bound on the number of facts recalled, out of ``p``."""
    return BoundUnits("count", "count", str(p), "d")


def bound_message(status, bracket, B, box_check, notes, units: BoundUnits) -> str:
    """The one-line message of an :class:`~validation.bounds.accuracy.AccuracyBound`.

    ``bracket = (lower, upper)`` is the certified bracket on the best value of ``units``;
    ``box_check = (binding, check_box, check_lower, check_upper)`` is the check of the box
    at ten times its size; ``notes`` are appended.
    """
    lower, upper = bracket
    binding, check_box, check_lower, check_upper = box_check
    long, total, fmt = units.name, units.total, units.fmt
    lo, up = format(lower, fmt), format(upper, fmt)
    if status in ("exact", "bracket", "time_limit"):
        head = {"exact": f"best {long} in the box: {lo} of {total}{units.exact_note}",
                "bracket": f"{lo} <= best {long} <= {up} of {total} (certified for the box)",
                "time_limit": f"budget ran out: {lo} <= best {long} <= {up} of {total}"}[status]
    else:
        head = f"no certified bound: {lo} <= best {long} <= {total} (trivial)"
    inconclusive = ("box not checked" if check_lower is None else
                    f"box check inconclusive ({format(check_lower, fmt)}..{format(check_upper, fmt)} at {10 * B:g})")
    box_word = {True: "box binds", False: f"same {units.short} at {10 * B:g} (evidence, not a proof, "
                "for unbounded W)", None: "box not checked" if not check_box else inconclusive}[binding]
    return "; ".join([f"{head}, for W in [-{B:g}, {B:g}]^(d x d) at margin 1", box_word] + notes)
