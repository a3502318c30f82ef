"""What the attempts database tells of itself as a whole is shown everywhere it is read (issue #20).

Rows deleted at the end of a table (by hand with sqlite3, an older copy restored, lost with the WAL file)
leave no gap the hash chain shows; the head record beside the database does
(:func:`assessor.labs.attempts.head_findings`). ``gpulab progress`` prints each finding on a line of its own,
not as an edit by hand, and every report read from the database carries it as a report-level flag: a line
in HTML and Markdown, ``database_flags`` in JSON, a ``database_flags`` column in CSV, a warning on the
terminal (docs/REPORTS.md).
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts
from tests.support.attempt_rows import attempt_fields

LABS = Path(__file__).resolve().parents[1] / "labs" / "data"
MISSING = "attempts: 2 row(s) missing: gpulab recorded 5 up to row 5"


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Five attempts (ana's three, bob's two, bob's last a pass), then bob's last two deleted by hand."""
    path = tmp_path / "attempts.db"
    monkeypatch.setenv("GPULAB_LABS", str(LABS))
    monkeypatch.setenv("GPULAB_DB", str(path))
    with attempts.opened(path) as conn:
        grades = [("ana", 40.0), ("ana", 60.0), ("ana", 100.0), ("bob", 40.0), ("bob", 100.0)]
        for i, (who, percent) in enumerate(grades):
            attempts.record_attempt(conn, **attempt_fields(candidate=who, minutes=i, percent=percent))
    raw = sqlite3.connect(path)  # what a candidate does with the sqlite3 shell
    raw.execute("DELETE FROM attempts WHERE id > 3")
    raw.commit()
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    return path


def test_progress_says_the_rows_missing_on_a_line_of_their_own(db: Path) -> None:
    code, out, err = gpulab("progress", "--candidate", "ana")
    assert code == 0, err
    flat = " ".join(out.split())
    assert f"FLAG: attempts database: {MISSING}" in flat, out
    assert f"{attempts.DB_EDITED}: {MISSING.split(':')[0]}" not in flat  # a lost row is no hand edit
    code, out, _ = gpulab("progress", "--candidate", "ana", "--json")
    flags = json.loads(out)["flags"]
    assert [f for f in flags if MISSING in f] == [f for f in flags if f.startswith(f"attempts database: {MISSING}")]
    assert len(flags) == 1, flags


@pytest.mark.parametrize("kind", ["candidate", "cohort"])
def test_every_report_format_says_the_rows_missing(db: Path, kind: str) -> None:
    who = ["--candidate", "ana"] if kind == "candidate" else []
    for fmt in ("json", "md", "html", "csv"):
        code, out, err = gpulab("report", kind, *who, "-f", fmt)
        assert code == 0, err
        # on the terminal, whatever the format (an LMS layout has no column for it)
        assert f"gpulab: warning: attempts database {db}: {MISSING}" in err, (fmt, err)
        if fmt == "json":
            doc = json.loads(out)
            assert len(doc["database_flags"]) == 1 and MISSING in doc["database_flags"][0], doc["database_flags"]
            assert str(db) in doc["database_flags"][0]
        elif fmt == "csv":
            rows = list(csv.reader(io.StringIO(out)))
            assert rows[0][-1] == "database_flags"
            assert len(rows) > 1 and all(MISSING in row[-1] for row in rows[1:]), rows
            assert all(len(row) == len(rows[0]) for row in rows)  # no comment line, no ragged row
        else:
            assert "DATABASE FLAG" in out and "2 row(s) missing" in out, (fmt, out[:2000])


def test_an_lms_layout_keeps_its_columns_and_the_terminal_warns(db: Path) -> None:
    code, out, err = gpulab("report", "cohort", "-f", "csv", "--lms", "canvas")
    assert code == 0, err
    assert "database_flags" not in out and MISSING in err


def test_a_database_that_lost_nothing_has_no_database_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "attempts.db"
    monkeypatch.setenv("GPULAB_LABS", str(LABS))
    monkeypatch.setenv("GPULAB_DB", str(path))
    with attempts.opened(path) as conn:
        attempts.record_attempt(conn, **attempt_fields(candidate="ana", minutes=0, percent=100.0))
    code, out, err = gpulab("report", "cohort", "-f", "csv")
    assert code == 0 and "warning" not in err and "database_flags" not in out.splitlines()[0]
    code, out, _ = gpulab("report", "candidate", "--candidate", "ana", "-f", "json")
    assert json.loads(out)["database_flags"] == []
    code, out, _ = gpulab("progress", "--candidate", "ana")
    assert "FLAG" not in out
