"""The tamper chain is checked once: a command hashes only the rows written since the last check, and any
change to the database files since (an edit by hand) makes the next command check every row again."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from assessor.labs import attempts
from tests.support.attempt_rows import attempt_fields


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many rows each check hashed (one entry per chain_breaks call)."""
    counts: list[int] = []
    checking = [False]
    real_hash = attempts._row_hash
    real_breaks = attempts.chain_breaks

    def counted_hash(prev: str, values: dict[str, object]) -> str:
        if checking[0]:  # not the hashes a write makes
            counts[-1] += 1
        return real_hash(prev, values)

    def counted_breaks(conn: sqlite3.Connection) -> dict[tuple[str, int], str]:
        counts.append(0)
        checking[0] = True
        try:
            return real_breaks(conn)
        finally:
            checking[0] = False

    monkeypatch.setattr(attempts, "_row_hash", counted_hash)
    monkeypatch.setattr(attempts, "chain_breaks", counted_breaks)
    return counts


def record(db: Path, n: int, first: int = 0) -> None:
    with attempts.opened(db) as conn:
        for i in range(first, first + n):
            attempts.record_attempt(conn, **attempt_fields(minutes=i, percent=float(i % 100)))


def check(db: Path) -> dict[tuple[str, int], str]:
    with attempts.opened(db) as conn:
        return attempts.chain_breaks(conn)


def test_a_second_check_hashes_nothing_and_a_write_only_its_own_rows(tmp_path: Path, hashed: list[int]) -> None:
    db = tmp_path / "attempts.db"
    record(db, 30)
    assert check(db) == {}
    assert check(db) == {}
    assert hashed[-1] == 0  # nothing written since the first check
    record(db, 5, first=30)  # gpulab's own writes keep what was checked
    assert check(db) == {}
    assert hashed[-1] == 0
    with attempts.opened(db) as conn:
        assert len(attempts.attempts(conn, candidate="ana")) == 35


def test_an_edit_by_hand_after_a_check_is_still_found(tmp_path: Path, hashed: list[int]) -> None:
    db = tmp_path / "attempts.db"
    record(db, 30)
    assert check(db) == {}
    raw = sqlite3.connect(db)
    raw.execute("UPDATE attempts SET percent = 100 WHERE id = 3")
    raw.commit()
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    breaks = check(db)
    assert breaks == {("attempts", 3): "attempts row 3: edited after gpulab wrote it"}
    assert hashed[-1] >= 30  # every row again
    assert check(db) == breaks  # and again: a database with breaks is never vouched for


def test_an_edit_that_keeps_the_files_size_and_time_is_the_documented_limit(tmp_path: Path) -> None:
    """What the stamp cannot see: an edit that puts the file's size and change time back (a deliberate forgery,
    which rewriting the hashes does as well) is found once the chain is checked from the start again."""
    db = tmp_path / "attempts.db"
    record(db, 10)
    assert check(db) == {}
    before = db.stat()
    raw = sqlite3.connect(db)
    raw.execute("UPDATE attempts SET percent = 100 WHERE id = 3")
    raw.commit()
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert db.stat().st_size == before.st_size
    assert check(db) == {}  # vouched for by the stamp
    attempts.head_path(db).unlink()  # without the head record every row is checked
    assert check(db) == {("attempts", 3): "attempts row 3: edited after gpulab wrote it"}
