"""The cohort report: gradebook, level distribution, failed checks, team readiness, CSV gradebook."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from assessor.cli import main
from assessor.reports.cohort import team_readiness
from tests.reports.builders import ada_db


def report(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["report", *args])
    return result.exit_code, result.stdout + result.stderr


def person(name: str, overall: int, **levels: int) -> dict:
    return {"candidate": name, "overall": overall, "levels": levels}


TEAMS = [
    {
        "id": "small",
        "name": "Small team",
        "gpus": "10-100 GPUs",
        "roles": [
            {"role": "infrastructure lead", "count": 1, "level": 4, "judged_on": ["overall"]},
            {"role": "operations engineer", "count": 2, "level": 2, "up_to": 3, "judged_on": ["overall"]},
            {"role": "network specialist", "count": 1, "level": 3, "judged_on": ["infiniband", "nccl"]},
        ],
    }
]


def test_team_readiness_names_who_fills_each_role_and_the_gaps() -> None:
    people = [
        person("lead", 4, infiniband=4, nccl=4),  # could be anything: must not be spent on the network seat
        person("net", 1, infiniband=3, nccl=3),
        person("ops", 2),
    ]
    (small,) = team_readiness(people, TEAMS)
    roles = {r["role"]: r for r in small["roles"]}
    assert roles["infrastructure lead"]["filled_by"] == ["lead"]
    assert roles["network specialist"]["filled_by"] == ["net"]
    assert roles["operations engineer"]["filled_by"] == ["ops"] and roles["operations engineer"]["gap"] == 1
    assert small["ready"] is False


def test_team_readiness_matches_so_no_role_is_left_empty_needlessly() -> None:
    # greedy by role order would give "both" the lead seat and leave the network seat empty
    people = [person("both", 4, infiniband=3, nccl=3), person("lead", 4), person("a", 2), person("b", 2)]
    (small,) = team_readiness(people, TEAMS)
    assert small["ready"] is True
    assert {r["role"]: r["filled_by"] for r in small["roles"]}["network specialist"] == ["both"]


def test_cohort_document_gradebook_distribution_and_failed_checks(tmp_path: Path) -> None:
    db = ada_db(tmp_path / "attempts.db")
    code, out = report("cohort", str(db), "--cohort", "autumn", "-f", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["cohort"] == "autumn"
    people = {p["candidate"]: p for p in doc["candidates"]}
    assert people["ada"]["labs"]["ib-201"]["late"] is True
    assert people["ada"]["labs"]["health-101"] == {
        "best": 100.0,
        "attempts": 2,
        "passed": True,
        "late": False,
        "flags": ["attempts from 2 machines: node01, node02"],
        "flagged": 0,
        "not_recorded": 0,
        "status": "passed",
        "why": None,
    }
    assert people["bob"]["labs"]["mig-201"]["attempts"] == 2
    dist = {row["domain"]: row["counts"] for row in doc["level_distribution"]}
    assert dist["drivers"] == [0, 1, 1, 0, 0, 0] and dist["overall"] == [2, 0, 0, 0, 0, 0]
    # mig-201 grades mig.mode twice: only the second one failed, and it is counted on its own
    mig = [f for f in doc["failed_checks"] if f["lab"] == "mig-201"]
    assert mig == [{"lab": "mig-201", "check": "mig.mode", "position": 2, "failed": 2, "attempts": 2, "candidates": 1}]
    assert doc["failed_checks"][0]["lab"] == "mig-201"
    teams = {t["id"]: t for t in doc["teams"]}
    assert set(teams) == {"small", "medium", "large"}
    assert doc["team_source"] == "CURRICULUM team profiles"
    large = {r["role"]: r for r in teams["large"]["roles"]}
    assert large["operations engineer"]["count"] == 8 and large["security specialist"]["level"] == 4
    assert all(not r["filled_by"] for r in large.values())  # nobody here is past overall level 1


def test_csv_gradebook_has_one_row_per_candidate_with_documented_columns(tmp_path: Path) -> None:
    db = ada_db(tmp_path / "attempts.db")
    code, out = report("cohort", str(db), "-f", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["candidate"] for r in rows] == ["ada", "bob"]
    ada = rows[0]
    assert ada["overall_level"] == "0" and ada["level_drivers"] == "2" and ada["level_infiniband"] == "2"
    assert ada["ib-201_best_percent"] == "100.0" and ada["ib-201_late"] == "yes"
    assert ada["health-101_attempts"] == "2" and "2 machines" in ada["health-101_flags"]
    assert rows[1]["ib-201_attempts"] == "0" and rows[1]["ib-201_best_percent"] == ""
    documented = (Path(__file__).resolve().parents[2] / "docs" / "REPORTS.md").read_text(encoding="utf-8")
    for column in (
        "candidate",
        "overall_level",
        "level_<domain>",
        "labs_attempted",
        "labs_passed",
        "<lab>_best_percent",
        "<lab>_passed",
        "<lab>_attempts",
        "<lab>_status",
        "<lab>_late",
        "<lab>_flags",
        "flags",
    ):
        assert f"`{column}`" in documented


def test_cohort_html_shows_gradebook_and_team_gaps(tmp_path: Path) -> None:
    from tests.reports.test_candidate_report import parse

    db = ada_db(tmp_path / "attempts.db")
    out = tmp_path / "cohort.html"
    code, _ = report("cohort", str(db), "--cohort", "autumn", "-o", str(out))
    assert code == 0
    words = parse(out.read_text(encoding="utf-8")).words
    assert "Cohort report: autumn" in words
    assert "Gradebook" in words and "100×2" in words.replace(" ", "")
    assert "Team readiness" in words and "infrastructure architect" in words and "gaps" in words


def test_cohort_of_a_candidate_list_keeps_who_is_listed_even_without_attempts(tmp_path: Path) -> None:
    db = ada_db(tmp_path / "attempts.db")
    names = tmp_path / "class.txt"
    names.write_text("ada\n# not started yet:\ncarol\n", encoding="utf-8")
    code, out = report("cohort", "--db", str(db), "--candidates", str(names), "-f", "json")
    assert code == 0
    people = {p["candidate"]: p for p in json.loads(out)["candidates"]}
    assert set(people) == {"ada", "carol"}  # bob is not in this class
    assert people["carol"]["labs"] == {} and people["carol"]["overall"] == 0
