"""The solver registry: one spec per solver, and a solver added by one module plus one entry."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import sys
import textwrap

import numpy as np
import pytest

import validation.solvers as solvers
from validation import make_instance, solve
from validation.solvers.engine import registry
from validation.solvers.engine.registry import EntryPoint, SolverSpec, register_solver, solver_spec, unregister_solver

TOY_MODULE = '''
"""A toy solver: twice the Hebbian W (a test of the registry)."""

from dataclasses import dataclass
from typing import ClassVar

from validation.solvers.engine.memories import hebbian_memory
from validation.solvers.engine.options import SolverOptions
from validation.solvers.engine.solution import Solution, assess, rank_for


@dataclass(frozen=True)
class ToyOptions(SolverOptions):
    SOLVER: ClassVar[str] = "toy"

    scale: float = 2.0


def solve_toy(instance, kappa=1.0, *, max_iter=10, seed=None, options=None):
    o = ToyOptions.coerce(options)
    W = o.scale * hebbian_memory(instance.targets, instance.inputs)
    stored, fraction, margin, _ = assess(instance, W)
    return Solution(solver="toy", kappa=kappa, rank=rank_for(instance.d, kappa), W=W, factors=None,
                    stored=stored, recall_fraction=fraction, margin=margin, converged=True, iterations=0,
                    seconds=0.0, status="stored" if stored else "undecided", message="toy",
                    info={"max_iter": max_iter, "seed": seed})
'''


@contextlib.contextmanager
def toy_solver(directory, name="toy"):
    """Register the toy solver (its module written into ``directory``) for the duration of the block.

    Yields the solver name; usable by any test that runs a registered solver through a
    front end (``solve``, capacity sweeps).
    """
    module = f"validation_toy_solver_{name}"
    (directory / f"{module}.py").write_text(textwrap.dedent(TOY_MODULE))
    sys.path.insert(0, str(directory))
    try:
        options = EntryPoint(module, "ToyOptions").load()
        register_solver(SolverSpec(name, EntryPoint(module, "solve_toy"), options, not_stored="never",
                                   shared=("max_iter", "seed"), undecided_as_not_stored=True))
        try:
            yield name
        finally:
            unregister_solver(name)
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop(module, None)


def test_toy_solver_runs_through_solve(tmp_path):
    inst = make_instance(8, 6, seed=1)
    with toy_solver(tmp_path) as name:
        assert name in solvers.SOLVERS and isinstance(solvers.SOLVERS, tuple)
        sol = solve(inst, name, max_iter=3, seed=5, options={"scale": 3.0})
        assert sol.solver == "toy" and sol.info == {"max_iter": 3, "seed": 5}
        np.testing.assert_array_equal(sol.W, 3.0 * (inst.targets.T @ inst.inputs))
        with pytest.raises(ValueError, match="does not take tol"):
            solve(inst, name, tol=1e-3)
        with pytest.raises(ValueError, match="does not take restarts"):
            solve(inst, name, restarts=2)
        with pytest.raises(ValueError, match="unknown option 'bad'"):
            solve(inst, name, options={"bad": 1})
        assert solvers.solver_bytes(8, 6, "op", name) == solvers.solver_bytes(8, 6, "op", "hebbian")
        solvers.check_problem(8, 6, "op", name)
    assert "toy" not in solvers.SOLVERS
    with pytest.raises(ValueError, match="solver"):
        solve(inst, "toy")


def test_register_refuses_a_taken_name_and_bad_specs():
    spec = solver_spec("hebbian")
    with pytest.raises(ValueError, match="registered already"):
        register_solver(spec)
    with pytest.raises(ValueError, match="not_stored"):
        SolverSpec("x", spec.entry, None, not_stored="sometimes")
    with pytest.raises(ValueError, match="shared arguments"):
        SolverSpec("x", spec.entry, None, not_stored="never", shared=("max_iterations",))


def test_builtin_specs():
    assert solvers.SOLVERS == ("hebbian", "optimal", "lp", "adam", "svp")
    meaning = {name: solver_spec(name).not_stored for name in solvers.SOLVERS}
    assert meaning == {"hebbian": "rule", "optimal": "class", "lp": "class", "adam": "never", "svp": "class"}
    lenient = {name for name in solvers.SOLVERS if solver_spec(name).undecided_as_not_stored}
    assert lenient == {"adam", "svp"}
    assert dict(solver_spec("optimal").sweep_options) == {"refine": False}
    assert [n for n in solvers.SOLVERS if solver_spec(n).rank_search is not None] == ["optimal"]
    assert {n: solver_spec(n).accuracy_theory for n in solvers.SOLVERS} == {
        "hebbian": "hebbian", "optimal": "optimal", "lp": "optimal", "adam": None, "svp": None}


@pytest.mark.parametrize("name", ["hebbian", "optimal", "lp", "adam", "svp"])
def test_shared_arguments_are_those_of_the_entry_points(name):
    spec = solver_spec(name)
    entries = [spec.entry] + ([spec.rank_search] if spec.rank_search else [])
    taken = set()
    for entry in entries:
        params = set(inspect.signature(entry.load()).parameters)
        if "budget" in params:   # the shared arguments as one SolveBudget
            params |= {f.name for f in dataclasses.fields(solvers.SolveBudget)}
        taken |= params
    assert set(spec.shared) == taken & set(solvers.SHARED_ARGUMENTS)


def test_search_modes_of_optimal():
    spec = solver_spec("optimal")
    assert spec.search_mode({"give_up": True}).function == "solve_give_up"
    assert spec.search_mode({"top_k": 2}).function == "solve_top_k"
    assert spec.search_mode(None) is None
    assert spec.uses_rank_search(16, 0.5, None) and not spec.uses_rank_search(16, 1.0, None)
    assert not spec.uses_rank_search(16, 0.5, {"give_up": True})
    assert registry.search_mode("hebbian", None) is None


_SWEEPS = ([(solver, kappa, {}) for solver in ("hebbian", "optimal", "adam", "svp") for kappa in (1.0, 0.5)]
           + [("lp", 1.0, {})]
           + [("optimal", kappa, options) for kappa in (1.0, 0.5)
              for options in ({"give_up": True}, {"top_k": 2}, {"restarts": 4, "refine": True})])


@pytest.mark.parametrize("solver, kappa, options", _SWEEPS)
def test_sweep_task_options_are_those_of_the_capacity_and_accuracy_sweeps(solver, kappa, options):
    from validation.measurements import accuracy
    from validation.capacity.settings import SweepSettings, measurement_template

    spec = solver_spec(solver)
    template, lenient = measurement_template(16, "op", solver, kappa, "gaussian", 1, SweepSettings(),
                                             {"solver_options": dict(options)})
    assert dict(template.options) == spec.sweep_task_options(16, kappa, options)
    assert lenient == spec.undecided_as_not_stored
    if kappa == 1.0:
        settings = accuracy.AccuracySettings(solver_options=dict(options))
        template = accuracy._template(16, "op", solver, "gaussian", kappa, 1, settings)
        assert dict(template.options) == spec.sweep_task_options(16, kappa, options, restarts=False)


def test_toy_solver_runs_through_a_capacity_sweep(tmp_path):
    # The registry is the only place a new solver is named: a capacity sweep (serial, in this
    # process, where the toy is registered) runs it trial by trial and sets the result beside
    # the optimal memory's theory (the spec's default capacity_theory). Reference: the toy W
    # is twice the Hebbian W, so each trial is stored exactly when the Hebbian W of the same
    # instance (seed task_seed(seed, p, t)) recalls every input.
    from replica import capacity
    from validation.capacity import CapacityDesign, estimate_capacity
    from validation.runtime.sweep import task_seed

    with toy_solver(tmp_path) as name:
        est = estimate_capacity(8, "op", name, seed=1, design=CapacityDesign(kind="grid", trials=4, rounds=0))
    assert est.solver == name and len(est.curve) >= 3
    assert est.theory["p_c"] == pytest.approx(capacity(8).p_c)
    for point in est.curve:
        hebbian = [solve(make_instance(8, point.p, problem="op", seed=task_seed(1, point.p, t)), "hebbian").stored
                   for t in range(point.trials)]
        assert point.stored == sum(hebbian), point


def test_the_specs_answer_what_measurements_ask():
    # the rules the measurements, the reproduction and the command lines read from the specs
    from validation.solvers.engine.registry import rank_solver

    heb, opt, lp, adam, svp = (solver_spec(n) for n in ("hebbian", "optimal", "lp", "adam", "svp"))
    assert heb.is_hebbian and heb.label == "Hebbian" and heb.accuracy_is_exact
    assert not opt.is_hebbian and opt.label == "optimal" and not opt.accuracy_is_exact
    assert adam.trains_cross_entropy and not opt.trains_cross_entropy
    assert opt.has_search_modes and opt.takes_restarts and opt.takes_run_options
    assert not svp.takes_run_options and not lp.scales_to_large_d and opt.scales_to_large_d
    assert rank_solver() == "optimal" and adam.accuracy_reference() == "optimal"
    assert heb.accuracy_reference() == "hebbian"
    assert opt.searches_rank(16, 8) and not opt.searches_rank(16, 16) and not heb.searches_rank(16, 8)
    assert opt.time_limited_options(5.0) == {"refine": False, "time_limit": 5.0} and heb.time_limited_options(5.0) == {}
    assert opt.decision_settings() == {"refine": False} and heb.decision_settings() == {}
    assert opt.rank_search_settings(0.5, 4) == {"restarts": 4} and opt.rank_search_settings(1.0, 4) == {}
    assert heb.capacity_ensemble("sphere") == "sphere" and opt.capacity_ensemble("sphere") == "gaussian"


def test_the_zipf_memories_are_registered():
    from validation.solvers.engine.registry import MemorySpec, memory_names, memory_spec, register_memory
    from validation.measurements.zipf import ZIPF_LABELS, ZIPF_SOLVERS, ZIPF_THEORY, predicted_exponent

    assert memory_names() == ("optimal", "hebbian", "hebbian_frequency", "adam", "adam_frequency")
    assert ZIPF_SOLVERS == memory_names() and ZIPF_THEORY == ("optimal", "hebbian", "hebbian_frequency")
    assert ZIPF_LABELS["hebbian_frequency"] == "Hebbian, w = f"
    assert predicted_exponent("optimal", 1.5) == -1.0 and predicted_exponent("adam", 1.5) is None
    for name in memory_names():
        assert callable(memory_spec(name).run.load(name))
    with pytest.raises(ValueError, match="registered already"):
        register_memory(MemorySpec("adam", "x", memory_spec("adam").run, "exact", "x"))
    with pytest.raises(ValueError, match="bound"):
        MemorySpec("new", "x", memory_spec("adam").run, "lower_bound", "x")


@pytest.mark.parametrize("old, new", [
    ("validation.solvers.registry", "validation.solvers.engine.registry"),
    ("validation.solvers.options", "validation.solvers.engine.options"),
    ("validation.solvers.modes", "validation.solvers.searches"),
    ("validation.measure", "validation.measurements.spectra_and_scores"),
    ("validation.reproduce.measurement", "validation.reproduce.spectra_trial"),
])
def test_moved_modules_keep_their_old_path_for_one_release(old, new):
    import importlib
    import sys

    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: it moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    sys.modules.pop(old, None)
