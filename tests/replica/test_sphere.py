"""Tests of the sphere-ensemble theory: replica.optimal.sphere.ProjectionLaw and replica.capacity(ensemble="sphere").

Reference values: quadrature of the density (1 - z^2/d)^((d-3)/2), the closed-form moments
of a uniform unit vector, sampling of normalised Gaussian vectors with numpy, plain Monte
Carlo of water_filling_cost on projections of sampled unit vectors, and the Gaussian
theory (the d -> infinity limit).  Derivation: notes/sphere_ensemble.md.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from replica.optimal.cost import CostEstimator, control_mean
from replica.optimal.finite_size import capacity, expected_cost, water_filling_cost
from replica.optimal.sphere import ProjectionLaw


# ----------------------------------------------------------------------------------------
# the law
# ----------------------------------------------------------------------------------------
def _quad(f, law, lo=None, hi=None):
    lo = -law.scale if lo is None else max(lo, -law.scale)
    hi = law.scale if hi is None else min(hi, law.scale)
    return integrate.quad(lambda z: f(z) * law.pdf(z), lo, hi, epsabs=1e-14, epsrel=1e-12, limit=200)[0]


@pytest.mark.parametrize("d", [3, 4, 16, 64, 1024])
def test_density_moments_and_quantiles(d):
    law = ProjectionLaw(d)
    assert _quad(lambda z: 1.0, law) == pytest.approx(1.0, abs=1e-10)
    assert law.moment(2) == pytest.approx(1.0, rel=1e-13) == pytest.approx(_quad(lambda z: z * z, law), rel=1e-9)
    assert law.moment(4) == pytest.approx(3.0 * d / (d + 2.0), rel=1e-12)  # E x^4 = 3 / (d (d + 2))
    assert law.moment(3) == 0.0 and law.var() == 1.0
    z = np.array([-0.9, -0.2, 0.0, 0.5, 0.95]) * min(law.scale, 8.0)  # tails above 1e-300
    np.testing.assert_allclose(law.cdf(z) + law.sf(z), 1.0, atol=1e-14)
    up, down = z[z >= 0], z[z <= 0]  # isf is accurate for small tails, ppf for small cdf
    np.testing.assert_allclose(law.isf(law.sf(up)), up, atol=1e-9 * law.scale)
    np.testing.assert_allclose(law.ppf(law.cdf(down)), down, atol=1e-9 * law.scale)
    # scipy's beta law of (z / sqrt(d) + 1) / 2
    ref = stats.beta((d - 1) / 2, (d - 1) / 2)
    np.testing.assert_allclose(law.pdf(z), ref.pdf((z / law.scale + 1) / 2) / (2 * law.scale), rtol=1e-10)
    assert law.pdf(1.01 * law.scale) == 0.0 and law.sf(2 * law.scale) == 0.0


@pytest.mark.parametrize("d", [3, 16, 64])
def test_partial_moments_and_lift_cost_against_quadrature(d):
    law = ProjectionLaw(d)
    for a in (-0.8 * law.scale, -1.3, 0.0, 0.4, 2.2, 0.99 * law.scale):
        assert -law.psi(a) == pytest.approx(_quad(lambda z: z, law, hi=a), abs=1e-11)
        m2 = float(law.cdf(a) - (d - 1) / d * a * law.psi(a))
        assert m2 == pytest.approx(_quad(lambda z: z * z, law, hi=a), abs=1e-11)
        assert float(law.lift_cost(a)) == pytest.approx(_quad(lambda z, a=a: (a - z) ** 2, law, hi=a), abs=1e-10)
        h = 1e-6
        slope = (law.lift_cost(a + h) - law.lift_cost(a - h)) / (2 * h)
        assert float(law.lift_cost_slope(a)) == pytest.approx(float(slope), rel=1e-6, abs=1e-9)
    upper = np.array([[2.5, 1.0, -0.3, -2.0]])
    edges = [2.5, 1.0, -0.3, -2.0, -np.inf]
    pieces = law.interval_moments(upper)
    for power, got in enumerate(pieces):
        ref = [_quad(lambda z, k=power: z**k, law, lo=edges[j + 1], hi=edges[j]) for j in range(4)]
        np.testing.assert_allclose(got[0], ref, atol=1e-11)


def test_sampling_and_transport_map():
    d = 16
    law = ProjectionLaw(d)
    rng = np.random.default_rng(1)
    u = rng.standard_normal((20000, d))
    direct = math.sqrt(d) * u[:, 0] / np.linalg.norm(u, axis=1)
    assert stats.kstest(direct, law.cdf).pvalue > 1e-3
    assert stats.kstest(law.rvs(20000, seed=2), law.cdf).pvalue > 1e-3
    x = np.linspace(-8, 8, 101)
    mapped = law.from_normal(x)
    assert np.all(np.diff(mapped) > 0) and np.allclose(mapped, -law.from_normal(-x), atol=0)
    np.testing.assert_allclose(law.sf(mapped), special.ndtr(-x), rtol=1e-9)


@pytest.mark.parametrize("d", [2, 3, 16, 1024, 10**5])
def test_transport_map_interpolant_against_exact_quantiles(d):
    law = ProjectionLaw(d)
    x = np.concatenate([np.linspace(-9.0, 9.0, 40001), [9.5, -12.0, 30.0]])
    exact = np.sign(x) * law.isf(special.ndtr(-np.abs(x)))
    np.testing.assert_allclose(law.from_normal(x), exact, rtol=1e-10, atol=1e-12)


def test_law_tends_to_the_normal_like_one_over_d():
    gaps = []
    grid = np.linspace(-6, 6, 1201)
    for d in (16, 64, 256, 1024):
        gaps.append(np.max(np.abs(ProjectionLaw(d).cdf(grid) - special.ndtr(grid))))
    ratios = [a / b for a, b in zip(gaps, gaps[1:])]
    assert all(3.6 < r < 4.4 for r in ratios)  # factor 4 per factor 4 in d: O(1/d)


# ----------------------------------------------------------------------------------------
# the water-filling cost and the capacity
# ----------------------------------------------------------------------------------------
def test_expected_cost_matches_plain_monte_carlo_of_unit_vectors():
    d, p = 16, 60
    law = ProjectionLaw(d)
    mean, stderr, *_ = CostEstimator(0.0, 1, 1, law).estimate(p, 20000)
    rng = np.random.default_rng(3)
    values = []
    for _ in range(10):
        u = rng.standard_normal((6000, p, d))
        fields = math.sqrt(d) * u[..., 0] / np.linalg.norm(u, axis=-1)  # projections on a fixed direction
        values.append(water_filling_cost(fields[:, 0], fields[:, 1:]))
    values = np.concatenate(values)
    se = values.std() / math.sqrt(values.size)
    assert abs(mean - values.mean()) <= 4 * math.hypot(se, stderr)
    assert values.mean() < 0.97 * expected_cost(p).mean  # lighter tails, cheaper blocks


def test_control_mean_by_parts_for_the_sphere():
    from replica.optimal.cost import _control_mean_by_parts

    law = ProjectionLaw(32)
    by_parts, _ = _control_mean_by_parts(100.0, 1, 0.3, law)
    assert by_parts == pytest.approx(control_mean(100.0, 1, 0.3, law), rel=1e-9)


# p_c from this implementation with the default seed (notes/sphere_ensemble.md, section 4);
# an independent seed must agree within 4 standard errors.
REFERENCE = {16: 64.8529, 32: 190.058}


@pytest.mark.parametrize("d", [16, 32])
def test_sphere_capacity_values(d):
    result = capacity(d, ensemble="sphere")
    assert result.converged and result.ensemble == "sphere" and result.residual <= 1e-9
    assert result.p_c == pytest.approx(REFERENCE[d], rel=1e-5)
    other = capacity(d, ensemble="sphere", seed=5)
    assert abs(other.p_c - result.p_c) <= 4 * math.hypot(other.stderr, result.stderr)
    assert 0.035 < result.p_c / capacity(d).p_c - 1.0 < 0.06  # 5.2 % (d = 16) and 4.3 % (d = 32) above
    json.dumps(result.to_dict(), allow_nan=False)


def test_sphere_capacity_tends_to_gaussian():
    """Relative excess over the Gaussian theory: about (ln p_c)^2 / (20 d), so O((ln d)^2 / d)."""
    excess = []
    for d in (16, 64, 256):
        s, g = capacity(d, ensemble="sphere"), capacity(d)
        rel = s.p_c / g.p_c - 1.0
        scale = math.log(g.p_c) ** 2 / d
        assert 0.03 * scale < rel < 0.07 * scale
        excess.append(rel)
    assert excess[0] > excess[1] > excess[2] > 0


def test_sphere_with_margin_top_k_rank_and_outputs():
    base = capacity(32, ensemble="sphere", rel_tol=1e-2)
    assert capacity(32, margin=0.5, ensemble="sphere", rel_tol=1e-2).p_c < base.p_c
    assert capacity(32, top_k=2, ensemble="sphere", rel_tol=1e-2).p_c > base.p_c
    assert capacity(32, kappa=0.5, ensemble="sphere", rel_tol=1e-2).p_c < base.p_c
    # E[C_2] = 1/2 for any symmetric unit-variance law: the K = 2 OP is Cover's 2d here too
    assert capacity(32, outputs=2, problem="op", ensemble="sphere").p_c == 64.0
    dp8 = capacity(32, outputs=8, problem="dp", ensemble="sphere")
    assert dp8.p_c > capacity(32, outputs=8, problem="dp").p_c and dp8.ensemble == "sphere"


def test_bad_ensemble():
    with pytest.raises(ValueError, match="ensemble must be one of 'gaussian', 'sphere'; got 'ball'"):
        capacity(16, ensemble="ball")
    with pytest.raises(ValueError, match="d"):
        ProjectionLaw(1)


def test_cli_sphere(capsys):
    from replica.cli import main

    assert main(["capacity", "--d", "16", "--ensemble", "sphere", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["ensemble"] == "sphere" and row["p_c"] == pytest.approx(REFERENCE[16], rel=1e-5)
    assert main(["capacity", "--d", "16", "--ensemble", "ball"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
