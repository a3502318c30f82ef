"""Readiness for an exam (assessor/labs/readiness.py): per exam domain from the labs that train it (each lab
weighing its level) and exam sessions, the blueprint-weighted whole and the verdict; `gpulab progress --exam`
and `gpulab report candidate --exam` show the same figures.

Expectations are computed from the live catalogue and blueprints where the shipped data is used (other work
moves labs between exam domains), and from small made-up blueprints where a figure is checked exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.errors import InputError
from assessor.labs import levels
from assessor.labs.levels import Blueprints
from assessor.labs.loader import load_catalogue
from assessor.labs.readiness import FLOOR, NEARLY, READY, readiness, trains
from tests.reports.builders import ada_db


@dataclass(frozen=True)
class FakeLab:
    id: str
    level: int
    exam_domains: tuple[str, ...]
    title: str = "a lab"
    domain: str = "health"


# A made-up exam: A weighs 60, B 30, C 10 (no lab trains C).
BP = Blueprints(1, "2026-01-01", {"EX": {"A": Fraction(60), "B": Fraction(30), "C": Fraction(10)}})
LABS = [
    FakeLab("a-101", 1, ("EX: A",)),
    FakeLab("a-301", 3, ("ex: a", "EX: B")),  # names are matched without regard to case
    FakeLab("b-201", 2, ("EX: B",)),
]


def by_name(r):
    return {d.name: d for d in r.domains}


def test_each_lab_weighs_its_level() -> None:
    r = by_name(readiness("EX", BP, LABS, {"a-301"}))
    assert r["A"].from_labs == Fraction(3, 4)  # 3 of 1 + 3
    assert r["B"].from_labs == Fraction(3, 5)  # 3 of 3 + 2
    assert r["C"].from_labs is None and r["C"].readiness == 0
    assert [m.lab for m in r["A"].passed] == ["a-301"]
    assert [(m.lab, m.level, m.passed) for m in r["B"].labs] == [("b-201", 2, False), ("a-301", 3, True)]


def test_overall_is_the_blueprint_weighted_mean_of_every_domain() -> None:
    r = readiness("ex", BP, LABS, {"a-101", "a-301", "b-201"})
    assert r.exam == "EX"
    # A and B at 100 %, C (no lab) at 0: 90 %, yet not ready, for C is below the floor
    assert r.overall == Fraction(90, 100)
    assert r.trained == Fraction(90, 100)
    assert r.verdict == "nearly"
    assert "no lab trains C (10 %)" in r.explanation and "below 50 % in C" in r.explanation


def test_an_exam_session_counts_as_much_as_the_labs_and_the_latest_one_wins() -> None:
    sessions = [{"A": 0, "C": 20}, {"EX: A": 50, "c": 90}]  # oldest first; bare or "EXAM: Domain", any case
    r = readiness("EX", BP, LABS, {"a-301"}, sessions=sessions)
    d = by_name(r)
    assert d["A"].session == Fraction(1, 2) and d["A"].readiness == (Fraction(3, 4) + Fraction(1, 2)) / 2
    assert d["B"].session is None and d["B"].readiness == Fraction(3, 5)
    assert d["C"].readiness == Fraction(9, 10)  # no lab: the session alone
    assert r.sessions == 2
    assert "latest exam session 90 %" in d["C"].explanation


@pytest.mark.parametrize(
    ("session", "problem"),
    [({"Z": 50}, "'Z' is not a domain of EX"), ({"A": 120}, "percent from 0 to 100"), ({"A": True}, "percent")],
)
def test_a_session_naming_no_domain_or_no_percent_is_refused(session: dict, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        readiness("EX", BP, LABS, set(), sessions=[session])


def test_an_unknown_exam_names_the_exams_there_are() -> None:
    with pytest.raises(InputError, match=r"unknown exam 'NOPE' \(exams: EX\)"):
        readiness("NOPE", BP, LABS, set())


def test_verdict_thresholds() -> None:
    bp = Blueprints(1, "x", {"EX": {"A": Fraction(50), "B": Fraction(50)}})
    labs = [FakeLab(f"{d}-{i}", 1, (f"EX: {d}",)) for d in "AB" for i in range(10)]

    def verdict(a: int, b: int) -> str:
        passed = {f"A-{i}" for i in range(a)} | {f"B-{i}" for i in range(b)}
        return readiness("EX", bp, labs, passed).verdict

    assert [float(x) for x in (READY, NEARLY, FLOOR)] == [0.8, 0.6, 0.5]
    assert verdict(8, 8) == "ready"  # 80 %, both at 80
    assert verdict(10, 6) == "ready"  # 80 %, B at the floor
    assert verdict(10, 7) == "ready"
    assert verdict(10, 4) == "nearly"  # 70 %
    assert verdict(6, 6) == "nearly"  # 60 %
    assert verdict(6, 5) == "not yet"  # 55 %
    # 85 % overall with B at 70 % is ready; with a domain below the floor it is only nearly
    bp3 = Blueprints(1, "x", {"EX": {"A": Fraction(90), "B": Fraction(10)}})
    assert readiness("EX", bp3, labs, {f"A-{i}" for i in range(10)} | {"B-0", "B-1", "B-2", "B-3"}).verdict == "nearly"


def test_the_shipped_exams_from_the_live_catalogue() -> None:
    cat = load_catalogue()
    rules = levels.load_rules(cat.root)
    for exam, weights in rules.blueprints.exams.items():
        training = {x.id for x in cat.labs if any(trains(x, exam, d) for d in weights)}
        none = readiness(exam, rules.blueprints, cat.labs, set())
        assert none.overall == 0 and none.verdict == "not yet"
        everything = readiness(exam, rules.blueprints, cat.labs, training)
        untrained = [d for d, _ in weights.items() if not any(trains(x, exam, d) for x in cat.labs)]
        # every trained domain at 100 %, the untrained ones at 0: the overall is the trained share
        assert (
            everything.overall == everything.trained == sum(w for d, w in weights.items() if d not in untrained) / 100
        )
        assert everything.verdict == (
            "ready" if not untrained else "nearly" if everything.overall >= NEARLY else "not yet"
        )
        assert [d.name for d in everything.domains] == list(weights)
        doc = everything.to_json()
        assert doc["readiness_pct"] == round(float(everything.overall) * 100, 1)
        assert sum(len(d["labs"]) for d in doc["domains"]) >= len(training)


# ---- the CLI: progress --exam and the candidate report show the same readiness ------------------------------


def gpulab(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return ada_db(tmp_path / "attempts.db")


def test_progress_and_the_candidate_report_show_the_same_readiness(db: Path) -> None:
    code, out = gpulab("progress", "--candidate", "ada", "--db", str(db), "--exam", "ncp-aii", "--json")
    assert code == 0, out
    progress = json.loads(out)
    code, out = gpulab("report", "candidate", str(db), "--candidate", "ada", "--exam", "NCP-AII", "-f", "json")
    assert code == 0, out
    report = json.loads(out)
    assert progress["readiness"] == report["readiness"]
    assert progress["study_plan"] == report["study_plan"]
    r = progress["readiness"]
    assert r["exam"] == "NCP-AII" and r["verdict"] in ("ready", "nearly", "not yet")
    # the figures follow from ada's passes: recompute them from the live data
    cat = load_catalogue()
    rules = levels.load_rules(cat.root)
    expected = readiness("NCP-AII", rules.blueprints, cat.labs, set(progress["passed"]))
    assert r["readiness_pct"] == round(float(expected.overall) * 100, 1)
    assert [d["readiness_pct"] for d in r["domains"]] == [round(float(d.readiness) * 100, 1) for d in expected.domains]
    assert any(m["passed"] for d in r["domains"] for m in d["labs"])  # ada passed labs that train NCP-AII


def test_progress_prints_readiness_by_domain_and_the_report_shows_it_in_every_format(db: Path) -> None:
    code, out = gpulab("progress", "--candidate", "ada", "--db", str(db), "--exam", "NCP-AII")
    assert code == 0, out
    cat = load_catalogue()
    weights = levels.load_rules(cat.root).blueprints.exams["NCP-AII"]
    flat = " ".join(out.split())
    assert "Readiness for NCP-AII (NVIDIA-Certified Professional: AI Infrastructure)" in flat
    for domain in weights:
        assert domain in flat
    assert "NCP-AII readiness" in flat and "How readiness is given:" in flat
    for fmt in ("md", "html"):
        code, text = gpulab("report", "candidate", str(db), "--candidate", "ada", "--exam", "NCP-AII", "-f", fmt)
        assert code == 0, text
        assert "Readiness for NCP-AII" in text
        assert all(domain in text for domain in weights)
    code, text = gpulab("report", "candidate", str(db), "--candidate", "ada", "-f", "md")
    assert "Readiness for" not in text  # no exam asked: no readiness section


def test_an_unknown_exam_is_bad_input_and_cohorts_take_no_exam(db: Path) -> None:
    code, out = gpulab("progress", "--db", str(db), "--exam", "NCP-XYZ")
    assert code == 2 and "unknown exam 'NCP-XYZ'" in out and "NCP-AII" in out
    code, out = gpulab("report", "candidate", str(db), "--candidate", "ada", "--exam", "NCP-XYZ")
    assert code == 2 and "unknown exam" in out
    code, out = gpulab("report", "cohort", str(db), "--exam", "NCP-AII")
    assert code == 2 and "--exam is for the candidate report" in out
