"""Tests of the predicted score laws of the optimal memory: replica.optimal.scores.

References: water filling on full normal vectors (plain Monte Carlo, all p - 1
competitors), expected_cost, and the exact constraint geometry (atom at the margin).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

from replica.optimal.finite_size import expected_cost
from replica.optimal.water_filling import water_filling_sorted
from replica.optimal.scores import ScoreSummary, optimal_score_laws, sample_optimal_scores, summarize_scores


def _full_vector_sample(p, margin, top_k, size, seed):
    rng = np.random.default_rng(seed)
    target = rng.standard_normal(size)
    comps = -np.sort(-rng.standard_normal((size, p - 1)), axis=1)
    kept = comps[:, top_k - 1:]
    cost, level, active = water_filling_sorted(target - margin, kept)
    return target, kept, cost, level, active


@pytest.mark.parametrize("p, margin, top_k", [(50, 0.0, 1), (50, 0.5, 3), (400, 0.2, 1)])
def test_score_laws_match_full_vector_sampling(p, margin, top_k):
    size = 20000 if p < 100 else 8000
    sample = sample_optimal_scores(p, margin, top_k, size=size, seed=3)
    target, kept, cost, level, active = _full_vector_sample(p, margin, top_k, size, seed=4)
    target_after = np.maximum(target, level + margin)
    top_after = np.minimum(kept[:, 0], level)
    for mine, ref in [(sample.target_after, target_after), (sample.top_competitor_after, top_after),
                      (sample.cost, cost)]:
        assert stats.ks_2samp(mine, ref).pvalue > 1e-3
    assert abs(sample.pushed_down.mean() - active.mean()) <= 5 * math.hypot(
        sample.pushed_down.std() / math.sqrt(size), active.std() / math.sqrt(size))


def test_water_level_is_the_minimiser():
    sample = sample_optimal_scores(30, 0.3, size=50, seed=8)
    # optimality structure: a lifted target sits exactly margin above the water level,
    # constrained competitors end at or below it, and nothing moves when not lifted
    lifted = sample.lifted
    assert np.all(np.abs(sample.target_after[lifted] - sample.margin - sample.water_level[lifted]) < 1e-12)
    assert np.all(sample.top_competitor_after <= sample.target_after - sample.margin + 1e-12)
    assert np.all(sample.cost[~lifted] == 0)


def test_level_against_scalar_minimisation():
    rng = np.random.default_rng(2)
    for _ in range(10):
        t = rng.standard_normal()
        c = -np.sort(-rng.standard_normal(12))
        cost, level, active = (a[0] for a in water_filling_sorted(np.array([t - 0.4]), c[None, :]))
        def obj(L, t=t, c=c):
            return max(L + 0.4 - t, 0) ** 2 + np.sum(np.maximum(c - L, 0) ** 2)

        res = optimize.minimize_scalar(obj, bounds=(-6, 6), method="bounded", options={"xatol": 1e-12})
        assert float(cost) == pytest.approx(res.fun, abs=1e-10)
        if active > 0:
            assert float(level) == pytest.approx(res.x, abs=1e-6)


def test_score_laws_summary_consistency():
    laws = optimal_score_laws(200.0, size=40000, seed=5)
    assert laws.extreme_value_threshold == pytest.approx(math.sqrt(2 * math.log(200.0)))
    # the mean cost of the sample agrees with the Rao-Blackwellised estimate
    ref = expected_cost(200.0)
    assert abs(laws.mean_cost - ref.mean) <= 4 * math.hypot(laws.mean_cost_stderr, ref.stderr)
    # the gap has an atom at the margin (0 here) of mass fraction_lifted
    assert laws.gap.quantiles[0.5] == pytest.approx(0.0, abs=1e-12)
    assert 0.9 < laws.fraction_lifted < 1.0
    # the water level lies below the unmodified maximum and the target above its prior mean
    assert laws.water_level.mean < laws.top_competitor_before.mean
    assert laws.top_competitor_before.mean == pytest.approx(laws.expected_max, abs=0.02)
    assert laws.target.std < 1.0
    d = laws.to_dict()
    assert set(d["target"]) == {"mean", "std", "count", "quantiles", "status", "converged", "message"}
    assert d["target"]["quantiles"]["0.5"] == laws.target.quantiles[0.5]


def test_score_results_follow_the_result_contract():
    sample = sample_optimal_scores(30, size=50)
    assert sample.seed == 20261130  # seed=None is DEFAULT_SEED
    laws = optimal_score_laws(30, size=50, seed=np.random.SeedSequence(2))
    summary = summarize_scores([1.0, 2.0, 4.0])
    degenerate = ScoreSummary(mean=math.nan, std=math.inf, quantiles={0.5: math.nan}, count=0)
    for res in (sample, laws, summary, degenerate):
        assert res.status in type(res).STATUSES
        json.dumps(res.to_dict(), allow_nan=False)
    assert "target_after" in sample.to_dict() and "cost" not in sample.to_dict()
    assert degenerate.to_dict()["mean"] is None and summary.std == pytest.approx(np.std([1, 2, 4], ddof=1))


def test_large_p_uses_enough_order_statistics():
    sample = sample_optimal_scores(1e6, size=4000, seed=1)
    assert sample.pushed_down.max() >= 1
    laws = optimal_score_laws(1e6, size=4000, seed=1)
    assert laws.top_competitor.mean < laws.expected_max


def test_summarize_scores():
    s = summarize_scores(np.arange(101.0), quantiles=(0.0, 0.5, 1.0))
    assert s.mean == 50.0 and s.quantiles == {0.0: 0.0, 0.5: 50.0, 1.0: 100.0} and s.count == 101
    with pytest.raises(ValueError, match="values"):
        summarize_scores([])
    with pytest.raises(ValueError, match="quantile"):
        summarize_scores([1.0, 2.0], quantiles=(1.5,))


@pytest.mark.parametrize("kwargs, word", [
    ({"p": 1.0}, "p"), ({"p": 10, "margin": -1.0}, "margin"), ({"p": 10, "top_k": 10}, "top_k"),
    ({"p": 10, "size": 1}, "size"),
])
def test_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        sample_optimal_scores(**kwargs)
