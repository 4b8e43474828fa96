"""Replica-symmetric saddle point of the decoupled problem.

References used below, each independent of the code path it checks:

* ``scipy.special.log_ndtr`` and ``scipy.integrate.quad`` (adaptive quadrature of the
  same integrals, written out directly in the test);
* the Gaussian convolution identity ``Int Dx Phi(a + x) = Phi(a / sqrt 2)`` (a block
  with a single competitor), which makes ``p = 2`` the Gardner perceptron with load
  ``2/d^2`` and stability ``margin / sqrt 2``; its saddle point is solved here by
  1-D quadrature and ``brentq``;
* blocks with every competitor sampled explicitly (``exact_competitors = p - 1``)
  against the default treatment of the competitors below the 64 largest;
* the water-filling cost ``replica.optimal.finite_size.water_filling_cost`` (the q -> 1 limit)
  and ``replica.optimal.finite_size.capacity`` (an independent estimator of ``E[C_p]``).

Derivations: ``notes/replica_saddle.md``.
"""

import dataclasses
import json
import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize, special

from replica.saddle import _kernels as kernels
from replica.saddle import sample as saddle_sample
from replica.saddle.point import (
    ReplicaSample,
    SaddlePoint,
    free_entropy,
    free_entropy_derivative,
    saddle_point,
    sample_capacity,
)


@pytest.fixture(scope="module")
def sample():
    return ReplicaSample(256)


# --------------------------------------------------------------------------------------
# special functions and single-block integrals
# --------------------------------------------------------------------------------------
def test_log_ndtr_and_mills_ratio_match_scipy():
    grid = np.concatenate([np.linspace(-60, 40, 2001), [-29.999, -30.0, -30.001, -1e-9, 0.0, 1e-9]])
    ref_log = special.log_ndtr(grid)
    ref_ratio = np.exp(-0.5 * grid**2 - 0.5 * math.log(2 * math.pi) - ref_log)
    ours = np.array([kernels._log_ndtr_mills(u) for u in grid])
    big = np.abs(ref_log) > 1e-300
    # both are within ~2e-13 of mpmath (dps=60) in the far right tail, u ~ 36
    assert np.max(np.abs(ours[big, 0] - ref_log[big]) / np.abs(ref_log[big])) < 1e-12
    assert np.max(np.abs(ours[:, 1] - ref_ratio) / np.maximum(ref_ratio, 1e-300)) < 1e-12
    slope = np.array([kernels._mills_slope(u, r) for u, r in zip(grid, ours[:, 1])])
    assert np.all((slope <= 0) & (slope > -1))
    # d/du (phi/Phi) = -r (u + r): mpmath (dps=50) on both sides of the series switch at -30
    with mpmath.workdps(50):
        for u in (-45.0, -30.5, -29.5, -3.0, 0.0, 2.0):
            r = mpmath.npdf(u) / mpmath.ncdf(u)
            ref = float(-r * (u + r))
            assert kernels._mills_slope(u, kernels._mills(u)) == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("q", [0.1, 0.6, 0.99, 0.9999])
def test_single_competitor_block_is_closed_form(sample, q):
    # Int Dx Phi(a + x) = Phi(a / sqrt(2)), a = (sqrt(q) (t1 - t2) - margin) / sqrt(1 - q)
    margin = 0.3
    blk = sample.blocks(2)
    log_z, _, info = sample.log_partition(2, q, margin, derivative=False, control=False)
    exact = special.log_ndtr((math.sqrt(q) * (blk.target - blk.tops[:, 0]) - margin)
                             / math.sqrt(2 * (1 - q)))
    assert np.all(info[:, 4] == 0)
    assert np.max(np.abs(log_z - exact) / np.maximum(1.0, np.abs(exact))) < 1e-12


def _log_z_by_quad(q, margin, target, competitors):
    """ln Int Dx prod Phi(x + c_rho), scipy.quad around a grid-located maximum."""
    c = (math.sqrt(q) * (target - competitors) - margin) / math.sqrt(1 - q)

    def h(x):
        return -0.5 * x * x + special.log_ndtr(x + c).sum()

    xs = np.linspace(-10, 400, 41001)
    hs = np.array([h(x) for x in xs])
    x0, h0 = xs[hs.argmax()], hs.max()
    val, _ = integrate.quad(lambda x: math.exp(h(x) - h0), x0 - 60, x0 + 60, points=[x0],
                            limit=500, epsabs=0, epsrel=1e-13)
    return h0 + math.log(val) - 0.5 * math.log(2 * math.pi)


@pytest.mark.parametrize("q", [0.05, 0.5, 0.95, 0.9995])
def test_log_partition_matches_adaptive_quadrature(q):
    small = ReplicaSample(16, seed=3)
    p = 9  # 8 explicit competitors per block
    blk = small.blocks(p)
    log_z, _, _ = small.log_partition(p, q, 0.2, derivative=False, control=False)
    for i in range(3):
        ref = _log_z_by_quad(q, 0.2, blk.target[i], blk.tops[i])
        assert abs(log_z[i] - ref) <= 1e-10 * max(1.0, abs(ref))


@pytest.mark.parametrize("q", [1e-4, 0.3, 0.9, 0.999, 0.99999])
def test_bulk_conditional_integral_matches_quad(q):
    # (n-K) E[log Phi(u(x, t)) | t < T] for one top competitor at T and bulk weight 1
    margin, t1 = 0.2, 0.7
    sq, ss = math.sqrt(q), math.sqrt(1 - q)
    gl = saddle_sample._GL_T
    for top in (0.5, 3.5):
        for x in (-2.0, 0.0, 3.0, 20.0):
            out = np.empty(4)
            kernels._field_sum(x, sq, ss, margin, t1, np.array([top]), 1.0, special.ndtr(top), True,
                               gl[0], gl[1], out)
            bulk = out[0] - special.log_ndtr(x + (sq * (t1 - top) - margin) / ss)

            def f(t, x=x):
                return special.log_ndtr(x + (sq * (t1 - t) - margin) / ss) * math.exp(-t * t / 2)

            crossing = (sq * t1 - margin + ss * x) / sq
            pts = [v for v in crossing + ss / sq * np.arange(-12, 13) if -40 < v < top]
            ref = integrate.quad(f, -40, top, points=pts or None, limit=2000, epsabs=1e-300,
                                 epsrel=1e-13)[0] / math.sqrt(2 * math.pi) / special.ndtr(top)
            assert abs(bulk - ref) <= max(1e-10 * abs(ref), 1e-13)


def test_bulk_of_competitors_matches_explicit_sample():
    # Same uniforms: the 64 largest coincide, the rest is explicit in `full`.
    p, m = 200, 48
    full = ReplicaSample(m, seed=7, exact_competitors=p - 1)
    part = ReplicaSample(m, seed=7, exact_competitors=64)
    assert np.array_equal(part.uniforms, full.uniforms[:, :64])
    for q in (0.3, 0.8):
        a, da, _ = part.log_partition(p, q)
        b, db, _ = full.log_partition(p, q)
        diff = b - a
        # the bias is second order in the bulk's fluctuation: measured ~3e-4 (notes)
        assert abs(diff.mean()) < 3e-3
        assert abs(db.mean() - da.mean()) < 2e-3 * abs(db.mean())
        estimate = part.bulk_fluctuation(p, q).mean()
        assert 0.0 <= estimate < 2e-3


# --------------------------------------------------------------------------------------
# the free entropy and its derivative
# --------------------------------------------------------------------------------------
def test_free_entropy_at_zero_overlap_is_log_of_extreme_value_probability(sample):
    # q = 0: Z = Int Dx Phi(x)^n = 1/p exactly (margin 0), so phi(0) = -(p/d^2) ln p
    for p in (2, 7, 40):
        assert free_entropy(16, p, 0.0, sample=sample) == pytest.approx(-p / 256 * math.log(p),
                                                                        rel=1e-12)


def test_derivative_matches_finite_difference(sample):
    p, d, margin = 40, 16, 0.25
    for q in (0.2, 0.7, 0.97):
        h = 1e-5 * min(q, 1 - q)
        num = (free_entropy(d, p, q + h, margin, sample=sample)
               - free_entropy(d, p, q - h, margin, sample=sample)) / (2 * h)
        ana = free_entropy_derivative(d, p, q, margin, sample=sample)
        assert ana == pytest.approx(num, rel=1e-6, abs=1e-8)


def test_free_entropy_vectorised_shape(sample):
    out = free_entropy(16, 20, np.array([[0.1, 0.5]]), sample=sample)
    assert out.shape == (1, 2)
    assert out[0, 0] == free_entropy(16, 20, 0.1, sample=sample)


# --------------------------------------------------------------------------------------
# the saddle point
# --------------------------------------------------------------------------------------
def _gardner_overlap(load, stability):
    """RS overlap of the spherical perceptron (1-D quadrature, brentq): reference for p = 2."""

    def dphi(q):
        s = 1 - q

        def integrand(t):
            a = (math.sqrt(q) * t - stability) / math.sqrt(s)
            ratio = math.exp(-0.5 * a * a - 0.5 * math.log(2 * math.pi) - special.log_ndtr(a))
            return (math.exp(-t * t / 2) / math.sqrt(2 * math.pi) * ratio
                    * (t - stability * math.sqrt(q)) / (2 * math.sqrt(q) * s**1.5))

        return q / (2 * s * s) + load * integrate.quad(integrand, -12, 12, limit=200)[0]

    return optimize.brentq(dphi, 1e-6, 1 - 1e-9, xtol=1e-14)


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("d, margin", [(3, 0.0), (3, 0.5), (2, 0.0)])
def test_two_candidates_is_the_gardner_perceptron(d, margin):
    ref = _gardner_overlap(2 / d**2, margin / math.sqrt(2))
    res = saddle_point(d, 2, margin, sample=ReplicaSample(4096))
    assert res.converged and res.residual < 1e-10
    assert res.q_stderr < 0.012
    assert abs(res.q - ref) < 4 * res.q_stderr


def _loads(sample, d):
    cap = sample_capacity(d, sample=sample)
    assert cap.converged
    ps = sorted({int(round(f * cap.p_c)) for f in (0.1, 0.3, 0.5, 0.7, 0.9)} | {int(0.98 * cap.p_c)})
    return cap, [p for p in ps if p >= 2]


@pytest.mark.parametrize("d", [8, 16])
def test_saddle_point_converges_and_is_monotone_in_load(sample, d):
    cap, ps = _loads(sample, d)
    results = [saddle_point(d, p, sample=sample) for p in ps]
    for r in results:
        assert r.converged, r.message
        assert r.residual < 1e-10
        assert 0.0 < r.q < 1.0
        assert r.free_entropy < 0.0
        assert r.capacity_coefficient > 0.0
    qs = np.array([r.q for r in results])
    phis = np.array([r.free_entropy for r in results])
    assert np.all(np.diff(qs) > 0), qs
    assert np.all(np.diff(phis) < 0), phis
    assert qs[-1] > 0.9  # at 0.98 p_c


def test_q_to_one_limit_is_the_water_filling_cost(sample):
    p, d = 60, 16
    cost, bulk_active = sample.water_filling(p)
    assert not bulk_active.any()
    load = p / d**2
    r1 = 1.0 - load * cost.mean()
    gaps, ratios = [], []
    steps = (1e-4, 1e-5, 1e-6, 1e-8)
    for s in steps:
        log_z, dlog_z, _ = sample.log_partition(p, 1 - s)
        gaps.append(-2 * s * log_z.mean() - cost.mean())
        r = (1 - s) + 2 * s * s * load * dlog_z.mean()
        ratios.append((r1 - r) / s)
    gaps = np.array(gaps)
    # -2(1-q) E ln Z = E C + E[m] (1-q) ln(1/(1-q)) + O(1-q), m = pushed competitors
    assert np.all(gaps > 0) and np.all(np.diff(gaps) < 0)
    assert gaps[-1] < 1e-6
    assert np.all(gaps / np.array(steps) < 2 * (p - 1) * math.log(1e8))
    # R(1) - R(1 - s) = (1 + load E[m]) s + o(s): the slope settles.  (At s = 1e-8 the
    # O(s) part of R is below the float64 resolution of 2 s^2 E d ln Z/dq; not used.)
    assert 1.0 < ratios[2] < 1.0 + load * (p - 1)
    assert ratios[1] == pytest.approx(ratios[2], rel=2e-2)


def test_q_star_reaches_one_where_p_times_cost_is_d_squared():
    # d = 32: p_c ~ 180 > 65, so p may be real and the load can approach p_c closely
    d = 32
    sample = ReplicaSample(128)
    cap = sample_capacity(d, sample=sample)
    eps = np.array([4e-3, 2e-3, 1e-3])
    ps = cap.p_c * (1 - eps)
    gaps = np.array([1 - saddle_point(d, p, sample=sample).q for p in ps])
    assert np.all(np.diff(gaps) < 0) and np.all(gaps > 0)
    slope, intercept = np.polyfit(ps, gaps, 1)
    p_star = -intercept / slope
    assert abs(p_star / cap.p_c - 1) < 2e-4
    above = saddle_point(d, cap.p_c * (1 + 1e-3), sample=sample)
    assert not above.converged and above.q == 1.0 and above.free_entropy == -math.inf
    assert above.capacity_coefficient < 0


def test_sample_capacity_agrees_with_finite_size_capacity(sample):
    from replica.optimal.finite_size import capacity

    for d in (8, 16):
        ours = sample_capacity(d, sample=sample)
        ref = capacity(d)
        rel_se = ours.cost_stderr / ours.mean_cost + ref.stderr / ref.p_c
        assert abs(ours.p_c / ref.p_c - 1) < 4 * rel_se


def test_result_is_frozen_and_json_friendly(sample):
    res = saddle_point(16, 10, sample=sample)
    assert isinstance(res, SaddlePoint)
    with pytest.raises(AttributeError):
        res.q = 0.5
    text = json.dumps(res.to_dict())
    assert json.loads(text)["seed"] == sample.seed
    assert json.dumps(sample_capacity(16, sample=sample).to_dict())


def test_above_capacity_result_is_strict_json(sample):
    res = saddle_point(8, 30, sample=sample)
    assert not res.converged and res.q == 1.0 and "capacity" in res.message
    record = res.to_dict()
    assert record["free_entropy"] is None and record["q_stderr"] is None
    json.dumps(record, allow_nan=False)


def test_cli_saddle_json_and_bad_input(capsys):
    from replica.cli import main

    assert main(["saddle", "--d", "8", "--p", "5", "30", "--samples", "32", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["converged"] for r in rows] == [True, False]
    assert rows[0]["residual"] < 1e-10 and 0 < rows[0]["q"] < 1
    assert main(["saddle", "--d", "8", "--fraction", "0.5", "--samples", "32", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("d,p,p_c_sample") and len(out) == 2
    assert main(["saddle", "--d", "8", "--p", "5.5", "--samples", "32"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "p must be an integer" in err
    assert main(["saddle", "--d", "8", "--fraction", "1.2"]) == 2


def test_saddle_results_follow_the_result_contract(sample):
    ok = saddle_point(16, 10, sample=sample)
    assert ok.status == "converged" and ok.converged and "|R(q*)|" in ok.message
    above = saddle_point(8, 30, sample=sample)
    assert above.status == "above_capacity" and not above.converged
    cap = sample_capacity(16, sample=sample)
    assert cap.status == "converged" and "evaluations" in cap.message
    short = sample_capacity(16, max_iter=1, sample=sample)  # two bracketing steps are needed
    assert short.status == "max_iter" and not short.converged
    fields = {f.name: getattr(ok, f.name) for f in dataclasses.fields(ok)}
    unbracketed = SaddlePoint(**{**fields, "status": "unbracketed", "converged": False, "q": math.nan,
                                 "free_entropy": math.nan, "residual": math.inf})
    for res in (ok, above, cap, short, unbracketed):
        assert res.status in type(res).STATUSES
        json.dumps(res.to_dict(), allow_nan=False)
    with pytest.raises(ValueError, match="status"):
        SaddlePoint(**{**fields, "status": "fine"})


def test_seed_policy():
    a = ReplicaSample(16)
    assert a.seed == 20261130
    assert np.array_equal(ReplicaSample(16, seed=np.random.SeedSequence(5)).uniforms,
                          ReplicaSample(16, seed=np.random.SeedSequence(5)).uniforms)
    b = ReplicaSample(16, seed=np.random.default_rng(1))
    assert b.seed == np.random.default_rng(1).integers(0, 2**63 - 1, endpoint=True)
    with pytest.raises(ValueError, match="seed or sample"):
        saddle_point(16, 10, seed=3, sample=a)


def test_reproducible_from_seed():
    a = saddle_point(16, 20, sample=ReplicaSample(64, seed=11))
    b = saddle_point(16, 20, sample=ReplicaSample(64, seed=11))
    c = saddle_point(16, 20, sample=ReplicaSample(64, seed=12))
    assert a.q == b.q and a.free_entropy == b.free_entropy
    assert a.q != c.q


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, name", [
    (lambda s: saddle_point(16, 1, sample=s), "p"),
    (lambda s: saddle_point(1, 10, sample=s), "d"),
    (lambda s: saddle_point(16, 10, -0.1, sample=s), "margin"),
    (lambda s: saddle_point(16, 10.5, sample=s), "p"),
    (lambda s: saddle_point(16, 10, tol=0.0, sample=s), "tol"),
    (lambda s: free_entropy(16, 10, 1.0, sample=s), "q"),
    (lambda s: free_entropy(16, 10, -0.1, sample=s), "q"),
    (lambda s: free_entropy_derivative(16, 10, 0.0, sample=s), "q"),
    (lambda s: free_entropy(16, 10, 0.5, sample="x"), "sample"),
    (lambda s: ReplicaSample(samples=4), "samples"),
    (lambda s: ReplicaSample(exact_competitors=1), "exact_competitors"),
    (lambda s: sample_capacity(1, sample=s), "d"),
])
def test_bad_input_raises_value_error_naming_the_argument(sample, call, name):
    with pytest.raises(ValueError, match=name):
        call(sample)


# --------------------------------------------------------------------------------------
# slow: large p
# --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_large_p_saddle_point_and_negligible_bulk_fluctuation():
    sample = ReplicaSample(256)
    for d, p in ((350, 10000), (350, 5000)):
        res = saddle_point(d, p, sample=sample)
        assert res.converged and res.residual < 1e-10
        bias = sample.bulk_fluctuation(p, res.q).mean()
        assert 0.0 <= bias < 1e-3  # against |E ln Z| of 15 - 250
