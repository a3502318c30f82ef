"""design.diagnosis: the ticket for a physical fault, graded on component, finding and action."""

from __future__ import annotations

from typing import Any

import pytest

from assessor.errors import InputError
from assessor.labs.design import GRADERS, load_answer, run_grader
from assessor.labs.design.diagnosis import component_key
from assessor.labs.loader import default_root, load_catalogue, reference_answer
from assessor.labs.model import Lab
from assessor.yamlio import load
from tests.labs.walks import WALKS, Ticket

LABS = {lab.id: lab for lab in load_catalogue(default_root()).labs}
TICKET_LABS = sorted(lab_id for lab_id, lab in LABS.items() if lab.takes_answer and not lab.is_design)


def grade(answer: Any, params: dict[str, Any]) -> Any:
    return run_grader(GRADERS["design.diagnosis"], answer, params)


def params_of(lab: Lab) -> dict[str, Any]:
    """The params the lab grades its ticket with (its first variant)."""
    [check] = [c for c in lab.checks if c.id == "design.diagnosis"]
    return dict(check.params)


def test_the_labs_with_a_physical_remedy_grade_a_ticket() -> None:
    assert TICKET_LABS == [
        "health-304",
        "health-401",
        "health-403",
        "health-405",
        "health-406",
        "health-407",
        "ib-201",
        "ib-202",
        "ib-203",
        "ib-204",
        "ib-301",
        "ib-302",
        "ib-303",
        "ib-304",
        "ib-401",
        "ib-402",
        "ib-403",
        "ib-404",
    ]


@pytest.mark.parametrize("lab_id", TICKET_LABS)
def test_reference_ticket_of_each_physical_lab_passes(lab_id: str) -> None:
    lab = LABS[lab_id]
    result = grade(load(lab.path / "ticket.yaml", text=reference_answer(lab)), params_of(lab))
    assert result.status == "pass", result.message


@pytest.mark.parametrize("lab_id", TICKET_LABS)
def test_the_example_ticket_shows_the_format_and_does_not_pass(lab_id: str) -> None:
    lab = LABS[lab_id]
    assert lab.answer_example is not None
    result = grade(load_answer(lab.path / lab.answer_example), params_of(lab))
    assert result.status == "fail", result.message


def ticket_only(lab: Lab) -> bool:
    """Whether the ticket is all the lab grades besides its guards (a lab that also grades a fix on the node
    has wrong walks whose ticket is right and whose fix is missing)."""
    return all(c.id == "design.diagnosis" for c in lab.checks if not c.is_guard)


WRONG_TICKETS = [
    (lab_id, step)
    for lab_id in TICKET_LABS
    if ticket_only(LABS[lab_id])
    for walk in WALKS[lab_id]["wrong"] or []
    for step in walk
    if isinstance(step, Ticket) and walk == [step]  # walks that are a ticket alone
]


@pytest.mark.parametrize(
    ("lab_id", "ticket"), WRONG_TICKETS, ids=[f"{lab}-{i}" for i, (lab, _) in enumerate(WRONG_TICKETS)]
)
def test_wrong_ticket_does_not_pass(lab_id: str, ticket: Ticket) -> None:
    assert grade(ticket.as_answer(), params_of(LABS[lab_id])).status == "fail"


def test_swapped_faults_say_how_many_rows_are_right_not_which_field() -> None:
    rows = [
        {"component": "mlx5_2", "finding": "degraded-rate", "action": "reseat-cable", "why": "slow"},
        {"component": "mlx5_6", "finding": "no-link", "action": "reseat-cable", "why": "down"},
    ]
    result = grade({"diagnosis": {"findings": rows}}, params_of(LABS["ib-402"]))
    assert result.message == "0 of your 2 rows right (2 faulty components to diagnose)"


def test_a_healthy_component_in_the_ticket_fails() -> None:
    rows = [
        {"component": "mlx5_2 port 1", "finding": "no-link", "action": "reseat-cable", "why": "Polling"},
        {"component": "mlx5_0", "finding": "no-link", "action": "reseat-cable", "why": "just in case"},
    ]
    result = grade({"diagnosis": {"findings": rows}}, params_of(LABS["ib-201"]))
    assert result.status == "fail"
    assert "mlx5_0" not in result.message and "healthy" not in result.message  # which row is wrong is not said


@pytest.mark.parametrize(
    ("name", "key"),
    [("GPU 6", "gpu6"), ("gpu6", "gpu6"), ("GPU #06", "gpu6"), ("mlx5_2:1", "mlx5_2"), ("MLX5_2 port 1", "mlx5_2")],
)
def test_component_names_in_any_usual_spelling(name: str, key: str) -> None:
    assert component_key(name) == key


def test_unknown_action_is_an_input_error_with_its_line(tmp_path: Any) -> None:
    path = tmp_path / "answer.yaml"
    path.write_text("diagnosis:\n  findings:\n    - {component: mlx5_2, finding: no-link, action: pray, why: x}\n")
    with pytest.raises(InputError, match=r"answer.yaml:3.*unknown action 'pray'"):
        grade(load_answer(path), params_of(LABS["ib-201"]))


def test_without_expected_params_the_grader_is_an_error_not_a_pass() -> None:
    rows = [{"component": "mlx5_2", "finding": "no-link", "action": "reseat-cable", "why": "x"}]
    assert grade({"diagnosis": {"findings": rows}}, {}).status == "error"


def test_one_of_two_findings_right_passes_only_when_the_lab_relaxes_min_right() -> None:
    rows = [{"component": "mlx5_2", "finding": "no-link", "action": "reseat-cable", "why": "Polling"}]
    params = params_of(LABS["ib-402"])
    assert grade({"diagnosis": {"findings": rows}}, params).status == "fail"
    relaxed = grade({"diagnosis": {"findings": rows}}, {**params, "min_right": 1})
    assert relaxed.status == "pass"
    assert relaxed.message == "1 of 2 faulty components diagnosed, with the policy's actions (1 needed)"
    # a healthy component named fails even where one right finding would do
    rows.append({"component": "mlx5_0", "finding": "no-link", "action": "reseat-cable", "why": "unsure"})
    assert grade({"diagnosis": {"findings": rows}}, {**params, "min_right": 1}).status == "fail"


@pytest.mark.parametrize("name", ["the fabric", "fabric", "Subnet Manager", "SM", "the IB fabric", "UFM", "opensm"])
def test_the_fabric_in_any_usual_wording(name: str) -> None:
    assert component_key(name) == "fabric"


def test_feedback_never_names_a_faulty_component_the_ticket_left_out() -> None:
    params = params_of(LABS["ib-402"])  # mlx5_2 and mlx5_6 are faulty
    rows = [{"component": "mlx5_0", "finding": "no-link", "action": "reseat-cable", "why": "a guess"}]
    result = grade({"diagnosis": {"findings": rows}}, params)
    assert result.status == "fail"
    assert "mlx5_2" not in str(result.to_json()) and "mlx5_6" not in str(result.to_json())
    assert result.message == "0 of your 1 row right (2 faulty components to diagnose)"
    right = [{"component": "mlx5_2", "finding": "no-link", "action": "reseat-cable", "why": "Polling"}]
    one = grade({"diagnosis": {"findings": right}}, params_of(LABS["ib-201"]))
    assert one.message == "1 of 1 faulty component diagnosed, with the policy's actions"
    assert one.expected == "1 faulty component"
