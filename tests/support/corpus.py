"""The real tool outputs kept in tests/data/corpus; SOURCES.md beside them says where each came from."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus"


def read_corpus(rel: str) -> str:
    """A corpus file as text (bad bytes replaced, as a pasted file would be read)."""
    return (CORPUS / rel).read_text(encoding="utf-8", errors="replace")
