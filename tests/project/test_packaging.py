"""The wheel carries what gpulab needs outside the checkout (docs/CONTRACTS.md and docs/ARCHITECTURE.md)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.support.corpus import ROOT


def test_wheel_carries_labs_playbooks_reports_profiles_schemas_and_fixtures(tmp_path: Path) -> None:
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip_wheel, "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("gpulab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    labs = {n for n in names if n.startswith("assessor/_data/labs/") and n.endswith("/lab.yaml")}
    assert len(labs) == len(list((ROOT / "labs").glob("*/*/lab.yaml"))) >= 24
    assert "assessor/_data/labs/levels.yaml" in names
    assert "assessor/_data/labs/mig/mig-301/setup.yml" in names  # a lab's playbooks travel with it
    assert any(n.startswith("assessor/_data/playbooks/tasks/") and n.endswith(".yml") for n in names)
    assert "assessor/_data/reports/README.md" in names
    for needed in (
        "assessor/_data/profiles/hgx-h100.yaml",
        "assessor/schemas/results.schema.json",
        "assessor/schemas/lab.schema.json",
        "assessor/sim/fixtures/dgx-a100.json",
    ):
        assert needed in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "gpulab = assessor.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
