"""Finite training samples of Zipf facts: ``zipf_error(..., samples=T)`` (notes/zipf.md, section 6).

Provenance of the reference values: the errors without ``samples`` printed by
``replica.zipf_error`` at commit 1ad337a, before the argument existed (the infinite-sample
results must not change); the unseen mass and the seen count summed directly with numpy,
fact by fact; the closed form at ``T = 1`` (one fact seen, ``E = 1 - sum f^2``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from replica.hebbian.model import failure_probability
from replica.variants.zipf import ZipfFacts, zipf_error


def _zipf(N, a):
    f = np.arange(1.0, N + 1.0) ** (-a)
    return f / f.sum()


# values printed at commit 1ad337a (zipf_error without the samples argument)
_BEFORE = [
    ((32, 2000, 1.5), {}, 0.05131066512771507, 160.56540499036862),
    ((64, 10**6, 2.0), {"options": {"size": 20000}}, 0.0027715582413664814, 231.80284242401575),
    ((64, 300, 1.2), {"memory": "hebbian"}, 0.41939536124675914, 174.18139162597225),
    ((64, 300, 1.2), {"memory": "hebbian", "weights": "frequency", "model": "hebbian-gaussian"}, 0.42914435438589643,
     9.81043418559459),
]


@pytest.mark.parametrize("args, kwargs, error, kept", _BEFORE)
def test_samples_none_is_the_result_before_the_argument(args, kwargs, error, kept):
    # the printed values are compared to 1e-12 relative, not bit for bit: the quadratures call
    # vectorised special functions and numpy reductions whose last bits depend on the CPU
    # (e.g. NUMBA_CPU_NAME=generic); samples=None against omitting it is bit for bit
    d, N, exponent = args
    kwargs = dict(kwargs)
    weights = kwargs.pop("weights", None)
    a, b = (zipf_error(d, ZipfFacts(N, exponent, weights=weights), **kwargs),
            zipf_error(d, ZipfFacts(N, exponent, weights=weights, samples=None), **kwargs))
    assert a.error == b.error and a.kept == b.kept
    for r in (a, b):
        assert r.error == pytest.approx(error, rel=1e-12) and r.kept == pytest.approx(kept, rel=1e-12)
        assert r.training_samples is None and r.unseen_mass == 0.0 and r.seen == float(args[1])


@pytest.mark.parametrize("N, a", [(200, 1.5), (100_000, 1.2), (100_000, 2.0), (3000, 0.5)])
@pytest.mark.parametrize("T", [1, 7, 300, 20_000, 10**7])
def test_unseen_mass_and_seen_count_against_direct_sums(N, a, T):
    f = _zipf(N, a)
    hold = np.exp(T * np.log1p(-f))
    r = zipf_error(16, ZipfFacts(N, a, samples=T), memory="optimal", options={"size": 1000})
    assert r.unseen_mass == pytest.approx(float(np.dot(f, hold)), rel=1e-8, abs=1e-15)
    assert r.seen == pytest.approx(float(np.sum(1.0 - hold)), rel=1e-8)
    assert r.error >= r.unseen_mass - 1e-15


def test_one_sample_stores_one_fact():
    # T = 1: exactly one fact seen, and the optimal memory stores it: E = sum f (1 - f) = 1 - sum f^2
    N, a = 500, 1.3
    f = _zipf(N, a)
    r = zipf_error(32, ZipfFacts(N, a, samples=1), options={"size": 1000})
    assert r.status == "all_kept"
    assert r.error == pytest.approx(1.0 - float(np.dot(f, f)), rel=1e-12)
    assert r.seen == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("memory, weights, tol", [("optimal", None, 1e-12), ("hebbian", None, 1e-12),
                                                  ("hebbian", "frequency", 2e-3)])
def test_many_samples_converge_to_the_infinite_sample_error(memory, weights, tol):
    # T = 1e10 samples: the rarest of 2000 facts (f ~ 4e-6 at a = 1.5) is unseen with probability e^-40000
    d, N, a = 32, 2000, 1.5
    kw = dict(memory=memory, options={"size": 20000})
    # T samples: the knapsack and (random weights) the independent-Gaussian model
    same = {"model": "hebbian-gaussian"} if weights else {}
    inf = zipf_error(d, ZipfFacts(N, a, weights=weights), **kw, **same)
    big = zipf_error(d, ZipfFacts(N, a, weights=weights, samples=10**10), **kw)
    assert big.unseen_mass == 0.0
    assert big.seen == pytest.approx(N, rel=1e-12)
    assert big.error == pytest.approx(inf.error, abs=tol)
    few = zipf_error(d, ZipfFacts(N, a, weights=weights, samples=10), **kw)
    assert abs(few.error - inf.error) > 10 * tol  # T = 10 is far from the limit (the test can fail)


def test_optimal_error_decreases_with_samples():
    d, N, a = 32, 2000, 1.5
    Ts = [1, 3, 10, 30, 100, 300, 1000, 3000, 10**4, 10**5, 10**6]
    res = [zipf_error(d, ZipfFacts(N, a, samples=T), options={"size": 20000}) for T in Ts]
    errors = np.array([r.error for r in res])
    unseen = np.array([r.unseen_mass for r in res])
    assert np.all(np.diff(errors) < 0.0)
    assert np.all(np.diff(unseen) < 0.0)
    assert np.all(np.diff([r.seen for r in res]) > 0.0)
    # small T: every seen fact kept, the error is the unseen mass; large T: the d-limited error
    assert res[2].status == "all_kept" and res[2].error == res[2].unseen_mass
    assert res[-1].status == "ok" and res[-1].error > 10 * res[-1].unseen_mass


def test_count_weighted_hebbian_error_decreases_with_samples():
    Ts = [10, 100, 1000, 10**4]
    errors = [zipf_error(64, ZipfFacts(2000, 2.0, weights="frequency", samples=T), memory="hebbian").error for T in Ts]
    assert np.all(np.diff(errors) < 0.0)


def test_unweighted_hebbian_is_not_monotone_in_samples():
    # more samples: fewer unseen facts, but more stored facts overload the unweighted memory
    r = {T: zipf_error(32, ZipfFacts(2000, 1.5, samples=T), memory="hebbian") for T in (10, 100, 10**5)}
    assert r[100].error < r[10].error
    assert r[10**5].error > r[100].error + 0.3


def test_unstored_competitors_raise_the_hebbian_failure():
    for ensemble in ("gaussian", "sphere"):
        base = failure_probability(64, 100.0, ensemble)
        assert failure_probability(64, 100.0, ensemble, unstored=0.0) == base
        more = [failure_probability(64, 100.0, ensemble, unstored=u) for u in (10.0, 1000.0, 100_000.0)]
        assert base < more[0] < more[1] < more[2] <= 1.0


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", True, math.inf, math.nan])
def test_bad_samples(bad):
    with pytest.raises(ValueError, match="samples"):
        zipf_error(16, ZipfFacts(100, 1.5, samples=bad))


def test_samples_with_a_weights_array_rejected():
    with pytest.raises(ValueError, match="samples"):
        zipf_error(16, ZipfFacts(100, 1.5, weights=np.ones(100), samples=50), memory="hebbian")


def test_samples_result_is_json_safe():
    import json

    r = zipf_error(16, ZipfFacts(100, 1.5, weights="frequency", samples=50), memory="hebbian")
    out = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert out["training_samples"] == 50 and 0.0 < out["unseen_mass"] < out["error"]


def test_infinitely_many_facts_stay_degenerate_with_samples():
    r = zipf_error(32, ZipfFacts(None, 1.5, samples=100))
    assert r.status == "degenerate" and r.error == 1.0 and r.training_samples == 100
    assert math.isnan(r.unseen_mass) and math.isnan(r.seen)
