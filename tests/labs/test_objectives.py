"""The official objectives file (labs/objectives.yaml) and the labs that name its objectives: the shipped data
holds together, and every malformed file or lab names its file, line and key."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from assessor import yamlio
from assessor.errors import InputError
from assessor.labs import levels, loader, objectives
from assessor.labs.model import LabObjective

SHIPPED = objectives.default_path(levels.data_file(levels.LEVELS).parent)
NCP_AII_TASKS = {1: 11, 2: 2, 3: 7, 4: 14, 5: 5}  # the study guide's numbered tasks per domain


@pytest.fixture(scope="module")
def shipped() -> objectives.Objectives:
    return objectives.load(SHIPPED)


def test_every_exam_the_overall_level_counts_has_its_objectives(shipped: objectives.Objectives) -> None:
    rules = levels.load_rules()
    assert set(rules.overall_exams) <= set(shipped.exams)
    for exam in shipped.exams.values():
        assert exam.source.startswith("https://") and exam.as_of and exam.document
        # every blueprint domain has objectives, and their weights make up the whole exam
        assert set(exam.domains()) == set(rules.blueprints.exams[exam.exam])
        assert sum(o.weight for o in exam.objectives) == 100


def test_ncp_aii_has_the_study_guides_numbered_tasks_in_their_domains(shipped: objectives.Objectives) -> None:
    aii = shipped.exam("ncp-aii")  # the exam's name without regard to case
    assert aii.numbering == "official"
    numbers = [o.number for o in aii.objectives]
    assert numbers == [f"{d}.{t}" for d, n in NCP_AII_TASKS.items() for t in range(1, n + 1)]
    by_id = {o.id: o for o in aii.objectives}
    # MIG sits with BlueField under Physical Layer Management; cables and transceivers under Bring-up and Cluster Test
    assert by_id["NCP-AII-2.2"].domain == by_id["NCP-AII-2.1"].domain == "Physical Layer Management"
    assert by_id["NCP-AII-1.8"].domain == "System and Server Bring-up"
    assert {by_id[f"NCP-AII-4.{n}"].domain for n in (4, 5, 8)} == {"Cluster Test and Verification"}
    # each weighs its domain's weight split equally: Physical Layer Management 5 % over 2 tasks
    assert by_id["NCP-AII-2.2"].weight == Fraction(5, 2)
    assert by_id["NCP-AII-4.4"].weight == Fraction(33, 14)
    assert by_id["NCP-AII-2.2"].exam_domain == "NCP-AII: Physical Layer Management"


def test_lab_objective_text_says_whole_or_part() -> None:
    assert LabObjective.parse("NCP-AII-2.2") == LabObjective("NCP-AII-2.2", whole=True)
    part = LabObjective.parse("NCP-AII-1.8 (part)")
    assert part == LabObjective("NCP-AII-1.8", whole=False) and str(part) == "NCP-AII-1.8 (part)"


def test_every_shipped_lab_loads_and_names_only_known_objectives(shipped: objectives.Objectives) -> None:
    cat = loader.load_catalogue(loader.default_root())
    # a lab naming an unknown objective is refused at load (a lab being written may fail for other reasons)
    assert [str(e) for e in cat.errors if "objective" in str(e)] == []
    named = [(lab.id, ref.id) for lab in cat.labs for ref in lab.objectives]
    assert named, "the shipped labs name objectives"
    assert [pair for pair in named if shipped.get(pair[1]) is None] == []
    # the domain fix: MIG labs train Physical Layer Management, no InfiniBand lab claims it
    for lab in cat.labs:
        if lab.domain == "mig":
            assert "NCP-AII: Physical Layer Management" in lab.exam_domains, lab.id
            assert "NCP-AII: System and Server Bring-up" not in lab.exam_domains, lab.id
        if lab.domain == "infiniband":
            assert "NCP-AII: Physical Layer Management" not in lab.exam_domains, lab.id


# ---- a malformed objectives file: file, line and key ------------------------------------------------------

GOOD = """\
version: 1
exams:
  NCP-AII:
    source: https://example.org/guide
    document: a study guide
    as_of: "2026-12-01"
    numbering: official
    domains:
      System and Server Bring-up:
        - id: NCP-AII-1.1
          title: Bring a node up
      Physical Layer Management:
        - id: NCP-AII-2.1
          title: BlueField
          reason: no DPU
        - id: NCP-AII-2.2
          title: MIG
      Control Plane Installation and Configuration:
        - id: NCP-AII-3.1
          title: BCM
          reason: no BCM
      Cluster Test and Verification:
        - id: NCP-AII-4.1
          title: Stress
      Troubleshoot and Optimize:
        - id: NCP-AII-5.1
          title: Faults
"""


def _load(tmp_path: Path, text: str) -> objectives.Objectives:
    path = tmp_path / "objectives.yaml"
    path.write_text(text, encoding="utf-8")
    return objectives.load(path)


def test_a_good_file_loads_with_equal_weights(tmp_path: Path) -> None:
    got = _load(tmp_path, GOOD).exam("NCP-AII")
    weights = {o.id: o.weight for o in got.objectives}
    assert weights["NCP-AII-2.1"] == weights["NCP-AII-2.2"] == Fraction(5, 2)
    assert weights["NCP-AII-4.1"] == 33
    assert got.objectives[1].reason == "no DPU" and got.objectives[2].reason is None


def test_own_weights_must_be_given_for_all_and_add_up(tmp_path: Path) -> None:
    both = GOOD.replace("title: BlueField\n", "title: BlueField\n          weight: 1\n").replace(
        "title: MIG\n", "title: MIG\n          weight: 4\n"
    )
    got = {o.id: o.weight for o in _load(tmp_path, both).all()}
    assert got["NCP-AII-2.1"] == 1 and got["NCP-AII-2.2"] == 4
    wrong = both.replace("weight: 4", "weight: 3")
    with pytest.raises(
        InputError, match=r"objectives.yaml:12: Physical Layer Management: objective weights add up to 4"
    ):
        _load(tmp_path, wrong)
    one = GOOD.replace("title: MIG\n", "title: MIG\n          weight: 4\n")
    with pytest.raises(InputError, match=r"give every objective a weight, or none"):
        _load(tmp_path, one)


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "says"),
    [
        ("  NCP-AII:\n", "  NCP-XYZ:\n", 3, "exams.NCP-XYZ", "unknown exam 'NCP-XYZ'"),
        (
            "id: NCP-AII-2.2",
            "id: NCP-AIO-2.2",
            16,
            "exams.NCP-AII.domains.Physical Layer Management[1].id",
            "must be NCP-AII-<number>",
        ),
        (
            "id: NCP-AII-2.2",
            "id: NCP-AII-2.1",
            16,
            "exams.NCP-AII.domains.Physical Layer Management[1].id",
            "listed twice (first at line 13)",
        ),
        (
            "      Troubleshoot and Optimize:\n        - id: NCP-AII-5.1\n          title: Faults\n",
            "",
            8,
            "exams.NCP-AII.domains",
            "no objectives for Troubleshoot and Optimize",
        ),
        (
            "          title: MIG\n",
            "          title: MIG\n          reasons: typo\n",
            18,
            "exams.NCP-AII.domains.Physical Layer Management[1].reasons",
            "unknown key(s) reasons",
        ),
        ('as_of: "2026-12-01"', 'as_of: "1 Dec 2026"', 6, "exams.NCP-AII.as_of", "as_of must be a date YYYY-MM-DD"),
        ("https://example.org/guide", "a book on my desk", 4, "exams.NCP-AII.source", "public https:// address"),
        (
            "numbering: official",
            "numbering: mine",
            7,
            "exams.NCP-AII.numbering",
            "numbering must be one of official, gpulab",
        ),
        (
            "      Cluster Test and",
            "      Cluster Tests and",
            22,
            "exams.NCP-AII.domains.Cluster Tests and Verification",
            "'Cluster Tests and Verification' is not a domain of NCP-AII",
        ),
        (
            "          title: Stress\n",
            "          title: ''\n",
            24,
            "exams.NCP-AII.domains.Cluster Test and Verification[0].title",
            "title must be non-empty text",
        ),
    ],
)
def test_a_malformed_file_names_file_line_and_key(
    tmp_path: Path, old: str, new: str, line: int, key: str, says: str
) -> None:
    assert old in GOOD, f"test setup: {old!r}"
    with pytest.raises(InputError) as exc:
        _load(tmp_path, GOOD.replace(old, new, 1))
    message = str(exc.value)
    assert f"{tmp_path / 'objectives.yaml'}:{line}:" in message, message
    assert f"(key {key})" in message and says in message, message


def test_an_unquoted_date_is_refused_by_the_yaml_reader(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"objectives.yaml:6: tag 'timestamp' is not allowed"):
        _load(tmp_path, GOOD.replace('as_of: "2026-12-01"', "as_of: 2026-12-01"))


def test_an_unknown_exam_asked_for_names_those_listed(shipped: objectives.Objectives) -> None:
    with pytest.raises(
        InputError, match=r"no objectives for exam 'NCP-XYZ' \(exams: NCP-AII, NCP-AIO, NCA-AIIO, NCP-AIN\)"
    ):
        shipped.exam("NCP-XYZ")


def test_parse_refuses_a_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "objectives.yaml"
    with pytest.raises(InputError, match=r"objectives.yaml:1: an objectives file is a mapping"):
        objectives.parse(yamlio.load(path, text="- a\n- b\n"), levels.load_blueprints())
