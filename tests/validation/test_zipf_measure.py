"""Tests of validation.measurements.zipf.measure_zipf (measured Zipf recall error beside replica.zipf_error).

References: the error of one instance recomputed from scratch with numpy (argmax of the
scores ``U^T W E`` of the Hebbian memories, the instance rebuilt from its seed
``task_seed(seed, N, t)``); the closed cases ``E = 0`` (every fact stored, below capacity)
and the Zipf frequencies of ``a = 0`` (all equal).
"""

import json
import math

import numpy as np
import pytest

import replica
from validation import make_instance, measure_zipf
from validation.runtime.sweep import task_seed
from validation.measurements.zipf import ZipfSettings, zipf_frequencies


def _hebbian_errors(d, N, a, seed, trials, weighted):
    f = zipf_frequencies(N, a)
    out = []
    for t in range(trials):
        inst = make_instance(d, N, "op", seed=task_seed(seed, N, t))
        E, U = inst.inputs.T, inst.targets.T  # columns are vectors
        W = (U * f) @ E.T if weighted else U @ E.T
        S = U.T @ W @ E  # S[rho, mu]
        recalled = S.argmax(axis=0) == np.arange(N)
        out.append(float(f[~recalled].sum()))
    return out


def test_hebbian_errors_match_numpy_recomputation():
    d, N, a, seed, trials = 12, 60, 1.5, 5, 3
    res = measure_zipf(d, N, a, solvers=("hebbian", "hebbian_frequency"), trials=trials, seed=seed)
    assert res.status == "ok" and res.converged and res.trials == trials
    for solver, weighted in (("hebbian", False), ("hebbian_frequency", True)):
        ref = _hebbian_errors(d, N, a, seed, trials, weighted)
        pt = res.point(solver)
        assert pt.error == pytest.approx(np.mean(ref), abs=1e-12)
        assert pt.stderr == pytest.approx(np.std(ref, ddof=1) / math.sqrt(trials), abs=1e-12)
        assert pt.bound == "exact" and pt.trials == trials
    theory = replica.zipf_error(d, replica.ZipfFacts(N, a), memory="hebbian")
    assert res.point("hebbian").theory == pytest.approx(theory.error)
    json.dumps(res.to_dict(), allow_nan=False)
    assert len(res.rows()) == 2 and res.rows()[0]["d"] == d


def test_optimal_and_adam_over_capacity():
    d, N, a = 8, 60, 1.5
    res = measure_zipf(d, N, a, solvers=("optimal", "hebbian", "adam"), trials=2, seed=1,
                       settings=ZipfSettings(adam_steps=50))
    opt, heb, adam = res.point("optimal"), res.point("hebbian"), res.point("adam")
    assert opt.bound == "upper_bound" and adam.bound == "upper_bound"
    assert 0.0 < opt.error < 1.0 and "upper bound" in opt.measures
    assert opt.error < heb.error  # the Hebbian memory recalls almost nothing this far above its capacity
    assert adam.budget_ended == 2  # 50 steps store nothing: budget ended, the W is still measured
    assert math.isnan(adam.theory) and math.isfinite(opt.theory) and opt.theory_stderr > 0
    with pytest.raises(KeyError):
        res.point("lp")


def test_below_capacity_every_fact_recalled():
    res = measure_zipf(16, 20, 2.0, solvers=("optimal",), trials=2, seed=0)
    pt = res.point("optimal")
    assert pt.error == 0.0 and pt.stderr == 0.0 and pt.recalled == 20.0
    assert pt.theory == 0.0  # replica.zipf_error: below capacity every fact is kept


def test_zipf_frequencies():
    f = zipf_frequencies(5, 1.0)
    assert f == pytest.approx(np.array([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5]) / (137 / 60), rel=1e-15)
    assert np.all(zipf_frequencies(4, 0.0) == 0.25)
    assert zipf_frequencies is replica.zipf_frequencies  # one definition (replica/variants/zipf.py)


@pytest.mark.parametrize("kwargs, name", [
    ({"d": 1}, "d"), ({"N": 1}, "N"), ({"a": -0.5}, "a"), ({"trials": 1}, "trials"),
    ({"solvers": ("lp",)}, "solvers"), ({"solvers": ("hebbian", "hebbian")}, "solvers"),
    ({"problem": "xx"}, "problem"), ({"settings": {"adam_steps": 0}}, "adam_steps"),
    ({"settings": {"give_up_fraction": 0.0}}, "give_up_fraction"), ({"settings": {"time_limit": -1.0}}, "time_limit"),
    ({"settings": {"ensemble": "cube"}}, "ensemble"),
])
def test_bad_input(kwargs, name):
    args = {"d": 8, "N": 20, "a": 1.5, **kwargs}
    with pytest.raises(ValueError, match=name):
        if "settings" in args:
            args["settings"] = ZipfSettings(**args["settings"])
        measure_zipf(args.pop("d"), args.pop("N"), args.pop("a"), **args)


def test_flat_settings_still_work_with_a_deprecation_warning():
    # the keywords of ZipfSettings given flat: the same measurement, with a DeprecationWarning
    new = measure_zipf(8, 20, 1.5, solvers=("hebbian",), trials=2, seed=0,
                       settings=ZipfSettings(ensemble="sphere", adam_steps=7))
    with pytest.warns(DeprecationWarning, match="ZipfSettings"):
        old = measure_zipf(8, 20, 1.5, solvers=("hebbian",), trials=2, seed=0, ensemble="sphere", adam_steps=7)
    assert old.to_dict() | {"seconds": 0} == new.to_dict() | {"seconds": 0}
    with pytest.raises(TypeError, match="unexpected"):
        measure_zipf(8, 20, 1.5, solvers=("hebbian",), trials=2, steps=3)


def test_a_at_most_one_is_accepted_for_finite_N():
    res = measure_zipf(8, 20, 0.5, solvers=("hebbian",), trials=2)
    assert res.status == "ok" and res.a == 0.5


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_cli_zipf_formats(fmt, capsys):
    from validation.cli import main

    argv = ["zipf", "--d", "8", "12", "--exponent", "1.5", "--facts", "40", "--trials", "2", "--seed", "3",
            "--solvers", "hebbian", "hebbian_frequency", "--format", fmt]
    assert main(argv) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        data = json.loads(out, parse_constant=lambda name: pytest.fail(f"JSON has {name}"))
        assert [r["d"] for r in data] == [8, 12] and data[0]["points"][0]["solver"] == "hebbian"
    elif fmt == "csv":
        import csv
        import io

        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == 4 and {"error", "stderr", "theory"} <= set(rows[0])
        ref = measure_zipf(8, 40, 1.5, solvers=("hebbian",), trials=2, seed=3).point("hebbian")
        assert float(rows[0]["error"]) == pytest.approx(ref.error, rel=1e-12)
    else:
        assert "hebbian_frequency" in out and "replica.zipf_error" in out


@pytest.mark.parametrize("argv, word", [
    (["--d", "1", "--exponent", "1.5", "--facts", "40"], "d"),
    (["--d", "8", "--exponent", "1.5", "--facts", "1"], "N"),
    (["--d", "8", "--exponent", "-1", "--facts", "40"], "a"),
    (["--d", "8", "--exponent", "1.5", "--facts", "40", "--trials", "1"], "trials"),
    (["--d", "8", "--exponent", "1.5", "--facts", "40", "--solvers", "lp"], "solvers"),
    (["--d", "8", "--facts", "40"], "exponent"),
])
def test_cli_zipf_bad_input_exits_2(argv, word, capsys):
    from validation.cli import main

    assert main(["zipf", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) <= 2 and word in err and "Traceback" not in err


def test_frequency_weighted_cross_entropy_recalls_more_mass():
    # over capacity the unweighted loss spreads its effort over rare facts; weighting by f
    # moves it to the frequent ones, so the error mass falls (0.54 against 0.10 on the two
    # instances of `validation zipf --d 12 --facts 60 --exponent 1.5 --trials 2`)
    res = measure_zipf(12, 60, 1.5, solvers=("adam", "adam_frequency"), trials=3, seed=0,
                       settings=ZipfSettings(adam_steps=300))
    assert res.point("adam_frequency").error < res.point("adam").error
    assert res.point("adam_frequency").bound == "upper_bound"
    assert math.isnan(res.point("adam_frequency").theory)


def test_slope_rows_read_the_measurements():
    from validation.measurements.zipf import fitted_slope, slope_rows

    runs = [measure_zipf(d, 2 * d, 2.0, solvers=("hebbian", "hebbian_frequency"), trials=2, seed=1).to_dict()
            for d in (8, 12, 16)]
    rows = {r["solver"]: r for r in slope_rows(json.loads(json.dumps(runs)))}
    for solver, row in rows.items():
        e = [m["points"][[p["solver"] for p in m["points"]].index(solver)]["error"] for m in runs]
        th = [m["points"][[p["solver"] for p in m["points"]].index(solver)]["theory"] for m in runs]
        assert row["measured"] == fitted_slope(np.array([8, 12, 16]), np.array(e))
        assert row["theory"] == fitted_slope(np.array([8, 12, 16]), np.array(th))
        assert row["dims"] == [8, 12, 16] and row["trials"] == [2]
    assert rows["hebbian_frequency"]["asymptotic"] == -0.25  # -(a - 1) / (2 a) at a = 2
    assert rows["hebbian"]["asymptotic"] is None
