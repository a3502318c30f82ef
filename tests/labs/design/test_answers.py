"""Answer files: loading, validation errors that name file, line and key, and the grader registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assessor.checks import params as param_types
from assessor.errors import InputError
from assessor.labs.design import GRADERS, load_answer, run_grader, validate_answer

GOOD = """\
fat_tree:
  tiers: 2
  nodes: 128
  scalable_units: 4
  leaf_ports: {down: 32, up: 32}
  switches: {leaf: 32, spine: 16, core: 0}
  cables: {gpu_leaf: 1024, leaf_spine: 1024, spine_core: 0}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "answer.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_registry_holds_the_three_graders_with_typed_params() -> None:
    assert {"design.fat_tree", "design.power", "design.staffing"} <= set(GRADERS)
    for spec in GRADERS.values():
        assert spec.id.startswith("design.") and spec.doc and spec.answer_format.startswith(spec.section)
        assert spec.param("reveal") is not None


def test_params_are_coerced_like_check_params() -> None:
    spec: Any = GRADERS["design.power"]  # coerce is typed for CheckSpec; a GraderSpec has the same shape
    assert param_types.coerce(spec, "budget_kw_per_rack", 35) == 35.0
    with pytest.raises(InputError, match="no parameter 'budget'"):
        param_types.coerce(spec, "budget", 35)


def test_good_answer_loads_and_grades(tmp_path: Path) -> None:
    located = load_answer(write(tmp_path, GOOD))
    validate_answer(located, ["design.fat_tree"])
    assert run_grader(GRADERS["design.fat_tree"], located, {"gpus": 1024}).status == "pass"


def test_text_where_a_count_belongs_names_file_line_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("spine: 16", "spine: sixteen"))
    with pytest.raises(InputError) as err:
        run_grader(GRADERS["design.fat_tree"], load_answer(path), {"gpus": 1024})
    message = str(err.value)
    assert f"{path}:6:" in message
    assert "fat_tree.switches.spine" in message and "whole number" in message


def test_a_misspelt_key_is_refused_not_ignored(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("leaf: 32,", "leafs: 32,"))
    with pytest.raises(InputError, match=r":6: unknown key 'leafs'.*fat_tree\.switches\.leafs"):
        validate_answer(load_answer(path), ["design.fat_tree"])


def test_a_missing_key_names_its_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("  scalable_units: 4\n", ""))
    with pytest.raises(InputError, match="missing key 'scalable_units'"):
        validate_answer(load_answer(path), ["design.fat_tree"])


def test_a_missing_section_says_what_the_file_has(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    with pytest.raises(InputError, match=r"no power: section .*fat_tree"):
        validate_answer(load_answer(path), ["design.power"])


def test_negative_count_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("core: 0", "core: -1"))
    with pytest.raises(InputError, match=r"fat_tree\.switches\.core"):
        validate_answer(load_answer(path), ["design.fat_tree"])


def test_unknown_role_in_a_list_row_names_its_index(tmp_path: Path) -> None:
    text = """\
staffing:
  size: small
  team:
    - {role: infrastructure_lead, count: 1, level: 4, salary_k: 200}
    - {role: devops_ninja, count: 1, level: 3, salary_k: 150}
  yearly_cost_k: 350
"""
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=r":5: unknown role 'devops_ninja'.*staffing\.team\[1\]\.role"):
        validate_answer(load_answer(path), ["design.staffing"])


def test_level_out_of_range(tmp_path: Path) -> None:
    text = "staffing:\n  size: small\n  team:\n    - {role: network_specialist, count: 1, level: 6, salary_k: 1}\n"
    text += "  yearly_cost_k: 1\n"
    with pytest.raises(InputError, match="level must be 1-5"):
        validate_answer(load_answer(write(tmp_path, text)), ["design.staffing"])


@pytest.mark.parametrize("text", ["", "- just\n- a list\n", "fat_tree: [\n"])
def test_not_an_answer_file(tmp_path: Path, text: str) -> None:
    with pytest.raises(InputError, match=str(tmp_path)):
        load_answer(write(tmp_path, text))


def test_plain_dict_answers_are_validated_too() -> None:
    with pytest.raises(InputError, match=r"fat_tree\.tiers"):
        run_grader(GRADERS["design.fat_tree"], {"fat_tree": {"tiers": "two"}}, {"gpus": 1024})
