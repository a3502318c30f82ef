"""Nothing from a node or a candidate is interpreted, in any format."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest
import xmlschema

from assessor.checks.result import Result, TargetResults, document
from assessor.reports import candidate, cohort, fleet, render
from assessor.reports.documents import record_from_grade
from tests.reports.builders import grade_doc

# a formula, HTML, quotes, OSC (set title) and CSI (clear screen) escapes, BEL, CR/LF, an emoji code, markup
EVIL = "=cmd|' /C calc'!A0 <script>alert(1)</script> \"q\" 'a' \x1b]0;pwned\x07\x1b[2J\r\nx :ab: [bold]b[/bold] @here"
BUS = "00000000:AB:00.0"
SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas"


def hostile_results() -> dict:
    node = TargetResults(
        f"ssh://{EVIL}",
        EVIL,
        [
            Result(
                "gpu.model",
                "fail",
                f"GPU 0 ({BUS}) is {EVIL}, not H100",
                observed={"name": EVIL, "bus": BUS},
                expected="H100",
                hint=EVIL,
            ),
            Result(
                "ib.ports_active",
                "fail",
                f"{EVIL} port 1 is Down (Polling)",
                evidence=[f"ibstat: CA '{EVIL}' Port 1: State: Down; Physical state: Polling"],
                hint="check the cable",
            ),
            Result("nccl.errors", "warn", EVIL),
        ],
        captured_at="2026-12-01T08:00:00+00:00",
    )
    ghost = TargetResults(EVIL, EVIL, [], error=f"unreachable: {EVIL}")
    return document([node, ghost], "hgx-h100")


def hostile_people() -> list:
    lab_ids = ["drv-101", f"lab-{EVIL}"]
    grades = [grade_doc(EVIL, "drv-101", failing=(1,), flags=[EVIL])]
    odd = grade_doc(EVIL, "drv-101", failing=(2,))
    odd["lab"] = lab_ids[1]
    odd["checks"][0]["message"] = EVIL
    odd["checks"][0]["observed"] = {"gpu": EVIL}
    grades.append(odd)
    return [record_from_grade(g) for g in grades]


def documents() -> dict[str, dict]:
    from assessor.labs import levels
    from assessor.labs.loader import load_catalogue

    cat = load_catalogue()
    rules = levels.load_rules(cat.root)
    records = hostile_people()
    results = hostile_results()
    return {
        "fleet": fleet.build([results]),
        "candidate": candidate.build(EVIL, records, cat, rules),
        "cohort": cohort.build(EVIL, records, cat, rules),
        "results": results,
    }


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    return documents()


def no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text.replace("\r\n", "")


@pytest.mark.parametrize("kind", ["fleet", "candidate", "cohort"])
def test_html_escapes_everything_and_runs_nothing(docs: dict, kind: str) -> None:
    from tests.reports.test_candidate_report import parse

    html = render.render(docs[kind], "html")
    page = parse(html)
    assert "script" not in [t for t, _ in page.tags]
    assert "<script>alert(1)</script>" in page.words  # shown, as text
    no_raw_controls(html)
    assert "\\e]0;pwned\\x07\\e[2J\\r\\nx" in page.words


@pytest.mark.parametrize("kind", ["fleet", "candidate", "cohort"])
def test_markdown_escapes_html_and_keeps_tables_whole(docs: dict, kind: str) -> None:
    md = render.render(docs[kind], "md")
    no_raw_controls(md)
    assert "<script>" not in md and "@here" not in md
    header = None
    for line in md.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        pipes = len(re.findall(r"(?<!\\)\|", line))
        header = header if header is not None else pipes
        assert pipes == header, line


@pytest.mark.parametrize("kind", ["fleet", "candidate", "cohort"])
def test_csv_neutralises_formulas_and_controls(docs: dict, kind: str) -> None:
    text = render.render(docs[kind], "csv")
    no_raw_controls(text)
    cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
    assert cells and not any(c.startswith(("=", "+", "@", "\t")) for c in cells)
    assert any(c.startswith("'=cmd|") for c in cells)


def test_junit_is_well_formed_and_valid_with_hostile_names(docs: dict) -> None:
    xml = render.render(docs["results"], "junit")
    no_raw_controls(xml)
    root = ET.fromstring(xml)
    assert root.find("testsuite").attrib["hostname"].startswith("=cmd|")
    xmlschema.XMLSchema(str(SCHEMAS / "jenkins-xunit" / "junit-10.xsd")).validate(xml)
    xmlschema.XMLSchema(str(SCHEMAS / "ant-junit" / "JUnit.xsd")).validate(xml)


@pytest.mark.parametrize("kind", ["fleet", "candidate", "cohort", "results"])
def test_json_round_trips_the_data_unchanged(docs: dict, kind: str) -> None:
    text = render.render(docs[kind], "json")
    no_raw_controls(text)
    assert json.loads(text) == docs[kind]


def test_terminal_table_prints_data_as_data(capsys: pytest.CaptureFixture[str]) -> None:
    from assessor.assess.profiles import Profile
    from assessor.reports import terminal

    node = TargetResults("ssh://x", EVIL, [Result("gpu.model", "fail", f"GPU 0 ({BUS}) is {EVIL}", hint=EVIL)])
    ghost = TargetResults(EVIL, EVIL, [], error=EVIL)
    terminal.table([node, ghost], Profile("p", "", ()))
    out = capsys.readouterr().out
    no_raw_controls(out)
    assert BUS in out and "🆎" not in out and ":ab:" in out
    assert "[bold]b[/bold]" in out
    assert "\\e]0;pwned\\x07" in out


def test_lab_grade_output_in_a_file_is_whole_and_inert(capsys: pytest.CaptureFixture[str]) -> None:
    from assessor.cli.labs import _print_grade
    from assessor.labs.grading import CheckScore, Grade

    long_observed = {"gpus": [{"bus": BUS, "name": EVIL, "index": i} for i in range(4)]}
    score = CheckScore("gpu.model", "fail", EVIL, 10, 0, EVIL, observed=long_observed, note=EVIL)
    now = dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC)
    grade = Grade("drv-101", (score,), 0, 10, 70, now, now - dt.timedelta(minutes=5), 20)
    _print_grade(SimpleNamespace(id="drv-101", title=EVIL), grade)
    out = capsys.readouterr().out
    no_raw_controls(out)
    assert "…" not in out
    flat = "".join(out.split())
    from assessor.labs.wording import in_words
    from assessor.neutralise import visible

    # the observed value in words, as the candidate report shows it (never raw JSON), escapes shown
    assert "".join(visible(in_words(long_observed, "gpu.model")).split())[:40] in flat
    assert "index3)" in flat and "{" not in out  # the end of the observed value is there: nothing was cut
    assert "🆎" not in out and ":ab:" in out and "[bold]b[/bold]" in out


def test_fleet_progress_lines_show_host_names_as_data(capsys: pytest.CaptureFixture[str]) -> None:
    from assessor.assess.fleet import Job, Progress

    bar = Progress(1)  # stderr is not a terminal here: one plain line per host
    bar(Job(EVIL, SimpleNamespace()), TargetResults(EVIL, EVIL, [], error="x"))  # type: ignore[arg-type]
    err = capsys.readouterr().err
    no_raw_controls(err)
    assert err.startswith("[1/1] =cmd|") and err.rstrip().endswith(": error")
