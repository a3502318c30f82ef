from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("GPULAB_CORPUS", ROOT.parent / "shared" / "corpus"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real tool outputs in ../shared/corpus (see corpus/SOURCES.md for attribution)."""
    if not CORPUS.is_dir():
        pytest.fail(f"corpus not found at {CORPUS}: tests need ../shared/corpus beside the checkout")
    return CORPUS


def read_corpus(rel: str) -> str:
    return (CORPUS / rel).read_text(encoding="utf-8", errors="replace")
