"""The results store: one SQLite file holding every run's result, keyed by run id.

Why SQLite rather than DuckDB: the store's work is many small transactional
writes (one per finished run, from one process, while a sweep is going) and
reads of a few thousand rows; SQLite does exactly that, with crash-safe
transactions, in the standard library, in a single file any tool can open.
DuckDB's strength, columnar scans over millions of rows, is not needed here,
and ``tessera results export --format parquet`` hands the table to DuckDB,
polars or pandas when it is.

Layout (schema version 1; ``PRAGMA application_id`` marks the file as ours)::

    runs        run_id PK, tessera_version, machine, source, workload, seed,
                inputs (JSON: machine, overrides, params, trace, ...),
                result (JSON text of tessera.Result: config + stats),
                wall_s (seconds in the simulator), host, finished (UTC)
    sweeps      name PK, spec (TOML/JSON text), origin, updated
    sweep_runs  (sweep, run_id) PK, position, point (JSON: axis values)
    failures    (sweep, run_id) PK, kind, error, at

A run's result is written in one transaction once it has finished, so an
interrupted sweep leaves complete results and nothing else; the primary key
makes a retried or duplicated run land once.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Union

from tessera.errors import StoreError

__all__ = ["Store", "open_store", "default_store_path", "APPLICATION_ID", "SCHEMA_VERSION"]

#: "TSRA" — marks a SQLite file as a Tessera store.
APPLICATION_ID = 0x54535241
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    tessera_version TEXT NOT NULL,
    machine TEXT NOT NULL,
    source TEXT NOT NULL,
    workload TEXT,
    seed INTEGER NOT NULL,
    inputs TEXT NOT NULL,
    result TEXT NOT NULL,
    wall_s REAL NOT NULL,
    host TEXT NOT NULL,
    finished TEXT NOT NULL
);
CREATE TABLE sweeps (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    origin TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE TABLE sweep_runs (
    sweep TEXT NOT NULL,
    run_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    point TEXT NOT NULL,
    PRIMARY KEY (sweep, run_id)
);
CREATE INDEX sweep_runs_by_run ON sweep_runs(run_id);
CREATE TABLE failures (
    sweep TEXT NOT NULL,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    error TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (sweep, run_id)
);
"""

_PathLike = Union[str, "os.PathLike[str]"]


def default_store_path() -> Path:
    """``$TESSERA_STORE``, else ``tessera-results/store.sqlite`` in the working directory."""
    env = os.environ.get("TESSERA_STORE")
    return Path(env) if env else Path("tessera-results") / "store.sqlite"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """An open results store. Use :func:`open_store`; close it (or use ``with``) when done."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    # ------------------------------------------------------------- plumbing

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn SQLite's damage reports into an error that names the file."""
        try:
            yield
        except sqlite3.DatabaseError as e:
            raise StoreError(str(self.path), _explain(e)) from None

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._guard():
            with self._conn:  # commit on success, roll back on any exception (Ctrl-C included)
                yield self._conn

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --------------------------------------------------------------- writes

    def begin_sweep(self, name: str, spec_text: str, origin: str, members: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Record a sweep and its runs (``(run_id, point)`` in order), replacing
        an earlier membership of the same name; results are kept."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO sweeps(name, spec, origin, updated) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET spec=excluded.spec, origin=excluded.origin, updated=excluded.updated",
                (name, spec_text, origin, _now()),
            )
            c.execute("DELETE FROM sweep_runs WHERE sweep = ?", (name,))
            c.executemany(
                "INSERT INTO sweep_runs(sweep, run_id, position, point) VALUES (?, ?, ?, ?)",
                [(name, rid, i, json.dumps(dict(p), sort_keys=True)) for i, (rid, p) in enumerate(members)],
            )
            live = {rid for rid, _ in members}
            stale = [r for (r,) in c.execute("SELECT run_id FROM failures WHERE sweep = ?", (name,)) if r not in live]
            c.executemany("DELETE FROM failures WHERE sweep = ? AND run_id = ?", [(name, r) for r in stale])

    def put_result(
        self,
        run_id: str,
        *,
        inputs: Mapping[str, Any],
        result_json: str,
        wall_s: float,
        host: str,
        replace: bool = False,
        sweep: Optional[str] = None,
    ) -> bool:
        """Store one finished run atomically. Returns False if it was already
        stored (and ``replace`` is off): a retried run lands once."""
        data = json.loads(result_json)
        row = (
            run_id,
            data["tessera_version"],
            str(inputs.get("machine", "")),
            data["source"],
            inputs.get("workload"),
            int(data["seed"]),
            json.dumps(dict(inputs), sort_keys=True),
            result_json,
            float(wall_s),
            host,
            _now(),
        )
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._tx() as c:
            cur = c.execute(
                f"{verb} INTO runs(run_id, tessera_version, machine, source, workload, seed, inputs, result, "
                "wall_s, host, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            if sweep is not None:
                c.execute("DELETE FROM failures WHERE sweep = ? AND run_id = ?", (sweep, run_id))
            return cur.rowcount > 0

    def put_failure(self, sweep: str, run_id: str, kind: str, error: str) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO failures(sweep, run_id, kind, error, at) VALUES (?, ?, ?, ?, ?)",
                (sweep, run_id, kind, error, _now()),
            )

    def delete_sweep(self, name: str) -> int:
        """Forget a sweep's membership and failures (results stay: other sweeps may share them)."""
        with self._tx() as c:
            n = c.execute("DELETE FROM sweep_runs WHERE sweep = ?", (name,)).rowcount
            c.execute("DELETE FROM failures WHERE sweep = ?", (name,))
            c.execute("DELETE FROM sweeps WHERE name = ?", (name,))
            return n

    # ---------------------------------------------------------------- reads

    def stored_ids(self, run_ids: Sequence[str]) -> set[str]:
        """Which of ``run_ids`` already have a result."""
        out: set[str] = set()
        with self._guard():
            ids = list(run_ids)
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                q = "SELECT run_id FROM runs WHERE run_id IN (" + ",".join("?" * len(chunk)) + ")"
                out.update(r for (r,) in self._conn.execute(q, chunk))
        return out

    def sweeps(self) -> list[dict[str, Any]]:
        """``[{name, runs, stored, failed, updated}]`` for every sweep."""
        q = """
            SELECT s.name, s.updated, s.origin,
                   (SELECT COUNT(*) FROM sweep_runs m WHERE m.sweep = s.name),
                   (SELECT COUNT(*) FROM sweep_runs m JOIN runs r ON r.run_id = m.run_id WHERE m.sweep = s.name),
                   (SELECT COUNT(*) FROM failures f WHERE f.sweep = s.name)
            FROM sweeps s ORDER BY s.name
        """
        with self._guard():
            return [
                {"name": n, "updated": u, "origin": o, "runs": t, "stored": d, "failed": f}
                for n, u, o, t, d, f in self._conn.execute(q)
            ]

    def sweep_spec(self, name: str) -> Optional[str]:
        with self._guard():
            row = self._conn.execute("SELECT spec FROM sweeps WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def rows(self, sweep: Optional[str] = None, run_id: Optional[str] = None) -> list[dict[str, Any]]:
        """Stored runs as dicts: ``run_id, sweep, point, machine, workload,
        inputs, result (parsed JSON), wall_s, host, finished`` — a sweep's runs
        in sweep order, or every run (with the point of its latest sweep), or
        the one run ``run_id``."""
        if sweep is not None:
            q = """
                SELECT r.run_id, m.sweep, m.point, r.machine, r.workload, r.inputs, r.result, r.wall_s, r.host, r.finished
                FROM sweep_runs m JOIN runs r ON r.run_id = m.run_id
                WHERE m.sweep = ? ORDER BY m.position
            """
            args: tuple[Any, ...] = (sweep,)
        else:
            q = """
                SELECT r.run_id,
                       (SELECT m.sweep FROM sweep_runs m JOIN sweeps s ON s.name = m.sweep
                        WHERE m.run_id = r.run_id ORDER BY s.updated DESC, s.name LIMIT 1) AS sw,
                       (SELECT m.point FROM sweep_runs m JOIN sweeps s ON s.name = m.sweep
                        WHERE m.run_id = r.run_id ORDER BY s.updated DESC, s.name LIMIT 1),
                       r.machine, r.workload, r.inputs, r.result, r.wall_s, r.host, r.finished
                FROM runs r {where} ORDER BY r.finished, r.run_id
            """.format(where="WHERE r.run_id = ?" if run_id is not None else "")
            args = (run_id,) if run_id is not None else ()
        out = []
        with self._guard():
            for rid, sw, point, machine, workload, inputs, result, wall_s, host, finished in self._conn.execute(q, args):
                try:
                    out.append(
                        {
                            "run_id": rid,
                            "sweep": sw,
                            "point": json.loads(point) if point else {},
                            "machine": machine,
                            "workload": workload,
                            "inputs": json.loads(inputs),
                            "result": json.loads(result),
                            "wall_s": wall_s,
                            "host": host,
                            "finished": finished,
                        }
                    )
                except ValueError as e:
                    raise StoreError(str(self.path), f"run {rid}: damaged record ({e})") from None
        return out

    def get(self, run_id: str) -> dict[str, Any]:
        """One run by id or unique id prefix (as :meth:`rows` gives it)."""
        with self._guard():
            found = self._conn.execute(
                "SELECT run_id FROM runs WHERE run_id >= ? AND run_id < ? LIMIT 2", (run_id, run_id + "\uffff")
            ).fetchall()
        if not found:
            raise KeyError(f"no run {run_id!r} in {self.path}")
        if len(found) > 1:
            raise KeyError(f"run id prefix {run_id!r} is ambiguous in {self.path}")
        rows = self.rows(run_id=found[0][0])
        if not rows:  # pragma: no cover - deleted between the two queries
            raise KeyError(run_id)
        return rows[0]

    def failures(self, sweep: Optional[str] = None) -> list[dict[str, Any]]:
        q = "SELECT sweep, run_id, kind, error, at FROM failures"
        args: tuple[Any, ...] = ()
        if sweep is not None:
            q += " WHERE sweep = ?"
            args = (sweep,)
        with self._guard():
            return [
                {"sweep": s, "run_id": r, "kind": k, "error": e, "at": a}
                for s, r, k, e, a in self._conn.execute(q + " ORDER BY sweep, run_id", args)
            ]

    def count(self) -> int:
        with self._guard():
            return int(self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def _explain(e: sqlite3.DatabaseError) -> str:
    msg = str(e)
    if "not a database" in msg or "malformed" in msg or "corrupt" in msg:
        return f"the results store is damaged or not a SQLite file ({msg}); move it aside and re-run the sweep"
    return f"results store error: {msg}"


def open_store(path: Optional[_PathLike] = None, *, create: bool = True) -> Store:
    """Open (and, with ``create``, make) the store at ``path`` (default
    :func:`default_store_path`). Raises :class:`~tessera.StoreError` for a
    file that is not a Tessera store, is damaged, or is from a newer Tessera."""
    p = Path(path) if path is not None else default_store_path()
    if not p.exists():
        if not create:
            raise StoreError(str(p), "no results store here (run a sweep first, or pass --store)")
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
    elif p.is_dir():
        raise StoreError(str(p), "is a directory, not a results store file")
    try:
        conn = sqlite3.connect(str(p), timeout=30.0, isolation_level="DEFERRED")
    except sqlite3.Error as e:
        raise StoreError(str(p), f"cannot open: {e}") from None
    store = Store(p, conn)
    try:
        with store._guard():
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
            if app == 0 and not tables:
                if not create:
                    raise StoreError(str(p), "empty file, not a results store")
                # WAL: readers (tessera results ...) never block the sweep writing.
                conn.execute("PRAGMA journal_mode = WAL")
                with conn:
                    conn.executescript(_SCHEMA)
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif app != APPLICATION_ID:
                what = f"tables {', '.join(tables)}" if tables else "no tables"
                raise StoreError(
                    str(p), f"a SQLite file that is not a Tessera results store (application id {app:#x}, {what})"
                )
            elif version > SCHEMA_VERSION:
                raise StoreError(
                    str(p), f"written by a newer Tessera (store schema {version}; this Tessera reads up to {SCHEMA_VERSION})"
                )
            else:
                missing = {"runs", "sweeps", "sweep_runs", "failures"} - set(tables)
                if missing:
                    raise StoreError(str(p), f"damaged results store: missing table(s) {', '.join(sorted(missing))}")
            conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return store
