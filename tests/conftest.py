from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.corpus import CORPUS, ROOT, read_corpus

__all__ = ["CORPUS", "ROOT", "read_corpus"]


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real tool outputs kept in tests/data/corpus (tests/data/corpus/SOURCES.md gives each file's source)."""
    return CORPUS
