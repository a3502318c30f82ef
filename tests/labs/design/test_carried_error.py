"""Design grades that do not mislead: the carried-error rule (an answer that follows correctly from the
candidate's own wrong answer, in the same graded part, is right; the wrong one is named once), a staffing part
that says only what it graded (never "3430k a year within 3500-4500k"), and the design labs' own grades."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
import yaml

from assessor.labs import grading
from assessor.labs.design import GRADERS, run_grader
from assessor.labs.design.power import compute
from assessor.labs.loader import default_root, load_catalogue
from tests.labs.design.test_fat_tree import answer_for
from tests.labs.design.test_staffing import LARGE_TEAM, staffing

# design-502's inputs
LAB = {"nodes": 192, "node_kw": 10.2, "budget_kw_per_rack": 35, "switches": 80, "switch_kw": 1.7, "pue": 1.3}
PLAN = compute(192, 35, 10.2, switches=80, switch_kw=1.7, pue=1.3)


def power(**changes: Any) -> dict[str, Any]:
    return {"power": {**PLAN.answer(), **changes}}


def heat(answer: dict[str, Any], **params: Any) -> Any:
    return run_grader(
        GRADERS["design.power"], answer, {**LAB, "parts": ["total_it_kw", "cooling_kw", "facility_kw"], **params}
    )


def test_cooling_and_facility_that_follow_from_a_wrong_it_load_are_not_wrong_again() -> None:
    # the switches forgotten: 192 x 10.2 = 1,958.4 kW; cooling and facility computed correctly from it
    it = 1958.4  # 192 x 10.2
    result = heat(power(total_it_kw=it, cooling_kw=it, facility_kw=round(it * 1.3, 2)))
    assert result.status == "fail"
    assert result.message.startswith("1 of 3 answers wrong: total_it_kw = 1958.4 is wrong (rule: ")
    assert "cooling_kw and facility_kw follow correctly from your total_it_kw (1958.4)" in result.message
    assert "cooling_kw =" not in result.message and "facility_kw =" not in result.message
    assert "less than the IT load" not in result.message  # the candidate's own load is cooled
    assert str(PLAN.total_it_kw) not in result.message  # the right value stays unsaid
    assert "from your total_it_kw (1958.4)" in result.expected["cooling_kw"]


def test_a_value_that_follows_from_nothing_the_candidate_wrote_is_still_wrong() -> None:
    it = 1958.4  # 192 x 10.2
    # facility at the wrong PUE (1.5) from the candidate's own IT load: wrong by both readings
    result = heat(power(total_it_kw=it, cooling_kw=it, facility_kw=round(it * 1.5, 2)))
    assert result.message.startswith("2 of 3 answers wrong: total_it_kw = ")
    assert "facility_kw = 2937.6 is wrong" in result.message
    assert "cooling_kw follows correctly from your total_it_kw" in result.message
    # cooling below the real load, not following the candidate's own IT load either: both messages
    low = heat(power(cooling_kw=1958.4))
    assert "cooling_kw = 1958.4 is wrong" in low.message and "less than the IT load it must remove" in low.message


def test_no_carried_credit_across_parts() -> None:
    # a part that grades cooling and facility alone is graded against the lab's cluster
    it = 1958.4  # 192 x 10.2
    alone = heat(
        power(total_it_kw=it, cooling_kw=it, facility_kw=round(it * 1.3, 2)), parts=["cooling_kw", "facility_kw"]
    )
    assert alone.status == "fail" and "2 of 2 answers wrong" in alone.message


def test_racks_that_follow_from_a_wrong_density_are_named_once_and_a_rack_over_budget_still_fails() -> None:
    racks = ["nodes_per_rack", "compute_racks", "rack_kw"]
    dense = run_grader(
        GRADERS["design.power"], power(nodes_per_rack=4, compute_racks=48, rack_kw=40.8), {**LAB, "parts": racks}
    )
    assert dense.status == "fail"
    assert dense.message.startswith("1 of 3 answers wrong: nodes_per_rack = 4 is wrong")
    assert "compute_racks and rack_kw follow correctly from your nodes_per_rack (4)" in dense.message
    assert "a 40.8 kW rack exceeds the 35 kW budget" in dense.message


def test_fat_tree_counts_that_follow_within_a_part() -> None:
    gpus = 1536  # design-501: 192 nodes, 6 SUs, 48 leaves, 32 spines
    params = {"gpus": gpus, "radix": 64}
    first = run_grader(
        GRADERS["design.fat_tree"],
        answer_for(gpus, nodes=128, scalable_units=4),
        {**params, "parts": ["tiers", "nodes", "scalable_units", "leaf_ports"]},
    )
    assert first.message.startswith("1 of 5 answers wrong: nodes = 128 is wrong")
    assert "scalable_units follows correctly from your nodes (128)" in first.message
    switches = run_grader(
        GRADERS["design.fat_tree"],
        answer_for(gpus, switches__leaf=32, switches__spine=16, switches__core=0),
        {**params, "parts": ["switches"]},
    )
    assert switches.message.startswith("1 of 3 answers wrong: switches.leaf = 32 is wrong")
    assert "switches.spine follows correctly from your switches.leaf (32)" in switches.message


def test_a_consistent_design_for_another_cluster_earns_nothing() -> None:
    """The example files hold right numbers for another cluster: copied as they are, they score 0."""
    now = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    for lab in load_catalogue(default_root()).labs:
        if not lab.is_design or lab.answer_example is None:
            continue
        example = yaml.safe_load((lab.path / lab.answer_example).read_text(encoding="utf-8"))
        g = grading.grade_answer(lab, example, graded_at=now, started_at=now)
        assert not g.passed, f"{lab.id}: its example answer passes"
        if lab.id != "design-503":  # a small team's salaries are in their bands: that part is right
            assert g.percent == 0, f"{lab.id}: the example earns {g.percent} %"


# ---- design.staffing: a part says only what it graded ------------------------------------------------------


def cheap_large_team() -> list[dict[str, Any]]:
    """Every role covered, every salary in band, the rows adding up to 3,430k: below the large band."""
    team = [dict(r) for r in LARGE_TEAM]
    team[2]["salary_k"] = 95  # 4 operations engineers at L2 paid 95 instead of 110 (-60)
    team[3]["salary_k"] = 125  # 4 at L3 paid 125 instead of 140 (-60)
    team[4]["salary_k"] = 125  # 3 network specialists at 125 instead of 150 (-75)
    team[1]["salary_k"] = 185  # 4 principal engineers at 185 instead of 200 (-60)
    team[7]["salary_k"] = 195  # the security specialist at 195 instead of 190 (+5)
    assert sum(r["count"] * r["salary_k"] for r in team) == 3430
    return team


def test_the_salaries_part_never_claims_a_cost_within_a_band() -> None:
    answer = staffing(cheap_large_team())
    salaries = run_grader(GRADERS["design.staffing"], answer, {"gpus": 1536, "parts": ["salaries"]})
    assert salaries.status == "pass"
    assert salaries.message == "every salary lies in its level's band"
    assert "within" not in salaries.message and "3430" not in salaries.message
    assert set(salaries.observed) == {"salaries"} and set(salaries.expected) == {"salary bands"}
    cost = run_grader(GRADERS["design.staffing"], answer, {"gpus": 1536, "parts": ["cost"]})
    assert cost.status == "fail" and "outside the large band 3500-4500k" in cost.message


def extra_operations(n: int) -> list[dict[str, Any]]:
    return [*LARGE_TEAM, {"role": "operations_engineer", "count": n, "level": 2, "salary_k": 110}]


@pytest.mark.parametrize(
    "team",
    [LARGE_TEAM, cheap_large_team(), extra_operations(7), extra_operations(8)],
    ids=["3680k", "3430k", "4450k", "4560k"],
)
def test_a_message_that_says_within_a_band_is_within_it(team: list[dict[str, Any]]) -> None:
    total = sum(r["count"] * r["salary_k"] for r in team)
    claims = 0
    for parts in (None, ["cost"], ["salaries"], ["size", "roles"]):
        params: dict[str, Any] = {"gpus": 1536} | ({"parts": parts} if parts else {})
        result = run_grader(GRADERS["design.staffing"], staffing(team), params)
        for low, high in re.findall(r"within (\d+)-(\d+)k", result.message):
            claims += 1
            assert int(low) <= total <= int(high), f"{result.message} (the rows add up to {total}k)"
        if parts == ["cost"]:
            assert (result.status == "pass") == (3500 <= total <= 4500)
    assert claims == (2 if 3500 <= total <= 4500 else 0)
