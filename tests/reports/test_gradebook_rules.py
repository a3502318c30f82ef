"""One counting rule everywhere, a gradebook that keeps everything, summaries that say why.

Grades are made as `gpulab lab grade` makes them (the lab's checks scored by :func:`assessor.labs.grading.score`,
recorded or not by :func:`assessor.labs.attempts.record_grade` against the candidate's start) and kept by the
cohort's gradebook writer, without capturing a node: then `gpulab progress` (reading the attempts database) and
`gpulab report cohort` (reading the gradebook directory) must say the same for every candidate.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.checks.result import Result
from assessor.cli import main
from assessor.labs import attempts, cohort, grading
from assessor.labs.cohort import CohortHost, HostGrade
from tests.reports.builders import T0, grade_doc, lab, write_json

LAB = "health-101"
SOLVED = "reference solution applied on this node (`lab solve health-101` after the start)"
REFUSED = "ssh: connect to host 127.0.0.1 port 2299: Connection refused"


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def scored(lab_id: str, *, fail_tasks: bool = False, broken_guard: str | None = None, minutes: int = 10) -> Any:
    """A grade of ``lab_id`` as the checks would give it: tasks pass (or fail), guards hold (or one breaks)."""
    x = lab(lab_id)

    def evaluate(check_id: str, params: dict[str, Any]) -> Result:
        guard = any(c.id == check_id and c.is_guard for c in x.checks)
        if guard and broken_guard is not None:
            return Result(check_id, "fail", broken_guard)
        if not guard and fail_tasks:
            return Result(check_id, "fail", f"{check_id} is off")
        return Result(check_id, "pass", f"{check_id} is fine")

    return grading.score(x, evaluate, graded_at=T0 + dt.timedelta(minutes=minutes), started_at=None)


def graded(
    conn: Any, candidate: str, lab_id: str, *, start: bool = True, flags: tuple[str, ...] = (), **how: Any
) -> Any:
    """Grade ``candidate`` as `lab grade` records it: against their start on node-<candidate>, if they made one."""
    x = lab(lab_id)
    target, ident = f"mock:/nodes/{candidate}.json", attempts.Identity(host=f"node-{candidate}", serials=(candidate,))
    begun = None
    if start:
        begun = attempts.open_start(conn, candidate, lab_id) or attempts.record_start(
            conn, candidate=candidate, lab_id=lab_id, target=target, lab_hash=x.digest, started_at=T0, identity=ident
        )
    result = scored(lab_id, **how)
    result = replace(result, started_at=begun.started_at if begun else None)
    result.extras.update({"candidate": candidate, "target": target, "host": ident.host, "lab_sha256": x.digest})
    return attempts.record_grade(
        conn, result, lab=x, candidate=candidate, target=target, identity=ident, start=begun, flags=flags
    )


def host(candidate: str) -> CohortHost:
    return CohortHost(f"node-{candidate}", f"ssh://node-{candidate}", candidate, "inventory")


@pytest.fixture(scope="module")
def cohort_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two grade runs of health-101 into one gradebook and one attempts database:

    fay passes, but her node had the reference solution applied (flagged); una passes with no start (not
    recorded); reg passes, then a regrade fails (the pass is her best); gus scores 100 with a guard broken (not
    passed); urs's node was unreachable both times.
    """
    root = tmp_path_factory.mktemp("cohort")
    db, book = root / "attempts.db", root / "book"
    with attempts.opened(db) as conn:
        first = [
            HostGrade(host("fay"), "graded", graded(conn, "fay", LAB, flags=(SOLVED,))),
            HostGrade(host("una"), "graded", graded(conn, "una", LAB, start=False)),
            HostGrade(host("reg"), "graded", graded(conn, "reg", LAB)),
            HostGrade(host("gus"), "graded", graded(conn, "gus", LAB, broken_guard="\x1b[2Jnvidia-smi failed\x07")),
            HostGrade(host("urs"), "unreachable", None, REFUSED),
        ]
        cohort.write_gradebook(first, str(book), lab_id=LAB, at=T0 + dt.timedelta(minutes=10))
        second = [
            HostGrade(host("reg"), "graded", graded(conn, "reg", LAB, fail_tasks=True, minutes=30)),
            HostGrade(host("urs"), "unreachable", None, REFUSED),
        ]
        cohort.write_gradebook(second, str(book), lab_id=LAB, at=T0 + dt.timedelta(minutes=30))
    return {"db": db, "book": book, "first": first, "second": second}


def progress_of(db: Path, who: str) -> dict[str, Any]:
    code, out, err = gpulab("progress", "--candidate", who, "--db", str(db), "--json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_cohort_report_and_progress_agree_on_flagged_unrecorded_regraded_and_unreachable(
    cohort_run: dict[str, Any],
) -> None:
    code, out, err = gpulab("report", "cohort", str(cohort_run["book"]), "-f", "json")
    assert code == 0, err
    people = {p["candidate"]: p for p in json.loads(out)["candidates"]}
    assert set(people) == {"fay", "una", "reg", "gus", "urs"}  # the unreachable candidate has a row
    for who, person in people.items():
        progress = progress_of(cohort_run["db"], who)
        mine = progress["labs"].get(LAB, {"best_percent": None, "passed": False, "attempts": 0, "flagged": 0})
        cell = person["labs"][LAB]
        assert (cell["best"], cell["passed"], cell["attempts"], cell["flagged"]) == (
            mine["best_percent"],
            mine["passed"],
            mine["attempts"],
            mine["flagged"],
        ), who
        assert (LAB in progress["passed"]) == cell["passed"], who
        assert person["overall"] == progress["overall"]["level"], who
        assert person["levels"] == {d: v["level"] for d, v in progress["levels"].items()}, who
    # what each comes to, and why nothing counts where nothing does
    status = {who: (p["labs"][LAB]["status"], p["labs"][LAB]["why"]) for who, p in people.items()}
    assert status["fay"] == ("flagged", SOLVED)
    assert status["una"][0] == "not recorded" and "no open `gpulab lab start health-101` by una" in status["una"][1]
    assert status["reg"] == ("passed", None) and people["reg"]["labs"][LAB]["best"] == 100.0
    assert status["gus"] == ("not passed", None) and people["gus"]["labs"][LAB]["best"] == 100.0
    assert status["urs"] == ("unreachable", REFUSED)
    assert people["una"]["labs"][LAB]["not_recorded"] == 1 and people["una"]["labs"][LAB]["attempts"] == 0
    assert people["reg"]["labs"][LAB]["attempts"] == 2  # the regrade is kept beside the pass


def test_csv_markdown_and_html_count_what_progress_counts(cohort_run: dict[str, Any]) -> None:
    book = str(cohort_run["book"])
    code, out, _ = gpulab("report", "cohort", book, "-f", "csv")
    assert code == 0
    rows = {r["candidate"]: r for r in csv.DictReader(io.StringIO(out))}
    got = {who: (r[f"{LAB}_best_percent"], r[f"{LAB}_passed"], r["labs_passed"]) for who, r in rows.items()}
    assert got == {
        "fay": ("", "no", "0"),
        "una": ("", "no", "0"),
        "reg": ("100.0", "yes", "1"),
        "gus": ("100.0", "no", "0"),  # a broken guard: 100 points, not passed
        "urs": ("", "no", "0"),
    }
    assert rows["fay"][f"{LAB}_status"] == f"flagged: {SOLVED}" and SOLVED in rows["fay"][f"{LAB}_flags"]
    assert rows["una"][f"{LAB}_status"].startswith("not recorded: no open `gpulab lab start health-101` by una")
    assert rows["urs"][f"{LAB}_status"] == f"unreachable: {REFUSED}"

    code, md, _ = gpulab("report", "cohort", book, "-f", "md")
    assert code == 0
    line = {m.group(1): m.group(0) for m in re.finditer(r"^\| (\w+) \| \d \| ([^|]*) \|.*$", md, re.M)}
    assert "100" not in line["fay"] and "flagged" in line["fay"] and " F" in line["fay"]
    assert "not recorded" in line["una"] and "NR" in line["una"]
    assert "unreachable" in line["urs"] and "100 (2) P" in line["reg"]
    assert "### Not counted" in md and "Connection refused" in md

    code, html, _ = gpulab("report", "cohort", book, "-f", "html")
    assert code == 0
    cells = {
        m.group(1): m.group(2)
        for m in re.finditer(r'<td class="who">(\w+)</td>.*?(<td class="cell.*?</td>)', html, re.S)
    }
    assert cells["fay"].startswith('<td class="cell n"') and ">flagged" in cells["fay"] and "100" not in cells["fay"]
    assert ">not recorded" in cells["una"] and ">unreachable" in cells["urs"]
    assert cells["reg"].startswith('<td class="cell p"') and ">100<" in cells["reg"]
    assert cells["gus"].startswith('<td class="cell f"')  # 100, not passed
    assert "Not counted" in html


def test_the_gradebook_keeps_every_grade_of_every_lab(cohort_run: dict[str, Any], tmp_path: Path) -> None:
    book = cohort_run["book"]
    kept = sorted(str(p.relative_to(book)) for p in book.rglob("*.json"))
    assert [k for k in kept if "/reg/" in k] == [
        "health-101/reg/001-20261102T091000Z-node-reg.json",
        "health-101/reg/002-20261102T093000Z-node-reg.json",
    ]
    assert [k for k in kept if "/urs/" in k] == [
        "health-101/urs/001-20261102T091000Z-node-urs.unreachable.json",
        "health-101/urs/002-20261102T093000Z-node-urs.unreachable.json",
    ]
    # a second lab into the same directory, and the same lab again: nothing is replaced
    mine = tmp_path / "book"
    with attempts.opened(tmp_path / "a.db") as conn:
        cohort.write_gradebook([HostGrade(host("reg"), "graded", graded(conn, "reg", LAB))], str(mine), lab_id=LAB)
        other = HostGrade(host("reg"), "graded", graded(conn, "reg", "drv-101", fail_tasks=True))
        cohort.write_gradebook([other], str(mine), lab_id="drv-101")
        again = HostGrade(host("reg"), "graded", graded(conn, "reg", LAB, fail_tasks=True, minutes=40))
        cohort.write_gradebook([again], str(mine), lab_id=LAB)
    assert sorted(p.parent.name + "/" + p.name[:3] for p in mine.rglob("*.json")) == ["reg/001", "reg/001", "reg/002"]
    # a gradebook an older gpulab wrote (DIR/<host>.json) is read with the new one
    write_json(mine / "node-old.json", grade_doc("old", "drv-101"))
    code, out, _ = gpulab("report", "cohort", str(mine), "-f", "json")
    assert code == 0
    doc = json.loads(out)
    assert {c["lab"] for c in doc["labs"]} == {LAB, "drv-101"}
    people = {p["candidate"]: p["labs"] for p in doc["candidates"]}
    assert people["reg"][LAB]["best"] == 100.0 and people["reg"][LAB]["attempts"] == 2  # the better grade stays
    assert people["reg"]["drv-101"]["passed"] is False and people["old"]["drv-101"]["passed"] is True


def test_a_link_planted_in_the_gradebook_redirects_nothing(tmp_path: Path) -> None:
    book, elsewhere = tmp_path / "book", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (book / LAB).mkdir(parents=True)
    (book / LAB / "reg").symlink_to(elsewhere, target_is_directory=True)
    with attempts.opened(tmp_path / "a.db") as conn:
        cohort.write_gradebook([HostGrade(host("reg"), "graded", graded(conn, "reg", LAB))], str(book), lab_id=LAB)
    assert list(elsewhere.iterdir()) == []
    assert not (book / LAB / "reg").is_symlink() and len(list((book / LAB / "reg").iterdir())) == 1


def test_every_summary_line_says_recorded_flags_and_the_broken_guard(cohort_run: dict[str, Any]) -> None:
    lines = dict(zip(["fay", "una", "reg", "gus", "urs"], cohort.grade_summary(cohort_run["first"]), strict=True))
    assert lines["fay"] == f"node-fay (fay): 100/100 (100 %) PASSED, does not count; recorded; FLAG: {SOLVED}"
    assert lines["una"].startswith(
        "node-una (una): 100/100 (100 %) PASSED, does not count; NOT RECORDED: no open `gpulab lab start health-101`"
    )
    assert lines["reg"] == "node-reg (reg): 100/100 (100 %) PASSED; recorded"
    guard = next(c.id for c in lab(LAB).checks if c.is_guard)
    # the guard's message is the node's: shown, neutralised
    assert lines["gus"].startswith(
        f"node-gus (gus): 100/100 (100 %) NOT PASSED (guard broken: {guard}: \\e[2Jnvidia-smi failed\\x07"
    )
    assert lines["gus"].endswith("); recorded") and "\x1b" not in lines["gus"]
    assert lines["urs"] == f"node-urs (urs): unreachable: {REFUSED}"
    tally = cohort.grade_tally(cohort_run["first"])
    assert tally == "5 hosts: 3 passed, 1 not passed, 1 not graded; 2 do not count (not recorded or flagged)"


def test_a_single_grade_says_the_same_on_its_score_line(
    cohort_run: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from assessor.cli.labs import _print_grade

    by_who = {g.host.candidate: g.grade for g in cohort_run["first"] if g.grade is not None}
    for who in ("fay", "una", "gus"):
        _print_grade(lab(LAB), by_who[who])
    score = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Score ")]
    assert score[0] == (
        f"Score 100/100 (100 %): PASSED (70 % needed), does not count; recorded as an attempt (hints used: 0); "
        f"FLAG: {SOLVED}"
    )
    assert score[1].startswith("Score 100/100 (100 %): PASSED (70 % needed), does not count; NOT RECORDED: no open")
    assert score[2].startswith("Score 100/100 (100 %): NOT PASSED (70 % needed; guard broken: ")
    assert "nvidia-smi failed" in score[2] and "\x1b" not in score[2] and "\x07" not in score[2]


def test_the_ungraded_document_is_published_and_what_the_gradebook_writes(cohort_run: dict[str, Any]) -> None:
    import jsonschema

    from assessor.reports import documents

    code, out, _ = gpulab("schema", "ungraded")
    assert code == 0
    schema = json.loads(out)
    assert schema["properties"]["schema"]["const"] == documents.SCHEMA_IDS["ungraded"] == "gpulab.ungraded/1"
    for kept in cohort_run["book"].rglob("*.unreachable.json"):
        doc = json.loads(kept.read_text(encoding="utf-8"))
        jsonschema.validate(doc, schema)
        assert (doc["candidate"], doc["status"], doc["message"]) == ("urs", "unreachable", REFUSED)
