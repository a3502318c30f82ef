"""The cohort gradebook as an LMS imports it (Canvas, Moodle), with identities from the candidates file."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.errors import InputError
from assessor.labs import cohort, roster
from tests.reports.builders import grade_doc, write_json

DOCS = Path(__file__).resolve().parents[2] / "docs" / "REPORTS.md"
# The columns each LMS's import documentation names (cited in docs/REPORTS.md, "LMS import").
CANVAS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE = ["Full name", "Email address", "Username", "ID number"]

ROSTER = """host,candidate,name,email,login,sis_id,section,lms_id
# autumn cohort
node01,ada,"Lovelace, Ada",ada@example.edu,alovelace,S1001,Section A,101
node02,bob,,bob@example.edu,bob,S1002,Section B,
node03,cy,,,,,,
"""


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """ada passed drv-101 and failed health-101; bob's drv-101 pass is flagged; cy's grade was not recorded."""
    folder = tmp_path / "book"
    folder.mkdir()
    write_json(folder / "a.json", grade_doc("ada", "drv-101"))
    write_json(folder / "b.json", grade_doc("ada", "health-101", failing=(1,)))
    write_json(folder / "c.json", grade_doc("bob", "drv-101", flags=["state file edited by hand"]))
    write_json(folder / "d.json", grade_doc("cy", "drv-101", recorded=False, not_recorded_because="no start"))
    return folder


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_canvas_layout_has_the_columns_canvas_imports(book: Path, tmp_path: Path) -> None:
    (tmp_path / "roster.csv").write_text(ROSTER, encoding="utf-8")
    out = tmp_path / "canvas.csv"
    code, _, err = gpulab(
        "report", "cohort", str(book), "--candidates", str(tmp_path / "roster.csv"), "--lms", "canvas", "-o", str(out)
    )
    assert code == 0, err
    assert out.read_bytes().count(b"\r\n") == 4  # RFC 4180 line ends: the header and a row per candidate
    rows = rows_of(out.read_text(encoding="utf-8"))
    assert rows[0] == [*CANVAS, "drv-101", "health-101"]
    by = {r[0]: dict(zip(rows[0], r, strict=True)) for r in rows[1:]}
    assert by["Lovelace, Ada"] == {
        "Student": "Lovelace, Ada",
        "ID": "101",
        "SIS User ID": "S1001",
        "SIS Login ID": "alovelace",
        "Section": "Section A",
        "drv-101": "100.0",
        "health-101": "0.0",
    }
    assert by["bob"]["SIS User ID"] == "S1002" and by["bob"]["drv-101"] == ""  # flagged: not counted
    assert by["cy"]["drv-101"] == "" and by["cy"]["SIS Login ID"] == ""  # not recorded; no identity given
    assert "canvas cannot match 1 row(s)" in err and "cy" in err  # cy has nothing Canvas matches on


def test_moodle_layout_maps_by_email_username_or_id_number(book: Path, tmp_path: Path) -> None:
    roster_file = tmp_path / "roster.yaml"
    roster_file.write_text(
        "node01: {candidate: ada, email: ada@example.edu, login: alovelace, sis_id: S1001}\n"
        "node02: {candidate: bob, email: bob@example.edu, sis_id: 1002}\n"
        "node03: cy\n",
        encoding="utf-8",
    )
    code, out, err = gpulab(
        "report", "cohort", str(book), "--candidates", str(roster_file), "-f", "csv", "--lms", "moodle"
    )
    assert code == 0, err
    rows = rows_of(out)
    assert rows[0] == [*MOODLE, "drv-101", "health-101"]
    by = {r[0]: dict(zip(rows[0], r, strict=True)) for r in rows[1:]}
    assert by["ada"]["Email address"] == "ada@example.edu" and by["ada"]["Username"] == "alovelace"
    assert by["ada"]["ID number"] == "S1001" and by["ada"]["drv-101"] == "100.0"
    assert by["bob"]["ID number"] == "1002" and by["bob"]["drv-101"] == ""


def test_the_lms_columns_are_the_ones_docs_reports_cites() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("### LMS import") :]
    for column in CANVAS + MOODLE:
        assert f"`{column}`" in section
    # each LMS's documentation is cited
    assert "teaching.resources.osu.edu" in section and "developerdocs.instructure.com" in section
    assert "docs.moodle.org" in section and "useremail" in section and "username" in section


def test_the_plain_csv_has_a_passed_column_per_lab(book: Path) -> None:
    code, out, _ = gpulab("report", "cohort", str(book), "-f", "csv")
    assert code == 0
    ada = next(r for r in csv.DictReader(io.StringIO(out)) if r["candidate"] == "ada")
    assert (ada["drv-101_passed"], ada["health-101_passed"]) == ("yes", "no")


def test_lms_is_a_layout_of_the_cohort_csv_only(book: Path) -> None:
    code, _, err = gpulab("report", "cohort", str(book), "-f", "json", "--lms", "canvas")
    assert code == 2 and "-f csv --lms canvas" in err
    code, _, err = gpulab("report", "candidate", str(book), "--candidate", "ada", "-f", "csv", "--lms", "moodle")
    assert code == 2


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("r.csv", "host,candidate,emial\nnode01,ada,a@b.c\n", r"r\.csv:1: unknown column 'emial' \(columns: host,"),
        (
            "r.csv",
            "candidate,email\nada,ada-at-example\n",
            r"r\.csv:2: 'ada-at-example' is not an e-mail address \(key email\)",
        ),
        (
            "r.csv",
            "candidate,sis_id\nada,S1\n\nbob,S1\n",
            r"r\.csv:4: sis_id S1 is also ada's \(.*r\.csv:2\).*\(key sis_id\)",
        ),
        ("r.csv", "candidate,email\nada,a@b.c,extra\n", r"r\.csv:2: 3 cells, but the header names 2 columns"),
        ("r.csv", "candidate,login\n,ada\n", r"r\.csv:2: no candidate \(key candidate\)"),
        (
            "r.yaml",
            "node01: ada\nnode02:\n  candidate: bob\n  emial: b@x.org\n",
            r"r\.yaml:4: unknown key 'emial'.*\(key node02\.emial\)",
        ),
        ("r.yaml", "node01: {email: a@b.c}\n", r"r\.yaml:1: no candidate for node01"),
        (
            "r.yaml",
            "node01: {candidate: ada, email: nope}\n",
            r"r\.yaml:1: 'nope' is not an e-mail address \(key node01\.email\)",
        ),
    ],
)
def test_a_bad_candidates_file_names_file_line_and_key(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        roster.read(str(path))
    code, _, err = gpulab("report", "cohort", str(tmp_path), "--candidates", str(path), "-f", "csv", "--lms", "canvas")
    assert code == 2 and err.startswith("gpulab: error: ") and len(err.strip().splitlines()) == 1


def test_the_lab_commands_read_the_same_file_with_identities(tmp_path: Path) -> None:
    path = tmp_path / "roster.csv"
    path.write_text(ROSTER, encoding="utf-8")
    assert cohort.read_candidates(str(path)) == {"node01": "ada", "node02": "bob", "node03": "cy"}
    path.write_text("candidate,email\nada,a@b.c\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"roster\.csv:2: no host for candidate ada"):
        cohort.read_candidates(str(path))


def test_identities_from_a_candidate_are_neutralised_in_the_lms_file(book: Path, tmp_path: Path) -> None:
    path = tmp_path / "roster.csv"
    path.write_text('candidate,name,section\nada,"=HYPERLINK(""x"")",@evil\x1b[2J\n', encoding="utf-8")
    code, out, _ = gpulab("report", "cohort", str(book), "--candidates", str(path), "-f", "csv", "--lms", "canvas")
    assert code == 0
    ada = rows_of(out)[1]
    assert ada[0] == '\'=HYPERLINK("x")' and ada[4] == "'@evil\\e[2J" and "\x1b" not in out
