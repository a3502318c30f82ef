"""Fixtures of the practice exam tests: an attempts database (and so an exams folder) in tmp_path, and a labs
tree of a few shipped labs whose reference solutions the lab walk proves (tests/labs/test_walk.py), so a
scripted candidate can solve the tasks the exam draws."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.solvable_labs import solvable_labs as copy_solvable_labs


@pytest.fixture
def exam_db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """GPULAB_DB in tmp_path (exam sessions go to tmp_path/exams); returns the database path."""
    db = tmp_path / "attempts.db"
    monkeypatch.setenv("GPULAB_DB", str(db))
    return db


@pytest.fixture
def solvable_labs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """GPULAB_LABS at a copy of the shipped labs a scripted candidate solves (tests/support/solvable_labs.py)."""
    return copy_solvable_labs(monkeypatch, tmp_path)
