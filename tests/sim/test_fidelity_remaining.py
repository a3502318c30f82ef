"""Golden and behaviour tests for the audit rows 13, 15, 27, 29 and 30 (issue #23; docs/FIDELITY.md).

Each golden test compares the simulator with a real capture in tests/data/corpus (its source in SOURCES.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from assessor.sim.faults import FAULTS
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState, save_state
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.corpus import read_corpus


def run(state: NodeState, *argv: str, code: int = 0) -> str:
    result = run_tool(list(argv), Session(state=state))
    assert result.exit_code == code, result.stdout + result.stderr
    return result.stdout


def on_file(tmp_path: Path, fixture: str) -> Session:
    path = tmp_path / "node.json"
    save_state(load_fixture(fixture, in_use=True), path)
    return Session(path=path)


def run_on(session: Session, *argv: str) -> ToolResult:
    return run_tool(list(argv), session)


# ---------------------------------------------------------------- row 13: reset on an Ampere NVSwitch system


def test_the_fabric_manager_running_does_not_keep_an_a100_from_a_single_gpu_reset(tmp_path: Path) -> None:
    # nvidia-smi(1), -r: "On Ampere NVSwitch systems, Fabric Manager is required to facilitate reset" and, with
    # it running, "Each GPU can be reset individually". Only what holds the GPU is drained here.
    session = on_file(tmp_path, "dgx-a100")
    assert run_on(session, "systemctl", "stop", "nvidia-persistenced", "nvidia-dcgm").exit_code == 0
    assert run_on(session, "modprobe", "-r", "nvidia_drm").exit_code == 0
    assert session.read().services["nvidia-fabricmanager.service"].active_state == "active"
    out = run_on(session, "nvidia-smi", "-i", "3", "-r")
    assert (out.exit_code, out.stdout.splitlines()[-1]) == (0, "All done.")
    # the fabric manager re-registers the reset GPU: nothing waits In Progress
    assert {g.fabric_state for g in session.read().gpus} <= {"Completed", None}


def test_an_a100_mig_mode_change_applies_with_the_fabric_manager_running(tmp_path: Path) -> None:
    # MIG User Guide / DGX A100 User Guide: stop the daemons that hold the GPU (nvsm, DCGM), not the fabric manager
    session = on_file(tmp_path, "dgx-a100")
    run_on(session, "systemctl", "stop", "nvidia-persistenced", "nvidia-dcgm")
    run_on(session, "modprobe", "-r", "nvidia_drm")
    out = run_on(session, "nvidia-smi", "-i", "0", "-mig", "1")
    assert out.stdout.startswith("Enabled MIG Mode for GPU"), out.stdout
    assert session.read().gpu(0).mig_mode_current is True


def _drained_without_the_fabric_manager(tmp_path: Path, fixture: str) -> Session:
    session = on_file(tmp_path, fixture)
    assert (
        run_on(session, "systemctl", "stop", "nvidia-persistenced", "nvidia-dcgm", "nvidia-fabricmanager").exit_code
        == 0
    )
    assert run_on(session, "modprobe", "-r", "nvidia_drm").exit_code == 0
    return session


def test_without_the_fabric_manager_a_single_a100_reset_is_refused_naming_its_nvlink_peers(tmp_path: Path) -> None:
    # nvidia-smi(1), -r: without Fabric Manager "any GPUs with NVLink connections to a GPU being reset must also be
    # reset in the same command [...] this command will issue an error identifying the additional GPUs".
    session = _drained_without_the_fabric_manager(tmp_path, "dgx-a100")
    with session.update() as s:
        s.gpu(3).ecc.volatile_corrected = 5  # a reset would clear it
    out = run_on(session, "nvidia-smi", "-r", "-i", "3")
    assert out.exit_code == 255
    lines = out.stdout.splitlines()
    assert lines[:2] == [
        "The following GPUs could not be reset:",
        "  GPU 00000000:4E:00.0: Fabric Manager is not running",
    ]
    others = [g.bus_id for g in session.read().gpus if g.index != 3]
    assert lines[-7:] == [f"  GPU {bus}" for bus in others]
    assert session.read().gpu(3).ecc.volatile_corrected == 5  # nothing was reset
    half = run_on(session, "nvidia-smi", "-r", "-i", "0,1,2,3")
    assert half.exit_code == 255 and half.stdout.splitlines()[-4:] == [f"  GPU {bus}" for bus in others[3:]]


def test_without_the_fabric_manager_every_a100_resets_in_one_command(tmp_path: Path) -> None:
    session = _drained_without_the_fabric_manager(tmp_path, "dgx-a100")
    for argv in (["nvidia-smi", "-r"], ["nvidia-smi", "-r", "-i", "0,1,2,3,4,5,6,7"]):
        out = run_on(session, *argv)
        assert out.exit_code == 0, out.stdout
        assert out.stdout.splitlines()[-1] == "All done."
        assert sum("was successfully reset." in line for line in out.stdout.splitlines()) == 8
    # each reset GPU waits for the fabric manager to register it again
    assert {g.fabric_state for g in session.read().gpus} == {"In Progress"}
    assert run_on(session, "systemctl", "start", "nvidia-fabricmanager").exit_code == 0
    assert {g.fabric_state for g in session.read().gpus} == {"Completed"}


def test_from_hopper_on_a_single_gpu_resets_without_the_fabric_manager(tmp_path: Path) -> None:
    # nvidia-smi(1): "On Hopper and later NVSwitch systems, the dependency on Fabric Manager to facilitate reset
    # is removed."
    session = _drained_without_the_fabric_manager(tmp_path, "hgx-h100")
    out = run_on(session, "nvidia-smi", "-r", "-i", "3")
    assert out.exit_code == 0, out.stdout
    assert session.read().gpu(3).fabric_state == "In Progress"  # registered again once the fabric manager runs


# ---------------------------------------------------------------- row 15: A30 2g.12gb+me from R525


def test_a30_lgip_and_lgipp_at_535_are_the_captures(tmp_path: Path) -> None:
    state = load_fixture("a30")
    assert int(state.driver.version.split(".")[0]) >= 525
    run(state, "nvidia-smi", "-i", "0", "-mig", "1")
    lgip = run(state, "nvidia-smi", "mig", "-i", "0", "-lgip")
    assert lgip == read_corpus("nvml/mig_lgip_A30_535_with_2g12gb_me.txt")
    lgipp = run(state, "nvidia-smi", "mig", "-i", "0", "-lgipp")
    assert lgipp == read_corpus("nvml/mig_lgipp_A30_535_with_2g12gb_me.txt")


def test_a30_has_one_media_extension_for_its_two_me_profiles() -> None:
    state = load_fixture("a30")
    run(state, "nvidia-smi", "-i", "0", "-mig", "1")
    out = run(state, "nvidia-smi", "mig", "-i", "0", "-cgi", "2g.12gb+me", "-C")
    assert "using profile MIG 2g.12gb+me (ID  6)" in out
    refused = run_tool(["nvidia-smi", "mig", "-i", "0", "-cgi", "1g.6gb+me"], Session(state=state))
    assert refused.exit_code != 0 and "Insufficient Resources" in refused.stdout + refused.stderr
    # the other half of the GPU still takes a plain 2g
    assert "using profile MIG 2g.12gb (ID  5)" in run(state, "nvidia-smi", "mig", "-i", "0", "-cgi", "5")


# ---------------------------------------------------------------- row 27: xid-48 marks a row for remapping


def test_xid_48_on_an_a100_marks_a_row_for_remapping_until_the_gpu_is_reset(tmp_path: Path) -> None:
    session = on_file(tmp_path, "dgx-a100")
    with session.update() as state:
        FAULTS["xid-48"].apply(state, gpu=2)
    dmesg = run_on(session, "dmesg").stdout
    # the Xid catalogue's Xid 63 text (corpus xid_catalog), right after the Xid 48
    xids = re.findall(r"NVRM: Xid \(PCI:[^)]+\): (\d+), .*", dmesg)
    assert xids[-2:] == ["48", "63"]
    assert "Row Remapper: New row (0x" in dmesg and "marked for remapping, reset gpu to activate." in dmesg
    q = run_on(session, "nvidia-smi", "-i", "2", "-q", "-d", "ROW_REMAPPER").stdout
    assert re.search(r"Uncorrectable Error\s+: 1", q) and re.search(r"Pending\s+: Yes", q), q
    for step in (["systemctl", "stop", "nvidia-persistenced", "nvidia-dcgm"], ["modprobe", "-r", "nvidia_drm"]):
        run_on(session, *step)
    assert run_on(session, "nvidia-smi", "-i", "2", "-r").exit_code == 0
    q = run_on(session, "nvidia-smi", "-i", "2", "-q", "-d", "ROW_REMAPPER").stdout
    assert re.search(r"Pending\s+: No", q), q


# ---------------------------------------------------------------- row 29: systemctl status of a forking unit


def test_systemctl_status_nvidia_persistenced_has_the_lines_of_a_real_forking_unit() -> None:
    from assessor.parsers.services import parse

    real = read_corpus("systemctl_status/06_persistenced_active_running_forking_process_line.txt").splitlines()
    ours = run(load_fixture("hgx-h100"), "systemctl", "status", "nvidia-persistenced").splitlines()

    def shape(line: str) -> str:
        # the field names and what systemd writes around the values, without the node's values
        line = re.sub(r"since .*", "since TIME", line)
        line = re.sub(r"^\S+ \d+ [\d:]+ \S+ ", "DATE HOST ", line)
        line = re.sub(r"ExecStart=.* \(code", "ExecStart=CMD (code", line)  # the unit's command line
        line = re.sub(r"└─(\d+) .*", r"└─\1 CMD", line)
        return re.sub(r"\d+", "9", line).rstrip()

    assert [shape(line) for line in ours] == [shape(line) for line in real]
    process = next(line for line in ours if "Process:" in line)
    main = next(line for line in ours if "Main PID:" in line)
    assert int(process.split()[1]) < int(main.split()[2])  # the launcher exited; its child is the daemon
    # gpulab's own parser still reads it (and the capture)
    for text in (ours, real):
        services = parse("\n".join(text)).services or []
        assert [(s.name, s.active_state) for s in services][:1] == [("nvidia-persistenced.service", "active")]


# ---------------------------------------------------------------- row 30: idle memory


def test_an_idle_l40s_at_550_uses_1_mib_as_the_capture() -> None:
    state = load_fixture("pcie-l40s")
    out = run(state, "nvidia-smi")
    assert re.search(r"\|\s+1MiB /\s+46068MiB \|", out), out
    assert run(state, "nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader").splitlines()[0] == "1 MiB"


def test_a30_mig_devices_have_the_memory_a_real_a30_shows() -> None:
    """The MIG devices box of a real A30 at 535.183.01 (2g.12gb 11968 MiB, 1g.6gb 5952 MiB), same layout."""
    real = read_corpus("nvml/nvidia_smi_default_A30_535_mig_idle.txt")
    state = load_fixture("a30")
    run(state, "nvidia-smi", "-i", "0", "-mig", "1")
    run(state, "nvidia-smi", "mig", "-i", "0", "-cgi", "2g.12gb,1g.6gb,1g.6gb", "-C")
    box = run(state, "nvidia-smi")
    row = r"^\| +\d+ +\d+ +\d+ +\d+ +\| +\d+MiB / +(\d+)MiB +\|"  # a MIG device's first line

    def sizes(text: str) -> list[str]:
        return sorted(re.findall(row, text, flags=re.M))

    assert sizes(box) == sizes(real) == ["11968", "5952", "5952"]


# An idle MIG device's first line in the MIG devices box: GPU, GI, CI, MIG dev, used / total.
_MIG_ROW = re.compile(r"^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|\s+(\d+)MiB /\s+(\d+)MiB", re.M)
# The GPU's memory cell in MIG mode (GPU-Util N/A).
_GPU_MEMORY = re.compile(r"\|\s+(\d+)MiB /\s+(\d+)MiB \|\s+N/A\s")


def _mig_memory(table: str) -> tuple[list[tuple[int, int, int]], list[int]]:
    """(GI, used MiB, total MiB) of each MIG device, and the used MiB of each MIG-mode GPU, of a default table."""
    devices = [(int(m[1]), int(m[4]), int(m[5])) for m in _MIG_ROW.findall(table)]
    return sorted(devices), [int(m[0]) for m in _GPU_MEMORY.findall(table)]


def _partitioned(fixture: str, profiles: str) -> NodeState:
    state = load_fixture(fixture)
    run(state, "nvidia-smi", "-i", "0", "-mig", "1")
    run(state, "nvidia-smi", "mig", "-i", "0", "-cgi", profiles, "-C")
    return state


def test_idle_mig_devices_of_an_a30_use_the_memory_of_the_capture() -> None:
    """A30 at 535.183.01: 25 MiB in a 2g.12gb, 12 MiB in each 1g.6gb, 50 MiB on the GPU."""
    real = _mig_memory(read_corpus("nvml/nvidia_smi_default_A30_535_mig_idle.txt"))
    ours = _mig_memory(run(_partitioned("a30", "2g.12gb,1g.6gb,1g.6gb"), "nvidia-smi", "-i", "0"))
    assert real == ([(2, 25, 11968), (3, 12, 5952), (4, 12, 5952)], [50])
    assert ours == real


def test_idle_mig_devices_of_an_h100_nvl_use_the_memory_of_the_capture() -> None:
    """H100 NVL at 560.35.03 after ``-cgi 9,15,19 -C``: 38 MiB in the 3g.47gb, 13 in each 1g, 64 on the GPU."""
    real = _mig_memory(read_corpus("nvml/nvidia_smi_mig_devices_H100_NVL.txt"))
    ours = _mig_memory(run(_partitioned("h100-nvl", "9,15,19"), "nvidia-smi", "-i", "0"))
    assert real == ([(1, 38, 47488), (5, 13, 22144), (13, 13, 11008)], [64])
    assert ours == real


def test_nvml_reports_the_mig_memory_the_table_prints() -> None:
    """pynvml's nvmlDeviceGetMemoryInfo on the GPU and on each MIG device, and --query-gpu, agree with the box."""
    import pynvml

    from assessor.sim.mock_nvml import MockNvml

    state = _partitioned("a30", "2g.12gb,1g.6gb,1g.6gb")
    devices, (gpu_used,) = _mig_memory(run(state, "nvidia-smi", "-i", "0"))
    mib = 1024 * 1024
    nvml = MockNvml(state)
    nvml.nvmlInit()
    try:
        gpu = nvml.nvmlDeviceGetHandleByIndex(0)
        # v2 (R510+): reserved apart, as nvidia-smi prints it
        assert nvml.nvmlDeviceGetMemoryInfo(gpu, version=pynvml.nvmlMemory_v2).used // mib == gpu_used == 50
        seen = []
        for index in range(nvml.nvmlDeviceGetMaxMigDeviceCount(gpu)):
            try:
                handle = nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, index)
            except pynvml.NVMLError_NotFound:
                continue
            info = nvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
            assert nvml.nvmlDeviceGetMemoryInfo(handle).used == info.used  # nothing reserved on a MIG device
            seen.append((nvml.nvmlDeviceGetGpuInstanceId(handle), info.used // mib, info.total // mib))
    finally:
        nvml.nvmlShutdown()
    assert sorted(seen) == devices
    used = run(state, "nvidia-smi", "-i", "0", "--query-gpu=memory.used", "--format=csv,noheader,nounits")
    assert used.strip() == "50"


def test_a_job_on_a_mig_device_adds_to_its_idle_memory() -> None:
    from assessor.sim.state import GpuProcess

    state = _partitioned("a30", "2g.12gb,1g.6gb,1g.6gb")
    gpu = state.gpu(0)
    gpu.processes.append(GpuProcess(pid=4242, name="python3", used_memory_mib=1000, gi_id=3, ci_id=0))
    gpu.memory_used_mib += 1000
    devices, gpus = _mig_memory(run(state, "nvidia-smi", "-i", "0"))
    assert devices == [(2, 25, 11968), (3, 1012, 5952), (4, 12, 5952)]
    assert gpus == [1050]


def test_mig_mode_without_instances_adds_nothing() -> None:
    state = load_fixture("a30")
    run(state, "nvidia-smi", "-i", "0", "-mig", "1")
    assert _mig_memory(run(state, "nvidia-smi", "-i", "0")) == ([], [state.gpu(0).memory_used_mib])
