"""design.power: rack density within a power budget, IT load, cooling and facility power."""

from __future__ import annotations

from typing import Any

import pytest

from assessor.labs.design import GRADERS, run_grader
from assessor.labs.design.power import compute

# design-502's inputs: 192 DGX H100 at 10.2 kW, 35 kW racks, 80 switches at 1.7 kW, PUE 1.3.
LAB = {"nodes": 192, "node_kw": 10.2, "budget_kw_per_rack": 35, "switches": 80, "switch_kw": 1.7, "pue": 1.3}


def reference(**changes: Any) -> dict[str, Any]:
    section = {
        "nodes_per_rack": 3,
        "compute_racks": 64,
        "rack_kw": 30.6,
        "total_it_kw": 2094.4,
        "cooling_kw": 2094.4,
        "facility_kw": 2722.72,
    }
    section.update(changes)
    return {"power": section}


def test_35_kw_racks_take_three_dgx_h100_by_hand() -> None:
    # 4 x 10.2 = 40.8 kW > 35, 3 x 10.2 = 30.6 kW fits -> 3 per rack, 192 / 3 = 64 racks.
    # IT load 192 x 10.2 + 80 x 1.7 = 1,958.4 + 136 = 2,094.4 kW; cooling the same; x 1.3 = 2,722.72 kW.
    plan = compute(192, 35, 10.2, switches=80, switch_kw=1.7, pue=1.3)
    assert (plan.nodes_per_rack, plan.compute_racks) == (3, 64)
    assert plan.rack_kw == pytest.approx(30.6)
    assert plan.total_it_kw == pytest.approx(2094.4)
    assert plan.cooling_kw == pytest.approx(plan.total_it_kw)
    assert plan.facility_kw == pytest.approx(2722.72)


def test_superpod_density_fits_a_40_8_kw_rack_exactly() -> None:
    # The SuperPOD design's four DGX H100 per rack: 40.8 kW on a 40.8 kW budget must fit despite float rounding.
    assert compute(128, 40.8).nodes_per_rack == 4


def test_space_limit_caps_density_and_partial_last_rack() -> None:
    plan = compute(10, 100, 10.2, max_nodes_per_rack=4)
    assert (plan.nodes_per_rack, plan.compute_racks) == (4, 3)  # 4 + 4 + 2


def test_a_budget_below_one_node_is_impossible() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        compute(8, 8.0, 10.2)


def test_grader_passes_the_reference_and_tolerates_rounding() -> None:
    assert run_grader(GRADERS["design.power"], reference(), LAB).status == "pass"
    # Within 1 %: 2,094 kW for 2,094.4 is a fair rounding.
    rounded = reference(total_it_kw=2094, cooling_kw=2094, facility_kw=2722)
    assert run_grader(GRADERS["design.power"], rounded, LAB).status == "pass"


def test_grader_fails_a_rack_over_budget() -> None:
    # The SuperPOD's 4-per-rack copied into a 35 kW hall.
    dense = reference(nodes_per_rack=4, compute_racks=48, rack_kw=40.8)
    result = run_grader(GRADERS["design.power"], dense, LAB)
    assert result.status == "fail"
    assert "exceeds the 35 kW budget" in result.message


def test_grader_fails_cooling_below_the_heat_load() -> None:
    # Cooling sized for the nodes only forgets the switches' 136 kW.
    result = run_grader(GRADERS["design.power"], reference(cooling_kw=1958.4), LAB)
    assert result.status == "fail"
    assert "cooling_kw 1958.4 is less than the IT load it must remove" in result.message
    assert "2094.4" not in result.message and "2094.4" not in (result.hint or "")  # the right value stays unsaid


def test_grader_needs_facility_kw_when_the_lab_gives_a_pue() -> None:
    answer = reference()
    del answer["power"]["facility_kw"]
    result = run_grader(GRADERS["design.power"], answer, LAB)
    assert result.status == "fail"
    assert "facility_kw" in result.message
    without_pue = {k: v for k, v in LAB.items() if k != "pue"}
    assert run_grader(GRADERS["design.power"], answer, without_pue).status == "pass"


def test_grader_parts() -> None:
    racks_wrong = reference(compute_racks=63)
    racks = run_grader(GRADERS["design.power"], racks_wrong, {**LAB, "parts": ["compute_racks"]})
    heat = run_grader(GRADERS["design.power"], racks_wrong, {**LAB, "parts": ["total_it_kw", "cooling_kw"]})
    assert (racks.status, heat.status) == ("fail", "pass")


def test_grader_without_required_params_is_an_error() -> None:
    result = run_grader(GRADERS["design.power"], reference(), {"nodes": 192})
    assert result.status == "error"
    assert "budget_kw_per_rack" in result.message


def test_numbers_in_any_yaml_spelling_are_numbers(tmp_path) -> None:
    from assessor.labs.designs import load_answer

    path = tmp_path / "answer.yaml"
    path.write_text(
        "power:\n  nodes_per_rack: 3.0\n  compute_racks: 6.4e1\n  rack_kw: 30.6\n"
        "  total_it_kw: 2.0944e3\n  cooling_kw: 2.0944E+3\n  facility_kw: 2_722.72\n",
        encoding="utf-8",
    )
    answer = load_answer(path, ["design.power"])
    result = run_grader(GRADERS["design.power"], answer, LAB)
    assert result.status == "pass", result.message


def test_a_wrong_field_is_named_with_its_rule_and_never_its_right_value() -> None:
    result = run_grader(GRADERS["design.power"], reference(nodes_per_rack=4, compute_racks=48), LAB)
    assert result.message.startswith("1 of 6 answers wrong: nodes_per_rack = 4 is wrong (rule: ")
    # 48 racks follow from the candidate's own 4 per rack: carried error, not counted wrong again
    assert "compute_racks follows correctly from your nodes_per_rack (4)" in result.message
    assert "= 3 " not in result.message and "64" not in result.message
    assert "64" not in str(result.expected) and "64" not in (result.hint or "")


def test_a_part_that_passes_counts_its_answers_and_gives_no_other_part_away() -> None:
    wrong_racks = reference(compute_racks=48)
    result = run_grader(GRADERS["design.power"], wrong_racks, {**LAB, "parts": ["total_it_kw", "cooling_kw"]})
    assert result.status == "pass"
    assert result.message == "2 of 2 answers right (cooling_kw, total_it_kw)"  # not "... in 64 racks ..."
