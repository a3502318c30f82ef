"""Hostile strings pushed through every output gpulab has: error lines, echoed input, and every report format.

The strings (tests/security/hostile.py) hold ESC/CSI/OSC 52 sequences, a C1 CSI, a bidi override, every
zero-width character, a tag character, a soft hyphen, a newline that would forge a line, bare URLs and a
spreadsheet formula. None of their raw characters may reach an output, and the visible form must be there.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from tests.reports.builders import grade_doc, write_json
from tests.security.hostile import FORMULA, HOSTILE, RAW, assert_inert


def gpulab(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def yaml_quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar: controls as ``\\xNN``, everything else as it is."""
    body = "".join(
        f"\\x{ord(c):02x}" if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F else ("\\" + c if c in '"\\' else c) for c in text
    )
    return f'"{body}"'


def assert_no_forged_line(err: str) -> None:
    lines = err.splitlines()
    assert not any(line.startswith("gpulab: error: forged") for line in lines), err


def test_the_top_level_error_line_shows_a_hostile_path_as_data(tmp_path: Path) -> None:
    code, _, err = gpulab("report", "candidate", str(tmp_path / f"missing{HOSTILE}"))
    assert code == 2
    assert_inert(err, where="gpulab: error:")
    assert_no_forged_line(err)
    assert "\\e]52;c;" in err and "\\u202e" in err and "\\U000e0041" in err


def test_a_usage_error_quoting_a_typed_value_shows_it_as_data() -> None:
    code, _, err = gpulab("report", "candidate", "--format", HOSTILE)
    assert code == 2
    assert_inert(err, where="usage error")
    assert_no_forged_line(err)


def test_a_hostile_answer_files_keys_are_shown_as_data(tmp_path: Path) -> None:
    answer = tmp_path / "answer.yaml"
    key = yaml_quoted(f"k{HOSTILE}")
    answer.write_text(f"fat_tree:\n  {key}: 1\n", encoding="utf-8")
    code, _, err = gpulab(
        "lab",
        "grade",
        "design-501",
        "--answer",
        str(answer),
        "--candidate",
        "bob",
        env={"GPULAB_DB": str(tmp_path / "db")},
    )
    assert code == 2 and "unknown key" in err
    assert_inert(err, where="answer keys")
    assert_no_forged_line(err)


def test_a_hostile_target_typed_on_the_command_line_is_shown_as_data() -> None:
    code, _, err = gpulab("assess", "-t", f"snapshot:/nonexistent/{HOSTILE}", "-c", "gpu.xid")
    assert code in (2, 3)
    assert_inert(err, where="--target")
    assert_no_forged_line(err)


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gradebook whose candidate, flags and check messages are hostile."""
    root = tmp_path_factory.mktemp("gradebook")
    doc = grade_doc(HOSTILE, "drv-101", failing=(1,), flags=[HOSTILE])
    doc["checks"][0]["message"] = HOSTILE
    (root / "drv-101" / "x").mkdir(parents=True)
    write_json(root / "drv-101" / "x" / "001-grade.json", doc)
    return root


@pytest.mark.parametrize("kind", ["candidate", "cohort"])
@pytest.mark.parametrize("fmt", ["html", "md", "csv", "json"])
def test_reports_read_back_hostile_names_as_data(gradebook: Path, kind: str, fmt: str) -> None:
    code, out, err = gpulab("report", kind, str(gradebook), "--candidate", HOSTILE, "-f", fmt)
    assert code == 0, err
    assert_inert(out, where=f"{kind} {fmt}")
    assert_inert(err, where=f"{kind} {fmt} stderr")
    assert "\\u202e" in out  # the visible form (Markdown doubles the backslash)
    if fmt == "md":
        assert "https://evil.example" not in out and "https[:]//evil.example" in out
        assert "www.evil.example" not in out and "www[.]evil.example" in out
    if fmt == "csv":
        cells = [c for row in csv.reader(io.StringIO(out)) for c in row]
        assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)
        assert any(c.startswith("'" + FORMULA[:10]) for c in cells)
    if fmt == "json":
        doc = json.loads(out)  # the data itself is unchanged, only escaped
        assert doc["candidate"] == HOSTILE if kind == "candidate" else doc["candidates"][0]["candidate"] == HOSTILE


def test_every_raw_character_is_tested() -> None:
    assert all(ch in HOSTILE for ch in RAW)
