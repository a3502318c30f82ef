"""`gpulab exam ...` end to end through the command line: a sitting with design and node tasks, nothing told
before the submit, the result and its reports; bad input is one clear line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import exam_session
from tests.exam.scripted import check_words, solve


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def sitting(db: Path, who: str) -> exam_session.Session:
    return exam_session.find(exam_session.exams_root(db), who)


def test_an_exam_through_the_cli_tells_nothing_until_the_submit(
    solvable_labs: Path, exam_db: Path, tmp_path: Path
) -> None:
    code, out, err = gpulab("exam", "start", "nca-aiio", "--tasks", "3", "--seed", "5", "--candidate", "eve")
    assert code == 0, err
    s = sitting(exam_db, "eve")
    assert s.exam == "NCA-AIIO" and s.minutes == 60 and len(s.tasks) == 3 and s.id in out
    assert "not examined (no lab trains them): Essential AI Knowledge" in out
    said = [out]
    for t in s.tasks:
        answer = solve(t, tmp_path)
        args = ["exam", "grade", str(t.n), "--candidate", "eve"] + (["--answer", answer] if answer else [])
        code, out, err = gpulab(*args)
        assert code == 0 and "grade recorded" in out, err
        said.append(out)
    code, out, _ = gpulab("exam", "status", "--candidate", "eve")
    assert code == 0 and out.count("; recorded") == 3 and "min" in out
    said.append(out)
    code, out, _ = gpulab("exam", "status", "--candidate", "eve", "--json")
    assert [t["grade"] for t in json.loads(out)["tasks"]] == ["recorded"] * 3
    said.append(out)
    text = "\n".join(said)
    for t in s.tasks:
        assert not {w for w in check_words(t) if w in text}, t.lab
    assert "100 %" not in text and "PASSED" not in text

    code, out, _ = gpulab("exam", "submit", "--candidate", "eve")
    assert code == 0  # every task solved: passed
    assert "Result: PASSED with 100 %" in out and "Score per exam domain" in out and "Debrief of task 3" in out
    for t in s.tasks:
        assert any(w in out for w in check_words(t))  # now every check is named, in words
    code, again, err = gpulab("exam", "submit", "--candidate", "eve", "--json")
    assert code == 0 and "was submitted at" in err and json.loads(again)["score_percent"] == 100


def test_the_report_renders_the_result_in_every_format(solvable_labs: Path, exam_db: Path, tmp_path: Path) -> None:
    assert gpulab("exam", "start", "NCA-AIIO", "--tasks", "2", "--seed", "1", "--candidate", "fay")[0] == 0
    code, _, err = gpulab("exam", "report", "--candidate", "fay")
    assert code == 2 and "not submitted yet" in err
    assert gpulab("exam", "submit", "--candidate", "fay")[0] == 1  # nothing done: not passed
    for fmt in ("text", "md", "html", "json"):
        path = tmp_path / f"result.{fmt}"
        code, out, err = gpulab("exam", "report", "--candidate", "fay", "-f", fmt, "-o", str(path))
        assert code == 0 and str(path) in out, err
    doc = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    assert doc["schema"] == "gpulab.exam-result/1" and doc["passed"] is False and doc["score_percent"] == 0
    html = (tmp_path / "result.html").read_text(encoding="utf-8")
    assert "NOT PASSED" in html and "Score per exam domain" in html and html.count('id="task-') == 2
    md = (tmp_path / "result.md").read_text(encoding="utf-8")
    assert "| exam domain | blueprint weight | tasks | score | note |" in md and "## Debrief of task 2" in md
    text = (tmp_path / "result.text").read_text(encoding="utf-8")
    assert "NOT PASSED with 0 %" in text and "no grade recorded" in text


def test_a_tampered_session_file_is_refused_with_exit_2(solvable_labs: Path, exam_db: Path) -> None:
    assert gpulab("exam", "start", "NCA-AIIO", "--tasks", "1", "--seed", "2", "--candidate", "gus")[0] == 0
    path = sitting(exam_db, "gus").path
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["deadline"] = doc["deadline"].replace(doc["deadline"][:4], str(int(doc["deadline"][:4]) + 1))  # a year more
    path.write_text(json.dumps(doc), encoding="utf-8")
    for args in (("status",), ("grade", "1"), ("submit",)):
        code, _, err = gpulab("exam", *args, "--candidate", "gus")
        assert code == 2 and "edited by hand" in err and str(path) in err and "Traceback" not in err, args
    path.write_text("{not json", encoding="utf-8")
    code, _, err = gpulab("exam", "status", "--candidate", "gus")
    assert code == 2 and "not an exam session" in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("exam", "start", "NCP-XYZ"), "unknown exam 'NCP-XYZ': the exams are NCA-AIIO, NCP-AII, NCP-AIO, NCP-AIN"),
        (("exam", "start", "NCP-AII", "--minutes", "0"), "Invalid value for '--minutes'"),
        (("exam", "start", "NCP-AII", "--tasks", "0"), "Invalid value for '--tasks'"),
        (("exam", "status"), "no exam session of"),
        (("exam", "grade", "1"), "no exam session of"),
        (("exam", "report"), "no exam session of"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(exam_db: Path, args: tuple[str, ...], said: str) -> None:
    code, _, err = gpulab(*args, "--candidate", "hal")
    assert code == 2 and said in err and "Traceback" not in err


def test_grading_an_unknown_task_or_a_design_task_without_an_answer_is_exit_2(
    solvable_labs: Path, exam_db: Path
) -> None:
    assert gpulab("exam", "start", "NCA-AIIO", "--tasks", "3", "--seed", "5", "--candidate", "ida")[0] == 0
    code, _, err = gpulab("exam", "grade", "9", "--candidate", "ida")
    assert code == 2 and "no task '9'" in err
    design = next((t for t in sitting(exam_db, "ida").tasks if t.kind == "design"), None)
    if design is not None:
        code, _, err = gpulab("exam", "grade", str(design.n), "--candidate", "ida")
        assert code == 2 and "--answer FILE" in err
    assert not sitting(exam_db, "ida").tasks[0].recorded  # nothing was recorded by a refused grade


def test_exam_list_names_each_exam_with_its_clock_and_pass_mark(exam_db: Path) -> None:
    code, out, _ = gpulab("exam", "list", "--json")
    rows = {r["exam"]: r for r in json.loads(out)}
    assert code == 0 and set(rows) == {"NCA-AIIO", "NCP-AII", "NCP-AIO", "NCP-AIN"}
    assert rows["NCA-AIIO"]["minutes"] == 60 and rows["NCP-AII"]["minutes"] == 120
    assert all(r["pass_percent"] == 70 for r in rows.values())
    assert "Essential AI Knowledge" in rows["NCA-AIIO"]["not_examined"]


def test_a_hostile_candidate_name_is_shown_as_data_and_kept_out_of_file_names(
    solvable_labs: Path, exam_db: Path
) -> None:
    evil = "../../\x1b]52;c;eA==\x07\u202eeve\nFAKE: PASSED"
    code, out, err = gpulab("exam", "start", "NCA-AIIO", "--tasks", "1", "--seed", "3", "--candidate", evil)
    assert code == 0, err
    code, status, _ = gpulab("exam", "status", "--candidate", evil)
    assert code == 0
    _, result, _ = gpulab("exam", "submit", "--candidate", evil)
    for text in (out, status, result):
        assert "\x1b" not in text and "\u202e" not in text and "\nFAKE: PASSED" not in text
        assert "\\x1b]52" in text or "\\e]52" in text  # shown, escaped
    s = sitting(exam_db, evil)
    assert s.candidate == evil and s.folder.is_relative_to(exam_db.parent / "exams")
    assert ".." not in s.folder.relative_to(exam_db.parent / "exams").parts
