"""The repository stands alone: nothing in it points outside the checkout or at this build machine."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Built from parts so this file does not match itself.
SHARED = re.compile(re.escape("..") + r"/" + "shared" + r"\b")
BUILD_MACHINE = re.compile(r"(?<![\w.-])/" + "work" + r"/(main|shared|\.library|\.mirror)\b")


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):  # a source tarball without .git
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]
    return [ROOT / n for n in names if (ROOT / n).is_file()]


def test_no_tracked_file_names_the_shared_folder_or_a_build_machine_path() -> None:
    offenders = []
    for path in tracked_files():
        text = path.read_bytes().decode("utf-8", "replace")
        for pattern in (SHARED, BUILD_MACHINE):
            match = pattern.search(text)
            if match:
                line = text[: match.start()].count("\n") + 1
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)}")
    assert not offenders, offenders


def test_the_patterns_catch_what_they_are_for() -> None:
    assert SHARED.search("see ../" + "shared/" + "THRESHOLDS.md")
    assert BUILD_MACHINE.search("Every number comes from /" + "work/" + "shared/" + "THRESHOLDS.md")
    assert not BUILD_MACHINE.search("/usr/local/work/bin")


def test_tests_read_the_corpus_inside_the_repository() -> None:
    from tests.support.corpus import CORPUS

    assert CORPUS.is_relative_to(ROOT) and (CORPUS / "SOURCES.md").is_file()
