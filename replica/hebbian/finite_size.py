"""Finite-size theory of the Hebbian (correlation-matrix) memory ``W_H = sum_mu u_mu e_mu^T``.

The score of candidate ``rho`` for input ``mu`` is ``s[rho, mu] = u_rho^T W_H e_mu``.
Input ``mu`` is recalled when its target score ``t = s[mu, mu]`` beats all ``p - 1``
competitor scores; an instance is stored when every input is recalled.

The model (derived in ``notes/hebbian_finite_size.md``) conditions on the
*environment* of one input: ``a = |e_mu|^2``, ``b = |u_mu|^2``, the crosstalk
vector ``r = sum_{nu != mu} (e_nu . e_mu) u_nu`` through its component along
``u_mu`` and its squared perpendicular norm.  Given the environment the target is
known, ``t = a b + u_mu . r``, and so is ``y = W_H e_mu``.  Each competitor ``nu``
is then written exactly as

    s_nu - x_nu c_nu = u_nu . (y_{-nu} - c_nu u_mu) + c_nu |u_nu|^2,

with ``c_nu = e_nu . e_mu`` and ``x_nu = u_nu . u_mu``; the pair term
``x_nu c_nu``, which sits in the target as well, is moved to the target side.  Its
law given the environment is Gaussian-with-quadratic-term (``gaussian``
ensemble) or the projection of a uniform unit vector (``sphere``), and the
largest of the ``p - 1`` competitors has the exact law ``F^(p-1)``.  The
environment is taken leave-one-out (``p - 2`` crosstalk terms), which makes the
competitor's condition exact given it.  What is neglected (named and measured in
the note): dependence between different inputs (product over inputs), the
dependence between competitors of one input beyond one shared leave-one-out
environment, and, for ``sphere``, the non-Gaussianity of the crosstalk vector ``r``.

Public functions
----------------
hebbian_input_failure_probability
    P(one input is not recalled).
hebbian_success_probability
    P(all p inputs recalled), ``(1 - failure)^p``.
hebbian_capacity
    The real ``p`` at which that probability is 1/2.
hebbian_score_moments, hebbian_score_laws
    Exact score moments and model samplers of the target and competitor laws,
    in units of the competitor standard deviation (from :mod:`replica.hebbian.scores`).

The model's quadrature is in :mod:`replica.hebbian.model`.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from ..common.checks import check_int, check_kappa, check_real
from ..common.ensembles import ENSEMBLES, check_ensemble
from ..common.loads import BitsPerParameter, p_from_load
from ..common.validity import Validity, reports_validity
from ..common.results import Result
from ..common.roots import brent, walk_bracket
from .model import check_d_p, failure_probability, memory_failure_probability
from .scores import HebbianScoreLaws, HebbianScoreMoments, hebbian_score_laws, hebbian_score_moments

__all__ = [
    "ENSEMBLES",
    "hebbian_input_failure_probability",
    "hebbian_success_probability",
    "hebbian_capacity",
    "HebbianCapacityResult",
    "hebbian_capacity_search",
    "HebbianCapacitySearch",
    "hebbian_score_moments",
    "HebbianScoreMoments",
    "hebbian_score_laws",
    "HebbianScoreLaws",
]


# --------------------------------------------------------------------------------------
# public: probabilities
# --------------------------------------------------------------------------------------
def hebbian_input_failure_probability(d, p, ensemble="gaussian"):
    """Probability that one given input is not recalled by the Hebbian memory.

    ``E_env[1 - F(t)^(p-1)]`` over the environment of the input (norms and crosstalk),
    with ``F`` the exact conditional law of one competitor score (with its pair term
    moved to the target side); see ``notes/hebbian_finite_size.md``.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : float
        Number of stored associations, ``p >= 2`` (real values interpolate smoothly).
    ensemble : {"gaussian", "sphere"}
        Embedding ensemble: i.i.d. N(0, I/d) or uniform unit vectors.

    Returns
    -------
    float
        The probability, in ``[0, 1]``.

    Raises
    ------
    ValueError
        If ``d < 2``, ``p < 2`` or the ensemble is unknown.
    """
    d, p = check_d_p(d, p, ensemble)
    return failure_probability(d, p, ensemble)


def hebbian_success_probability(d, p, ensemble="gaussian"):
    """Probability that ``W_H = sum_mu u_mu e_mu^T`` stores all ``p`` associations.

    ``(1 - f)^p`` with ``f = hebbian_input_failure_probability(d, p, ensemble)``:
    the inputs are treated as independent (measured: the product of the per-input
    rates agrees with the sampled probability within about 0.01 at d = 64;
    ``notes/hebbian_finite_size.md``).  Parameters and errors as
    :func:`hebbian_input_failure_probability`.
    """
    d, p = check_d_p(d, p, ensemble)
    return float(math.exp(p * math.log1p(-min(failure_probability(d, p, ensemble), 1.0))))


# --------------------------------------------------------------------------------------
# public: capacity
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HebbianCapacityResult(BitsPerParameter, Result):
    """Finite-size Hebbian capacity: ``P(all stored) = 1/2`` at ``p = p_c`` (see :func:`hebbian_capacity`).

    ``status``: ``"converged"`` (``|P - 1/2| <= tol`` at ``p_c``), ``"not_converged"``
    (the root was not accepted), ``"max_iter"`` (Brent's method ran out of iterations)
    or ``"unbracketed"`` (``P(all stored) <= 1/2`` already at ``p = 2``, or still above
    1/2 at ``p = 1e15``; ``p_c`` is then NaN).  ``message`` gives the residual.
    ``bits_per_parameter`` (a property, also in ``to_dict()``): ``p_c log2 p_c`` over the
    free parameters of the rank-``kappa d`` memory (``replica.common.loads.bits_per_parameter``).
    """

    STATUSES = ("converged", "not_converged", "max_iter", "unbracketed")

    d: int
    ensemble: str
    kappa: float
    p_c: float
    alpha: float
    alpha_c: float
    success_probability: float
    input_failure_probability: float
    converged: bool
    iterations: int
    residual: float  # |P(all stored) - 1/2| at p_c
    status: str
    message: str
    validity: Validity | None = None  # how far the prediction was checked (replica.common.validity)
    model: str = ""  # the registry model that computed it (replica.common.registry)


_SECANT_STEPS = 12  # secant steps on ln(-ln P) before the bracketed Brent search


class _SuccessGap:
    """``g(x) = ln P(all stored at p = e^x) + ln 2`` and its nearly linear form, counting calls.

    For a ``d_out x d_in`` memory (``d_out = d_in = d`` for the square one).
    """

    def __init__(self, d_in, ensemble, d_out=None, competitors="stored"):
        self.d, self.ensemble = d_in, ensemble
        self.d_out = d_in if d_out is None else d_out
        self.competitors = competitors
        self.calls = 0

    def failure(self, p):
        return memory_failure_probability(self.d, self.d_out, p, self.ensemble, self.competitors)

    def __call__(self, log_p):
        self.calls += 1
        fail = self.failure(math.exp(log_p))
        return math.exp(log_p) * math.log1p(-min(fail, 1.0 - 1e-300)) + math.log(2.0)

    def linear(self, log_p):
        """``ln(-ln P) - ln ln 2``: nearly linear in ``ln p``."""
        minus_ln_p = math.log(2.0) - self(log_p)
        return math.log(minus_ln_p) - math.log(math.log(2.0)) if minus_ln_p > 0 else -math.inf

    def secant(self, lo, rel_tol):
        """Secant steps from below the asymptotic guess; ``(root or None, last iterate)``."""
        # Asymptotic guess p ln p = d^2/8 lies above the finite-size root at small d; start below it.
        guess = p_from_load(self.d, 0.125) if self.d == self.d_out else p_from_load(1, 0.125 * self.d * self.d_out)
        x0 = max(math.log(0.6 * guess), lo + 0.05)
        h0 = self.linear(x0)
        x1 = max(x0 - h0 / 8.0, lo + 0.01) if math.isfinite(h0) else x0 + 1.0
        for _ in range(_SECANT_STEPS):
            h1 = self.linear(x1)
            if not (math.isfinite(h0) and math.isfinite(h1)) or h1 == h0:
                break
            x2 = x1 - h1 * (x1 - x0) / (h1 - h0)
            if not math.isfinite(x2) or x2 < lo:
                break
            x0, h0, x1 = x1, h1, x2
            if abs(x1 - x0) <= rel_tol:
                return x1, x1
        return None, x1

    def brent(self, lo, start, rel_tol, max_iter):
        """Bracket by factors of 2 above ``start``, then Brent; ``(root, status, message)``."""
        hi = max(start if math.isfinite(start) else lo, lo) + math.log(2.0)
        walk = walk_bracket(self, hi, lambda x: x + math.log(2.0), inside=lambda value: value > 0.0, previous=lo,
                            give_up=lambda x: x + math.log(2.0) > math.log(1e15))
        if not walk.found:
            return math.nan, "unbracketed", "no p with P(all stored) < 1/2 found below 1e15"
        found = brent(self, walk.lo, walk.hi, xtol=rel_tol * 1e-2, rtol=4 * np.finfo(float).eps, max_iter=max_iter)
        if not found.converged:
            return found.root, "max_iter", f"Brent root search did not converge in {max_iter} iterations ({found.flag})"
        return found.root, None, None


@reports_validity("hebbian_capacity")
def hebbian_capacity(d, ensemble="gaussian", kappa=1.0, *, rel_tol=1e-9, tol=1e-6, max_iter=100):
    """Real ``p_c`` at which the Hebbian memory stores everything with probability 1/2.

    Solves ``hebbian_success_probability(d, p_c, ensemble) = 1/2`` by secant steps on
    ``ln(-ln P)`` against ``ln p`` (nearly linear), with a bracketed Brent search as
    fallback; the root is accepted only if ``|P - 1/2| <= tol``.
    ``alpha = p_c ln p_c / d^2``; ``alpha_c = 1/8`` is the ``d -> infinity`` value
    (``notes/hebbian_finite_size.md``).

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    ensemble : {"gaussian", "sphere"}
        Embedding ensemble.
    kappa : float
        Rank fraction.  Only ``kappa = 1`` (the Hebbian matrix itself) is
        supported: the finite-size law of the rank-``kappa d`` truncation of
        ``W_H`` is not derived here.  Its asymptote ``F(kappa)/8`` is
        :func:`replica.alpha_c_hebbian`.
    rel_tol : float
        Relative accuracy of ``p_c`` (on ``ln p``), in ``[1e-14, 1e-2]``.
    tol : float
        Accepted ``|P(all stored) - 1/2|`` at ``p_c``, in ``(0, 0.1]``.
    max_iter : int
        Iterations of the Brent fallback.

    Returns
    -------
    HebbianCapacityResult
        ``status`` and ``message`` say whether and how the root was found; ``p_c`` is
        NaN when ``status == "unbracketed"``.

    Raises
    ------
    ValueError
        If ``d < 2``, the ensemble is unknown, ``kappa`` is outside (0, 1] or
        ``kappa != 1``, or ``rel_tol``, ``tol`` or ``max_iter`` is out of range.
    """
    d = check_int(d, "d", low=2)
    check_ensemble(ensemble)
    kappa = float(check_kappa(kappa))
    if kappa != 1.0:
        raise ValueError(
            f"kappa must be 1 for hebbian_capacity (finite-size theory of the rank-truncated "
            f"Hebbian memory not implemented; its d -> infinity capacity is alpha_c_hebbian(kappa)), "
            f"got {kappa!r}")
    rel_tol = check_real(rel_tol, "rel_tol", low=1e-14, high=1e-2)
    tol = check_real(tol, "tol", low=0.0, high=0.1, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    search = hebbian_capacity_search(d, d, ensemble, rel_tol=rel_tol, tol=tol, max_iter=max_iter)
    return _hebbian_capacity_result(search, d, ensemble, kappa)


class HebbianCapacitySearch(NamedTuple):
    """The root of ``P(all stored) = 1/2`` for a ``d_out x d_in`` Hebbian memory (:func:`hebbian_capacity_search`)."""

    p_c: float  # NaN when status == "unbracketed"
    success_probability: float
    input_failure_probability: float
    iterations: int
    residual: float
    status: str  # "converged", "not_converged", "max_iter" or "unbracketed"
    message: str


def hebbian_capacity_search(d_in, d_out, ensemble, *, rel_tol, tol, max_iter,
                            competitors="stored") -> HebbianCapacitySearch:
    """Solve ``(1 - f(p))^p = 1/2`` for a ``d_out x d_in`` Hebbian memory (checked arguments).

    ``f`` is :func:`replica.hebbian.model.memory_failure_probability` (``competitors``:
    the other stored outputs, or fresh candidates); the search of :func:`hebbian_capacity`
    (secant steps on ``ln(-ln P)``, bracketed Brent fallback, ``|P - 1/2| <= tol`` checked).
    """
    if (rel_tol, tol, max_iter) == _DEFAULT_SEARCH and competitors == "stored" and d_in == d_out and _tables_on():
        entry = _hebbian_table().get((ensemble, int(d_in)))
        if entry is not None:
            return entry
    gap = _SuccessGap(d_in, ensemble, d_out, competitors)
    lo = math.log(2.0)
    status = message = None
    if gap(lo) <= 0.0:
        log_p, status, message = math.nan, "unbracketed", "P(all stored) <= 1/2 already at p = 2"
    else:
        log_p, last = gap.secant(lo, rel_tol)
        if log_p is None:
            log_p, status, message = gap.brent(lo, last, rel_tol, max_iter)
    p_c = math.exp(log_p)
    if status == "unbracketed":
        return HebbianCapacitySearch(math.nan, math.nan, math.nan, gap.calls, math.nan, status, message)
    fail = gap.failure(p_c)
    prob = math.exp(p_c * math.log1p(-fail))
    residual = abs(prob - 0.5)
    detail = f"|P - 1/2| = {residual:.3g} (tol {tol:.3g}), {gap.calls} evaluations"
    if status is None:
        status = "converged" if residual <= tol else "not_converged"
        message = f"{'converged' if residual <= tol else 'root not accepted'}: {detail}"
    else:
        message = f"{message}; {detail}"
    return HebbianCapacitySearch(p_c, prob, fail, gap.calls, residual, status, message)


def _hebbian_capacity_result(search: HebbianCapacitySearch, d, ensemble, kappa) -> HebbianCapacityResult:
    p_c = search.p_c
    alpha = p_c * math.log(p_c) / (d * d) if math.isfinite(p_c) else math.nan
    return HebbianCapacityResult(
        d=d, ensemble=ensemble, kappa=kappa, p_c=p_c, alpha=alpha, alpha_c=0.125,
        success_probability=search.success_probability, input_failure_probability=search.input_failure_probability,
        converged=search.status == "converged", iterations=search.iterations, residual=search.residual,
        status=search.status, message=search.message)


# --------------------------------------------------------------------------------------
# the shipped table of the square memory's capacity
# --------------------------------------------------------------------------------------
HEBBIAN_TABLE = Path(__file__).resolve().parent / "hebbian_capacity_table.json"
"""The roots of :func:`hebbian_capacity_search` for ``d_in = d_out = d = 2 .. 512``, both ensembles, at the
default ``rel_tol``, ``tol`` and ``max_iter`` (every field, exact; :func:`write_hebbian_capacity_table`)."""
HEBBIAN_TABLE_DIMS = range(2, 513)
_DEFAULT_SEARCH = (1e-9, 1e-6, 100)


def _tables_on() -> bool:
    from ..optimal.cost_table import tables_enabled

    return tables_enabled()


@functools.lru_cache(maxsize=1)
def _hebbian_table() -> dict:
    if not HEBBIAN_TABLE.exists():
        return {}
    data = json.loads(HEBBIAN_TABLE.read_text())
    return {(ensemble, int(d)): HebbianCapacitySearch(**entry)
            for ensemble, entries in data["entries"].items() for d, entry in entries.items()}


def write_hebbian_capacity_table(path=None, dims=HEBBIAN_TABLE_DIMS, ensembles=ENSEMBLES, progress=False) -> Path:
    """Compute the roots of the square Hebbian memory afresh (quadrature, no table) and write them (JSON).

    The search is deterministic (quadrature), so the table is the function's own output,
    bit for bit; about 0.3 s per ``d`` and ensemble on one core.
    ``python -c "from replica.hebbian.finite_size import write_hebbian_capacity_table as w; w(progress=True)"``
    """
    from ..optimal.cost_table import reference_monte_carlo

    path = HEBBIAN_TABLE if path is None else Path(path)
    rel_tol, tol, max_iter = _DEFAULT_SEARCH
    entries: dict = {}
    with reference_monte_carlo():
        for ensemble in ensembles:
            entries[ensemble] = {}
            for d in dims:
                search = hebbian_capacity_search(d, d, ensemble, rel_tol=rel_tol, tol=tol, max_iter=max_iter)
                entries[ensemble][str(d)] = search._asdict()
                if progress and d % 32 == 0:
                    print(f"{ensemble} d={d}: p_c={search.p_c!r}", flush=True)
    about = ("replica.hebbian.finite_size.hebbian_capacity_search(d, d, ensemble) at the default rel_tol, tol and "
             "max_iter: every field of the root per ensemble and d; written by write_hebbian_capacity_table")
    path.write_text(json.dumps({"about": about, "entries": entries}, indent=0) + "\n")
    _hebbian_table.cache_clear()
    return path
