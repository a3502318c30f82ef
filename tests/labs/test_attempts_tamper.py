"""The attempts database against a candidate with the file in hand (issue #20, item 1).

An edit hidden by the upgrade path stays flagged; a value edited by hand is a flag on its attempt (never a
traceback); a database that cannot be used is one line and exit 2 on every command that reads it; rows that
disappear (deleted at the end, an older copy restored, lost with the WAL file) are said.
"""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing as mp
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts
from tests.support.attempt_rows import attempt_fields

EDITED = attempts.DB_EDITED


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def record(db: Path, n: int = 1, **kw: Any) -> None:
    with attempts.opened(db) as conn:
        for i in range(n):
            attempts.record_attempt(conn, **attempt_fields(minutes=i, **kw))


def sql(db: Path, *statements: str) -> None:
    """Edit the file as a candidate would, with the sqlite3 shell, leaving no WAL behind."""
    raw = sqlite3.connect(db)
    for statement in statements:
        raw.execute(statement)
    raw.commit()
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()


def progress_json() -> dict[str, Any]:
    code, out, err = gpulab("progress", "--candidate", "ana", "--json")
    assert code == 0 and "Traceback" not in err, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def edited_flags(doc: dict[str, Any]) -> list[str]:
    return [f for a in doc["attempts"] for f in a["flags"] if f.startswith(EDITED)]


# ---- the chain survives an upgrade ------------------------------------------------------------------------


def drop_chain(db: Path) -> None:
    """Make a chained file look like version 1: its chain, the later columns and tables gone."""
    v1 = {"starts": attempts._V1_STARTS, "attempts": attempts._V1_ATTEMPTS}
    raw = sqlite3.connect(db)
    for table, keep in v1.items():
        for (column,) in raw.execute(f"SELECT name FROM pragma_table_info('{table}')").fetchall():
            if column not in keep:
                raw.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    for table in ("closes", "solves", "hints"):
        raw.execute(f"DROP TABLE {table}")
    raw.execute("PRAGMA application_id = 0")
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()


@pytest.mark.parametrize("version", [0, 1, 2])
def test_an_edit_with_a_lowered_version_number_stays_flagged(version: int, lab_env: Path):
    record(lab_env, 2, percent=40.0)
    sql(lab_env, "UPDATE attempts SET percent = 100.0, passed = 1 WHERE id = 1", f"PRAGMA user_version = {version}")
    with attempts.opened(lab_env) as conn:  # upgraded without an error, and without re-chaining
        assert conn.execute("PRAGMA user_version").fetchone()[0] == attempts.SCHEMA_VERSION
        first, second = attempts.attempts(conn, "ana")
    assert any("attempts row 1: edited after gpulab wrote it" in f for f in first.flags) and not second.flags
    doc = progress_json()
    assert doc["passed"] == [] and len(edited_flags(doc)) == 1


def test_an_edit_in_a_file_made_to_look_like_version_1_stays_flagged(lab_env: Path):
    record(lab_env, 2, percent=40.0)
    sql(lab_env, "UPDATE attempts SET percent = 100.0, passed = 1 WHERE id = 2")
    drop_chain(lab_env)
    doc = progress_json()  # the head record says this file had a chain: its rows are not blessed
    assert doc["passed"] == [] and len(edited_flags(doc)) == 2
    assert all("not in the chain" in f for f in edited_flags(doc))
    assert any("is not the row it wrote" in f or "missing" in f for f in doc["flags"])
    code, out, _ = gpulab("report", "candidate", "--candidate", "ana", "-f", "json")
    assert code == 0 and EDITED in out


def test_a_version_1_lookalike_with_tables_version_1_never_had_stays_flagged(lab_env: Path):
    record(lab_env, 1, percent=40.0)
    sql(lab_env, "UPDATE attempts SET percent = 100.0, passed = 1")
    raw = sqlite3.connect(lab_env)  # the chain columns dropped, but the tables of version 2 left
    for table in attempts.CHAINED:
        for column in ("prev_hash", "row_hash"):
            raw.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.close()
    attempts.head_path(lab_env).unlink()  # even without its head record
    doc = progress_json()
    assert doc["passed"] == [] and len(edited_flags(doc)) == 1


def test_a_genuine_version_2_file_keeps_its_chain_and_its_edits(lab_env: Path):
    record(lab_env, 2, percent=40.0)
    sql(
        lab_env,
        "UPDATE attempts SET percent = 100.0, passed = 1 WHERE id = 2",
        "ALTER TABLE closes DROP COLUMN for_candidate",
        "ALTER TABLE closes DROP COLUMN why",
        "PRAGMA user_version = 2",
    )
    with attempts.opened(lab_env) as conn:
        breaks = attempts.chain_breaks(conn)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == attempts.SCHEMA_VERSION
    assert breaks == {("attempts", 2): "attempts row 2: edited after gpulab wrote it"}


# ---- a value edited by hand is a flag on its attempt --------------------------------------------------


def loosen(table: str) -> list[str]:
    """Statements that re-create a table without its constraints (so NULL and any type fit)."""
    return [
        f"CREATE TABLE loose AS SELECT * FROM {table}",
        f"DROP TABLE {table}",
        f"ALTER TABLE loose RENAME TO {table}",
    ]


EDITS: dict[str, Callable[[Path], list[str]]] = {
    "checks-not-json": lambda db: ["UPDATE attempts SET checks = 'all passed!'"],
    "checks-not-a-list": lambda db: ["UPDATE attempts SET checks = '{\"check\": 1}'"],
    "checks-not-checks": lambda db: ["UPDATE attempts SET checks = '[1, \"x\", null]'"],
    "checks-wrong-types": lambda db: ['UPDATE attempts SET checks = \'[{"check": 1, "status": "won"}]\''],
    "percent-text": lambda db: ["UPDATE attempts SET percent = 'one hundred'"],
    "percent-null": lambda db: [*loosen("attempts"), "UPDATE attempts SET percent = NULL"],
    "percent-blob": lambda db: ["UPDATE attempts SET percent = x'00ff'"],
    "started_at-garbage": lambda db: ["UPDATE attempts SET started_at = 'yesterday'"],
    "started_at-no-zone": lambda db: ["UPDATE attempts SET started_at = '2026-03-01T08:00:00'"],
    "started_at-number": lambda db: ["UPDATE attempts SET started_at = 1767225600"],
    "graded_at-null": lambda db: [*loosen("attempts"), "UPDATE attempts SET graded_at = NULL"],
    "graded_at-garbage": lambda db: ["UPDATE attempts SET graded_at = 'soon'"],
    "passed-2": lambda db: ["UPDATE attempts SET passed = 2"],
    "late-text": lambda db: ["UPDATE attempts SET late = 'no'"],
    "identity-garbage": lambda db: ["UPDATE attempts SET identity = '{'"],
    "flags-garbage": lambda db: ["UPDATE attempts SET flags = 'none at all'"],
    "flags-object": lambda db: ["UPDATE attempts SET flags = '{}'"],
    "hints_used-text": lambda db: ["UPDATE attempts SET hints_used = 'none'"],
    "lab_level-text": lambda db: ["UPDATE attempts SET lab_level = 'expert'"],
    "host-number": lambda db: ["UPDATE attempts SET host = 42"],
    "dropped-started_at": lambda db: ["ALTER TABLE attempts DROP COLUMN started_at"],
    "dropped-hints_used": lambda db: ["ALTER TABLE attempts DROP COLUMN hints_used"],
    "dropped-checks": lambda db: ["ALTER TABLE attempts DROP COLUMN checks"],
    "dropped-flags": lambda db: ["ALTER TABLE attempts DROP COLUMN flags"],
    "dropped-row_hash": lambda db: ["ALTER TABLE attempts DROP COLUMN row_hash"],
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_value_edited_by_hand_is_a_flag_on_every_command(edit: str, lab_env: Path):
    record(lab_env, 1)
    assert progress_json()["passed"] == ["ib-301"]
    sql(lab_env, *EDITS[edit](lab_env))
    doc = progress_json()
    assert doc["passed"] == [] and edited_flags(doc), doc["attempts"]
    assert doc["labs"]["ib-301"]["flagged"] == 1 and doc["labs"]["ib-301"]["best_percent"] is None
    code, out, err = gpulab("progress", "--candidate", "ana")
    assert code == 0 and "Traceback" not in err and EDITED in out.replace("\n", " ")
    for kind in ("candidate", "cohort"):
        code, out, err = gpulab("report", kind, "--candidate", "ana", "-f", "json")
        assert code == 0 and "Traceback" not in err and EDITED in out, (kind, err)
        report = json.loads(out)
        lab = report["labs"][0] if kind == "candidate" else report["candidates"][0]["labs"]["ib-301"]
        assert lab["passed"] is False and lab["flags"]
    for fmt in ("html", "md", "csv"):
        code, _, err = gpulab("report", "cohort", "--candidate", "ana", "-f", fmt)
        assert code == 0 and "Traceback" not in err
    code, out, err = gpulab("lab", "list", "--candidate", "ana", "--json")
    assert code == 0 and "Traceback" not in err
    assert {r["id"]: r for r in json.loads(out)}["ib-301"]["best_percent"] is None


def test_an_edited_clock_of_a_start_flags_the_grade_made_against_it(lab_env: Path, tmp_path: Path):
    from tests.labs.test_lab_cli import fix_ib301

    state = tmp_path / "node.json"
    assert gpulab("lab", "start", "ib-301", "--target", f"mock:{state}", "--candidate", "ana")[0] == 0
    later = attempts.iso(attempts.now() + dt.timedelta(minutes=5))
    sql(lab_env, f"UPDATE starts SET started_at = '{later}'")  # more time on the clock
    fix_ib301(state)
    _code, out, _ = gpulab("lab", "grade", "ib-301", "--target", f"mock:{state}", "--candidate", "ana", "--json")
    doc = json.loads(out)
    assert doc["recorded"] is True and any("its start: starts row 1: edited" in f for f in doc["flags"])
    assert progress_json()["passed"] == []


@pytest.mark.parametrize(
    "value", ["'an hour ago'", "NULL", "'2026-03-01T08:00:00'"], ids=["garbage", "null", "no-zone"]
)
def test_a_start_whose_clock_is_not_a_time_is_one_line(value: str, lab_env: Path, tmp_path: Path):
    node = f"mock:{tmp_path / 'node.json'}"
    assert gpulab("lab", "start", "ib-301", "--target", node, "--candidate", "ana")[0] == 0
    sql(lab_env, *loosen("starts"), f"UPDATE starts SET started_at = {value}")
    for args in (
        ("lab", "status", "--candidate", "ana"),
        ("lab", "start", "ib-301", "--target", node, "--candidate", "ana"),
    ):
        code, _, err = gpulab(*args)
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, (args, err)
        assert err.startswith(f"gpulab: error: {lab_env}: {EDITED}: starts row 1: started_at"), err
    code, out, err = gpulab("lab", "grade", "ib-301", "--target", node, "--candidate", "ana", "--json")
    assert code == 2 and json.loads(out)["recorded"] is False and "starts row 1" in err
    code, out, err = gpulab("lab", "list", "--candidate", "ana")
    assert code == 2 and "ib-301" in out and "starts row 1" in err and "Traceback" not in err
    assert progress_json()["attempts"] == []  # progress reads attempts only


# ---- a database that cannot be used: one line, exit 2, on every command that reads it ------------------


def truncated(db: Path) -> None:
    record(db, 40, note="x" * 500)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    attempts.head_path(db).unlink()


def not_sqlite(db: Path) -> None:
    db.write_bytes(b"attempts: none\n" * 100)


def directory(db: Path) -> None:
    db.mkdir()


def empty_header(db: Path) -> None:
    db.write_bytes(b"SQLite format 3\x00")


def no_attempts_table(db: Path) -> None:
    record(db, 1)
    sql(db, "DROP TABLE attempts")


def no_candidate_column(db: Path) -> None:
    record(db, 1)
    sql(db, "DROP INDEX attempts_by_candidate", "ALTER TABLE attempts DROP COLUMN candidate")


def zero_page_size(db: Path) -> None:
    record(db, 1)
    data = bytearray(db.read_bytes())
    data[16:18] = b"\x00\x07"  # page size 7: not a power of two
    db.write_bytes(bytes(data))


UNUSABLE: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (truncated, "corrupt"),
    "not-sqlite": (not_sqlite, "not an attempts database"),
    "directory": (directory, "a directory"),
    "only-a-header": (empty_header, "attempts database"),
    "no-attempts-table": (no_attempts_table, "no such table: attempts"),
    "no-candidate-column": (no_candidate_column, "edited by hand"),
    "bad-page-size": (zero_page_size, "attempts database"),
}

READERS = {
    "progress": ("progress", "--candidate", "ana"),
    "progress-json": ("progress", "--candidate", "ana", "--json"),
    "report-candidate": ("report", "candidate", "--candidate", "ana", "-f", "json"),
    "report-cohort": ("report", "cohort", "--candidate", "ana", "-f", "json"),
    "report-cohort-csv": ("report", "cohort", "-f", "csv"),
}


@pytest.mark.parametrize("kind", sorted(UNUSABLE))
def test_an_unusable_database_is_one_line_on_every_command(kind: str, lab_env: Path):
    make, words = UNUSABLE[kind]
    make(lab_env)
    for name, args in READERS.items():
        code, _, err = gpulab(*args)
        assert code == 2 and "Traceback" not in err, (name, err)
        assert len(err.strip().splitlines()) == 1 and err.startswith(f"gpulab: error: {lab_env}"), (name, err)
        assert words in err, (name, err)
    code, out, err = gpulab("lab", "grade", "ib-301", "--target", "mock:dgx-a100", "--candidate", "ana", "--json")
    assert code == 2 and json.loads(out)["recorded"] is False and words in err and "Traceback" not in err
    code, out, err = gpulab("lab", "list", "--candidate", "ana")
    assert code == 2 and "ib-301" in out and words in err and "Traceback" not in err
    code, out, err = gpulab("lab", "status", "--candidate", "ana")  # reads the starts only
    assert code in (0, 2) and "Traceback" not in err and (code == 0 or words in err)


def test_a_database_given_as_a_report_input_is_one_line_too(lab_env: Path, tmp_path: Path):
    copy = tmp_path / "copy.db"
    record(lab_env, 3, note="x" * 500)
    data = lab_env.read_bytes()
    copy.write_bytes(data[: len(data) // 2])
    for kind in ("candidate", "cohort"):
        code, _, err = gpulab("report", kind, str(copy), "--candidate", "ana", "-f", "json")
        assert code == 2 and err.startswith(f"gpulab: error: {copy}") and "Traceback" not in err


def test_a_database_that_cannot_be_read_is_one_line(monkeypatch: pytest.MonkeyPatch, lab_env: Path):
    record(lab_env, 1)
    real = Path.open

    def denied(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == lab_env:  # root ignores file modes: refuse the way a mode 000 file refuses anyone else
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    for name, args in READERS.items():
        code, _, err = gpulab(*args)
        assert code == 2 and "Permission denied" in err and len(err.strip().splitlines()) == 1, (name, err)


def test_the_installed_command_says_one_line_too(lab_env: Path):
    not_sqlite(lab_env)
    exe = Path(sys.executable).with_name("gpulab")
    for args in (["progress"], ["report", "candidate", "--candidate", "ana"], ["report", "cohort"]):
        done = subprocess.run([str(exe), *args], capture_output=True, text=True, env=os.environ, timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.strip() == f"gpulab: error: {lab_env}: not an attempts database (not an SQLite file;" + (
            " corrupt or another program's)"
        )


# ---- rows gone are said -----------------------------------------------------------------------------------


def findings(db: Path) -> list[str]:
    with attempts.opened(db) as conn:
        return attempts.head_findings(conn)


def test_attempts_deleted_at_the_end_are_said(lab_env: Path):
    record(lab_env, 5, percent=40.0)
    sql(lab_env, "DELETE FROM attempts WHERE id > 2")  # the last three: no later row shows the gap
    with attempts.opened(lab_env) as conn:
        assert attempts.chain_breaks(conn) == {
            ("head", 0): "attempts: 3 row(s) missing: gpulab recorded 5 up to row 5 (the last at "
            + json.loads(attempts.head_path(lab_env).read_text())["at"]
            + "), the database holds 2 of them (deleted, an older copy of the file restored, or lost with its WAL"
            " file)"
        }
    doc = progress_json()
    assert any("3 row(s) missing" in f for f in doc["flags"])
    code, out, _ = gpulab("progress", "--candidate", "ana")
    assert code == 0 and "FLAG" in out and "3 row(s) missing" in out.replace("\n", " ")
    record(lab_env, 1)  # the next write keeps the loss in the head record for good
    assert len(findings(lab_env)) == 1 and "found at" in findings(lab_env)[0]


def test_an_older_copy_put_back_is_said(lab_env: Path, tmp_path: Path):
    record(lab_env, 2, percent=100.0)
    backup = tmp_path / "backup.db"
    shutil.copy(lab_env, backup)
    record(lab_env, 3, percent=10.0, candidate="ana")
    shutil.copy(backup, lab_env)
    assert any("3 row(s) missing" in f for f in findings(lab_env))


def test_a_head_record_edited_by_hand_is_said(lab_env: Path):
    record(lab_env, 1)
    attempts.head_path(lab_env).write_text("{}", encoding="utf-8")
    assert any("not a gpulab head record" in f for f in progress_json()["flags"])
    record(lab_env, 1)
    assert any("edited by hand), found at" in f for f in findings(lab_env))


def _holder(db: str, name: str, count: int, done: Any) -> None:
    """A grader keeping its connection (a cohort's): record, then wait to be killed."""
    conn = attempts.connect(db)
    for i in range(count):
        attempts.record_attempt(conn, **attempt_fields(candidate=name, percent=float(i), minutes=i))
    done.set()
    time.sleep(120)


def test_removing_the_wal_files_while_two_graders_hold_the_database_loses_nothing(tmp_path: Path):
    db = tmp_path / "a.db"
    with attempts.opened(db):
        pass
    ctx = mp.get_context("spawn")
    events = [ctx.Event(), ctx.Event()]
    procs = [ctx.Process(target=_holder, args=(str(db), n, 30, e)) for n, e in zip(("ana", "bo"), events, strict=True)]
    for p in procs:
        p.start()
    try:
        assert all(e.wait(60) for e in events)
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    finally:
        for p in procs:
            assert p.pid is not None
            os.kill(p.pid, signal.SIGKILL)
            p.join(10)
    with attempts.opened(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for name in ("ana", "bo"):
            assert sorted(a.percent for a in attempts.attempts(conn, name)) == [float(i) for i in range(30)]
        assert attempts.chain_breaks(conn) == {}


def _grader(db: str, name: str, count: int, barrier: Any, out: str) -> None:
    """`gpulab lab grade` over and over: a connection each; writes what it was told was recorded."""
    barrier.wait()
    kept = []
    for i in range(count):
        try:
            with attempts.opened(db) as conn:
                attempts.record_attempt(conn, **attempt_fields(candidate=name, percent=float(i), minutes=i))
            kept.append(i)
        except attempts.DatabaseError:
            pass  # said: `lab grade` shows the grade as not recorded
        time.sleep(0.005)
    Path(out).write_text(json.dumps(kept), encoding="utf-8")


def test_removing_the_wal_files_while_two_processes_grade_loses_nothing_unsaid(tmp_path: Path):
    db = tmp_path / "a.db"
    with attempts.opened(db):
        pass
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(3)
    outs = {name: tmp_path / f"{name}.json" for name in ("ana", "bo")}
    procs = [ctx.Process(target=_grader, args=(str(db), n, 60, barrier, str(o))) for n, o in outs.items()]
    for p in procs:
        p.start()
    barrier.wait()
    time.sleep(0.2)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    with attempts.opened(db) as conn:
        said = attempts.head_findings(conn)
        for name, out in outs.items():
            kept = {float(i) for i in json.loads(out.read_text())}
            found = {a.percent for a in attempts.attempts(conn, name)}
            assert kept <= found or said, (name, sorted(kept - found))
