"""One settings keyword for the theory: ``options=`` (a ``replica.Tolerances`` or a dict) on every front end.

The old call styles (flat keywords, ``**accuracy``, ``tolerances=``, a nested
``{"tolerances": ...}``) warn and give the same result as the new one, bit for bit.
"""

from __future__ import annotations

import inspect
import warnings

import pytest

import replica
from replica.optimal import max_margin as block_cost_margin
from replica.variants import rectangular_capacity

FRONT_ENDS = ["capacity", "hebbian_capacity", "max_margin", "accuracy", "spectrum", "accuracy_capacity"]


def _old_way(call):
    """``call()`` with its DeprecationWarning caught; returns (result, warning messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("name", FRONT_ENDS)
def test_every_front_end_takes_options_and_names_no_setting(name):
    params = inspect.signature(getattr(replica, name)).parameters
    assert "options" in params and params["options"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["options"].default is None
    assert not {"rel_tol", "tol", "max_iter", "seed", "tolerances"} & set(params)


def test_tolerances_unset_fields_are_the_models_defaults():
    assert replica.Tolerances().given() == {}
    assert replica.Tolerances(rel_tol=1e-2, seed=3).given() == {"rel_tol": 1e-2, "seed": 3}
    assert replica.capacity(16, options=replica.Tolerances()) == replica.capacity(16)
    assert replica.hebbian_capacity(16, options=replica.Tolerances()) == replica.hebbian_capacity(16)


def test_capacity_tolerances_and_dict_agree():
    new = replica.capacity(16, options=replica.Tolerances(rel_tol=1e-2, seed=3))
    assert new == replica.capacity(16, options={"rel_tol": 1e-2, "seed": 3})
    assert new.seed == 3 and new != replica.capacity(16, options={"rel_tol": 1e-2})


@pytest.mark.parametrize("flat", [{"rel_tol": 1e-2}, {"seed": 3, "rel_tol": 1e-2}, {"max_iter": 1},
                                  {"tol": 1e-300}])
def test_capacity_flat_keywords_warn_and_agree(flat):
    old, messages = _old_way(lambda: replica.capacity(16, **flat))
    assert old == replica.capacity(16, options=replica.Tolerances(**flat))
    assert len(messages) == 1 and "options=replica.Tolerances(" in messages[0]


def test_capacity_setting_given_twice_is_a_type_error():
    with pytest.raises(TypeError, match="rel_tol twice"):
        replica.capacity(16, rel_tol=1e-2, options={"rel_tol": 1e-3})


def test_rectangular_capacity_accuracy_keywords_warn_and_agree():
    new = rectangular_capacity(32, 16, options=replica.Tolerances(rel_tol=1e-2, seed=5))
    old, messages = _old_way(lambda: rectangular_capacity(32, 16, rel_tol=1e-2, seed=5))
    assert old == new and len(messages) == 1 and "rectangular_capacity(rel_tol=, seed=)" in messages[0]
    front = replica.capacity(32, d_out=16, model="budget", options=replica.Tolerances(rel_tol=1e-2, seed=5))
    assert front == new


def test_max_margin_seed_and_nested_tolerances_warn_and_agree():
    new = replica.max_margin(16, 25.0, model="image", options={"seed": 2, "blocks": 400})
    old, messages = _old_way(lambda: replica.max_margin(16, 25.0, model="image", seed=2, options={"blocks": 400}))
    assert old == new and len(messages) == 1
    new = replica.max_margin(16, 25.0, model="block_cost", options=replica.Tolerances(rel_tol=1e-2, max_iter=50))
    old, messages = _old_way(lambda: replica.max_margin(
        16, 25.0, model="block_cost", options={"tolerances": replica.Tolerances(rel_tol=1e-2, max_iter=50)}))
    assert old == new and len(messages) == 1
    assert new == block_cost_margin(16, 25.0, options={"rel_tol": 1e-2, "max_iter": 50})


def test_block_cost_model_tolerances_keyword_warns_and_agrees():
    new = block_cost_margin(16, 25.0, options=replica.Tolerances(rel_tol=1e-2, max_iter=50))
    old, messages = _old_way(lambda: block_cost_margin(16, 25.0, tolerances=replica.Tolerances(rel_tol=1e-2,
                                                                                                max_iter=50)))
    assert old == new and len(messages) == 1 and "options=replica.Tolerances" in messages[0]
    with pytest.raises(ValueError, match="seed given twice"):
        block_cost_margin(16, 25.0, seed=1, options=replica.Tolerances(seed=2))


def test_accuracy_capacity_takes_tolerances():
    new = replica.accuracy_capacity(32, 0.9, options={"size": 2000, "seed": 4, "tol": 1e-5})
    old, messages = _old_way(lambda: replica.accuracy_capacity(32, 0.9, tol=1e-5, options={"size": 2000,
                                                                                            "seed": 4}))
    assert old == new and len(messages) == 1
    with pytest.raises(ValueError, match="unknown keys"):
        replica.accuracy_capacity(32, 0.9, options=replica.Tolerances(rel_tol=1e-2))


def test_accuracy_options_tolerances_and_dict_agree():
    kwargs = dict(memory="hebbian", problem="op")
    assert replica.accuracy(32, 40, **kwargs, options=replica.Tolerances(seed=1)) == \
        replica.accuracy(32, 40, **kwargs, options={"seed": 1})


@pytest.mark.parametrize("call, says", [
    (lambda: replica.hebbian_capacity(16, options=replica.Tolerances(seed=2)), "its settings: rel_tol, tol, max_iter"),
    (lambda: replica.capacity(16, options={"blocks": 3}), "not settings of model 'finite_size'"),
    (lambda: replica.capacity(96, d_out=12, options=replica.Tolerances(rel_tol=1e-2)), "hull_budget"),
    (lambda: replica.spectrum(0.5, options={"size": 10}), "takes none"),
    (lambda: replica.max_margin(16, 25.0, model="image", options={"rel_tol": 1e-2}), "blocks"),
    (lambda: replica.capacity(16, options=[("rel_tol", 1e-2)]), "options must be"),
])
def test_a_setting_the_model_does_not_take_is_a_value_error(call, says):
    with pytest.raises(ValueError, match=says):
        call()


def test_spectrum_takes_empty_options():
    law = replica.spectrum(0.5)
    for options in ({}, replica.Tolerances()):
        other = replica.spectrum(0.5, options=options)
        assert type(other) is type(law) and other.kappa == law.kappa


def test_replica_capacity_command_uses_no_deprecated_call(capsys):
    from replica.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert main(["capacity", "--d", "16", "--rel-tol", "1e-2", "--seed", "3"]) == 0
        assert main(["capacity", "--d", "96", "--d-out", "12"]) == 0
    assert "finite_size" in capsys.readouterr().out


# the defaults of problem follow one rule (docs/glossary.md, "problem"): a measurement "op",
# the optimal memory's theory "dp", the Hebbian theory "op"
THEORY_DEFAULTS = {
    "replica.capacity": "dp",
    "replica.accuracy": "dp",
    "replica.optimal.capacity": "dp",
    "replica.variants.rectangular_capacity": "dp",
    "replica.hebbian_capacity": "op",
    "replica.variants.rectangular_hebbian_capacity": "op",
}


@pytest.mark.parametrize("path, default", sorted(THEORY_DEFAULTS.items()))
def test_problem_defaults_of_the_theory(path, default):
    module, _, name = path.rpartition(".")
    func = getattr(__import__(module, fromlist=[name]), name)
    assert inspect.signature(func).parameters["problem"].default == default


def test_problem_changes_the_square_one_answer_theory_only_through_the_shared_outputs_model():
    # the finite-size model is one theory for both problems; the OP's default adds the shared-outputs term
    assert replica.capacity(16).p_c == replica.capacity(16, problem="op", model="finite_size").p_c
    op = replica.capacity(16, problem="op")
    assert op.model == "shared_outputs" and op.dp_p_c == replica.capacity(16).p_c < op.p_c
