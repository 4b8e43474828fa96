"""The weighted mode of :func:`validation.bounds.accuracy.accuracy_bound`: a certified bracket on the recalled weight.

With unequal query frequencies ``w`` (summing to one) the MILP of ``notes/accuracy_bound.md``
maximises ``sum_mu w_mu z_mu`` instead of the count, optionally over the ``top`` heaviest
inputs only (the others counted as recalled), section 7 of that note.  The public entry is
``accuracy_bound(instance, weights=...)``; this module holds its weighted solve.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .milp import (BOUND_SLACK, BOX_TOLERANCE, INTEGRALITY, BoundUnits, bound_message, constraint_rows,
                         search_matrix, smallest_box, solve_milp)
from ..measurements.recall import recall_check

__all__ = ["checked_weights", "checked_top", "weighted_bound_fields"]

_MASS_CLOSED = 1e-5  # a weighted bracket this narrow is "exact": HiGHS's absolute gap 1e-6 plus the slack
_WEIGHT_UNITS = BoundUnits("recalled weight", "weight", "1", ".6f", f" (to {_MASS_CLOSED:g})")


def checked_weights(instance, weights):
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


def checked_top(top, p, w):
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
        fits = recalled & (np.abs(W).max() <= B * margins * (1.0 + BOX_TOLERANCE))
    return (math.fsum(w[recalled].tolist()), math.fsum(w[fits].tolist()), math.fsum(w[fits & chosen].tolist()),
            int(recalled.sum()), int(fits.sum()))


def _weighted_solve(instance, res, B, w, chosen, tail):
    """``(evaluation of the incumbent or None, upper, has_dual, gap)`` of one weighted MILP result at box B."""
    d = instance.d
    found = _masses(instance, res.x[:d * d].reshape(d, d), B, w, chosen) if res.x is not None else None
    dual = getattr(res, "mip_dual_bound", None)
    has_dual = dual is not None and math.isfinite(float(dual)) and res.status in (0, 1)
    upper = min(1.0, max(0.0, -float(dual)) + BOUND_SLACK + tail) if has_dual else 1.0
    gap = getattr(res, "mip_gap", None)
    return found, upper, has_dual, (float(gap) if gap is not None else math.nan)


def weighted_bound_fields(instance, w, top, W_search, settings, start) -> dict:
    """The fields of the :class:`~validation.bounds.accuracy.AccuracyBound` of :func:`accuracy_bound` with unequal
    weights ``w`` (summing to one) on the ``top`` heaviest inputs."""
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
        W = search_matrix(instance, W_search)
        evaluations.append(_masses(instance, W, B, w, chosen))
        search_mass, search_count = evaluations[0][0], evaluations[0][3]
        recalled, _ = recall_check(instance.scores(W), instance.target_index)
        search_need, W_box = smallest_box(A, owner, np.flatnonzero(recalled), d)
        if W_box is not None:  # the smallest-box W of the recalled set, checked again
            evaluations.append(_masses(instance, W_box, B, w, chosen))
    cut = max((e[2] for e in evaluations), default=0.0)
    res = solve_milp(A_top, owner_top, top, B, time_limit, mip_rel_gap, cut * (1.0 - 1e-9), weights=w_top)
    found, upper, has_dual, gap = _weighted_solve(instance, res, B, w, chosen, tail)
    if found is not None:
        evaluations.append(found)
    best = max(evaluations, key=lambda e: (e[1], e[4]), default=(0.0, 0.0, 0.0, 0, 0))
    lower, lower_count = best[1], best[4]
    notes = []
    slack = INTEGRALITY * (1.0 + B * float(np.abs(A_top).sum(axis=1).max()))
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
        big = solve_milp(A_top, owner_top, top, 10.0 * B, time_limit, mip_rel_gap, cut * (1.0 - 1e-9), weights=w_top)
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
    check_lower, check_upper = (None, None) if check is None else check
    message = bound_message(status, (lower, upper), B, (binding, check_box, check_lower, check_upper), notes,
                            _WEIGHT_UNITS)
    return dict(
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
