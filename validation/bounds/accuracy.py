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
that recalls its inputs with normalised margin (``validation.measurements.recall.normalised_margin``)
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

from replica.common.checks import check_real
from replica.common.results import Result

from ..instances.ensembles import check_square_instance
from ..measurements.recall import recall_check
from .milp import (BOUND_SLACK, BOX_TOLERANCE, INTEGRALITY, bound_message, constraint_rows, count_units,
                         search_matrix, smallest_box, solve_milp)
from .weighted import checked_top, checked_weights, weighted_bound_fields

__all__ = ["accuracy_bound", "AccuracyBound", "constraint_rows", "check_bound_arguments"]


@dataclass(frozen=True)
class AccuracyBound(Result):
    """Certified bracket ``recalled_lower <= max_W #{recalled} <= recalled_upper`` for W in a box.

    Attributes
    ----------
    recalled_lower : int
        Largest count of inputs a W of the box recalls (the MILP incumbents, the search
        W or the smallest-box W of the search's recalled set), checked in float64 by
        :func:`validation.measurements.recall.recall_check` (strict, ties fail): the W scaled to margin 1
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
    in_box = int(np.sum(np.abs(W).max() <= B * top * (1.0 + BOX_TOLERANCE)))
    return strict, in_box


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
    upper = min(p, math.floor(-float(dual) + BOUND_SLACK)) if has_dual else p
    gap = getattr(res, "mip_gap", None)
    return lower, upper, has_dual, (float(gap) if gap is not None else math.nan), strict


def _search(instance, W_search, A, owner, B):
    """``(count, box needed, count of a W in the box)`` of the search memory; ``(None, None, 0)`` without one."""
    if W_search is None:
        return None, None, 0
    W = search_matrix(instance, W_search)
    recalled, _ = recall_check(instance.scores(W), instance.target_index)
    count, in_box = _counts(instance, W, B)
    need, W_box = smallest_box(A, owner, np.flatnonzero(recalled), instance.d)
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
    w = checked_weights(instance, weights)
    top = checked_top(top, instance.p, w)
    if w is not None:
        settings = (B, time_limit, mip_rel_gap, check_box)
        return AccuracyBound(**weighted_bound_fields(instance, w, top, W_search, settings, start))
    d, p = instance.d, instance.p
    A, owner = constraint_rows(instance)
    search_count, search_need, in_box = _search(instance, W_search, A, owner, B)

    res = solve_milp(A, owner, p, B, time_limit, mip_rel_gap, in_box)
    lower, upper, has_dual, gap, strict = _bracket(instance, res, p, d, B, in_box)
    best_any = max(strict, search_count or 0)
    notes = []
    slack = INTEGRALITY * (1.0 + B * float(np.abs(A).sum(axis=1).max()))
    if slack > 0.5:
        notes.append(f"box large for HiGHS's integrality tolerance (M * 1e-6 = {slack:.2g} of the margin 1): "
                     "incumbents may lose inputs in the float64 check, the dual bound stays an upper "
                     "bound but a looser one")
    status, upper = _status(res, lower, upper, has_dual, time_limit, p, notes)

    check_lower = check_upper = None
    if check_box:
        big = solve_milp(A, owner, p, 10.0 * B, time_limit, mip_rel_gap, lower)
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
    message = bound_message(status, (lower, upper), B, (binding, check_box, check_lower, check_upper), notes,
                            count_units(p))
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
