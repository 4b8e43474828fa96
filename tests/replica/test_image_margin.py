"""The image-space margin theory: the least move of a block's image and ``max_margin_image``.

Reference values and their provenance:

* the least move is certified on small random blocks by the KKT conditions of its strictly
  convex quadratic program (feasible, and ``y - y0`` a non-negative combination of the active
  constraint normals, found by scipy's NNLS, which proves global optimality), and compared
  with an independent solve by scipy's SLSQP (a generic constrained optimiser) where SLSQP
  reports success (its line search can fail on some BLAS kernels);
* with orthonormal candidates (``t = e_1``, ``u_rho = e_{rho + 1}``) the constraint
  ``(t - u_rho)^T y >= k`` is ``y_1 - y_{rho+1} >= k`` on independent coordinates, and the
  least move is exactly the water filling of the fields ``y0`` (``water_filling_cost``,
  derived independently in ``notes/finite_size_capacity.md``);
* the margin-0 capacity of ``replica.capacity`` is not touched by this module (its value is
  pinned in ``tests/replica/test_finite_size.py``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize, nnls

import replica
from replica.optimal import image_margin
from replica.optimal.image_margin import (ImageMarginWarning, least_move, max_margin_image, sample_image_blocks)
from replica.optimal.water_filling import water_filling_cost


def _slsqp(t, U, y0, k):
    """SLSQP's solve of min |y - y0|^2 subject to (t - u_rho)^T y >= k, or None when it reports failure."""
    A = t[None, :] - U
    res = minimize(lambda y: float(np.sum((y - y0) ** 2)), y0, jac=lambda y: 2.0 * (y - y0), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda y: A @ y - k, "jac": lambda y: A}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    return (float(res.fun), res.x) if res.success else None


def _kkt_residual(t, U, y0, k, y):
    """Distance of ``y`` from the KKT conditions: ``y - y0 = A_S^T mu``, ``mu >= 0`` on the active set ``S``."""
    A = t[None, :] - U
    active = A @ y - k <= 1e-9
    if not active.any():
        return float(np.linalg.norm(y - y0))
    _, residual = nnls(A[active].T, y - y0)
    return float(residual)


@pytest.mark.parametrize("d, m, k, seed", [(6, 15, 0.7, 1), (8, 30, 0.0, 2), (12, 9, 2.5, 3), (5, 40, -0.3, 4)])
def test_least_move_matches_a_generic_qp_solver(d, m, k, seed):
    rng = np.random.default_rng(seed)
    t = rng.standard_normal(d) / math.sqrt(d)
    U = rng.standard_normal((m, d)) / math.sqrt(d)
    y0 = rng.standard_normal(d)
    cost, y = least_move(t, U, y0, k)
    assert np.min((t[None, :] - U) @ y) >= k - 1e-9
    assert cost == pytest.approx(float(np.sum((y - y0) ** 2)), rel=1e-9, abs=1e-12)
    assert _kkt_residual(t, U, y0, k, y) <= 1e-7 * (1.0 + float(np.linalg.norm(y - y0)))
    reference = _slsqp(t, U, y0, k)
    if reference is not None:
        ref_cost, ref_y = reference
        assert cost == pytest.approx(ref_cost, rel=1e-6, abs=1e-10)
        np.testing.assert_allclose(y, ref_y, atol=1e-5)


def test_the_kkt_check_rejects_a_feasible_point_that_is_not_the_least_move():
    rng = np.random.default_rng(1)
    t, U = rng.standard_normal(6) / math.sqrt(6), rng.standard_normal((15, 6)) / math.sqrt(6)
    y0 = rng.standard_normal(6)
    _, y = least_move(t, U, y0, 0.7)
    shifted = y + 0.5 * (t - U[0])  # moved along one constraint normal: not the projection of y0
    assert _kkt_residual(t, U, y0, 0.7, shifted) > 1e-3


@pytest.mark.parametrize("k", [0.0, 0.4, 1.7])
def test_least_move_with_orthonormal_candidates_is_the_water_filling(k):
    rng = np.random.default_rng(5)
    d, p = 12, 9
    y0 = rng.standard_normal(d)
    basis = np.eye(d)
    cost, _ = least_move(basis[0], basis[1:p], y0, k)
    assert cost == pytest.approx(float(water_filling_cost(y0[0], y0[1:p], k)), rel=1e-10, abs=1e-12)


def test_least_move_of_a_satisfied_block_is_zero():
    t = np.array([1.0, 0.0, 0.0])
    U = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    cost, y = least_move(t, U, np.array([5.0, 0.0, 0.0]), 1.0)
    assert cost == 0.0 and y[0] == 5.0


def test_least_move_bad_input():
    with pytest.raises(ValueError, match="shapes"):
        least_move(np.zeros(3), np.zeros((2, 4)), np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="finite"):
        least_move(np.zeros(3), np.zeros((2, 3)), np.array([np.nan, 0, 0]), 0.0)
    with pytest.raises(ValueError, match="did not converge"):  # a competitor equal to the target: infeasible
        least_move(np.ones(3), np.ones((1, 3)), np.zeros(3), 1.0)


def test_sampled_blocks_do_not_depend_on_the_sample_size():
    a = sample_image_blocks(16, 40, "sphere", 100, seed=3)
    b = sample_image_blocks(16, 40, "sphere", 150, seed=3)
    np.testing.assert_array_equal(a.image, b.image[:100])
    np.testing.assert_allclose(np.linalg.norm(b.competitors, axis=2), 1.0)
    # the cavity fields have the scale sqrt(r s^2)
    sigma = np.linalg.norm(b.image, axis=1) / 4.0
    assert np.allclose(sigma ** 2, b.norm * b.shape)


def test_max_margin_image_reproducible_and_below_max_margin():
    a = max_margin_image(16, 25, blocks=300, seed=7)
    b = max_margin_image(16, 25, blocks=300, seed=7)
    assert a.margin == b.margin and a.status == "converged" and a.converged
    assert 0.0 < a.stderr < 0.2 and a.correlation > 0.5
    # the image-space cost is the larger one at this margin: its margin lies below max_margin's
    # (measured: mean 1.341 +- 0.005 over 1000 instances at d = 16, p = 25, experiments/margins)
    old = replica.max_margin(16, 25, model="block_cost").margin
    assert a.margin < old - 3 * a.stderr
    assert a.residual < 1e-3


def test_max_margin_image_reports_non_convergence(monkeypatch):
    monkeypatch.setattr(image_margin, "MAX_ITER", 1)
    with pytest.warns(ImageMarginWarning, match="did not converge"):
        r = max_margin_image(16, 25, blocks=100, seed=1)
    assert r.status == "not_converged" and not r.converged and r.failed_blocks > 0


def test_max_margin_image_validity_record():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", replica.TheoryOffWarning)
        r = max_margin_image(16, 25, blocks=100, seed=1)
    assert r.validity is not None and (r.validity.prediction, r.validity.model) == ("max_margin", "image")
    assert r.model == "image"


@pytest.mark.parametrize("kwargs, match", [
    ({"d": 16, "p": 25.5}, "p must be an integer"),
    ({"d": 1, "p": 25}, "d must be"),
    ({"d": 16, "p": 1}, "p must be"),
    ({"d": 16, "p": 25, "ensemble": "cube"}, "ensemble"),
    ({"d": 16, "p": 25, "blocks": 10}, "blocks"),
    ({"d": 16, "p": 25, "xtol": 0.0}, "xtol"),
])
def test_max_margin_image_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        max_margin_image(**kwargs)


def test_blocks_whose_dropped_competitors_bind_are_solved_with_all_of_them(monkeypatch):
    # d = 16, p = 55: by default all 54 competitors are kept; keeping 16 (KEEP = 1) drops some that bind
    # near capacity, which are then solved again with all of them: the margin is the same
    full = max_margin_image(16, 55, blocks=320, seed=2)
    monkeypatch.setattr(image_margin, "KEEP", 1)
    repaired = max_margin_image(16, 55, blocks=320, seed=2)
    assert full.kept_competitors == 54 and repaired.kept_competitors == 16
    assert repaired.full_blocks > 0 and repaired.dropped_violations == 0 and repaired.status == "converged"
    assert repaired.margin == pytest.approx(full.margin, abs=1e-3)
