"""Tests of the capacity with K distinct outputs: replica.optimal.outputs and replica.capacity(outputs=K).

Reference values: Cover's function-counting theorem (K = 2, original problem), the closed
form E[C_2] = 1/2 and its margin version checked by quadrature, plain Monte Carlo of
water_filling_cost with full normal vectors, and today's capacity (one answer per fact).
The derivation is in notes/many_to_one.md.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

import replica
from replica.optimal.finite_size import capacity, water_filling_cost
from replica.optimal.outputs import capacity_many_to_one, effective_weights, two_field_cost


# ----------------------------------------------------------------------------------------
# K = 2: Cover's theorem
# ----------------------------------------------------------------------------------------
def _cover_probability(d, p):
    """P(p points in general position in R^d, fixed labels, are homogeneously separable) = C(p, d) / 2^p."""
    return float(stats.binom.cdf(d - 1, p - 1, 0.5))


@pytest.mark.parametrize("d", [2, 3, 16, 32, 100, 1024])
def test_two_outputs_original_problem_is_cover(d):
    result = capacity(d, outputs=2, problem="op")
    assert abs(result.p_c - 2 * d) <= 1e-12 * d
    assert result.stderr == 0.0 and result.status == "converged" and result.effective_weights == d
    assert _cover_probability(d, 2 * d) == pytest.approx(0.5, abs=1e-12)  # Cover's 50 % point is p = 2d
    assert _cover_probability(d, 2 * d - 2) > 0.5 > _cover_probability(d, 2 * d + 2)
    # the decoupled problem with two candidates per input keeps all d^2 weights
    assert capacity(d, outputs=2, problem="dp").p_c == pytest.approx(2 * d * d, rel=1e-12)


def test_two_field_cost_closed_form():
    assert two_field_cost(0.0) == 0.5
    for m in (0.1, 0.7, 2.5):
        # C_2 = (c + m - t)_+^2 / 2 with c - t ~ N(0, 2)
        ref, _ = integrate.quad(lambda x, m=m: (x + m) ** 2 * stats.norm.pdf(x, scale=math.sqrt(2.0)) / 2.0,
                                -m, np.inf, epsabs=1e-14)
        assert two_field_cost(m) == pytest.approx(ref, rel=1e-10)
        assert capacity(16, margin=m, outputs=2, problem="op").p_c == pytest.approx(16 / ref, rel=1e-10)


# ----------------------------------------------------------------------------------------
# the block of K fields
# ----------------------------------------------------------------------------------------
def test_block_cost_matches_plain_monte_carlo():
    rng = np.random.default_rng(5)
    for K in (4, 9):
        fields = rng.standard_normal((400_000, K))
        plain = water_filling_cost(fields[:, 0], fields[:, 1:])
        se = plain.std() / math.sqrt(plain.size)
        result = capacity(16, outputs=K, problem="dp")
        assert abs(result.expected_cost - plain.mean()) <= 4 * math.hypot(se, result.expected_cost_stderr)
        assert result.p_c == pytest.approx(16**2 / result.expected_cost, rel=1e-14)
        op = capacity(16, outputs=K, problem="op")
        assert op.p_c == pytest.approx(16 * (K - 1) / op.expected_cost, rel=1e-14)


def test_effective_weights():
    assert effective_weights(16, 2) == 16
    assert effective_weights(16, 16) == 16 * 15
    assert effective_weights(16, 17) == effective_weights(16, 1000) == 256
    assert effective_weights(16, 3, "dp") == 256


@pytest.mark.parametrize("d", [16, 32])
def test_monotonicity_in_outputs(d):
    ks = sorted({2, 3, 4, 8, d // 2, d - 1, d, d + 1, d + 2, 2 * d, 4 * d})
    op = [capacity(d, outputs=k, problem="op").p_c for k in ks]
    dp = [capacity(d, outputs=k, problem="dp").p_c for k in ks]
    assert all(a > b for a, b in zip(dp, dp[1:]))  # more competitors per block
    rise = ks.index(d + 1)
    assert all(a < b for a, b in zip(op[:rise], op[1:rise + 1]))  # more effective weights
    assert all(a > b for a, b in zip(op[rise:], op[rise + 1:]))  # then only more competitors
    assert all(o <= q for o, q in zip(op, dp))
    assert all(o == q for o, q, k in zip(op, dp, ks) if k > d)
    full = capacity(d).p_c  # K >= p_c: one answer per fact at capacity
    assert all(o > k if k < full else o == full for o, k in zip(op, ks))


@pytest.mark.parametrize("d", [16, 32])
def test_many_outputs_reduce_to_one_answer_per_fact(d):
    base = capacity(d)
    for problem in ("op", "dp"):
        for k in (math.ceil(base.p_c), 10 * d * d):
            result = capacity(d, outputs=k, problem=problem)
            assert result.p_c == base.p_c and result.stderr == base.stderr and result.outputs == k
    # the decoupled problem with K = p candidates is today's theory (K just below p_c)
    below = capacity(d, outputs=math.floor(base.p_c), problem="dp")
    assert below.p_c >= base.p_c and below.p_c == pytest.approx(base.p_c, rel=1e-2)


def test_capacity_many_to_one_front_end_and_rank():
    a = capacity_many_to_one(32, 8, "op")
    assert a == capacity(32, outputs=8, problem="op")
    assert a == replica.optimal.capacity_many_to_one(32, 8)
    # K <= kappa d: the rank does not bind V = U^T W
    assert capacity(32, 0.5, outputs=8, problem="op").p_c == a.p_c
    low = capacity(32, 0.5, outputs=40, problem="op")
    assert low.tail_second_moment == pytest.approx(0.893730, abs=1e-6)  # F(1/2), notes/alpha_c_kappa.md
    assert low.p_c < capacity(32, outputs=40, problem="op").p_c


@pytest.mark.parametrize("kwargs, words", [
    ({"outputs": 1}, ("outputs", "1", "[2,")),
    ({"outputs": 2.5}, ("outputs", "2.5")),
    ({"outputs": 4, "problem": "shared"}, ("problem", "'op'", "'shared'")),
    ({"outputs": 4, "top_k": 4}, ("top_k", "[1, 3]", "4")),
    ({"outputs": 12, "problem": "op", "kappa": 0.5}, ("kappa", "[0.75, 1]", "0.5")),
    ({"outputs": 4, "ensemble": "uniform"}, ("ensemble", "'sphere'", "'uniform'")),
    ({"problem": "shared"}, ("problem", "'op', 'dp'", "'shared'")),  # checked without outputs too
])
def test_bad_input(kwargs, words):
    with pytest.raises(ValueError) as info:
        capacity(16, **kwargs)
    for word in words:
        assert word in str(info.value)
    with pytest.raises(ValueError, match="problem"):
        effective_weights(16, 4, "xx")


def test_result_contract():
    ok = capacity(16, outputs=4, problem="dp")
    assert ok.status in type(ok).STATUSES and ok.converged
    payload = json.loads(json.dumps(ok.to_dict(), allow_nan=False))
    assert payload["alpha_c"] is None and payload["outputs"] == 4 and payload["effective_weights"] == 256
    exact = capacity(16, outputs=2, problem="op")  # closed form, no sample
    failed = dataclasses.replace(ok, status="not_converged", converged=False, p_c=math.nan, stderr=math.inf)
    for res in (ok, exact, failed):
        assert res.status in type(res).STATUSES
        json.dumps(res.to_dict(), allow_nan=False)
    assert failed.to_dict()["p_c"] is None


# ----------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------
def test_cli_outputs(capsys):
    from replica.cli import main

    assert main(["capacity", "--d", "16", "--outputs", "2", "--problem", "op", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["p_c"] == 32.0 and row["outputs"] == 2 and row["problem"] == "op" and row["ensemble"] == "gaussian"
    assert main(["capacity", "--d", "16", "--outputs", "4", "--format", "csv"]) == 0
    assert "outputs,problem,ensemble,effective_weights" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("argv", [["--outputs", "1"], ["--outputs", "12", "--problem", "op", "--kappa", "0.5"],
                                  ["--problem", "shared"], ["--outputs", "4", "--top-k", "5"]])
def test_cli_bad_input_exits_2(argv, capsys):
    from replica.cli import main

    assert main(["capacity", "--d", "16"] + argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error" in err
