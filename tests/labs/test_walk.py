"""The lab walk: every simulator lab, end to end through the framework's lifecycle on a state file.

For each lab, on a strict node (its daemons hold the GPUs, as ``gpulab sim init`` makes it):
doing nothing after ``start`` scores 0; the reference solution (with its reference ticket, where the remedy
is physical) scores 100 %; every valid alternative of :mod:`tests.labs.walks` passes and every wrong but
plausible fix does not; ``reset`` gives back the fixture. A guard (``role: guard``) carries no points, and a
failing guard fails the grade. Tickets are written to a file and read as ``lab grade --answer`` reads them.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from assessor.labs import capture as labcapture
from assessor.labs import grading, lifecycle
from assessor.labs.drivers import StepFailed
from assessor.labs.drivers.sim import run_line, write_files
from assessor.labs.grading import Grade
from assessor.labs.lifecycle import load_ticket
from assessor.labs.loader import default_root, load_catalogue, reference_answer
from assessor.labs.model import Lab
from assessor.sim import faults
from assessor.sim.config_root import populate, root_for_state
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import dumps, load_state, save_state
from tests.labs.walks import PARTIAL, WALKS, Ticket, Walk

ALL_SIM_LABS = [lab for lab in load_catalogue(default_root()).labs if not lab.is_design and "simulator" in lab.runs_on]
# Labs whose node runs real daemons (Slurm) are walked typed inside the running node: tests/labs/test_walk_slurm.py
SIM_LABS = [lab for lab in ALL_SIM_LABS if not lab.needs_running_node]
RUNNING_NODE_IDS = {lab.id for lab in ALL_SIM_LABS if lab.needs_running_node}
IDS = [lab.id for lab in SIM_LABS]


def grade(lab: Lab, spec: str, ticket: Path | None = None) -> Grade:
    answer = load_ticket(lab, str(ticket)) if ticket is not None else None
    facts = labcapture.capture_facts(lab, spec, timeout=60)
    now = dt.datetime.now(dt.UTC)
    return grading.grade_facts(lab, facts, graded_at=now, started_at=now, answer=answer)


def explain(g: Grade) -> str:
    return "; ".join(f"{s.check} {s.status} {s.earned:g}/{s.points:g}: {s.message}" for s in g.scores)


def passes(lab: Lab, g: Grade) -> bool:
    """The grade passes and every guard holds (the framework's rule; scores are in the lab's check order)."""
    guards_hold = all(s.credit >= 1 for c, s in zip(lab.checks, g.scores, strict=True) if c.role == "guard")
    return g.passed and guards_hold


def fresh_node(lab: Lab, tmp_path: Path) -> str:
    """`gpulab sim init --fixture F --state node.json`: the target spec of a node of the lab's fixture."""
    assert lab.fixture is not None
    path = tmp_path / "node.json"
    state = load_fixture(lab.fixture, host="lab-node", in_use=True)
    save_state(state, path)
    populate(root_for_state(path), state)
    return f"mock:{path}"


def started_node(lab: Lab, tmp_path: Path) -> str:
    """`gpulab sim init --fixture F --state node.json` then `gpulab lab start`; the target spec."""
    spec = fresh_node(lab, tmp_path)
    lifecycle.start(lab, spec)
    return spec


def act(walk: Walk, spec: str, *, must_work: bool) -> Path | None:
    """The candidate's steps: commands with the simulated tools, edits of node configuration files, and
    the ticket they hand in (written beside the node; its path is returned)."""
    import yaml

    path = Path(spec.removeprefix("mock:"))
    handed_in = None
    for step in walk:
        try:
            if isinstance(step, Ticket):
                handed_in = path.with_name("ticket.yaml")
                handed_in.write_text(yaml.safe_dump(step.as_answer(), sort_keys=False), encoding="utf-8")
            elif isinstance(step, dict):
                write_files(step, path)
            else:
                run_line(step, path)
        except StepFailed:
            if must_work:
                raise  # a valid approach whose step the node refuses is a broken lab or simulator
    return handed_in


def test_every_node_lab_is_walked() -> None:
    assert len(SIM_LABS) >= 20
    assert set(IDS) <= set(WALKS), f"labs without walks: {sorted(set(IDS) - set(WALKS))}"


@pytest.mark.parametrize("lab", SIM_LABS, ids=IDS)
def test_doing_nothing_after_start_scores_zero(lab: Lab, tmp_path: Path) -> None:
    spec = started_node(lab, tmp_path)
    idle = grade(lab, spec)
    assert idle.percent == 0.0, f"{lab.id} gives points for nothing: {explain(idle)}"
    assert not passes(lab, idle)
    graded = {c.id for c in lab.checks if not c.is_guard}  # a guard holds at the start, by design
    targeted = {faults.get(step.fault).check for step in lab.faults} & graded
    for check_id in targeted:
        scores = [s for s in idle.scores if s.check == check_id]
        assert any(s.credit < 1 for s in scores), f"{lab.id}: {check_id} does not fail at start: {explain(idle)}"


@pytest.mark.parametrize("lab", SIM_LABS, ids=IDS)
def test_reference_solution_scores_full_and_reset_restores(lab: Lab, tmp_path: Path) -> None:
    spec = started_node(lab, tmp_path)
    lifecycle.solve(lab, spec)
    reference = None
    if lab.takes_answer:
        reference = tmp_path / "reference-ticket.yaml"
        reference.write_text(reference_answer(lab), encoding="utf-8")
    solved = grade(lab, spec, reference)
    assert solved.percent == 100.0, f"{lab.id} after solve: {explain(solved)}"
    assert passes(lab, solved)

    lifecycle.reset(lab, spec)
    path = Path(spec.removeprefix("mock:"))
    assert lab.fixture is not None
    assert dumps(load_state(path)) == dumps(load_fixture(lab.fixture, host="lab-node", in_use=True))


def _walks(kind: str) -> list[tuple[Lab, Walk]]:
    return [(lab, walk) for lab in SIM_LABS for walk in (WALKS.get(lab.id, {}).get(kind) or [])]


ALTERNATIVES = _walks("alternatives")
WRONG = _walks("wrong")


@pytest.mark.parametrize(
    ("lab", "walk"), ALTERNATIVES, ids=[f"{lab.id}-{i}" for i, (lab, _) in enumerate(ALTERNATIVES)]
)
def test_valid_alternative_passes(lab: Lab, walk: Walk, tmp_path: Path) -> None:
    spec = started_node(lab, tmp_path)
    g = grade(lab, spec, act(walk, spec, must_work=True))
    assert passes(lab, g), f"{lab.id} valid alternative {walk} fails: {explain(g)}"


@pytest.mark.parametrize(("lab", "walk"), WRONG, ids=[f"{lab.id}-{i}" for i, (lab, _) in enumerate(WRONG)])
def test_wrong_fix_does_not_pass(lab: Lab, walk: Walk, tmp_path: Path) -> None:
    spec = started_node(lab, tmp_path)
    g = grade(lab, spec, act(walk, spec, must_work=False))
    assert not passes(lab, g), f"{lab.id} wrong fix {walk} passes: {explain(g)}"


def test_every_lab_has_a_wrong_fix_and_a_valid_alternative_walked() -> None:
    assert {lab.id for lab, _ in WRONG} == set(IDS)
    assert {lab.id for lab, _ in ALTERNATIVES} == set(IDS)


PARTLY = [(lab, *PARTIAL[lab.id]) for lab in SIM_LABS if lab.id in PARTIAL]


@pytest.mark.parametrize(("lab", "walk", "percent"), PARTLY, ids=[lab.id for lab, _, _ in PARTLY])
def test_a_partly_done_task_keeps_partial_credit(lab: Lab, walk: Walk, percent: float, tmp_path: Path) -> None:
    spec = started_node(lab, tmp_path)
    g = grade(lab, spec, act(walk, spec, must_work=True))
    assert g.percent == percent, explain(g)
    assert not passes(lab, g)
