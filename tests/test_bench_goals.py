"""benchmarks/bench_goals.py: the goal verdicts and the records it reads (no solve is timed here).

The limits are those the script states (OP decisions <= 30 GEMM-equivalents at d >= 256,
DP <= 150 at d >= 128, the certified max margin of OP within 2 % in <= 10x the decision at
d = 64 and 128, the long goals in minutes); the rows are synthetic, each built to sit on one
side of a limit.
"""

import argparse
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def bench_goals():
    sys.path.insert(0, str(BENCH))
    try:
        import bench_goals
    finally:
        sys.path.remove(str(BENCH))
    return bench_goals


ARGS = argparse.Namespace(tol=0.02, lp_max_d=16, lbfgs_max_d=128)


def _decision(d, problem, gemm_eq, f=0.95, status="stored", **extra):
    return {"d": d, "problem": problem, "f": f, "seed": 0, "status": status, "gemm_eq": gemm_eq, **extra}


def _verdicts(rows, bench_goals, dp256=None, records=None):
    return {r["goal"]: r["verdict"] for r in bench_goals.goals(rows, dp256, records or {}, ARGS)}


def _one(verdicts, start):
    [verdict] = [v for g, v in verdicts.items() if g.startswith(start)]
    return verdict


def test_gemm_goals_use_the_worst_decision_at_the_sizes_they_name(bench_goals):
    rows = [_decision(128, "op", 500.0),                       # below d = 256: no OP goal
            _decision(256, "op", 29.9), _decision(512, "op", 30.0, f=1.05, status="not_stored"),
            _decision(64, "dp", 900.0), _decision(128, "dp", 149.0)]
    v = _verdicts(rows, bench_goals)
    assert _one(v, "OP decisions at d >= 256") == "**met**"
    assert _one(v, "DP decisions at d >= 128") == "**met**"   # d = 64 is below the goal's sizes
    rows.append(_decision(256, "dp", 150.5, f=1.05, status="not_stored"))
    assert _one(_verdicts(rows, bench_goals), "DP decisions at d >= 128") == "**not met**"
    rows.append(_decision(512, "op", 30.01))
    assert _one(_verdicts(rows, bench_goals), "OP decisions at d >= 256") == "**not met**"


def test_gemm_goals_name_the_floor_of_a_decision(bench_goals):
    rows = [_decision(128, "dp", 900.0, floor_eq=210.0), _decision(256, "dp", 1100.0, floor_eq=320.5),
            _decision(256, "op", 25.0, floor_eq=5.1), _decision(512, "op", 41.0, floor_eq=3.9)]
    measured = {r["goal"]: r["measured"] for r in bench_goals.goals(rows, None, {}, ARGS)}
    [dp] = [m for g, m in measured.items() if g.startswith("DP decisions at d >= 128")]
    [op] = [m for g, m in measured.items() if g.startswith("OP decisions at d >= 256")]
    assert "floor 210-320 (`floor_eq`" in dp and "max 1.1e+03 (d = 256" in dp
    assert "floor 3.9-5.1 (`floor_eq`" in op and "max 41 (d = 512" in op
    rows = [_decision(256, "op", 25.0)]  # rows without the column: no floor claimed
    assert "floor" not in bench_goals.goals(rows, None, {}, ARGS)[0]["measured"]


def test_a_goal_without_rows_says_not_measured(bench_goals):
    v = _verdicts([_decision(64, "op", 10.0)], bench_goals)
    assert _one(v, "OP decisions at d >= 256") == "not measured"
    assert _one(v, "`validation reproduce` (full)") == "not measured"


def test_max_margin_goal_needs_convergence_gap_and_ratio_at_d64(bench_goals):
    def mm(ratio, gap, status="converged", d=64):
        return _decision(d, "op", 20.0, ratio=ratio, gap=gap, mm_status=status)

    assert _one(_verdicts([mm(9.9, 0.019)], bench_goals), "certified max margin, OP d = 64") == "**met**"
    for bad in (mm(10.1, 0.019), mm(9.0, 0.021), mm(9.0, 0.01, status="max_iter")):
        assert _one(_verdicts([mm(5.0, 0.01), bad], bench_goals), "certified max margin, OP d = 64") \
            == "**not met**"
    # OP at d = 128 is a goal too; d = 256 is measured, not a goal
    assert _one(_verdicts([mm(25.0, 0.019, d=128)], bench_goals), "certified max margin, OP d = 128") \
        == "**not met**"
    assert _one(_verdicts([mm(25.0, 0.019, d=256)], bench_goals),
                "certified max margin, OP d = 256").startswith("measured (no goal), over 10x")


def test_long_goals_have_their_limits_in_minutes_and_gigabytes(bench_goals):
    records = {"reproduce": {"seconds": 3599.0, "source": "x"},
               "sweep_dp128": {"seconds": 1801.0, "source": "x"},
               "op1024": {"seconds": 600.0, "peak_rss_mb": 8200.0, "status": "stored", "p": 69942, "source": "x"}}
    v = _verdicts([], bench_goals, records=records)
    assert _one(v, "`validation reproduce` (full)") == "**met**"
    assert _one(v, "DP capacity sweep at d = 128") == "**not met**"
    assert _one(v, "one OP decision at d = 1024") == "**not met**"   # fast enough, but over 8 GB
    records["op1024"]["peak_rss_mb"] = 8000.0
    assert _one(_verdicts([], bench_goals, records=records), "one OP decision at d = 1024") == "**met**"
    dp = {"seconds": 60.5, "status": "stored", "peak_rss_mb": 1400.0}
    assert _one(_verdicts([], bench_goals, dp256=dp), "one DP decision at d = 256") == "**not met**"


def test_baseline_agreement_ignores_the_uncertified_mark_only(bench_goals):
    rows = [_decision(16, "op", 50.0, lp="stored", lbfgs="stored"),
            _decision(16, "op", 50.0, f=1.05, status="not_stored", lp="not_stored", lbfgs="not_stored*")]
    v = _verdicts(rows, bench_goals)
    assert _one(v, "decisions equal those of the LP") == "**met**"
    assert _one(v, "decisions equal those of scipy L-BFGS-B") == "**met**"
    rows.append(_decision(16, "dp", 50.0, f=1.05, status="not_stored", lp="stored"))
    assert _one(_verdicts(rows, bench_goals), "decisions equal those of the LP") == "**not met**"


def test_the_reproduction_time_is_read_from_the_committed_report(bench_goals, tmp_path, monkeypatch):
    report = tmp_path / "full" / "report.md"
    report.parent.mkdir(parents=True)
    report.write_text("# Theory\n\nWall time of this invocation: 3250 s (54.2 min), executor: x.\n")
    monkeypatch.setattr(bench_goals, "ROOT", tmp_path)
    monkeypatch.setattr(bench_goals, "FULL_RUN", tmp_path / "full")
    monkeypatch.setattr(bench_goals, "RECORDS", tmp_path / "records")
    record = bench_goals.load_record("reproduce")
    assert record["seconds"] == 3250.0 and "experiments/reproduction/full/report.md" in record["source"]
    assert bench_goals.load_record("sweep_op512") is None


def test_generator_and_dp300_goals(bench_goals):
    # the DP <= 300 row takes the worst DP decision at d >= 128; the generator row reads the
    # committed record of bench_dp_generator.py and names the speedups of every target
    rows = [_decision(128, "dp", 280.0), _decision(256, "dp", 310.0, f=1.05, status="not_stored")]
    goals = {r["goal"]: r for r in bench_goals.goals(rows, None, {}, ARGS)}
    [dp300] = [r for g, r in goals.items() if "<= 300" in g]
    assert dp300["verdict"] == "**not met**" and "max 310" in dp300["measured"]
    rows[1]["gemm_eq"] = 290.0
    goals = {r["goal"]: r for r in bench_goals.goals(rows, None, {}, ARGS)}
    assert [r for g, r in goals.items() if "<= 300" in g][0]["verdict"] == "**met**"
    [generator] = [r for g, r in goals.items() if g.startswith("DP candidate generator")]
    assert "generator 2 against generator 1" in generator["measured"] and generator["source"].startswith("recorded")
    record = json.loads((bench_goals.RECORDS / "dp_generator.json").read_text())
    slowest = min(r["speedup"] for t in record["targets"] for r in t["rows"])
    assert (generator["verdict"] == "**met**") == (slowest >= 3)


def test_a_stopped_sweep_is_recorded_from_its_store_and_never_called_met(bench_goals, tmp_path):
    # a synthetic store: 2 of 2 stored at p = 100, 0 of 3 at p = 110, one error at p = 105
    from validation.runtime.store import ResultStore

    key = {"experiment": "capacity", "problem": "op", "solver": "optimal", "ensemble": "gaussian", "d": 16,
           "kappa": 1.0, "seed": 0, "version": "x"}
    with ResultStore(tmp_path / "store") as db:
        for p, trial, status in [(100, 0, "stored"), (100, 1, "stored"), (105, 0, "error"),
                                 (110, 0, "not_stored"), (110, 1, "not_stored"), (110, 2, "not_stored")]:
            db.put(dict(key, p=p, trial=trial), {"status": status, "seconds": 60.0})
    record = bench_goals.stopped_sweep_record(tmp_path / "store", 1000.0)
    assert record["trials_finished"] == 6 and record["bracket"] == (100.0, 110.0)
    assert [(q["p"], q["stored"], q["not_stored"], q["other"]) for q in record["curve"]] == \
        [(100, 2, 0, 0), (105, 0, 0, 1), (110, 0, 3, 0)]
    assert "estimate" not in record   # no p_c table reads it as a finished sweep
    v = _verdicts([], bench_goals, records={"sweep_op512": dict(record, source="x")})
    assert _one(v, "OP capacity sweep at d = 512") == "incomplete"
