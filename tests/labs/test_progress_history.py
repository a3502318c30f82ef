"""`gpulab progress` lists the last attempts and every flagged one; --history lists them all; --json has all."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts
from tests.support.attempt_rows import attempt_fields

RECENT = 20


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """30 attempts of ana, the 2nd edited by hand afterwards (a flagged attempt among the old ones)."""
    path = tmp_path / "attempts.db"
    with attempts.opened(path) as conn:
        for i in range(30):
            attempts.record_attempt(conn, **attempt_fields(minutes=i, percent=float(i)))
    raw = sqlite3.connect(path)
    raw.execute("UPDATE attempts SET percent = 99 WHERE id = 2")
    raw.commit()
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    return path


def progress(db: Path, *extra: str) -> str:
    result = CliRunner().invoke(main, ["progress", "--candidate", "ana", "--db", str(db), *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def rows(out: str) -> list[str]:
    """The attempts table's rows: the lines that hold a graded time and a score."""
    return [line for line in out.splitlines() if "2026-03-01" in line and "%" in line]


def test_the_last_attempts_and_every_flagged_one_are_listed_by_default(db: Path) -> None:
    out = progress(db)
    listed = rows(out)
    assert len(listed) == RECENT + 1
    assert "99 %" in listed[0] and "edited" in out  # the flagged 2nd attempt, though old
    assert "0 %" not in listed[0] and not any(line.split("│")[3].strip() == "0 %" for line in listed if "│" in line)
    assert f"{30 - RECENT - 1} earlier attempts: `gpulab progress --history` lists them all" in out
    assert "21 of 30" in out


def test_history_lists_every_attempt_and_json_always_has_them_all(db: Path) -> None:
    assert len(rows(progress(db, "--history"))) == 30
    assert "earlier attempts" not in progress(db, "--history")
    doc = json.loads(progress(db, "--json"))
    assert len(doc["attempts"]) == 30
