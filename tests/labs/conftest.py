"""Fixtures for the lab framework tests: the example labs in tests/labs/data and a writable copy of them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def labs_copy(tmp_path: Path) -> Path:
    """A writable copy of tests/labs/data (so a test can break a lab without touching the originals)."""
    root = tmp_path / "labs"
    shutil.copytree(DATA, root)
    return root


@pytest.fixture
def lab_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """GPULAB_LABS at the example labs and GPULAB_DB in tmp_path; returns the database path."""
    db = tmp_path / "attempts.db"
    monkeypatch.setenv("GPULAB_LABS", str(DATA))
    monkeypatch.setenv("GPULAB_DB", str(db))
    return db
