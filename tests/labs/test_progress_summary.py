"""`gpulab progress` and `gpulab lab list` summarise a candidate's attempts without reading every row in full:
the rows the chain check found unflagged give their plain columns, every other row is read in full. What they
show and count must be what the whole history gives, on the first command (every row checked) and on the next
(the check kept in the head record), with a head record of an older gpulab, and after an edit by hand."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts, loader, views
from tests.support.attempt_rows import NODE, attempt_fields

RECENT = 20
OTHER_NODE = attempts.Identity("node07", ("1650221000007",), ("GPU-bbbb",))


def fields(i: int) -> dict[str, Any]:
    """The ``i``-th attempt of ana: labs, scores, machines, hints and flags that vary."""
    lab = ("ib-301", "nccl-301", "health-101")[i % 3]
    out = attempt_fields(minutes=i, percent=float((i * 37) % 101))
    out.update(lab_id=lab, identity=OTHER_NODE if i % 11 == 0 else NODE, hints_used=i % 4 if i % 5 else None)
    if i % 13 == 0:
        out["flags"] = ["reference solution applied on this node (`lab solve ib-301` after the start)"]
    if i % 17 == 0:  # a check's result gpulab reads as not one: on the chain, yet flagged when read
        out["checks"] = [{"check": "ib.ports_active", "status": "weird", "message": "?"}]
    return out


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "attempts.db"
    with attempts.opened(path) as conn:
        with attempts.transaction(conn):
            for i in range(60):
                attempts.insert_attempt(conn, **fields(i))
        with attempts.transaction(conn):  # bob's attempts are not ana's
            attempts.insert_attempt(conn, **attempt_fields(candidate="bob", percent=100.0))
    return path


def edit(db: Path, sql: str) -> None:
    raw = sqlite3.connect(db)
    raw.execute(sql)
    raw.commit()
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()


def as_shown(p: views.Progress) -> dict[str, Any]:
    """What `gpulab progress` shows of a :class:`views.Progress`, the attempts listed aside."""
    return {
        "total": p.total,
        "passed": sorted(p.passed),
        "summaries": p.summaries,
        "mismatches": p.mismatches,
        "flags": p.flags,
        "levels": [v.explanation for v in p.levels.domains.values()] + [p.levels.explanation],
    }


def recent_and_flagged(history: list[attempts.Attempt]) -> list[dict[str, Any]]:
    cut = max(0, len(history) - RECENT)
    return [a.to_json() for a in [a for a in history[:cut] if a.flags] + history[cut:]]


def assert_summary_is_the_whole_history(db: Path) -> None:
    whole = views.progress(candidate="ana", db=str(db))
    summary = views.progress(candidate="ana", db=str(db), recent=RECENT)
    assert whole.total == len(whole.history) == 60
    assert as_shown(summary) == as_shown(whole)
    assert [a.to_json() for a in summary.history] == recent_and_flagged(whole.history)
    with attempts.opened(db) as conn:
        history = attempts.attempts(conn, candidate="ana")
        top = attempts.best(history)
        states = attempts.lab_states(conn, "ana", ["ib-301", "nccl-301", "health-101", "mig-201"])
    for lab_id, state in states.items():
        a = top.get(lab_id)
        assert state["best_percent"] == (a.percent if a else None)
        assert state["attempts"] == sum(1 for h in history if h.lab_id == lab_id)


def vouched(db: Path) -> dict[str, Any]:
    head = attempts.read_head(db)
    assert head is not None
    tables: dict[str, Any] = head.get("verified", {}).get("tables", {})
    return tables


def test_the_summary_is_that_of_the_whole_history_first_and_when_kept(db: Path) -> None:
    assert "attempts" not in vouched(db)  # the writes alone vouch for nothing yet: the first command checks all
    assert_summary_is_the_whole_history(db)
    kept = vouched(db)["attempts"]
    expected = sorted(i + 1 for i in range(60) if i % 13 == 0 or i % 17 == 0)
    assert kept["flagged"] == expected and kept["last_id"] == 61
    assert_summary_is_the_whole_history(db)  # from the head record this time
    with attempts.opened(db) as conn:  # gpulab's own write keeps the check, with the new row's verdict
        attempts.record_attempt(conn, **{**fields(17), "graded_at": fields(70)["graded_at"]})
    assert vouched(db)["attempts"]["flagged"] == [*expected, 62]


def test_a_head_record_of_an_older_gpulab_vouches_for_no_attempt(db: Path) -> None:
    """A head record written before rows' verdicts were kept says the chain checked but not which rows read
    flagged: the attempts are checked again, never taken as unflagged."""
    assert_summary_is_the_whole_history(db)
    head = attempts.read_head(db)
    assert head is not None
    for table in head["verified"]["tables"].values():
        table.pop("flagged", None)
    attempts.head_path(db).write_text(json.dumps(head))
    with attempts.opened(db) as conn:
        check = attempts.check_chain(conn)
        assert check.attempts_to == 61 and check.flagged == {i + 1 for i in range(60) if i % 13 == 0 or i % 17 == 0}
    assert vouched(db)["attempts"]["flagged"]  # and kept again
    assert_summary_is_the_whole_history(db)


def test_an_edit_by_hand_reads_the_edited_rows_in_full(db: Path) -> None:
    assert_summary_is_the_whole_history(db)
    edit(db, "UPDATE attempts SET percent = 100, passed = 1 WHERE id = 5")  # off the chain: flagged, not counted
    edit(db, "UPDATE attempts SET hints_used = 'many' WHERE id = 8")
    assert_summary_is_the_whole_history(db)
    shown = views.progress(candidate="ana", db=str(db), recent=RECENT)
    flagged = {a.id: a.flags for a in shown.history if a.id in (5, 8)}
    assert "attempts row 5: edited after gpulab wrote it" in " ".join(flagged[5])
    assert "hints_used 'many' is not an integer" in " ".join(flagged[8])


def test_rows_after_the_check_or_flagged_by_it_are_read_in_full(db: Path) -> None:
    check = attempts.ChainCheck({}, attempts_to=40, flagged=frozenset({3}))
    with attempts.opened(db) as conn:
        every = attempts.tried(conn, "ana", check=check)
    full = {a.id for a in every if isinstance(a, attempts.Attempt)}
    written_flags = {i + 1 for i in range(60) if i % 13 == 0}  # SQLite sees those on every command
    assert full == {3, *range(41, 61), *written_flags}
    assert all(isinstance(a, attempts.Tried) and not a.flags for a in every if a.id not in full)


def test_a_head_record_edited_to_vouch_for_flagged_rows_hides_no_flag_written_with_an_attempt(db: Path) -> None:
    assert_summary_is_the_whole_history(db)
    head = attempts.read_head(db)
    assert head is not None
    head["verified"]["tables"]["attempts"]["flagged"] = []  # the files untouched: the stamp still holds
    attempts.head_path(db).write_text(json.dumps(head))
    shown = views.progress(candidate="ana", db=str(db), recent=RECENT)
    solved = [a.id for a in shown.history if any("reference solution applied" in f for f in a.flags)]
    assert solved == [i + 1 for i in range(60) if i % 13 == 0]
    assert sum(row["flagged"] for row in shown.summaries.values()) >= len(solved)


def test_progress_prints_the_same_from_the_summary_and_from_the_whole_history(db: Path) -> None:
    def progress(*extra: str) -> str:
        result = CliRunner().invoke(main, ["progress", "--candidate", "ana", "--db", str(db), *extra])
        assert result.exit_code == 0, result.output
        return result.stdout

    summary, whole = progress(), progress("--history")
    assert "(the last 20 and the flagged ones: 26 of 60)" in summary
    assert "34 earlier attempts" in summary
    # every line after the attempts table is the same: best per lab, levels, study plan, warnings
    assert summary.split("best per lab", 1)[1] == whole.split("best per lab", 1)[1]
    doc = json.loads(progress("--json"))
    assert len(doc["attempts"]) == 60


def test_a_lab_kept_with_its_stamp_has_its_params_typed_without_the_check_catalogue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fresh = {x.id: x for x in loader.load_catalogue().labs}  # validated (or kept already): stamps written
    assert fresh["design-502"].checks[0].params["budget_kw_per_rack"] == 35.0  # an int in lab.yaml, a float param

    def no_catalogue(check_id: str, params: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError(f"the check catalogue was asked for {check_id}")

    monkeypatch.setattr(loader, "_typed", no_catalogue)
    kept = {x.id: x for x in loader.load_catalogue().labs}
    assert repr(kept) == repr(fresh)
    assert isinstance(kept["design-502"].checks[0].params["budget_kw_per_rack"], float)
