"""The exam result report renders every format from the result document, checks it against its schema, and
shows data (a candidate's name, a node's message, a command typed) as data in each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.labs import exam_session
from assessor.labs.exam_score import result
from assessor.reports.exam import render

HOSTILE = "<script>alert(1)</script>\x1b[2J\u202e| ~~x~~ \nFAKE LINE"


def hostile_result(tmp_path: Path) -> dict:
    grade = {"at": "2026-01-01T10:10:00+00:00", "percent": 100.0, "passed": True, "flags": [], "guards_broken": []}
    tasks = [
        exam_session.Task(1, "drv-101", "AI Infrastructure", "node", target=f"mock:/n/{HOSTILE}.json", grades=[grade])
    ]
    s = exam_session.Session(
        id="NCA-AIIO-1",
        exam="NCA-AIIO",
        title="t",
        candidate=HOSTILE,
        seed=1,
        started_at="2026-01-01T10:00:00+00:00",
        minutes=60,
        deadline="2026-01-01T11:00:00+00:00",
        pass_percent=70,
        tasks=tasks,
        folder=tmp_path,
    )
    debrief = {
        "lab": "drv-101",
        "title": "x",
        "passed": True,
        "percent": 100,
        "objectives": [],
        "checks": [
            {
                "label": "gpu.count",
                "check": "gpu.count",
                "role": "task",
                "status": "pass",
                "points": 100,
                "earned": 100,
                "proved": True,
                "checks_what": "GPU count",
                "on_your_node": HOSTILE,
                "why_it_matters": "h",
            }
        ],
        "reference": {
            "commands": ["nvidia-smi"],
            "files": [],
            "answer": None,
            "answer_kind": None,
            "answer_text": None,
        },
        "yours": {"commands": [HOSTILE], "source": "s", "why_none": None},
        "steps": [{"reference": "nvidia-smi", "match": "not typed", "yours": None}],
        "real_node": [],
    }
    return result(
        s,
        submitted_at="2026-01-01T10:20:00+00:00",
        submitted_by="candidate",
        weights={"AI Infrastructure": 40, "AI Operations": 22},
        titles={"drv-101": HOSTILE},
        generated_at="2026-01-01T10:20:00+00:00",
        debriefs={1: debrief},
    )


def test_every_format_renders_and_shows_hostile_data_as_data(tmp_path: Path) -> None:
    doc = hostile_result(tmp_path)
    text = render(doc, "text")
    assert "Result: PASSED with 100 %" in text and "\x1b" not in text and "\u202e" not in text
    assert "\nFAKE LINE" not in text  # a line feed in data never starts a line of its own
    html = render(doc, "html")
    assert "<script>alert" not in html and "&lt;script&gt;" in html and "\x1b" not in html
    md = render(doc, "md")
    assert "<script>" not in md and "\x1b" not in md and "\nFAKE LINE" not in md
    assert json.loads(render(doc, "json"))["candidate"] == HOSTILE  # JSON keeps the data as it is


def test_a_document_that_is_not_an_exam_result_is_refused(tmp_path: Path) -> None:
    doc = hostile_result(tmp_path)
    with pytest.raises(InputError, match="score_percent"):
        render({**doc, "score_percent": 140}, "html")
    with pytest.raises(InputError, match=r"not a gpulab\.exam-result/1"):
        render({"schema": "gpulab.grade/1"}, "text")
    with pytest.raises(InputError, match="unknown format"):
        render(doc, "pdf")
