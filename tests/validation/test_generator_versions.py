"""The DP candidate generator's version in trial keys, stores and estimates (notes/simulation.md, section 2).

A store written before generator 2 existed keys every DP trial with the plain package
version.  Those trials must serve generator-1 runs only: a run of generator 2 (the
default) computes its own trials and never reads them.
"""

import json

import pytest

from validation import make_instance
from validation.capacity import STORAGE_TRIAL, CapacityDesign, CapacityOptions, estimate_capacity
from validation.runtime.store import ResultStore, package_version
from validation.runtime.sweep import Task, keyed_version, run_tasks

VERSION = "0.1.0"


def _task(problem="dp", options=()):
    return Task(STORAGE_TRIAL, "capacity", problem, "optimal", "gaussian", 4, 6, 1.0, 11, 0, options)


def _old_store(path):
    """A store as written before generator 2: one DP trial under the plain version, marked."""
    store = ResultStore(path)
    key = _task().key(VERSION)
    key["version"] = VERSION
    store.put(key, {"status": "stored", "stored": True, "marker": "written by generator 1"})
    return store


def test_keys_carry_the_generator_of_dp_trials_only():
    assert _task().generator == 2 and _task().key(VERSION)["version"] == f"{VERSION}+dp-generator2"
    assert _task(options=(("generator", 1),)).key(VERSION)["version"] == VERSION
    assert _task(options=(("generator", 2),)).key(VERSION)["version"] == f"{VERSION}+dp-generator2"
    assert _task("op").generator is None and _task("op").key(VERSION)["version"] == VERSION
    assert keyed_version("x", None) == keyed_version("x", 1) == "x"


def test_an_old_store_serves_generator_1_and_never_generator_2(tmp_path):
    with _old_store(tmp_path / "store") as store:
        new = run_tasks([_task()], store, version=VERSION)
        assert new.computed == 1 and new.reused == 0
        record = new.records[_task()]
        assert "marker" not in record and record["status"] in ("stored", "not_stored")
        old_task = _task(options=(("generator", 1),))
        old = run_tasks([old_task], store, version=VERSION)
        assert old.reused == 1 and old.computed == 0
        assert old.records[old_task]["marker"] == "written by generator 1"
        assert sorted(r["version"] for r in store.rows()) == [VERSION, f"{VERSION}+dp-generator2"]


def test_the_trial_builds_the_instance_of_its_generator():
    # the same instance seed, other candidates: the trials' margins differ between generators, and
    # the trial's instance is make_instance(..., generator=g) (the option reaches the instance only)
    import numpy as np

    from validation.capacity.trials import trial_instance

    records = {}
    for g in (1, 2):
        task = _task(options=(("generator", g),))
        records[g] = run_tasks([task], None, version=VERSION).records[task]
    assert records[1]["instance_seed"] == records[2]["instance_seed"]
    assert records[1]["margin"] != records[2]["margin"]
    for g in (1, 2):
        inst, settings = trial_instance(_task(options=(("generator", g), ("time_limit", 5.0))), 17)
        np.testing.assert_array_equal(inst.targets, make_instance(4, 6, "dp", seed=17, generator=g).targets)
        assert settings == {"time_limit": 5.0}


def test_estimates_record_their_generator_and_do_not_share_trials(tmp_path):
    design = CapacityDesign(trials=2, rounds=0, initial_points=2)

    def versions(store):
        rows = [r["version"] for r in store.rows()]
        return rows.count(package_version()), rows.count(f"{package_version()}+dp-generator2")

    def estimate(problem, **options):
        return estimate_capacity(6, problem, "optimal", seed=3, design=design,
                                 options=CapacityOptions(progress=False, **options))

    with ResultStore(tmp_path / "store") as store:
        one = estimate("dp", generator=1, store=store)
        n_one = versions(store)[0]
        assert n_one == sum(c.trials for c in one.curve) and versions(store)[1] == 0
        two = estimate("dp", store=store)
        # nothing reused across generators: every trial of the second estimate is a new row
        assert versions(store) == (n_one, sum(c.trials for c in two.curve))
        again = estimate("dp", generator=1, store=store)
        assert versions(store) == (n_one, sum(c.trials for c in two.curve))  # generator 1 reused
    assert (one.generator, two.generator, again.generator) == (1, 2, 1)
    assert again.p_c == one.p_c and json.loads(json.dumps(two.to_dict()))["generator"] == 2
    op = estimate("op")
    assert op.generator is None and "generator" not in op.to_dict()


@pytest.mark.parametrize("bad", [0, 3, "1", 1.0])
def test_bad_generators_are_refused(bad):
    with pytest.raises(ValueError, match="generator"):
        make_instance(4, 6, "dp", generator=bad)
    with pytest.raises(ValueError, match="generator"):
        estimate_capacity(4, "dp", "optimal", design=CapacityDesign(trials=2, rounds=0),
                          options=CapacityOptions(generator=bad, progress=False))


def test_the_environment_sets_the_default_generator(monkeypatch):
    from validation.instances import _candidate_kernels as _candidates

    monkeypatch.setenv(_candidates.GENERATOR_VARIABLE, "1")
    assert make_instance(4, 6, "dp", seed=1).generator == 1 and _task().generator == 1
    assert _task().key(VERSION)["version"] == VERSION
    assert make_instance(4, 6, "dp", seed=1, generator=2).generator == 2   # an explicit choice wins
    monkeypatch.setenv(_candidates.GENERATOR_VARIABLE, "3")
    with pytest.raises(ValueError, match=_candidates.GENERATOR_VARIABLE):
        make_instance(4, 6, "dp", seed=1)
    monkeypatch.delenv(_candidates.GENERATOR_VARIABLE)
    assert make_instance(4, 6, "dp", seed=1).generator == _candidates.DEFAULT_GENERATOR == 2
