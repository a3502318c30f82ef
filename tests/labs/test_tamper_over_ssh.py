"""Tamper evidence on every kind of node a cohort grades: a simulated node's own marks ("edited by hand", "solved
LAB") reach a grade made through an Ansible inventory over SSH as they reach one of a local state file.

The node is a loopback sshd whose sessions land inside a simulated node (tests/support/sshbed.py,
``add_node(inside=True)``); the inventory gives the instructor's key, whose admin login answers ``gpulab-node
flags``. A ``lab solve`` over the cohort marks the node itself (so a grader with another attempts database
sees it too) and is recorded in the instructor's database. The one-node ``ssh://`` path is
tests/labs/test_simulated_over_ssh.py.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.labs.capture import HAND_EDITED, SOLUTION_APPLIED, node_flags
from assessor.labs.drivers.sim_ssh import FLAGS_UNREAD, remote_flags
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import load_state, save_state
from assessor.targets import TargetOptions
from tests.support.sshbed import SshBed, free_port, sshd_available


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("tamperbed")).setup(0)
    bed.add_node("cand07", "dgx-a100", inside=True)
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def hand_edit(state: Path) -> None:
    """The cheat: drv-101's fix written straight into the node's state on its host, no tool used."""
    data = json.loads(state.read_text())
    for gpu in data["gpus"]:
        gpu["persistence_mode"] = True
    state.write_text(json.dumps(data))


def test_a_cohort_grade_over_ssh_flags_a_hand_edited_state_and_a_solve_on_the_candidates_node(
    bed: SshBed, tmp_path: Path
) -> None:
    node = bed.nodes[0]
    inventory = bed.inventory(tmp_path / "cohort.yml")
    candidates = tmp_path / "candidates.yml"
    candidates.write_text(f"{node.name}: ada\n")
    db = tmp_path / "attempts.db"
    reach = ["-i", str(inventory), "--known-hosts", str(bed.known_hosts)]
    common = [*reach, "--candidates", str(candidates), "--db", str(db)]

    code, out, err = gpulab("lab", "start", "drv-101", *common)
    assert code == 0 and "cand07 (ada): ready" in out, out + err
    hand_edit(node.state)
    code, out, err = gpulab("lab", "grade", "drv-101", *common, "--json")
    (edited,) = json.loads(out)
    assert edited["candidate"] == "ada" and edited["passed"] is True  # the edit did fix the node...
    assert any(flag.startswith(HAND_EDITED) for flag in edited["flags"]), edited["flags"]  # ...and shows
    assert "does not count" in err

    # the instructor's `lab solve` over the cohort: the node carries the mark, the database the solve
    code, out, err = gpulab("lab", "solve", "drv-101", *common)
    assert code == 0 and "cand07 (ada): solved" in out, out + err
    assert "solved drv-101" in load_state(node.state).marks
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT lab_id, target FROM solves").fetchall() == [
            ("drv-101", f"{inventory.resolve()}#{node.name}")
        ]
    code, out, _ = gpulab("lab", "grade", "drv-101", *common, "--json")
    (solved,) = json.loads(out)
    assert f"{SOLUTION_APPLIED} (`lab solve drv-101`)" in solved["flags"]  # the node's own mark
    assert f"{SOLUTION_APPLIED} (`lab solve drv-101` after the start)" in solved["flags"]  # the database's
    # a grader with another attempts database (the candidate's own) still reads the node's mark
    other = ["--db", str(tmp_path / "other.db"), "--candidate", "ada", "--json"]
    code, out, _ = gpulab("lab", "grade", "drv-101", *reach, "-t", node.name, *other)
    alone = json.loads(out)
    assert f"{SOLUTION_APPLIED} (`lab solve drv-101`)" in alone["flags"] and alone["recorded"] is False


def test_a_node_that_cannot_be_asked_is_flagged_and_a_host_without_marks_has_none(tmp_path: Path) -> None:
    # the capture reached the node but its flags could not be read: the grade must not look clean
    flags = remote_flags(f"ssh://127.0.0.1:{free_port()}", TargetOptions(connect_timeout=5))
    assert len(flags) == 1 and flags[0].startswith(f"{FLAGS_UNREAD} (unreachable: ")
    node = tmp_path / "node.json"
    save_state(load_fixture("dgx-a100", host="cand08"), node)
    inventory = tmp_path / "cohort.yml"
    inventory.write_text(
        f"all:\n  hosts:\n    fresh:\n      gpulab_target: mock:dgx-a100\n    kept:\n      gpulab_target: mock:{node}\n"
    )
    assert node_flags("fresh", str(inventory)) == []  # a node held in memory keeps no marks: none, no error
    assert node_flags("kept", str(inventory)) == []
    data = json.loads(node.read_text())
    data["gpus"][3]["persistence_mode"] = not data["gpus"][3]["persistence_mode"]
    node.write_text(json.dumps(data))
    assert any(flag.startswith(HAND_EDITED) for flag in node_flags("kept", str(inventory)))
