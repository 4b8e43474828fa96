"""The k-set hull limit of top-k recall (replica.variants.top_k_hull).

References: the halfspace depth by brute force over exempt sets, each a Gordan LP
(scipy.optimize.linprog: some y with (t - u_rho) . y >= 1 for every rho kept), an
independent computation; in one dimension the depth is the smaller of the counts on
either side; k = 1 against the vertex test of replica.variants.few_outputs.
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from replica.variants.few_outputs import is_vertex
from replica.variants.top_k_hull import depth_below, k_set_hull_factor, target_depth


def _depth_by_lp(t, u):
    a = t - u
    m, d = a.shape
    for k in range(m + 1):
        for exempt in itertools.combinations(range(m), k):
            kept = a[[i for i in range(m) if i not in exempt]]
            if not len(kept):
                return k
            r = linprog(np.zeros(d), A_ub=-kept, b_ub=-np.ones(len(kept)), bounds=[(None, None)] * d)
            if r.status == 0:
                return k
    return m


@pytest.mark.parametrize("d", [2, 3, 4])
def test_depth_equals_the_exempt_set_lp(d):
    rng = np.random.default_rng(d)
    for _ in range(12):
        m = int(rng.integers(d, 9))
        u = rng.standard_normal((m, d))
        t = rng.standard_normal(d) * rng.uniform(0, 1)  # targets inside the cloud as well
        assert target_depth(t, u) == _depth_by_lp(t, u)


def test_depth_in_one_dimension_and_of_few_points():
    assert target_depth([0.0], [[-1.0], [1.0], [2.0]]) == 1
    assert target_depth([0.0, 0.0], [[1.0, 0.0]]) == 0  # fewer than d competitors
    with pytest.raises(ValueError, match="share d"):
        target_depth([0.0, 0.0], [[1.0, 0.0, 0.0]])


def test_k1_is_the_vertex_test():
    rng = np.random.default_rng(7)
    for _ in range(5):
        x = rng.standard_normal((12, 3))
        assert depth_below(x, 1).tolist() == [is_vertex(x, i) for i in range(12)]


def test_hull_factor_is_one_when_p_is_at_most_k_plus_one_and_falls_with_p():
    assert k_set_hull_factor(2, 3, 2).hull == 1.0
    low, high = (k_set_hull_factor(2, p, 2, "op", clouds=300) for p in (6, 9))
    assert high.hull < low.hull - 3 * (low.stderr + high.stderr)


def test_hull_factor_is_reproducible_and_checks_its_arguments():
    a, b = (k_set_hull_factor(3, 9, 2, "dp", clouds=50, seed=4) for _ in range(2))
    assert a.hull == b.hull
    with pytest.raises(ValueError, match="k"):
        k_set_hull_factor(3, 5, 5)
    with pytest.raises(ValueError, match="problem"):
        k_set_hull_factor(3, 5, 2, "xp")
