"""Tests of replica.variants.accuracy (notes/recall_accuracy.md).

The Hebbian accuracy is checked against actual Hebbian memories built with plain numpy
(independent of the quadrature of replica.hebbian.finite_size); the optimal accuracy against a
greedy brute force on the same sample of water-filling costs and against the
all-stored capacity of replica.optimal.finite_size.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from replica.variants.accuracy import (
    AccuracyCapacityResult,
    OptimalAccuracyResult,
    accuracy_capacity,
    hebbian_accuracy,
    optimal_accuracy,
)
from replica.optimal.finite_size import capacity
from replica.hebbian.finite_size import hebbian_input_failure_probability
from replica.asymptotic.quarter_circle import tail_second_moment
from replica.optimal.scores import sample_optimal_scores

ALPHAS = (0.125, 0.25, 0.5, 0.75, 1.0)


def _load(d, alpha):
    """Integer p with p ln p = alpha d^2 (fixed point)."""
    p = alpha * d * d
    for _ in range(60):
        p = alpha * d * d / math.log(p)
    return int(round(p))


def _sampled_accuracy(d, p, ensemble, trials, rng):
    """Mean fraction of facts recalled by W = sum u e^T over ``trials`` instances.

    Returns (accuracy, binomial standard error over all p * trials inputs, standard
    error from the spread between instances).
    """
    fractions = np.empty(trials)
    for i in range(trials):
        e = rng.standard_normal((d, p))
        u = rng.standard_normal((d, p))
        if ensemble == "gaussian":
            e /= math.sqrt(d)
            u /= math.sqrt(d)
        else:
            e /= np.linalg.norm(e, axis=0)
            u /= np.linalg.norm(u, axis=0)
        scores = u.T @ ((u @ e.T) @ e)  # s[rho, mu] = u_rho^T W e_mu
        fractions[i] = np.mean(np.argmax(scores, axis=0) == np.arange(p))
    acc = float(fractions.mean())
    binomial = math.sqrt(acc * (1.0 - acc) / (p * trials))
    return acc, binomial, float(fractions.std(ddof=1) / math.sqrt(trials))


# --------------------------------------------------------------------------------------
# Hebbian accuracy
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("ensemble", ["gaussian", "sphere"])
@pytest.mark.parametrize("d, trials", [(64, 40), (128, 12)])
def test_hebbian_accuracy_matches_sampled_memories(d, trials, ensemble):
    # Measured with 40 instances per point at d = 64 and 128 (notes/recall_accuracy.md,
    # section 3): |model - sampled| <= 2.3 between-instance standard errors at every load.
    rng = np.random.default_rng(20261130 + d + (ensemble == "sphere"))
    loads = [_load(d, a) for a in ALPHAS]
    model = hebbian_accuracy(d, loads, ensemble)
    for p, predicted in zip(loads, model):
        sampled, binomial, between = _sampled_accuracy(d, p, ensemble, trials, rng)
        se = max(binomial, between)
        assert abs(sampled - predicted) <= 4.0 * se, (d, ensemble, p, predicted, sampled, binomial, between)


def test_hebbian_accuracy_is_one_minus_input_failure_and_vectorised():
    loads = np.array([[20.0, 40.5], [80.0, 160.0]])
    acc = hebbian_accuracy(32, loads, "sphere")
    assert acc.shape == loads.shape
    for p, a in zip(loads.ravel(), acc.ravel()):
        assert a == 1.0 - hebbian_input_failure_probability(d=32, p=p, ensemble="sphere")
    assert isinstance(hebbian_accuracy(32, 40.0), float)
    assert np.all(np.diff(acc.ravel()) < 0)


def test_hebbian_accuracy_transition_sharpens_at_one_half():
    # accuracy -> 1 below alpha = 1/2 and -> 0 above, slowly (width ~ 1/sqrt(2 ln p)).
    # Model values at d = 16384 (notes/recall_accuracy.md, section 2 table): 0.995 at
    # alpha = 1/4 and 0.254 at alpha = 3/4, both still moving monotonically with d.
    low = [hebbian_accuracy(d, _load(d, 0.25), "sphere") for d in (64, 1024, 16384)]
    high = [hebbian_accuracy(d, _load(d, 0.75), "sphere") for d in (64, 1024, 16384)]
    assert low[0] < low[1] < low[2] and high[0] > high[1] > high[2]
    assert low[2] > 0.99 and high[2] < 0.3


# --------------------------------------------------------------------------------------
# optimal accuracy
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def capacity_32():
    return capacity(d=32)


def test_optimal_accuracy_is_one_below_capacity(capacity_32):
    below = optimal_accuracy(d=32, p=0.98 * capacity_32.p_c)
    assert below.accuracy == 1.0 and below.load_ratio < 1.0 and below.status == "ok"
    assert math.isinf(below.threshold_cost) and below.stderr == 0.0
    above = optimal_accuracy(d=32, p=1.05 * capacity_32.p_c)
    assert 0.9 < above.accuracy < 1.0 and above.load_ratio > 1.0


def test_optimal_accuracy_decreases_in_p(capacity_32):
    loads = capacity_32.p_c * np.linspace(0.9, 4.0, 12)
    acc = [optimal_accuracy(d=32, p=p, size=20_000).accuracy for p in loads]
    assert acc[0] == 1.0
    assert np.all(np.diff(acc) <= 0.0) and np.all(np.diff(acc)[2:] < 0.0)


@pytest.mark.parametrize("d, factor, kappa", [(32, 1.5, 1.0), (64, 3.0, 1.0), (32, 1.2, 0.5)])
def test_optimal_accuracy_agrees_with_greedy_brute_force(capacity_32, d, factor, kappa):
    size, seed = 5000, 7
    p = factor * capacity_32.p_c * (d / 32.0) ** 2
    result = optimal_accuracy(d=d, p=p, kappa=kappa, size=size, seed=seed)
    costs = sample_optimal_scores(p=p, size=size, seed=seed).cost
    # greedy: keep the cheapest blocks of the sample while the budget, F d^2 shared by
    # p blocks (so F d^2 size / p for the sample), is not exceeded
    budget = float(tail_second_moment(kappa)) * d * d * size / p
    spent, kept = 0.0, 0
    for c in sorted(costs):
        if spent + c > budget:
            break
        spent, kept = spent + c, kept + 1
    assert kept / size <= result.accuracy <= (kept + 1) / size
    assert result.threshold_cost == sorted(costs)[kept]
    assert result.residual <= 1e-9 and result.status == "ok" and result.converged


def test_optimal_accuracy_stderr_matches_seed_spread(capacity_32):
    values = [optimal_accuracy(d=32, p=1.5 * capacity_32.p_c, size=4000, seed=s) for s in range(12)]
    spread = float(np.std([v.accuracy for v in values], ddof=1))
    stated = float(np.mean([v.stderr for v in values]))
    # 12 seeds: the sample standard deviation is known to about 21 %
    assert 0.55 * stated < spread < 1.6 * stated, (spread, stated)


def test_optimal_accuracy_lower_rank_recalls_less(capacity_32):
    p = 1.2 * capacity_32.p_c
    full = optimal_accuracy(d=32, p=p, size=20_000)
    half = optimal_accuracy(d=32, p=p, kappa=0.5, size=20_000)
    assert half.accuracy < full.accuracy - 10 * max(half.stderr, full.stderr)


# --------------------------------------------------------------------------------------
# accuracy capacity
# --------------------------------------------------------------------------------------
def test_accuracy_capacity_optimal(capacity_32):
    r99 = accuracy_capacity(32, 0.99, options={"size": 20_000})
    assert r99.status == "converged" and r99.converged
    check = optimal_accuracy(d=32, p=r99.p_c, size=20_000)
    assert abs(check.accuracy - 0.99) <= 1e-6
    r100 = accuracy_capacity(32, 1.0, options={"size": 20_000})
    # threshold 1 is the all-stored capacity of this sample
    se = math.hypot(r100.stderr, capacity_32.stderr)
    assert abs(r100.p_c - capacity_32.p_c) <= 4.0 * se, (r100.p_c, r100.stderr, capacity_32.p_c)
    assert r100.p_c < r99.p_c
    assert r99.seed == 20261130 and "replica symmetry" in r99.message


@pytest.mark.parametrize("ensemble", ["gaussian", "sphere"])
def test_accuracy_capacity_hebbian(ensemble):
    r = accuracy_capacity(64, 0.9, memory="hebbian", ensemble=ensemble)
    assert r.status == "converged" and r.seed is None and r.stderr == 0.0
    assert abs(hebbian_accuracy(64, r.p_c, ensemble) - 0.9) <= 1e-6
    assert hebbian_accuracy(64, 1.01 * r.p_c, ensemble) < 0.9 < hebbian_accuracy(64, 0.99 * r.p_c, ensemble)


def test_accuracy_capacity_unbracketed():
    never = accuracy_capacity(64, 1.0, memory="hebbian")
    assert never.status == "unbracketed" and not never.converged and math.isnan(never.p_c)
    assert "p = 2" in never.message


# --------------------------------------------------------------------------------------
# result contract
# --------------------------------------------------------------------------------------
def _failed_optimal():
    return OptimalAccuracyResult(
        d=32, p=200.0, kappa=1.0, alpha=math.nan, accuracy=math.nan, stderr=math.inf,
        threshold_cost=math.inf, load_ratio=math.nan, load_ratio_stderr=math.nan,
        tail_second_moment=1.0, samples=100, seed=0, residual=math.nan,
        status="not_converged", converged=False, message="residual check failed")


def test_result_contract(capacity_32):
    results = [optimal_accuracy(d=32, p=0.9 * capacity_32.p_c, size=1000),
               optimal_accuracy(d=32, p=2.0 * capacity_32.p_c, size=1000),
               _failed_optimal(),
               accuracy_capacity(64, 0.9, memory="hebbian"),
               accuracy_capacity(64, 1.0, memory="hebbian")]
    for r in results:
        text = json.dumps(r.to_dict(), allow_nan=False)
        assert r.status in type(r).STATUSES
        for key in ("status", "converged", "message"):
            assert key in json.loads(text)
    assert results[0].to_dict()["threshold_cost"] is None
    assert isinstance(results[-1], AccuracyCapacityResult) and results[-1].to_dict()["p_c"] is None
    with pytest.raises(ValueError, match="status"):
        AccuracyCapacityResult(d=2, accuracy=0.5, memory="hebbian", ensemble="gaussian", kappa=1.0,
                               p_c=math.nan, stderr=math.nan, alpha=math.nan, achieved=math.nan,
                               iterations=0, residual=math.nan, seed=None, status="failed",
                               converged=False, message="")


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.5, math.nan, "high"])
def test_accuracy_threshold_outside_range(threshold):
    with pytest.raises(ValueError, match=r"accuracy .*\(0\.0, 1\.0\]|accuracy must be a real number"):
        accuracy_capacity(32, threshold)


@pytest.mark.parametrize("call, name", [
    (lambda: hebbian_accuracy(1, 10.0), "d"),
    (lambda: hebbian_accuracy(32, [10.0, 1.5]), "p"),
    (lambda: hebbian_accuracy(32, 10.0, "cube"), "ensemble"),
    (lambda: optimal_accuracy(d=32, p=1.0), "p"),
    (lambda: optimal_accuracy(d=32, p=100.0, kappa=1.5), "kappa"),
    (lambda: optimal_accuracy(d=32, p=100.0, size=10), "size"),
    (lambda: optimal_accuracy(d=32, p=100.0, tol=0.0), "tol"),
    (lambda: optimal_accuracy(d=32, p=100.0, seed=-1), "seed"),
    (lambda: accuracy_capacity(32, memory="perceptron"), "memory"),
    (lambda: accuracy_capacity(32, memory="hebbian", kappa=0.5), "kappa"),
    (lambda: accuracy_capacity(32, options={"samples": 10}), "options"),
    (lambda: accuracy_capacity(32, options={"size": 5}), "size"),
    (lambda: accuracy_capacity(32, options={"max_iter": 0}), "max_iter"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
