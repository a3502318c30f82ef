"""A simulated node under a candidate's hands: GPUs in use, processes, modules, units, reboot and the clock.

The messages are the real ones from public captures (cited in assessor/sim/tools/nvidia_smi.py and
assessor/sim/gpu_clients.py): NVIDIA/mig-parted#181, NVIDIA/gpu-operator#118 and #1845,
ComputeCanada/puppet-magic_castle#387, NVIDIA/NVSentinel#1690.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from assessor.parsers import nvidia_smi_xml
from assessor.sim import clock
from assessor.sim.fixtures import load_fixture
from assessor.sim.mock_nvml import MockNvml
from assessor.sim.state import GpuProcess, NodeState, ServiceState, save_state
from assessor.sim.tools import Session, ToolResult, run_tool
from assessor.sim.tools.system import main_pid
from tests.support.corpus import read_corpus

IN_USE = [
    "The following GPUs could not be reset:",
    "  GPU 00000000:07:00.0: In use by another client",
    "",
    "1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, "
    "graphics application such as an X server, or a monitoring application such as another instance of "
    "nvidia-smi). Please first kill all processes using this device and all compute applications running in "
    "the system.",
]
# What holds the GPUs; not the fabric manager, which a single-GPU reset of an A100 on NVSwitch needs running.
DRAIN = [
    ["systemctl", "stop", "nvidia-dcgm", "nvidia-persistenced"],
    ["modprobe", "-r", "nvidia_drm"],
]


def node(tmp_path: Path, fixture: str = "dgx-a100", *, in_use: bool = True) -> Session:
    path = tmp_path / "node.json"
    save_state(load_fixture(fixture, in_use=in_use), path)
    return Session(path=path)


def run(session: Session, *argv: str, euid: int = 0) -> ToolResult:
    return run_tool(list(argv), Session(session.state, session.path, session.env, euid))


def state(session: Session) -> NodeState:
    return session.read()


def add_job(session: Session, gpu: int, pid: int = 4242, unit: str | None = None) -> None:
    with session.update() as s:
        s.gpu(gpu).processes.append(GpuProcess(pid=pid, name="python3", used_memory_mib=30000, unit=unit))
        s.gpu(gpu).memory_used_mib += 30000
        if unit is not None:
            s.services[unit] = ServiceState(description="Training job")


# ---- a GPU in use ----------------------------------------------------------------------------


def test_reset_is_refused_with_the_real_message_while_daemons_hold_the_gpu(tmp_path: Path) -> None:
    session = node(tmp_path)
    out = run(session, "nvidia-smi", "-i", "0", "-r")
    assert out.exit_code == 255
    assert out.stdout.splitlines() == IN_USE


def test_reset_succeeds_after_the_documented_drain(tmp_path: Path) -> None:
    session = node(tmp_path)
    for step in DRAIN:
        assert run(session, *step).exit_code == 0, step
    out = run(session, "nvidia-smi", "-i", "0", "-r")
    assert (out.exit_code, out.stdout) == (0, "GPU 00000000:07:00.0 was successfully reset.\nAll done.\n")


@pytest.mark.parametrize(
    "left_running",
    [
        ["systemctl", "start", "nvidia-dcgm"],
        ["systemctl", "start", "nvidia-persistenced"],
        ["nvidia-smi", "-i", "0", "-pm", "1"],
        ["modprobe", "nvidia_drm"],
    ],
    ids=["dcgm", "persistenced", "legacy-persistence", "nvidia_drm"],
)
def test_each_holder_alone_keeps_the_reset_refused(tmp_path: Path, left_running: list[str]) -> None:
    session = node(tmp_path)
    for step in DRAIN:
        run(session, *step)
    assert run(session, *left_running).exit_code == 0
    assert run(session, "nvidia-smi", "-i", "0", "-r").exit_code == 255


def test_the_fabric_manager_does_not_hold_a_hopper_gpu(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    run(session, "systemctl", "stop", "nvidia-dcgm", "nvidia-persistenced")
    run(session, "modprobe", "-r", "nvidia_drm")
    assert state(session).services["nvidia-fabricmanager.service"].active_state == "active"
    assert run(session, "nvidia-smi", "-i", "0", "-r").exit_code == 0


def test_persistence_mode_off_on_the_gpu_releases_it_from_persistenced(tmp_path: Path) -> None:
    # NVIDIA/NVSentinel#1690: `nvidia-smi -pm 0 -i <gpu>` was enough for the reset to succeed.
    session = node(tmp_path, "hgx-h100")
    run(session, "systemctl", "stop", "nvidia-dcgm")
    run(session, "modprobe", "-r", "nvidia_drm")
    assert run(session, "nvidia-smi", "-i", "2", "-r").exit_code == 255
    assert run(session, "nvidia-smi", "-i", "2", "-pm", "0").exit_code == 0
    assert run(session, "nvidia-smi", "-i", "2", "-r").exit_code == 0


def test_a_lenient_node_still_refuses_while_a_compute_process_runs(tmp_path: Path) -> None:
    session = node(tmp_path, in_use=False)
    assert run(session, "nvidia-smi", "-i", "0", "-r").exit_code == 0
    add_job(session, 0)
    assert run(session, "nvidia-smi", "-i", "0", "-r").stdout.splitlines() == IN_USE


def test_mig_enable_on_a_busy_a100_stays_pending_and_applies_at_the_reset(tmp_path: Path) -> None:
    session = node(tmp_path)
    out = run(session, "nvidia-smi", "-i", "0", "-mig", "1")
    # NVIDIA/gpu-operator#118 and #1845 (an A100 on 580.65.06)
    assert out.stdout.splitlines() == [
        "Warning: MIG mode is in pending enable state for GPU 00000000:07:00.0:In use by another client",
        "00000000:07:00.0 is currently being used by one or more other processes (e.g. CUDA application or a "
        "monitoring application such as another instance of nvidia-smi). Please first kill all processes using "
        "the device and retry the command or reboot the system to make MIG mode effective.",
        "All done.",
    ]
    gpu = nvidia_smi_xml.parse(run(session, "nvidia-smi", "-i", "0", "-q", "-x").stdout).gpus[0]  # type: ignore[index]
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (False, True)
    assert run(session, "nvidia-smi", "mig", "-i", "0", "-cgi", "9", "-C").exit_code != 0
    for step in DRAIN:
        run(session, *step)
    assert run(session, "nvidia-smi", "-i", "0", "-r").exit_code == 0
    assert (state(session).gpu(0).mig_mode_current, state(session).gpu(0).mig_mode_pending) == (True, True)
    assert run(session, "nvidia-smi", "mig", "-i", "0", "-cgi", "9", "-C").exit_code == 0


def test_mig_enable_on_an_idle_a100_applies_at_once(tmp_path: Path) -> None:
    session = node(tmp_path)
    for step in DRAIN:
        run(session, *step)
    out = run(session, "nvidia-smi", "-i", "0", "-mig", "1")
    assert out.stdout.splitlines()[0] == "Enabled MIG Mode for GPU 00000000:07:00.0"
    assert state(session).gpu(0).mig_mode_current is True


def test_hopper_applies_mig_mode_with_daemons_running_but_not_under_a_compute_job(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    assert run(session, "nvidia-smi", "-i", "0", "-mig", "1").stdout.startswith("Enabled MIG Mode for GPU")
    add_job(session, 1)
    out = run(session, "nvidia-smi", "-i", "1", "-mig", "1")
    assert out.stdout.startswith("Warning: MIG mode is in pending enable state for GPU 00000000:2A:00.0:In use")
    assert (state(session).gpu(1).mig_mode_current, state(session).gpu(1).mig_mode_pending) == (False, True)


def test_ecc_mode_change_is_pending_until_reset(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100", in_use=False)
    out = run(session, "nvidia-smi", "-i", "3", "-e", "0")
    assert out.stdout == "Disabled ECC support for GPU 00000000:5D:00.0.\nAll done.\nReboot required.\n"
    gpu = state(session).gpu(3)
    assert (gpu.ecc_mode_current, gpu.ecc_mode_pending) == (True, False)
    assert run(session, "nvidia-smi", "-i", "3", "-r").exit_code == 0
    assert state(session).gpu(3).ecc_mode_current is False
    assert run(session, "nvidia-smi", "-i", "3", "-e", "0", euid=1000).exit_code == 4


# ---- compute processes -----------------------------------------------------------------------


def test_a_compute_process_shows_in_the_table_the_query_and_nvml(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    add_job(session, 1, pid=5150)
    table = run(session, "nvidia-smi").stdout
    assert "|    1   N/A  N/A      5150      C   python3" in table
    query = run(session, "nvidia-smi", "--query-compute-apps=pid,process_name,used_memory,gpu_bus_id", "--format=csv")
    assert query.stdout.splitlines() == [
        "pid, process_name, used_memory [MiB], gpu_bus_id",
        "5150, python3, 30000 MiB, 00000000:2A:00.0",
    ]
    bare = run(session, "nvidia-smi", "--query-compute-apps=pid,used_gpu_memory", "--format=csv,noheader,nounits")
    assert bare.stdout == "5150, 30000\n"
    nvml = MockNvml(path=session.path)
    nvml.nvmlInit()
    procs = nvml.nvmlDeviceGetComputeRunningProcesses(nvml.nvmlDeviceGetHandleByIndex(1))
    assert [(p.pid, p.usedGpuMemory) for p in procs] == [(5150, 30000 * 1024 * 1024)]


def test_query_compute_apps_refuses_an_unknown_field_and_a_missing_format(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    assert run(session, "nvidia-smi", "--query-compute-apps=pid,bogus", "--format=csv").stdout == (
        'Field "bogus" is not a valid field to query.\n\n'
    )
    assert run(session, "nvidia-smi", "--query-compute-apps=pid").exit_code == 2
    empty = run(session, "nvidia-smi", "--query-compute-apps=pid", "--format=csv")
    assert empty.stdout == "pid\n"


def test_kill_ends_a_compute_process_and_frees_its_gpu(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100", in_use=False)
    idle = state(session).gpu(2).memory_used_mib
    add_job(session, 2, pid=7001)
    assert run(session, "nvidia-smi", "-i", "2", "-r").exit_code == 255
    assert run(session, "kill", "7001", euid=1000).stderr == "kill: (7001): Operation not permitted\n"
    assert run(session, "kill", "-9", "7001").exit_code == 0
    assert state(session).gpu(2).processes == [] and state(session).gpu(2).memory_used_mib == idle
    assert run(session, "kill", "7001").stderr == "kill: (7001): No such process\n"
    assert run(session, "nvidia-smi", "-i", "2", "-r").exit_code == 0


def test_stopping_the_unit_of_a_job_ends_its_processes(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100", in_use=False)
    add_job(session, 0, pid=8100, unit="train.service")
    add_job(session, 1, pid=8101, unit="train.service")
    assert run(session, "systemctl", "stop", "train").exit_code == 0
    assert all(not g.processes for g in state(session).gpus)


def test_killing_a_daemons_main_pid_takes_its_unit_down(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    pid = main_pid(state(session), "nvidia-dcgm.service")
    assert f"Main PID: {pid} (nv-hostengine)" in run(session, "systemctl", "status", "nvidia-dcgm").stdout
    assert run(session, "kill", str(pid)).exit_code == 0
    assert run(session, "systemctl", "is-active", "nvidia-dcgm").stdout == "inactive\n"


def test_kill_without_a_pid_is_a_usage_error(tmp_path: Path) -> None:
    out = run(node(tmp_path), "kill")
    assert out.exit_code == 1 and out.stderr.startswith("kill: not enough arguments")


# ---- kernel modules ----------------------------------------------------------------------------


def test_modules_refuse_to_unload_until_daemons_stop_and_users_go(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    assert run(session, "modprobe", "-r", "nvidia").stderr == "modprobe: FATAL: Module nvidia is in use.\n"
    rm = run(session, "rmmod", "nvidia")
    assert rm.stderr == "rmmod: ERROR: Module nvidia is in use by: nvidia_uvm nvidia_peermem nvidia_modeset\n"
    run(session, "modprobe", "-r", "nvidia_drm", "nvidia_uvm", "nvidia_peermem")
    # Only the daemons' handles are left: lsmod counts them, the module stays.
    assert run(session, "rmmod", "nvidia").stderr == "rmmod: ERROR: Module nvidia is in use\n"
    assert state(session).module_loaded("nvidia")
    run(session, "systemctl", "stop", "nvidia-dcgm", "nvidia-persistenced", "nvidia-fabricmanager")
    assert run(session, "rmmod", "nvidia").exit_code == 0
    assert run(session, "nvidia-smi").exit_code == 9
    assert run(session, "rmmod", "nvidia").stderr == "rmmod: ERROR: Module nvidia is not currently loaded\n"


def test_the_driver_reloads_without_a_reboot_and_the_new_module_matches(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    with session.update() as s:
        s.driver.version = "565.77.01"  # packages upgraded, old module still loaded
    assert run(session, "nvidia-smi").exit_code == 18
    run(session, "systemctl", "stop", "nvidia-dcgm", "nvidia-persistenced", "nvidia-fabricmanager")
    assert run(session, "modprobe", "-r", "nvidia_drm", "nvidia_uvm", "nvidia_peermem").exit_code == 0
    assert not state(session).module_loaded("nvidia")  # modprobe -r took the unused dependencies too
    assert run(session, "modprobe", "nvidia_drm").exit_code == 0
    assert run(session, "modprobe", "nvidia_uvm").exit_code == 0
    after = state(session)
    assert after.driver.kernel_module_version == "565.77.01"
    assert {"nvidia", "nvidia_modeset", "nvidia_drm", "nvidia_uvm"} <= {m.name for m in after.modules}
    assert run(session, "nvidia-smi").exit_code == 0
    # NVSwitch GPUs wait for the fabric manager to register them again.
    assert {g.fabric_state for g in after.gpus} == {"In Progress"}
    assert run(session, "systemctl", "start", "nvidia-fabricmanager").exit_code == 0
    assert {g.fabric_state for g in state(session).gpus} == {"Completed"}


# ---- systemd ---------------------------------------------------------------------------------


def test_enable_disable_and_is_enabled(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    out = run(session, "systemctl", "disable", "nvidia-dcgm")
    assert out.stderr == "Removed /etc/systemd/system/multi-user.target.wants/nvidia-dcgm.service.\n"
    assert run(session, "systemctl", "is-enabled", "nvidia-dcgm").stdout == "disabled\n"
    assert run(session, "systemctl", "is-enabled", "nvidia-dcgm").exit_code == 1
    out = run(session, "systemctl", "enable", "--now", "nvidia-dcgm")
    assert out.stderr == (
        "Created symlink /etc/systemd/system/multi-user.target.wants/nvidia-dcgm.service → "
        "/lib/systemd/system/nvidia-dcgm.service.\n"
    )
    assert run(session, "systemctl", "is-enabled", "nvidia-dcgm").stdout == "enabled\n"
    assert run(session, "systemctl", "disable", "nvidia-dcgm", euid=1000).exit_code == 1


def test_list_units_shows_running_and_failed_units(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    run(session, "systemctl", "stop", "nvidia-dcgm")
    with session.update() as s:
        fm = s.services["nvidia-fabricmanager.service"]
        fm.active_state, fm.sub_state, fm.result = "failed", "failed", "exit-code"
    lines = run(session, "systemctl", "list-units", "--type=service").stdout.splitlines()
    assert lines[:4] == [
        "  UNIT                         LOAD   ACTIVE SUB     DESCRIPTION",
        "● nvidia-fabricmanager.service loaded failed failed  NVIDIA fabric manager service",
        "  nvidia-persistenced.service  loaded active running NVIDIA Persistence Daemon",
        "  openibd.service              loaded active exited  openibd - configure Mellanox devices",
    ]
    assert "3 loaded units listed. Pass --all to see loaded but inactive units, too." in lines
    every = run(session, "systemctl", "list-units", "--all").stdout
    assert "  nvidia-dcgm.service          loaded inactive dead    NVIDIA DCGM service" in every.splitlines()


def test_status_since_and_journal_follow_the_node_clock(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    running = run(session, "systemctl", "status", "nvidia-persistenced").stdout
    assert "Active: active (running) since Wed 2025-01-15 08:00:12 UTC; 2h 2min ago" in running
    run(session, "systemctl", "restart", "nvidia-persistenced")
    now = clock.now(state(session))
    restarted = run(session, "systemctl", "status", "nvidia-persistenced").stdout
    assert f"since {now.strftime('%a %Y-%m-%d %H:%M:%S')} UTC; 0s ago" in restarted
    journal = run(session, "journalctl", "-u", "nvidia-persistenced", "--no-pager").stdout.splitlines()
    assert journal[-1].endswith("systemd[1]: Started NVIDIA Persistence Daemon.")
    assert journal[-1].startswith(now.strftime("%b %d %H:%M:%S"))
    assert any("Stopped NVIDIA Persistence Daemon." in line for line in journal)


def test_journalctl_u_without_a_unit_is_an_argument_error(tmp_path: Path) -> None:
    out = run(node(tmp_path), "journalctl", "-u")
    assert (out.exit_code, out.stderr) == (1, "journalctl: option requires an argument -- 'u'\n")


def test_fabric_manager_log_and_journal(tmp_path: Path) -> None:
    session = node(tmp_path, "dgx-a100")
    log = run(session, "cat", "/var/log/fabricmanager.log").stdout.splitlines()
    assert log[0].startswith("[Jan 15 2025 08:00:12] [INFO] [tid ")
    assert log[-1].endswith("Successfully configured all the available GPUs and NVSwitches to route NVLink traffic.")
    journal = run(session, "journalctl", "-u", "nvidia-fabricmanager").stdout
    assert "nv-fabricmanager[" in journal and "Connected to 1 node." in journal
    # A driver upgraded without a reboot: the fabric manager refuses to start, its journal says why.
    with session.update() as s:
        s.driver.version = "535.161.03"
    run(session, "systemctl", "restart", "nvidia-fabricmanager")
    journal = run(session, "journalctl", "-u", "nvidia-fabricmanager").stdout
    assert "driver interface version 535.161.03 don't match with driver version 535.129.03" in journal
    assert "Failed to start NVIDIA fabric manager service." in journal


# ---- reboot ----------------------------------------------------------------------------------


def test_reboot_brings_back_enabled_units_and_resets_volatile_state(tmp_path: Path) -> None:
    session = node(tmp_path, "dgx-a100")
    add_job(session, 3, pid=9000)
    run(session, "nvidia-smi", "-i", "0", "-mig", "1")  # pending: the GPU is busy
    run(session, "nvidia-smi", "-i", "1", "-e", "0")
    run(session, "systemctl", "disable", "--now", "nvidia-dcgm")
    run(session, "systemctl", "stop", "nvidia-persistenced")
    with session.update() as s:
        s.driver.version = "535.161.03"  # upgraded without a reboot
        xid = "NVRM: Xid (PCI:0000:47:00): 79, GPU has fallen off the bus."
        s.kernel_log.append(f"[{clock.uptime(s) + 1:12.6f}] {xid}")
        s.gpu(2).lost = True
    before = clock.now(state(session))
    assert run(session, "reboot").exit_code == 0
    after = state(session)
    assert clock.boot_time(after) > before and clock.uptime(after) < 300
    assert run(session, "systemctl", "is-active", "nvidia-persistenced").stdout == "active\n"
    assert run(session, "systemctl", "is-active", "nvidia-dcgm").stdout == "inactive\n"
    assert all(not g.processes and not g.lost for g in after.gpus)
    assert (after.gpu(0).mig_mode_current, after.gpu(1).ecc_mode_current) == (True, False)
    assert after.driver.kernel_module_version == "535.161.03"
    assert not any("Xid" in line for line in after.kernel_log)
    assert after.kernel_log[0].startswith("[    0.000000] Linux version")
    assert all(g.persistence_mode for g in after.gpus)  # persistenced is enabled and started again
    assert {g.fabric_state for g in after.gpus} == {"Completed"}


def test_mig_instances_do_not_survive_a_reboot(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    run(session, "nvidia-smi", "-i", "0", "-mig", "1")
    assert run(session, "nvidia-smi", "mig", "-i", "0", "-cgi", "9", "-C").exit_code == 0
    run(session, "shutdown", "-r", "now")
    gpu = state(session).gpu(0)
    assert gpu.mig_mode_current is True and gpu.mig_instances == []


def test_reboot_needs_root_and_power_off_is_not_simulated(tmp_path: Path) -> None:
    session = node(tmp_path)
    boot = state(session).clock.boot_time
    denied = run(session, "reboot", euid=1000)
    assert denied.exit_code == 1 and "Interactive authentication required" in denied.stderr
    off = run(session, "shutdown", "-h", "now")
    assert off.exit_code == 1 and "not simulated" in off.stderr
    assert state(session).clock.boot_time == boot


# ---- one clock ---------------------------------------------------------------------------------


def test_nvidia_smi_dmesg_and_systemctl_tell_the_same_time(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100")
    now = clock.now(state(session))
    stamp = run(session, "nvidia-smi").stdout.splitlines()[0].strip()
    assert datetime.strptime(stamp, "%a %b %d %H:%M:%S %Y") == now.replace(tzinfo=None)
    xml = run(session, "nvidia-smi", "-q", "-x").stdout
    assert f"<timestamp>{now.strftime('%a %b %e %H:%M:%S %Y')}</timestamp>" in xml
    last = run(session, "dmesg", "-T").stdout.splitlines()[-1]
    assert last.startswith(f"[{clock.at(state(session), 0).strftime('%a %b %e')}")
    assert "2025" in last and "2025" in stamp
    assert run(session, "uptime", "-s").stdout == "2025-01-15 08:00:00\n"


def test_journalctl_takes_the_option_cluster_systemctl_recommends(tmp_path: Path) -> None:
    # systemctl's own failure message says: See "journalctl -xeu nvidia-fabricmanager.service" for details.
    session = node(tmp_path, "hgx-h100")
    with session.update() as s:
        s.nvswitches = []
    failed = run(session, "systemctl", "restart", "nvidia-fabricmanager")
    assert "journalctl -xeu nvidia-fabricmanager.service" in failed.stderr
    journal = run(session, "journalctl", "-xeu", "nvidia-fabricmanager.service").stdout
    assert "NV_WARN_NOTHING_TO_DO" in journal and "Failed to start NVIDIA fabric manager service." in journal
    assert (
        run(session, "journalctl", "-unvidia-dcgm", "-n", "1")
        .stdout.splitlines()[-1]
        .endswith("Started NVIDIA DCGM service.")
    )


# ---- the corpus: the simulator's words are the real ones -----------------------------------------


def test_a_busy_reset_of_four_gpus_reads_like_mig_parted_181(tmp_path: Path) -> None:
    sample = read_corpus("gpu_reset/01_reset_in_use_4_gpus_nvidia_drm_loaded.txt").splitlines()
    real = sample[sample.index("The following GPUs could not be reset:") : -1]
    session = node(tmp_path)  # nvidia_drm is loaded on the DGX A100 node, as in the issue
    run(session, "systemctl", "stop", "nvidia-dcgm", "nvidia-persistenced")
    out = run(session, "nvidia-smi", "-i", "0,1,2,3", "-r")
    assert out.exit_code == 255  # "exit status 255" in the capture
    ours = out.stdout.splitlines()
    bus = dict(zip(["01", "47", "81", "C2"], ["07", "0F", "47", "4E"], strict=True))
    assert ours == [re.sub(r"00000000:(..):", lambda m: f"00000000:{bus[m.group(1)]}:", line) for line in real]


def test_mig_pending_disable_reads_like_gpu_operator_118(tmp_path: Path) -> None:
    sample = read_corpus("gpu_reset/02_mig_pending_disable_and_reset_blocked_by_persistenced.txt").splitlines()
    real = [line.replace("00000000:C1:00.0", "00000000:07:00.0") for line in sample[1:4]]
    session = node(tmp_path)
    with session.update() as s:
        s.gpu(0).mig_mode_current = s.gpu(0).mig_mode_pending = True
    out = run(session, "nvidia-smi", "-i", "0", "-mig", "DISABLED")
    assert out.stdout.splitlines() == real
    # killing the persistence daemon (and the node's other holders) lets the reset through
    for step in DRAIN:
        run(session, *step)
    reset = run(session, "nvidia-smi", "-i", "0", "--gpu-reset")
    assert reset.stdout.splitlines()[0] == sample[-1].replace("00000000:C1:00.0", "00000000:07:00.0")
    assert state(session).gpu(0).mig_mode_current is False
