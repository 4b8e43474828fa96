"""Result store: schema checks leave foreign/corrupted files untouched; rows round-trip."""

import hashlib
import sqlite3

import pytest

from validation.runtime.store import APPLICATION_ID, ResultStore


def _key(**kw):
    key = dict(experiment="e", problem="op", solver="hebbian", ensemble="gaussian", d=8, p=10,
               kappa=1.0, seed=0, trial=0, version="test")
    key.update(kw)
    return key


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_round_trip_and_resume_keys(tmp_path):
    with ResultStore(tmp_path) as store:
        store.put(_key(trial=0), {"status": "stored", "stored": True, "instance_seed": 12, "margin": 0.5})
        store.put(_key(trial=1), {"status": "error", "stored": None, "error": "RuntimeError: boom"})
    # reopen: persisted, application id set, error rows are not "finished"
    with ResultStore(tmp_path / "results.sqlite") as store:
        assert store.get(_key(trial=0))["margin"] == 0.5
        finished = store.finished_keys()
        assert len(finished) == 1 and next(iter(finished))[8] == 0
        rows = store.rows(status="error")
        assert rows[0]["error"] == "RuntimeError: boom"
        # a retried error is replaced, not duplicated
        store.put(_key(trial=1), {"status": "not_stored", "stored": False})
        assert store.summary().rows == 2
    con = sqlite3.connect(tmp_path / "results.sqlite")
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_corrupted_file_is_rejected_and_untouched(tmp_path):
    path = tmp_path / "results.sqlite"
    path.write_bytes(b"this is not a database at all\x00" * 200)
    before = _digest(path)
    with pytest.raises(ValueError, match="not a readable SQLite database"):
        ResultStore(tmp_path)
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]


def test_truncated_store_is_rejected_and_untouched(tmp_path):
    with ResultStore(tmp_path) as store:
        for t in range(50):
            store.put(_key(trial=t), {"status": "stored", "stored": True, "pad": "x" * 200})
    path = tmp_path / "results.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\xff" * 4000 + data[4100:])  # smash the schema page
    before = _digest(path)
    with pytest.raises(ValueError, match="left untouched"):
        ResultStore(tmp_path)
    assert _digest(path) == before


@pytest.mark.parametrize("application_id, message", [(None, "another application"),
                                                     (APPLICATION_ID, "schema version")])
def test_foreign_or_other_schema_database_is_rejected_and_untouched(tmp_path, application_id, message):
    path = tmp_path / "results.sqlite"
    con = sqlite3.connect(path)
    if application_id is not None:
        con.execute(f"PRAGMA application_id={application_id}")
    con.execute("CREATE TABLE results (x INTEGER)")
    con.execute("INSERT INTO results VALUES (1)")
    con.commit()
    con.close()
    before = _digest(path)
    with pytest.raises(ValueError, match=message):
        ResultStore(tmp_path)
    assert _digest(path) == before


def test_export_csv(tmp_path):
    import io

    with ResultStore(tmp_path) as store:
        store.put(_key(trial=0), {"status": "stored", "stored": True})
        store.put(_key(trial=1, p=12), {"status": "undecided", "stored": None})
        buf = io.StringIO()
        assert store.export_csv(buf) == 2
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("experiment,problem,solver,ensemble,d,p,kappa,seed,trial,version,status")
    assert len(lines) == 3 and ",undecided," in lines[2]


def test_bad_status_rejected(tmp_path):
    with ResultStore(":memory:") as store:
        with pytest.raises(ValueError, match="status"):
            store.put(_key(), {"status": "maybe"})


def test_summary_contract_empty_ok_and_errors():
    import json

    with ResultStore(":memory:") as store:
        summaries = [store.summary()]
        store.put(_key(trial=0), {"status": "stored", "stored": True, "margin": float("nan")})
        summaries.append(store.summary())
        store.put(_key(trial=1), {"status": "error", "stored": None, "error": "boom"})
        summaries.append(store.summary())
        assert store.get(_key(trial=0))["stored"] is True
    assert [s.status for s in summaries] == ["empty", "ok", "errors"]
    assert [s.rows for s in summaries] == [0, 1, 2] and summaries[2].by_status == {"stored": 1, "error": 1}
    for s in summaries:
        assert s.status in type(s).STATUSES and s.converged == (s.status == "ok")
        json.dumps(s.to_dict(), allow_nan=False)
