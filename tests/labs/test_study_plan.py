"""The study plan (assessor/labs/study_plan.py): the labs not passed, in order, prerequisites first; for an
exam, the weakest exam domain first; else by the overall level rule. Shown by `gpulab progress` and carried by
the candidate report.

Properties are checked on the live catalogue (other work adds labs and moves them between exam domains), exact
orders on small made-up catalogues.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import levels, readiness, study_plan
from assessor.labs.levels import Blueprints, Rules
from assessor.labs.loader import load_catalogue
from tests.reports.builders import ada_db


@dataclass(frozen=True)
class FakeLab:
    id: str
    domain: str
    level: int
    exam_domains: tuple[str, ...] = ()
    title: str = "a lab"


def rules_for(exams: dict[str, dict[str, Fraction]], trains: dict[str, tuple[str, ...]]) -> Rules:
    bp = Blueprints(1, "2026-01-01", exams)
    return Rules(1, Fraction(2, 3), 1, tuple(exams), Fraction(2, 3), trains, bp)


@pytest.fixture(scope="module")
def live() -> tuple[Rules, list]:
    cat = load_catalogue()
    return levels.load_rules(cat.root), list(cat.labs)


def assert_prerequisites_first(rules: Rules, labs: list, passed: set[str], plan: study_plan.StudyPlan) -> None:
    """Every step comes when the lower levels of its domain have the passes the level rule needs."""
    done = set(passed)
    for step in plan.steps:
        tallies = levels.domain_level(rules, step.domain, labs, done).tallies
        lower = [t for t in tallies if t.level < step.level]
        assert all(t.met for t in lower), f"{step.lab} planned before its domain's lower levels: {plan.steps}"
        assert step.lab not in done
        done.add(step.lab)


PASSED_SETS = [
    set(),
    {"drv-101", "mig-101"},
    # the candidate: level 2 and above passed, the level-1 labs skipped
    "skipped the 101s",
]


def passed_set(labs: list, which: object) -> set[str]:
    if which == "skipped the 101s":
        return {x.id for x in labs if x.level >= 2 and not x.is_design}
    return set(which)  # type: ignore[call-overload]


@pytest.mark.parametrize("which", PASSED_SETS, ids=["none", "two", "skipped-101s"])
def test_without_an_exam_every_lab_left_comes_once_prerequisites_first(live, which) -> None:
    rules, labs = live
    passed = passed_set(labs, which)
    plan = study_plan.plan(rules, labs, passed)
    assert sorted(s.lab for s in plan.steps) == sorted(x.id for x in labs if x.id not in passed)
    assert_prerequisites_first(rules, labs, passed, plan)
    assert all(s.why for s in plan.steps) and plan.exam is None


def test_the_candidate_who_skipped_the_level_1_labs_is_sent_to_them_first(live) -> None:
    rules, labs = live
    passed = passed_set(labs, "skipped the 101s")
    first_levels = {}
    for d in {x.domain for x in labs}:
        blocker = next((t for t in levels.domain_level(rules, d, labs, passed).tallies if not t.met), None)
        if blocker is not None and blocker.level == 1:
            first_levels[d] = set(blocker.open)
    assert first_levels, "the catalogue has level-1 labs"
    needed = set().union(*first_levels.values())
    plan = study_plan.plan(rules, labs, passed)
    head = [s.lab for s in plan.steps[: len(needed)]]
    assert set(head) == needed
    # heavier domains first, as the overall rule weighs them
    weights = levels.domain_weights(rules, sorted({x.domain for x in labs}))
    assert [weights[s.domain] for s in plan.steps[: len(needed)]] == sorted(
        (weights[s.domain] for s in plan.steps[: len(needed)]), reverse=True
    )
    assert "level 1 (Foundation) needs 1 more" in plan.steps[0].why


def test_what_a_level_needs_comes_before_practice() -> None:
    rules = rules_for({"EX": {"A": Fraction(100)}}, {"health": ("EX: A",)})
    labs = [FakeLab("health-101", "health", 1), FakeLab("health-102", "health", 1), FakeLab("health-103", "health", 1)]
    labs.append(FakeLab("health-201", "health", 2))
    plan = study_plan.plan(rules, labs, set())
    # level 1 needs 2 of 3: then level 2, and the third level-1 lab last, as practice
    assert [s.lab for s in plan.steps] == ["health-101", "health-102", "health-201", "health-103"]
    assert plan.steps[-1].why.startswith("practice")


def test_for_an_exam_the_weakest_domain_comes_first_and_prerequisites_before_it() -> None:
    rules = rules_for({"EX": {"A": Fraction(60), "B": Fraction(40)}}, {})
    labs = [
        FakeLab("health-101", "health", 1, ("EX: A",)),
        FakeLab("health-201", "health", 2, ("EX: A",)),
        FakeLab("mig-101", "mig", 1),  # trains nothing of EX, but opens mig-301
        FakeLab("mig-301", "mig", 3, ("EX: B",)),
        FakeLab("nccl-301", "nccl", 3),  # neither trains EX nor opens a lab that does
    ]
    plan = study_plan.plan(rules, labs, {"health-101"}, exam="ex")
    assert plan.exam == "EX"
    # A is at 1/3, B at 0: B first, through its prerequisite
    assert [s.lab for s in plan.steps] == ["mig-101", "mig-301", "health-201"]
    assert plan.steps[0].why.startswith("needed before mig-301 (level 3)") and plan.steps[0].exam_domain == "B"
    assert "B (40 % of EX), at 0 %" in plan.steps[1].why
    # an exam session that finds B strong and A weak turns the order round
    sessions = [{"A": 0, "B": 100}]
    turned = study_plan.plan(rules, labs, {"health-101"}, exam="EX", sessions=sessions)
    assert turned.steps[0].lab == "health-201"


def test_equally_weak_domains_go_by_weight() -> None:
    rules = rules_for({"EX": {"A": Fraction(30), "B": Fraction(70)}}, {})
    labs = [FakeLab("health-101", "health", 1, ("EX: A",)), FakeLab("mig-101", "mig", 1, ("EX: B",))]
    assert [s.lab for s in study_plan.plan(rules, labs, set(), exam="EX").steps] == ["mig-101", "health-101"]


@pytest.mark.parametrize("exam", ["NCP-AII", "NCP-AIO", "NCA-AIIO", "NCP-AIN"])
def test_an_exam_plan_on_the_live_catalogue(live, exam: str) -> None:
    rules, labs = live
    passed = {"drv-101", "mig-101"}
    plan = study_plan.plan(rules, labs, passed, exam=exam)
    weights = rules.blueprints.exams[exam]
    training = {x.id for x in labs if any(readiness.trains(x, exam, d) for d in weights)}
    planned = [s.lab for s in plan.steps]
    assert len(planned) == len(set(planned))
    assert set(planned) >= training - passed  # every lab that trains the exam and is not passed
    assert_prerequisites_first(rules, labs, passed, plan)
    by_id = {x.id: x for x in labs}
    for n, s in enumerate(plan.steps):
        if s.lab in training:
            continue
        # a lab that trains nothing of the exam is there to open one that does, later, in its domain
        assert any(
            t.lab in training and by_id[t.lab].domain == s.domain and t.level > s.level for t in plan.steps[n + 1 :]
        ), s
    # the first step serves the weakest domain it could (readiness now; the heavier among equals)
    now = readiness.readiness(exam, rules.blueprints, labs, passed)
    first = {d.name: d for d in now.domains}[plan.steps[0].exam_domain]
    assert first.readiness == min(d.readiness for d in now.domains if d.labs and any(m.lab in planned for m in d.labs))


# ---- `gpulab progress` shows the plan --------------------------------------------------------------------


def gpulab(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout + result.stderr


def test_progress_shows_the_plan_and_its_json_holds_it_all(tmp_path: Path) -> None:
    db = ada_db(tmp_path / "attempts.db")
    code, out = gpulab("progress", "--candidate", "ada", "--db", str(db), "--json")
    assert code == 0, out
    doc = json.loads(out)
    rules, labs = levels.load_rules(load_catalogue().root), load_catalogue().labs
    expected = study_plan.plan(rules, labs, set(doc["passed"]))
    assert doc["study_plan"] == expected.to_json()
    assert doc["study_plan"]["steps"], "ada has labs left"
    code, text = gpulab("progress", "--candidate", "ada", "--db", str(db))
    flat = " ".join(text.split())
    assert "Study plan (the overall level): the next labs, in order" in flat
    assert f"1. {expected.steps[0].lab} ({expected.steps[0].domain}, level {expected.steps[0].level})" in flat
    if len(expected.steps) > study_plan.SHOWN:
        assert f"and {len(expected.steps) - study_plan.SHOWN} more" in flat
    code, md = gpulab("report", "candidate", str(db), "--candidate", "ada", "-f", "md")
    assert code == 0 and "## Study plan (the overall level)" in md and expected.steps[0].lab in md
