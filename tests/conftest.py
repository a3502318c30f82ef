from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real tool outputs kept in tests/data/corpus (tests/data/corpus/SOURCES.md gives each file's source)."""
    return CORPUS


def read_corpus(rel: str) -> str:
    return (CORPUS / rel).read_text(encoding="utf-8", errors="replace")
