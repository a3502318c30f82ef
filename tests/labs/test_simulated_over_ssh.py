"""A simulated node served over SSH (docs/NODE.md): sessions land inside the node, the admin login runs labs.

Real OpenSSH servers on loopback whose keys carry ``gpulab sim login`` as their forced command: the
candidate's key lands inside the node, the instructor's may also run ``gpulab-node VERB`` on the node's host.
A lab only the simulator can set up starts over SSH through that verb (``gpulab lab start LAB --target
ssh://...``), a cheat on the node's state shows in the grade's flags over SSH, and the candidate's key can
neither reach the admin verbs nor the state.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from assessor.labs.capture import HAND_EDITED, SOLUTION_APPLIED
from assessor.sim.state import load_state
from tests.labs.walks import WALKS
from tests.support.nodeshell import GPULAB
from tests.support.sshbed import Node, SshBed, sshd_available


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("simbed")).setup(0)
    bed.add_node("ib-node", "dgx-a100", inside=True)
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def gpulab(bed: SshBed, node: Node, *args: str, db: Path) -> subprocess.CompletedProcess[str]:
    """``gpulab ARGS`` on the controller against the node over SSH, as the instructor (the bed's client key)."""
    ssh = [f"ssh://{bed.user}@127.0.0.1:{node.port}", "--identity", str(bed.client_key)]
    ssh += ["--known-hosts", str(bed.known_hosts), "--db", str(db)]
    who = ["--candidate", "ada"] if args[:2] != ("lab", "solve") else []
    json_out = ["--json"] if args[:2] == ("lab", "grade") else []
    return subprocess.run(
        [*GPULAB, *args, "--target", *ssh, *who, *json_out], capture_output=True, text=True, timeout=300, check=False
    )


def test_every_session_lands_inside_the_node(bed: SshBed) -> None:
    node = bed.nodes[0]
    done = bed.at_shell(
        node, "hostname; cat /etc/hostname; command -v nvidia-smi; ls /dev/nvidia0", key=bed.candidate_key
    )
    assert done.stdout.split() == ["ib-node", "ib-node", "/usr/bin/nvidia-smi", "/dev/nvidia0"]
    # the node's state is not reachable from a session
    assert bed.at_shell(node, f"ls {node.state}", key=bed.candidate_key).returncode != 0


def test_only_the_admin_key_reaches_the_nodes_host(bed: SshBed) -> None:
    node = bed.nodes[0]
    probe = bed.at_shell(node, "gpulab-node probe")
    assert probe.returncode == 0 and probe.stdout == "gpulab simulated node dgx-a100 ib-node\n"
    refused = bed.at_shell(node, "gpulab-node start ib-201", key=bed.candidate_key)
    assert refused.returncode == 127 and "command not found" in refused.stderr
    hidden = bed.at_shell(node, "bash -c 'gpulab-node probe'", key=bed.candidate_key)
    assert hidden.returncode == 127


def test_a_simulator_only_lab_starts_and_grades_over_ssh_and_a_fix_typed_inside_passes(
    bed: SshBed, tmp_path: Path
) -> None:
    node = bed.nodes[0]
    db = tmp_path / "attempts.db"
    started = gpulab(bed, node, "lab", "start", "drv-201", db=db)
    assert started.returncode == 0, started.stderr
    assert "drv-201 started for ada" in started.stdout
    idle = json.loads(gpulab(bed, node, "lab", "grade", "drv-201", db=db).stdout)
    assert idle["passed"] is False
    # drv-201: a driver upgraded without a reboot; the candidate reloads the module at the node's shell
    for line in WALKS["drv-201"]["alternatives"][0]:
        assert isinstance(line, str)
        done = bed.at_shell(node, line, key=bed.candidate_key)
        assert done.returncode == 0, f"{line}: {done.stderr}"
    graded = json.loads(gpulab(bed, node, "lab", "grade", "drv-201", db=db).stdout)
    assert graded["passed"] is True, graded
    assert graded["flags"] == []
    assert graded["recorded"] is True


def test_a_hand_edited_state_and_a_reference_solution_are_flagged_over_ssh(bed: SshBed, tmp_path: Path) -> None:
    node = bed.nodes[0]
    db = tmp_path / "attempts.db"
    assert gpulab(bed, node, "lab", "start", "drv-101", db=db).returncode == 0
    # the cheat: the state file edited by hand on the node's host (persistence on, no tool used)
    data = json.loads(node.state.read_text())
    for gpu in data["gpus"]:
        gpu["persistence_mode"] = True
    node.state.write_text(json.dumps(data))
    graded = json.loads(gpulab(bed, node, "lab", "grade", "drv-101", db=db).stdout)
    assert any(flag.startswith(HAND_EDITED) for flag in graded["flags"]), graded["flags"]
    # a simulated tool that saves the state afterwards (and stamps it) does not wash the edit out
    assert bed.at_shell(node, "nvidia-smi -i 0 -pm 1", key=bed.candidate_key).returncode == 0
    washed = json.loads(gpulab(bed, node, "lab", "grade", "drv-101", db=db).stdout)
    assert any(flag.startswith(HAND_EDITED) for flag in washed["flags"]), washed["flags"]
    # `lab solve` over SSH goes through the admin login too, and marks the node
    assert gpulab(bed, node, "lab", "start", "drv-101", db=db).returncode == 0
    solved = gpulab(bed, node, "lab", "solve", "drv-101", db=db)
    assert solved.returncode == 0, solved.stderr
    assert any(m == "solved drv-101" for m in load_state(node.state).marks)
    flagged = json.loads(gpulab(bed, node, "lab", "grade", "drv-101", db=db).stdout)
    assert any(flag.startswith(SOLUTION_APPLIED) for flag in flagged["flags"]), flagged["flags"]


def test_a_cohort_of_simulated_nodes_starts_a_simulator_only_lab(bed: SshBed, tmp_path: Path) -> None:
    node = bed.nodes[0]
    inventory = bed.inventory(tmp_path / "hosts.yml")
    candidates = tmp_path / "candidates.yml"
    candidates.write_text(f"{node.name}: ada\n")
    common = ["-i", str(inventory), "--identity", str(bed.client_key), "--known-hosts", str(bed.known_hosts)]
    common += ["--db", str(tmp_path / "attempts.db")]
    started = subprocess.run(
        [*GPULAB, "lab", "start", "drv-201", *common, "--candidates", str(candidates)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert started.returncode == 0, started.stdout + started.stderr
    # the simulator's own start ran on the node's host: the upgraded driver waits for its module to reload
    state = load_state(node.state)
    assert state.driver.version != state.driver.kernel_module_version
