"""labs/README.md is the lab catalogue, generated from the live labs (scripts/gen_labs_readme.py): the page in
the repository must be what the catalogue gives today, and the docs name no file the repository lacks."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

from assessor.labs.catalogue_page import GENERATOR, markdown
from assessor.labs.loader import default_root, load_catalogue
from assessor.labs.wording import labels

ROOT = Path(__file__).resolve().parents[2]


def test_labs_readme_is_the_live_catalogue() -> None:
    root = default_root()
    cat = load_catalogue(root)
    assert not cat.errors, cat.errors
    page = markdown(cat.labs, root)
    written = (root / "README.md").read_text(encoding="utf-8")
    assert written == page, f"labs/README.md is stale: run `.venv/bin/python {GENERATOR}`"


def test_the_page_lists_every_lab_with_its_level_title_and_labelled_checks() -> None:
    root = default_root()
    labs = load_catalogue(root).labs
    page = markdown(labs, root)
    for x in labs:
        row = next(line for line in page.splitlines() if line.startswith(f"| [{x.id}]("))
        assert f"({x.domain}/{x.id}/README.md)" in row and f"| {x.level} {x.level_name} |" in row
        assert x.title.replace("|", "\\|") in row
        assert all(f"`{label}`" in row for label in labels(x.checks))
    assert page.count("\n## ") == len({x.domain for x in labs})
    # a lab retitled or re-levelled changes the page: the staleness test can fail
    first = labs[0]
    moved = [dataclasses.replace(first, title="Another title", level=first.level), *labs[1:]]
    assert markdown(moved, root) != page


def test_the_generator_writes_nothing_when_asked_to_check() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / GENERATOR), "--check"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "up to date" in done.stdout


def test_no_doc_names_a_curriculum_file_the_repository_lacks() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for path in texts:
        for name in re.findall(r"\b([A-Z][A-Z_]+\.md)\b", path.read_text(encoding="utf-8")):
            assert name != "CURRICULUM.md", f"{path.name} names {name}"
