"""Every corpus file of a supported kind parses (the per-parser tests assert their content)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor import parsers
from tests.support.corpus import CORPUS
from tests.support.corpus_kinds import corpus_files

FILES = corpus_files(CORPUS)


def test_corpus_mapping_covers_many_files() -> None:
    assert len(FILES) >= 40


@pytest.mark.parametrize(("path", "kind"), FILES, ids=[f"{k}:{p.name}" for p, k in FILES])
def test_corpus_file_parses_to_some_facts(path: Path, kind: str) -> None:
    facts = parsers.parse(kind, path.read_text(encoding="utf-8", errors="replace"), source=str(path))
    spec = parsers.kind(kind)
    values = [getattr(facts, f) for f in spec.fields]
    assert any(v is not None for v in values), f"{path.name} gave no {spec.fields}"
