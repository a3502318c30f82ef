"""`gpulab lab coverage EXAM`: each objective with its labs, and the shares of the exam's weight touched and
fully covered (docs/COVERAGE.md); every objective of the shipped exams has a lab or a written reason."""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import coverage, levels, objectives
from assessor.labs.model import LabObjective

JSON_KEYS = [
    "exam",
    "title",
    "objectives_source",
    "blueprint",
    "rule",
    "touched_pct",
    "full_pct",
    "counts",
    "domains",
    "objectives",
    "problems",
    "labs_without_objectives",
    "lab_errors",
]
OBJECTIVE_KEYS = ["id", "number", "domain", "title", "weight_pct", "coverage", "labs", "full_by", "reason"]


@dataclass(frozen=True)
class FakeLab:
    id: str
    objectives: tuple[LabObjective, ...]


def _exam() -> objectives.ExamObjectives:
    def o(oid: str, domain: str, weight: Fraction, reason: str | None = None) -> objectives.Objective:
        return objectives.Objective(oid, "X", domain, f"task {oid}", weight, reason)

    return objectives.ExamObjectives(
        "X",
        "https://example.org",
        "guide",
        "2026-12-01",
        "official",
        None,
        (
            o("X-1.1", "A", Fraction(20)),
            o("X-1.2", "A", Fraction(20)),
            o("X-1.3", "A", Fraction(20), reason="no simulator for it"),
            o("X-2.1", "B", Fraction(20)),
            o("X-2.2", "B", Fraction(20), reason="stale: a lab names it now"),
        ),
    )


def test_touched_and_full_follow_the_rule() -> None:
    labs = [
        FakeLab("a-101", (LabObjective("X-1.1"), LabObjective("X-2.1", whole=False))),
        FakeLab("b-201", (LabObjective("X-1.1", whole=False), LabObjective("X-2.2", whole=False))),
    ]
    cov = coverage.measure(_exam(), labs)
    rows = {r.objective.id: r for r in cov.rows}
    assert rows["X-1.1"].labs == ("a-101", "b-201") and rows["X-1.1"].full_by == ("a-101",)
    assert [rows[i].status for i in ("X-1.1", "X-1.2", "X-1.3", "X-2.1", "X-2.2")] == [
        "full",
        "none",
        "none",
        "part",
        "part",
    ]
    # touched: 1.1, 2.1, 2.2 (3 x 20 %); full: 1.1 alone
    assert cov.touched == 60 and cov.full == 20
    # X-1.2 has neither a lab nor a reason: the one problem; X-2.2's reason is stale, not a problem
    assert cov.problems == [
        "X-1.2 (task X-1.2) has no lab and no reason: name it in a lab or give it a reason in objectives.yaml"
    ]
    assert rows["X-2.2"].stale_reason and not rows["X-1.3"].stale_reason
    domains = {d.domain: d for d in cov.domains()}
    assert (domains["A"].weight, domains["A"].touched, domains["A"].full) == (60, 20, 20)
    assert (domains["B"].touched, domains["B"].full) == (40, 0)


def test_the_json_document_has_stable_keys_and_rounded_shares() -> None:
    third = objectives.ExamObjectives(
        "X",
        "https://example.org",
        "guide",
        "2026-12-01",
        "gpulab",
        None,
        tuple(objectives.Objective(f"X-1.{n}", "X", "A", "t", Fraction(100, 3)) for n in (1, 2, 3)),
    )
    doc = coverage.document(coverage.measure(third, [FakeLab("a-101", (LabObjective("X-1.2"),))]))
    assert list(doc) == JSON_KEYS
    assert list(doc["objectives"][0]) == OBJECTIVE_KEYS
    assert doc["touched_pct"] == doc["full_pct"] == 33.3
    assert doc["objectives"][1]["weight_pct"] == 33.33 and doc["objectives"][1]["number"] == "1.2"
    assert doc["counts"] == {"objectives": 3, "touched": 1, "full": 1, "no_lab": 2}
    assert len(doc["problems"]) == 2  # 1.1 and 1.3: no lab, no reason


def test_every_shipped_objective_has_a_lab_or_a_reason() -> None:
    """The brief's guard: an objective no lab names must say why (labs/objectives.yaml `reason`)."""
    shipped = objectives.load()
    assert set(levels.load_rules().overall_exams) <= set(shipped.exams)
    for exam in shipped.exams:
        cov = coverage.gather(exam)
        assert cov.problems == [], exam
        assert cov.touched >= cov.full > 0 or exam == "NCP-AIN"


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def small_tree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """$GPULAB_LABS at a labs tree of two shipped MIG labs and the shipped data files (a lab being written
    elsewhere in the catalogue cannot change what these tests see)."""
    import shutil

    from assessor.labs.loader import default_root

    shipped = default_root()
    for lab in ("mig-101", "mig-301"):
        shutil.copytree(shipped / "mig" / lab, tmp_path / "mig" / lab)
    for name in ("objectives.yaml", "blueprints.yaml", "levels.yaml"):
        shutil.copy(shipped / name, tmp_path / name)
    monkeypatch.setenv("GPULAB_LABS", str(tmp_path))
    return tmp_path


def test_cli_prints_each_objective_with_its_labs_and_the_shares(small_tree: Path) -> None:
    code, out, _ = gpulab("lab", "coverage", "NCP-AII")
    assert code == 0
    assert "touched by labs:" in out and "% of the exam's weight" in out and "fully covered:" in out
    assert "Physical Layer Management: 5 % of the exam, 2 objectives" in out
    mig = out.splitlines()[next(i for i, line in enumerate(out.splitlines()) if "Configure MIG" in line) + 1]
    assert mig.strip() == "labs: mig-101 (part), mig-301"
    # the two MIG labs touch 2.2 (2.5 %, whole) and nothing else of NCP-AII
    assert "touched by labs: 2.5 % of the exam's weight (1 of 39 objectives); fully covered: 2.5 % (1)" in out
    code, out, _ = gpulab("lab", "coverage", "ncp-aio", "--json")  # the exam without regard to case
    doc = json.loads(out)
    assert code == 0 and list(doc) == JSON_KEYS and doc["exam"] == "NCP-AIO"
    assert doc["objectives_source"]["numbering"] == "gpulab"
    # 2.5 (MIG, whole in mig-301: 23/5 %) and 3.2 (resource allocation, part: 23/3 %)
    assert (doc["touched_pct"], doc["full_pct"]) == (round(23 / 5 + 23 / 3, 1), 4.6)
    rows = {o["id"]: o for o in doc["objectives"]}
    assert rows["NCP-AIO-2.5"]["labs"] == ["mig-101", "mig-301"] and rows["NCP-AIO-2.5"]["full_by"] == ["mig-301"]
    assert rows["NCP-AIO-3.2"]["coverage"] == "part"
    # objectives no lab of this tree names but the shipped catalogue does: no reason, so they are problems here
    assert "NCP-AIO-4.2" in " ".join(doc["problems"])


def test_cli_refuses_an_unknown_exam_with_exit_2() -> None:
    code, _, err = gpulab("lab", "coverage", "NCP-XYZ")
    assert code == 2 and "no objectives for exam 'NCP-XYZ'" in err and "NCP-AII" in err


def test_cli_neutralises_what_the_files_say(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Titles and reasons come from a labs tree anyone may point $GPULAB_LABS at: escapes are shown, not sent."""
    own = objectives.default_path().read_text(encoding="utf-8")
    own = own.replace("title: Configure MIG for AI and HPC", 'title: "MIG\\e[2J\\rcleared"', 1)
    (tmp_path / "objectives.yaml").write_text(own, encoding="utf-8")
    monkeypatch.setenv("GPULAB_LABS", str(tmp_path))  # no labs there: every objective untouched
    code, out, _ = gpulab("lab", "coverage", "NCP-AII")
    assert code == 0 and "\x1b" not in out and "\r" not in out
    assert "MIG\\e[2J\\rcleared" in out
    assert "touched by labs: 0 % of the exam's weight (0 of 39 objectives)" in out
    assert "no lab and no reason given" in out  # MIG has no reason: with no labs it is an unexplained gap
