"""The attempts database fails safe: corrupt, foreign, future-version, read-only and unwritable databases
give one line and exit 2; a grade is still shown, saying it was not recorded."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def corrupt(db: Path) -> None:
    db.write_bytes(b"this is not SQLite at all\n" * 10)


def foreign(db: Path) -> None:
    with sqlite3.connect(db) as raw:
        raw.execute("CREATE TABLE recipes (name TEXT)")


def future(db: Path) -> None:
    with attempts.opened(db):
        pass
    raw = sqlite3.connect(db)
    raw.execute(f"PRAGMA user_version = {attempts.SCHEMA_VERSION + 1}")
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all in the main file, so its bytes can be compared
    raw.close()


def garbled(db: Path) -> None:
    """An SQLite header over pages that are not SQLite's."""
    with attempts.opened(db):
        pass
    data = bytearray(db.read_bytes())
    data[16:] = bytes((i * 7 + 3) % 256 for i in range(len(data) - 16))
    db.write_bytes(bytes(data))
    for extra in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        extra.unlink(missing_ok=True)


BROKEN = {
    "corrupt": (corrupt, "not an attempts database (not an SQLite file"),
    "garbled": (garbled, "attempts database unusable"),
    "foreign": (foreign, "an SQLite database of another program"),
    "future": (future, "written by a newer gpulab"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_database_stops_progress_with_one_line(kind: str, lab_env: Path):
    make, words = BROKEN[kind]
    make(lab_env)
    code, _out, err = gpulab("progress", "--candidate", "ana")
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_grade_is_shown_with_a_note_when_it_cannot_be_recorded(kind: str, lab_env: Path):
    make, words = BROKEN[kind]
    make(lab_env)
    before = lab_env.read_bytes()
    code, out, err = gpulab("lab", "grade", "ib-301", "--target", "mock:dgx-a100", "--candidate", "ana", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["percent"] == 100.0 and doc["recorded"] is False
    assert doc["not_recorded_because"].startswith("the attempts database could not be used") and words in err
    assert lab_env.read_bytes() == before  # nobody else's file is changed


def test_a_start_with_an_unusable_database_leaves_the_node_alone(lab_env: Path, tmp_path: Path):
    foreign(lab_env)
    state = tmp_path / "node.json"
    code, _, err = gpulab("lab", "start", "ib-301", "--target", f"mock:{state}", "--candidate", "ana")
    assert code == 2 and "another program" in err and not state.exists()


def test_an_unwritable_location_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv("GPULAB_DB", str(blocker / "attempts.db"))  # its folder would be a regular file
    code, _out, err = gpulab("progress", "--candidate", "ana")
    assert code == 2 and "attempts database unusable" in err and len(err.strip().splitlines()) == 1
    code, out, err = gpulab("lab", "grade", "ib-301", "--target", "mock:dgx-a100", "--candidate", "ana", "--json")
    assert code == 2 and json.loads(out)["recorded"] is False and "attempts database unusable" in err
    code, out, _ = gpulab("lab", "list", "--candidate", "ana")
    assert code == 0 and "ib-301" in out and "not started" in out  # listing creates nothing


def test_a_read_only_database_shows_the_grade_and_says_it_was_not_recorded(
    monkeypatch: pytest.MonkeyPatch, lab_env: Path, tmp_path: Path
):
    node = f"mock:{tmp_path / 'node.json'}"
    assert gpulab("lab", "start", "ib-301", "--target", node, "--candidate", "ana")[0] == 0
    real = sqlite3.connect

    def read_only(database: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        # file permissions do not bind root, so open it the way SQLite opens a read-only file
        return real(f"file:{database}?mode=ro", *args, uri=True, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", read_only)
    code, out, err = gpulab("lab", "grade", "ib-301", "--target", node, "--candidate", "ana")
    assert code == 2 and "Score 0/100" in out and "NOT RECORDED: the attempts database could not be used" in out
    assert "read-only" in err and len(err.strip().splitlines()) == 1
    monkeypatch.setattr(sqlite3, "connect", real)
    with attempts.opened(lab_env) as conn:
        assert attempts.attempts(conn) == []


def test_a_version_1_database_is_upgraded_keeping_its_attempts(tmp_path: Path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as raw:
        for statement in attempts._DDL.split(";"):
            if statement.strip():
                raw.execute(statement)
        raw.execute(
            "INSERT INTO attempts (candidate, lab_id, lab_domain, lab_level, lab_hash, target, host, machine,"
            " identity, graded_at, started_at, late, percent, points, max_points, passed, checks)"
            " VALUES ('ana', 'ib-301', 'infiniband', 3, 'h', 't', 'n', '', '{}', '2026-01-01T00:00:00+00:00',"
            " NULL, 0, 50.0, 50.0, 100.0, 0, '[]')"
        )
        raw.execute("PRAGMA user_version = 1")
    with attempts.opened(db) as conn:
        (a,) = attempts.attempts(conn, "ana")
        assert a.percent == 50.0 and a.flags == () and a.hints_used is None
        assert conn.execute("PRAGMA user_version").fetchone()[0] == attempts.SCHEMA_VERSION
        assert attempts.chain_breaks(conn) == {}
