"""``bits_per_parameter`` of a measured capacity: the fitted p_c, the theory's p_c and every grid point."""

import dataclasses
import json
import math

import pytest

from validation.capacity import CapacityDesign, CurvePoint, estimate_capacity


def _bits(p, params):
    return p * math.log(p) / math.log(2.0) / params


@pytest.fixture(scope="module")
def estimate():
    return estimate_capacity(8, "op", "optimal", design=CapacityDesign(trials=4, rounds=0))


def test_measured_estimate(estimate):
    assert math.isclose(estimate.bits_per_parameter, _bits(estimate.p_c, 64), rel_tol=1e-13)
    assert math.isclose(estimate.theory_bits_per_parameter, _bits(estimate.theory["p_c"], 64), rel_tol=1e-13)
    data = estimate.to_dict()
    assert math.isclose(data["bits_per_parameter"], _bits(estimate.p_c, 64), rel_tol=1e-13)
    json.dumps(data, allow_nan=False)
    for point in estimate.curve:
        assert math.isclose(point.bits_per_parameter, _bits(point.p, 64), rel_tol=1e-13)
    assert all("bits_per_parameter" in c for c in data["curve"])


def test_rank_m_counts_m_times_d_in_plus_d_out_minus_m(estimate):
    at_rank = dataclasses.replace(estimate, kappa=0.5)       # rank round(0.5 * 8) = 4
    assert math.isclose(at_rank.bits_per_parameter, _bits(estimate.p_c, 4 * (8 + 8 - 4)), rel_tol=1e-13)
    point = CurvePoint.from_counts(8, 20, [1, 2, 0, 0, 3], kappa=0.5)
    assert math.isclose(point.bits_per_parameter, _bits(20, 4 * 12), rel_tol=1e-13)


def test_failed_fit_has_no_bits(estimate):
    failed = dataclasses.replace(estimate, p_c=math.nan)
    assert math.isnan(failed.bits_per_parameter)
    assert failed.to_dict()["bits_per_parameter"] is None
