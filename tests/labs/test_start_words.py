"""What `gpulab lab start` says it did, in words that are true: a design lab has no node to set up (never "1
steps applied to nothing") and names its example answer file; a node lab counts its steps in good English."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from assessor.cli import main


def gpulab(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout + result.stderr


def test_a_design_lab_start_says_there_is_no_node_and_where_the_example_is(lab_env: Path) -> None:
    code, out = gpulab("lab", "start", "design-501", "--candidate", "ana")
    assert code == 0, out
    assert "applied to nothing" not in out and "1 steps" not in out
    flat = "".join(out.split())
    assert "design-501 is a design lab: no node to set up" in out
    assert "answer.example.yaml" in flat  # the example's path, as `lab show` gives it
    assert "design-501 started for ana" in out


def test_a_node_lab_start_counts_its_steps(lab_env: Path, tmp_path: Path) -> None:
    node = f"mock:{tmp_path / 'node.json'}"
    code, out = gpulab("lab", "start", "ib-301", "--target", node, "--candidate", "ana")
    assert code == 0, out
    said = re.search(r"the node is set up for the lab \((\d+) (steps?) applied on (.+)\)", out)
    assert said is not None, out
    assert said.group(2) == ("step" if said.group(1) == "1" else "steps")
    assert said.group(3) == node
