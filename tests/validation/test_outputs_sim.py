"""Simulation with K distinct answers shared by the facts (``make_instance(outputs=K)``).

Reference values: Cover's function-counting theorem (at K = 2 the OP is a homogeneous
perceptron on p points in R^d, P(stored) = P(Bin(p - 1, 1/2) <= d - 1), exactly 1/2 at
p = 2d; ``notes/many_to_one.md``); the hashes of the default instances were computed
with the package at commit 4a468d5, before ``outputs`` existed.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom

from validation import EmbeddingModel, FactSettings, make_instance, solve
from validation.capacity import CapacityDesign, CapacityOptions, estimate_capacity, theory_capacity
from validation.measurements.recall import recall_check, top_competitors


def _hash(a):
    return hashlib.sha1(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()[:16]


# (problem, ensemble) -> hashes of inputs, targets, scores(W), candidates(3) of
# make_instance(12, 30, problem, ensemble, seed=7, generator=1), computed at commit 4a468d5
_BEFORE = {
    ("op", "gaussian"): ("9e08120ee6a88c38", "bb052276fccdae91", "3b2aa55f3dba0c0b", "bb052276fccdae91"),
    ("op", "sphere"): ("d9a06060f6c90407", "0dfe853648d3c4e9", "ce249c98c6568f11", "0dfe853648d3c4e9"),
    ("dp", "gaussian"): ("9e08120ee6a88c38", "7dffec5f2aabf106", "0de148d102c4d071", "5d15a6da4fb401b7"),
    ("dp", "sphere"): ("d9a06060f6c90407", "9c6dd5c95281f404", "39064ae8dfec2bb1", "c1e63510c8017331"),
}
_W = np.arange(144.0).reshape(12, 12) / 100 - 0.5


@pytest.mark.parametrize("problem, ensemble", sorted(_BEFORE))
def test_default_instances_bit_identical(problem, ensemble):
    inst = make_instance(12, 30, problem, seed=7, generator=1, embeddings=EmbeddingModel(ensemble),
                         facts=FactSettings(outputs=None))
    got = (_hash(inst.inputs), _hash(inst.targets), _hash(inst.scores(_W)), _hash(inst.candidates(3)))
    assert got == _BEFORE[(problem, ensemble)]
    assert inst.outputs is None and inst.n_candidates == 30 and "outputs" not in inst.to_dict()


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_outputs_p_with_identity_map_is_the_default_problem(problem):
    base = make_instance(10, 25, problem, seed=3)
    full = make_instance(10, 25, problem, seed=3, facts=FactSettings(outputs=25))
    assert np.array_equal(base.targets, full.targets)
    assert np.array_equal(base.scores(_W[:10, :10]), full.scores(_W[:10, :10]))
    for solver in ("hebbian", "lp", "optimal"):
        a, b = solve(base, solver), solve(full, solver)
        assert (a.status, a.iterations) == (b.status, b.iterations)
        assert np.array_equal(a.matrix(), b.matrix())


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_instance_structure(problem):
    K = 5
    inst = make_instance(8, 23, problem, seed=11, facts=FactSettings(outputs=K))
    f = inst.target_index
    assert np.array_equal(f, np.arange(23) % K)
    assert inst.n_candidates == K and inst.to_dict()["outputs"] == K
    json.dumps(inst.to_dict(), allow_nan=False)
    W = np.random.default_rng(0).standard_normal((8, 8))
    S = inst.scores(W)
    assert S.shape == (K, 23)
    for mu in range(23):
        cand = inst.candidates(mu)
        assert cand.shape == (K, 8)
        assert np.array_equal(cand[f[mu]], inst.targets[mu])  # bit for bit
        np.testing.assert_allclose(S[:, mu], cand @ W @ inst.inputs[mu], rtol=1e-12, atol=1e-12)
    if problem == "op":  # every input sees the same K outputs
        assert np.array_equal(inst.candidates(0), inst.candidates(7))
    else:  # own candidates per input
        assert not np.array_equal(inst.candidates(0), inst.candidates(7))


def test_user_map_and_hebbian():
    f = np.array([2, 0, 1, 1, 0, 2, 2, 2, 1, 0], dtype=np.int32)
    inst = make_instance(6, 10, "op", seed=2, facts=FactSettings(outputs=3, targets=f))
    assert np.array_equal(inst.target_index, f)
    assert np.array_equal(inst.targets, inst.output_vectors[f])
    W = solve(inst, "hebbian").matrix()
    ref = sum(np.outer(inst.output_vectors[f[mu]], inst.inputs[mu]) for mu in range(10))
    np.testing.assert_allclose(W, ref, rtol=1e-12, atol=1e-14)


def _brute_force(S, t):
    recalled, margins = [], []
    for mu in range(S.shape[1]):
        others = np.delete(S[:, mu], t[mu])
        recalled.append(bool(S[t[mu], mu] > others.max()))
        margins.append(S[t[mu], mu] - others.max())
    return np.array(recalled), np.array(margins)


@pytest.mark.parametrize("seed", range(5))
def test_recall_against_brute_force_argmax(seed):
    rng = np.random.default_rng(seed)
    K, p = 4, 40
    S = np.round(rng.standard_normal((K, p)), 1)  # rounding makes ties
    t = rng.integers(0, K, p)
    S[t[:3], np.arange(3)] = S[(t[:3] + 1) % K, np.arange(3)]  # explicit ties: failures
    recalled, margins = recall_check(S, t)
    ref_r, ref_m = _brute_force(S, t)
    assert np.array_equal(recalled, ref_r) and not recalled[:3].any()
    np.testing.assert_array_equal(margins, ref_m)
    idx, val = top_competitors(S, t)
    assert np.all(idx != t)
    np.testing.assert_array_equal(val, S[idx, np.arange(p)])
    np.testing.assert_array_equal(S[t, np.arange(p)] - val, ref_m)


@pytest.mark.parametrize("problem", ["op", "dp"])
@pytest.mark.parametrize("K", [2, 4])
def test_optimal_and_lp_agree(problem, K):
    for seed in range(6):
        inst = make_instance(8, 18, problem, seed=seed, facts=FactSettings(outputs=K))
        lp, opt = solve(inst, "lp"), solve(inst, "optimal")
        assert lp.status == opt.status != "undecided"
        if opt.status == "stored":  # the certificate: float64 recall of every input
            assert recall_check(inst.scores(opt.matrix()), inst.target_index)[0].all()


def _cover(d, p):
    return float(binom.cdf(d - 1, p - 1, 0.5))


def _stored_count(d, p, n, solver):
    return sum(solve(make_instance(d, p, "op", seed=seed, facts=FactSettings(outputs=2)), solver).status == "stored"
               for seed in range(n))


def test_cover_at_two_outputs():
    d, p, n = 8, 16, 200
    assert _cover(d, p) == pytest.approx(0.5, abs=1e-15)
    k = _stored_count(d, p, n, "lp")
    assert abs(k - n / 2) <= 3.5 * math.sqrt(n / 4)  # 3.5 binomial standard deviations
    # negative control: well above 2d Cover gives P = 0.0466, far from 1/2
    k_high = _stored_count(d, 24, 100, "optimal")
    assert abs(k_high - 100 * _cover(d, 24)) <= 3.5 * math.sqrt(100 * _cover(d, 24) * (1 - _cover(d, 24)))
    assert k_high < 25


@pytest.mark.slow
def test_cover_at_two_outputs_d16():
    d, p, n = 16, 32, 400
    k = _stored_count(d, p, n, "optimal")
    assert abs(k - n / 2) <= 3.5 * math.sqrt(n / 4)


def test_capacity_carries_outputs():
    th = theory_capacity(8, "optimal", outputs=2, problem="op")
    assert th["p_c"] == pytest.approx(16.0, rel=1e-9)  # Cover: P = 1/2 at p = 2d
    assert math.isnan(theory_capacity(8, "hebbian", outputs=2)["p_c"])
    est = estimate_capacity(8, "op", "lp", seed=1, design=CapacityDesign(trials=6, rounds=0),
                            options=CapacityOptions(outputs=2, progress=False))
    assert est.outputs == 2 and "outputs" not in est.solver_options
    assert est.theory["source"].startswith("replica.capacity(outputs=2")
    data = json.loads(json.dumps(est.to_dict(), allow_nan=False))
    assert data["outputs"] == 2


@pytest.mark.parametrize("kwargs, name", [
    ({"outputs": 1}, "outputs"),
    ({"outputs": 11}, "outputs"),
    ({"outputs": 2.5}, "outputs"),
    ({"outputs": 3, "targets": np.zeros(9, dtype=int)}, "targets"),
    ({"outputs": 3, "targets": np.zeros(10)}, "targets"),
    ({"outputs": 3, "targets": np.full(10, 3)}, "targets"),
    ({"outputs": 3, "targets": np.full(10, -1)}, "targets"),
    ({"outputs": 3, "targets": np.arange(10) % 2}, "targets"),  # output 2 answers no fact
    ({"targets": np.arange(10) % 2}, "targets"),
])
def test_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_instance(6, 10, "op", seed=0, facts=FactSettings(**kwargs))


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_adam_with_outputs(problem):
    # below capacity: replica.capacity(8, outputs=4, problem=...) gives p_c = 22 (OP), 59 (DP)
    inst = make_instance(8, 16, problem, seed=0, facts=FactSettings(outputs=4))
    sol = solve(inst, "adam")
    assert sol.status == "stored"
    assert recall_check(inst.scores(sol.matrix()), inst.target_index)[0].all()


def test_adam_with_outputs_cli():
    run = subprocess.run([sys.executable, "-m", "validation", "solve", "--d", "12", "--p", "24",
                          "--solver", "adam", "--outputs", "4", "--seed", "1", "--format", "json"],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["status"] == "stored" and data["recall_fraction"] == 1.0


def test_bad_recall_targets():
    S = np.zeros((3, 5))
    with pytest.raises(ValueError, match="targets"):
        recall_check(S, np.array([0, 1, 2, 3, 0]))
    with pytest.raises(ValueError, match="targets"):
        recall_check(S, np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="scores"):
        recall_check(S)  # 3 rows < 5 columns without targets
