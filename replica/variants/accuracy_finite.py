"""The best recall count above capacity at finite ``p``: the integer knapsack and the outputs' hull.

Derivation: ``notes/recall_accuracy.md``, section 7.  :func:`replica.optimal_accuracy` is the
replica-symmetric count, the ``p -> infinity`` value of the knapsack "keep the cheapest
blocks within the budget ``F(kappa) d^2``", which counts the marginal block fractionally.
At the actual integer ``p`` the same block model gives

    k = max{ k : C_(1) + ... + C_(k) <= F(kappa) d^2 },   C_mu i.i.d. with the law of C_p,

whose mean lies below ``p a_RS`` by about half a fact (the marginal block) plus the
fluctuation of the kept sum.  A second finite-``d`` effect: a fact whose target is not a
vertex of the convex hull of its ``p`` candidates can never be recalled
(``notes/rectangular_few_outputs.md``); such a block gets an infinite cost, with the
probability ``pi(d, p)`` of a non-vertex among ``p`` Gaussian points of ``R^d``
(:func:`replica.variants.few_outputs.nonvertex_probability`), independently of its cost.  Both
corrections are ``O(1/p)`` in the fraction recalled and vanish as ``d`` grows; neither has a
fitted parameter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..asymptotic.quarter_circle import tail_second_moment
from ..common.checks import check_int
from ..common.results import Result
from ..common.seeds import resolve_seed
from ..common.validity import Validity, reports_validity
from ..optimal.scores import sample_optimal_scores
from .few_outputs import nonvertex_probability

__all__ = ["finite_size_accuracy", "FiniteSizeAccuracyResult", "kept_counts"]


def kept_counts(costs: np.ndarray, budget: float) -> np.ndarray:
    """Per row of ``costs``: the largest ``k`` whose ``k`` smallest costs sum to at most ``budget``."""
    return (np.cumsum(np.sort(costs, axis=1), axis=1) <= budget).sum(axis=1)


@dataclass(frozen=True)
class FiniteSizeAccuracyResult(Result):
    """The expected best fraction recalled at finite ``p`` (:func:`finite_size_accuracy`).

    ``status`` is ``"ok"`` (a Monte-Carlo mean, always computed).
    """

    STATUSES = ("ok",)

    d: int
    p: int
    kappa: float
    accuracy: float  # E[k] / p
    stderr: float  # Monte-Carlo standard error of accuracy
    count_mean: float  # E[k]
    count_sd: float  # spread of k between instances of the model
    hull: bool  # facts whose target is not a hull vertex given up
    nonvertex_probability: float  # pi(d, p) (0 without the hull correction)
    instances: int
    samples: int
    seed: int
    status: str = "ok"
    converged: bool = True
    message: str = ""
    validity: Validity | None = None
    model: str = ""  # the registry model that computed it (replica.common.registry)


@reports_validity("finite_size_accuracy")
def finite_size_accuracy(d, p, kappa=1.0, *, hull=True, instances=40000, size=200000, seed=None):
    """Expected best fraction of ``p`` facts recalled, at the integer ``p``, with the hull correction.

    Parameters
    ----------
    d : int
        Dimension, ``2 <= d <= 256``.
    p : int
        Number of facts, ``p >= 2``.
    kappa : float, optional
        Rank fraction in ``(0, 1]`` (budget ``F(kappa) d^2``).
    hull : bool, optional
        Give up the facts whose target is not a vertex of its candidates' hull (their
        probability from the Monte-Carlo cloud statistics, seeded).
    instances : int, optional
        Model instances (rows of ``p`` costs), ``>= 1000``.
    size : int, optional
        Samples of the cost law ``C_p`` the rows are drawn from, ``>= 1000``.
    seed : None, int, SeedSequence or Generator, optional
        Seed of the cost sample and of the rows (``None``: ``DEFAULT_SEED``).

    Returns
    -------
    FiniteSizeAccuracyResult
        Stated tolerance: 0.03 in the fraction recalled against certified brackets of the
        best count (``experiments/accuracy``); its ``validity`` says where that was checked.
    """
    d, p = check_int(d, "d", low=2, high=256), check_int(p, "p", low=2)
    instances, size = check_int(instances, "instances", low=1000), check_int(size, "size", low=1000)
    if not 0.0 < float(kappa) <= 1.0:
        raise ValueError(f"kappa must be in (0, 1], got {kappa!r}")
    seed = resolve_seed(seed)
    budget = float(tail_second_moment(kappa)) * d * d
    pool = sample_optimal_scores(p=p, size=size, seed=seed).cost
    rng = np.random.default_rng(np.random.SeedSequence([seed, d, p]))
    costs = pool[rng.integers(0, pool.size, size=(instances, p))]
    pi = 0.0
    if hull and p > d + 1:  # at most d + 1 generic points: all are vertices
        pi = nonvertex_probability(d, p)
        costs = np.where(rng.random(costs.shape) < pi, np.inf, costs)
    k = kept_counts(costs, budget)
    mean, sd = float(k.mean()), float(k.std(ddof=1))
    return FiniteSizeAccuracyResult(
        d=d, p=p, kappa=float(kappa), accuracy=mean / p, stderr=sd / math.sqrt(instances) / p, count_mean=mean,
        count_sd=sd, hull=bool(hull), nonvertex_probability=pi, instances=instances, samples=size, seed=seed,
        message=(f"E[k] = {mean:.3f} of {p} facts at the integer p (sd {sd:.2f} between instances); "
                 f"non-vertex targets given up with probability {pi:.4f}"))
