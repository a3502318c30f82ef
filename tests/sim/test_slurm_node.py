"""A real Slurm inside the simulated node: Debian's munged, slurmctld and slurmd as the node's processes.

The pure parts (the node's Slurm files, which daemons run, a job's view of the GPUs) are tested in-process; the
rest on one running node (module-scoped: it boots once): ``sinfo``/``scontrol`` answer from the node's real
slurmctld (its version line), a job step asking for two GPUs sees two in the simulated ``nvidia-smi -L``, the
units act on the real processes, and the grader reads Slurm's view through the capture (an error, never a pass,
when the node is down). Those skip, with the reason, only where the machine lacks Slurm's programs.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from assessor.checks.result import Result
from assessor.labs.drivers.sim import SETTLED
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.slurm_node import (
    SCENARIO_FAULTS,
    UNITS,
    daemon_processes,
    missing_binaries,
    runs_slurm,
)
from assessor.sim.slurm_node.config import device_range, gres_conf, slurm_conf
from assessor.sim.slurm_node.jobs import job_view
from tests.support.nodeshell import NodeShell, node_shell

MISSING = missing_binaries()
needs_slurm = pytest.mark.skipif(bool(MISSING), reason=f"Slurm is not installed here (missing: {', '.join(MISSING)})")


def test_gres_conf_names_the_nodes_gpu_device_files() -> None:
    state = load_fixture("hgx-h100", host="gpu-node-07")
    assert gres_conf(state).splitlines()[-1] == "Name=gpu File=/dev/nvidia[0-7]"
    assert device_range([0, 1, 2, 4]) == "/dev/nvidia[0-2,4]"
    assert device_range([3]) == "/dev/nvidia3"
    conf = slurm_conf(state)
    assert "NodeName=gpu-node-07 Gres=gpu:8 State=UNKNOWN" in conf
    assert "SlurmctldHost=gpu-node-07" in conf and "GresTypes=gpu" in conf


def test_only_a_node_with_the_slurm_units_runs_its_daemons() -> None:
    state = load_fixture("hgx-h100")
    assert not runs_slurm(state) and daemon_processes(state) == []
    faults.CONDITIONS["slurm"].apply(state)
    assert runs_slurm(state)
    assert [unit for unit, _, _ in daemon_processes(state)] == list(UNITS)
    state.services["slurmd.service"].active_state = "inactive"
    assert [comm for _, comm, _ in daemon_processes(state)] == ["munged", "slurmctld"]
    assert set(SCENARIO_FAULTS) <= set(faults.FAULTS) | set(faults.CONDITIONS)


def test_a_job_step_sees_only_its_gpus_numbered_from_zero() -> None:
    state = load_fixture("hgx-h100")
    view = job_view(state, {"SLURM_JOB_ID": "7", "SLURM_STEP_GPUS": "2,5"})
    assert [(g.index, g.minor_number, g.uuid) for g in view.gpus] == [
        (0, 2, state.gpus[2].uuid),
        (1, 5, state.gpus[5].uuid),
    ]
    assert len(state.gpus) == 8  # the node's own record is untouched
    assert job_view(state, {"SLURM_STEP_GPUS": "2"}) is state  # not in a job: the whole node
    assert job_view(state, {"SLURM_JOB_ID": "7"}) is state  # a job without GPUs listed


def test_a_machine_without_slurm_says_so_inside_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assessor.sim.slurm_node import runtime

    monkeypatch.setattr(runtime, "missing_binaries", lambda: ["slurmd", "sinfo"])
    assert runtime.write_runtime(tmp_path) is None  # the daemons' library builds (a C compiler is there)
    assert (tmp_path / "lib/gpulab/libgpulab-slurm.so").is_file()
    said = subprocess.run([tmp_path / "bin/sinfo"], capture_output=True, text=True, check=False)
    assert said.returncode == 127
    assert said.stderr.startswith("sinfo: Slurm is not installed on the machine this simulated node runs on (apt-get")
    assert not (tmp_path / "bin/scontrol").exists()  # only what is missing
    assert not (tmp_path / "bin/slurmd").exists()  # a daemon: its unit fails to start (the launcher says why)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeShell]:
    if MISSING:
        pytest.skip(f"Slurm is not installed here (missing: {', '.join(MISSING)})")
    with node_shell(tmp_path_factory.mktemp("slurm")) as shell:
        faults.inject(shell.state, "slurm")
        shell.out("sleep 2")  # boots the node; its slurmd registers
        yield shell


@needs_slurm
def test_sinfo_and_scontrol_answer_from_the_nodes_real_slurmctld(cluster: NodeShell) -> None:
    client = cluster.out("sinfo --version").strip()
    assert re.fullmatch(r"slurm(?:-wlm)? \d{2}\.\d{2}\.\d+", client), client
    version = client.split()[-1]
    # the controller's own version, as it reports its configuration, and the node's slurmd as it registered
    assert f"SLURM_VERSION           = {version}" in cluster.out("scontrol show config")
    assert "Slurmctld(primary) at gpu-node-07 is UP" in cluster.out("scontrol ping")
    node = cluster.out("scontrol show node -o")
    assert f"Version={version}" in node and "State=IDLE " in node and "Gres=gpu:8 " in node
    assert cluster.out("sinfo -h -o '%N %t'").split() == ["gpu-node-07", "idle"]
    processes = cluster.out("ps -eo pid=,comm=")
    assert {"munged", "slurmctld", "slurmd"} <= set(processes.split())


@needs_slurm
def test_a_job_asking_for_two_gpus_sees_two_in_nvidia_smi(cluster: NodeShell) -> None:
    inside = cluster.out("srun --gres=gpu:2 nvidia-smi -L").splitlines()
    assert [line.split(":")[0] for line in inside] == ["GPU 0", "GPU 1"]
    assert len(cluster.out("nvidia-smi -L").splitlines()) == 8  # the login itself sees the whole node
    batch = cluster.out(
        "sbatch --wait --gres=gpu:3 -o /root/job.out --wrap 'nvidia-smi -L' >/dev/null; cat /root/job.out"
    )
    assert len(batch.splitlines()) == 3


@needs_slurm
def test_systemctl_acts_on_the_real_slurmd(cluster: NodeShell) -> None:
    assert cluster.out("systemctl stop slurmd; sleep 1; pgrep -x slurmd || echo gone").strip() == "gone"
    assert "inactive (dead)" in cluster.run("systemctl status slurmd").stdout
    pid = cluster.out("systemctl start slurmd; sleep 2; systemctl show -p MainPID --value slurmd").strip()
    assert cluster.out("pgrep -x slurmd").strip() == pid
    assert cluster.out("sinfo -h -o %t").strip() == "idle"


@needs_slurm
def test_systemctl_stop_returns_once_the_daemons_have_exited(cluster: NodeShell) -> None:
    # as systemd's stop job waits for the unit's main process: a slurmctld still saving its state, or a slurmd
    # still answering the controller with the old configuration, never overlaps the instance started next
    before = cluster.out("pgrep -x slurmctld | head -1").strip()
    assert cluster.out("systemctl stop slurmd slurmctld; pgrep -x slurmctld; pgrep -x slurmd; echo $?").split() == ["1"]
    cluster.out(f"systemctl start slurmctld slurmd; {SETTLED}")
    assert cluster.out("pgrep -x slurmctld | head -1").strip() not in ("", before)
    cluster.out(f"systemctl restart slurmd; {SETTLED}")
    assert cluster.out("pgrep -cx slurmd").strip() == "1"  # one slurmd, never two
    assert cluster.out("sinfo -h -o %t").strip() == "idle"


def _slurm_results(spec: str) -> dict[str, Result]:
    from assessor.checks import get, run_check
    from assessor.parsers.assemble import facts_from_snapshot
    from assessor.targets.mock import MockTarget

    facts = facts_from_snapshot(MockTarget.open(spec).snapshot(timeout=60))
    return {c: run_check(get(c), facts, {}) for c in ("slurm.node_state", "slurm.gres")}


@needs_slurm
def test_the_grader_reads_slurms_view_and_errs_when_the_node_is_down(cluster: NodeShell) -> None:
    spec = f"mock:{cluster.state}"
    up = _slurm_results(spec)
    assert up["slurm.node_state"].status == "pass", up
    assert up["slurm.gres"].status == "pass", up
    cluster.out("scontrol update nodename=gpu-node-07 state=drain reason='DIMM swap'")
    drained = _slurm_results(spec)["slurm.node_state"]
    assert drained.status == "fail" and "IDLE+DRAIN (DIMM swap)" in drained.message, drained
    cluster.out("scontrol update nodename=gpu-node-07 state=resume")
    cluster.stop()
    down = _slurm_results(spec)
    assert {r.status for r in down.values()} == {"error"}, down
    assert "scontrol show node -o exited 1" in down["slurm.node_state"].message
    cluster.out("sleep 2")  # booted again for any test after this one
