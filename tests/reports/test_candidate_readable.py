"""Every lab's grade reads in words in the candidate report, in every format, as the terminal says it.

For each lab of the live catalogue: a node lab is started on a simulated node in-process (the fault in place)
and graded, with its reference ticket where it takes one; a design lab is graded from its reference answer and
from its example file (a wrong design). Each grade becomes the candidate report, rendered as JSON, Markdown,
HTML and CSV: no observed or expected value may show a brace of raw JSON, each must read as
:func:`assessor.labs.wording.in_words` phrases it, and `lab grade`'s own table must print that same phrasing. A
check the lab uses twice is labelled apart; a design part that passes still says what it expected.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from assessor.labs import grading, levels
from assessor.labs.grading import Grade
from assessor.labs.loader import default_root, load_catalogue, reference_answer
from assessor.labs.model import Lab
from assessor.labs.wording import in_words, labels
from assessor.reports import candidate, render
from assessor.reports.documents import record_from_grade
from tests.labs.test_walk import SIM_LABS, grade, started_node

CATALOGUE = load_catalogue(default_root())
DESIGN = [x for x in CATALOGUE.labs if x.is_design]
LABS = SIM_LABS + DESIGN
WHO = "casey"
BRACES = re.compile(r"[{}]")


def test_every_lab_of_the_catalogue_is_rendered() -> None:
    # every lab but one that runs on real nodes only (none yet), which no in-process node can start, and one
    # whose node must run (its Slurm daemons), graded in tests/labs/test_walk_slurm.py
    real_only = {x.id for x in CATALOGUE.labs if not x.is_design and "simulator" not in x.runs_on}
    running = {x.id for x in CATALOGUE.labs if x.needs_running_node}
    assert running and all(x.domain == "slurm" for x in CATALOGUE.labs if x.id in running)
    assert sorted(x.id for x in LABS) == sorted(x.id for x in CATALOGUE.labs if x.id not in real_only | running)
    assert len(LABS) >= 30


def grades_of(lab: Lab, tmp_path: Path) -> list[Grade]:
    """The grades a candidate could get: a started node with its fault (and the reference ticket), or a
    design's reference answer and its example file."""
    now = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
    if lab.is_design:
        answers = [yaml.safe_load(reference_answer(lab))]
        if lab.answer_example:
            answers.append(yaml.safe_load((lab.path / lab.answer_example).read_text(encoding="utf-8")))
        return [grading.grade_answer(lab, a, graded_at=now, started_at=now) for a in answers]
    spec = started_node(lab, tmp_path)
    ticket = None
    if lab.takes_answer:
        ticket = tmp_path / "ticket.yaml"
        ticket.write_text(reference_answer(lab), encoding="utf-8")
    return [grade(lab, spec, ticket)]


def report_of(g: Grade) -> dict[str, Any]:
    doc = dataclasses.replace(g, recorded=True).to_json()
    doc["candidate"] = WHO
    rules = levels.load_rules(CATALOGUE.root)
    return candidate.build(WHO, [record_from_grade(doc)], CATALOGUE, rules)


class ChecksTables(HTMLParser):
    """The cells of every ``table.checks`` row of the HTML report."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._in_table = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._in_table = "checks" in (dict(attrs).get("class") or "")
        elif self._in_table and tag == "tr":
            self.rows.append([])
        elif self._in_table and tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_table = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def md_check_cells(md: str) -> list[list[str]]:
    """The rows of the Markdown report's check tables (between their header and the end of the table)."""
    rows, inside = [], False
    for line in md.splitlines():
        if line.startswith("| check | result | points | observed | expected | hint |"):
            inside = True
            continue
        if inside and line.startswith("|---"):
            continue
        if inside and line.startswith("|"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        else:
            inside = False
    return rows


def terminal_table(lab: Lab, g: Grade, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """What `gpulab lab grade` prints, on a console wide enough that no cell wraps."""
    from rich.console import Console

    from assessor.cli import labs as cli

    monkeypatch.setattr(cli, "_console", lambda: Console(highlight=False, emoji=False, width=4000))
    capsys.readouterr()
    cli._print_grade(lab, g)
    return capsys.readouterr().out


@pytest.mark.parametrize("lab", LABS, ids=[x.id for x in LABS])
def test_observed_and_expected_read_in_words_in_every_format(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    names = labels(lab.checks)
    for g in grades_of(lab, tmp_path):
        doc = report_of(g)
        (entry,) = doc["labs"]
        shown = entry["best"]["checks"]
        assert [c["check"] for c in shown] == [s.check for s in g.scores]
        # the document: words, the phrasing of `lab grade`, each check under its label
        for c, s, label in zip(shown, g.scores, names, strict=True):
            assert c["label"] == label
            for key in ("observed", "expected"):
                raw = getattr(s, key)
                if raw is None:
                    assert key not in c
                    continue
                assert isinstance(c[key], str) and not BRACES.search(c[key]), f"{lab.id} {label} {key}: {c[key]}"
                assert c[key] == in_words(raw, s.check)
        if len(set(c.id for c in lab.checks)) < len(lab.checks):
            assert len(set(names)) == len(names), f"{lab.id}: a repeated check is not labelled apart: {names}"
        # the terminal prints the same words
        out = terminal_table(lab, g, capsys, monkeypatch)
        for c in shown:
            if c.get("observed"):
                assert c["observed"] in out, f"{lab.id}: the terminal does not say {c['observed']!r}"
            assert c["label"] in out
        # JSON, Markdown, HTML, CSV: no brace in any observed or expected cell
        again = json.loads(render.render(doc, "json"))
        for c in again["labs"][0]["best"]["checks"]:
            assert not BRACES.search(c.get("observed", "") + c.get("expected", ""))
        md_rows = md_check_cells(render.render(doc, "md"))
        assert len(md_rows) == len(shown)
        for row in md_rows:
            assert not BRACES.search(row[3] + row[4]), f"{lab.id} Markdown: {row}"
        page = ChecksTables()
        page.feed(render.render(doc, "html"))
        html_rows = [r for r in page.rows if r]
        assert len(html_rows) >= len(shown)
        for row in html_rows:
            assert not BRACES.search(row[3] + row[4]), f"{lab.id} HTML: {row}"
        table = list(csv.reader(io.StringIO(render.render(doc, "csv"))))
        cell = table[1][table[0].index("best_checks")]
        assert cell and not BRACES.search(cell), f"{lab.id} CSV: {cell}"
        assert all(c["label"] in cell for c in shown)


@pytest.mark.parametrize("lab", DESIGN, ids=[x.id for x in DESIGN])
def test_a_design_part_that_passes_says_what_it_expected(lab: Lab) -> None:
    now = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
    g = grading.grade_answer(lab, yaml.safe_load(reference_answer(lab)), graded_at=now, started_at=now)
    for s in g.scores:
        assert s.status == "pass"
        assert in_words(s.expected, s.check), f"{lab.id} {s.check}: empty expected on a pass"


def test_words_for_the_shapes_checks_return() -> None:
    assert in_words(
        {"1": {"current": False, "pending": False}, "2": {"current": False, "pending": False}}, "mig.mode"
    ) == ("GPUs 1-2: MIG disabled")
    assert in_words({"0": {"current": False, "pending": True}}, "mig.mode").startswith(
        "GPU 0: MIG disabled, enable pending"
    )
    assert in_words({str(i): 18 for i in range(8)} | {"4": 17}, "gpu.nvlink") == (
        "GPUs 0-3, 5-7: 18 NVLinks active; GPU 4: 17 NVLinks active"
    )
    services = {"nvidia-persistenced": "active", "nvidia-fabricmanager": "active", "nvidia-dcgm": "inactive"}
    assert in_words(services) == "nvidia-persistenced, nvidia-fabricmanager: active; nvidia-dcgm: inactive"
    assert in_words({"wrong_sizes": 0, "warnings": 0, "gdrdma": None}) == "wrong sizes: 0; warnings: 0; gdrdma: unknown"
    assert in_words({"total_it_kw": 104.0}, "design.power") == "total_it_kw: 104"  # the answer's own key
    assert in_words([18]) == "18" and in_words([]) == "none" and in_words(None) == "" and in_words(True) == "yes"
    assert in_words({"5": {"pending": True, "uncorrectable_rows": 1}}) == "GPU 5: pending yes, uncorrectable rows 1"


def test_a_check_used_twice_is_labelled_by_what_tells_its_uses_apart() -> None:
    def check(cid: str, **params: Any) -> SimpleNamespace:
        return SimpleNamespace(id=cid, params=params)

    assert labels([check("mig.mode", expected=True, gpus=[0]), check("mig.mode", expected=False, gpus=[1, 2, 3])]) == [
        "mig.mode (GPU 0)",
        "mig.mode (GPUs 1-3)",
    ]
    assert labels([check("driver.loaded"), check("driver.loaded", modules=["nvidia_drm"]), check("gpu.count")]) == [
        "driver.loaded (defaults)",
        "driver.loaded (nvidia_drm)",
        "gpu.count",
    ]
    assert labels([check("services.active", names=["a"]), check("services.active", names=["a"])]) == [
        "services.active (part 1)",
        "services.active (part 2)",
    ]


def test_lab_show_labels_repeated_checks_and_names_the_example_file() -> None:
    from click.testing import CliRunner

    from assessor.cli import main

    twice = next(x for x in CATALOGUE.labs if [c.id for c in x.checks].count("mig.mode") == 2)
    out = CliRunner().invoke(main, ["lab", "show", twice.id]).stdout
    graded_by = next(line for line in out.splitlines() if line.startswith("graded by:"))
    assert "mig.mode, mig.mode" not in graded_by
    assert all(label in " ".join(out.split()) for label in labels(twice.checks))
    design = DESIGN[0]
    out = CliRunner().invoke(main, ["lab", "show", design.id]).stdout
    assert str(design.path / (design.answer_example or "")) in "".join(out.split())
    record = json.loads(CliRunner().invoke(main, ["lab", "show", design.id, "--json"]).stdout)
    assert record["answer_example"] == str(design.path / (design.answer_example or ""))
