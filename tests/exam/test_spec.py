"""labs/exams.yaml: each exam's clock, tasks, pass mark and sources, joined with blueprints.yaml's domains; a
malformed file is one error naming the file, the line and the key (exit 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs.exam_spec import load_exams
from assessor.labs.loader import default_root


def test_every_blueprint_exam_has_a_clock_a_pass_mark_and_a_source() -> None:
    exams = load_exams(default_root())
    assert set(exams.exams) == {"NCA-AIIO", "NCP-AII", "NCP-AIO", "NCP-AIN"}
    for spec in exams.exams.values():
        assert spec.minutes >= 60 and spec.tasks >= 1 and 0 < spec.pass_percent <= 100
        assert spec.sources and all("https://" in s for s in spec.sources) and spec.pass_note
        assert sum(spec.weights.values()) == 100  # blueprints.yaml's weights, the one place they are kept
    assert exams.get("ncp-aii").minutes == 120 and exams.get("NCA-AIIO").minutes == 60


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (("minutes: 120", "minutes: 0", 1), "an exam lasts at least 1 minute, not 0 (key exams.NCP-AII.minutes)"),
        (("  NCP-AIN:", "  NCP-XYZ:", 1), "unknown exam 'NCP-XYZ'"),
        (("pass_percent: 70", "pass_percent: 170", 1), "a pass mark is above 0 and at most 100, not 170"),
        (("tasks: 6", "tasks: six", 1), "expected a whole number of tasks, got 'six' (key exams.NCP-AII.tasks)"),
    ],
)
def test_a_malformed_exams_file_names_file_line_and_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, edit: tuple[str, str, int], said: str
) -> None:
    root = tmp_path / "labs"
    root.mkdir()
    for name in ("blueprints.yaml", "levels.yaml"):
        shutil.copy(default_root() / name, root / name)
    text = (default_root() / "exams.yaml").read_text(encoding="utf-8")
    old, new, count = edit
    assert old in text
    (root / "exams.yaml").write_text(text.replace(old, new, count), encoding="utf-8")
    monkeypatch.setenv("GPULAB_LABS", str(root))
    result = CliRunner().invoke(main, ["exam", "list"], catch_exceptions=False)
    assert result.exit_code == 2 and said in result.stderr
    assert f"{root / 'exams.yaml'}:" in result.stderr  # file and line
