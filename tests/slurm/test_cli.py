"""``gpulab slurm health|prolog|epilog`` end to end on a simulated node, with a stand-in scontrol."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.cli import main
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import save_state
from tests.slurm.procs import wait_gone

FAKE = Path(__file__).with_name("fake_scontrol.py")


class Node:
    """A simulated node, and the Slurm node gpu01 its stand-in scontrol keeps."""

    def __init__(self, tmp_path: Path) -> None:
        self.state = tmp_path / "node.json"
        save_state(load_fixture("hgx-h100"), self.state)
        self.db = tmp_path / "slurm.json"
        self.db.write_text(json.dumps({"nodes": {"gpu01": {"state": "IDLE", "reason": None}}, "calls": []}))
        self.scontrol = tmp_path / "scontrol"
        self.scontrol.write_text(f'#!/bin/sh\nexec {sys.executable} -S {FAKE} "$@"\n')
        self.scontrol.chmod(0o755)

    def gpulab(self, mode: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
        argv = ["slurm", mode, "--scontrol", str(self.scontrol), *args]
        if "-p" not in args:
            argv += ["-p", "any-gpu-node"]
        if "-t" not in args:
            argv += ["-t", f"mock:{self.state}"]
        environment = {"SLURMD_NODENAME": "gpu01", "FAKE_SCONTROL_DB": str(self.db), **(env or {})}
        run = CliRunner().invoke(main, argv, env=environment, catch_exceptions=False)
        return run.exit_code, run.stdout

    def slurm(self) -> dict[str, str | None]:
        node: dict[str, str | None] = json.loads(self.db.read_text())["nodes"]["gpu01"]
        return node

    def updates(self) -> list[list[str]]:
        return [call for call in json.loads(self.db.read_text())["calls"] if call[0] == "update"]

    def sim(self, *args: str) -> None:
        result = CliRunner().invoke(main, ["sim", *args])
        assert result.exit_code == 0, result.output


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def test_a_fault_drains_the_node_and_the_repair_resumes_it(node: Node) -> None:
    code, out = node.gpulab("health")
    assert code == 0 and out.startswith("gpulab slurm health on gpu01: healthy (") and node.updates() == []

    node.sim("fault", str(node.state), "xid-79", "-o", "gpu=3")
    code, out = node.gpulab("health")
    reason = node.slurm()["reason"] or ""
    assert code == 1 and node.slurm()["state"] == "IDLE+DRAIN"
    assert reason.startswith("gpulab: gpu.count 7 of 8 GPUs answer; GPU 3 does not") and reason.endswith("[+gpu.xid]")
    assert out.splitlines()[0].startswith(f"gpulab slurm health on gpu01: drained: {reason}")
    assert "  FAIL gpu.xid: Xid 79 on PCI 0000:5d:00: GPU has fallen off the bus" in out

    node.sim("repair", str(node.state), "xid-79", "-o", "gpu=3")
    code, out = node.gpulab("epilog")
    assert code == 0 and node.slurm() == {"state": "IDLE", "reason": None}
    assert f"resumed: {reason} no longer seen" in out
    assert node.updates()[-1] == ["update", "NodeName=gpu01", "State=RESUME"]


def test_each_mode_exits_as_slurmd_expects_on_a_problem(node: Node) -> None:
    node.sim("fault", str(node.state), "xid-79")
    assert [node.gpulab(mode)[0] for mode in ("health", "prolog", "epilog")] == [1, 1, 1]
    assert len(node.updates()) == 1  # drained once, then found drained for the same reason


def test_a_profile_that_cannot_be_read_drains_with_what_is_wrong_and_exits_2(node: Node) -> None:
    code, out = node.gpulab("prolog", "-p", "hgx-h1000")
    assert code == 2
    assert (node.slurm()["reason"] or "").startswith("gpulab: cannot run: no profile 'hgx-h1000'")
    code, out = node.gpulab("health", env={"SLURMD_NODENAME": "gpu01 State=RESUME"})
    assert code == 2 and "not a Slurm node name" in out and len(node.updates()) == 1


def test_scontrol_failing_is_exit_3_for_the_health_check_and_its_message_shows_no_credential(node: Node) -> None:
    env = {"FAKE_SCONTROL_FAIL": "slurm_load_node error: Unable to contact slurm controller (token=s3cret)"}
    code, out = node.gpulab("health", env=env)
    assert code == 3 and "Unable to contact slurm controller (token=***" in out and "s3cret" not in out
    assert node.gpulab("prolog", env=env)[0] == 0  # a healthy node's job is not refused for it


def test_a_gpu_tool_that_hangs_is_killed_at_the_deadline_and_the_node_drained(node: Node, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pid_file = tmp_path / "nvidia-smi.pid"
    hung = bin_dir / "nvidia-smi"
    hung.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")  # a wedged GPU's nvidia-smi
    hung.chmod(0o755)
    start = time.monotonic()
    code, _ = node.gpulab(
        "prolog", "-t", "local", "--deadline", "1", "--timeout", "60", env={"PATH": f"{bin_dir}:/usr/bin:/bin"}
    )
    assert code == 1 and time.monotonic() - start < 6
    assert node.slurm()["reason"] == "gpulab: no verdict within 1s: a GPU tool hung"
    assert wait_gone(int(pid_file.read_text())), "the hung nvidia-smi outlived the deadline"
