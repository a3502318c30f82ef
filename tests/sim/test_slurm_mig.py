"""MIG devices as Slurm GRES on the simulated node: the capability files, slurmd's device order, a job's view.

In-process: the node's ``/dev/nvidia-caps`` and ``/proc/driver/nvidia/capabilities`` files for its MIG instances
(minors from the driver's table), the order slurmd gives its GPU devices (``slurm.conf``'s ``Gres=`` order, then
``gres.conf``'s, as the real slurmd 22.05 does), what a tool inside a job sees, the typed files written for a
split node, and ``slurm.gres`` with ``mig_types``. On one running node (booted once): the real slurmd accepts
the ``MultipleFiles=`` lines, slurmctld shows the typed GRES, and ``srun --gres=gpu:1g.10gb:1 nvidia-smi -L``
lists the GPU with one MIG device.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assessor.checks import get, run_check
from assessor.facts import ComputeInstance, Gpu, GpuInstance, NodeFacts, SlurmNode
from assessor.sim import faults
from assessor.sim.config_root import ROOT_ENV, root_for_state, write_node_file
from assessor.sim.fixtures import load_fixture
from assessor.sim.mig_caps import cap_device_files, proc_files, write_proc_files
from assessor.sim.slurm_node import GRES_CONF, SLURM_CONF, missing_binaries
from assessor.sim.slurm_node.config import gres_conf, slurm_conf
from assessor.sim.slurm_node.gres import gpu_devices
from assessor.sim.slurm_node.jobs import job_view
from assessor.sim.state import NodeState, load_state
from tests.support.nodeshell import NodeShell, node_shell

MISSING = missing_binaries()


def _split() -> NodeState:
    """An HGX H100 whose GPU 6 holds seven 1g.10gb (GI 7-13) and GPU 7 two 3g.40gb (GI 1-2)."""
    state = load_fixture("hgx-h100", host="gpu-node-07")
    faults.FAULTS["slurm-mig-untyped"].apply(state)
    return state


def test_the_capability_files_follow_the_drivers_minor_table() -> None:
    state = _split()
    files = proc_files(state)
    assert files["nvidia/capabilities/gpu6/mig/gi7/access"] == (
        "DeviceFileMinor: 876\nDeviceFileMode: 292\nDeviceFileModify: 1\n"
    )
    assert files["nvidia/capabilities/gpu7/mig/gi2/ci0/access"].startswith("DeviceFileMinor: 967\n")
    assert files["nvidia/capabilities/mig/config"].startswith("DeviceFileMinor: 1\nDeviceFileMode: 256\n")
    minors = files["nvidia-caps/mig-minors"].splitlines()
    assert minors[:3] == ["config 1", "monitor 2", "gpu0/gi0/access 3"] and "gpu6/gi7/ci0/access 877" in minors
    assert not any("gpu5/" in path for path in files)  # whole GPUs have no instance capabilities
    devices = cap_device_files(state)
    assert devices[:2] == ["/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia-caps/nvidia-cap2"] and len(devices) == 2 + 18
    state.driver.loaded = False
    assert proc_files(state) == {} and cap_device_files(state) == []


def test_a_destroyed_instance_takes_its_proc_folder_with_it(tmp_path: Path) -> None:
    state = _split()
    write_proc_files(tmp_path, state)
    assert (tmp_path / "nvidia/capabilities/gpu7/mig/gi2/ci0/access").is_file()
    state.gpus[7].mig_instances = [gi for gi in state.gpus[7].mig_instances if gi.gi_id != 2]
    write_proc_files(tmp_path, state)
    assert not (tmp_path / "nvidia/capabilities/gpu7/mig/gi2").exists()
    assert (tmp_path / "nvidia/capabilities/gpu7/mig/gi1/ci0/access").is_file()
    state.driver.loaded = False
    write_proc_files(tmp_path, state)
    assert not (tmp_path / "nvidia/capabilities").exists() and not (tmp_path / "nvidia-caps").exists()


GRES = """# whole GPUs after the MIG devices, on purpose
Name=gpu Type=3g.40gb MultipleFiles=/dev/nvidia7,/dev/nvidia-caps/nvidia-cap966,/dev/nvidia-caps/nvidia-cap967
Name=gpu Type=h100 File=/dev/nvidia[0-1]
NodeName=other Name=gpu Type=h100 File=/dev/nvidia9
Name=gpu Type=3g.40gb MultipleFiles=/dev/nvidia7,/dev/nvidia-caps/nvidia-cap957,/dev/nvidia-caps/nvidia-cap958
"""


def test_slurmd_orders_its_gpu_devices_by_slurm_confs_gres_then_gres_conf() -> None:
    typed = gpu_devices(GRES, "NodeName=n1 Gres=gpu:h100:2,gpu:3g.40gb:2\n", "n1")
    assert [(d.type, d.files[-1]) for d in typed] == [
        ("h100", "/dev/nvidia0"),
        ("h100", "/dev/nvidia1"),
        ("3g.40gb", "/dev/nvidia-caps/nvidia-cap967"),  # gres.conf's order within a type, not sorted
        ("3g.40gb", "/dev/nvidia-caps/nvidia-cap958"),
    ]
    assert typed[2].files == ("/dev/nvidia7", "/dev/nvidia-caps/nvidia-cap966", "/dev/nvidia-caps/nvidia-cap967")
    # an untyped gpu:N takes the records in gres.conf's order; one beyond the count is cut, the rest dropped
    untyped = gpu_devices(GRES, "NodeName=n1 Gres=gpu:2\n", "n1")
    assert [d.files[-1] for d in untyped] == ["/dev/nvidia-caps/nvidia-cap967", "/dev/nvidia0"]
    # a type slurm.conf does not name is no device; without slurm.conf every record counts, in order
    assert [d.type for d in gpu_devices(GRES, "NodeName=n1 Gres=gpu:3g.40gb:2\n", "n1")] == ["3g.40gb"] * 2
    assert len(gpu_devices(GRES, None, "n1")) == 4


def _job(state: NodeState, root: Path, gpus: str) -> NodeState:
    return job_view(state, {"SLURM_JOB_ID": "9", "SLURM_STEP_GPUS": gpus, ROOT_ENV: str(root)})


def test_a_job_sees_only_its_mig_devices(tmp_path: Path) -> None:
    state = _split()
    write_node_file(tmp_path, GRES_CONF, gres_conf(state))
    write_node_file(tmp_path, SLURM_CONF, slurm_conf(state))
    # indices: h100 0-5, 1g.10gb 6-12 (GI 7-13), 3g.40gb 13-14 (GI 1-2)
    one = _job(state, tmp_path, "6")
    assert [(g.index, g.uuid) for g in one.gpus] == [(0, state.gpus[6].uuid)]
    assert [(gi.gi_id, [ci.ci_id for ci in gi.compute_instances]) for gi in one.gpus[0].mig_instances] == [(7, [0])]
    two = _job(state, tmp_path, "13,14")
    assert [gi.name for g in two.gpus for gi in g.mig_instances] == ["3g.40gb", "3g.40gb"]
    assert two.gpus[0].uuid == state.gpus[7].uuid
    whole = _job(state, tmp_path, "0,5")
    assert [g.minor_number for g in whole.gpus] == [0, 5]
    # the GPU's device file alone (File=/dev/nvidia6 on a MIG GPU): the GPU, none of its MIG devices
    write_node_file(tmp_path, GRES_CONF, "Name=gpu File=/dev/nvidia[0-7]\n")
    write_node_file(tmp_path, SLURM_CONF, "NodeName=gpu-node-07 Gres=gpu:8\n")
    bare = _job(state, tmp_path, "6")
    assert [g.uuid for g in bare.gpus] == [state.gpus[6].uuid] and bare.gpus[0].mig_instances == []
    assert len(state.gpus[6].mig_instances) == 7  # the node's own record is untouched


def test_a_split_node_gets_typed_gres_files() -> None:
    state = _split()
    lines = gres_conf(state).splitlines()
    assert "Name=gpu Type=h100 File=/dev/nvidia[0-5]" in lines
    assert (
        "Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia6,/dev/nvidia-caps/nvidia-cap876,/dev/nvidia-caps/nvidia-cap877"
        in lines
    )
    assert sum(line.startswith("Name=gpu Type=3g.40gb MultipleFiles=/dev/nvidia7,") for line in lines) == 2
    assert "NodeName=gpu-node-07 Gres=gpu:h100:6,gpu:1g.10gb:7,gpu:3g.40gb:2 State=UNKNOWN" in slurm_conf(state)


def _mig_facts(gres: str) -> NodeFacts:
    gpus = [Gpu(index=i, mig_mode_current=i == 1) for i in range(2)]
    instances = [
        GpuInstance(gpu=1, gi_id=7 + i, profile_id=19, name="1g.10gb", compute_instances=[ComputeInstance(ci_id=0)])
        for i in range(3)
    ]
    instances.append(
        GpuInstance(gpu=1, gi_id=2, profile_id=14, name="2g.20gb", compute_instances=[ComputeInstance(ci_id=0)])
    )
    node = SlurmNode(name="n1", state="IDLE", reason=None, gres=gres)
    return NodeFacts(gpus=gpus, mig_instances=instances, slurm_nodes=[node])


@pytest.mark.parametrize(
    ("gres", "status"),
    [
        ("gpu:h100:1,gpu:1g.10gb:3,gpu:2g.20gb:1", "pass"),
        ("gpu:1,gpu:1g.10gb:3,gpu:2g.20gb:1", "pass"),  # the whole GPU untyped: any type will do
        ("gpu:5", "fail"),  # the right count, but no type a job can ask for
        ("gpu:h100:1,gpu:1g.10gb:4", "fail"),  # 1g.10gb counted for the 2g.20gb
        ("gpu:h100:2", "fail"),
    ],
)
def test_slurm_gres_with_mig_types_wants_one_type_per_profile(gres: str, status: str) -> None:
    result = run_check(get("slurm.gres"), _mig_facts(gres), {"mig_types": True})
    assert result.status == status, result.message
    assert run_check(get("slurm.gres"), _mig_facts(gres), {}).status == ("fail" if gres == "gpu:h100:2" else "pass")


def test_a_mig_gpu_without_any_listing_of_its_devices_is_missing_data_not_a_whole_gpu() -> None:
    facts = _mig_facts("gpu:2")
    facts.mig_instances = None
    result = run_check(get("slurm.gres"), facts, {})
    assert result.status == "skip" and "GPU 1 in MIG mode, but no listing of its MIG devices" in result.message


@pytest.fixture(scope="module")
def split_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeShell]:
    if MISSING:
        pytest.skip(f"Slurm is not installed here (missing: {', '.join(MISSING)})")
    with node_shell(tmp_path_factory.mktemp("slurm-mig")) as shell:
        faults.inject(shell.state, "slurm-mig-untyped")
        # the fault's cure: Slurm's files written for the split node (typed GRES, MultipleFiles=)
        faults.FAULTS["slurm-mig-untyped"].remove_cause(load_state(shell.state), root_for_state(shell.state))
        shell.out("sleep 2")  # boots the node; its slurmd registers
        yield shell


@pytest.mark.skipif(bool(MISSING), reason=f"Slurm is not installed here (missing: {', '.join(MISSING)})")
def test_slurm_schedules_the_mig_devices_as_typed_gres(split_cluster: NodeShell) -> None:
    caps = split_cluster.out("cat /proc/driver/nvidia/capabilities/gpu6/mig/gi7/access; ls /dev/nvidia-caps")
    assert caps.startswith("DeviceFileMinor: 876\n") and "nvidia-cap877\n" in caps
    node = split_cluster.out("scontrol show node -o")
    assert "Gres=gpu:h100:6,gpu:1g.10gb:7,gpu:3g.40gb:2 " in node and "State=IDLE " in node, node
    one = split_cluster.out("srun --gres=gpu:1g.10gb:1 nvidia-smi -L").splitlines()
    assert len(one) == 2 and one[0].startswith("GPU 0: NVIDIA H100") and one[1].startswith("  MIG 1g.10gb "), one
    two = split_cluster.out("srun --gres=gpu:3g.40gb:2 nvidia-smi -L").splitlines()
    assert [line.split("Device")[0].split() for line in two[1:]] == [["MIG", "3g.40gb"]] * 2 and len(two) == 3
    whole = split_cluster.out("srun --gres=gpu:h100:6 nvidia-smi -L").splitlines()
    assert len(whole) == 6 and not any("MIG" in line for line in whole)
