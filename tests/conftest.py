from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.corpus import CORPUS, ROOT, read_corpus

__all__ = ["CORPUS", "ROOT", "read_corpus"]


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real tool outputs kept in tests/data/corpus (tests/data/corpus/SOURCES.md gives each file's source)."""
    return CORPUS


def pytest_configure(config: pytest.Config) -> None:
    """Keep gpulab's caches (validated labs) out of the user's home while the tests run."""
    import os
    import tempfile

    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="gpulab-test-cache-")
