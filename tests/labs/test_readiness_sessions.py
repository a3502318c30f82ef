"""Exam sittings count in readiness: `gpulab progress --exam` and `gpulab report candidate --exam` read the
candidate's submitted sittings of that exam (kept beside the attempts database) and show the same readiness,
each scored domain with the sitting's score beside what the labs give.

A scripted candidate (tests/exam/scripted.py) passes two labs, then sits a short NCP-AII practice exam on
simulated nodes in process and solves only its first task; both commands run through the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import attempts, exam_run, exam_session, levels
from assessor.labs.loader import load_catalogue
from assessor.labs.readiness import readiness
from tests.exam.scripted import solve
from tests.exam.test_session import Clock
from tests.reports.builders import add
from tests.support.solvable_labs import solvable_labs

EXAM = "NCP-AII"
PASSED = ("drv-101", "health-101")  # lab passes recorded before the sitting


def gpulab(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture
def db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """GPULAB_LABS at a copy of the labs a scripted candidate solves, GPULAB_DB in tmp_path with ada's passes."""
    solvable_labs(monkeypatch, tmp_path)
    path = tmp_path / "attempts.db"
    monkeypatch.setenv("GPULAB_DB", str(path))
    with attempts.opened(path) as conn:
        for lab_id in PASSED:
            add(conn, "ada", lab_id)
    return path


def progress_json(db: Path, exam: str = EXAM) -> dict:
    code, out = gpulab("progress", "--candidate", "ada", "--db", str(db), "--exam", exam, "--json")
    assert code == 0, out
    return json.loads(out)


def report_json(db: Path, exam: str = EXAM) -> dict:
    code, out = gpulab("report", "candidate", "--candidate", "ada", "--db", str(db), "--exam", exam, "-f", "json")
    assert code == 0, out
    return json.loads(out)


def sit(db: Path, tmp_path: Path) -> dict[str, float]:
    """Ada sits a 3-task sitting and solves only task 1; its submitted score per domain that had a task."""
    clock = Clock()
    s = exam_run.start(EXAM, candidate="ada", db=str(db), minutes=60, tasks=3, seed=7, clock=clock).session
    first = s.tasks[0]
    answer = solve(first, tmp_path)
    clock.advance(5)
    assert exam_run.grade(str(first.n), candidate="ada", db=str(db), answer=answer, clock=clock).recorded
    # before the submit the sitting tells nothing, readiness included
    assert progress_json(db)["readiness"]["sessions"] == 0
    clock.advance(5)
    result = exam_run.submit(candidate="ada", db=str(db), clock=clock).session.result
    assert result is not None
    scored = {d["domain"]: d["score_percent"] for d in result["domains"] if d["score_percent"] is not None}
    assert scored[first.domain] > 0  # the solved task shows
    return scored


def test_a_submitted_sitting_counts_in_progress_and_the_candidate_report_alike(db: Path, tmp_path: Path) -> None:
    before = progress_json(db)["readiness"]
    scored = sit(db, tmp_path)

    progress, report = progress_json(db), report_json(db)
    assert progress["readiness"] == report["readiness"]
    assert progress["study_plan"] == report["study_plan"]
    r = progress["readiness"]
    assert r["sessions"] == 1
    # each domain the sitting scored carries its score, and the readiness is the mean with the labs' figure
    domains = {d["domain"]: d for d in r["domains"]}
    for name, d in domains.items():
        if name in scored:
            assert d["session_pct"] == pytest.approx(scored[name], abs=0.05)
            labs = d["from_labs_pct"]
            want = scored[name] if labs is None else (labs + scored[name]) / 2
            assert d["readiness_pct"] == pytest.approx(want, abs=0.1)
            assert "latest exam session" in d["explanation"]
        else:
            assert d["session_pct"] is None
            assert d == next(x for x in before["domains"] if x["domain"] == name)  # untouched by the sitting
    # the whole readiness is the rule's, given the labs passed and the sitting's scores
    cat = load_catalogue()
    rules = levels.load_rules(cat.root)
    expected = readiness(EXAM, rules.blueprints, cat.labs, set(PASSED), sessions=[scored])
    assert r["readiness_pct"] == round(float(expected.overall) * 100, 1)
    assert r["readiness_pct"] != before["readiness_pct"]  # the sitting moved it

    # the terminal says so too
    code, out = gpulab("progress", "--candidate", "ada", "--db", str(db), "--exam", EXAM)
    flat = " ".join(out.split())
    assert code == 0 and "1 exam session(s)" in flat and "latest exam session" in flat, out
    code, md = gpulab("report", "candidate", "--candidate", "ada", "--db", str(db), "--exam", EXAM, "-f", "md")
    assert code == 0 and "latest exam session" in md, md

    # a sitting of one exam says nothing of another
    assert progress_json(db, "NCA-AIIO")["readiness"]["sessions"] == 0
    assert report_json(db, "NCA-AIIO")["readiness"]["sessions"] == 0

    # a sitting edited by hand is refused by both, naming its file, rather than counted
    path = exam_session.find(exam_session.exams_root(db), "ada").path
    data = json.loads(path.read_text(encoding="utf-8"))
    data["result"]["domains"][0]["score_percent"] = 100.0
    path.write_text(json.dumps(data), encoding="utf-8")
    for args in (
        ("progress", "--candidate", "ada", "--db", str(db), "--exam", EXAM),
        ("report", "candidate", "--candidate", "ada", "--db", str(db), "--exam", EXAM),
    ):
        code, out = gpulab(*args)
        assert code == 2 and "edited by hand" in out and "session.json" in out, out
    code, out = gpulab("progress", "--candidate", "ada", "--db", str(db))  # no exam asked: no sitting read
    assert code == 0, out
