"""The attempts database: every lab start and every grade, in SQLite in the user's data directory.

Several graders may write at once (an instructor grading a cohort, CI jobs): the database runs in WAL
mode with a busy timeout, and each write is one ``BEGIN IMMEDIATE`` transaction, so a process killed
mid-write leaves every committed attempt intact and the uncommitted one absent. Each commit is checkpointed
into the database file, so removing the WAL files cannot take committed attempts with them.

Tamper evidence (docs/REPORTS.md, "The attempts database's integrity"): a hash chain over every row, kept
across schema upgrades; values edited by hand read as flags, never tracebacks; a head record beside the file
(``<db>.head``) tells rows gone at the end.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

from assessor.errors import GpulabError

SCHEMA_VERSION = 3
BUSY_TIMEOUT_MS = 30_000
# PRAGMA application_id of a gpulab attempts database ("gpul"): tells ours from another program's SQLite file.
APPLICATION_ID = 0x6770756C

_DDL = """
CREATE TABLE IF NOT EXISTS starts (
    id INTEGER PRIMARY KEY,
    candidate TEXT NOT NULL,
    lab_id TEXT NOT NULL,
    target TEXT NOT NULL,
    started_at TEXT NOT NULL,       -- the clock: a second start while one is open keeps the first's
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

# The columns version 1 had: a file with only these (and no chain) may be a genuine version 1 database.
_V1_STARTS = ("id", "candidate", "lab_id", "target", "started_at", "lab_hash")
_V1_ATTEMPTS = (
    *("id", "candidate", "lab_id", "lab_domain", "lab_level", "lab_hash", "target", "host", "machine", "identity"),
    *("graded_at", "started_at", "late", "percent", "points", "max_points", "passed", "checks"),
)

# Version 2: starts know the node and its baseline; closes, solves and hints; every row chained.
_V2 = """
ALTER TABLE starts ADD COLUMN recorded_at TEXT NOT NULL DEFAULT '';
ALTER TABLE starts ADD COLUMN identity TEXT NOT NULL DEFAULT '{}';
ALTER TABLE starts ADD COLUMN baseline TEXT;
ALTER TABLE starts ADD COLUMN variant TEXT NOT NULL DEFAULT '{}';
ALTER TABLE starts ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE starts ADD COLUMN row_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN start_id INTEGER;
ALTER TABLE attempts ADD COLUMN flags TEXT NOT NULL DEFAULT '[]';
ALTER TABLE attempts ADD COLUMN hints_used INTEGER;  -- NULL: not known (recorded by an older gpulab)
ALTER TABLE attempts ADD COLUMN time_taken_s INTEGER;
ALTER TABLE attempts ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN row_hash TEXT NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS closes (
    id INTEGER PRIMARY KEY,
    lab_id TEXT NOT NULL,
    target TEXT NOT NULL,
    closed_at TEXT NOT NULL,
    closed_by TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    row_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS solves (
    id INTEGER PRIMARY KEY,
    lab_id TEXT NOT NULL,
    target TEXT NOT NULL,
    solved_at TEXT NOT NULL,
    solved_by TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    row_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hints (
    id INTEGER PRIMARY KEY,
    candidate TEXT NOT NULL,
    lab_id TEXT NOT NULL,
    start_id INTEGER,
    hint_index INTEGER NOT NULL,
    shown_at TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    row_hash TEXT NOT NULL
)
"""

# Version 3: a close may end one candidate's start only (`lab close`, `lab start --replace`; NULL: every
# candidate's start of the lab on the target, as a reset closes them), and says why it was made (NULL: a reset,
# the only close version 2 knew). No comment inside an ALTER: SQLite keeps its text in the table's definition.
_V3 = """
ALTER TABLE closes ADD COLUMN for_candidate TEXT;
ALTER TABLE closes ADD COLUMN why TEXT
"""

# The tables whose rows are chained: each row's hash covers its content and the row before it.
CHAINED = ("starts", "attempts", "closes", "solves", "hints")
# Columns added after rows were chained: left out of a row's hash while empty, so the rows written before them
# keep their hashes (and an edit of such a row still shows).
_LATER_COLUMNS = ("for_candidate", "why")
# When a close applies to a start: the same lab on the same target, made at or after the start, for every
# candidate or for the start's own (SQL, with the start as ``s`` and the close as ``c``).
_CLOSED = (
    "c.lab_id = s.lab_id AND c.target = s.target AND c.closed_at >= s.recorded_at"
    " AND (c.for_candidate IS NULL OR c.for_candidate = s.candidate)"
)


class DatabaseError(GpulabError):
    """The attempts database cannot be used: corrupt, not gpulab's, too new, read-only or unwritable."""


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


def micro(t: dt.datetime) -> str:
    """A time to the microsecond: orders a start, a reset and a solve made within one second."""
    return t.astimezone(dt.UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Identity:
    """Which machine a grade came from: the host name can change, the GPUs' serials and UUIDs don't.

    ``node_id`` is the simulator's id of a simulated node (new for every fresh fixture); None on real nodes.
    """

    host: str | None
    serials: tuple[str, ...] = ()
    uuids: tuple[str, ...] = ()
    node_id: str | None = None

    @property
    def key(self) -> str:
        import hashlib

        if not self.serials and not self.uuids:
            return ""
        text = "\n".join(sorted(self.serials)) + "\n--\n" + "\n".join(sorted(self.uuids))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"host": self.host, "gpu_serials": list(self.serials), "gpu_uuids": list(self.uuids)}
        if self.node_id:
            out["node_id"] = self.node_id
        return out

    @classmethod
    def from_json(cls, data: Any) -> Identity:
        data = data if isinstance(data, dict) else {}
        return cls(
            host=data.get("host"),
            serials=tuple(data.get("gpu_serials") or ()),
            uuids=tuple(data.get("gpu_uuids") or ()),
            node_id=data.get("node_id"),
        )


def same_gpus(started: Identity, graded: Identity) -> bool:
    """Whether two sets of GPUs are one machine's: most of them the same. A lab's fault can hide a GPU at the
    start (fallen off the bus, pulled for repair) that the fix brings back, or a repair can swap one; another
    machine shares none of them."""
    for before, after in ((started.serials, graded.serials), (started.uuids, graded.uuids)):
        if before and after:
            common = len(set(before) & set(after))
            return common > 0 and 2 * common >= max(len(set(before)), len(set(after)))
    return False


def identity_mismatch(started: Identity, graded: Identity) -> str | None:
    """Why ``graded`` is not the machine the lab was started on, or None when it is."""
    if started.node_id and graded.node_id != started.node_id:
        return (
            f"the simulated node graded (id {graded.node_id or 'none'}) is not the one the lab was started on "
            f"(id {started.node_id}): a replaced or replayed state"
        )
    if started.key and graded.key != started.key and not same_gpus(started, graded):
        return "its GPU serials and UUIDs are not those of the node the lab was started on"
    if started.host and graded.host != started.host:
        return f"its host name {graded.host!r} is not {started.host!r}, the node the lab was started on"
    return None


@dataclass(frozen=True)
class Start:
    """A ``lab start``: who, which lab, which node, when the clock started, what passed right after."""

    id: int
    candidate: str
    lab_id: str
    target: str
    started_at: dt.datetime  # the clock
    recorded_at: str  # when this start was made (a second start keeps the first's clock)
    lab_hash: str
    identity: Identity
    baseline: dict[str, float] | None
    variant: dict[str, Any] = field(default_factory=dict)  # the candidate's variant of the lab


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
    start_id: int | None = None
    flags: tuple[str, ...] = ()  # tamper evidence on the grade, and an edited row of the database
    hints_used: int | None = None
    time_taken_s: int | None = None

    @property
    def recorded(self) -> bool:
        """Every row of the attempts database was recorded (a grade shown but not recorded has no row)."""
        return True

    @property
    def counts(self) -> bool:
        """A flagged attempt is shown, never counted towards a level (:func:`counts`)."""
        return counts(self)

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["flags"] = list(self.flags)
        return out


def connect(path: Path | str | None = None) -> sqlite3.Connection:
    """Open (creating when needed) the attempts database in WAL mode with a busy timeout.

    DatabaseError (one line, naming the file) when the file is not a gpulab attempts database this version can
    use, or SQLite or the file system cannot open it.
    """
    p = Path(path) if path is not None else default_path()
    try:
        return _connect(p)
    except DatabaseError:
        raise
    except sqlite3.Error as exc:
        raise DatabaseError(f"{p}: attempts database unusable: {_sqlite_words(exc)}") from None
    except OSError as exc:
        raise DatabaseError(f"{p}: attempts database unusable: {exc.strerror or exc}") from None


def _connect(p: Path) -> sqlite3.Connection:
    if p.is_dir():
        raise DatabaseError(f"{p}: a directory, not an attempts database")
    if p.is_file() and p.stat().st_size:
        with p.open("rb") as fh:
            head = fh.read(16)
        if head != b"SQLite format 3\x00":
            raise DatabaseError(f"{p}: not an attempts database (not an SQLite file; corrupt or another program's)")
    p.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: we issue BEGIN IMMEDIATE ourselves, so a write never upgrades a read lock
    # half-way (the classic cause of "database is locked" despite a busy timeout).
    conn = sqlite3.connect(str(p), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _check_ours(conn, p)
        _wal(conn)
        conn.execute("PRAGMA synchronous = FULL")  # a commit is on disk before gpulab says it was recorded
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            with transaction(conn):
                _migrate(conn, p)
    except BaseException:
        conn.close()
        raise
    return conn


def _check_ours(conn: sqlite3.Connection, p: Path) -> None:
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = _tables(conn)
    if app not in (0, APPLICATION_ID) or (app == 0 and tables and not {"starts", "attempts"} <= tables):
        raise DatabaseError(f"{p}: an SQLite database of another program, not gpulab's attempts database")
    if version > SCHEMA_VERSION:
        raise DatabaseError(
            f"{p}: written by a newer gpulab (database version {version}; this gpulab reads up to {SCHEMA_VERSION})"
        )


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """The table's columns in order (none: no such table)."""
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _statements(script: str) -> list[str]:
    return [s for s in script.split(";") if s.strip()]


def _added_column(statement: str) -> tuple[str, str] | None:
    """(table, column) of an ``ALTER TABLE t ADD COLUMN c ...`` statement, else None."""
    import re

    found = re.search(r"ALTER TABLE (\w+) ADD COLUMN (\w+)", statement)
    return (found.group(1), found.group(2)) if found else None


def _migrate(conn: sqlite3.Connection, p: Path) -> None:
    """Bring the file up to :data:`SCHEMA_VERSION` by what it holds, whatever its ``user_version`` says.

    The chain survives an upgrade: the rows of a chained file keep their hashes (a column added later is left
    out of a row's hash while empty), so a row edited before the upgrade is still flagged after it. Only a
    file that never had a chain (version 1) has its rows join the chain as they are, and only when nothing
    says it is a chained file made to look old: a head record of chained rows (:func:`head_path`), a table or
    column version 1 did not have. Such a file keeps its rows out of the chain: each is flagged.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise DatabaseError(f"{p}: written by a newer gpulab (database version {version})")
    before = {table: set(_columns(conn, table)) for table in _tables(conn)}
    had_rows = any(conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() for table in before if table in CHAINED)
    chained = any("row_hash" in columns for columns in before.values())
    v1_columns = {"starts": set(_V1_STARTS), "attempts": set(_V1_ATTEMPTS)}
    ours = {t: c for t, c in before.items() if not t.startswith("sqlite_")}
    looks_v1 = set(ours) <= set(v1_columns) and all(ours[t] <= v1_columns[t] for t in ours)
    head = read_head(p)  # gpulab writes one from version 3 on: a version 1 file never had one
    # statement by statement: executescript() would COMMIT our transaction first
    for statement in _statements(_DDL) + _statements(_V2) + _statements(_V3):
        added = _added_column(statement)
        if added is not None and added[1] in _columns(conn, added[0]):
            continue  # already there: an ALTER again would fail (a file whose user_version was lowered)
        conn.execute(statement)
    if had_rows and not chained and looks_v1 and head is None and version <= 1:
        for table in CHAINED:  # rows of version 1 (which had no chain) join the chain as they are
            _rechain(conn, table)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


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
    """:func:`connect`, closed when the block ends; an SQLite failure inside the block is one-line
    :class:`DatabaseError` too (a database damaged by hand fails every command with one line)."""
    p = Path(path) if path is not None else default_path()
    conn = connect(p)
    try:
        yield conn
    except sqlite3.Error as exc:
        raise DatabaseError(f"{p}: attempts database unusable: {_sqlite_words(exc)}") from None
    finally:
        conn.close()


@contextlib.contextmanager
def guarded(path: Path | str | None = None) -> Iterator[sqlite3.Connection]:
    """:func:`opened`, with every file-system failure inside the block turned into one-line :class:`DatabaseError`
    as well."""
    p = Path(path) if path is not None else default_path()
    try:
        with opened(p) as conn:
            yield conn
    except OSError as exc:
        raise DatabaseError(f"{p}: attempts database unusable: {exc.strerror or exc}") from None


def _sqlite_words(exc: sqlite3.Error) -> str:
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return "read-only (grades cannot be recorded)"
    if "unable to open" in text:
        return "cannot be opened or created there"
    if "not a database" in text or "malformed" in text:
        return "corrupt"
    if "no such table" in text or "no such column" in text or "has no column" in text:
        return f"{text}: edited by hand (gpulab's tables are not all there)"
    return text


def _db_file(conn: sqlite3.Connection) -> Path | None:
    """The file ``conn`` has open (None: an in-memory database)."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return Path(row[2]) if row[2] else None
    return None


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction: ``BEGIN IMMEDIATE`` takes the write lock up front (waiting up to the busy timeout).

    After the commit, the WAL is checkpointed into the database file (a committed attempt does not live in the
    WAL file only, where removing that file would lose it) and the head record is brought up to date
    (:func:`sync_head`).
    """
    path = _db_file(conn)
    conn.execute("BEGIN IMMEDIATE")
    before = _files_stamp(path) if path is not None else None
    try:
        yield conn
        if path is not None and _wal_gone(path):
            raise DatabaseError(
                f"{path}: its WAL files ({path.name}-wal, -shm) were removed or replaced while gpulab had them"
                " open: nothing recorded (run the command again)"
            )
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already (e.g. on a full disk)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    # TRUNCATE: the WAL left empty, so the files stand as the head record saw them after this write (busy: a reader
    # on an older snapshot; the next write checkpoints)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    if path is not None:
        sync_head(conn, path, before)


def _wal_gone(db: Path) -> bool:
    """Whether the WAL and shared-memory files this process holds open are no longer ``db``'s (removed, or
    removed and made anew by another process): a commit now would go to a WAL no other process reads, with
    locks no other process sees. Linux only (``/proc/self/fd``); elsewhere False."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        return False
    try:
        current = {(st.st_dev, st.st_ino) for st in (os.stat(f"{db}-wal"), os.stat(f"{db}-shm"))}
    except FileNotFoundError:
        return True
    except OSError:
        return False
    held = set()
    for entry in os.listdir(fds):
        with contextlib.suppress(OSError):
            st = os.stat(fds / entry)
            held.add((st.st_dev, st.st_ino))
    return not current <= held


# ---- the chain: each row's hash covers its content and the hash of the row before it ----------------


def _row_hash(prev: str, values: dict[str, Any]) -> str:
    import hashlib

    body = {
        k: v
        for k, v in values.items()
        if k not in ("id", "prev_hash", "row_hash") and not (k in _LATER_COLUMNS and v is None)
    }
    text = prev + "\n" + json.dumps(body, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _insert(conn: sqlite3.Connection, table: str, values: dict[str, Any]) -> int:
    """Insert a chained row (inside the caller's transaction); returns its id."""
    last = conn.execute(f"SELECT row_hash FROM {table} ORDER BY id DESC LIMIT 1").fetchone()
    prev = last[0] if last else ""
    row = {**values, "prev_hash": prev, "row_hash": _row_hash(prev, values)}
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    cur = conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(row.values()))
    return int(cur.lastrowid or 0)


def _rechain(conn: sqlite3.Connection, table: str) -> None:
    prev = ""
    for row in conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall():
        values = dict(row)
        h = _row_hash(prev, values)
        conn.execute(f"UPDATE {table} SET prev_hash = ?, row_hash = ? WHERE id = ?", (prev, h, values["id"]))
        prev = h


def _row_break(prev: str, values: dict[str, Any], table: str) -> str | None:
    """Why one row is not where gpulab chained it (its hash and the previous row's), or None."""
    if values.get("row_hash") in (None, ""):
        return f"{table} row {values['id']}: not in the chain (written or re-created by hand)"
    if values.get("prev_hash") != prev:
        return f"{table} row {values['id']}: a row before it was removed or changed"
    if values.get("row_hash") != _row_hash(prev, values):
        return f"{table} row {values['id']}: edited after gpulab wrote it"
    return None


def chain_breaks(conn: sqlite3.Connection) -> dict[tuple[str, int], str]:
    """Rows changed, removed or added by hand since gpulab wrote them: (table, row id) -> why.

    Rows missing at the end of a table (deleted, an older copy of the file restored, lost with its WAL file),
    which the chain alone cannot show, are told by the head record (:func:`head_findings`): their keys have a
    row id of 0 or less (no such row).

    The rows the head record says were checked while the database files stood exactly as they stand now are
    not hashed again (:func:`_verified`); the check of the rest is remembered for the next command
    (:func:`_remember_verified`), so a command costs the rows written since, not the whole database.
    """
    return check_chain(conn).breaks


@dataclass(frozen=True)
class ChainCheck:
    """What :func:`check_chain` found: the chain breaks (:func:`chain_breaks`) and, of the attempts rows up to
    ``attempts_to``, those read with a flag of their own (:func:`_flagged_as_read`): every other row up to there
    is on the chain or in ``breaks``, and reads with no flag but a chain break's."""

    breaks: dict[tuple[str, int], str]
    attempts_to: int = 0
    flagged: frozenset[int] = frozenset()


def check_chain(conn: sqlite3.Connection) -> ChainCheck:
    """:func:`chain_breaks`, with which attempts rows read with a flag of their own (kept with the rows the
    head record vouches for, so a command reads only the rows written since)."""
    path = _db_file(conn)
    head = read_head(path) if path is not None else None
    known = _verified(head, _files_stamp(path)) if path is not None else {}
    out, tails = _check_chains(conn, known)
    for n, why in enumerate(head_findings(conn, head)):
        out[("head", -n)] = why
    if not out and path is not None and _vouchable(tails) != known:
        _remember_verified(conn, path, tails)
    checked = tails.get("attempts", {})
    return ChainCheck(out, int(checked.get("last_id", 0)), frozenset(checked.get("flagged", ())))


def _flagged_as_read(row: sqlite3.Row) -> bool:
    """Whether an attempts row reads with a flag of its own (:func:`_attempt`: written with one, or a value
    gpulab did not write), its place on the chain aside."""
    return bool(_attempt(row).flags)


def _check_chains(
    conn: sqlite3.Connection, known: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[tuple[str, int], str], dict[str, dict[str, Any]]]:
    """The chain breaks of every chained table, each checked from the row ``known`` vouches for (when that row
    is still there with the hash it had), else from its first row; and each table's last checked row (the
    attempts table's with the rows checked that read with a flag of their own: ``flagged``)."""
    out: dict[tuple[str, int], str] = {}
    tails: dict[str, dict[str, Any]] = {}
    tables = _tables(conn)
    for table in CHAINED:
        if table not in tables:
            continue
        chained = {"prev_hash", "row_hash"} <= set(_columns(conn, table))
        prev, after = "", 0
        flagged: list[int] = []
        vouched = known.get(table)
        if chained and vouched:
            row = conn.execute(f"SELECT row_hash FROM {table} WHERE id = ?", (vouched.get("last_id"),)).fetchone()
            if row is not None and row[0] == vouched.get("last_hash"):
                prev, after = str(row[0]), int(vouched["last_id"])
                flagged = list(vouched.get("flagged", ()))
        last: dict[str, Any] = {"last_id": after, "last_hash": prev}
        for row in conn.execute(f"SELECT * FROM {table} WHERE id > ? ORDER BY id", (after,)).fetchall():
            values = dict(row)
            if not chained:
                out[(table, values["id"])] = f"{table} row {values['id']}: not in the chain (its hash was removed)"
                continue
            why = _row_break(prev, values, table)
            if why is not None:
                out[(table, values["id"])] = why
            if table == "attempts" and _flagged_as_read(row):
                flagged.append(values["id"])
            prev = values["row_hash"] if isinstance(values["row_hash"], str) else ""
            last = {"last_id": values["id"], "last_hash": prev}
        if table == "attempts" and chained:
            last["flagged"] = flagged
        tails[table] = last
    return out, tails


def _files_stamp(db: Path) -> list[int]:
    """What any change to the database leaves on its files: the database file's size and change time, and the
    size of its WAL (a WAL that is missing or empty holds nothing: 0)."""
    try:
        info = db.stat()
    except OSError:
        return []
    try:
        wal = os.stat(f"{db}-wal")
        wal_part = [wal.st_size, wal.st_mtime_ns] if wal.st_size else [0, 0]
    except OSError:
        wal_part = [0, 0]
    return [info.st_size, info.st_mtime_ns, *wal_part]


def _verified(head: Mapping[str, Any] | None, stamp: list[int]) -> dict[str, dict[str, Any]]:
    """The last row of each table that was checked while the database's files stood as ``stamp`` says (the head
    record's ``verified``); nothing when anything touched the files in between (an edit by hand included)."""
    if not head or "unreadable" in head or not stamp:
        return {}
    verified = head.get("verified")
    if not isinstance(verified, dict) or verified.get("stamp") != stamp:
        return {}
    tables = verified.get("tables")
    return _vouchable(tables) if isinstance(tables, dict) else {}


def _vouchable(tables: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The tables of ``tables`` (table -> last checked row) that name a row: an empty table vouches for nothing,
    nor an attempts table without the list of its rows that read flagged (a head record of an older gpulab)."""
    return {
        t: dict(v)
        for t, v in tables.items()
        if t in CHAINED
        and isinstance(v, dict)
        and isinstance(v.get("last_id"), int)
        and v["last_id"] > 0
        and (t != "attempts" or _row_ids(v.get("flagged")))
    }


def _row_ids(value: Any) -> bool:
    """Whether ``value`` is a list of row ids (as the head record keeps the attempts rows that read flagged)."""
    return isinstance(value, list) and all(type(x) is int for x in value)


def _remember_verified(conn: sqlite3.Connection, db: Path, tails: dict[str, dict[str, Any]]) -> None:
    """Write into the head record that the chains check up to ``tails`` with the files as they stand now: under
    the write lock, and only when nothing was written since the check. Best effort (a read-only folder)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error:
        return
    try:
        head = read_head(db)
        stamp = _files_stamp(db)
        if head is None or "unreadable" in head or not stamp or _tails(conn) != head.get("tables"):
            return  # no head record to keep it in, or rows written since the check
        _write_head(db, {**head, "verified": {"stamp": stamp, "tables": tails}})
    except (OSError, sqlite3.Error):
        pass
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")


def _start_break(conn: sqlite3.Connection, start_id: int) -> str | None:
    """Why the start row ``start_id`` is not as gpulab chained it, or None."""
    row = conn.execute("SELECT * FROM starts WHERE id = ?", (start_id,)).fetchone()
    if row is None:
        return None
    before = conn.execute("SELECT row_hash FROM starts WHERE id < ? ORDER BY id DESC LIMIT 1", (start_id,)).fetchone()
    prev = before[0] if before and isinstance(before[0], str) else ""
    return _row_break(prev, dict(row), "starts")


DB_EDITED = "attempts database edited by hand"


# ---- the head record: how far each chain reached, kept beside the database ----------------------------

HEAD_SCHEMA = "gpulab.attempts-head/1"


def head_path(db: Path) -> Path:
    """The head record of database ``db``: ``<db>.head`` beside it (not ``<db>-*``, SQLite's own files)."""
    return db.with_name(db.name + ".head")


def _write_head(db: Path, doc: dict[str, Any]) -> None:
    """Replace the head record of ``db`` with ``doc`` at once (a reader sees the old one or the new one)."""
    import tempfile

    target = head_path(db)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_head(db: Path) -> dict[str, Any] | None:
    """The head record of ``db`` (None: there is none); ``{"unreadable": why}`` when it cannot be read."""
    path = head_path(db)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        return {"unreadable": f"{path}: {getattr(exc, 'strerror', None) or exc}"}
    try:
        doc = json.loads(text)
    except ValueError:
        return {"unreadable": f"{path}: not JSON"}
    if not isinstance(doc, dict) or doc.get("schema") != HEAD_SCHEMA or not isinstance(doc.get("tables"), dict):
        return {"unreadable": f"{path}: not a gpulab head record"}
    return doc


def _tails(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Each chained table's rows, last row id and last row hash, as the database holds them now."""
    out: dict[str, dict[str, Any]] = {}
    tables = _tables(conn)
    for table in CHAINED:
        if table not in tables or "row_hash" not in _columns(conn, table):
            continue
        count = int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        last = conn.execute(f"SELECT id, row_hash FROM {table} ORDER BY id DESC LIMIT 1").fetchone()
        out[table] = {"rows": count, "last_id": last[0] if last else 0, "last_hash": last[1] if last else ""}
    return out


def _missing(conn: sqlite3.Connection, head: dict[str, Any]) -> list[str]:
    """What the head record says gpulab wrote that the database no longer holds, one line per table."""
    out = []
    tables = _tables(conn)
    at = head.get("at", "?")
    for table, tail in sorted(head.get("tables", {}).items()):
        if table not in CHAINED or not isinstance(tail, dict) or not tail.get("rows"):
            continue
        rows, last_id, last_hash = tail.get("rows"), tail.get("last_id"), tail.get("last_hash")
        if table not in tables or "row_hash" not in _columns(conn, table):
            out.append(
                f"{table}: all {rows} row(s) gpulab recorded (the last at {at}) are gone: table or chain removed"
            )
            continue
        row = conn.execute(f"SELECT row_hash FROM {table} WHERE id = ?", (last_id,)).fetchone()
        if row is not None and row[0] == last_hash:
            continue
        found = int(conn.execute(f"SELECT COUNT(*) FROM {table} WHERE id <= ?", (last_id,)).fetchone()[0])
        if isinstance(rows, int) and found < rows:
            what = f"{rows - found} row(s) missing: gpulab recorded {rows} up to row {last_id} (the last at {at})"
            what += f", the database holds {found} of them"
        else:
            what = f"row {last_id}, the last gpulab recorded (at {at}), is not the row it wrote"
        out.append(f"{table}: {what} (deleted, an older copy of the file restored, or lost with its WAL file)")
    return out


def head_findings(conn: sqlite3.Connection, head: dict[str, Any] | None = None) -> list[str]:
    """What the head record (``head``: already read) tells of the database: losses recorded earlier, rows gone
    since the last write, an unreadable head record. Nothing when there is no head record (a database of an
    older gpulab, or one whose head record was deleted: see docs/REPORTS.md)."""
    path = _db_file(conn)
    if path is None:
        return []
    if head is None:
        head = read_head(path)
    if head is None:
        return []
    if "unreadable" in head:
        return [f"head record {head['unreadable']} (edited by hand): rows lost since cannot be told"]
    losses = [str(x) for x in head.get("losses", []) if isinstance(x, str)]
    return losses + _missing(conn, head)


def sync_head(conn: sqlite3.Connection, db: Path, before: list[int] | None = None) -> None:
    """Write the head record of ``db`` after a write: each chain's row count, last row id and hash. A loss the
    database shows against the previous record (rows gone, :func:`head_findings`) is kept in it for good.

    Runs under the write lock (so two writers keep it in order). Best effort: a head record that cannot be
    written (a read-only folder) is left behind the database, which only makes it tell less. ``before``: the
    database files' stamp when the write took the lock (what the head record's ``verified`` part may vouch for).
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error:
        return
    try:
        head = read_head(db)
        losses: list[str] = []
        if head is not None and "unreadable" in head:
            losses.append(f"head record {head['unreadable']} (edited by hand), found at {iso(now())}")
        elif head is not None:
            losses = [str(x) for x in head.get("losses", []) if isinstance(x, str)]
            losses += [f"{why}; found at {iso(now())}" for why in _missing(conn, head)]
        doc: dict[str, Any] = {"schema": HEAD_SCHEMA, "at": iso(now()), "tables": _tails(conn), "losses": losses}
        if before is not None and head is not None and not losses:
            # the chains were checked up to some row while the files stood as they did before this write: check
            # only what was written since, and vouch for it with the files as they stand now
            known = _verified(head, before)
            if known:
                breaks, tails = _check_chains(conn, known)
                if not breaks:
                    doc["verified"] = {"stamp": _files_stamp(db), "tables": tails}
        _write_head(db, doc)
    except (OSError, sqlite3.Error):
        pass
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")


# ---- starts, closes, solves, hints -------------------------------------------------------------------


def record_start(
    conn: sqlite3.Connection,
    *,
    candidate: str,
    lab_id: str,
    target: str,
    lab_hash: str,
    started_at: dt.datetime,
    identity: Identity | None = None,
    baseline: dict[str, float] | None = None,
    variant: dict[str, Any] | None = None,
) -> Start:
    """Remember that a candidate started a lab on a node, with what passed right after the start.

    A start while one of the same candidate and lab is still open (not closed by ``lab reset``) keeps the
    open one's clock: starting again does not clear "late".
    """
    with transaction(conn):
        current = open_start(conn, candidate, lab_id)
        clock = current.started_at if current is not None else started_at
        values = {
            "candidate": candidate,
            "lab_id": lab_id,
            "target": target,
            "started_at": iso(clock),
            "lab_hash": lab_hash,
            "recorded_at": micro(started_at),
            "identity": json.dumps((identity or Identity(None)).to_json(), sort_keys=True),
            "baseline": json.dumps(baseline, sort_keys=True) if baseline is not None else None,
            "variant": json.dumps(variant or {}, sort_keys=True),
        }
        row_id = _insert(conn, "starts", values)
    found = _start_by_id(conn, row_id)
    assert found is not None
    return found


def _start(row: sqlite3.Row, conn: sqlite3.Connection) -> Start:
    """A start as gpulab wrote it. A value edited by hand beyond reading (a clock that is not a time, garbage
    JSON) stops the command with one line: gpulab cannot tell when that lab started or on which node."""
    r = _Row(row)
    row_id = r.integer("id") or 0
    started = r.time("started_at")
    recorded = r.text("recorded_at", null=True)
    base = r.json("baseline", dict, None) if r.raw("baseline") is not None else None
    start = Start(
        id=row_id,
        candidate=r.text("candidate"),
        lab_id=r.text("lab_id"),
        target=r.text("target"),
        started_at=parse_time(started) if started else now(),
        recorded_at=recorded or started or "",
        lab_hash=r.text("lab_hash"),
        identity=_identity(r),
        baseline=None,
        variant=r.json("variant", dict, {}) if r.raw("variant") is not None else {},
    )
    baseline: dict[str, float] | None = None
    if isinstance(base, dict):
        try:
            baseline = {str(k): float(v) for k, v in base.items()}
        except (TypeError, ValueError):
            r.problems.append("baseline holds values that are not numbers")
    if r.problems:
        where = _db_file(conn)
        raise DatabaseError(
            f"{where or 'attempts database'}: {DB_EDITED}: starts row {row_id}: {'; '.join(r.problems)}"
            " (gpulab cannot tell when or where that lab was started)"
        )
    return replace(start, baseline=baseline)


def _identity(r: _Row) -> Identity:
    data = r.json("identity", dict, {}) if r.raw("identity") is not None else {}
    try:
        return Identity.from_json(data)
    except (TypeError, ValueError):
        r.problems.append("identity is not a node's identity")
        return Identity(None)


def _start_by_id(conn: sqlite3.Connection, start_id: int) -> Start | None:
    row = conn.execute("SELECT * FROM starts WHERE id = ?", (start_id,)).fetchone()
    return _start(row, conn) if row else None


def open_start(conn: sqlite3.Connection, candidate: str, lab_id: str) -> Start | None:
    """The candidate's latest start of the lab that no ``lab reset`` closed since, or None."""
    row = conn.execute(
        "SELECT * FROM starts s WHERE candidate = ? AND lab_id = ?"
        f" AND NOT EXISTS (SELECT 1 FROM closes c WHERE {_CLOSED}) ORDER BY id DESC LIMIT 1",
        (candidate, lab_id),
    ).fetchone()
    return _start(row, conn) if row else None


def open_starts(conn: sqlite3.Connection, candidate: str) -> list[Start]:
    """Every lab the candidate has open, one start each (the latest)."""
    labs = [r[0] for r in conn.execute("SELECT DISTINCT lab_id FROM starts WHERE candidate = ?", (candidate,))]
    found = [open_start(conn, candidate, lab) for lab in sorted(labs)]
    return [s for s in found if s is not None]


def last_start(conn: sqlite3.Connection, candidate: str, lab_id: str) -> dt.datetime | None:
    """When the clock of the candidate's open start of the lab started (None: no open start)."""
    start = open_start(conn, candidate, lab_id)
    return start.started_at if start else None


def close_starts(
    conn: sqlite3.Connection,
    *,
    lab_id: str,
    target: str,
    closed_by: str,
    at: dt.datetime,
    candidate: str | None = None,
    why: str | None = None,
) -> None:
    """Close every open start of the lab on that target made at or before ``at`` (the next start has a new
    clock): ``lab reset`` closes everyone's; ``candidate`` closes that candidate's only (``lab close``, ``lab
    start --replace``). ``why`` says what closed it (None: a reset); ``closed_by`` who did."""
    values: dict[str, Any] = {"lab_id": lab_id, "target": target, "closed_at": micro(at), "closed_by": closed_by}
    if candidate is not None:
        values["for_candidate"] = candidate
    if why is not None:
        values["why"] = why
    with transaction(conn):
        _insert(conn, "closes", values)


def record_solve(conn: sqlite3.Connection, *, lab_id: str, target: str, solved_by: str, at: dt.datetime) -> None:
    """``lab solve`` on a node: later grades of starts made before it on that node are flagged."""
    with transaction(conn):
        _insert(conn, "solves", {"lab_id": lab_id, "target": target, "solved_at": micro(at), "solved_by": solved_by})


def solves_since(conn: sqlite3.Connection, target: str, since: str) -> list[str]:
    """Labs whose reference solution was applied on ``target`` at or after ``since`` (a start's recorded_at)."""
    rows = conn.execute(
        "SELECT DISTINCT lab_id FROM solves WHERE target = ? AND solved_at >= ? ORDER BY lab_id", (target, since)
    )
    return [r[0] for r in rows]


def hints_used(conn: sqlite3.Connection, candidate: str, lab_id: str, start_id: int | None) -> int:
    """How many hints the candidate has revealed for this start of the lab (or without a start)."""
    sql = "SELECT COUNT(*) FROM hints WHERE candidate = ? AND lab_id = ? AND start_id IS ?"
    return int(conn.execute(sql, (candidate, lab_id, start_id)).fetchone()[0])


def reveal_hint(
    conn: sqlite3.Connection, *, candidate: str, lab_id: str, start_id: int | None, available: int, at: dt.datetime
) -> int | None:
    """Record that the next hint is shown; returns its 0-based index, or None when all ``available`` are out."""
    with transaction(conn):
        shown = hints_used(conn, candidate, lab_id, start_id)
        if shown >= available:
            return None
        _insert(
            conn,
            "hints",
            {
                "candidate": candidate,
                "lab_id": lab_id,
                "start_id": start_id,
                "hint_index": shown,
                "shown_at": micro(at),
            },
        )
    return shown


# ---- attempts -----------------------------------------------------------------------------------------


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
    start_id: int | None = None,
    flags: list[str] | tuple[str, ...] = (),
    hints_used: int | None = None,
    time_taken_s: int | None = None,
) -> int:
    """Insert one attempt row inside the caller's transaction; returns its id."""
    values = {
        "candidate": candidate,
        "lab_id": lab_id,
        "lab_domain": lab_domain,
        "lab_level": lab_level,
        "lab_hash": lab_hash,
        "target": target,
        "host": identity.host,
        "machine": identity.key,
        "identity": json.dumps(identity.to_json(), sort_keys=True),
        "graded_at": iso(graded_at),
        "started_at": iso(started_at) if started_at else None,
        "late": int(late),
        "percent": percent,
        "points": points,
        "max_points": max_points,
        "passed": int(passed),
        "checks": json.dumps(checks, sort_keys=True),
        "start_id": start_id,
        "flags": json.dumps(list(flags)),
        "hints_used": hints_used,
        "time_taken_s": time_taken_s,
    }
    return _insert(conn, "attempts", values)


def record_attempt(conn: sqlite3.Connection, **fields: Any) -> int:
    """Store one graded attempt (the keywords of :func:`insert_attempt`) in one transaction; returns its id."""
    with transaction(conn):
        return insert_attempt(conn, **fields)


class _Row:
    """Reads one row's values as gpulab wrote them, noting each one it did not (a value edited by hand: a
    wrong type, NULL, garbage JSON, a time that is not one, a column that is gone) instead of failing."""

    def __init__(self, row: sqlite3.Row) -> None:
        self.row = row
        self.keys = set(row.keys())
        self.problems: list[str] = []

    def raw(self, key: str) -> Any:
        if key not in self.keys:
            self.problems.append(f"no {key} column")
            return None
        return self.row[key]

    def _bad(self, key: str, value: Any, what: str) -> None:
        shown = repr(value)
        self.problems.append(f"{key} {shown[:60] + '...' if len(shown) > 60 else shown} is not {what}")

    def text(self, key: str, *, null: bool = False) -> Any:
        value = self.raw(key)
        if isinstance(value, str) or (value is None and null):
            return value
        if key in self.keys:
            self._bad(key, value, "text")
        return None if null else ("" if value is None else str(value))

    def number(self, key: str) -> float:
        import math

        value = self.raw(key)
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value)
        if key in self.keys:
            self._bad(key, value, "a number")
        return 0.0

    def integer(self, key: str, *, null: bool = False) -> int | None:
        value = self.raw(key)
        if isinstance(value, int) or (value is None and null):
            return value
        if key in self.keys:
            self._bad(key, value, "an integer")
        return None if null else 0

    def boolean(self, key: str) -> bool:
        value = self.raw(key)
        if value in (0, 1) and isinstance(value, int):
            return bool(value)
        if key in self.keys:
            self._bad(key, value, "0 or 1")
        return False

    def time(self, key: str, *, null: bool = False) -> str | None:
        """An ISO time with its zone, as gpulab writes them (else None, or '' for a time that must be there)."""
        value = self.raw(key)
        if value is None and null:
            return None
        if isinstance(value, str):
            try:
                if parse_time(value).tzinfo is not None:
                    return value
            except ValueError:
                pass
        if key in self.keys:
            self._bad(key, value, "a time")
        return None if null else ""

    def json(self, key: str, kind: type, default: Any) -> Any:
        value = self.raw(key)
        if value is None and key not in self.keys:
            return default
        try:
            parsed = json.loads(value)
        except (TypeError, ValueError):
            self._bad(key, value, "JSON")
            return default
        if not isinstance(parsed, kind):
            self._bad(key, value, f"a JSON {'list' if kind is list else 'object'}")
            return default
        return parsed


_STATUSES = ("pass", "warn", "fail", "skip", "error")
_NUMBER_KEYS = ("points", "earned", "credit")
_TEXT_KEYS = ("hint", "note", "check_hint", "role")
_NUMBER_TYPES = (int, float)


def _is_check(c: Any) -> bool:
    """A check's result as a grade writes it (:meth:`assessor.labs.grading.Score.to_json`), in the types the
    reports' documents require."""
    if not (
        isinstance(c, dict)
        and isinstance(c.get("check"), str)
        and c.get("status") in _STATUSES
        and isinstance(c.get("message"), str)
    ):
        return False
    # JSON gives these exact types (a bool is not a number here)
    return all(type(c[k]) in _NUMBER_TYPES for k in _NUMBER_KEYS if k in c) and all(
        type(c[k]) is str for k in _TEXT_KEYS if k in c
    )


def _attempt(row: sqlite3.Row, broken: str | None = None) -> Attempt:
    r = _Row(row)
    row_id = r.integer("id") or 0
    flags_value = r.raw("flags")
    try:
        listed = json.loads(flags_value) if flags_value is not None else []
    except (TypeError, ValueError):
        listed = None
    flags = [str(f) for f in listed] if isinstance(listed, list) else [f"flags unreadable: {flags_value!r}"]
    checks = r.json("checks", list, [])
    if not all(_is_check(c) for c in checks):
        r.problems.append("checks holds entries that are not a check's result")
        checks = [c for c in checks if _is_check(c)]
    # every value read (and each problem noted) in this order before the flags are known: the Attempt is
    # made once, with them (a 10,000-attempt history is read on every `gpulab progress`)
    values: dict[str, Any] = dict(
        id=row_id,
        candidate=r.text("candidate"),
        lab_id=r.text("lab_id"),
        lab_domain=r.text("lab_domain"),
        lab_level=r.integer("lab_level") or 0,
        lab_hash=r.text("lab_hash"),
        target=r.text("target"),
        host=r.text("host", null=True),
        machine=r.text("machine"),
        identity=r.json("identity", dict, {}),
        graded_at=r.time("graded_at") or "",
        started_at=r.time("started_at", null=True),
        late=r.boolean("late"),
        percent=r.number("percent"),
        points=r.number("points"),
        max_points=r.number("max_points"),
        passed=r.boolean("passed"),
        checks=checks,
        start_id=r.integer("start_id", null=True),
        hints_used=r.integer("hints_used", null=True),
        time_taken_s=r.integer("time_taken_s", null=True),
    )
    if r.problems:
        flags.append(f"{DB_EDITED}: attempts row {row_id}: {'; '.join(r.problems)}")
    if broken:
        flags.append(f"{DB_EDITED}: {broken}")
    return Attempt(**values, flags=tuple(flags))


def attempts(
    conn: sqlite3.Connection,
    candidate: str | None = None,
    lab_id: str | None = None,
    *,
    breaks: Mapping[tuple[str, int], str] | None = None,
) -> list[Attempt]:
    """Attempts, oldest first, optionally of one candidate and/or one lab.

    A row edited by hand since gpulab wrote it (its chained hash no longer matches) carries the flag
    "attempts database edited by hand" with the reason. ``breaks``: :func:`chain_breaks` already found by the
    caller (None: found here).
    """
    sql, args = "SELECT * FROM attempts WHERE 1=1", []
    if candidate is not None:
        sql += " AND candidate = ?"
        args.append(candidate)
    if lab_id is not None:
        sql += " AND lab_id = ?"
        args.append(lab_id)
    columns = _columns(conn, "attempts")
    missing = [c for c in ("id", "candidate", "lab_id") if c not in columns]
    if missing:
        where = _db_file(conn) or "attempts database"
        what = f"the attempts table has no {missing[0]} column" if columns else "no such table: attempts"
        raise DatabaseError(f"{where}: {DB_EDITED}: {what}")
    broken = _broken_attempts(conn, breaks)
    return [_attempt(r, broken.get(r["id"])) for r in conn.execute(sql + " ORDER BY graded_at, id", args)]


def _broken_attempts(conn: sqlite3.Connection, breaks: Mapping[tuple[str, int], str] | None) -> dict[int, str]:
    """The attempts rows off the hash chain: row id -> why (``breaks``: :func:`chain_breaks`, None: found now)."""
    found = chain_breaks(conn) if breaks is None else breaks
    return {row_id: why for (table, row_id), why in found.items() if table == "attempts"}


# ---- a candidate's attempts without decoding every row ----------------------------------------------------
#
# `gpulab progress` and `gpulab lab list` need, of each attempt, its lab, time, score, result, hints, time taken,
# machine and whether it is flagged; only the attempts a table shows need everything. The chain check tells the
# rows that read with no flag (:class:`ChainCheck`: each row read once, when it is first checked, and remembered
# in the head record while the files stand as they did); SQLite tells, on every command, that such a row has no
# flag written with it and plain columns of the types gpulab writes (:data:`_PLAIN_AS_WRITTEN`): those columns
# are taken as they are. Every other row (flagged, off the chain, written after the check, or a value of another
# type) is read in full by :func:`_attempt`, so what is shown and counted is what the whole history gives.

_TRIED_COLUMNS = ("id", "lab_id", "graded_at", "percent", "passed", "hints_used", "time_taken_s", "machine", "host")
# SQL true when a row has no flag written with it and its plain columns hold the types gpulab writes (a number
# finite, a result 0 or 1): checked on every command, so a head record edited by hand cannot hide a flag
_PLAIN_AS_WRITTEN = " AND ".join(
    (
        "flags IS '[]'",
        "typeof(lab_id) = 'text'",
        "typeof(graded_at) = 'text'",
        "typeof(percent) IN ('integer', 'real') AND abs(percent) <= 1.7976931348623157e308",
        "typeof(passed) = 'integer' AND passed IN (0, 1)",
        "typeof(hints_used) IN ('integer', 'null')",
        "typeof(time_taken_s) IN ('integer', 'null')",
        "typeof(machine) = 'text'",
        "typeof(host) IN ('text', 'null')",
    )
)


class Tried(NamedTuple):
    """An attempt that is surely as gpulab wrote it and carries no flag, with only what a summary reads of it."""

    id: int
    lab_id: str
    graded_at: str
    percent: float
    passed: bool
    hints_used: int | None
    time_taken_s: int | None
    machine: str
    host: str | None

    @property
    def flags(self) -> tuple[str, ...]:
        return ()

    @property
    def recorded(self) -> bool:
        return True


def tried(conn: sqlite3.Connection, candidate: str, *, check: ChainCheck | None = None) -> list[Tried | Attempt]:
    """The candidate's attempts, oldest first, as :func:`attempts` orders them: a :class:`Tried` for each row
    the chain check found unflagged (``check``: :func:`check_chain` already made; None: made here) whose plain
    columns are as gpulab writes them (:data:`_PLAIN_AS_WRITTEN`), an :class:`Attempt` read in full for every
    other. Summaries made of it (:func:`best`, :func:`lab_summaries`,
    :func:`machine_mismatches`) are those of the full history."""
    check = check_chain(conn) if check is None else check
    if not {*_TRIED_COLUMNS, "flags"} <= set(_columns(conn, "attempts")):  # edited by hand: every row in full
        return list(attempts(conn, candidate=candidate, breaks=check.breaks))
    broken = _broken_attempts(conn, check.breaks)
    cur = conn.cursor()
    cur.row_factory = None
    cur.execute(
        f"SELECT {', '.join(_TRIED_COLUMNS)}, {_PLAIN_AS_WRITTEN} FROM attempts WHERE candidate = ?"
        " ORDER BY graded_at, id",
        (candidate,),
    )
    out: list[Tried | Attempt] = []
    doubtful: dict[int, int] = {}  # row id -> its place in ``out``
    for row in cur.fetchall():
        row_id = row[0]
        if row[9] == 1 and row_id <= check.attempts_to and row_id not in check.flagged and row_id not in broken:
            out.append(Tried(row_id, row[1], row[2], float(row[3]), bool(row[4]), *row[5:9]))
        else:
            doubtful[row_id] = len(out)
            out.append(Tried(*row[:9]))  # replaced below by the row read in full
    for row_id, a in read_in_full(conn, list(doubtful), broken).items():
        out[doubtful[row_id]] = a
    return out


def read_in_full(
    conn: sqlite3.Connection, ids: list[int], broken: Mapping[int, str] | None = None
) -> dict[int, Attempt]:
    """The attempts rows ``ids`` read in full (:func:`_attempt`), by id; ``broken``: the rows off the hash chain
    (:func:`chain_breaks`, attempts rows only; None: found here)."""
    if broken is None:
        broken = _broken_attempts(conn, None)
    out: dict[int, Attempt] = {}
    for first in range(0, len(ids), 500):
        part = ids[first : first + 500]
        sql = f"SELECT * FROM attempts WHERE id IN ({', '.join('?' for _ in part)})"
        for r in conn.execute(sql, part):
            out[r["id"]] = _attempt(r, broken.get(r["id"]))
    return out


@dataclass(frozen=True)
class Overview:
    """A candidate's attempts as `gpulab progress` shows them: how many, the ones its table lists read in full,
    and every attempt as a summary reads it (:func:`tried`)."""

    total: int
    shown: list[Attempt]  # the last ``recent`` and every flagged one before them, oldest first
    every: list[Tried | Attempt]


def overview(conn: sqlite3.Connection, candidate: str, recent: int, *, check: ChainCheck | None = None) -> Overview:
    """The candidate's attempts, with the last ``recent`` and every flagged one before them read in full
    (``check``: :func:`check_chain` already made; None: made here)."""
    check = check_chain(conn) if check is None else check
    every = tried(conn, candidate, check=check)
    cut = max(0, len(every) - recent)
    picked = [a for a in every[:cut] if a.flags] + every[cut:]
    full = read_in_full(conn, [a.id for a in picked if isinstance(a, Tried)], _broken_attempts(conn, check.breaks))
    shown = [full[a.id] if isinstance(a, Tried) else a for a in picked]
    return Overview(len(every), shown, every)


class Countable(Protocol):
    """What the counting rule reads of a grade: an :class:`Attempt` of the database, a report's record of a
    grade document (:class:`assessor.reports.documents.AttemptRecord`), or a fresh
    :class:`~assessor.labs.grading.Grade`."""

    @property
    def flags(self) -> tuple[str, ...]: ...

    @property
    def recorded(self) -> bool: ...


class Graded(Countable, Protocol):
    """What picking a lab's best reads of an attempt, beside :class:`Countable`."""

    @property
    def lab_id(self) -> str: ...

    @property
    def graded_at(self) -> str: ...

    @property
    def percent(self) -> float: ...

    @property
    def passed(self) -> bool: ...


class Summarised(Graded, Protocol):
    """What a lab's summary and the machines seen read of an attempt: an :class:`Attempt` or a :class:`Tried`."""

    @property
    def hints_used(self) -> int | None: ...

    @property
    def time_taken_s(self) -> int | None: ...

    @property
    def machine(self) -> str: ...

    @property
    def host(self) -> str | None: ...


_G = TypeVar("_G", bound=Graded)


def counts(attempt: Countable) -> bool:
    """THE counting rule, for `gpulab progress`, the levels and every report: an attempt counts towards a best
    score, a pass and a level only when it was recorded (it belongs to the candidate's start on that node) and
    carries no flag (tamper evidence, a reference solution applied, an edited database row). Others are shown,
    never counted."""
    return attempt.recorded and not attempt.flags


def best(attempts_: Iterable[_G]) -> dict[str, _G]:
    """Each lab's best attempt among those that count (:func:`counts`): a pass beats a fail, then the higher
    score, then the earlier one. A lab whose attempts are all flagged or unrecorded has none."""
    out: dict[str, _G] = {}
    for a in sorted(attempts_, key=lambda x: x.graded_at):  # stable: ties keep the order given (the row id)
        if not counts(a):
            continue
        cur = out.get(a.lab_id)
        if cur is None or (a.passed, a.percent) > (cur.passed, cur.percent):
            out[a.lab_id] = a
    return out


def machine_mismatches(attempts_: Iterable[Summarised]) -> dict[str, list[str]]:
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


# ---- does a grade belong to a start? -------------------------------------------------------------------


def why_not_recorded(
    start: Start | None, *, candidate: str, lab_id: str, target: str, identity: Identity, design: bool = False
) -> str | None:
    """Why a grade is shown but not recorded as an attempt of the lab, or None when it belongs to ``start``.

    ``target`` is the graded target as :func:`assessor.labs.capture.target_key` writes it.
    """
    if start is None:
        return (
            f"no open `gpulab lab start {lab_id}` by {candidate}: a grade is recorded only for a lab "
            f"{candidate} started"
        )
    if design:
        return None
    if start.target != target:
        return f"graded {target}, but {candidate} started {lab_id} on {start.target}"
    mismatch = identity_mismatch(start.identity, identity)
    if mismatch:
        return f"not the node {lab_id} was started on: {mismatch}"
    return None


def record_grade(
    conn: sqlite3.Connection,
    grade: Any,
    *,
    lab: Any,
    candidate: str,
    target: str,
    identity: Identity,
    start: Start | None,
    flags: list[str] | tuple[str, ...] = (),
    hints: int = 0,
) -> Any:
    """Record ``grade`` (a :class:`assessor.labs.grading.Grade`) as an attempt when it belongs to ``start``.

    Returns the grade with ``recorded``, ``not_recorded_because``, ``flags`` and ``hints_used`` filled in.
    ``flags`` is the node's own tamper evidence; a ``lab solve`` on the target since the start adds one.
    """
    reason = why_not_recorded(
        start, candidate=candidate, lab_id=lab.id, target=target, identity=identity, design=lab.is_design
    )
    all_flags = list(flags)
    if start is not None and not lab.is_design:
        for solved in solves_since(conn, start.target, start.recorded_at):
            all_flags.append(f"reference solution applied on this node (`lab solve {solved}` after the start)")
    if start is not None:
        edited = _start_break(conn, start.id)  # e.g. its clock moved by hand, so the grade is not late
        if edited is not None:
            all_flags.append(f"{DB_EDITED}: its start: {edited}")
    all_flags = list(dict.fromkeys(all_flags))
    grade = replace(grade, flags=tuple(all_flags), hints_used=hints)
    if reason is not None:
        return replace(grade, recorded=False, not_recorded_because=reason)
    assert start is not None
    record_attempt(
        conn,
        candidate=candidate,
        lab_id=lab.id,
        lab_domain=lab.domain,
        lab_level=lab.level,
        lab_hash=lab.digest,
        target=target,
        identity=identity,
        graded_at=grade.graded_at,
        started_at=grade.started_at,
        late=grade.late,
        percent=grade.percent,
        points=grade.points,
        max_points=grade.max_points,
        passed=grade.passed,
        checks=[s.to_json() for s in grade.scores],
        start_id=start.id,
        flags=all_flags,
        hints_used=hints,
        time_taken_s=grade.time_taken_s,
    )
    return replace(grade, recorded=True, not_recorded_because=None)


def design_solved(conn: sqlite3.Connection, lab_id: str, candidate: str, start: Start) -> bool:
    """Whether the reference answer (a design lab's, or a node lab's ticket) of ``lab_id`` was shown to
    ``candidate`` since ``start``."""
    row = conn.execute(
        "SELECT 1 FROM solves WHERE lab_id = ? AND target = 'design' AND solved_by = ? AND solved_at >= ? LIMIT 1",
        (lab_id, candidate, start.recorded_at),
    ).fetchone()
    return row is not None


# ---- the candidate's view -------------------------------------------------------------------------------


def lab_states(
    conn: sqlite3.Connection,
    candidate: str,
    lab_ids: list[str],
    *,
    check: ChainCheck | None = None,
) -> dict[str, dict[str, Any]]:
    """Each lab's state for the candidate: ``not started``, ``started`` (open, no pass yet), ``passed`` or
    ``not passed`` (graded, not passed, no open start), with the best score (flagged attempts do not count)."""
    from collections import Counter

    history = tried(conn, candidate, check=check)
    top = best(history)
    tries = Counter(h.lab_id for h in history)
    out: dict[str, dict[str, Any]] = {}
    for lab_id in lab_ids:
        a = top.get(lab_id)
        begun = open_start(conn, candidate, lab_id)
        if a is not None and a.passed:
            state = "passed"
        elif begun is not None:
            state = "started"
        elif a is not None:
            state = "not passed"
        else:
            state = "not started"
        out[lab_id] = {
            "state": state,
            "best_percent": a.percent if a else None,
            "attempts": tries[lab_id],
        }
    return out


def status(
    conn: sqlite3.Connection, candidate: str, labs: dict[str, tuple[int, int]], at: dt.datetime | None = None
) -> list[dict[str, Any]]:
    """The candidate's open labs: target, start, minutes left (negative: late), hints used of those available.

    ``labs`` maps a lab id to (time limit in minutes, number of hints).
    """
    at = at or now()
    out = []
    for s in open_starts(conn, candidate):
        limit, available = labs.get(s.lab_id, (None, None))
        elapsed = (at - s.started_at).total_seconds() / 60.0
        out.append(
            {
                "lab": s.lab_id,
                "target": s.target,
                "started_at": iso(s.started_at),
                "time_limit_min": limit,
                "time_left_min": round(limit - elapsed, 1) if limit is not None else None,
                "hints_used": hints_used(conn, candidate, s.lab_id, s.id),
                "hints_available": available,
            }
        )
    return out


def lab_summaries(attempts_: Iterable[Summarised]) -> dict[str, dict[str, Any]]:
    """Per lab: best score, passed, time taken by the best attempt, attempts, hints used (most of any
    attempt), flagged attempts; flagged attempts are never the best."""
    every = list(attempts_)
    top = best(every)
    by_lab: dict[str, list[Summarised]] = {}
    for a in every:
        by_lab.setdefault(a.lab_id, []).append(a)
    out: dict[str, dict[str, Any]] = {}
    for lab_id in sorted(by_lab):
        mine = by_lab[lab_id]
        b = top.get(lab_id)
        out[lab_id] = {
            "best_percent": b.percent if b else None,
            "passed": bool(b and b.passed),
            "time_taken_s": b.time_taken_s if b else None,
            "attempts": len(mine),
            "hints_used": max((a.hints_used for a in mine if a.hints_used is not None), default=None),
            "flagged": sum(1 for a in mine if a.flags),
        }
    return out


def open_start_on(conn: sqlite3.Connection, lab_id: str, target: str) -> Start | None:
    """The latest open start of the lab on ``target``, whoever made it (``lab solve`` uses its variant)."""
    row = conn.execute(
        "SELECT * FROM starts s WHERE lab_id = ? AND target = ?"
        f" AND NOT EXISTS (SELECT 1 FROM closes c WHERE {_CLOSED}) ORDER BY id DESC LIMIT 1",
        (lab_id, target),
    ).fetchone()
    return _start(row, conn) if row else None


def answer_was_graded(checks: list[dict[str, Any]]) -> bool:
    """Whether a grade (its checks as a grade's JSON writes them, e.g. an attempt's row) read an answer: a
    ``design.*`` check that passed or failed. A missing ticket, or one the lab's limit left ungraded, is an
    ``error`` and read nothing."""
    return any(
        isinstance(c, dict) and str(c.get("check", "")).startswith("design.") and c.get("status") in ("pass", "fail")
        for c in checks
    )


def ticket_grades(conn: sqlite3.Connection, candidate: str, lab_id: str) -> int:
    """How many recorded grades of ``lab_id`` by ``candidate`` read an answer (a ticket), over all their starts,
    flagged or not: what the lab's limit on answer grades counts (:func:`assessor.labs.grading.limit_ticket_grades`)."""
    rows = conn.execute("SELECT checks FROM attempts WHERE candidate = ? AND lab_id = ?", (candidate, lab_id))
    count = 0
    for row in rows:
        try:
            checks = json.loads(row[0])
        except (TypeError, ValueError):
            count += 1  # an unreadable row counts: a damaged record never buys another grade
            continue
        count += answer_was_graded(checks if isinstance(checks, list) else [])
    return count


def open_starts_on(conn: sqlite3.Connection, target: str) -> list[Start]:
    """Every lab open on ``target``: each candidate's open start of a lab (:func:`open_start`) that is on that
    target, oldest first. A node holds one lab at a time: ``lab start`` refuses another while one is open."""
    pairs = conn.execute("SELECT DISTINCT candidate, lab_id FROM starts WHERE target = ?", (target,)).fetchall()
    found = [open_start(conn, candidate, lab_id) for candidate, lab_id in pairs]
    return sorted((s for s in found if s is not None and s.target == target), key=lambda s: (s.recorded_at, s.id))
