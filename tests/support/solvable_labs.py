"""A labs tree of a few shipped labs whose reference solutions the lab walk proves (tests/labs/test_walk.py), so a
scripted candidate (a practice exam, readiness from exam sittings) can solve the tasks it is given."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assessor.labs.loader import default_root

# Shipped labs a scripted candidate solves with their reference solutions: node labs, a node lab with a ticket
# for the data centre, and design labs (graded from an answer file).
SOLVABLE = (
    "drv-101",
    "drv-201",
    "health-101",
    "health-201",
    "mig-201",
    "nccl-301",
    "ib-201",
    "design-502",
    "design-503",
)


def solvable_labs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """GPULAB_LABS at a copy of :data:`SOLVABLE` and the shipped data files (blueprints, levels, exams)."""
    shipped = default_root()
    root = tmp_path / "labs"
    for lab in SOLVABLE:
        found = next(shipped.glob(f"*/{lab}"))
        shutil.copytree(found, root / found.parent.name / lab)
    for name in ("blueprints.yaml", "levels.yaml", "exams.yaml"):
        shutil.copy(shipped / name, root / name)
    monkeypatch.setenv("GPULAB_LABS", str(root))
    return root
