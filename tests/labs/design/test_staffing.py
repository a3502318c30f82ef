"""design.staffing: a team against the team profiles and salary bands of docs/LEVELS.md."""

from __future__ import annotations

from typing import Any

import pytest

from assessor.labs.design import GRADERS, run_grader
from assessor.labs.design.staffing import normalise_role, size_for

LARGE_TEAM: list[dict[str, Any]] = [
    {"role": "infrastructure_architect", "count": 2, "level": 5, "salary_k": 280},
    {"role": "principal_engineer", "count": 4, "level": 4, "salary_k": 200},
    {"role": "operations_engineer", "count": 4, "level": 2, "salary_k": 110},
    {"role": "operations_engineer", "count": 4, "level": 3, "salary_k": 140},
    {"role": "network_specialist", "count": 3, "level": 3, "salary_k": 150},
    {"role": "storage_specialist", "count": 2, "level": 3, "salary_k": 140},
    {"role": "performance_engineer", "count": 2, "level": 4, "salary_k": 200},
    {"role": "security_specialist", "count": 1, "level": 4, "salary_k": 190},
]


def staffing(team: list[dict[str, Any]], size: str = "large", cost: float | None = None) -> dict[str, Any]:
    total = sum(r["count"] * r["salary_k"] for r in team)
    return {"staffing": {"size": size, "team": team, "yearly_cost_k": total if cost is None else cost}}


def grade(answer: dict[str, Any], gpus: int = 1536, **params: Any) -> Any:
    return run_grader(GRADERS["design.staffing"], answer, {"gpus": gpus, **params})


@pytest.mark.parametrize(
    ("gpus", "size"),
    [(64, "small"), (99, "small"), (100, "medium"), (999, "medium"), (1000, "large"), (16384, "large")],
)
def test_size_bands_lower_ends_inclusive(gpus: int, size: str) -> None:
    assert size_for(gpus).size == size


def test_large_reference_team_passes() -> None:
    # 560 + 800 + 440 + 560 + 450 + 280 + 400 + 190 = 3,680k, inside 3,500-4,500k.
    result = grade(staffing(LARGE_TEAM))
    assert result.status == "pass", result.message
    assert "3680k" in result.message


def test_missing_role_is_named() -> None:
    team = [r for r in LARGE_TEAM if r["role"] != "security_specialist"]
    result = grade(staffing(team))
    assert result.status == "fail"
    assert "security_specialist: 0 at L4+, need 1" in result.message


def test_under_levelled_people_do_not_cover_a_role() -> None:
    # Three network specialists at L2 are not three at L3+.
    team = [dict(r, level=2, salary_k=120) if r["role"] == "network_specialist" else r for r in LARGE_TEAM]
    result = grade(staffing(team), parts=["roles"])
    assert result.status == "fail"
    assert "network_specialist: 0 at L3+, need 3" in result.message


def test_an_over_levelled_person_covers_a_lower_role() -> None:
    team = [r for r in LARGE_TEAM if not (r["role"] == "operations_engineer" and r["level"] == 2)]
    team.append({"role": "operations_engineer", "count": 4, "level": 4, "salary_k": 180})
    assert grade(staffing(team), parts=["roles"]).status == "pass"


def test_salary_outside_its_band_fails() -> None:
    team = [dict(r, salary_k=150) if r["role"] == "principal_engineer" else r for r in LARGE_TEAM]
    result = grade(staffing(team), parts=["salaries"])
    assert result.status == "fail"
    assert "outside the L4 band 175-250k" in result.message


def test_stated_cost_must_be_the_sum() -> None:
    result = grade(staffing(LARGE_TEAM, cost=3600), parts=["cost"])
    assert result.status == "fail"
    assert "yearly_cost_k 3600 is not the sum of the team's rows" in result.message
    assert "3680" not in result.message  # the right total stays unsaid


def test_cost_outside_the_band_fails() -> None:
    # Every salary at the bottom of its band: 3,110k, below the large band.
    cheap = [dict(r, salary_k={2: 95, 3: 125, 4: 175, 5: 250}[r["level"]]) for r in LARGE_TEAM]
    for row in cheap:
        if row["role"] == "operations_engineer":
            row["level"], row["salary_k"] = 2, 95
    result = grade(staffing(cheap), parts=["cost"])
    assert result.status == "fail"
    assert "outside the large band 3500-4500k" in result.message


def test_wrong_size_band() -> None:
    result = grade(staffing(LARGE_TEAM, size="medium"), parts=["size"])
    assert result.status == "fail"
    assert "size medium is wrong for 1536 GPUs" in result.message


def test_role_names_are_normalised() -> None:
    assert normalise_role("Operations Engineers") == "operations_engineer"
    assert normalise_role("network-specialist") == "network_specialist"
