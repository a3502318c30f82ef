"""A scripted candidate: solves a task as the lab's reference solution does (the commands and files, run with
the simulated tools as a candidate types them, and the reference answer or ticket handed in), never through
`lab solve` (which marks the node, so its grades would be flagged)."""

from __future__ import annotations

from pathlib import Path

from assessor.labs.drivers.sim import solve_file
from assessor.labs.exam_session import Task
from assessor.labs.loader import find_lab, reference_answer, with_variant


def solve(task: Task, folder: Path) -> str | None:
    """Do task ``task`` as its reference solution does; the answer file to hand in with the grade, if any."""
    lab = with_variant(find_lab(task.lab), task.variant)
    answer = None
    if lab.solution_answer:
        path = folder / f"answer-{task.n}.yaml"
        path.write_text(reference_answer(lab), encoding="utf-8")
        answer = str(path)
    if not lab.is_design:
        solve_file(lab, Path((task.target or "").removeprefix("mock:")))
    return answer


def check_words(task: Task) -> set[str]:
    """What a grade of the task must not show before the submit: its checks' ids."""
    return {c.id for c in find_lab(task.lab).checks}
