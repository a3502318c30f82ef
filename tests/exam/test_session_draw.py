"""A sitting sets exactly the tasks the blueprint's draw gives for its seed: the link between `exam start` and
the draw that tests/exam/test_draw.py holds to labs/blueprints.yaml over many seeds."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from assessor.labs import exam_run
from assessor.labs.exam_draw import draw
from assessor.labs.exam_spec import load_exams
from assessor.labs.loader import load_catalogue


def test_a_sitting_sets_the_tasks_the_draw_gives_for_its_seed(solvable_labs: Path, exam_db: Path) -> None:
    spec = load_exams().get("NCP-AII")
    labs = [x for x in load_catalogue().labs if x.is_design or "simulator" in x.runs_on]
    t0 = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
    s = exam_run.start("NCP-AII", candidate="ada", tasks=3, seed=3, minutes=60, clock=lambda: t0).session
    plan = draw(spec.name, spec.weights, labs, 3, 3)
    assert [(t.lab, t.domain) for t in s.tasks] == [(d.lab, d.domain) for d in plan.tasks]
    assert s.plan["shares"] == plan.shares and s.seed == 3
    assert draw(spec.name, spec.weights, labs, 3, 4).tasks != plan.tasks  # the seed decides: a check that can fail
