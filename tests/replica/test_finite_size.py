"""Tests of the finite-size (q -> 1, water-filling) capacity theory: replica.optimal.finite_size.

Reference values: closed forms derived in notes/finite_size_capacity.md, brute-force
minimisation (scipy minimize_scalar / SLSQP), one-dimensional quadrature, and plain
Monte Carlo with full normal vectors.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, optimize, special

from replica.asymptotic.extremes import order_statistics_from_uniforms
from replica.optimal.cost import CostEstimator, _conditional_expected_cost
from replica.optimal import Tolerances, capacity, expected_cost, max_margin, water_filling_cost
from replica.optimal.order_statistics import kept_order_statistics


# ----------------------------------------------------------------------------------------
# water_filling_cost
# ----------------------------------------------------------------------------------------
def _brute_force_cost(target, competitors, margin, top_k):
    """min over the exempted set (any top_k - 1 competitors) of min over L (1-d convex)."""
    competitors = list(competitors)
    best = math.inf
    for exempt in itertools.combinations(range(len(competitors)), top_k - 1):
        kept = np.array([c for i, c in enumerate(competitors) if i not in exempt])

        def objective(level, kept=kept):
            return max(level + margin - target, 0.0) ** 2 + float(np.sum(np.maximum(kept - level, 0.0) ** 2))

        lo = min(target - margin, kept.min()) - 1.0
        hi = max(target - margin, kept.max()) + 1.0
        res = optimize.minimize_scalar(objective, bounds=(lo, hi), method="bounded",
                                       options={"xatol": 1e-12, "maxiter": 2000})
        best = min(best, res.fun, objective(kept.max()), objective(target - margin))
    return best


finite = st.floats(min_value=-4.0, max_value=4.0, allow_nan=False, allow_infinity=False)


@given(target=finite,
       competitors=st.lists(finite, min_size=1, max_size=6),
       margin=st.floats(min_value=0.0, max_value=2.0),
       data=st.data())
def test_water_filling_matches_brute_force(target, competitors, margin, data):
    top_k = data.draw(st.integers(min_value=1, max_value=len(competitors)))
    exact = water_filling_cost(target, competitors, margin, top_k)
    brute = _brute_force_cost(target, competitors, margin, top_k)
    assert exact == pytest.approx(brute, rel=1e-8, abs=1e-9)


def test_water_filling_matches_direct_qp():
    """Independent check of the reduction to one level L: the full QP over shifted fields."""
    rng = np.random.default_rng(11)
    for _ in range(12):
        n = int(rng.integers(1, 7))
        t = rng.standard_normal(n + 1)
        margin = float(rng.uniform(0, 1))
        cons = [{"type": "ineq", "fun": (lambda h, r=r, m=margin: h[0] - h[r] - m)} for r in range(1, n + 1)]
        res = optimize.minimize(lambda h, t=t: np.sum((h - t) ** 2), t.copy(), jac=lambda h, t=t: 2 * (h - t),
                                constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
        assert res.success
        assert water_filling_cost(t[0], t[1:], margin) == pytest.approx(res.fun, rel=1e-6, abs=1e-9)


def test_water_filling_simple_values_and_shapes():
    # one competitor: (c + m - t)_+^2 / 2
    assert water_filling_cost(0.0, [1.0]) == pytest.approx(0.5)
    assert water_filling_cost(1.0, [0.0], margin=0.5) == 0.0
    assert water_filling_cost(0.0, [1.0], margin=1.0) == pytest.approx(2.0)
    # two equal competitors at 1, target 0: L = 2/3, cost = (2/3)^2 + 2 (1/3)^2 = 2/3
    assert water_filling_cost(0.0, [1.0, 1.0]) == pytest.approx(2.0 / 3.0)
    # top_k = 2 exempts the largest
    assert water_filling_cost(0.0, [5.0, 1.0], top_k=2) == pytest.approx(0.5)
    rng = np.random.default_rng(3)
    t = rng.standard_normal((4, 3))
    c = rng.standard_normal((4, 3, 7))
    out = water_filling_cost(t, c, 0.2, 2)
    assert out.shape == (4, 3)
    assert out[2, 1] == pytest.approx(float(water_filling_cost(t[2, 1], c[2, 1], 0.2, 2)))
    # broadcasting one competitor set against many targets
    assert water_filling_cost(np.zeros(5), c[0, 0]).shape == (5,)


@pytest.mark.parametrize("kwargs, word", [
    ({"margin": -0.1}, "margin"),
    ({"top_k": 0}, "top_k"),
    ({"top_k": 4}, "top_k"),
])
def test_water_filling_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        water_filling_cost(0.0, [1.0, 2.0, 3.0], **kwargs)


def test_water_filling_rejects_nonfinite():
    with pytest.raises(ValueError, match="finite"):
        water_filling_cost(0.0, [1.0, np.nan])


# ----------------------------------------------------------------------------------------
# Building blocks of expected_cost
# ----------------------------------------------------------------------------------------
def test_order_statistics_top1_is_the_extremes_map():
    u = np.random.default_rng(0).random((50, 6))
    np.testing.assert_array_equal(kept_order_statistics(1e5, 1, u), order_statistics_from_uniforms(1e5, u))


def test_order_statistics_top_k_law():
    """The kept block (order statistics 3, 4, 5 of 40) against sorted normal vectors."""
    from scipy import stats

    u = np.random.default_rng(1).random((20000, 3))
    kept = kept_order_statistics(40.0, 3, u)
    assert np.all(np.diff(kept, axis=1) <= 0)
    direct = -np.sort(-np.random.default_rng(2).standard_normal((20000, 40)), axis=1)[:, 2:5]
    for col in range(3):
        assert stats.ks_2samp(kept[:, col], direct[:, col]).pvalue > 1e-3


def test_conditional_cost_against_quadrature():
    """Closed-form E over t_1 of C given competitors == numerical integral of water_filling_cost."""
    rng = np.random.default_rng(5)
    for margin in (0.0, 0.7):
        kept = -np.sort(-rng.standard_normal((3, 8)) * 1.3, axis=1)
        value, trunc = _conditional_expected_cost(kept, margin, complete=True)
        assert np.all(trunc == 0)
        for row in range(3):
            def integrand(t, c=kept[row], m=margin):
                return float(water_filling_cost(t, c, m)) * math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
            ref, _ = integrate.quad(integrand, -12, 12, points=list(kept[row] + margin), limit=400,
                                    epsabs=1e-12, epsrel=1e-11)
            assert value[row] == pytest.approx(ref, rel=1e-8)


def test_truncation_bound_brackets_the_full_cost():
    """With only K of the competitors, lower <= true <= lower + bound."""
    rng = np.random.default_rng(6)
    full = -np.sort(-rng.standard_normal((200, 12)), axis=1)
    exact, _ = _conditional_expected_cost(full, 0.3, complete=True)
    for k in (1, 2, 4):
        lower, bound = _conditional_expected_cost(full[:, :k], 0.3, complete=False)
        assert np.all(lower <= exact + 1e-12)
        assert np.all(exact <= lower + bound + 1e-12)
        if k == 1:
            assert np.max(bound) > 1e-3  # a real gap: the check can fail


# ----------------------------------------------------------------------------------------
# expected_cost
# ----------------------------------------------------------------------------------------
def _two_field_closed_form(margin):
    # C_2 = (c + m - t)_+^2 / 2 with c - t ~ N(0, 2): E = [(m^2 + 2) Phi(m/sqrt2) + sqrt2 m phi(m/sqrt2)] / 2
    s = margin / math.sqrt(2.0)
    density = math.exp(-s * s / 2) / math.sqrt(2 * math.pi)
    return ((margin**2 + 2.0) * special.ndtr(s) + math.sqrt(2.0) * margin * density) / 2


@pytest.mark.parametrize("margin", [0.0, 0.4, 1.5])
def test_expected_cost_p2_exact(margin):
    result = expected_cost(2, margin)
    ref = _two_field_closed_form(margin)
    if margin == 0.0:
        assert ref == 0.5
    assert result.mean == pytest.approx(ref, abs=4 * result.stderr + 1e-10)
    assert result.converged and result.complete


@pytest.mark.parametrize("p, margin", [(6, 0.0), (6, 0.8), (40, 0.5)])
def test_expected_cost_top_k_p_minus_1(p, margin):
    """top_k = p - 1 leaves one constrained competitor, the minimum of p - 1:
    E[C] = E[g(c_min + m)] / 2 with g(a) = (a^2+1) Phi(a) + a phi(a) (quadrature over
    the density (p-1) phi(c) (1 - Phi(c))^(p-2) of the minimum)."""
    n = p - 1

    def integrand(c):
        a = c + margin
        g = (a * a + 1) * special.ndtr(a) + a * math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
        dens = n * math.exp(-c * c / 2) / math.sqrt(2 * math.pi) * special.ndtr(-c) ** (n - 1)
        return g * dens / 2

    ref, _ = integrate.quad(integrand, -15, 15, limit=400, epsabs=1e-13)
    result = expected_cost(p, margin, top_k=p - 1)
    assert result.mean == pytest.approx(ref, abs=4 * result.stderr + 1e-10)
    # nothing needs moving except for the margin: E[C] -> 0 as the minimum runs away
    assert result.mean < expected_cost(p, margin).mean


@pytest.mark.parametrize("p, margin, top_k", [(10, 0.0, 1), (10, 0.5, 3), (100, 0.0, 1), (100, 1.0, 2)])
def test_expected_cost_against_plain_monte_carlo(p, margin, top_k):
    rng = np.random.default_rng(1234 + p + top_k)
    n_mc = 40000 if p == 10 else 20000
    t = rng.standard_normal(n_mc)
    c = rng.standard_normal((n_mc, p - 1))
    mc = water_filling_cost(t, c, margin, top_k)
    mc_mean, mc_err = mc.mean(), mc.std(ddof=1) / math.sqrt(n_mc)
    result = expected_cost(p, margin, top_k)
    assert result.rel_stderr <= 1e-3
    assert abs(result.mean - mc_mean) <= 4.0 * math.hypot(mc_err, result.stderr)


def test_expected_cost_precision_and_truncation_at_large_p():
    for p in (1e4, 1e7):
        result = expected_cost(p)
        assert result.converged and result.rel_stderr <= 1e-3
        assert not result.complete
        assert result.truncation_bound <= 1e-6 * result.mean
        # E C_p < E[(M_{p-1} - t_1)_+^2] < 2 ln p (notes, section "Bounds")
        assert result.mean < 2 * math.log(p)


def test_expected_cost_reproducible_and_seed_dependent():
    a = expected_cost(500.0, seed=1)
    b = expected_cost(500.0, seed=1)
    c = expected_cost(500.0, seed=2)
    assert a.mean == b.mean
    assert a.mean != c.mean
    assert abs(a.mean - c.mean) <= 5 * math.hypot(a.stderr, c.stderr)


def test_p_times_cost_is_smooth_and_increasing_in_real_p():
    """Common random numbers: p E[C_p] increases with (real) p, also across the
    integer-interpolation regime below 33 competitors."""
    estimator = CostEstimator(0.0, 1, seed=1)  # one fixed sample, as capacity() uses
    ps = np.concatenate([np.linspace(2, 40, 77), np.geomspace(41, 1e5, 25)])
    values = np.array([p * estimator.estimate(p, 4096)[0] for p in ps])
    assert np.all(np.diff(values) > 0)
    # continuity where the method switches (33 competitors) and at integers
    near = [p * estimator.estimate(p, 4096)[0] for p in (33.0 - 1e-7, 33.0, 33.0 + 1e-7, 20.0 - 1e-9, 20.0)]
    assert near[0] == pytest.approx(near[1], rel=1e-6) and near[2] == pytest.approx(near[1], rel=1e-6)
    assert near[3] == pytest.approx(near[4], rel=1e-6)


@pytest.mark.parametrize("args, word", [
    ((1.5,), "p"),
    ((10, -0.5), "margin"),
    ((10, 0.0, 0), "top_k"),
    ((10, 0.0, 10), "top_k"),
])
def test_expected_cost_bad_input(args, word):
    with pytest.raises(ValueError, match=word):
        expected_cost(*args)


# ----------------------------------------------------------------------------------------
# capacity and max_margin
# ----------------------------------------------------------------------------------------
def test_capacity_solves_its_equation_and_decreases_to_half():
    previous = math.inf
    for d in (16, 64, 256):
        result = capacity(d)
        assert result.converged and result.residual <= 1e-9
        assert result.alpha_c == 0.5
        # independent estimate of E[C] at p_c (other seed): p_c E[C] = d^2 within the errors
        check = expected_cost(result.p_c, seed=7)
        rel = result.p_c * check.mean / d**2 - 1.0
        assert abs(rel) <= 4 * math.hypot(check.rel_stderr, result.expected_cost_stderr / result.expected_cost)
        assert result.alpha == pytest.approx(result.p_c * math.log(result.p_c) / d**2)
        assert 0.5 < result.alpha < previous
        previous = result.alpha
        assert 0 < result.stderr < 1e-2 * result.p_c


def test_capacity_stderr_is_honest():
    """Two seeds agree within their combined standard errors."""
    a, b = capacity(64, seed=3), capacity(64, seed=4)
    assert abs(a.p_c - b.p_c) <= 4 * math.hypot(a.stderr, b.stderr)
    assert a.p_c != b.p_c


def test_capacity_small_d_and_rank_margin_top_k():
    tiny = capacity(2)
    assert tiny.converged and 2 < tiny.p_c < 10
    base = capacity(32)
    low_rank = capacity(32, kappa=0.5)
    # alpha_c = F/2 from the closed form (notes/alpha_c_kappa.md)
    assert low_rank.alpha_c == pytest.approx(0.446865, abs=1e-6)
    assert low_rank.p_c < base.p_c
    assert capacity(32, margin=0.5).p_c < base.p_c
    assert capacity(32, top_k=3).p_c > base.p_c


def test_capacity_fast_at_large_d():
    result = capacity(100_000)
    assert result.converged
    assert 0.5 < result.alpha < 0.7


@pytest.mark.parametrize("kwargs, word", [
    ({"d": 1}, "d"),
    ({"d": 16, "kappa": 0.0}, "kappa"),
    ({"d": 16, "kappa": 1.2}, "kappa"),
    ({"d": 16, "margin": -1.0}, "margin"),
    ({"d": 16, "top_k": 0}, "top_k"),
])
def test_capacity_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        capacity(**kwargs)


def test_capacity_below_smallest_p_is_an_error():
    with pytest.raises(ValueError, match="below p = 2"):
        capacity(2, kappa=0.01)
    with pytest.raises(ValueError, match="top_k = 3"):
        capacity(2, kappa=0.01, top_k=3)
    # a large top_k is allowed as long as p_c > top_k + 1 (target among the 50 best)
    assert capacity(4, top_k=50).p_c > 51


def test_max_margin_inverts_capacity():
    d = 32
    cap = capacity(d)
    at = max_margin(d, cap.p_c)
    assert at.converged and at.residual <= 1e-9
    assert abs(at.margin) <= 4 * at.stderr + 1e-3
    below = max_margin(d, 0.7 * cap.p_c, scale_fluctuations=False)
    above = max_margin(d, 1.3 * cap.p_c)
    assert below.storable and below.margin > 0
    assert not above.storable and above.margin < 0
    # consistency: capacity at that margin gives back the load
    back = capacity(d, margin=below.margin)
    assert back.p_c == pytest.approx(0.7 * cap.p_c, rel=5e-3)


@pytest.mark.parametrize("ensemble", ["gaussian", "sphere"])
def test_max_margin_vanishes_at_the_capacity_of_its_ensemble(ensemble):
    # k = 0 is the capacity equation (E s^2 = 1 on the quadrature), so the margin is 0 at p_c
    cap = capacity(16, ensemble=ensemble)
    at = max_margin(16, cap.p_c, ensemble=ensemble)
    assert at.converged and at.ensemble == ensemble
    assert abs(at.margin) <= 4 * at.stderr + 2e-3


def test_max_margin_decreases_with_the_load_and_lies_below_the_fixed_scale_value():
    values = [max_margin(16, p, options=Tolerances(rel_tol=1e-2)).margin for p in (12.0, 25.0, 40.0)]
    assert values[0] > values[1] > values[2] > 0
    fixed = max_margin(16, 25.0, options=Tolerances(rel_tol=1e-2), scale_fluctuations=False).margin
    assert values[1] < fixed


def test_block_scales_reproduce_the_closed_form_moments():
    from replica.optimal.finite_size import block_scales, shape_variance
    from replica.asymptotic.spectra import spectrum

    # r = |e|^2 for e ~ N(0, I/d): mean 1, variance 2/d (chi-square); s^2: mean 1 and
    # 2 (E lambda^2 - 1)/(d + 2) with E lambda^2 = 2 for the quarter circle (closed form)
    d = 16
    g = block_scales(d, 1.0, "gaussian")
    assert g.weight.sum() == pytest.approx(1.0, abs=1e-13)
    assert np.dot(g.weight, g.norm) == pytest.approx(1.0, abs=1e-12)
    assert np.dot(g.weight, (g.norm - 1.0) ** 2) == pytest.approx(2.0 / d, rel=1e-10)
    assert np.dot(g.weight, g.shape) == pytest.approx(1.0, abs=1e-12)
    assert shape_variance(d, 1.0) == pytest.approx(2.0 / (d + 2.0), rel=1e-10)
    sphere = block_scales(d, 1.0, "sphere")
    assert np.all(sphere.norm == 1.0) and len(sphere.weight) == 4
    # independent Monte Carlo of s^2 = v^T Lambda v with v uniform on the sphere and the
    # d quantiles of the Marchenko-Pastur(1) eigenvalue law: its variance is the formula's
    rng = np.random.default_rng(5)
    lam = spectrum(1.0).ppf((np.arange(d) + 0.5) / d) ** 2
    lam /= lam.mean()
    v = rng.standard_normal((200000, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    s2 = (v * v * lam).sum(axis=1)
    exact = 2.0 * (np.mean(lam**2) - 1.0) / (d + 2.0)
    assert s2.var() == pytest.approx(exact, rel=0.02)


def test_max_margin_bad_ensemble():
    with pytest.raises(ValueError, match="ensemble"):
        max_margin(16, 20.0, ensemble="cube")


def test_max_margin_bad_input():
    with pytest.raises(ValueError, match="p"):
        max_margin(16, 1.0)
    with pytest.raises(ValueError, match="d"):
        max_margin(1, 10.0)


def test_results_follow_the_result_contract():
    cost = expected_cost(50.0)
    assert cost.status == "converged" and cost.converged
    short = expected_cost(50.0, rel_tol=1e-5, max_iter=1)  # one round of 2048 samples is too few
    assert short.status == "max_iter" and not short.converged and "relative stderr" in short.message
    cap = capacity(16)
    assert cap.status == "converged" and "residual" in cap.message
    cap_short = capacity(16, max_iter=1)  # the secant search needs more than one step
    assert cap_short.status == "max_iter" and not cap_short.converged
    strict = capacity(16, tol=1e-300)
    assert strict.status in ("converged", "not_converged")
    margin = max_margin(32, 150.0)
    assert margin.status == "converged" and margin.storable
    margin_short = max_margin(32, 150.0, options=Tolerances(max_iter=1))
    assert margin_short.status == "max_iter"
    fields = {f.name: getattr(cap, f.name) for f in dataclasses.fields(cap)}
    failed = type(cap)(**{**fields, "status": "not_converged", "converged": False, "p_c": math.nan,
                          "stderr": math.inf, "residual": math.nan})
    for res in (cost, short, cap, cap_short, strict, margin, margin_short, failed):
        assert res.status in type(res).STATUSES
        json.dumps(res.to_dict(), allow_nan=False)
    assert failed.to_dict()["p_c"] is None
    with pytest.raises(ValueError, match="status"):
        type(cap)(**{**fields, "status": "done"})


def test_seed_policy_and_accuracy_arguments():
    default = expected_cost(40.0)
    assert default.seed == 20261130 and expected_cost(40.0, seed=20261130).mean == default.mean
    from_generator = expected_cost(40.0, seed=np.random.default_rng(3))
    assert from_generator.seed == np.random.default_rng(3).integers(0, 2**63 - 1, endpoint=True)
    for kwargs, word in (({"tol": 0.0}, "tol"), ({"max_iter": 0}, "max_iter"), ({"seed": -1}, "seed"),
                         ({"rel_tol": 1.0}, "rel_tol")):
        with pytest.raises(ValueError, match=word):
            capacity(16, **kwargs)


def test_default_model_keywords_keep_todays_numbers():
    """``outputs=None``, ``problem`` and ``ensemble="gaussian"`` are today's capacity, bit for bit.

    Reference: notes/finite_size_capacity.md, section 5 (d = 16: 61.63 +- 0.04; the digits
    below are this implementation with the default seed, unchanged by the model keywords).
    """
    base = capacity(16)
    assert base.p_c == pytest.approx(61.634695, abs=1e-6) and base.stderr == pytest.approx(0.042189, abs=1e-6)
    for kwargs in ({"outputs": None}, {"problem": "op"}, {"problem": "dp", "ensemble": "gaussian"}):
        other = capacity(16, **kwargs)
        assert (other.p_c, other.stderr, other.expected_cost) == (base.p_c, base.stderr, base.expected_cost)
    assert base.outputs is None and base.ensemble == "gaussian" and base.effective_weights == 256
    assert capacity(16, problem="op").problem == "op"
    with pytest.raises(TypeError, match="rel_tl"):  # the accuracy keywords are checked by name
        capacity(16, rel_tl=1e-3)


# ----------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------
def test_cli_capacity_json_rows_decrease_towards_half(capsys):
    import json

    from replica.cli import main

    assert main(["capacity", "--d", "16", "32", "64", "128", "256", "1024", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["d"] for r in rows] == [16, 32, 64, 128, 256, 1024]
    for key in ("d", "kappa", "p_c", "alpha", "alpha_c", "stderr"):
        assert key in rows[0]
    alphas = [r["alpha"] for r in rows]
    assert all(a > b for a, b in zip(alphas, alphas[1:])) and alphas[-1] > 0.5
    assert rows[0]["p_c"] == pytest.approx(capacity(16).p_c, rel=1e-12)  # same default seed


@pytest.mark.parametrize("argv", [["--d", "1"], ["--d", "16", "--kappa", "0"], ["--d", "16", "--margin", "-1"],
                                  ["--d", "16", "--top-k", "0"]])
def test_cli_capacity_bad_input_exits_2(argv, capsys):
    from replica.cli import main

    assert main(["capacity"] + argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error" in err
