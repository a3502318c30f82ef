"""The attempts database: every lab start and every grade, in SQLite in the user's data directory.

Several graders may write at once (an instructor grading a cohort, CI jobs): the database runs in WAL
mode with a busy timeout, and each write is one ``BEGIN IMMEDIATE`` transaction, so a process killed
mid-write leaves every committed attempt intact and the uncommitted one absent.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 30_000

_DDL = """
CREATE TABLE IF NOT EXISTS starts (
    id INTEGER PRIMARY KEY,
    candidate TEXT NOT NULL,
    lab_id TEXT NOT NULL,
    target TEXT NOT NULL,
    started_at TEXT NOT NULL,
    lab_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS starts_by_candidate ON starts (candidate, lab_id, started_at);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY,
    candidate TEXT NOT NULL,
    lab_id TEXT NOT NULL,
    lab_domain TEXT NOT NULL,
    lab_level INTEGER NOT NULL,
    lab_hash TEXT NOT NULL,
    target TEXT NOT NULL,
    host TEXT,
    machine TEXT NOT NULL,          -- identity key: sha256 of the sorted GPU serials and UUIDs ('' if none)
    identity TEXT NOT NULL,         -- JSON: host, gpu serials, gpu uuids
    graded_at TEXT NOT NULL,
    started_at TEXT,
    late INTEGER NOT NULL,
    percent REAL NOT NULL,
    points REAL NOT NULL,
    max_points REAL NOT NULL,
    passed INTEGER NOT NULL,
    checks TEXT NOT NULL            -- JSON: each check's result and score
);
CREATE INDEX IF NOT EXISTS attempts_by_candidate ON attempts (candidate, lab_id, graded_at);
"""


def default_path() -> Path:
    """``$GPULAB_DB``, else ``$XDG_DATA_HOME/gpulab/attempts.db`` (``~/.local/share/gpulab/attempts.db``)."""
    env = os.environ.get("GPULAB_DB")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "gpulab" / "attempts.db"


def default_candidate() -> str:
    """The OS user: whoever runs gpulab is the candidate unless told otherwise."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry in some containers
        return "unknown"


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).isoformat(timespec="seconds")


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


@dataclass(frozen=True)
class Identity:
    """Which machine a grade came from: the host name can change, the GPUs' serials and UUIDs don't."""

    host: str | None
    serials: tuple[str, ...] = ()
    uuids: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        import hashlib

        if not self.serials and not self.uuids:
            return ""
        text = "\n".join(sorted(self.serials)) + "\n--\n" + "\n".join(sorted(self.uuids))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "gpu_serials": list(self.serials), "gpu_uuids": list(self.uuids)}


@dataclass(frozen=True)
class Attempt:
    id: int
    candidate: str
    lab_id: str
    lab_domain: str
    lab_level: int
    lab_hash: str
    target: str
    host: str | None
    machine: str
    identity: dict[str, Any]
    graded_at: str
    started_at: str | None
    late: bool
    percent: float
    points: float
    max_points: float
    passed: bool
    checks: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def connect(path: Path | str | None = None) -> sqlite3.Connection:
    """Open (creating when needed) the attempts database in WAL mode with a busy timeout."""
    p = Path(path) if path is not None else default_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: we issue BEGIN IMMEDIATE ourselves, so a write never upgrades a read lock
    # half-way (the classic cause of "database is locked" despite a busy timeout).
    conn = sqlite3.connect(str(p), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    _wal(conn)
    conn.execute("PRAGMA synchronous = NORMAL")  # durable across process crashes in WAL mode
    if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
        with transaction(conn):
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                # statement by statement: executescript() would COMMIT our transaction first
                for statement in _DDL.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return conn


def _wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL (persistent, so only the first opener of a new file does it).

    Changing the journal mode needs an exclusive lock and SQLite reports "locked" at once, without its busy
    handler, when two processes create the database together: retry until the busy timeout.
    """
    import time

    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@contextlib.contextmanager
def opened(path: Path | str | None = None) -> Iterator[sqlite3.Connection]:
    """:func:`connect`, closed when the block ends."""
    conn = connect(path)
    try:
        yield conn
    finally:
        conn.close()


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction: ``BEGIN IMMEDIATE`` takes the write lock up front (waiting up to the busy timeout)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already (e.g. on a full disk)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def record_start(
    conn: sqlite3.Connection, *, candidate: str, lab_id: str, target: str, lab_hash: str, started_at: dt.datetime
) -> None:
    """Remember when a candidate started a lab (the time limit runs from the latest start)."""
    with transaction(conn):
        conn.execute(
            "INSERT INTO starts (candidate, lab_id, target, started_at, lab_hash) VALUES (?, ?, ?, ?, ?)",
            (candidate, lab_id, target, iso(started_at), lab_hash),
        )


def last_start(conn: sqlite3.Connection, candidate: str, lab_id: str) -> dt.datetime | None:
    row = conn.execute(
        "SELECT started_at FROM starts WHERE candidate = ? AND lab_id = ? ORDER BY started_at DESC, id DESC LIMIT 1",
        (candidate, lab_id),
    ).fetchone()
    return parse_time(row[0]) if row else None


def insert_attempt(
    conn: sqlite3.Connection,
    *,
    candidate: str,
    lab_id: str,
    lab_domain: str,
    lab_level: int,
    lab_hash: str,
    target: str,
    identity: Identity,
    graded_at: dt.datetime,
    started_at: dt.datetime | None,
    late: bool,
    percent: float,
    points: float,
    max_points: float,
    passed: bool,
    checks: list[dict[str, Any]],
) -> int:
    """Insert one attempt row inside the caller's transaction; returns its id."""
    cur = conn.execute(
        "INSERT INTO attempts (candidate, lab_id, lab_domain, lab_level, lab_hash, target, host, machine, identity,"
        " graded_at, started_at, late, percent, points, max_points, passed, checks)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            candidate,
            lab_id,
            lab_domain,
            lab_level,
            lab_hash,
            target,
            identity.host,
            identity.key,
            json.dumps(identity.to_json(), sort_keys=True),
            iso(graded_at),
            iso(started_at) if started_at else None,
            int(late),
            percent,
            points,
            max_points,
            int(passed),
            json.dumps(checks, sort_keys=True),
        ),
    )
    return int(cur.lastrowid or 0)


def record_attempt(conn: sqlite3.Connection, **fields: Any) -> int:
    """Store one graded attempt (the keywords of :func:`insert_attempt`) in one transaction; returns its id."""
    with transaction(conn):
        return insert_attempt(conn, **fields)


def _attempt(row: sqlite3.Row) -> Attempt:
    return Attempt(
        id=row["id"],
        candidate=row["candidate"],
        lab_id=row["lab_id"],
        lab_domain=row["lab_domain"],
        lab_level=row["lab_level"],
        lab_hash=row["lab_hash"],
        target=row["target"],
        host=row["host"],
        machine=row["machine"],
        identity=json.loads(row["identity"]),
        graded_at=row["graded_at"],
        started_at=row["started_at"],
        late=bool(row["late"]),
        percent=row["percent"],
        points=row["points"],
        max_points=row["max_points"],
        passed=bool(row["passed"]),
        checks=json.loads(row["checks"]),
    )


def attempts(conn: sqlite3.Connection, candidate: str | None = None, lab_id: str | None = None) -> list[Attempt]:
    """Attempts, oldest first, optionally of one candidate and/or one lab."""
    sql, args = "SELECT * FROM attempts WHERE 1=1", []
    if candidate is not None:
        sql += " AND candidate = ?"
        args.append(candidate)
    if lab_id is not None:
        sql += " AND lab_id = ?"
        args.append(lab_id)
    return [_attempt(r) for r in conn.execute(sql + " ORDER BY graded_at, id", args)]


def best(attempts_: list[Attempt]) -> dict[str, Attempt]:
    """Each lab's best attempt: a pass beats a fail, then the higher score, then the earlier one."""
    out: dict[str, Attempt] = {}
    for a in attempts_:
        cur = out.get(a.lab_id)
        if cur is None or (a.passed, a.percent) > (cur.passed, cur.percent):
            out[a.lab_id] = a
    return out


def machine_mismatches(attempts_: list[Attempt]) -> dict[str, list[str]]:
    """Labs whose attempts (of one candidate) came from more than one machine: lab id -> the hosts/keys seen.

    Design labs have no machine (empty key) and never count.
    """
    seen: dict[str, dict[str, str]] = {}
    for a in attempts_:
        if a.machine:
            seen.setdefault(a.lab_id, {})[a.machine] = a.host or a.machine
    return {
        lab: sorted(f"{host} ({key})" for key, host in machines.items())
        for lab, machines in seen.items()
        if len(machines) > 1
    }
