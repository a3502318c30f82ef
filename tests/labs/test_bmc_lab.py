"""drv-204 end to end through the CLI: no BMC password reaches the grade, the attempts database or the node file."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs import lifecycle
from assessor.labs.loader import default_root, load_catalogue
from assessor.sim.config_root import populate, root_for_state
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import save_state

PASSWORD = "Lab-only-drv204"  # the one lab.yaml's solution types


def test_the_solved_lab_grades_without_showing_the_password(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPULAB_LABS", str(default_root()))
    monkeypatch.setenv("GPULAB_DB", str(tmp_path / "attempts.db"))
    (lab,) = [lab for lab in load_catalogue(default_root()).labs if lab.id == "drv-204"]
    assert any(PASSWORD in c for c in lab.solution_commands)
    path = tmp_path / "node.json"
    state = load_fixture("pcie-l40s", host="lab-node", in_use=True)
    save_state(state, path)
    populate(root_for_state(path), state)
    spec = f"mock:{path}"
    runner = CliRunner()
    started = runner.invoke(main, ["lab", "start", "drv-204", "--target", spec], catch_exceptions=False)
    assert started.exit_code == 0, started.output
    lifecycle.solve(lab, spec)
    outputs = []
    for extra in ([], ["--json"]):
        graded = runner.invoke(main, ["lab", "grade", "drv-204", "--target", spec, *extra], catch_exceptions=False)
        assert graded.exit_code == 0, graded.output
        outputs.append(graded.output)
    assert "bmc.credentials" in outputs[0] and "opsadmin" in outputs[0]
    everything = [*outputs, (tmp_path / "attempts.db").read_bytes().decode("latin-1"), path.read_text()]
    assert all(PASSWORD not in text for text in everything)
