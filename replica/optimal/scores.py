"""Predicted score laws of the optimal memory at capacity (the water-filling mechanism).

In the q -> 1 limit of the replica theory each input's block of fields is moved
by the least squared shift that satisfies its constraint (``notes/finite_size_capacity.md``):
the target field ``t_1`` rises to ``L* + margin`` and every (constrained) competitor
above the water level ``L*`` is pushed down to ``L*``; nothing moves when
``t_1 - margin`` already exceeds the largest constrained competitor.  All scores are
in units of the competitor standard deviation, i.e. measured scores divided by
``||W||_F / d``.

What this predicts and what it does not is discussed in
``notes/finite_size_capacity.md`` (section "Score laws"): it is the law of the
unique solution at capacity (or of the max-margin solution at a lower load, with
``margin = max_margin(d, p).margin``) for the decoupled problem; the pushed-down
competitors form an atom at ``L*`` (exactly ``margin`` below the target).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..common.checks import check_int, check_real
from ..common.results import Result
from ..common.seeds import resolve_seed
from .cost import check_p_top_k
from .order_statistics import UniformStream, default_order_count, kept_order_statistics
from .water_filling import water_filling_sorted

__all__ = [
    "ScoreSummary",
    "summarize_scores",
    "OptimalScoreSample",
    "sample_optimal_scores",
    "OptimalScoreLaws",
    "optimal_score_laws",
]

_TARGET_KEY = 2**31 - 1  # spawn key of the target-field stream
DEFAULT_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)


@dataclass(frozen=True)
class ScoreSummary(Result):
    """Mean, standard deviation (``ddof=1``) and quantiles of a sample.

    ``quantiles`` maps each probability to its sample quantile (keys become strings in
    ``to_dict``).  A plain estimate: ``status`` is always ``"ok"``.
    """

    STATUSES = ("ok",)

    mean: float
    std: float
    quantiles: dict = field(default_factory=dict)
    count: int = 0
    status: str = "ok"
    converged: bool = True
    message: str = "sample summary"


def summarize_scores(values, quantiles=DEFAULT_QUANTILES) -> ScoreSummary:
    """Summarise a sample: mean, standard deviation (ddof=1) and the given quantiles.

    Parameters
    ----------
    values : array_like
        Finite sample values (at least one).
    quantiles : sequence of float, optional
        Probabilities in [0, 1].

    Returns
    -------
    ScoreSummary

    Raises
    ------
    ValueError
        If ``values`` is empty or a quantile lies outside [0, 1].
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("values must contain at least one number, got an empty sample")
    qs = [check_real(q, "quantile", low=0.0, high=1.0) for q in quantiles]
    std = float(values.std(ddof=1)) if values.size > 1 else 0.0
    return ScoreSummary(mean=float(values.mean()), std=std,
                        quantiles={q: float(v) for q, v in zip(qs, np.quantile(values, qs))},
                        count=int(values.size))


@dataclass(frozen=True)
class OptimalScoreSample(Result):
    """Per-input samples of the water-filled fields (arrays of length ``size``).

    ``target_before`` is ``t_1``; ``target_after = max(t_1, L* + margin)``;
    ``water_level`` is ``L*`` (set to the largest constrained competitor when nothing
    moves, the lowest optimal level); ``top_competitor_after = min(c_top_k, L*)`` is the
    largest *constrained* competitor after filling (for ``top_k = 1`` the largest
    competitor); ``pushed_down`` is the number of competitors moved to ``L*`` (the
    atom); ``lifted`` says whether the target moved; ``cost`` is ``C_p``.  Exact
    samples: ``status`` is always ``"ok"``; ``to_dict`` gives summaries, no arrays.
    """

    STATUSES = ("ok",)

    p: float
    margin: float
    top_k: int
    seed: int
    target_before: np.ndarray
    target_after: np.ndarray
    water_level: np.ndarray
    top_competitor_before: np.ndarray
    top_competitor_after: np.ndarray
    pushed_down: np.ndarray
    lifted: np.ndarray
    cost: np.ndarray
    status: str = "ok"
    converged: bool = True
    message: str = "exact samples of the water-filled fields"

    def _payload(self) -> dict:
        """Summaries only (no arrays)."""
        return {"p": self.p, "margin": self.margin, "top_k": self.top_k, "seed": self.seed,
                "size": int(self.cost.size),
                "target_after": summarize_scores(self.target_after).to_dict(),
                "top_competitor_after": summarize_scores(self.top_competitor_after).to_dict(),
                "mean_pushed_down": float(self.pushed_down.mean()),
                "fraction_lifted": float(self.lifted.mean()),
                "mean_cost": float(self.cost.mean())}


def sample_optimal_scores(p, margin=0.0, top_k=1, *, size=100_000, seed=None):
    """Sample the water-filled target and competitor fields of one input, ``size`` times.

    ``t_1 ~ N(0, 1)`` and the largest ``K`` constrained competitors of ``p - 1``
    i.i.d. N(0, 1) are sampled exactly in law (top order statistics, ``K`` doubled
    until every sample has fewer than ``K`` competitors pushed down, so the omitted
    ones are below the water level).  See ``notes/finite_size_capacity.md``.

    Parameters
    ----------
    p : float
        Block size (one target and ``p - 1`` competitors), ``p >= 2``; real allowed.
    margin : float, optional
        Stability margin ``>= 0`` (competitor standard deviations).
    top_k : int, optional
        Target among the ``top_k`` best, ``1 <= top_k <= p - 1``.
    size : int, optional
        Number of samples, ``>= 2``.
    seed : None, int, SeedSequence or Generator, optional
        Seed (``None``: ``DEFAULT_SEED``); the integer used is stored in the result.

    Returns
    -------
    OptimalScoreSample

    Raises
    ------
    ValueError
        If ``p < 2``, ``margin < 0``, ``top_k`` outside ``[1, p - 1]``, ``size < 2`` or a
        bad ``seed``.
    """
    p, top_k = check_p_top_k(p, top_k)
    margin = check_real(margin, "margin", low=0.0)
    size = check_int(size, "size", low=2)
    seed = resolve_seed(seed)
    kept_total = p - 1.0 - top_k + 1.0
    whole = math.floor(kept_total + 1e-12)
    order = min(default_order_count(kept_total), whole)
    # competitors from the same tiled uniform stream as expected_cost (common random
    # numbers); the target from an independent stream of the same seed
    stream = UniformStream(seed)
    target = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_TARGET_KEY,))).standard_normal(size)
    while True:
        kept = kept_order_statistics(p - 1.0, top_k, stream.get(size, order))
        cost, level, active = water_filling_sorted(target - margin, kept)
        if order >= whole or np.all(active < order):
            break
        order = min(2 * order, whole)
    return OptimalScoreSample(
        p=float(p), margin=margin, top_k=top_k, seed=seed,
        target_before=target, target_after=np.maximum(target, level + margin),
        water_level=level, top_competitor_before=kept[:, 0],
        top_competitor_after=np.minimum(kept[:, 0], level), pushed_down=active,
        lifted=active > 0, cost=cost)


@dataclass(frozen=True)
class OptimalScoreLaws(Result):
    """Summaries of the predicted score laws (competitor standard-deviation units).

    ``target`` is the law of the target score after filling; ``water_level`` the law
    of ``L*`` given that the target was lifted; ``top_competitor`` the law of the
    largest constrained competitor after filling; ``gap`` the law of target minus
    top constrained competitor, which has an atom of mass ``fraction_lifted`` at
    ``margin``; ``mean_pushed_down`` the mean size of the atom of competitors at
    ``L*``.  ``extreme_value_threshold = sqrt(2 ln p)`` and ``expected_max`` (of the
    ``p - 1`` competitors before filling) are given for comparison.  Estimates from
    exact samples: ``status`` is always ``"ok"``.
    """

    STATUSES = ("ok",)

    p: float
    margin: float
    top_k: int
    samples: int
    seed: int
    target: ScoreSummary
    water_level: ScoreSummary
    top_competitor: ScoreSummary
    top_competitor_before: ScoreSummary
    gap: ScoreSummary
    fraction_lifted: float
    mean_pushed_down: float
    mean_cost: float
    mean_cost_stderr: float
    extreme_value_threshold: float
    expected_max: float
    status: str = "ok"
    converged: bool = True
    message: str = "summaries of exact samples"


def optimal_score_laws(p, margin=0.0, top_k=1, *, size=100_000, seed=None, quantiles=DEFAULT_QUANTILES):
    """Predicted laws of the target and top competitor scores of the optimal memory.

    Use ``p = capacity(d).p_c`` for the memory at capacity, or
    ``margin = max_margin(d, p).margin`` for the max-margin memory at load ``p``.
    Parameters as in :func:`sample_optimal_scores`; ``quantiles`` as in
    :func:`summarize_scores`.  See ``notes/finite_size_capacity.md`` ("Score laws").

    Returns
    -------
    OptimalScoreLaws

    Raises
    ------
    ValueError
        As :func:`sample_optimal_scores`.
    """
    from ..asymptotic.extremes import expected_max, extreme_value_threshold

    sample = sample_optimal_scores(p, margin, top_k, size=size, seed=seed)
    lifted = sample.lifted
    level = sample.water_level[lifted] if np.any(lifted) else sample.water_level
    return OptimalScoreLaws(
        p=sample.p, margin=sample.margin, top_k=sample.top_k, samples=int(sample.cost.size),
        seed=sample.seed,
        target=summarize_scores(sample.target_after, quantiles),
        water_level=summarize_scores(level, quantiles),
        top_competitor=summarize_scores(sample.top_competitor_after, quantiles),
        top_competitor_before=summarize_scores(sample.top_competitor_before, quantiles),
        gap=summarize_scores(sample.target_after - sample.top_competitor_after, quantiles),
        fraction_lifted=float(lifted.mean()), mean_pushed_down=float(sample.pushed_down.mean()),
        mean_cost=float(sample.cost.mean()),
        mean_cost_stderr=float(sample.cost.std(ddof=1) / math.sqrt(sample.cost.size)),
        extreme_value_threshold=float(extreme_value_threshold(sample.p)),
        expected_max=float(expected_max(sample.p - 1.0)))
