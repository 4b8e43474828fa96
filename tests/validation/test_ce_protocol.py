"""The cross-entropy capacity protocol (validation.measurements.ce_protocol) and the Adam options it needs."""

import json
import math

import numpy as np
import pytest

from validation import make_instance, solve
from validation.measurements.ce_protocol import (CECapacity, CEProtocol, SeedCapacity, ce_capacity, search_range,
                                    trial_seed)
from validation.solvers import AdamOptions, assess
from validation.solvers.adam import _initial_params, solve_adam

# ---------------------------------------------------------------------------------
# Adam: early stop at an accuracy threshold, decoupled weight decay, initialisation
# ---------------------------------------------------------------------------------


def test_early_stop_at_threshold_is_undecided_with_the_accuracy():
    inst = make_instance(12, 40, seed=1)
    sol = solve(inst, solver="adam", max_iter=3000, options={"stop_accuracy": 0.8})
    assert 0.8 <= sol.recall_fraction < 1.0
    assert sol.iterations < 3000 and sol.iterations % 10 == 0
    assert sol.status == "undecided" and not sol.stored and not sol.converged
    assert f"{sol.recall_fraction:.4g}" in sol.message and "stop_accuracy 0.8" in sol.message
    assert sol.info["stop_accuracy"] == 0.8 and sol.info["stop_accuracy_reached"]
    # the same trajectory, cut one check earlier, had not reached the threshold
    earlier = solve_adam(inst, max_iter=sol.iterations - 10)
    assert assess(inst, earlier.W)[1] < 0.8
    same = solve_adam(inst, max_iter=sol.iterations)
    np.testing.assert_array_equal(same.W, sol.W)


def test_early_stop_below_one_that_recalls_everything_is_stored():
    inst = make_instance(12, 20, seed=1)
    sol = solve(inst, solver="adam", options={"stop_accuracy": 0.5})
    default = solve(inst, solver="adam")
    assert sol.iterations <= default.iterations
    assert sol.status == ("stored" if sol.recall_fraction == 1.0 else "undecided")
    assert sol.converged == sol.stored


def test_default_options_unchanged():
    # provenance: solve(make_instance(12, 20, "op", seed=3), solver="adam") measured with the
    # solver before stop_accuracy / weight_decay / init existed: 50 steps, this margin and loss
    # The OP Adam runs its GEMMs in float32 (unit roundoff 6e-8), whose summation order
    # depends on the BLAS kernel the CPU selects: on another kernel the margin moved by
    # 2e-7 relative after the 50 steps. rel=1e-5 (about 100 float32 roundoffs) allows
    # that and still fails for any change of a default: a learning rate 1 % off moves the
    # margin by far more (the negative control below).
    inst = make_instance(12, 20, "op", seed=3)
    sol = solve(inst, solver="adam")
    assert sol.iterations == 50 and sol.status == "stored"
    assert sol.margin == pytest.approx(0.19385143945174813, rel=1e-5)
    assert sol.info["loss"] == pytest.approx(0.5141021013259888, rel=1e-5)
    lr = AdamOptions().learning_rate
    other = solve(inst, solver="adam", options={"learning_rate": lr * 1.01})
    assert other.margin != pytest.approx(0.19385143945174813, rel=1e-5)


def _numpy_adamw_step(inst, W0, lr, wd, beta1=0.9, beta2=0.999, eps=1e-8):
    """One optax.adamw step written out in float64 (first step: bias corrections 1 - beta)."""
    S = inst.targets @ W0 @ inst.inputs.T   # S[rho, mu] = u_rho^T W e_mu
    P = np.exp(S - S.max(axis=0))
    P /= P.sum(axis=0)
    G = (P - np.eye(inst.p)) / inst.p
    g = inst.targets.T @ G @ inst.inputs
    m_hat = (1 - beta1) * g / (1 - beta1)
    v_hat = (1 - beta2) * g * g / (1 - beta2)
    return W0 - lr * (m_hat / (np.sqrt(v_hat) + eps) + wd * W0)


@pytest.mark.parametrize("wd", [0.0, 0.5])
def test_weight_decay_is_one_adamw_step(wd):
    inst = make_instance(6, 30, seed=2)  # beyond capacity: the first check does not stop
    options = AdamOptions(learning_rate=0.1, init="lecun_normal", weight_decay=wd)
    sol = solve_adam(inst, max_iter=1, options=options)
    assert sol.iterations == 1
    W0 = _initial_params(6, 6, np.float32, inst.seed, options)[0].astype(np.float64)
    assert np.abs(W0).max() > 0.1
    np.testing.assert_allclose(sol.W, _numpy_adamw_step(inst, W0, 0.1, wd), rtol=1e-5, atol=1e-6)
    if wd:  # the decay term alone: lr * wd * W0 apart from the plain Adam step
        plain = solve_adam(inst, max_iter=1, options=AdamOptions(learning_rate=0.1, init="lecun_normal"))
        np.testing.assert_allclose(plain.W - sol.W, 0.1 * wd * W0, rtol=1e-4, atol=1e-6)


def test_lecun_normal_start():
    W = _initial_params(200, 200, np.float64, 7, AdamOptions(init="lecun_normal"))[0]
    assert np.abs(W).max() <= 2.0 / 0.87962566103423978 / np.sqrt(200) + 1e-12
    assert W.var() * 200 == pytest.approx(1.0, abs=0.02)   # variance 1/d, 40000 entries


def test_adam_option_checks():
    for name, value in [("stop_accuracy", 0.0), ("stop_accuracy", 1.5), ("weight_decay", -1.0),
                        ("init", "ones")]:
        with pytest.raises(ValueError, match=name):
            AdamOptions(**{name: value})

# ---------------------------------------------------------------------------------
# the search, on a monotone stand-in for Adam
# ---------------------------------------------------------------------------------


def _threshold_trainer(n_true, calls=None):
    def trainer(d, n, seed, settings, accuracy):
        if calls is not None:
            calls.append(n)
        return 1.0 if n <= n_true else 0.5
    return trainer


@pytest.mark.parametrize("start_alpha", [None, 0.77, 3.0])
@pytest.mark.parametrize("n_true", [40, 97, 333])
def test_search_finds_threshold_to_resolution(start_alpha, n_true):
    calls = []
    settings = CEProtocol(start_alpha=start_alpha)
    r = ce_capacity(32, seeds=2, settings=settings, trainer=_threshold_trainer(n_true, calls))
    assert r.status == "ok" and r.converged
    for s in r.per_seed:
        assert s.status == "ok" and s.low <= n_true < s.high
        assert s.high / s.low <= 1.01 or s.high - s.low <= 1
        assert s.capacity == s.low
    assert r.mean == pytest.approx(np.mean(r.capacities)) and r.minimum <= r.mean <= r.maximum
    # a bisection (about log2 of the range over the resolution) after bracketing by factors 1.1
    bracketing = 0 if start_alpha is None else math.log(start_alpha * 32**2 / (n_true * math.log(n_true)))
    assert len(calls) <= 2 * (12 + abs(bracketing) / math.log(1.1) + 2)
    json.dumps(r.to_dict(), allow_nan=False)


@pytest.mark.parametrize("start_alpha", [None, 0.77])
@pytest.mark.parametrize("n_true, bound", [(5, "bottom"), (10**6, "top")])
def test_unbracketed_when_the_range_does_not_bracket(start_alpha, n_true, bound):
    r = ce_capacity(16, seeds=2, settings=CEProtocol(start_alpha=start_alpha),
                    trainer=_threshold_trainer(n_true))
    assert r.status == "unbracketed" and not r.converged
    assert all(s.status == "unbracketed" and math.isnan(s.capacity) for s in r.per_seed)
    assert math.isnan(r.mean) and bound in r.message
    low, high = search_range(16, CEProtocol())
    tested = {n for s in r.per_seed for n, _ in s.trials}
    assert (low if bound == "bottom" else high) in tested
    data = r.to_dict()
    text = json.dumps(data, allow_nan=False)
    assert data["mean"] is None and data["capacities"] == [None, None] and "unbracketed" in text


def test_one_unbracketed_seed_marks_the_result():
    def trainer(d, n, seed, settings, accuracy):   # seed number 0 -> n_true 50; 1 -> below range
        return 1.0 if n <= (50 if seed == trial_seed(7, 0, n) else 3) else 0.0
    r = ce_capacity(16, seeds=2, seed=7, trainer=trainer)
    assert r.status == "unbracketed" and [s.status for s in r.per_seed] == ["ok", "unbracketed"]
    assert r.mean == r.per_seed[0].capacity and math.isnan(r.std)


def test_result_contract():
    r = ce_capacity(16, seeds=1, trainer=_threshold_trainer(60))
    for obj in (r, r.per_seed[0]):
        assert obj.status in type(obj).STATUSES
        json.dumps(obj.to_dict(), allow_nan=False)
    assert isinstance(r, CECapacity) and isinstance(r.per_seed[0], SeedCapacity)
    assert r.settings == CEProtocol().to_dict() and r.seed == 20261130
    with pytest.raises(ValueError, match="status"):
        SeedCapacity(index=0, capacity=1.0, low=1.0, high=2.0, alpha=0.0, trials=(), status="bad",
                     converged=False, message="")


def test_seeds_and_fresh_instances():
    seen = []

    def trainer(d, n, seed, settings, accuracy):
        seen.append((n, seed))
        return 1.0 if n <= 60 else 0.0
    ce_capacity(16, seeds=2, seed=5, trainer=trainer)
    assert len({s for _, s in seen}) == len(set(seen))   # one instance per (seed number, N)
    assert trial_seed(5, 0, 60) == trial_seed(np.int64(5), 0, 60) != trial_seed(5, 1, 60)


def test_real_adam_end_to_end_is_reproducible():
    settings = CEProtocol(max_iter=256)
    a = ce_capacity(6, seeds=1, seed=3, settings=settings)
    b = ce_capacity(6, seeds=1, seed=3, settings=settings)
    assert a.capacities == b.capacities and a.per_seed[0].trials == b.per_seed[0].trials
    low, high = search_range(6, settings)
    assert a.status == "unbracketed" or low <= a.mean < high


@pytest.mark.parametrize("kwargs, name", [({"accuracy": 0.0}, "accuracy"), ({"accuracy": 1.01}, "accuracy"),
                                          ({"seeds": 0}, "seeds"), ({"seed": -1}, "seed"),
                                          ({"settings": {"learning_rate": 1}}, "settings")])
def test_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ce_capacity(16, trainer=_threshold_trainer(60), **kwargs)


def test_bad_dimension_and_settings():
    for d in (1, 0, 2.5):
        with pytest.raises(ValueError, match="d"):
            ce_capacity(d, trainer=_threshold_trainer(60))
    with pytest.raises(ValueError, match="d = 2"):   # [2, 2]: nothing to search
        ce_capacity(2, trainer=_threshold_trainer(60))
    for name, value in [("learning_rate", 0.0), ("resolution", -0.1), ("bracket_factor", 1.0),
                        ("ensemble", "cube"), ("start_alpha", 0.0)]:
        with pytest.raises(ValueError, match=name):
            CEProtocol(**{name: value})
