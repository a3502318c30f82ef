"""design.diagnosis: the ticket for a physical fault, graded on component, finding and action."""

from __future__ import annotations

from typing import Any

import pytest

from assessor.errors import InputError
from assessor.labs.design import GRADERS, load_answer, run_grader
from assessor.labs.design.diagnosis import component_key
from assessor.labs.loader import default_root, load_catalogue
from tests.labs.walks import DIAGNOSES, WRONG_DIAGNOSES

LABS = {lab.id: lab for lab in load_catalogue(default_root()).labs}


def grade(answer: Any, params: dict[str, Any]) -> Any:
    return run_grader(GRADERS["design.diagnosis"], answer, params)


@pytest.mark.parametrize("lab_id", sorted(DIAGNOSES))
def test_reference_diagnosis_of_each_physical_lab_passes(lab_id: str) -> None:
    answer = load_answer(LABS[lab_id].path / "diagnosis.yaml")
    result = grade(answer, DIAGNOSES[lab_id])
    assert result.status == "pass", result.message


@pytest.mark.parametrize(("lab_id", "rows"), [(lab, rows) for lab, walks in WRONG_DIAGNOSES.items() for rows in walks])
def test_wrong_diagnosis_does_not_pass(lab_id: str, rows: list[dict[str, str]]) -> None:
    result = grade({"diagnosis": {"findings": rows}}, DIAGNOSES[lab_id])
    assert result.status == "fail"


def test_swapped_repairs_name_the_wrong_field_without_the_right_value() -> None:
    rows = [
        {"component": "mlx5_2", "finding": "degraded-rate", "action": "replace-transceiver", "why": "slow"},
        {"component": "mlx5_6", "finding": "no-link", "action": "reseat-cable", "why": "down"},
    ]
    result = grade({"diagnosis": {"findings": rows}}, DIAGNOSES["ib-402"])
    assert result.message.startswith("2 of 2 findings wrong")
    assert "mlx5_2: the finding does not match" in result.message


def test_a_healthy_component_in_the_ticket_fails() -> None:
    rows = [
        {"component": "mlx5_2 port 1", "finding": "no-link", "action": "reseat-cable", "why": "Polling"},
        {"component": "mlx5_0", "finding": "no-link", "action": "reseat-cable", "why": "just in case"},
    ]
    result = grade({"diagnosis": {"findings": rows}}, DIAGNOSES["ib-201"])
    assert result.status == "fail"
    assert "mlx5_0 is healthy" in result.message


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
        grade(load_answer(path), DIAGNOSES["ib-201"])


def test_without_expected_params_the_grader_is_an_error_not_a_pass() -> None:
    rows = [{"component": "mlx5_2", "finding": "no-link", "action": "reseat-cable", "why": "x"}]
    assert grade({"diagnosis": {"findings": rows}}, {}).status == "error"
