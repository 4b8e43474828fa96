"""The few-outputs capacity of rectangular memories (replica.variants.few_outputs).

References: closed forms of point clouds in one and two dimensions (only the two extreme
points of a line are vertices; every point of a triangle is one, and a Gaussian vector lies
in a vertex's normal cone with probability equal to the cone's angle over 2 pi, which
averages to 1/3 over a triangle's vertices); the certified measurements of
``experiments/rectangular/few_outputs_measured.json`` (an independent solver); the budget
theory ``replica.variants.rectangular_capacity`` where the hull does not bind.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import replica
from replica.variants.few_outputs import _clouds, kinematic_factor

MEASURED = Path(__file__).resolve().parents[2] / "experiments" / "rectangular" / "few_outputs_measured.json"


def test_on_a_line_only_the_two_extreme_points_are_vertices():
    nonvertices, j_counts, _ = _clouds(6, 1, 40, np.random.default_rng(0))
    assert np.all(nonvertices == 4)
    assert j_counts.sum() == 2 * 40  # the two vertices of every cloud


def test_a_gaussian_vector_lies_in_a_triangle_vertex_cone_a_third_of_the_time():
    clouds = 3000
    nonvertices, j_counts, _ = _clouds(3, 2, clouds, np.random.default_rng(1))
    assert np.all(nonvertices == 0)
    inside = j_counts[0] / j_counts.sum()  # J = 0: the vector is in the cone, nothing active
    assert abs(inside - 1 / 3) < 4 * math.sqrt(2 / 9 / (3 * clouds))


def test_the_kinematic_factor_is_one_below_d_in_and_a_probability_above():
    pmf = np.array([0.2, 0.5, 0.3])
    assert kinematic_factor(pmf, 10, 16, 2) == 1.0
    values = [kinematic_factor(pmf, p, 16, 2) for p in (20, 25, 30, 40)]
    assert all(0.0 <= v <= 1.0 for v in values) and values == sorted(values, reverse=True)


def test_where_the_hull_binds_the_capacity_does_not_depend_on_d_in():
    small, large = replica.variants.few_outputs_capacity(32, 4), replica.variants.few_outputs_capacity(64, 4)
    assert small.p_c == large.p_c and small.p_c < 32  # p_c below d_in: the budget never binds
    assert small.hull_only_p_c == pytest.approx(small.p_c, rel=0.02)


def test_at_a_quarter_it_meets_the_budget_theory():
    # d_out = 16 points are almost all vertices at p ~ 180: the budget limit decides, as in rectangular_capacity
    few, budget = replica.variants.few_outputs_capacity(64, 16), replica.variants.rectangular_capacity(64, 16)
    assert few.p_c == pytest.approx(budget.p_c, rel=0.01)


@pytest.mark.parametrize("problem", ["dp", "op"])
def test_within_its_tolerance_of_the_certified_measurements(problem):
    rows = [r for r in json.loads(MEASURED.read_text())["rows"] if r["problem"] == problem and r["fit_status"] == "ok"]
    assert len(rows) >= 5
    for r in rows:
        theory = replica.variants.few_outputs_capacity(r["d_in"], r["d_out"], problem=problem)
        assert theory.status == "converged" and theory.stderr < 0.01 * theory.p_c
        assert abs(theory.p_c / r["p_c"] - 1) <= 0.08, (r["d_in"], r["d_out"], theory.p_c, r["p_c"])


def test_bad_arguments_are_refused_with_their_name():
    with pytest.raises(ValueError, match="d_out"):
        replica.variants.few_outputs_capacity(32, 0)
    with pytest.raises(ValueError, match="problem"):
        replica.variants.few_outputs_capacity(32, 8, problem="xp")
    with pytest.raises(ValueError, match="replicas"):
        replica.variants.few_outputs_capacity(32, 8, replicas=1)


# The direct path at 24 x 10 (DP), which samples the four points near each replica's root
# (none of them ships):
#   from replica.variants.few_outputs import _replica_root
#   [_replica_root(24, 10, "dp", r, interpolate=False)[0] for r in range(3)]
DIRECT_24_10 = (57.968794570225725, 57.75166032802591, 57.935944297316865)


def test_at_a_new_shape_the_interpolated_points_give_the_sampled_capacity_within_its_error():
    from replica.variants import few_outputs

    sampled = dict(few_outputs.COMPUTED)
    result = replica.variants.few_outputs_capacity(24, 10)
    assert few_outputs.COMPUTED == sampled  # every point read or interpolated, none sampled
    interpolated = [q for r in range(3) for q in few_outputs._replica_root(24, 10, "dp", r)[1].ps
                    if few_outputs._shipped(int(q), 10, r) is None]
    assert interpolated  # the check below is about interpolated points
    reference = float(np.mean(DIRECT_24_10))
    reference_stderr = float(np.std(DIRECT_24_10, ddof=1) / math.sqrt(len(DIRECT_24_10)))
    assert abs(result.p_c - reference) <= 2 * math.hypot(result.stderr, reference_stderr), (result.p_c, reference)


def test_interpolated_statistics_lie_between_their_shipped_neighbours():
    from replica.variants.few_outputs import _shipped, _shipped_ps, interpolated_statistics

    ps = _shipped_ps(12, 0)
    i = int(np.flatnonzero(np.diff(ps) > 2)[-1])  # two shipped points with a gap between them
    low, high, mid = _shipped(int(ps[i]), 12, 0), _shipped(int(ps[i + 1]), 12, 0), int(ps[i]) + 1
    between = interpolated_statistics(mid, 12, 0)
    assert between["interpolated"] and between["p"] == mid
    for name in ("nonvert_mean", "all_vertex", "mean_dist2"):
        assert min(low[name], high[name]) <= between[name] <= max(low[name], high[name])
    pmf = np.array(between["jcount"]) / sum(between["jcount"])
    assert pmf.sum() == pytest.approx(1.0) and len(pmf) == 13
    assert interpolated_statistics(int(ps[i]), 12, 0) is low  # a shipped point is returned as it ships
    assert interpolated_statistics(10_000, 12, 0) is None  # beyond the shipped points: sampled instead


# the values before the grid (commit 8cacdc5), whose points all ship in few_outputs_table.json
@pytest.mark.parametrize("d_in, d_out, problem, p_c", [(64, 16, "dp", 181.8193912423329),
                                                       (128, 16, "op", 314.67255815411335)])
def test_the_tabulated_shapes_read_their_table_bit_for_bit(d_in, d_out, problem, p_c):
    assert replica.variants.few_outputs_capacity(d_in, d_out, problem).p_c == p_c


def test_a_grid_point_is_the_point_sampled_on_demand():
    from replica.variants import few_outputs

    d_out, p, replica_index = 3, 12, 1
    assert few_outputs._table()["entries"].get(f"{d_out},{p},2000,{replica_index}") is None  # from the grid
    shipped = few_outputs._grid_entry(d_out, p, replica_index)
    rng = np.random.default_rng(np.random.SeedSequence([few_outputs._table()["seed"], d_out, p, replica_index]))
    nonvertices, j_counts, distance2 = few_outputs._clouds_compiled(p, d_out, shipped["n_clouds"], rng)
    assert shipped["jcount"] == j_counts.tolist()
    assert shipped["nonvert_mean"] == float(nonvertices.mean())
    assert shipped["mean_dist2"] == pytest.approx(distance2 / j_counts.sum(), rel=1e-12)


@pytest.mark.parametrize("d_out", [4, 12, 16, 24, 32])
def test_the_grid_holds_every_point_a_shape_with_this_many_outputs_walks_through(d_out):
    from replica.variants import few_outputs

    sampled = dict(few_outputs.COMPUTED)
    for replica_index in range(3):
        assert set(few_outputs.grid_points(d_out, replica_index)) <= set(few_outputs._shipped_ps(d_out, replica_index))
    assert few_outputs.COMPUTED == sampled


def test_the_hull_extrapolated_far_beyond_the_grid_is_zero_not_an_overflow():
    # at 12 x 11 the quadratic fit of ln m reaches m >= p at 4 max(p), where the hull-only root
    # is searched: (1 - m / p) ** p overflowed
    result = replica.variants.few_outputs_capacity(12, 11)
    assert result.status == "converged" and 11 < result.hull_only_p_c < 4 * 569
