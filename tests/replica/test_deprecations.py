"""Old names and call styles kept for one release: each warns and gives today's result."""

from __future__ import annotations

import inspect

import pytest

import replica


def test_max_margin_result_is_the_margin_capacity_result():
    with pytest.warns(DeprecationWarning, match="MarginCapacityResult"):
        old = replica.MaxMarginResult
    assert old is replica.MarginCapacityResult
    assert "MaxMarginResult" not in replica.__all__ and "MarginCapacityResult" in replica.__all__


def test_max_margin_tolerance_keywords():
    from replica.optimal import max_margin  # the block_cost model keeps its old keywords for one release

    new = max_margin(16, 25.0, options=replica.Tolerances(rel_tol=1e-2, max_iter=50))
    with pytest.warns(DeprecationWarning, match="tolerances"):
        old = max_margin(16, 25.0, rel_tol=1e-2, max_iter=50)
    assert old == new
    with pytest.warns(DeprecationWarning, match="options=replica.Tolerances"):
        assert max_margin(16, 25.0, tolerances=replica.Tolerances(rel_tol=1e-2, max_iter=50)) == new
    with pytest.raises(TypeError, match="tolerances"):
        max_margin(16, 25.0, rel_tol=1e-2, tolerances=replica.Tolerances())
    front = replica.max_margin(16, 25.0, model="block_cost", options=replica.Tolerances(rel_tol=1e-2, max_iter=50))
    assert front == new


def test_accuracy_capacity_seed_keyword():
    new = replica.accuracy_capacity(32, 0.9, options={"size": 2000, "seed": 4})
    with pytest.warns(DeprecationWarning, match="options"):
        old = replica.accuracy_capacity(32, 0.9, seed=4, options={"size": 2000})
    assert old == new


@pytest.mark.parametrize("name", ["capacity", "hebbian_capacity", "max_margin", "accuracy", "accuracy_capacity",
                                  "zipf_error"])
def test_public_signatures_have_at_most_eight_parameters_or_are_explicit(name):
    # every keyword argument is in the signature (no **kwargs); the deprecated call styles
    # are translated by a wrapper and do not show in it
    params = inspect.signature(getattr(replica, name)).parameters.values()
    assert not any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params)
    if name not in ("capacity", "accuracy"):  # these two name every parameter of their quantity
        assert len(params) <= 8
