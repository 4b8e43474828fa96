"""``estimate_capacity(..., design=CapacityDesign(...), options=CapacityOptions(...))``: the settings objects.

The flat keywords of before warn (``DeprecationWarning``, naming what to pass) and give
the same estimate.  The trials are the synthetic trial of ``validation.runtime.sweep`` (no solver).
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

from validation.capacity import CapacityDesign, CapacityOptions, SweepSettings, estimate_capacity

SYNTH = "validation.runtime.sweep:synthetic_trial"
DESIGN = CapacityDesign(kind="grid", trials=5, rounds=1, center=90.0, initial_points=3)
OPTIONS = CapacityOptions(task_function=SYNTH, solver_options={"p_c": 100.0, "slope": 8.0})


def _same(a, b):
    assert a.curve == b.curve and a.p_c == b.p_c and a.solver_options == b.solver_options


def _deprecations(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)
                    and "capacity(" in str(w.message)]


def test_signature_has_design_and_options():
    params = inspect.signature(estimate_capacity).parameters
    assert params["options"].default is None and params["design"].default == "auto"
    assert params["problem"].default == "op"  # a measurement defaults to the original problem


def test_the_new_way_makes_no_deprecated_call():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimate_capacity(16, seed=4, design=DESIGN, options=OPTIONS)
    assert not [w for w in caught if "estimate_capacity" in str(w.message)]


def test_dict_and_object_agree():
    as_dict = {"task_function": SYNTH, "solver_options": {"p_c": 100.0, "slope": 8.0}}
    _same(estimate_capacity(16, seed=4, design=DESIGN, options=as_dict),
          estimate_capacity(16, seed=4, design=DESIGN, options=OPTIONS))


def test_flat_keywords_warn_and_agree():
    new = estimate_capacity(16, seed=4, design=DESIGN, options=OPTIONS)
    old, messages = _deprecations(lambda: estimate_capacity(
        16, seed=4, trials=5, rounds=1, center=90.0, initial_points=3, task_function=SYNTH,
        solver_options={"p_c": 100.0, "slope": 8.0}))
    _same(old, new)
    assert len(messages) == 1
    assert "design=CapacityDesign(kind=..., trials=..., rounds=..., center=..., initial_points=...)" in messages[0]
    assert "options=CapacityOptions(task_function=..., solver_options=...)" in messages[0]


def test_flat_sweep_settings_fold_into_options():
    new = estimate_capacity(16, seed=4, design=DESIGN, options=OPTIONS)
    old, messages = _deprecations(lambda: estimate_capacity(
        16, seed=4, design=DESIGN, sweep=SweepSettings(experiment="capacity"), options=OPTIONS))
    _same(old, new)
    assert len(messages) == 1 and "experiment=..." in messages[0]


def test_flat_keywords_replace_those_of_the_objects():
    new = estimate_capacity(16, seed=4, design=DESIGN, options=OPTIONS)
    old, _ = _deprecations(lambda: estimate_capacity(16, seed=4, design=CapacityDesign(kind="grid", trials=2),
                                                     trials=5, rounds=1, center=90.0, initial_points=3,
                                                     options=OPTIONS))
    _same(old, new)


def test_criterion_in_options():
    accuracy = CapacityOptions(task_function=SYNTH, criterion="accuracy:0.9",
                               solver_options={"p_c": 100.0, "slope": 8.0})
    est = estimate_capacity(16, seed=4, design=DESIGN, options=accuracy)
    assert est.criterion == "accuracy:0.9"
    with pytest.raises(ValueError, match="criterion"):
        estimate_capacity(16, design=DESIGN, options=CapacityOptions(task_function=SYNTH, criterion="accuracy:2"))


@pytest.mark.parametrize("options, error, says", [
    ({"trials": 5}, ValueError, "unknown keys"),
    ([("criterion", "all")], ValueError, "options must be"),
])
def test_bad_options(options, error, says):
    with pytest.raises(error, match=says):
        estimate_capacity(16, design=DESIGN, options=options)


def test_unknown_flat_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="trails"):
        estimate_capacity(16, design=DESIGN, options=OPTIONS, trails=5)


def test_options_sweep_names_the_experiment():
    assert CapacityOptions().sweep().experiment == "capacity"
    assert CapacityOptions().sweep("embedding_capacity").experiment == "embedding_capacity"
    assert CapacityOptions(experiment="compare").sweep("embedding_capacity").experiment == "compare"


def test_embedding_capacity_options(tmp_path):
    from validation.capacity import estimate_embedding_capacity

    rng = np.random.default_rng(0)
    n, d = 60, 6
    path = tmp_path / "given.npz"
    np.savez(path, inputs=rng.standard_normal((n, d)) / np.sqrt(d), outputs=rng.standard_normal((n, d)) / np.sqrt(d))
    design = CapacityDesign(kind="grid", trials=2, rounds=0, center=12.0)
    new = estimate_embedding_capacity(path, "hebbian", seed=1, design=design, options={"progress": False})
    old, messages = _deprecations(lambda: estimate_embedding_capacity(path, "hebbian", seed=1, trials=2, rounds=0,
                                                                      center=12.0, design="grid", progress=False))
    assert old.curve == new.curve and len(messages) == 1
    with pytest.raises(ValueError, match="outputs does not apply"):
        estimate_embedding_capacity(path, "hebbian", design=design, options=CapacityOptions(outputs=2))
