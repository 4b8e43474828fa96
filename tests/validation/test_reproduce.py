"""reproduce: the report pipeline on a tiny configuration, and its bad input."""

import csv
import dataclasses
import os

import pytest

from validation.reproduce import FULL, QUICK, ReproduceConfig, render_saved, reproduce
from validation.reproduce.saved import DATA_FILE, load_run
from validation.runtime.store import ResultStore


def _tiny():
    return dataclasses.replace(QUICK, optimal_dims=(6,), hebbian_dims=(8,), kappa_dim=6, kappas=(0.5,),
                               trials=4, rounds=0, initial_points=3, spectra_dim=6, spectra_instances=2,
                               theory_dims=(6, 8, 16), accuracy_dims=(8, 12, 16), accuracy_alphas=(0.25, 0.5),
                               accuracy_optimal_dims=(6,), accuracy_optimal_alphas=(0.5, 1.5),
                               accuracy_adam_dims=(6,), accuracy_trials=3, outputs_dim=6, outputs_grid=(2, 6),
                               scale_runs=(("op", 8, 2, 0), ("dp", 8, 2, 0)), rank_restarts=2,
                               zipf_dims=(6, 8), zipf_exponents=(2.0,), zipf_trials=2, zipf_adam_steps=100)


@pytest.mark.slow
def test_tiny_reproduce_writes_every_output_and_resumes(tmp_path):
    res = reproduce(str(tmp_path), _tiny())
    names = sorted(os.path.basename(f) for f in res.figures)
    assert names == ["fig1_success_probability.png", "fig1b_collapse.png", "fig2_alpha_vs_d.png",
                     "fig3_alpha_kappa.png", "fig4_spectra.png", "fig5_scores.png", "fig6_accuracy.png",
                     "fig7_outputs.png", "fig8_zipf_error.png"]
    for f in res.figures:
        assert os.path.getsize(f) > 10_000  # a real image, not an empty canvas
    report = open(res.report).read()
    for f in names:
        assert f"]({f})" in report
    assert "finite-size theory" in report and "OP against DP" in report
    # generated text carries the measured numbers
    cap = open(os.path.join(tmp_path, "capacity.csv")).read().splitlines()
    assert len(cap) == 1 + 6  # OP, DP, Hebbian, kappa = 0.5, and the bracketed OP and DP at d = 8
    assert all(float(r["wall_s"]) > 0 for r in csv.DictReader(cap))  # every estimate timed
    # the run section: wall times per stage and the sizes of every figure
    assert "Wall time of this invocation" in report and "| capacity estimates |" in report
    assert "| 1, 2 | optimal OP and DP at d = 6, 8 (largest 8)" in report
    assert "OP at d = 6, kappa = 0.5, 2 starts of the rank-m search" in report
    # the OP-DP table: both problems at d = 6 (grid) and d = 8 (bracketing design)
    with open(os.path.join(tmp_path, "op_dp_gap.csv")) as fh:
        gap = list(csv.DictReader(fh))
    assert [int(r["d"]) for r in gap] == [6, 8]
    for r in gap:
        assert float(r["op_minus_dp"]) == pytest.approx(float(r["op_p_c"]) / float(r["dp_p_c"]) - 1.0)
    # the rank-m trials ran the configured number of starts (their messages name it)
    rows = ResultStore(tmp_path, readonly=True).rows()
    rank = [r["result"].get("message", "") for r in rows if float(r["kappa"]) < 1.0]
    searched = [m for m in rank if "planned start" in m]
    assert searched and all("of 2 planned start(s)" in m for m in searched)
    # accuracy.csv: two loads for each of the three Hebbian d, the optimal d and the Adam d
    with open(os.path.join(tmp_path, "accuracy.csv")) as fh:
        acc = list(csv.DictReader(fh))
    assert len(acc) == 5 * 2 and {r["solver"] for r in acc} == {"hebbian", "optimal", "adam"}
    assert {r["ensemble"] for r in acc if r["solver"] == "adam"} == {"sphere"}
    assert "Adam-CE, d = 6" in report
    # zipf.csv: every solver of the configuration at d = 6 and 8, a = 2
    with open(os.path.join(tmp_path, "zipf.csv")) as fh:
        zipf = list(csv.DictReader(fh))
    assert sorted((int(r["d"]), r["solver"]) for r in zipf) == sorted(
        (d, s) for d in (6, 8) for s in QUICK.zipf_solvers)
    assert "| 8 | d = 6, 8, a = 2, N = 2 p_c(d) facts, 2 instances per (d, a), OP |" in report
    # outputs.csv: OP and DP at K = 2 and 6; at K = 2 the OP theory is Cover's p_c = 2d = 12 (closed form)
    with open(os.path.join(tmp_path, "outputs.csv")) as fh:
        outs = list(csv.DictReader(fh))
    assert sorted((r["problem"], int(r["outputs"])) for r in outs) == [("dp", 2), ("dp", 6), ("op", 2), ("op", 6)]
    cover = next(r for r in outs if r["problem"] == "op" and r["outputs"] == "2")
    assert abs(float(cover["theory_p_c"]) - 12.0) < 0.05
    assert f"OP, K = 2: measured p_c = {float(cover['p_c']):.1f}" in report
    assert all(0.0 <= float(r["accuracy"]) <= 1.0 for r in acc)
    # the paragraph names the measured Hebbian accuracy nearest alpha = 1/2 and the lower-bound caveat
    heb16 = min((r for r in acc if r["solver"] == "hebbian" and r["d"] == "16"),
                key=lambda r: abs(float(r["alpha"]) - 0.5))
    assert f"Hebbian, d = 16, p = {heb16['p']}" in report
    assert f"measured accuracy {float(heb16['accuracy']):.3f}" in report
    assert "lower bound on the best accuracy" in report and "give-up mode" in report
    _assert_render_saved_writes_the_same(tmp_path)
    # a second run reuses every trial: no row is rewritten
    before = {(r["experiment"], r["p"], r["trial"], r["solver"], r["kappa"]): r["created"]
              for r in ResultStore(tmp_path, readonly=True).rows()}
    again = reproduce(str(tmp_path), _tiny())
    after = {(r["experiment"], r["p"], r["trial"], r["solver"], r["kappa"]): r["created"]
             for r in ResultStore(tmp_path, readonly=True).rows()}
    assert again.trials_run == res.trials_run and before == after
    # through a pool of 2 workers the large-d estimates run in a second thread: same tables
    from validation.runtime.sweep import make_executor

    ex = make_executor("local", workers=2)
    try:
        pooled = reproduce(str(tmp_path / "pool"), _tiny(), executor=ex)
    finally:
        ex.shutdown()
    assert pooled.status == res.status
    for name in ("capacity.csv", "op_dp_gap.csv", "accuracy.csv", "outputs.csv", "spectra_moments.csv"):
        with open(os.path.join(tmp_path, name)) as fa, open(os.path.join(tmp_path, "pool", name)) as fb:
            rows_a, rows_b = list(csv.DictReader(fa)), list(csv.DictReader(fb))
        for r in rows_a + rows_b:
            r.pop("wall_s", None)
        assert rows_a == rows_b, name
    assert "ran in a second thread alongside" in open(pooled.report).read()
    _assert_render_saved_writes_the_same(tmp_path / "pool")


def _assert_render_saved_writes_the_same(out):
    """The report and every CSV table written again from reproduce_data.json equal what the run wrote."""
    texts = {f: (out / f).read_text() for f in os.listdir(out) if f.endswith((".csv", ".md"))}
    assert "report.md" in texts and "capacity.csv" in texts
    for f in texts:
        (out / f).write_text("")
    render_saved(str(out))
    for f, text in texts.items():
        assert (out / f).read_text() == text, f


def test_saved_configurations_read_back_equal():
    # provenance: the configurations of the package, written by to_dict and read back
    for config in (QUICK, FULL, _tiny()):
        assert ReproduceConfig.from_dict(config.to_dict()) == config


def test_render_saved_without_data_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=DATA_FILE):
        load_run(str(tmp_path))
    (tmp_path / DATA_FILE).write_text('{"format": 99}')
    with pytest.raises(ValueError, match="format 99"):
        load_run(str(tmp_path))


def test_result_contract_ok_and_incomplete():
    import json

    from validation.reproduce import ReproduceResult
    from validation.reproduce.run import run_status

    ok_estimate = {"solver": "optimal", "problem": "op", "d": 8, "kappa": 1.0, "status": "ok", "converged": True}
    failed_estimate = dict(ok_estimate, status="failed", converged=False)
    assert run_status([ok_estimate], 0) == ("ok", "ok")
    incomplete = run_status([ok_estimate, failed_estimate], 2)
    assert incomplete[0] == "incomplete" and "failed" in incomplete[1]
    assert "2 measurement trials failed" in incomplete[1]
    for status, message in (("ok", "ok"), incomplete):
        res = ReproduceResult("out", "out/report.md", ("a.png",), ("b.csv",), float("nan"), 5, status,
                              status == "ok", message, QUICK.to_dict())
        assert res.status in ReproduceResult.STATUSES
        data = json.loads(json.dumps(res.to_dict(), allow_nan=False))
        assert data["seconds"] is None and data["config"]["theory_dims"] == list(QUICK.theory_dims)


def test_measurement_of_a_rank_search_that_finds_nothing_is_a_not_stored_record():
    # d = 8, rank 2, p = 20: above replica.capacity(8, kappa=0.25) (about 16), below the
    # full-rank p_c (about 22), so the 3-start search ends not_found; the sweep must record
    # it (as not_stored with its verdict), not turn it into an error
    from validation.runtime.sweep import Task, execute_task

    task = Task(function="validation.reproduce:measurement_trial", experiment="measure", problem="op",
                solver="optimal", ensemble="gaussian", d=8, p=20, kappa=0.25, seed=0, trial=0,
                options=(("restarts", 3), ("refine", False)))
    record = execute_task(task)
    assert record["status"] == "not_stored" and record["verdict"] == "not_found", record
    assert record["stored"] is False and len(record["singular_values"]) == 2


def test_op_dp_gap_table_pairs_the_problems_by_d(tmp_path):
    from validation.reproduce.tables import table_op_dp_gap

    def row(problem, d, p_c, solver="optimal", kappa=1.0):
        return {"problem": problem, "solver": solver, "d": d, "kappa": kappa, "p_c": p_c, "p_c_low": p_c - 1,
                "p_c_high": p_c + 1, "theory_p_c": 100.0, "trials": 8, "undecided": 1,
                "status": "unbracketed" if problem == "dp" else "ok"}

    rows = [row("op", 16, 110.0), row("dp", 16, 100.0), row("op", 32, 300.0),  # no DP at d = 32
            row("dp", 16, 50.0, solver="hebbian"), row("op", 16, 60.0, kappa=0.5)]
    path, gap = table_op_dp_gap(str(tmp_path), QUICK, rows)
    assert [r["d"] for r in gap] == [16]
    assert gap[0]["op_minus_dp"] == pytest.approx(0.1) and gap[0]["undecided"] == 2
    assert (gap[0]["op_status"], gap[0]["dp_status"]) == ("ok", "unbracketed")
    assert open(path).read().splitlines()[0].startswith("d,op_p_c,op_p_c_low")


def test_lp_reference_skips_the_large_d_estimates():
    # the LP needs O(d p^2) memory: the bracketed d = 128, 256 estimates run with "optimal" only
    from validation.reproduce import FULL
    from validation.reproduce.plan import capacity_runs

    large = {(r[0], r[2]) for r in capacity_runs(FULL) if r[2] >= 128 and r[1] == "optimal"}
    assert large == {("op", 128), ("dp", 128), ("op", 256), ("dp", 256)}
    lp = dataclasses.replace(FULL, optimal_solver="lp")
    assert max(r[2] for r in capacity_runs(lp) if r[1] == "lp") == max(FULL.optimal_dims)


def test_large_d_estimates_go_alongside_with_a_pool_only():
    """With 2+ workers the bracketed large-d runs (longest first) move to the second thread."""
    from validation.reproduce import FULL
    from validation.reproduce.plan import capacity_runs, in_run_order, split_alongside

    class Pool:
        workers = 2

    runs = capacity_runs(FULL)
    main, alongside = split_alongside(FULL, Pool())
    assert [(r[0], r[2]) for r in alongside] == [("dp", 256), ("op", 256), ("dp", 128), ("op", 128)]
    assert all(r[4].kind == "bracket" for r in alongside)
    assert len(main) + len(alongside) == len(runs) and not any(r in main for r in alongside)
    assert split_alongside(FULL, None) == (runs, [])
    # the estimates come back in the order of the runs, whichever thread made them
    labels = [f"{r[0]}-{r[1]}-{r[2]}-{r[3]}" for r in main + alongside]
    assert in_run_order(FULL, main + alongside, labels) == [f"{r[0]}-{r[1]}-{r[2]}-{r[3]}" for r in runs]
    # the run at spectra_dim stays in the main thread (the measurements start from it)
    at64 = dataclasses.replace(FULL, scale_runs=(("op", 64, 8, 0), ("dp", 256, 4, 0)))
    assert [(r[0], r[2]) for r in split_alongside(at64, Pool())[1]] == [("dp", 256)]


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_measurement_with_k_answers_reads_the_target_map(problem):
    # option outputs = 4: the score matrix is (4, p); the record's samples against a direct
    # computation from the instance's scores and its target map
    import numpy as np

    from validation import FactSettings, make_instance, solve
    from validation.runtime.sweep import Task, execute_task

    p, K = 24, 4
    task = Task(function="validation.reproduce:measurement_trial", experiment="measure", problem=problem,
                solver="hebbian", ensemble="gaussian", d=8, p=p, kappa=1.0, seed=0, trial=0,
                options=(("outputs", K),))
    record = execute_task(task)
    assert record["status"] in ("stored", "not_stored"), record
    inst = make_instance(8, p, problem=problem, seed=record["instance_seed"], facts=FactSettings(outputs=K))
    W = solve(inst, solver="hebbian").matrix()
    S = inst.scores(W) / (np.linalg.norm(W) / 8)
    f = inst.target_index
    np.testing.assert_array_equal(record["targets"], [S[f[mu], mu] for mu in range(p)])
    np.testing.assert_array_equal(record["top_competitors"],
                                  [max(S[r, mu] for r in range(K) if r != f[mu]) for mu in range(p)])
    np.testing.assert_array_equal(record["competitors"],
                                  [S[r, mu] for r in range(K) for mu in range(p) if r != f[mu]])
    s = np.linalg.svd(W, compute_uv=False)
    np.testing.assert_allclose(record["singular_values"], s / (np.linalg.norm(W) / np.sqrt(8)), rtol=1e-12)


def test_zipf_figure_text_states_the_fitted_slopes(tmp_path):
    # figure 8 on its own: the slopes in the text are the least-squares fits to the measured means
    import numpy as np

    from validation.reproduce.run import RunContext, _measure_zipf
    from validation.reproduce.sections import figure_zipf
    from validation.measurements.zipf import fitted_slope

    config = dataclasses.replace(QUICK, zipf_dims=(6, 8, 10), zipf_exponents=(1.5,), zipf_trials=2,
                                 zipf_solvers=("hebbian", "hebbian_frequency"))
    zipf = _measure_zipf(RunContext(config, store=None))
    assert [m["d"] for m in zipf["measurements"]] == [6, 8, 10]
    assert {c["solver"] for c in zipf["theory_curves"]} == {"hebbian", "hebbian_frequency"}
    path, text = figure_zipf(str(tmp_path), config, zipf)
    assert os.path.getsize(path) > 10_000
    for solver, label in (("hebbian", "Hebbian"), ("hebbian_frequency", "Hebbian, w = f")):
        e = [next(p["error"] for p in m["points"] if p["solver"] == solver) for m in zipf["measurements"]]
        slope = fitted_slope(np.array([6.0, 8.0, 10.0]), np.array(e))
        assert f"a = 1.5, {label}: measured slope {slope:+.2f}" in text
    assert "asymptotic -0.17" in text  # -(a - 1) / (2 a) at a = 1.5
    assert "upper bounds" in text
