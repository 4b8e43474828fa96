"""Sweep runner: resume after a kill, crash recording, dask == local, bad scheduler."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from validation.runtime.store import ResultStore
from validation.runtime.sweep import Task, make_executor, run_tasks, task_seed

FUNC = "validation.runtime.sweep:synthetic_trial"


def tiny_tasks(n_p=4, trials=6, options=()):
    return [Task(FUNC, "tiny", "op", "synthetic", "gaussian", 8, p, 1.0, 7, t, options)
            for p in (60, 80, 100, 120)[:n_p] for t in range(trials)]


def _signature(store):
    return sorted((r["p"], r["trial"], r["status"], r["instance_seed"], r["result"].get("u"))
                  for r in store.rows())


def test_task_seed_is_a_spawn_child():
    import numpy as np

    child = np.random.SeedSequence(7).spawn(101)[100].spawn(4)[3]
    hi, lo = (int(x) for x in child.generate_state(2, np.uint32))
    assert task_seed(7, 100, 3) == ((hi << 32) | lo) & ((1 << 63) - 1)
    assert task_seed(7, 100, 3) != task_seed(7, 100, 4) != task_seed(8, 100, 3)


def test_serial_equals_process_pool(tmp_path):
    ref = run_tasks(tiny_tasks(), ResultStore(tmp_path / "a"), None)
    ex = make_executor("local", workers=2)
    try:
        rep = run_tasks(tiny_tasks(), ResultStore(tmp_path / "b"), ex)
    finally:
        ex.shutdown()
    assert rep.computed == 24 and rep.errors == 0
    assert _signature(ResultStore(tmp_path / "a")) == _signature(ResultStore(tmp_path / "b"))
    assert {t: r["u"] for t, r in ref.records.items()} == {t: r["u"] for t, r in rep.records.items()}


SCRIPT = textwrap.dedent("""
    import sys
    from validation.runtime.store import ResultStore
    from validation.runtime.sweep import Task, make_executor, run_tasks
    tasks = [Task("validation.runtime.sweep:synthetic_trial", "tiny", "op", "synthetic", "gaussian", 8, p, 1.0, 7, t,
                  (("sleep", 0.15),))
             for p in (60, 80, 100, 120) for t in range(6)]
    ex = make_executor("local", workers=2)
    run_tasks(tasks, ResultStore(sys.argv[1]), ex, progress=False)
    ex.shutdown()
""")


def _count_rows(path):
    if not os.path.exists(path):
        return 0
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        n = con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        con.close()
        return n
    except sqlite3.Error:
        return 0


def test_killed_sweep_resumes_without_recomputing(tmp_path):
    out = tmp_path / "killed"
    db = out / "results.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(out)], start_new_session=True)
    deadline = time.time() + 120
    while _count_rows(db) < 6 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, mid-run
    proc.wait()
    before = _count_rows(db)
    assert 6 <= before < 24, f"kill came too late or too early ({before} rows)"
    options = ()  # options are not part of the key: resume without the sleep
    store = ResultStore(out)
    rep = run_tasks(tiny_tasks(options=options), store, None)
    assert rep.reused == before and rep.computed == 24 - before
    # every trial exactly once, with the same results as an uninterrupted run
    keys = [(r["p"], r["trial"]) for r in store.rows()]
    assert len(keys) == 24 and len(set(keys)) == 24
    ref = ResultStore(tmp_path / "ref")
    run_tasks(tiny_tasks(options=options), ref, None)
    assert _signature(store) == _signature(ref)
    # and running again recomputes nothing
    assert run_tasks(tiny_tasks(options=options), store, None).computed == 0


def _check_faults(rep, store, expected):
    assert rep.errors == len(expected) and len(rep.records) == 24
    errs = {(r["p"], r["trial"]): r["error"] for r in store.rows(status="error")}
    assert set(errs) == set(expected)
    for where, text in expected.items():
        assert text in errs[where]
    # every other task finished normally, with the same result as without faults
    ref = run_tasks(tiny_tasks(), None, None).records
    for t, r in rep.records.items():
        if (t.p, t.trial) not in errs:
            plain = Task(*[getattr(t, f) for f in ("function", "experiment", "problem", "solver", "ensemble",
                                                    "d", "p", "kappa", "seed", "trial")])
            assert r["u"] == ref[plain]["u"]


def test_failing_task_is_recorded_and_sweep_goes_on(tmp_path):
    options = (("raise_on", ((80, 2), (120, 5))),)
    store = ResultStore(tmp_path)
    rep = run_tasks(tiny_tasks(options=options), store, None)
    _check_faults(rep, store, {(80, 2): "injected failure at p=80 trial=2",
                               (120, 5): "injected failure at p=120 trial=5"})
    # a rerun retries the failed tasks only (they fail again, deterministically)
    rep2 = run_tasks(tiny_tasks(options=options), store, None)
    assert rep2.computed == 2 and rep2.reused == 22


@pytest.mark.slow
def test_dying_worker_is_recorded_and_sweep_goes_on(tmp_path):
    options = (("raise_on", ((80, 2),)), ("exit_on", ((100, 1),)))
    ex = make_executor("local", workers=2)
    store = ResultStore(tmp_path)
    try:
        rep = run_tasks(tiny_tasks(options=options), store, ex, window=3)
    finally:
        ex.shutdown()
    _check_faults(rep, store, {(80, 2): "injected failure", (100, 1): "worker process died"})


@pytest.mark.slow
def test_dask_local_cluster_equals_local(tmp_path):
    pytest.importorskip("distributed")
    ref_store = ResultStore(tmp_path / "local")
    run_tasks(tiny_tasks(), ref_store, None)
    ex = make_executor("dask", workers=2)
    try:
        run_tasks(tiny_tasks(), ResultStore(tmp_path / "dask"), ex)
    finally:
        ex.shutdown()
    assert _signature(ResultStore(tmp_path / "dask")) == _signature(ref_store)


@pytest.mark.slow
def test_unreachable_scheduler_fails_fast():
    pytest.importorskip("distributed")
    start = time.time()
    with pytest.raises(ValueError, match="unreachable"):
        make_executor("dask", workers=1, scheduler="tcp://127.0.0.1:9")
    assert time.time() - start < 30


def test_bad_executor_arguments():
    with pytest.raises(ValueError, match="executor"):
        make_executor("threads")
    with pytest.raises(ValueError, match="workers"):
        make_executor("local", workers=0)
    with pytest.raises(ValueError, match="scheduler"):
        make_executor("local", workers=1, scheduler="tcp://x:1")


def test_sweep_report_contract_with_and_without_errors():
    import json

    ok = run_tasks(tiny_tasks(n_p=1, trials=2), None, None)
    failed = run_tasks(tiny_tasks(n_p=2, trials=2, options=(("raise_on", ((80, 1),)),)), None, None)
    assert (ok.status, ok.converged) == ("ok", True)
    assert (failed.status, failed.converged, failed.errors) == ("errors", False, 1)
    for rep in (ok, failed):
        assert rep.status in type(rep).STATUSES
        data = json.loads(json.dumps(rep.to_dict(), allow_nan=False))
        assert set(data) == {"computed", "reused", "errors", "seconds", "status", "converged", "message"}


def test_task_to_dict_is_json_safe():
    import json

    task = Task(FUNC, "tiny", "op", "synthetic", "gaussian", 8, 60, float("nan"), 7, 0, (("p_c", float("inf")),))
    data = json.loads(json.dumps(task.to_dict(), allow_nan=False))
    assert data["kappa"] is None and data["options"] == {"p_c": None}


class _PoolBrokenAtSubmit:
    """A serial stand-in for the process pool whose submit fails once, as after a worker died
    between the sweep's last wait and its next submit (the race the sweep must survive)."""

    workers = 2

    def __init__(self, fail_at):
        self.calls, self.fail_at, self.rebuilds, self.broken = 0, fail_at, 0, False

    def submit(self, fn, *args):
        import concurrent.futures as cf
        from concurrent.futures.process import BrokenProcessPool

        self.calls += 1
        if self.calls == self.fail_at:
            self.broken = True
        if self.broken:
            raise BrokenProcessPool("A child process terminated abruptly")
        fut = cf.Future()
        fut.set_result(fn(*args))
        return fut

    def rebuild(self):
        self.rebuilds += 1
        self.broken = False

    def shutdown(self):
        pass


@pytest.mark.parametrize("fail_at", [1, 2, 5])
def test_pool_broken_at_submit_is_rebuilt_and_nothing_is_lost(tmp_path, fail_at):
    ref = run_tasks(tiny_tasks(n_p=2, trials=3), ResultStore(tmp_path / "ref"), None)
    ex = _PoolBrokenAtSubmit(fail_at)
    rep = run_tasks(tiny_tasks(n_p=2, trials=3), ResultStore(tmp_path / "b"), ex, window=3)
    assert ex.rebuilds == 1 and rep.computed == 6 and rep.errors == 0
    assert {t: r["u"] for t, r in rep.records.items()} == {t: r["u"] for t, r in ref.records.items()}


# -- several sweeps sharing one executor from different threads ------------------------
def _in_thread(fn, *args):
    import threading

    box = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def test_two_threads_share_one_pool_and_one_store_file(tmp_path):
    """Two sweeps in two threads, each with its own connection to one store file, equal a serial run."""
    first, second = tiny_tasks()[:12], tiny_tasks()[12:]
    ref = run_tasks(first + second, ResultStore(tmp_path / "ref"), None)
    ex = make_executor("local", workers=2)
    path = tmp_path / "shared"
    ResultStore(path).close()  # the file exists before the threads open their connections
    try:  # a connection is used in the thread that opened it
        thread, box = _in_thread(lambda: run_tasks(second, ResultStore(path), ex))
        mine = run_tasks(first, ResultStore(path), ex)
        thread.join(60)
    finally:
        ex.shutdown()
    assert not thread.is_alive() and "error" not in box
    assert mine.computed == 12 and box["value"].computed == 12
    assert _signature(ResultStore(path)) == _signature(ResultStore(tmp_path / "ref"))
    both = {**mine.records, **box["value"].records}
    assert {t: r["u"] for t, r in both.items()} == {t: r["u"] for t, r in ref.records.items()}


def test_a_terminated_pool_refuses_work_and_ends_the_sweep_of_another_thread(tmp_path):
    ex = make_executor("local", workers=2)
    pool = ex._pool
    ex.rebuild()  # not broken: the same pool is kept
    assert ex._pool is pool
    tasks = tiny_tasks(options=(("sleep", 0.5),))
    ResultStore(tmp_path).close()
    thread, box = _in_thread(lambda: run_tasks(tasks, ResultStore(tmp_path), ex))
    deadline = time.time() + 60
    while not ResultStore(tmp_path, readonly=True).rows() and time.time() < deadline:
        time.sleep(0.2)  # at least one task finished: the workers are up
    ex.terminate()
    thread.join(30)
    assert not thread.is_alive()
    assert isinstance(box.get("error"), RuntimeError) and "terminated" in str(box["error"])
    with pytest.raises(RuntimeError, match="terminated"):
        ex.submit(print, 1)
    with pytest.raises(RuntimeError, match="terminated"):
        ex.rebuild()
    done = len(ResultStore(tmp_path, readonly=True).rows())
    assert 1 <= done < len(tasks)  # what finished is kept; the rest is not recorded
