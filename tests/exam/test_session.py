"""A whole practice exam on simulated nodes, in process: the draw, one fresh node per node task, grades that
say only "recorded", a submit that scores per exam domain against the pass mark with each task's debrief, and
the clock: grades after the deadline do not count, a late submit is marked late."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.labs import exam_run, exam_session, lifecycle
from assessor.labs.attempts import now
from assessor.labs.exam_draw import eligible
from assessor.labs.exam_score import result
from assessor.labs.exam_spec import load_exams
from assessor.labs.loader import load_catalogue
from tests.exam.scripted import check_words, solve

TASKS = 4


class Clock:
    """A clock the test moves: the sitting's times without waiting for them."""

    def __init__(self) -> None:
        self.t = now()

    def __call__(self) -> dt.datetime:
        return self.t

    def advance(self, minutes: float) -> None:
        self.t += dt.timedelta(minutes=minutes)


def roomiest_exam() -> str:
    """The exam the solvable labs train most distinct labs of (the draw can set TASKS of them)."""
    labs = load_catalogue().labs
    counts = {}
    for name, spec in load_exams().exams.items():
        found = eligible(name, list(spec.weights), labs)
        counts[name] = len({lab for ids in found.values() for lab in ids})
    best = max(counts, key=lambda e: counts[e])
    assert counts[best] >= TASKS, counts
    return best


def expected(session: exam_session.Session, scores: dict[int, float]) -> tuple[dict[str, float], float]:
    by_domain: dict[str, list[float]] = {}
    for t in session.tasks:
        by_domain.setdefault(t.domain, []).append(scores[t.n])
    overall = sum(scores.values()) / len(scores)
    return {d: round(sum(v) / len(v), 2) for d, v in by_domain.items()}, overall


def test_a_scripted_candidate_sits_a_whole_exam(solvable_labs: Path, exam_db: Path, tmp_path: Path) -> None:
    clock = Clock()
    exam = roomiest_exam()
    started = exam_run.start(exam, candidate="ada", minutes=30, tasks=TASKS, seed=4, clock=clock)
    s = started.session
    assert len(s.tasks) == TASKS and s.minutes == 30
    assert s.deadline_time() - s.started_time() == dt.timedelta(minutes=30)
    nodes = [t for t in s.tasks if t.kind == "node"]
    assert len({t.target for t in nodes}) == len(nodes)  # a fresh node per node task, in the session's folder
    for t in nodes:
        assert Path((t.target or "").removeprefix("mock:")).is_relative_to(s.folder / "nodes")

    last = s.tasks[-1]
    feedback: list[str] = []
    for t in s.tasks[:-1]:  # solved and graded in time
        answer = solve(t, tmp_path)
        clock.advance(3)
        done = exam_run.grade(str(t.n), candidate="ada", answer=answer, clock=clock)
        assert done.recorded and not done.after_deadline
        feedback.append(done.line())
    feedback += exam_run.status_lines(exam_run.status(candidate="ada", clock=clock))
    answer = solve(last, tmp_path)  # solved, but graded only once time is up: it does not count
    clock.advance(30)
    late = exam_run.grade(last.lab, candidate="ada", answer=answer, clock=clock)
    assert late.recorded and late.after_deadline and "does not count" in late.line()
    feedback.append(late.line())

    # nothing said before the submit tells how a grade went: no check id, no message, no score
    stored = exam_session.find(exam_session.exams_root(exam_db), "ada")
    messages = {c["message"] for t in stored.tasks for g in t.grades for c in g["grade"]["checks"] if c["message"]}
    text = "\n".join(feedback)
    for t in s.tasks:
        assert not {w for w in check_words(t) if w in text}, t.lab
    assert not {m for m in messages if m in text}
    assert "%" not in text  # no score either

    clock.advance(5)
    done = exam_run.submit(candidate="ada", clock=clock)
    r = done.session.result
    late_by = (clock.t - s.deadline_time()).total_seconds() / 60  # 3 x 3 + 30 + 5 minutes in, 30 allowed
    assert r is not None and r["late"] is True and r["late_by_min"] == pytest.approx(late_by, abs=0.1) and late_by > 10
    assert r["submitted_by"] == "candidate"
    scores = {t.n: 100.0 for t in s.tasks[:-1]} | {last.n: 0.0}
    domains, overall = expected(s, scores)
    assert {d["domain"]: d["score_percent"] for d in r["domains"] if d["tasks"]} == domains
    assert r["score_percent"] == pytest.approx(overall, abs=0.01)
    assert r["passed"] is (overall >= s.pass_percent)
    last_row = next(x for x in r["tasks"] if x["n"] == last.n)
    assert last_row["grades_after_deadline"] == 1 and "before the deadline" in last_row["why"]
    # the debrief of each task, now that it is over: every check in words, the reference beside
    for row in r["tasks"]:
        d = row["debrief"]
        assert [c["check"] for c in d["checks"]] == [c for c in _check_ids(row["lab"])]
        assert all(c["checks_what"] and c["why_it_matters"] for c in d["checks"])
    # what readiness for the exam reads of the sitting: each domain's score
    assert exam_session.domain_scores("ada", exam.lower()) == [domains]
    assert exam_session.domain_scores("ada", "NCP-AIN" if exam != "NCP-AIN" else "NCA-AIIO") == []
    # a second submit changes nothing; grading is over
    assert exam_run.submit(candidate="ada", clock=clock).already
    with pytest.raises(InputError, match="submitted"):
        exam_run.grade("1", candidate="ada", clock=clock)


def _check_ids(lab_id: str) -> list[str]:
    from assessor.labs.loader import find_lab

    return [c.id for c in find_lab(lab_id).checks]


def test_a_candidate_who_solves_one_task_fails_and_a_lab_solve_earns_nothing(
    solvable_labs: Path, exam_db: Path, tmp_path: Path
) -> None:
    clock = Clock()
    exam = roomiest_exam()
    s = exam_run.start(exam, candidate="bob", tasks=TASKS, seed=9, clock=clock).session
    assert s.minutes == load_exams().get(exam).minutes  # the real exam's duration by default
    second = next(t for t in s.tasks if t.kind == "node" and not _lab(t).takes_answer)  # all its points on the node
    first = next(t for t in s.tasks if t is not second)
    answer = solve(first, tmp_path)
    # `lab solve` on a task's node: the node is marked, so the grade is flagged and counts nothing
    lifecycle.solve(_lab(second), second.target)
    clock.advance(10)
    for t in s.tasks:
        if t is first or t.kind == "node":  # a design task is graded from an answer: bob hands in none
            exam_run.grade(str(t.n), candidate="bob", answer=answer if t is first else None, clock=clock)
    clock.advance(1)
    r = exam_run.submit(candidate="bob", clock=clock).session.result
    assert r is not None and r["late"] is False and r["time_used_min"] == pytest.approx(11, abs=0.1)
    rows = {x["n"]: x for x in r["tasks"]}
    assert rows[first.n]["score_percent"] == 100
    assert rows[second.n]["score_percent"] == 0 and "flagged" in rows[second.n]["why"]
    assert rows[second.n]["counted_grade"]["percent"] > 0  # the node was solved: the flag took it away
    domains, _ = expected(s, {t.n: 100.0 if t is first else 0.0 for t in s.tasks})
    assert {d["domain"]: d["score_percent"] for d in r["domains"] if d["tasks"]} == domains
    assert r["score_percent"] == pytest.approx(100 / TASKS) and r["passed"] is False


def _lab(task: exam_session.Task):  # type: ignore[no-untyped-def]
    from assessor.labs.loader import find_lab, with_variant

    return with_variant(find_lab(task.lab), task.variant)


def test_a_sitting_whose_time_is_up_is_submitted_by_the_clock_at_the_next_start(
    solvable_labs: Path, exam_db: Path
) -> None:
    clock = Clock()
    exam = roomiest_exam()
    first = exam_run.start(exam, candidate="cy", minutes=5, tasks=1, seed=1, clock=clock).session
    with pytest.raises(InputError, match="submit it first"):
        exam_run.start(exam, candidate="cy", tasks=1, seed=2, clock=clock)
    clock.advance(6)
    again = exam_run.start(exam, candidate="cy", tasks=1, seed=2, clock=clock)
    assert again.ended is not None and again.ended.id == first.id
    r = again.ended.result
    assert r is not None and r["submitted_by"] == "clock" and r["late"] is False and r["submitted_at"] == first.deadline
    assert exam_session.open_session(exam_session.exams_root(exam_db), "cy").id == again.session.id  # type: ignore[union-attr]


def test_the_score_rule_on_a_session_written_by_hand(tmp_path: Path) -> None:
    """exam_score alone: the last grade before the deadline counts; a broken guard or a flag earns nothing."""

    def grade(at: str, percent: float, **extra: object) -> dict[str, object]:
        return {"at": at, "percent": percent, "passed": percent >= 70, "flags": [], "guards_broken": [], **extra}

    tasks = [
        exam_session.Task(1, "a-1", "D1", "node", grades=[grade("t1", 40), grade("t2", 90)]),
        exam_session.Task(2, "a-2", "D1", "node", grades=[grade("t1", 100, guards_broken=["mig.mode"])]),
        exam_session.Task(3, "a-3", "D2", "node", grades=[grade("t1", 80), grade("t9", 100, after_deadline=True)]),
        exam_session.Task(4, "a-4", "D2", "design", grades=[grade("t1", 100, flags=["state file edited by hand"])]),
        exam_session.Task(5, "a-5", "D3", "node"),
    ]
    s = exam_session.Session(
        id="X",
        exam="E",
        title="E",
        candidate="c",
        seed=0,
        started_at="2026-01-01T10:00:00+00:00",
        minutes=60,
        deadline="2026-01-01T11:00:00+00:00",
        pass_percent=60,
        tasks=tasks,
        folder=tmp_path,
        plan={"not_examined": ["D4"]},
    )
    r = result(
        s,
        submitted_at="2026-01-01T10:30:00+00:00",
        submitted_by="candidate",
        weights={"D1": 50, "D2": 30, "D3": 10, "D4": 10},
        titles={},
        generated_at="now",
    )
    assert [t["score_percent"] for t in r["tasks"]] == [90, 0, 80, 0, 0]
    assert {d["domain"]: d["score_percent"] for d in r["domains"]} == {"D1": 45, "D2": 40, "D3": 0, "D4": None}
    assert r["score_percent"] == 34 and r["passed"] is False and r["late"] is False
    assert r["blueprint_covered_pct"] == 90 and r["time_used_min"] == 30
    assert "not examined" in r["domains"][3]["note"]
