"""An exact top-k storage decision at small d: a MILP with one binary per competitor.

The top-k search (``solve(instance, "optimal", options={"top_k": k})``,
``notes/top_k.md``) certifies ``stored`` when it finds a W, but its ``not_found`` is only
a lower-bound verdict.  :func:`top_k_decision` decides the question for memories in a box:

* unknowns ``vec(W)`` in ``[-B, B]^{d x d}`` and one binary ``y_{mu rho}`` per input
  ``mu`` and competitor ``rho`` (the rows of
  :func:`validation.bounds.accuracy.constraint_rows`);
* ``a_{mu rho}^T vec(W) >= 1 - M_{mu rho} y_{mu rho}`` with
  ``M_{mu rho} = 1 + B ||a_{mu rho}||_1`` (``y = 1`` exempts the competitor: the row is
  inactive everywhere in the box);
* ``sum_rho y_{mu rho} <= k - 1`` for every input: at most ``k - 1`` competitors may
  beat the target;
* no objective: HiGHS either finds a feasible point, whose W is checked in float64
  (:func:`validation.measurements.recall.top_k_recalled`, ties fail), or proves the MILP infeasible.

Recall is scale-invariant, so the box is the set of memories with
``max_jk |W_jk| <= B m``, ``m`` the smallest margin of the non-exempt rows.
``not_stored`` is certified for that set only; a second solve at ``10 B`` (``check_box``)
that is infeasible too is evidence, not a proof, that the box does not bind.  The
derivation, the limits and the measured brackets are in ``notes/top_k.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix, hstack as sparse_hstack

from replica.common.checks import check_int
from replica.common.results import Result

from .accuracy import check_bound_arguments, constraint_rows
from ..measurements.recall import top_k_recalled
from ..solvers import solve

__all__ = ["top_k_decision", "TopKDecision"]


@dataclass(frozen=True)
class TopKDecision(Result):
    """Whether one W puts every target in the top ``k``, decided for W in a box.

    Attributes
    ----------
    stored : bool or None
        True: a W was found and checked in float64 (a certificate for any box).  False:
        the MILP is infeasible at box ``B`` (certified for that box).  None: undecided.
    top_k, p, d : int
    problem : str
    seconds : float
        Wall time of the whole call (search and MILP solves).
    box : float
        ``B`` of the main solve.
    box_binding : bool or None
        ``False``: the check solve at ``10 B`` is infeasible too (evidence that the box
        does not bind, not a proof).  ``True``: a W outside the box was found, so the box
        binds (``stored`` is then True).  None: not checked or not applicable.
    found_by : {"search", "milp", "milp_check", None}
        What found the storing W (None unless ``stored``).
    search_status : str or None
        Status of the top-k search when one was run.
    time_limit : float
        Seconds allowed to each MILP solve.
    status : {"stored", "not_stored", "time_limit", "failed"}
        ``stored`` and ``not_stored`` as ``stored``; ``time_limit``: the budget ran out
        with neither answer; ``failed``: HiGHS gave no usable answer, or its feasible
        point failed the float64 check.
    converged : bool
        True for ``stored`` and ``not_stored``.
    message : str
    """

    STATUSES: ClassVar[tuple[str, ...]] = ("stored", "not_stored", "time_limit", "failed")

    stored: bool | None
    top_k: int
    p: int
    d: int
    problem: str
    seconds: float
    box: float
    box_binding: bool | None
    found_by: str | None
    search_status: str | None
    time_limit: float
    status: str
    converged: bool
    message: str


def _milp(A, owner, p, k, B, time_limit):
    """One HiGHS feasibility solve at box ``B``: ``(scipy result, n)``."""
    m, n = A.shape
    big_m = 1.0 + B * np.abs(A).sum(axis=1)
    exempt = coo_matrix((big_m, (np.arange(m), np.arange(m))), shape=(m, m))
    rows = sparse_hstack([coo_matrix(A), exempt], format="csr")
    per_input = coo_matrix((np.ones(m), (owner, n + np.arange(m))), shape=(p, n + m)).tocsr()
    constraints = [LinearConstraint(rows, 1.0, np.inf), LinearConstraint(per_input, -np.inf, k - 1)]
    integrality = np.concatenate([np.zeros(n), np.ones(m)])
    bounds = Bounds(np.concatenate([np.full(n, -B), np.zeros(m)]), np.concatenate([np.full(n, B), np.ones(m)]))
    res = milp(np.zeros(n + m), constraints=constraints, integrality=integrality, bounds=bounds,
               options={"time_limit": float(time_limit), "disp": False})
    return res, n


def _verified(instance, W, k):
    """float64 top-k recall of every input (ties fail), for the instance's targets."""
    targets = None if instance.outputs is None else instance.target_index
    return bool(top_k_recalled(instance.scores(W), k, targets).all())


def _search_memory(instance, W_search, k):
    """``(W or None, search status or None)`` of the ``W_search`` argument."""
    if W_search is None:
        return None, None
    if isinstance(W_search, str):
        if W_search != "search":
            raise ValueError(f"W_search must be a (d, d) array, 'search' or None, got {W_search!r}")
        sol = solve(instance, "optimal", options={"top_k": k})
        return sol.matrix(), sol.status
    W = np.asarray(W_search, dtype=np.float64)
    if W.shape != (instance.d, instance.d) or not np.all(np.isfinite(W)):
        raise ValueError(f"W_search must be a finite (d, d) = {(instance.d, instance.d)} array, got shape {W.shape}")
    return W, "given"


def _checked(instance, top_k, box, time_limit, check_box):
    """``(k, B, time_limit)`` after the argument checks of :func:`top_k_decision`."""
    B, time_limit = check_bound_arguments(instance, box, time_limit, check_box, function="top_k_decision")
    k = check_int(top_k, "top_k", low=2)
    if k >= instance.n_candidates:
        raise ValueError(f"top_k must be below the number of candidates {instance.n_candidates}, got {k}")
    return k, B, time_limit


def top_k_decision(instance, top_k, *, W_search=None, box=1e4, time_limit=60.0, check_box=True) -> TopKDecision:
    """Decide whether one W stores every input in the top ``top_k`` (``notes/top_k.md``).

    Parameters
    ----------
    instance : validation.Instance
        Any problem (OP, DP, ``outputs=K``).  The MILP has ``p (n_candidates - 1)``
        binaries; it is meant for ``d <= 5`` and ``p <= 30``.
    top_k : int
        ``k >= 2``, below the number of candidates.
    W_search : array_like (d, d), "search" or None, optional
        A memory to check first, or ``"search"`` to run the top-k search
        (``solve(instance, "optimal", options={"top_k": top_k})``).  If it stores every
        input (float64) the answer is ``stored`` without a MILP.
    box : float, optional
        ``B > 0`` of the MILP at margin 1 (module docstring).
    time_limit : float, optional
        Seconds for each MILP solve (> 0).
    check_box : bool, optional
        After an infeasible solve, solve again at ``10 B``.

    Returns
    -------
    TopKDecision

    Raises
    ------
    ValueError
        For an ``instance`` that is not an Instance or is rectangular (``d_in != d_out``:
        the MILP is over ``d x d`` memories), ``top_k`` not an integer in
        ``[2, n_candidates - 1]``, a ``W_search`` of the wrong shape or with non-finite
        entries, ``box`` or ``time_limit`` not positive and finite, a ``check_box`` that
        is not a bool, or a constraint matrix over the memory limit.

    Examples
    --------
    >>> from validation import make_instance
    >>> from validation.bounds.top_k import top_k_decision
    >>> top_k_decision(make_instance(3, 4, "dp", seed=0), 2).status
    'stored'
    """
    start = time.perf_counter()
    k, B, time_limit = _checked(instance, top_k, box, time_limit, check_box)
    W, search_status = _search_memory(instance, W_search, k)
    common = dict(top_k=k, p=instance.p, d=instance.d, problem=instance.problem, box=B,
                  search_status=search_status, time_limit=time_limit)

    def result(stored, status, binding, found_by, message):
        return TopKDecision(stored=stored, seconds=time.perf_counter() - start, box_binding=binding,
                            found_by=found_by, status=status, converged=status in ("stored", "not_stored"),
                            message=message, **common)

    if W is not None and _verified(instance, W, k):
        return result(True, "stored", None, "search",
                      f"the search W puts every target in the top {k} (float64): stored, a certificate")
    A, owner = constraint_rows(instance)
    res, n = _milp(A, owner, instance.p, k, B, time_limit)
    d = instance.d
    if res.status == 0 and res.x is not None:
        if _verified(instance, res.x[:n].reshape(d, d), k):
            return result(True, "stored", None, "milp",
                          f"the MILP's W puts every target in the top {k} (float64): stored, a certificate")
        return result(None, "failed", None, None,
                      "the MILP's feasible point fails the float64 top-k check (HiGHS's tolerances); "
                      "no answer: use a smaller box")
    if res.status == 1:
        return result(None, "time_limit", None, None,
                      f"time limit {time_limit:g} s per solve reached with neither a W nor a proof of infeasibility")
    if res.status != 2:
        return result(None, "failed", None, None, f"HiGHS: {res.message}; no answer")
    head = f"no W in [-{B:g}, {B:g}]^(d x d) at margin 1 puts every target in the top {k}: not stored for that box"
    if not check_box:
        return result(False, "not_stored", None, None, head + "; box not checked")
    big, _ = _milp(A, owner, instance.p, k, 10.0 * B, time_limit)
    if big.status == 2:
        return result(False, "not_stored", False, None,
                      head + f"; infeasible at {10 * B:g} too (evidence, not a proof, for unbounded W)")
    if big.status == 0 and big.x is not None and _verified(instance, big.x[:n].reshape(d, d), k):
        return result(True, "stored", True, "milp_check",
                      f"the box binds: a W in [-{10 * B:g}, {10 * B:g}]^(d x d) stores every input in the top {k} "
                      "(float64): stored, a certificate")
    return result(False, "not_stored", None, None,
                  head + f"; box check at {10 * B:g} inconclusive ({big.message})")
