"""The theory registry and the front ends: one function per quantity, its models behind it."""

from __future__ import annotations

import warnings

import pytest

import replica
from replica.common import registry


def test_every_model_names_an_implementation_that_exists_and_a_note():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for q in registry.QUANTITIES.values():
        assert q.models, q.name
        names = [m.name for m in q.models]
        assert len(set(names)) == len(names), q.name
        for m in q.models:
            assert callable(m.implementation()), m
            assert (root / m.note).exists(), m.note
            assert m.tolerance > 0
    for q, m in registry.PREDICTIONS.values():
        registry.quantity(q)
        if isinstance(m, str):
            registry.model(q, m)


def test_the_default_model_follows_the_shape_and_the_result_names_it():
    assert registry.choose("capacity", {"d": 64}).name == "finite_size"
    assert registry.choose("capacity", {"d": 96, "d_out": 12}).name == "hull_budget"  # few outputs
    assert registry.choose("capacity", {"d": 32, "d_out": 64}).name == "budget"  # more outputs than inputs
    assert registry.choose("capacity", {"d": 32, "d_out": 8, "kappa": 0.5}).name == "budget"  # hull model: full rank
    r = replica.capacity(32, d_out=16, model="budget")
    assert r.model == "budget" and r.validity.model == "budget"
    assert replica.capacity(16).model == "finite_size"


def test_a_model_is_picked_by_name_and_a_bad_name_or_place_is_refused():
    names = "'hull_budget', 'shared_outputs', 'finite_size', 'budget'"
    with pytest.raises(ValueError, match=f"model must be one of {names}"):
        replica.capacity(16, model="nonsense")
    with pytest.raises(ValueError, match="'finite_size' .* needs a square memory"):
        replica.capacity(32, d_out=8, model="finite_size")
    with pytest.raises(ValueError, match="'hull_budget' .* needs fewer outputs than inputs"):
        replica.capacity(32, model="hull_budget")
    with pytest.raises(ValueError, match="d_out"):
        replica.capacity(32, d_out=0)
    with pytest.raises(ValueError, match="quantity must be one of"):
        registry.quantity("speed")


def test_the_budget_model_is_the_square_model_bit_for_bit_where_both_apply():
    # rectangular_capacity equals capacity for d_in = d_out (same seed): the registry keeps one model there
    from replica.variants import rectangular_capacity

    assert rectangular_capacity(24, 24).p_c == replica.capacity(24).p_c


def test_max_margin_and_accuracy_front_ends_pick_their_models():
    assert registry.choose("max_margin", {"d": 32, "p": 109, "kappa": 0.5}).name == "block_cost"
    assert registry.choose("accuracy", {"d": 8, "p": 60, "memory": "hebbian"}).name == "hebbian_scores"
    with pytest.raises(ValueError, match="memory"):
        replica.accuracy(8, 60, memory="best")
    with pytest.raises(ValueError, match="memory='hebbian'"):
        replica.accuracy(8, 60, input_spectrum=1.0)


def test_hebbian_accuracy_front_end_equals_its_model():
    from replica.variants import covariance_hebbian_accuracy

    a = replica.accuracy(32, 40, memory="hebbian", problem="op")
    b = covariance_hebbian_accuracy(32, 40, problem="op")
    assert a.accuracy == b.accuracy and a.model == "hebbian_scores"
    assert a.accuracy == pytest.approx(replica.hebbian_accuracy(32, 40), abs=0)  # isotropic OP: bit for bit


def test_old_names_warn_and_give_what_they_gave():
    from replica.variants import few_outputs_capacity, rectangular_capacity

    with pytest.warns(DeprecationWarning, match=r"replica.capacity\(d_in, d_out=d_out, model='budget'\)"):
        old = replica.rectangular_capacity
    assert old is rectangular_capacity
    with pytest.warns(DeprecationWarning, match="hull_budget"):
        assert replica.few_outputs_capacity is few_outputs_capacity
    with pytest.warns(DeprecationWarning, match="MarginCapacityResult"):
        assert replica.MaxMarginResult is replica.MarginCapacityResult
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in replica.__all__:
            getattr(replica, name)  # no public name is deprecated


def test_the_public_names_are_fewer_and_every_result_type_name_is_unique():
    import validation

    assert len(replica.__all__) < 81  # the flat list of the release before the front ends
    deprecated = set(replica._DEPRECATED)
    assert not deprecated & set(replica.__all__)
    types = [n for n in replica.__all__ if n.endswith("Result")] + [
        n for n in validation.__all__ if n.endswith("Result")]
    assert len(types) == len(set(types)), sorted(n for n in types if types.count(n) > 1)


def test_the_registry_table_lists_every_model():
    rows = registry.describe()
    assert len(rows) == sum(len(q.models) for q in registry.QUANTITIES.values())
    assert any("`hull_budget`" in r and "notes/rectangular_few_outputs.md" in r for r in rows)


def test_a_checked_model_wins_over_the_order_and_an_off_one_loses_its_place():
    params = {"d": 32, "d_out": 8}
    verdicts = {"hull_budget": "off", "budget": "checked"}
    assert registry.choose("capacity", params, verdict=verdicts.get).name == "budget"
    verdicts = {"hull_budget": "off", "budget": "unchecked"}  # neither checked: the one made for it unless off
    assert registry.choose("capacity", params, verdict=verdicts.get).name == "budget"
    verdicts = {"hull_budget": "unchecked", "budget": "unchecked"}
    assert registry.choose("capacity", params, verdict=verdicts.get).name == "hull_budget"
