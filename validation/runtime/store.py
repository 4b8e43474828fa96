"""Result store: one SQLite database (stdlib ``sqlite3``, WAL mode) per output folder.

Every finished task of a sweep is one row, committed on its own, so a sweep
killed at any moment and started again recomputes nothing that finished and
loses nothing that was committed.  The key of a row is

    (experiment, problem, solver, ensemble, d, p, kappa, seed, trial, version)

where ``seed`` is the run's base seed and ``version`` the package version that
computed the row, marked ``+dp-generator<g>`` for a DP trial of candidate generator
``g >= 2`` (:func:`validation.runtime.sweep.keyed_version`), so trials of different generators
never mix.  A failed task is stored with ``status = "error"`` and the error
text; it does not count as finished and is tried again on the next run.

Before anything is written, an existing file is opened read-only and its
``application_id`` and schema are checked, so a corrupted or foreign file gives a
clear ``ValueError`` and is left byte-for-byte untouched.

See ``notes/reproduce.md`` for the design.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
from dataclasses import dataclass
from typing import ClassVar, Iterable


from replica.common.results import Result, numpy_to_json
from replica.common.seeds import resolve_seed

__all__ = ["ResultStore", "APPLICATION_ID", "SCHEMA_VERSION", "STORE_FILENAME", "package_version",
           "KEY_COLUMNS", "StoreSummary"]

#: ``PRAGMA application_id`` of a result store: the ASCII bytes "LMCv".
APPLICATION_ID = 0x4C4D4376
#: ``PRAGMA user_version`` of the current schema.
SCHEMA_VERSION = 1
#: File name of the store inside an output folder.
STORE_FILENAME = "results.sqlite"

KEY_COLUMNS = ("experiment", "problem", "solver", "ensemble", "d", "p", "kappa", "seed", "trial",
               "version")
_VALUE_COLUMNS = ("status", "stored", "instance_seed", "seconds", "error", "result", "created")

_SCHEMA = """
CREATE TABLE results (
    experiment    TEXT    NOT NULL,
    problem       TEXT    NOT NULL,
    solver        TEXT    NOT NULL,
    ensemble      TEXT    NOT NULL,
    d             INTEGER NOT NULL,
    p             INTEGER NOT NULL,
    kappa         REAL    NOT NULL,
    seed          INTEGER NOT NULL,
    trial         INTEGER NOT NULL,
    version       TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('stored', 'not_stored', 'undecided', 'error')),
    stored        INTEGER,
    instance_seed TEXT,
    seconds       REAL,
    error         TEXT,
    result        TEXT    NOT NULL,
    created       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (experiment, problem, solver, ensemble, d, p, kappa, seed, trial, version)
)
"""


STORE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
"""Endings that make a path a database file rather than a folder."""


def package_version() -> str:
    """Version of the installed distribution ``linear-memory-capacity`` ("unknown" if absent)."""
    try:
        from importlib.metadata import version

        return version("linear-memory-capacity")
    except Exception:  # pragma: no cover - not installed
        return "unknown"


def _expected_columns() -> list[str]:
    return list(KEY_COLUMNS) + list(_VALUE_COLUMNS)


def _check_existing(path: str) -> None:
    """Open ``path`` read-only and check that it is a result store; never writes to it."""
    uri = "file:" + os.path.abspath(path) + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise ValueError(f"result store {path!r} cannot be opened read-only: {exc}") from None
    try:
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        user_version = con.execute("PRAGMA user_version").fetchone()[0]
        cols = [row[1] for row in con.execute("PRAGMA table_info(results)")]
        # a valid header with corrupted pages only shows when the pages are read
        problems = [row[0] for row in con.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"result store {path!r} is not a readable SQLite database ({exc}); "
                         "it was left untouched - choose another --out") from None
    finally:
        con.close()
    if app_id != APPLICATION_ID:
        raise ValueError(f"result store {path!r} is a SQLite database of another application "
                         f"(application_id {app_id:#x}, expected {APPLICATION_ID:#x}); "
                         "it was left untouched - choose another --out")
    if user_version != SCHEMA_VERSION or cols != _expected_columns():
        raise ValueError(f"result store {path!r} has schema version {user_version} with columns "
                         f"{cols}, expected version {SCHEMA_VERSION}; it was left untouched")
    if problems != ["ok"]:
        detail = next((p for p in problems if not p.startswith("***")), problems[0])
        raise ValueError(f"result store {path!r} is corrupted (PRAGMA quick_check: {detail}); "
                         "it was left untouched - restore it or choose another --out")


@dataclass(frozen=True)
class StoreSummary(Result):
    """Counts of the rows of a result store by status.

    Attributes
    ----------
    path : str
    rows : int
    by_status : dict
        Record status (``stored``, ``not_stored``, ``undecided``, ``error``) -> rows.
    status : str
        ``"ok"`` (rows and no error rows), ``"empty"`` (no rows) or ``"errors"`` (some
        rows are errors; a rerun of the sweep tries them again).
    converged : bool
        ``status == "ok"``.
    message : str
    """

    STATUSES: ClassVar[tuple] = ("ok", "empty", "errors")

    path: str
    rows: int
    by_status: dict
    status: str
    converged: bool
    message: str

    @classmethod
    def of(cls, path, by_status) -> StoreSummary:
        """The summary of the counts ``by_status``."""
        rows = int(sum(by_status.values()))
        status = "empty" if rows == 0 else ("errors" if by_status.get("error") else "ok")
        message = ", ".join(f"{n} {name}" for name, n in sorted(by_status.items())) or "no rows"
        return cls(path, rows, dict(by_status), status, status == "ok", message)


class ResultStore:
    """SQLite result store of a sweep.

    Parameters
    ----------
    path : str or os.PathLike
        Folder (then ``<folder>/results.sqlite``; created if needed) or a database file
        (an existing file, or a name ending in ``.sqlite``, ``.sqlite3`` or ``.db``).  ``":memory:"``
        gives a throw-away store.
    readonly : bool
        Open an existing store for reading only (``validation export``).

    Raises
    ------
    ValueError
        If the file exists but is not a result store of this schema (corrupted,
        foreign, other schema version); the file is not modified.  If ``readonly``
        and the file does not exist.
    """

    def __init__(self, path, readonly: bool = False):
        path = os.fspath(path)
        if path != ":memory:" and not os.path.isfile(path) and (
                os.path.isdir(path) or not path.endswith(STORE_SUFFIXES)):
            path = os.path.join(path, STORE_FILENAME)  # a folder (created if needed)
        self.path = path
        self.readonly = readonly
        if path == ":memory:":
            if readonly:
                raise ValueError("path ':memory:' cannot be opened read-only")
            self._con = sqlite3.connect(":memory:")
            self._create()
            return
        exists = os.path.exists(path) and os.path.getsize(path) > 0
        if exists:
            _check_existing(path)
        elif readonly:
            raise ValueError(f"result store {path!r} does not exist")
        if readonly:
            self._con = sqlite3.connect("file:" + os.path.abspath(path) + "?mode=ro", uri=True)
            return
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        self._con = sqlite3.connect(path, timeout=30.0)
        self._con.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a committed transaction survives the death of the process
        # (it can only be lost with the operating system).
        self._con.execute("PRAGMA synchronous=NORMAL")
        if not exists:
            self._create()

    def _create(self) -> None:
        with self._con:
            self._con.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self._con.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self._con.execute(_SCHEMA)

    # -- writing ----------------------------------------------------------------------
    def put(self, key: dict, record: dict) -> None:
        """Insert (or replace) the row of ``key`` with ``record`` and commit it.

        Parameters
        ----------
        key : dict
            Values of :data:`KEY_COLUMNS`.
        record : dict
            Task result; must have ``status``.  ``error``, ``instance_seed``, ``seconds``
            and ``stored`` go into their own columns; the whole record is kept as JSON.
        """
        if self.readonly:
            raise ValueError(f"result store {self.path!r} was opened read-only")
        resolve_seed(key["seed"])  # a signed 64-bit column: reject 2**63 with a ValueError
        status = record.get("status")
        if status not in ("stored", "not_stored", "undecided", "error"):
            raise ValueError(f"record status must be stored/not_stored/undecided/error, got {status!r}")
        stored = record.get("stored")
        row = [key[c] for c in KEY_COLUMNS] + [
            status,
            None if stored is None else int(bool(stored)),
            None if record.get("instance_seed") is None else str(record["instance_seed"]),
            record.get("seconds"),
            record.get("error"),
            json.dumps(record, default=numpy_to_json, allow_nan=True),
        ]
        cols = ", ".join(list(KEY_COLUMNS) + list(_VALUE_COLUMNS[:-1]))
        marks = ", ".join("?" * len(row))
        with self._con:  # one transaction per task
            self._con.execute(f"INSERT OR REPLACE INTO results ({cols}) VALUES ({marks})", row)

    # -- reading ----------------------------------------------------------------------
    def finished_keys(self) -> set:
        """Keys (tuples in :data:`KEY_COLUMNS` order) of every row that is not an error."""
        cols = ", ".join(KEY_COLUMNS)
        cur = self._con.execute(f"SELECT {cols} FROM results WHERE status != 'error'")
        return {tuple(r) for r in cur}

    def get(self, key: dict):
        """The stored record of ``key`` (a dict) or ``None``."""
        where = " AND ".join(f"{c} = ?" for c in KEY_COLUMNS)
        row = self._con.execute(f"SELECT result FROM results WHERE {where}",
                                [key[c] for c in KEY_COLUMNS]).fetchone()
        return None if row is None else json.loads(row[0])

    def rows(self, **where) -> list[dict]:
        """All rows matching ``column=value`` filters, as dicts with the record decoded."""
        cols = _expected_columns()
        sql = f"SELECT {', '.join(cols)} FROM results"
        params: list = []
        if where:
            for c in where:
                if c not in cols:
                    raise ValueError(f"unknown column {c!r}; valid: {', '.join(cols)}")
            sql += " WHERE " + " AND ".join(f"{c} = ?" for c in where)
            params = list(where.values())
        sql += " ORDER BY experiment, problem, solver, ensemble, d, kappa, p, trial"
        out = []
        for r in self._con.execute(sql, params):
            row = dict(zip(cols, r))
            row["result"] = json.loads(row["result"])
            out.append(row)
        return out

    def summary(self) -> StoreSummary:
        """Rows by status."""
        counts = dict(self._con.execute("SELECT status, COUNT(*) FROM results GROUP BY status"))
        return StoreSummary.of(self.path, counts)

    def export_csv(self, stream, columns: Iterable[str] | None = None) -> int:
        """Write every row (without the bulky JSON record) as CSV; return the row count."""
        columns = list(columns) if columns else [c for c in _expected_columns() if c != "result"]
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(columns)
        n = 0
        for r in self._con.execute(f"SELECT {', '.join(columns)} FROM results ORDER BY "
                                   "experiment, problem, solver, ensemble, d, kappa, p, trial"):
            writer.writerow(r)
            n += 1
        return n

    def close(self) -> None:
        self._con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
