"""Recall error for facts with Zipf frequencies: ``E = sum_mu f_mu 1{mu not recalled}``.

``N`` facts ``e_mu -> u_mu`` with ``N`` distinct outputs (every output competes for
every input, ``p = N``) are queried with frequencies ``f_mu = mu^(-a) / H_{N,a}``.  The
error is the frequency mass of the facts the memory does not recall.  Derivations,
approximations and the scaling laws in ``d``: ``notes/zipf.md``.  The facts in bins
and the facts seen in ``T`` samples are in :mod:`replica.variants.zipf_facts`; the
knapsack and the weighted Gaussian model in :mod:`replica.variants.zipf_memories`.

Public functions
----------------
zipf_error
    Expected error of the optimal rank ``kappa d`` memory (a knapsack over the blocks'
    water-filling costs, solved by its Lagrangian: keep fact ``mu`` iff
    ``f_mu / C_mu >= lambda``) or of the Hebbian memory ``W = sum_mu w_mu u_mu e_mu^T``
    (unweighted: the finite-size Hebbian model; weighted: a Gaussian model of the scores);
    with ``ZipfFacts(..., samples=T)``, the memory built from ``T`` i.i.d. samples, which
    stores only the facts it has seen (``notes/zipf.md``, section 6).
ZipfFacts
    The facts of :func:`zipf_error`: their number, Zipf exponent, weights and samples.
knapsack_kept
    The greedy (Lagrangian) kept set of one instance with given costs, and its level.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ..asymptotic.quarter_circle import tail_second_moment
from ..common.checks import check_choice, check_int, check_real, check_scalar_kappa
from ..common.deprecation import accepts_old_calls
from ..common.ensembles import check_ensemble
from ..common.validity import Validity, reports_validity
from ..common.results import Result
from ..common.seeds import resolve_seed
from ..hebbian.finite_size import hebbian_input_failure_probability
from ..hebbian.model import failure_probability
from ..optimal.capacity_equation import old_tolerance_keywords, settings_dict
from ..optimal.scores import sample_optimal_scores
from .zipf_facts import FactBins, ZipfFacts, unseen_sums, zipf_fact_bins, zipf_frequencies
from .zipf_memories import (
    CostLaw,
    CONDITIONAL_SAMPLES,
    HEAVY_FACTS,
    competitor_bins,
    conditional_error,
    count_weighted_recall,
    gaussian_recall,
    knapsack_expectation,
    knapsack_kept,
    weight_bins,
)

__all__ = ["zipf_error", "ZipfError", "ZipfFacts", "knapsack_kept", "zipf_frequencies"]

MEMORIES = ("optimal", "hebbian")
_DEFAULT_SIZE = 100_000  # Monte-Carlo samples of C_N (optimal memory)
_ARRAY_MAX = 1_000_000  # longest weights array accepted
_SEEN_NODES = 5  # Gauss-Hermite nodes over the number of stored facts (unweighted Hebbian, T samples)
_RS_CAVEAT = ("replica-symmetric q -> 1 prediction with the costs at p = N drawn independently per fact "
              "and the budget taken in expectation; counting errors is not convex, so replica symmetry "
              "may not be exact")


# --------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ZipfError(Result):
    """Expected recall error of ``N`` facts with Zipf frequencies (see :func:`zipf_error`).

    ``error = sum_mu f_mu P(mu not recalled)``, ``recalled_mass = 1 - error``; ``kept`` is
    the expected number of facts recalled (optimal memory: kept by the knapsack).
    ``level`` is the Lagrange multiplier ``lambda`` of the optimal memory (fact ``mu`` is
    kept iff ``f_mu / C_mu >= lambda``; 0 when every fact is kept, NaN for the Hebbian
    memory).  ``load_ratio = N mean(C_N) / (F(kappa) d^2)`` (optimal memory; below 1 every
    fact is kept).  ``stderr`` is the Monte-Carlo standard error of ``error`` from the
    sample of ``samples`` costs (0 for the Hebbian quadratures).  ``model`` names the
    computation: ``"knapsack"``, ``"hebbian-finite-size"`` (unweighted W) or
    ``"hebbian-gaussian"`` (weighted W).  ``training_samples`` is ``T`` (None: infinitely
    many, every fact seen); ``unseen_mass = sum_mu f_mu (1 - f_mu)^T`` is the part of
    ``error`` from the facts never seen (0 when ``T`` is None) and ``seen`` the expected
    number of facts seen (``N`` when ``T`` is None).  ``status``: ``"ok"`` (the budget equation or the
    quadrature was solved and checked), ``"all_kept"`` (optimal memory below capacity:
    ``error = 0``), ``"degenerate"`` (``N`` infinite: every input has infinitely many
    competitors, ``error = 1`` for either memory) or ``"not_converged"`` (the budget
    equation's residual check failed).
    """

    STATUSES = ("ok", "all_kept", "degenerate", "not_converged")

    d: int
    N: float  # inf for infinitely many facts
    a: float
    memory: str
    kappa: float
    weights: str  # "none", "frequency" or "array"
    ensemble: str
    error: float
    recalled_mass: float
    kept: float
    level: float
    load_ratio: float
    stderr: float
    samples: int
    seed: int | None
    training_samples: int | None
    unseen_mass: float
    seen: float
    residual: float
    model: str
    status: str
    converged: bool
    message: str
    validity: Validity | None = None  # how far the prediction was checked (replica.common.validity)


# --------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------
def _check_N(N):
    if N is None or (isinstance(N, (float, np.floating)) and math.isinf(N) and N > 0):
        return math.inf
    return check_int(N, "N", low=2)


def _check_weights(weights, memory, N):
    """``("none" | "frequency" | "array", array or None, note)``."""
    if weights is None:
        return "none", None, ""
    if memory != "hebbian":
        raise ValueError(f"weights apply to memory='hebbian' only (the optimal memory has no weights), "
                         f"got weights={weights!r}")
    if isinstance(weights, str):
        check_choice(weights, "weights", ("frequency",))
        return "frequency", None, ""
    if math.isinf(N):
        raise ValueError("weights must be None or 'frequency' when N is infinite, got an array")
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"weights must be None, 'frequency' or an array of N positive numbers, "
                         f"got {weights!r}") from None
    if w.ndim != 1 or w.size != N:
        raise ValueError(f"weights must be an array of N = {N} positive numbers, got shape {w.shape}")
    if N > _ARRAY_MAX:
        raise ValueError(f"weights arrays are limited to N <= {_ARRAY_MAX}, got N = {N}")
    if np.any(~np.isfinite(w)) or np.any(w <= 0.0):
        bad = w[~np.isfinite(w) | (w <= 0.0)][0]
        raise ValueError(f"weights must be finite and positive, got {bad!r}")
    total = float(w.sum())
    note = ""
    if abs(total - 1.0) > 1e-9:
        note = f"weights normalised to sum 1 (their sum was {total:.6g}); "
    return "array", w / total, note


# zipf_error(d, N, a, memory, kappa, weights, seed, *, samples, ensemble, size, tol): the call before ZipfFacts
_P = inspect.Parameter
_OLD_CALL = inspect.Signature(
    [_P(name, _P.POSITIONAL_OR_KEYWORD, default=default) for name, default in (
        ("d", _P.empty), ("N", _P.empty), ("a", _P.empty), ("memory", "optimal"), ("kappa", 1.0), ("weights", None),
        ("seed", None))]
    + [_P(name, _P.KEYWORD_ONLY, default=default) for name, default in (
        ("samples", None), ("ensemble", "gaussian"), ("size", _DEFAULT_SIZE), ("tol", 1e-9))])
_OLD_ONLY = frozenset({"N", "a", "weights", "samples"})


def _old_call(args, kwargs):
    """The old call of :func:`zipf_error` (``N`` and ``a`` in place of ``facts``) in the current style."""
    if "facts" in kwargs or (len(args) >= 2 and isinstance(args[1], ZipfFacts)):
        return None
    if len(args) < 2 and not _OLD_ONLY & set(kwargs):
        return None
    try:
        bound = _OLD_CALL.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"zipf_error() takes (d, facts, ...) with facts a ZipfFacts: {exc}") from None
    bound.apply_defaults()
    old = bound.arguments
    facts = ZipfFacts(N=old["N"], a=old["a"], weights=old["weights"], samples=old["samples"])
    new = {name: old[name] for name in ("memory", "kappa", "ensemble")}
    new["options"] = {name: old[name] for name in ("seed", "size", "tol") if old[name] is not None}
    return (old["d"], facts), new, ("zipf_error(d, N, a, ..., weights=, samples=) is deprecated and will be removed "
                                    "in the next release; pass zipf_error(d, ZipfFacts(N, a, weights=, samples=), ...)")


_SETTINGS = ("seed", "size", "tol")  # the settings of zipf_error (options=)


def _settings(options) -> dict:
    """``options`` of :func:`zipf_error` as a dict of ``seed``, ``size``, ``tol`` (a ValueError for any other)."""
    given = settings_dict(options, "zipf_error()")
    unknown = sorted(set(given) - set(_SETTINGS))
    if unknown:
        raise ValueError(f"zipf_error(): options {', '.join(unknown)} are not settings of zipf_error; its settings "
                         f"are {', '.join(_SETTINGS)}")
    return given


@reports_validity("zipf_error")
@accepts_old_calls(_old_call)
@accepts_old_calls(old_tolerance_keywords("zipf_error", _SETTINGS, "options={'seed': ..., 'size': ..., 'tol': ...} (or "
                                          "replica.Tolerances(seed=, tol=))"))
def zipf_error(d, facts, memory="optimal", kappa=1.0, *, ensemble="gaussian", model=None, options=None):
    """Expected frequency mass of the facts not recalled, for Zipf frequencies ``f_mu ∝ mu^-a``.

    ``N`` facts with ``N`` distinct outputs (``p = N`` competitors per input, the OP/DP
    setting), frequencies ``f_mu = mu^-a / H_{N,a}`` and error
    ``E = sum_mu f_mu P(mu not recalled)``; ``notes/zipf.md``.

    * ``memory="optimal"``: the rank ``kappa d`` memory that maximises the recalled mass.
      Each fact is a block with water-filling cost ``C_mu`` (the law of ``C_N``,
      sampled by :func:`replica.optimal.scores.sample_optimal_scores`); the kept set solves the
      knapsack ``max sum_kept f_mu`` s.t. ``sum_kept C_mu <= F(kappa) d^2``, taken by its
      Lagrangian: keep ``mu`` iff ``C_mu <= f_mu / lambda``, with ``lambda`` set by the
      budget in expectation, ``sum_mu E[C 1{C <= f_mu / lambda}] = F d^2``.
      Replica-symmetric; the message says so.  Default model ``"hull_knapsack"`` where
      ``d <= 32`` and ``d + 1 < N <= 256``: a fact whose target is not a vertex of the
      convex hull of its ``N`` candidates can never be recalled (probability ``pi(d, N)``
      from :func:`replica.variants.few_outputs.nonvertex_probability`), and the knapsack runs over
      the others, ``sum_mu (1 - pi) E[C 1{C <= f_mu / lambda}] = F d^2``; ``model="knapsack"``
      leaves the hull out (``pi = 0``, the ``d -> infinity`` limit).
    * ``memory="hebbian"``: ``W = sum_mu w_mu u_mu e_mu^T``.  ``weights=None`` is the
      unweighted memory: every fact has the recall probability of the finite-size
      Hebbian model (:func:`replica.hebbian.hebbian_input_failure_probability` at
      ``p = N``) and ``E`` does not depend on ``a``.  ``weights="frequency"`` (``w = f``)
      or an array of ``N`` positive weights: the model ``"hebbian-conditional"`` (default)
      draws the 32 heaviest facts and the target exactly and adds the other facts as a
      Gaussian field (Monte Carlo over the heavy block, ``stderr`` its standard error);
      ``model="hebbian-gaussian"`` takes every score as an independent Gaussian (target
      ``w_mu``, competitor ``rho`` of variance ``(w_rho^2 + w_mu^2)/d + sum w^2 / d^2``), which
      overestimates the error at small ``d``.  Equal weights use the finite-size model.
    * ``ZipfFacts(..., samples=T)``: the memory stores only the facts seen in ``T`` i.i.d. draws
      of the Zipf law; unseen facts are errors (``unseen_mass = sum_mu f_mu (1 - f_mu)^T``) whose
      outputs still compete.  Optimal: the knapsack over the seen facts; Hebbian: the
      finite-size model averaged over the number of facts seen, or (``weights="frequency"``,
      ``w_mu = n_mu / T``) the independent-Gaussian model averaged over the counts
      (``notes/zipf.md``, section 6).

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    facts : ZipfFacts
        The facts: their number ``N``, the Zipf exponent ``a``, the weights of the
        Hebbian memory and the number ``samples`` of training samples (see
        :class:`ZipfFacts`).
    memory : {"optimal", "hebbian"}
    kappa : float
        Rank fraction in ``(0, 1]`` (optimal memory); must be 1 for the Hebbian memory.
    ensemble : {"gaussian", "sphere"}
        Embedding ensemble of the Hebbian memory (the optimal-memory theory has Gaussian
        competitor fields and does not depend on it).
    model : None or str
        ``None``: the model of the memory and weights above; otherwise one of the models
        that apply there (``"knapsack"`` without the hull, ``"hebbian-gaussian"`` for the
        weighted Hebbian memory); ``replica models`` lists them.
    options : None, replica.Tolerances or dict
        The settings: ``seed`` (None, int, SeedSequence or Generator) of the sample of
        ``C_N`` (optimal memory) or of the heavy block (``"hebbian-conditional"``; ``None``:
        ``DEFAULT_SEED``), ``size``, the Monte-Carlo samples of ``C_N`` (``>= 100``, default
        100000), and ``tol``, the accepted relative residual of the budget equation (in
        ``(0, 1e-2]``, default 1e-9).  ``zipf_error(..., seed=, size=, tol=)`` still works,
        with a ``DeprecationWarning``, for one release.

    The call ``zipf_error(d, N, a, memory, kappa, weights, seed, samples=, ensemble=,
    size=, tol=)`` of earlier versions is still accepted, with a ``DeprecationWarning``,
    for one release.

    Returns
    -------
    ZipfError

    Raises
    ------
    TypeError
        If ``facts`` is not a :class:`ZipfFacts`.
    ValueError
        Naming the argument: ``d < 2``, ``N < 2``, ``a < 0`` (or ``a <= 1`` with ``N``
        infinite), an unknown ``memory`` or ``ensemble``, ``kappa`` outside ``(0, 1]`` (or
        not 1 for the Hebbian memory), weights that are not positive and finite, of the
        wrong length or given for the optimal memory, ``size < 100``, ``tol`` out of range,
        ``samples`` not a positive integer (or given with a weights array), a ``model``
        that does not apply.
    """
    settings = {"seed": None, "size": _DEFAULT_SIZE, "tol": 1e-9, **_settings(options), "model": model}
    problem = _checked_arguments(d, facts, memory, kappa, ensemble, settings)
    N, T = problem.N, problem.T
    common = dict(d=problem.d, N=float(N), a=problem.a, memory=memory, kappa=problem.kappa, weights=problem.kind,
                  ensemble=ensemble, seed=problem.seed, training_samples=T)
    if math.isinf(N):
        return _infinite_N(problem.model, T, common)
    bins = zipf_fact_bins(N, problem.a)
    if T is not None:
        unseen_bins = unseen_sums(bins, problem.a, T)
        if memory == "optimal":
            return _optimal_sampled(bins, unseen_bins, problem, common)
        return _hebbian_sampled(bins, unseen_bins, problem, common)
    if memory == "optimal":
        return _optimal(bins, problem, common)
    return _hebbian(bins, problem, common)


@dataclass(frozen=True)
class _Checked:
    """The arguments of :func:`zipf_error`, checked; ``kind``: ``"none"``, ``"frequency"`` or ``"array"``."""

    d: int
    N: float  # an int, or inf
    a: float
    memory: str
    kappa: float
    ensemble: str
    kind: str
    weights: np.ndarray | None  # normalised, for kind "array"
    note: str
    T: int | None
    size: int
    tol: float
    seed: int | None
    model: str


_HULL_MAX_D = 32  # the hull term where the cloud statistics are quick (d <= 32, N <= 256: about 2 s)
_HULL_MAX_N = 256


def _applicable_models(memory, kind, equal, T, d, N):
    """The models of :func:`zipf_error` for this memory and weights, the default first."""
    if memory == "optimal":
        if T is None and d <= _HULL_MAX_D and d + 1 < N <= _HULL_MAX_N:
            return ("hull_knapsack", "knapsack")
        return ("knapsack",)
    if kind == "none" or equal:
        return ("hebbian-finite-size",)
    return ("hebbian-gaussian",) if T is not None else ("hebbian-conditional", "hebbian-gaussian")


def _checked_arguments(d, facts, memory, kappa, ensemble, settings):
    """The arguments of :func:`zipf_error` checked (a ValueError names the bad one); settings: seed, size, tol, model"""
    seed, size, tol, model = settings["seed"], settings["size"], settings["tol"], settings["model"]
    if not isinstance(facts, ZipfFacts):
        raise TypeError(f"facts must be a ZipfFacts, got {type(facts).__name__}")
    d = check_int(d, "d", low=2)
    N = _check_N(facts.N)
    a = check_real(facts.a, "a", low=0.0)
    if math.isinf(N) and a <= 1.0:
        raise ValueError(f"a must be > 1 when N is infinite (sum_mu mu^-a diverges), got {a!r}")
    check_choice(memory, "memory", MEMORIES)
    kappa = check_scalar_kappa(kappa)
    if memory == "hebbian" and kappa != 1.0:
        raise ValueError(f"kappa must be 1 for memory='hebbian' (no finite-size theory of the rank-truncated "
                         f"Hebbian memory), got {kappa!r}")
    check_ensemble(ensemble)
    kind, w_array, note = _check_weights(facts.weights, memory, N)
    T = _check_samples(facts.samples, kind)
    size = check_int(size, "size", low=100)
    tol = check_real(tol, "tol", low=0.0, high=1e-2, low_open=True)
    if kind == "frequency":
        equal = a == 0.0
    elif kind == "array":
        equal = bool(np.ptp(w_array) <= 1e-12 * w_array.max())
    else:
        equal = True
    models = _applicable_models(memory, kind, equal, T, d, N)
    if model is None:
        model = models[0]
    elif model not in models:
        raise ValueError(f"model {model!r} does not apply to memory={memory!r} with these weights; "
                         f"applicable: {', '.join(models)}")
    seed = resolve_seed(seed) if memory == "optimal" or model == "hebbian-conditional" else None
    return _Checked(d=d, N=N, a=a, memory=memory, kappa=kappa, ensemble=ensemble, kind=kind, weights=w_array,
                    note=note, T=T, size=size, tol=tol, seed=seed, model=model)


def _infinite_N(model, T, common):
    """The degenerate result of ``N = inf``: every fact missed (error 1)."""
    return ZipfError(error=1.0, recalled_mass=0.0, kept=0.0, level=math.nan, load_ratio=math.inf,
                     stderr=0.0, samples=0, unseen_mass=0.0 if T is None else math.nan,
                     seen=math.inf if T is None else math.nan, residual=0.0,
                     model=model, status="degenerate", converged=True,
                     message=("N infinite: every input has infinitely many competing outputs, so no "
                              "memory recalls any fact (error 1); the scaling law in d needs a finite N "
                              "(notes/zipf.md, section 4)"), **common)


def _check_samples(samples, kind):
    """``T`` as an int, or None (infinitely many samples)."""
    if samples is None:
        return None
    T = check_int(samples, "samples", low=1)
    if kind == "array":
        raise ValueError("samples applies to weights=None or 'frequency' (the weights then come from the "
                         "counts of the samples), not to a weights array")
    return T


@functools.lru_cache(maxsize=16)
def _cost_law(N: float, size: int, seed: int) -> CostLaw:
    """The sampled law of ``C_N`` (a pure function of its arguments; remembered for the last 16 ``N``)."""
    return CostLaw(sample_optimal_scores(p=N, size=size, seed=seed).cost)


def _optimal(facts, problem, common):
    """The knapsack over every fact (infinitely many samples); ``hull_knapsack``: over the hull's vertices."""
    d, N, kappa, size, seed, tol = problem.d, problem.N, problem.kappa, problem.size, problem.seed, problem.tol
    budget = float(tail_second_moment(kappa)) * float(d) ** 2
    law = _cost_law(float(N), size, seed)
    from .few_outputs import nonvertex_probability  # scipy.optimize on first use only

    pi = nonvertex_probability(d, int(N)) if problem.model == "hull_knapsack" else 0.0
    solved = knapsack_expectation(facts, law, budget, tol, vertex=1.0 - pi)
    ratio = N * law.mean / budget
    hull = (f"targets not a vertex of their candidates' hull lost (pi = {pi:.3g}); "
            if problem.model == "hull_knapsack" else "")
    if solved["all_kept"]:
        status, verdict = "all_kept", f"{hull}every {'vertex' if hull else 'fact'} kept (below capacity)"
    else:
        status = "ok" if solved["ok"] else "not_converged"
        verdict = (f"{hull}{solved['kept']:.6g} of {N} facts kept in expectation, error {solved['error']:.4g} "
                   f"+- {solved['stderr']:.2g}; residual {solved['residual']:.2g} (tol {tol:.2g})"
                   f"{'' if solved['ok'] else ', root not accepted'}")
    message = f"{verdict}; load ratio {ratio:.4g}; {_RS_CAVEAT}"
    return ZipfError(error=solved["error"], recalled_mass=1.0 - solved["error"], kept=solved["kept"],
                     level=solved["level"], load_ratio=ratio, stderr=solved["stderr"], samples=law.n,
                     unseen_mass=0.0, seen=float(N), residual=solved["residual"], model=problem.model,
                     status=status, converged=status != "not_converged", message=message, **common)


def _optimal_sampled(facts, unseen_bins, problem, common):
    """The knapsack over the facts seen in ``T`` samples, in expectation over the seen indicators.

    ``unseen_bins``: the expected unseen count and mass per bin (:func:`unseen_sums`).
    """
    d, N, kappa, size, seed, tol = problem.d, problem.N, problem.kappa, problem.size, problem.seed, problem.tol
    unseen_count, unseen_mass = unseen_bins
    budget = float(tail_second_moment(kappa)) * float(d) ** 2
    law = _cost_law(float(N), size, seed)
    seen = facts.count - unseen_count
    unseen = float(unseen_mass.sum())
    seen_facts = FactBins(count=seen, freq=facts.freq, freq2=facts.freq2, mass=facts.mass - unseen_mass,
                        normaliser=facts.normaliser, lo=facts.lo, hi=facts.hi)
    solved = knapsack_expectation(seen_facts, law, budget, tol)
    n_seen = float(seen.sum())
    error = min(max(unseen + solved["error"], 0.0), 1.0)
    ratio = n_seen * law.mean / budget
    T = common["training_samples"]
    if solved["all_kept"]:
        status, verdict = "all_kept", "every seen fact kept (below capacity)"
    else:
        status = "ok" if solved["ok"] else "not_converged"
        verdict = (f"{solved['kept']:.6g} of {n_seen:.6g} seen facts kept in expectation; residual "
                   f"{solved['residual']:.2g} (tol {tol:.2g}){'' if solved['ok'] else ', root not accepted'}")
    message = (f"T = {T} samples: {n_seen:.6g} of {N} facts seen in expectation, unseen mass {unseen:.4g}; "
               f"{verdict}; error {error:.4g} +- {solved['stderr']:.2g}; load ratio of the seen facts "
               f"{ratio:.4g}; {_RS_CAVEAT}")
    return ZipfError(error=error, recalled_mass=1.0 - error, kept=solved["kept"], level=solved["level"],
                     load_ratio=ratio, stderr=solved["stderr"], samples=law.n, unseen_mass=unseen, seen=n_seen,
                     residual=solved["residual"], model="knapsack", status=status,
                     converged=status != "not_converged", message=message, **common)


def _hebbian(facts, problem, common):
    """The Hebbian branch of :func:`zipf_error` (infinitely many samples)."""
    d, N, a, ensemble = problem.d, problem.N, problem.a, problem.ensemble
    kind, w_array, note, model = problem.kind, problem.weights, problem.note, problem.model
    stderr = 0.0
    if model == "hebbian-finite-size":
        recall = 1.0 - hebbian_input_failure_probability(d=d, p=float(N), ensemble=ensemble)
        error = 1.0 - recall
        kept = N * recall
        what = "equal weights: the finite-size Hebbian model at p = N" if kind != "none" else \
            "unweighted W: the finite-size Hebbian model at p = N (the same for every fact)"
    elif model == "hebbian-conditional":
        error, stderr, kept = _conditional(facts, problem)
        what = (f"weighted W ({kind}): the {HEAVY_FACTS} heaviest facts drawn exactly, the others a Gaussian field "
                f"({CONDITIONAL_SAMPLES} samples, s.e. {stderr:.2g})")
    else:
        if kind == "frequency":
            count, w2, targets = facts.count, facts.freq2, facts.freq
            s2 = float(np.dot(count, w2))
            recall_bins = gaussian_recall(targets, count, w2, s2, d, ensemble)
            error = float(np.dot(facts.mass, 1.0 - recall_bins))
            kept = float(np.dot(count, recall_bins))
        else:
            count, w2, w1, _ = competitor_bins(w_array)
            s2 = float(np.dot(w_array, w_array))
            recall_bins = gaussian_recall(w1, count, w2, s2, d, ensemble)
            order = np.argsort(w1)
            log_recall = np.log(np.maximum(recall_bins[order], 1e-300))
            per_fact = np.exp(np.interp(np.log(w_array), np.log(w1[order]), log_recall))
            frequencies = facts.freq if facts.count.size == N else zipf_frequencies(N, a)
            error = float(np.dot(frequencies, 1.0 - per_fact))
            kept = float(per_fact.sum())
        what = f"weighted W ({kind}): independent Gaussian scores"
    error = min(max(error, 0.0), 1.0)
    message = (f"{note}{what}; expected {kept:.6g} of {N} facts recalled, error {error:.4g}")
    return ZipfError(error=error, recalled_mass=1.0 - error, kept=kept, level=math.nan, load_ratio=math.nan,
                     stderr=stderr, samples=CONDITIONAL_SAMPLES if model == "hebbian-conditional" else 0,
                     unseen_mass=0.0, seen=float(N), residual=0.0, model=model,
                     status="ok", converged=True, message=message, **common)


@functools.lru_cache(maxsize=32)
def _conditional_frequency(d, N, a, ensemble, seed):
    bins = zipf_fact_bins(N, a)
    return conditional_error(bins.count, bins.freq, bins.freq2, bins.mass, d, ensemble, seed)


def _conditional(facts, problem):
    """Error, its Monte-Carlo standard error and the expected recalled count of the conditional model."""
    if problem.kind == "frequency":
        return _conditional_frequency(problem.d, int(problem.N), problem.a, problem.ensemble, problem.seed)
    frequencies = facts.freq if facts.count.size == problem.N else zipf_frequencies(problem.N, problem.a)
    count, w1, w2, mass = weight_bins(problem.weights, frequencies)
    return conditional_error(count, w1, w2, mass, problem.d, problem.ensemble, problem.seed)


def _hebbian_sampled(facts, unseen_bins, problem, common):
    """The Hebbian memory of the facts seen in ``T`` samples (unweighted or count-weighted)."""
    d, N, a, T, kind, ensemble = problem.d, problem.N, problem.a, problem.T, problem.kind, problem.ensemble
    unseen_count, unseen_mass = unseen_bins
    unseen = float(unseen_mass.sum())
    seen_mass = facts.mass - unseen_mass
    n_seen = float((facts.count - unseen_count).sum())
    if kind == "none":
        # n stored facts ~ N(mean, sum q (1 - q)); the unseen count at 2T gives sum (1 - f)^(2T)
        variance = max(float(unseen_count.sum() - unseen_sums(facts, a, 2 * T)[0].sum()), 0.0)
        z, wz = special.roots_hermitenorm(_SEEN_NODES)
        wz = wz / wz.sum()
        stored = np.clip(n_seen + math.sqrt(variance) * z, 2.0, float(N))
        fail = float(sum(w * failure_probability(d, float(n), ensemble, unstored=float(N) - float(n))
                         for n, w in zip(stored, wz)))
        fail = min(max(fail, 0.0), 1.0)
        recall_bins = np.full(facts.count.size, 1.0 - fail)
        model = "hebbian-finite-size"
        what = (f"unweighted W over the seen facts: the finite-size model with n stored facts and N - n unstored "
                f"competing outputs, n ~ {n_seen:.6g} +- {math.sqrt(variance):.3g} ({_SEEN_NODES}-node average; "
                f"n >= 2)")
    else:
        recall_bins = count_weighted_recall(facts, T, d, ensemble)
        model = "hebbian-gaussian"
        what = "count-weighted W = sum n_mu u_mu e_mu^T: Gaussian model of the scores, averaged over the counts"
    seen_count = facts.count - unseen_count
    error = min(max(unseen + float(np.dot(seen_mass, 1.0 - recall_bins)), 0.0), 1.0)
    kept = float(np.dot(seen_count, recall_bins))
    message = (f"T = {T} samples: {n_seen:.6g} of {N} facts seen in expectation, unseen mass {unseen:.4g}; "
               f"{what}; expected {kept:.6g} facts recalled, error {error:.4g}")
    return ZipfError(error=error, recalled_mass=1.0 - error, kept=kept, level=math.nan, load_ratio=math.nan,
                     stderr=0.0, samples=0, unseen_mass=unseen, seen=n_seen, residual=0.0, model=model,
                     status="ok", converged=True, message=message, **common)
