"""A practice exam's result: each task's score, each exam domain's, the whole exam's, pass or not. Pure.

The rule (docs/EXAM.md):

- A task scores the percentage of its lab's points in its *counted* grade: the last grade recorded before the
  deadline. Grades taken after the deadline are kept and shown, never counted.
- A counted grade with a broken guard (the lab's rule: the lab is not passed) or a flag (the node's state file
  edited by hand, a reference solution applied, the lab changed during the sitting) scores 0.
- A task with no counted grade scores 0.
- An exam domain scores the mean of its tasks; the exam scores the mean of all its tasks (each task counts
  alike, as each question of a real exam does: the domains' weights decided how many tasks each has).
- The exam is passed when its score reaches the exam's pass mark.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assessor.labs.exam_session import Session, Task

RESULT_SCHEMA = "gpulab.exam-result/1"


@dataclass(frozen=True)
class TaskScore:
    n: int
    lab: str
    domain: str
    score: float  # 0-100
    counted: Mapping[str, Any] | None  # the grade record that counts
    why: str  # how the score came about, in words
    grades: int  # grades recorded
    after_deadline: int  # of which after the deadline (not counted)


def counted_grade(task: Task) -> Mapping[str, Any] | None:
    """The grade of ``task`` that counts: the last one recorded before the deadline."""
    in_time = [g for g in task.grades if not g.get("after_deadline")]
    return in_time[-1] if in_time else None


def score_task(task: Task) -> TaskScore:
    late = sum(1 for g in task.grades if g.get("after_deadline"))
    g = counted_grade(task)
    if g is None:
        why = (
            f"no grade recorded before the deadline ({late} after it, not counted)"
            if late
            else "no grade recorded: `gpulab exam grade` records one"
        )
        return TaskScore(task.n, task.lab, task.domain, 0.0, None, why, len(task.grades), late)
    percent = float(g.get("percent", 0.0))
    if g.get("flags"):
        why = "flagged, so it earns nothing: " + "; ".join(str(f) for f in g["flags"])
        score = 0.0
    elif g.get("guards_broken"):
        why = "a guard broke, so it earns nothing: " + ", ".join(str(x) for x in g["guards_broken"])
        score = 0.0
    else:
        score = percent
        why = f"{percent:g} % of the lab's points in the last grade before the deadline"
    return TaskScore(task.n, task.lab, task.domain, score, g, why, len(task.grades), late)


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def minutes_between(start: str, end: str) -> float:
    return (dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)).total_seconds() / 60.0


def result(
    session: Session,
    *,
    submitted_at: str,
    submitted_by: str,
    weights: Mapping[str, Any],
    titles: Mapping[str, str],
    generated_at: str,
    debriefs: Mapping[int, Mapping[str, Any]] | None = None,
    exam_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The result document (``gpulab.exam-result/1``) of ``session`` submitted at ``submitted_at`` by
    ``submitted_by`` (candidate | clock): ``weights`` are the exam's blueprint weights (domain -> percent),
    ``titles`` each lab's title, ``debriefs`` each task's debrief (by task number)."""
    scores = [score_task(t) for t in session.tasks]
    total = sum(float(w) for w in weights.values()) or 1.0
    examined = {t.domain for t in session.tasks}
    not_examined = set(session.plan.get("not_examined") or ())
    domains: list[dict[str, Any]] = []
    for name, weight in weights.items():
        mine = [s.score for s in scores if s.domain == name]
        if name in examined:
            note = f"{len(mine)} task{'s' if len(mine) != 1 else ''}"
        elif name in not_examined:
            note = "not examined: no lab of the catalogue trains it"
        else:
            note = "no task drawn for it in this sitting"
        domains.append(
            {
                "domain": name,
                "weight_pct": round(float(weight) * 100.0 / total, 2),
                "tasks": len(mine),
                "score_percent": _mean(mine),
                "note": note,
            }
        )
    overall = _mean([s.score for s in scores]) or 0.0
    exact = sum(s.score for s in scores) / len(scores) if scores else 0.0
    late_by = minutes_between(session.deadline, submitted_at)
    covered = sum(d["weight_pct"] for d in domains if d["domain"] not in not_examined)
    return {
        "schema": RESULT_SCHEMA,
        "generated_at": generated_at,
        "session": session.id,
        "exam": session.exam,
        "title": session.title,
        "candidate": session.candidate,
        "seed": session.seed,
        "format": (exam_info or {}).get("format"),
        "sources": list((exam_info or {}).get("sources") or ()),
        "started_at": session.started_at,
        "deadline": session.deadline,
        "minutes": session.minutes,
        "submitted_at": submitted_at,
        "submitted_by": submitted_by,
        "late": late_by > 0,
        "late_by_min": round(late_by, 1) if late_by > 0 else 0.0,
        "time_used_min": round(minutes_between(session.started_at, submitted_at), 1),
        "pass_percent": session.pass_percent,
        "pass_note": (exam_info or {}).get("pass_note", ""),
        "score_percent": overall,
        "passed": bool(scores) and exact >= session.pass_percent - 1e-9,
        "blueprint_covered_pct": round(covered, 2),
        "domains": domains,
        "tasks": [
            _task_json(s, t, titles, (debriefs or {}).get(t.n)) for s, t in zip(scores, session.tasks, strict=True)
        ],
    }


def _task_json(
    s: TaskScore, task: Task, titles: Mapping[str, str], debrief: Mapping[str, Any] | None
) -> dict[str, Any]:
    g = s.counted
    out: dict[str, Any] = {
        "n": s.n,
        "lab": s.lab,
        "title": titles.get(s.lab, s.lab),
        "kind": task.kind,
        "domain": s.domain,
        "target": task.target,
        "variant": task.variant,
        "score_percent": s.score,
        "why": s.why,
        "grades_recorded": s.grades,
        "grades_after_deadline": s.after_deadline,
        "counted_grade": None
        if g is None
        else {
            "graded_at": g.get("at"),
            "percent": g.get("percent"),
            "passed": g.get("passed"),
            "flags": list(g.get("flags") or ()),
        },
    }
    if debrief is not None:
        out["debrief"] = dict(debrief)
    return out
