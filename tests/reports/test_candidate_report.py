"""The candidate report: levels explained, the chart, every lab attempted, next steps, certification."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from tests.reports.builders import ada_db, grade_doc, write_json


class Page(HTMLParser):
    """Tags, attributes and text of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    @property
    def words(self) -> str:
        return " ".join(" ".join(self.text).split())


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


def report(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["report", *args])
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return ada_db(tmp_path / "attempts.db")


def test_candidate_document_levels_best_latest_late_and_flags(db: Path) -> None:
    code, out = report("candidate", str(db), "--candidate", "ada", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    levels = {d["domain"]: d["level"] for d in doc["domains"]}
    assert levels == {
        "drivers": 2,
        "mig": 0,
        "nccl": 0,
        "infiniband": 2,
        "health": 1,
        "slurm": 0,
        "containers": 0,
        "design": 0,
    }
    # drivers 2, infiniband 2 and health 1 carry 59 % of the blueprint weight since the control-plane domains
    # took their share: under the two thirds that overall level 1 needs
    assert doc["overall"]["level"] == 0 and "blueprint weight" in doc["overall"]["explanation"]
    labs = {e["lab"]: e for e in doc["labs"]}
    health = labs["health-101"]
    assert health["attempts"] == 2
    assert health["best"]["percent"] == 100 and health["latest"]["percent"] == 0
    assert health["best"]["elapsed_min"] == 12.0
    assert any("2 machines" in f for f in health["flags"])
    assert labs["ib-201"]["best"]["late"] is True
    failed = labs["mig-101"]["best"]["checks"][0]
    # observed and expected in words, as `lab grade` prints them, never raw JSON
    assert failed["status"] == "fail" and failed["observed"] == "busbw: 120.5" and failed["hint"]
    steps = {s["domain"]: s for s in doc["next_steps"]}
    assert steps["drivers"]["target_level"] == 3 and [x["lab"] for x in steps["drivers"]["labs"]] == [
        "drv-301",
        "drv-302",
    ]
    assert steps["design"]["needed"] == 1 and [x["lab"] for x in steps["design"]["labs"]] == ["design-401"]
    certs = {c["exam"]: c for c in doc["certifications"]}
    assert set(certs) == {"NCA-AIIO", "NCP-AII", "NCP-AIO", "NCP-AIN"}
    # health (AI Operations) is only at level 1: the associate exam is not covered yet
    assert certs["NCA-AIIO"]["fits"] is False and any("AI Operations" in m for m in certs["NCA-AIIO"]["missing"])


def test_candidate_html_is_one_self_contained_file_with_chart_and_labs(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "ada.html"
    code, printed = report("candidate", str(db), "--candidate", "ada", "-o", str(out))
    assert code == 0 and str(out) in printed
    page = parse(out.read_text(encoding="utf-8"))
    tags = [t for t, _ in page.tags]
    assert "script" not in tags and "link" not in tags and "img" not in tags
    assert not any(
        k in ("src", "href") and (v or "").startswith(("http", "//")) for _, a in page.tags for k, v in a.items()
    )
    assert tags.count("svg") == 1
    bars = [a for t, a in page.tags if t == "rect"]
    widths = [float(a["width"] or 0) for a in bars]
    assert len(bars) == 8 and widths[0] == widths[3] == 2 * widths[4]  # drivers 2, infiniband 2, health 1
    words = page.words
    assert "Level 2 (Operational) in drivers" in words
    assert "drv-301" in words and "Next steps" in words
    assert "late" in words and "2 machines" in words
    assert "time taken 12.0 min" in words
    assert "hints used not recorded" in words


def test_candidate_report_from_grade_files_carries_their_flags(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", grade_doc("cy", "drv-101", flags=["tamper: fixture edited"], hints_used=2))
    code, out = report("candidate", str(tmp_path), "--format", "md")
    assert code == 0
    assert "tamper: fixture edited" in out and "| drv-101 |" in out
    assert "| 2 |" in out  # hints used


def test_candidate_report_of_several_people_asks_whose(db: Path) -> None:
    code, out = report("candidate", str(db))
    assert code == 2 and "--candidate" in out and "ada" in out
