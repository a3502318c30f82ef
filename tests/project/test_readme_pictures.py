"""The README's "What it looks like" shows the exam result and the candidate report, as pictures in docs/img that
`scripts/screenshot_reports.py --docs` makes (headless Chromium), so one command keeps them current."""

from __future__ import annotations

import re
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PICTURES = {"exam-result.png", "candidate-report.png"}


def section(text: str, heading: str) -> str:
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_shows_the_exam_result_and_the_candidate_report() -> None:
    shown = section((ROOT / "README.md").read_text(encoding="utf-8"), "What it looks like")
    images = re.findall(r"!\[([^\]]+)\]\(docs/img/([^)]+)\)", shown)
    assert {name for _, name in images} == PICTURES
    assert all(len(alt) > 20 for alt, _ in images)  # each says what it shows
    assert "scripts/screenshot_reports.py --docs" in shown


def test_each_picture_is_a_png_of_a_readable_size() -> None:
    for name in PICTURES:
        data = (ROOT / "docs" / "img" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
        assert 1000 <= width <= 1600 and 800 <= height <= 4000, (name, width, height)


def test_the_screenshot_script_makes_the_pictures_the_readme_shows() -> None:
    script = (ROOT / "scripts" / "screenshot_reports.py").read_text(encoding="utf-8")
    made = re.search(r"^DOC_IMAGES = (.+)$", script, re.M)
    assert made is not None
    assert set(re.findall(r'"([a-z-]+\.png)"', made.group(1))) == PICTURES
