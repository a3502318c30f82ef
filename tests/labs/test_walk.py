"""The lab walk: every simulator lab, end to end through the framework's lifecycle on a state file.

For each lab: `sim init` a node from the lab's fixture; `start` must leave the lab not passed, with the
checks its scenario targets failing; `solve` must score 100 %; `reset` must give back the fixture exactly.
This is the acceptance test of the catalogue: a lab that a candidate cannot fail, or cannot fix, fails here.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from assessor.labs import capture as labcapture
from assessor.labs import grading, lifecycle
from assessor.labs.grading import Grade
from assessor.labs.loader import default_root, load_catalogue
from assessor.labs.model import Lab
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import dumps, load_state, save_state

SIM_LABS = [lab for lab in load_catalogue(default_root()).labs if not lab.is_design and "simulator" in lab.runs_on]


def grade(lab: Lab, spec: str) -> Grade:
    facts = labcapture.capture_facts(lab, spec, timeout=60)
    now = dt.datetime.now(dt.UTC)
    return grading.grade_facts(lab, facts, graded_at=now, started_at=now)


def explain(g: Grade) -> str:
    return "; ".join(f"{s.check} {s.status} {s.earned:g}/{s.points:g}: {s.message}" for s in g.scores)


def test_every_node_lab_is_walked() -> None:
    assert len(SIM_LABS) >= 20


@pytest.mark.parametrize("lab", SIM_LABS, ids=[lab.id for lab in SIM_LABS])
def test_start_fails_solve_passes_reset_restores(lab: Lab, tmp_path: Path) -> None:
    assert lab.fixture is not None
    path = tmp_path / "node.json"
    save_state(load_fixture(lab.fixture, host="lab-node"), path)  # gpulab sim init --fixture X --state node.json
    spec = f"mock:{path}"

    lifecycle.start(lab, spec)
    started = grade(lab, spec)
    assert not started.passed, f"{lab.id} passes at start: {explain(started)}"
    assert any(s.credit < 1 for s in started.scores)
    graded = {c.id for c in lab.checks}
    targeted = {faults.get(step.fault).check for step in lab.faults} & graded
    for check_id in targeted:
        scores = [s for s in started.scores if s.check == check_id]
        assert any(s.credit < 1 for s in scores), f"{lab.id}: {check_id} does not fail at start: {explain(started)}"

    lifecycle.solve(lab, spec)
    solved = grade(lab, spec)
    assert solved.percent == 100.0, f"{lab.id} after solve: {explain(solved)}"
    assert solved.passed

    lifecycle.reset(lab, spec)
    assert dumps(load_state(path)) == dumps(load_fixture(lab.fixture, host="lab-node"))
