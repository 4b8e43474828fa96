"""A certified upper bound on the number (or the weight) of facts any linear memory recalls.

The give-up search (``solve(instance, "optimal", options={"give_up": True})``,
``notes/recall_accuracy.md`` section 6) finds a W that recalls many inputs: a *lower*
bound on the best count ``max_W #{mu recalled}``.  :func:`accuracy_bound` brackets the
best count from above as well, with a mixed-integer linear program solved by HiGHS
(``scipy.optimize.milp``):

* unknowns ``vec(W)`` in the box ``[-B, B]^{d x d}`` and one binary ``z_mu`` per input;
* for every input ``mu`` and competitor ``rho`` (OP: the other shared outputs; DP: the
  input's own other candidates ``instance.candidates(mu)``; with ``outputs=K`` the
  other ``K - 1`` answers) one row
  ``a_{mu rho}^T vec(W) >= 1 - M_{mu rho} (1 - z_mu)`` with
  ``a_{mu rho} = (t_mu - c_rho) e_mu^T`` and ``M_{mu rho} = 1 + B ||a_{mu rho}||_1``,
  the smallest M for which ``z_mu = 0`` leaves the row inactive everywhere in the box;
* maximise ``sum_mu z_mu``, or with query frequencies (``Instance.weights``, or the
  ``weights`` argument) the recalled weight ``sum_mu w_mu z_mu``; then ``top`` may keep
  only the heaviest inputs in the MILP and count the others as recalled.

``z_mu = 1`` asks for margin 1 on input ``mu``.  Recall is scale-invariant, so this is
the strict recall of a W with ``max_jk |W_jk| <= B m``, ``m`` its smallest margin on
the recalled inputs: the bound is **certified for that set of memories only**.  Every W
that recalls its inputs with normalised margin (``validation.recall.normalised_margin``)
at least ``d / B`` lies in it.  The box is checked, not proven, not to bind: a second
solve at ``10 B`` must find the same count (``box_binding``); equal counts at 10x and
100x are evidence, not a proof, for unbounded W.  Derivation, limits and measurements:
``notes/accuracy_bound.md``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import coo_matrix, hstack as sparse_hstack

from replica.common.checks import check_memory, check_real
from replica.common.results import Result

from .ensembles import check_square_instance
from .recall import recall_check
from .solvers import solve

__all__ = ["accuracy_bound", "AccuracyBound", "constraint_rows", "check_bound_arguments"]

_BOUND_SLACK = 1e-6  # floor(dual bound + slack): HiGHS's bound on an integer objective
_BOX_TOLERANCE = 1e-6  # relative: an incumbent at margin 1 - 1e-7 still counts as in the box
_INTEGRALITY = 1e-6  # HiGHS's mip_feasibility_tolerance: z = 1 - 1e-6 passes as 1


@dataclass(frozen=True)
class AccuracyBound(Result):
    """Certified bracket ``recalled_lower <= max_W #{recalled} <= recalled_upper`` for W in a box.

    Attributes
    ----------
    recalled_lower : int
        Largest count of inputs a W of the box recalls (the MILP incumbents, the search
        W or the smallest-box W of the search's recalled set), checked in float64 by
        :func:`validation.recall.recall_check` (strict, ties fail): the W scaled to margin 1
        on those inputs lies in the box (up to a relative 1e-6).
    recalled_upper : int
        Certified upper bound for every W of the box: ``floor(dual bound + 1e-6)`` of
        the MILP, or ``p`` when the solve gave no dual bound (the message says so).
    recalled_any : int
        Largest count of strictly recalled inputs of any W checked (search W, MILP
        incumbents), whatever box it needs: a lower bound on the best count of unbounded W.
        Above ``recalled_upper`` it proves that the box binds.
    p, d : int
    problem : str
    seconds : float
        Wall time of the whole call (search, both MILP solves).
    box : float
        ``B``: the bound covers every W with ``max |W_jk| <= B * (smallest margin of the
        recalled inputs)``.
    box_binding : bool or None
        ``True``: a W outside the box recalls more than ``recalled_upper`` (the search
        W, an incumbent or the check solve at ``10 B`` found it: ``recalled_any``), so the box binds and the bound is
        not one for unbounded W.  ``False``: both solves are exact and agree (evidence
        that the box does not bind, not a proof).  ``None``: not checked, or the check
        was inconclusive (a bracket at either box).
    check_lower, check_upper : int or None
        The bracket of the check solve at ``10 B`` (None when not run).
    search_recalled : int or None
        Inputs the search W recalls (None without a search).
    search_box : float or None
        The box the search's recalled set needs: the smallest ``max |W_jk|`` of a W that
        recalls those inputs with margin 1 (an LP); None without a search.
    mip_gap : float
        HiGHS's final relative gap of the main solve (NaN if it has none).
    time_limit : float
        Seconds allowed to each MILP solve.
    weighted : bool
        True when the MILP maximised the recalled weight ``sum_mu w_mu z_mu`` (unequal
        weights); False for the count (no weights, or equal ones: the count MILP, bit for
        bit).  When True the bracket is ``mass_lower``, ``mass_upper``;
        ``recalled_lower`` and ``recalled_any`` are the counts of the W behind
        ``mass_lower`` and ``mass_any``, ``recalled_upper`` is the trivial ``p`` (the
        weighted solve bounds the weight, not the count), and the box check is in
        ``mass_check_lower``, ``mass_check_upper`` (``check_lower``, ``check_upper`` None).
    top : int
        Inputs in the MILP: the ``top`` heaviest (``p`` unless ``top`` was given); the
        others count as recalled in ``mass_upper``.
    mass_lower, mass_upper : float
        Certified bracket on the best recalled weight, as a fraction of the total weight,
        for W in the box.  ``mass_lower``: the float64-checked weight of the inputs a W of
        the box recalls (the W scaled to margin 1 on them lies in the box, up to a relative
        1e-6).  ``mass_upper``: the MILP's dual bound + 1e-6, plus the weight of the inputs
        left out of it (``top``), capped at 1 (1 when there is no dual bound).  Count:
        ``recalled_lower / p`` and ``recalled_upper / p``.
    mass_any : float
        Largest recalled weight of any W checked, whatever box it needs (count: ``recalled_any / p``).
    search_mass : float or None
        Weight the search W recalls, checked in float64 (None without a search).
    mass_check_lower, mass_check_upper : float or None
        The bracket of the check solve at ``10 B`` as weights (None when not run).
    status : {"exact", "bracket", "time_limit", "failed"}
        ``exact``: ``recalled_lower == recalled_upper``, the best count in the box
        (weighted: ``mass_upper - mass_lower <= 1e-5``, the best weight to that precision).
        ``bracket``: the solve ended (relative gap ``mip_rel_gap`` reached, or the
        incumbent lost an input in the float64 check) with ``lower < upper``, both
        certified.  ``time_limit``: the budget ran out; the best bracket found is
        returned (upper ``p`` when there was no dual bound).  ``failed``: HiGHS gave
        no usable answer (upper ``p``, the trivial bound).
    converged : bool
        True for ``exact`` and ``bracket``.
    message : str
    """

    STATUSES: ClassVar[tuple[str, ...]] = ("exact", "bracket", "time_limit", "failed")

    recalled_lower: int
    recalled_upper: int
    recalled_any: int
    p: int
    d: int
    problem: str
    seconds: float
    box: float
    box_binding: bool | None
    check_lower: int | None
    check_upper: int | None
    search_recalled: int | None
    search_box: float | None
    mip_gap: float
    time_limit: float
    weighted: bool
    top: int
    mass_lower: float
    mass_upper: float
    mass_any: float
    search_mass: float | None
    mass_check_lower: float | None
    mass_check_upper: float | None
    status: str
    converged: bool
    message: str


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


def _counts(instance, W, B):
    """``(strict, in_box)``: inputs W recalls (float64, strict, NaN fails), and the most of
    them it recalls as a member of the box, i.e. the largest k with
    ``max |W_jk| <= B m_(k) (1 + 1e-6)``, ``m_(k)`` its k-th largest margin (W scaled to
    margin 1 on those k lies in the box, up to the MILP's feasibility tolerance)."""
    recalled, margins = recall_check(instance.scores(W), instance.target_index)
    strict = int(recalled.sum())
    if strict == 0:
        return 0, 0
    top = np.sort(margins[recalled])[::-1]
    in_box = int(np.sum(np.abs(W).max() <= B * top * (1.0 + _BOX_TOLERANCE)))
    return strict, in_box


def _smallest_box(A, owner, subset, d):
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


def _milp(A, owner, p, B, time_limit, mip_rel_gap, at_least, weights=None):
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


def _bracket(instance, res, p, d, B, at_least):
    """``(lower, upper, has_dual_bound, gap, strict)`` of one MILP result at box B: lower
    (in the box) and strict (any box) counts of the incumbent, checked in float64."""
    lower = int(at_least)
    strict = 0
    if res.x is not None:
        strict, in_box = _counts(instance, res.x[:d * d].reshape(d, d), B)
        lower = max(lower, in_box)
    dual = getattr(res, "mip_dual_bound", None)
    has_dual = dual is not None and math.isfinite(float(dual)) and res.status in (0, 1)
    upper = min(p, math.floor(-float(dual) + _BOUND_SLACK)) if has_dual else p
    gap = getattr(res, "mip_gap", None)
    return lower, upper, has_dual, (float(gap) if gap is not None else math.nan), strict


def _search_matrix(instance, W_search):
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


def _search(instance, W_search, A, owner, B):
    """``(count, box needed, count of a W in the box)`` of the search memory; ``(None, None, 0)`` without one."""
    if W_search is None:
        return None, None, 0
    W = _search_matrix(instance, W_search)
    recalled, _ = recall_check(instance.scores(W), instance.target_index)
    count, in_box = _counts(instance, W, B)
    need, W_box = _smallest_box(A, owner, np.flatnonzero(recalled), instance.d)
    if W_box is not None:  # the smallest-box W of the recalled set, checked again
        strict, fits = _counts(instance, W_box, B)
        count, in_box = max(count, strict), max(in_box, fits)
    return count, need, in_box


def accuracy_bound(instance, *, W_search=None, box=1e4, time_limit=60.0, mip_rel_gap=0.0,
                   check_box=True, weights="instance", top=None) -> AccuracyBound:
    """Certified bracket on the largest number (or weight) of inputs one W recalls (``notes/accuracy_bound.md``).

    Parameters
    ----------
    instance : validation.Instance
        Any problem (OP, DP, ``outputs=K``); the MILP has ``p (n_candidates - 1)`` rows
        of ``d^2 + p`` unknowns, meant for ``d <= 8``, ``p <= 40``.
    W_search : array_like (d, d), "give_up" or None, optional
        A memory from a search, or ``"give_up"`` to run
        ``solve(instance, "optimal", options={"give_up": True})``.  Its count (checked in
        float64) becomes the cut ``sum z >= count`` (valid: the optimum is at least any
        achieved count) when the LP of its recalled set fits the box.
    box : float, optional
        ``B > 0``: the MILP's W lies in ``[-B, B]^{d x d}`` at margin 1; the bound is
        certified for those memories only (every W with normalised margin ``>= d / B``).
    time_limit : float, optional
        Seconds for each MILP solve (> 0); the box check is a second solve.
    mip_rel_gap : float, optional
        HiGHS's relative gap at which it stops, in ``[0, 1)`` (0: prove the optimum).
    check_box : bool, optional
        Solve again at ``10 B`` (cut by the first count) and compare (``box_binding``).
    weights : "instance", None or array_like of shape (p,), optional
        What a recalled input is worth.  ``"instance"`` (default): the instance's query
        frequencies ``instance.weights`` (``make_instance(..., facts=FactSettings(weights=))``,
        ``Instance.from_embeddings(..., weights=)``), every input alike when it has none;
        None: every input alike; an array: non-negative finite weights with a positive
        sum.  Unequal weights make the MILP maximise the recalled weight
        ``sum_mu w_mu z_mu`` (``weighted``: the bracket is ``mass_lower``, ``mass_upper``, as
        fractions of the total weight); equal weights give the count MILP, bit for bit.
    top : int, optional
        Unequal weights only: only the ``top`` heaviest inputs enter the MILP (ties in the
        order of the inputs) and the others count as recalled:
        ``max_W w(recalled) <= max_W w(recalled among the top) + w(the others)``.  A smaller
        MILP that closes where the full one does not, for a looser upper end.  Default: all ``p``.

    Returns
    -------
    AccuracyBound

    Raises
    ------
    ValueError
        For an ``instance`` that is not an Instance or is rectangular (``d_in != d_out``:
        the MILP is over ``d x d`` memories), a ``W_search`` of the wrong shape
        or with non-finite entries, ``box`` or ``time_limit`` not positive and finite,
        ``mip_rel_gap`` outside ``[0, 1)``, a ``check_box`` that is not a bool, ``weights``
        of the wrong length, negative, not finite or summing to zero, a ``top`` that is
        not an integer in ``[1, p]`` or is given with equal weights, or a constraint
        matrix over the memory limit.
    """
    start = time.perf_counter()
    B, time_limit, mip_rel_gap = _checked_arguments(instance, box, time_limit, mip_rel_gap, check_box)
    w = _checked_weights(instance, weights)
    top = _checked_top(top, instance.p, w)
    if w is not None:
        return _weighted_bound(instance, w, top, W_search, (B, time_limit, mip_rel_gap, check_box), start)
    d, p = instance.d, instance.p
    A, owner = constraint_rows(instance)
    search_count, search_need, in_box = _search(instance, W_search, A, owner, B)

    res = _milp(A, owner, p, B, time_limit, mip_rel_gap, in_box)
    lower, upper, has_dual, gap, strict = _bracket(instance, res, p, d, B, in_box)
    best_any = max(strict, search_count or 0)
    notes = []
    slack = _INTEGRALITY * (1.0 + B * float(np.abs(A).sum(axis=1).max()))
    if slack > 0.5:
        notes.append(f"box large for HiGHS's integrality tolerance (M * 1e-6 = {slack:.2g} of the margin 1): "
                     "incumbents may lose inputs in the float64 check, the dual bound stays an upper "
                     "bound but a looser one")
    status, upper = _status(res, lower, upper, has_dual, time_limit, p, notes)

    check_lower = check_upper = None
    if check_box:
        big = _milp(A, owner, p, 10.0 * B, time_limit, mip_rel_gap, lower)
        check_lower, check_upper, _, _, big_strict = _bracket(instance, big, p, d, 10.0 * B, lower)
        if big.status not in (0, 1):
            check_upper = p
        best_any = max(best_any, big_strict)
    binding = None
    if status != "failed" and best_any > upper:
        binding = True
        notes.append(f"the box binds: a W outside it recalls {best_any} > {upper}; the bound holds "
                     "for the box only, use a larger box")
    elif check_lower is not None and status == "exact" and check_lower == check_upper == upper:
        binding = False
    message = _message(status, (lower, upper, p), B, (binding, check_box, check_lower, check_upper), notes)
    return AccuracyBound(
        recalled_lower=int(lower), recalled_upper=int(upper), recalled_any=int(max(best_any, lower)),
        p=p, d=d, problem=instance.problem,
        seconds=time.perf_counter() - start, box=B, box_binding=binding, check_lower=check_lower,
        check_upper=check_upper, search_recalled=search_count, search_box=search_need, mip_gap=gap,
        time_limit=time_limit, weighted=False, top=p, mass_lower=lower / p, mass_upper=upper / p,
        mass_any=max(best_any, lower) / p, search_mass=None if search_count is None else search_count / p,
        mass_check_lower=None if check_lower is None else check_lower / p,
        mass_check_upper=None if check_upper is None else check_upper / p,
        status=status, converged=status in ("exact", "bracket"), message=message)


def check_bound_arguments(instance, box, time_limit, check_box, *, function):
    """``(B, time_limit)``: the arguments every box-MILP bound shares, checked.

    ``function`` names the bound in the message of a rectangular instance (the MILP is
    over ``d x d`` memories).

    Raises
    ------
    ValueError
        For an ``instance`` that is not an Instance or is rectangular (``d_in != d_out``),
        ``box`` or ``time_limit`` not positive and finite, or a ``check_box`` that is not
        a bool.
    """
    check_square_instance(instance, function)
    B = check_real(box, "box", low=0.0, low_open=True)
    if not math.isfinite(B):
        raise ValueError(f"box must be finite, got {box!r}")
    time_limit = check_real(time_limit, "time_limit", low=0.0, low_open=True)
    if not math.isfinite(time_limit):
        raise ValueError(f"time_limit must be finite, got {time_limit!r}")
    if not isinstance(check_box, (bool, np.bool_)):
        raise ValueError(f"check_box must be a bool, got {check_box!r}")
    return B, time_limit


def _checked_arguments(instance, box, time_limit, mip_rel_gap, check_box):
    """``(B, time_limit, mip_rel_gap)`` after the checks of :func:`accuracy_bound` (``ValueError`` otherwise)."""
    B, time_limit = check_bound_arguments(instance, box, time_limit, check_box, function="accuracy_bound")
    mip_rel_gap = check_real(mip_rel_gap, "mip_rel_gap", low=0.0, high=1.0, high_open=True)
    return B, time_limit, mip_rel_gap


def _status(res, lower, upper, has_dual, time_limit, p, notes):
    """``(status, upper)`` of one MILP solve; ``notes`` gets what the message must say."""
    if res.status == 0:
        status = "exact" if lower == upper else "bracket"
    elif res.status == 1:
        status = "exact" if lower == upper and has_dual else "time_limit"
        if not has_dual:
            notes.append(f"no dual bound within {time_limit:g} s: the upper bound is the trivial p")
    else:
        status = "failed"
        upper = p
        notes.append(f"HiGHS: {res.message} (upper bound is the trivial p)")
    if lower > upper:  # cannot happen in exact arithmetic: a tolerance problem of the solve
        notes.append(f"the float64 check found {lower} recalled above the dual bound {upper}: "
                     "the bound is not trusted")
        status, upper = "failed", p
    return status, upper


def _message(status, counts, B, box_check, notes):
    """The one-line message of an :class:`AccuracyBound` (``counts = (lower, upper, p)``,
    ``box_check = (binding, check_box, check_lower, check_upper)``)."""
    lower, upper, p = counts
    binding, check_box, check_lower, check_upper = box_check
    if status in ("exact", "bracket", "time_limit"):
        head = {"exact": f"best count in the box: {lower} of {p}",
                "bracket": f"{lower} <= best count <= {upper} of {p} (certified for the box)",
                "time_limit": f"budget ran out: {lower} <= best count <= {upper} of {p}"}[status]
    else:
        head = f"no certified bound: {lower} <= best count <= {p} (trivial)"
    box_word = {True: "box binds", False: f"same count at {10 * B:g} (evidence, not a proof, "
                "for unbounded W)", None: "box not checked" if not check_box else
                f"box check inconclusive ({check_lower}..{check_upper} at {10 * B:g})"}[binding]
    return "; ".join([f"{head}, for W in [-{B:g}, {B:g}]^(d x d) at margin 1", box_word] + notes)


# --------------------------------------------------------------------------------------
# the weighted bound: max sum_mu w_mu z_mu (notes/accuracy_bound.md, section 7)
# --------------------------------------------------------------------------------------
_MASS_CLOSED = 1e-5  # a weighted bracket this narrow is "exact": HiGHS's absolute gap 1e-6 plus the slack


def _checked_weights(instance, weights):
    """The weights of :func:`accuracy_bound` divided by their sum, or None for the count (none or all equal)."""
    p = instance.p
    if isinstance(weights, str):
        if weights != "instance":
            raise ValueError(f"weights must be 'instance', None or an array of p = {p} numbers, got {weights!r}")
        if instance.weights is None:
            return None
        w = np.array(instance.weights, dtype=np.float64)
    elif weights is None:
        return None
    else:
        try:
            w = np.array(weights, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"weights must be 'instance', None or an array of p = {p} numbers, "
                             f"got {weights!r}") from None
        if w.shape != (p,):
            raise ValueError(f"weights must have length p = {p}, got shape {w.shape}")
        if not np.all(np.isfinite(w)):
            raise ValueError(f"weights must be finite, got {w[~np.isfinite(w)][0]!r}")
        if np.any(w < 0.0):
            raise ValueError(f"weights must be non-negative, got {w[w < 0.0][0]!r}")
        if not w.sum() > 0.0:
            raise ValueError("weights must have a positive sum, got all zeros")
    if np.all(w == w[0]):
        return None
    return w / math.fsum(w.tolist())


def _checked_top(top, p, w):
    """``top`` checked: an integer in ``[1, p]`` (``p`` for None), only with unequal weights."""
    if top is None:
        return p
    if isinstance(top, (bool, np.bool_)) or not isinstance(top, (int, np.integer)) or not 1 <= int(top) <= p:
        raise ValueError(f"top must be an integer in [1, p = {p}], got {top!r}")
    if w is None and int(top) < p:
        raise ValueError(f"top={top} needs unequal weights (with equal weights every input counts alike)")
    return int(top)


def _masses(instance, W, B, w, chosen):
    """``(strict, in_box, in_box_chosen, strict_count, in_box_count)`` of W.

    ``strict``: the weight of the inputs W recalls (float64, strict, NaN fails);
    ``in_box``: of those it recalls as a member of the box, i.e. with margin
    ``>= max |W_jk| / (B (1 + 1e-6))`` (W scaled to margin 1 on them lies in the box);
    ``in_box_chosen``: the same restricted to the inputs of the MILP.
    """
    recalled, margins = recall_check(instance.scores(W), instance.target_index)
    if not recalled.any():
        return 0.0, 0.0, 0.0, 0, 0
    with np.errstate(invalid="ignore"):
        fits = recalled & (np.abs(W).max() <= B * margins * (1.0 + _BOX_TOLERANCE))
    return (math.fsum(w[recalled].tolist()), math.fsum(w[fits].tolist()), math.fsum(w[fits & chosen].tolist()),
            int(recalled.sum()), int(fits.sum()))


def _weighted_solve(instance, res, B, w, chosen, tail):
    """``(evaluation of the incumbent or None, upper, has_dual, gap)`` of one weighted MILP result at box B."""
    d = instance.d
    found = _masses(instance, res.x[:d * d].reshape(d, d), B, w, chosen) if res.x is not None else None
    dual = getattr(res, "mip_dual_bound", None)
    has_dual = dual is not None and math.isfinite(float(dual)) and res.status in (0, 1)
    upper = min(1.0, max(0.0, -float(dual)) + _BOUND_SLACK + tail) if has_dual else 1.0
    gap = getattr(res, "mip_gap", None)
    return found, upper, has_dual, (float(gap) if gap is not None else math.nan)


def _weighted_bound(instance, w, top, W_search, settings, start) -> AccuracyBound:
    """:func:`accuracy_bound` with unequal weights ``w`` (summing to one) on the ``top`` heaviest inputs."""
    B, time_limit, mip_rel_gap, check_box = settings
    d, p = instance.d, instance.p
    A, owner = constraint_rows(instance)
    chosen = np.zeros(p, dtype=bool)
    chosen[np.argsort(-w, kind="stable")[:top]] = True
    tail = math.fsum(w[~chosen].tolist())
    index = np.cumsum(chosen) - 1
    kept = chosen[owner]
    A_top, owner_top, w_top = A[kept], index[owner[kept]], w[chosen]

    evaluations = []  # (strict, in_box, in_box_chosen, strict_count, in_box_count) of every W checked
    search_mass = search_count = search_need = None
    if W_search is not None:
        W = _search_matrix(instance, W_search)
        evaluations.append(_masses(instance, W, B, w, chosen))
        search_mass, search_count = evaluations[0][0], evaluations[0][3]
        recalled, _ = recall_check(instance.scores(W), instance.target_index)
        search_need, W_box = _smallest_box(A, owner, np.flatnonzero(recalled), d)
        if W_box is not None:  # the smallest-box W of the recalled set, checked again
            evaluations.append(_masses(instance, W_box, B, w, chosen))
    cut = max((e[2] for e in evaluations), default=0.0)
    res = _milp(A_top, owner_top, top, B, time_limit, mip_rel_gap, cut * (1.0 - 1e-9), weights=w_top)
    found, upper, has_dual, gap = _weighted_solve(instance, res, B, w, chosen, tail)
    if found is not None:
        evaluations.append(found)
    best = max(evaluations, key=lambda e: (e[1], e[4]), default=(0.0, 0.0, 0.0, 0, 0))
    lower, lower_count = best[1], best[4]
    notes = []
    slack = _INTEGRALITY * (1.0 + B * float(np.abs(A_top).sum(axis=1).max()))
    if slack > 0.5:
        notes.append(f"box large for HiGHS's integrality tolerance (M * 1e-6 = {slack:.2g} of the margin 1): "
                     "incumbents may lose inputs in the float64 check, the dual bound stays an upper "
                     "bound but a looser one")
    if top < p:
        notes.append(f"the {p - top} lightest inputs (weight {tail:.6g}) are left out of the MILP and counted "
                     "as recalled")
    status, upper = _weighted_status(res, lower, upper, has_dual, time_limit, notes)

    check = None
    if check_box:
        cut = max([cut] + [e[2] for e in evaluations])
        big = _milp(A_top, owner_top, top, 10.0 * B, time_limit, mip_rel_gap, cut * (1.0 - 1e-9), weights=w_top)
        big_found, big_upper, _, _ = _weighted_solve(instance, big, 10.0 * B, w, chosen, tail)
        check = [lower, big_upper if big.status in (0, 1) else 1.0]
        if big_found is not None:
            evaluations.append(big_found)  # its strict weight counts for "any W"
            check[0] = max(lower, big_found[1])
    best_any = max([lower] + [e[0] for e in evaluations])
    any_count = max([lower_count] + [e[3] for e in evaluations if e[0] == best_any])
    binding = None
    if status != "failed" and best_any > upper:
        binding = True
        notes.append(f"the box binds: a W outside it recalls weight {best_any:.6f} > {upper:.6f}; the bound "
                     "holds for the box only, use a larger box")
    elif check is not None and status == "exact" and check[1] - check[0] <= _MASS_CLOSED \
            and abs(check[1] - upper) <= _MASS_CLOSED:
        binding = False
    message = _weighted_message(status, (lower, upper), B, (binding, check_box, check), notes)
    return AccuracyBound(
        recalled_lower=int(lower_count), recalled_upper=int(p), recalled_any=int(any_count), p=p, d=d,
        problem=instance.problem, seconds=time.perf_counter() - start, box=B, box_binding=binding,
        check_lower=None, check_upper=None, search_recalled=search_count, search_box=search_need, mip_gap=gap,
        time_limit=time_limit, weighted=True, top=top, mass_lower=float(lower), mass_upper=float(upper),
        mass_any=float(best_any), search_mass=search_mass,
        mass_check_lower=None if check is None else float(check[0]),
        mass_check_upper=None if check is None else float(check[1]),
        status=status, converged=status in ("exact", "bracket"), message=message)


def _weighted_status(res, lower, upper, has_dual, time_limit, notes):
    """``(status, upper)`` of one weighted MILP solve; ``notes`` gets what the message must say."""
    closed = upper - lower <= _MASS_CLOSED
    if res.status == 0:
        status = "exact" if closed else "bracket"
    elif res.status == 1:
        status = "exact" if closed and has_dual else "time_limit"
        if not has_dual:
            notes.append(f"no dual bound within {time_limit:g} s: the upper bound is the trivial 1")
    else:
        status = "failed"
        upper = 1.0
        notes.append(f"HiGHS: {res.message} (upper bound is the trivial 1)")
    if lower > upper:  # cannot happen in exact arithmetic: a tolerance problem of the solve
        notes.append(f"the float64 check found weight {lower:.6f} recalled above the dual bound {upper:.6f}: "
                     "the bound is not trusted")
        status, upper = "failed", 1.0
    return status, upper


def _weighted_message(status, masses, B, box_check, notes):
    """The one-line message of a weighted :class:`AccuracyBound` (``masses = (lower, upper)``,
    ``box_check = (binding, check_box, [check lower, check upper] or None)``)."""
    lower, upper = masses
    binding, check_box, check = box_check
    if status in ("exact", "bracket", "time_limit"):
        head = {"exact": f"best recalled weight in the box: {lower:.6f} of 1 (to {_MASS_CLOSED:g})",
                "bracket": f"{lower:.6f} <= best recalled weight <= {upper:.6f} of 1 (certified for the box)",
                "time_limit": f"budget ran out: {lower:.6f} <= best recalled weight <= {upper:.6f} of 1"}[status]
    else:
        head = f"no certified bound: {lower:.6f} <= best recalled weight <= 1 (trivial)"
    box_word = {True: "box binds", False: f"same weight at {10 * B:g} (evidence, not a proof, "
                "for unbounded W)", None: "box not checked" if not check_box else
                f"box check inconclusive ({check[0]:.6f}..{check[1]:.6f} at {10 * B:g})"}[binding]
    return "; ".join([f"{head}, for W in [-{B:g}, {B:g}]^(d x d) at margin 1", box_word] + notes)
