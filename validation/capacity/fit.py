"""Logistic fit of P(stored) in ln p and the profile-likelihood interval of p_c.

See ``notes/capacity_estimation.md`` ("Model, estimate and interval").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import optimize, special, stats

from replica.common.results import Result

__all__ = ["LogisticFit", "fit_logistic", "FIT_STATUS_MEANINGS", "interval_text", "separation_bracket"]

_CHI2_95 = float(stats.chi2.ppf(0.95, 1))  # 3.841...
_MAX_SLOPE = 400.0


_FIT_MESSAGES = {
    "ok": "ok",
    "separated": "no grid point inside the transition: interval from the gap between all-stored and "
                 "none-stored points",
    "unbracketed": "P(stored) = 1/2 is not bracketed by the grid; p_c is an extrapolation",
    "failed": "no decided trials: nothing to fit",
}


FIT_STATUS_MEANINGS = {
    "ok": "a 95 % profile-likelihood interval of the logistic fit (PL)",
    "separated": "every trial stored at one load and none at the next: the two loads bracket p_c; "
                 "no interval is fitted and the midpoint is not a measurement",
    "unbracketed": "the grid does not bracket P(stored) = 1/2: p_c is an extrapolation, no interval",
    "failed": "no decided trial: nothing to fit",
}
"""What each fit status says about the interval shown with p_c: the one definition used by
the report, the generated tables and the glossary."""


def interval_text(value, low, high, status, fmt=lambda x: f"{x:.1f}") -> str:
    """``value`` with its interval, labelled by the kind of interval the fit ``status`` gives.

    ``ok``: ``"v [lo, hi] (95 % PL)"``; ``separated``: ``"between lo and hi (bracket)"``;
    ``unbracketed``: ``"v (extrapolated, no interval)"``; the estimate status
    ``all_facts_stored`` (not a fit: ``low`` is the number N of given facts, all stored):
    ``"above lo (all given facts stored)"``; otherwise ``"no estimate (status)"``.
    """
    if status == "all_facts_stored":
        return f"above {fmt(low)} (all given facts stored)"
    if status == "ok":
        return f"{fmt(value)} [{fmt(low)}, {fmt(high)}] (95 % PL)"
    if status == "separated":
        return f"between {fmt(low)} and {fmt(high)} (bracket)"
    if status == "unbracketed":
        return f"{fmt(value)} (extrapolated, no interval)"
    return f"no estimate ({status})"



def separation_bracket(points):
    """The two loads that bracket p_c when a fit is ``separated``.

    Parameters
    ----------
    points : iterable of mappings
        Curve points with ``p``, ``stored`` and ``not_stored`` (decided trials are
        ``stored + not_stored``).

    Returns
    -------
    (float, float) or None
        The largest ``p`` at which every decided trial was stored and the smallest larger
        ``p`` at which none was; None when the curve has no such pair.
    """
    pts = sorted((float(q["p"]), int(q["stored"]), int(q["stored"]) + int(q["not_stored"])) for q in points)
    full = [p for p, k, n in pts if n > 0 and k == n]
    if not full:
        return None
    low = max(full)
    empty = [p for p, k, n in pts if n > 0 and k == 0 and p > low]
    return (low, min(empty)) if empty else None

@dataclass(frozen=True)
class LogisticFit(Result):
    """Maximum-likelihood logistic fit of P(stored) in ln p.

    Attributes
    ----------
    log_p_c, slope : float
        ``P = 1 / (1 + exp(slope (ln p - log_p_c)))``.
    log_p_c_low, log_p_c_high : float
        95 % profile-likelihood interval of ``log_p_c`` (clipped to the search range
        when unbracketed).
    loglik : float
    status : str
        ``"ok"``; ``"separated"`` (the counts jump from all-stored to none-stored:
        slope at its cap, p_c known to lie in the gap); ``"unbracketed"`` (an end of
        the interval was not found inside the search range: P = 1/2 is not bracketed
        by the data); ``"failed"`` (no decided trials; every number is NaN).
    converged : bool
        ``status`` is ``"ok"`` or ``"separated"``.
    message : str
        What the status means, in words.
    """

    STATUSES: ClassVar[tuple] = ("ok", "separated", "unbracketed", "failed")

    log_p_c: float
    slope: float
    log_p_c_low: float
    log_p_c_high: float
    loglik: float
    status: str
    converged: bool
    message: str

    @classmethod
    def with_status(cls, status, log_p_c=math.nan, slope=math.nan, low=math.nan, high=math.nan,
                    loglik=math.nan) -> LogisticFit:
        """A fit with ``status`` and the matching ``converged`` flag and message."""
        return cls(log_p_c, slope, low, high, loglik, status, status in ("ok", "separated"),
                   _FIT_MESSAGES[status])

    @property
    def bracketed(self) -> bool:
        """Deprecated: ``status in ("ok", "separated")``."""
        return self.converged

    def probability(self, p):
        """Fitted P(stored) at ``p``."""
        return special.expit(-self.slope * (np.log(p) - self.log_p_c))

    def quantile(self, prob):
        """p where the fitted P(stored) equals ``prob``."""
        return float(math.exp(self.log_p_c - special.logit(prob) / self.slope))


def _loglik(log_p_c, slope, x, k, n):
    z = slope * (log_p_c - x)
    return float(np.sum(k * special.log_expit(z) + (n - k) * special.log_expit(-z)))


def _profile(log_p_c, x, k, n):
    """max over the slope (log-spaced search in [1e-2, _MAX_SLOPE]) of the log-likelihood."""
    res = optimize.minimize_scalar(lambda ls: -_loglik(log_p_c, math.exp(ls), x, k, n),
                                   bounds=(math.log(1e-2), math.log(_MAX_SLOPE)), method="bounded",
                                   options={"xatol": 1e-6})
    # the bounded search can stop short of the cap under separation: check the cap itself
    at_cap = _loglik(log_p_c, _MAX_SLOPE, x, k, n)
    if at_cap > -res.fun:
        return at_cap, _MAX_SLOPE
    return -res.fun, math.exp(res.x)


_SLOPE_GRID = np.exp(np.linspace(math.log(1e-2), math.log(_MAX_SLOPE), 90))


def _profile_on_grid(log_p_cs, x, k, n):
    """Profile log-likelihood on a grid of ln p_c, maximised over a log grid of slopes (coarse)."""
    z = _SLOPE_GRID[None, :, None] * (log_p_cs[:, None, None] - x[None, None, :])
    ll = (k * special.log_expit(z) + (n - k) * special.log_expit(-z)).sum(axis=2)
    return ll.max(axis=1)


def _endpoint(excess, grid, c_hat, j, step):
    """Root of ``excess`` between ``c_hat`` and the grid end in direction ``step``.

    ``j`` is the first grid index (from the coarse profile) where the excess is
    believed negative; it is checked with the precise profile and moved outwards until
    the excess is negative, then the bracket is closed inwards.  ``None`` if the excess
    stays positive up to the end of the grid.
    """
    if j is None:
        return None
    while excess(grid[j]) >= 0:
        j += step
        if j < 0 or j >= len(grid):
            return None
    inner = j - step
    a = grid[inner] if (0 <= inner < len(grid)) and ((grid[inner] - c_hat) * step > 0) else c_hat
    while excess(a) < 0:  # coarse grid was optimistic: move inwards
        inner -= step
        a = grid[inner] if (grid[inner] - c_hat) * step > 0 else c_hat
    return float(optimize.brentq(excess, min(a, grid[j]), max(a, grid[j]), xtol=1e-7))


def _maximum(grid, prof, x, k, n):
    """Maximum-likelihood ln p_c (refined from the coarse profile), its log-likelihood and slope."""
    i = int(np.argmax(prof))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = optimize.minimize_scalar(lambda c: -_profile(c, x, k, n)[0], bounds=(a, b), method="bounded",
                                   options={"xatol": 1e-7})
    c_hat = float(res.x) if -res.fun >= prof[i] else float(grid[i])
    l_max, slope = _profile(c_hat, x, k, n)
    # under complete separation the profile is flat (l = 0) on the whole gap: take its middle
    flat = np.flatnonzero(prof >= l_max - 1e-9)
    if len(flat) > 1 and slope >= _MAX_SLOPE * 0.999:
        c_hat = float(0.5 * (grid[flat[0]] + grid[flat[-1]]))
        l_max, slope = _profile(c_hat, x, k, n)
    return c_hat, l_max, slope


def fit_logistic(p, stored, decided) -> LogisticFit:
    """Fit the logistic model to counts and return the profile-likelihood interval.

    See ``notes/capacity_estimation.md`` ("Model, estimate and interval").

    Parameters
    ----------
    p : array of int
        Grid points.
    stored, decided : array of int
        Stored count and decided trials (stored + not stored) at each point.

    Returns
    -------
    LogisticFit
        Status ``"ok"``, ``"separated"`` or ``"unbracketed"``.

    Raises
    ------
    ValueError
        If there are no decided trials.
    """
    x = np.log(np.asarray(p, dtype=float))
    k = np.asarray(stored, dtype=float)
    n = np.asarray(decided, dtype=float)
    keep = n > 0
    x, k, n = x[keep], k[keep], n[keep]
    if n.sum() == 0:
        raise ValueError("decided must have at least one trial to fit P(stored)")
    span = max(x.max() - x.min(), 0.2)
    lo, hi = x.min() - span, x.max() + span
    grid = np.linspace(lo, hi, 161)
    prof = _profile_on_grid(grid, x, k, n)
    c_hat, l_max, slope = _maximum(grid, prof, x, k, n)
    target = l_max - _CHI2_95 / 2.0

    def excess(c):
        return _profile(c, x, k, n)[0] - target

    below = np.flatnonzero((grid < c_hat) & (prof < target))
    above = np.flatnonzero((grid > c_hat) & (prof < target))
    c_low = _endpoint(excess, grid, c_hat, below[-1] if len(below) else None, -1)
    c_high = _endpoint(excess, grid, c_hat, above[0] if len(above) else None, +1)
    bracketed = c_low is not None and c_high is not None
    c_low = lo if c_low is None else c_low
    c_high = hi if c_high is None else c_high
    # complete separation: every point all-stored or none-stored (slope then at its cap)
    separated = slope >= _MAX_SLOPE * 0.999 and bool(np.all((k == 0) | (k == n)))
    status = "unbracketed" if not bracketed else ("separated" if separated else "ok")
    return LogisticFit.with_status(status, c_hat, slope, float(c_low), float(c_high), l_max)

