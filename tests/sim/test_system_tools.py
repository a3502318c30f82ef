"""The simulated lsmod, modprobe, dmesg, journalctl, systemctl, cat and uname."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.errors import ParseError
from assessor.facts import NodeFacts
from assessor.parsers import parse
from assessor.pci import bus_key
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState, load_state, save_state
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.corpus import read_corpus

SHOW = ["systemctl", "show", "-p", "Id,LoadState,ActiveState,SubState,UnitFileState,Result,ExecMainStatus"]


def run(state: NodeState, *argv: str, euid: int = 0) -> ToolResult:
    return run_tool(list(argv), Session(state=state, euid=euid))


def parsed(kind: str, result: ToolResult) -> NodeFacts:
    assert result.exit_code == 0, result.stderr
    return parse(kind, result.stdout)


@pytest.fixture
def h100() -> NodeState:
    return load_fixture("hgx-h100")


@pytest.fixture
def state_file(tmp_path: Path) -> Path:
    path = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100"), path)
    return path


def on_file(path: Path, *argv: str, euid: int = 0) -> ToolResult:
    return run_tool(list(argv), Session(path=path, euid=euid))


# ---- lsmod / modprobe ------------------------------------------------------------------------


def test_lsmod_lists_the_state_modules_with_users(h100: NodeState) -> None:
    modules = {m.name: m for m in parsed("lsmod", run(h100, "lsmod")).modules or []}
    assert list(modules) == [m.name for m in h100.modules]
    assert modules["nvidia"].used_by == ["nvidia_uvm", "nvidia_peermem", "nvidia_modeset"]
    assert modules["nvidia"].used_by_count == 27  # users without a name count too
    assert modules["nvidia_peermem"].used_by_count == 0


def test_modprobe_r_nvidia_peermem_then_lsmod_lacks_it_and_modprobe_brings_it_back(state_file: Path) -> None:
    assert on_file(state_file, "modprobe", "-r", "nvidia_peermem").exit_code == 0
    modules = {m.name: m for m in parse("lsmod", on_file(state_file, "lsmod").stdout).modules or []}
    assert "nvidia_peermem" not in modules
    assert "nvidia_peermem" not in modules["nvidia"].used_by
    assert modules["nvidia"].used_by_count == 26
    assert on_file(state_file, "modprobe", "nvidia_peermem").exit_code == 0
    modules = {m.name: m for m in parse("lsmod", on_file(state_file, "lsmod").stdout).modules or []}
    assert "nvidia_peermem" in modules and "nvidia_peermem" in modules["nvidia"].used_by
    assert "nv_mem_client_init" in load_state(state_file).kernel_log[-1]


def test_modprobe_r_of_a_module_in_use_is_refused_with_the_real_message(state_file: Path) -> None:
    before = state_file.read_text()
    result = on_file(state_file, "modprobe", "-r", "nvidia")
    assert (result.exit_code, result.stderr) == (1, "modprobe: FATAL: Module nvidia is in use.\n")
    assert state_file.read_text() == before


def test_modprobe_r_of_a_module_not_loaded(h100: NodeState) -> None:
    run(h100, "modprobe", "-r", "nvidia_peermem")
    result = run(h100, "modprobe", "-r", "nvidia_peermem")
    assert (result.exit_code, result.stderr) == (1, "modprobe: FATAL: Module nvidia_peermem is not in kernel.\n")


def test_modprobe_needs_root(h100: NodeState) -> None:
    result = run(h100, "modprobe", "-r", "nvidia_peermem", euid=1000)
    assert result.exit_code == 1 and "Operation not permitted" in result.stderr
    assert h100.module_loaded("nvidia_peermem")


def test_loading_nvidia_peermem_needs_ib_core(h100: NodeState) -> None:
    run(h100, "modprobe", "-r", "nvidia_peermem")
    h100.modules = [m for m in h100.modules if m.name != "ib_core"]
    result = run(h100, "modprobe", "nvidia_peermem")
    assert result.exit_code == 1
    assert "could not insert 'nvidia_peermem': Unknown symbol in module" in result.stderr
    assert not h100.module_loaded("nvidia_peermem")
    assert h100.kernel_log[-1].endswith("nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)")


def test_modprobe_of_an_unknown_module(h100: NodeState) -> None:
    result = run(h100, "modprobe", "nvidia_foo")
    assert result.stderr == "modprobe: FATAL: Module nvidia_foo not found in directory /lib/modules/5.15.0-91-generic\n"


# ---- dmesg / journalctl ----------------------------------------------------------------------

XID = "NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def test_dmesg_and_journalctl_k_give_the_same_kernel_events(h100: NodeState) -> None:
    h100.kernel_log.append(f"[  812.123456] {XID}")
    from_dmesg = parsed("dmesg", run(h100, "dmesg")).kernel_events or []
    from_journal = parsed("dmesg", run(h100, "journalctl", "-k", "--no-pager", "-q")).kernel_events or []
    assert [(e.kind, e.code, bus_key(e.bus_id)) for e in from_dmesg] == [("xid", 79, "2a:00")]
    assert [(e.kind, e.code, e.bus_id) for e in from_journal] == [(e.kind, e.code, e.bus_id) for e in from_dmesg]
    assert from_journal[0].timestamp == "Jan 15 08:13:32"  # 812 s after the simulated boot
    assert len(run(h100, "dmesg").stdout.splitlines()) == len(h100.kernel_log)


def test_dmesg_is_refused_to_a_normal_user_and_the_parser_says_so(h100: NodeState) -> None:
    result = run(h100, "dmesg", euid=1000)
    assert (result.exit_code, result.stderr) == (1, "dmesg: read kernel buffer failed: Operation not permitted\n")
    with pytest.raises(ParseError, match="could not be read"):
        parse("dmesg", result.stderr)


# ---- systemctl -------------------------------------------------------------------------------


def test_systemctl_show_reports_each_unit_as_the_state_has_it(h100: NodeState) -> None:
    h100.services["nvidia-dcgm.service"].active_state = "failed"
    h100.services["nvidia-dcgm.service"].sub_state = "failed"
    h100.services["nvidia-dcgm.service"].result = "exit-code"
    h100.services["nvidia-dcgm.service"].exec_main_status = 1
    units = ["nvidia-persistenced.service", "nvidia-dcgm.service", "opensm.service"]
    services = {s.name: s for s in parsed("systemctl-show", run(h100, *SHOW, *units)).services or []}
    assert list(services) == units
    ok = services["nvidia-persistenced.service"]
    assert (ok.load_state, ok.active_state, ok.sub_state, ok.unit_file_state) == (
        "loaded",
        "active",
        "running",
        "enabled",
    )
    bad = services["nvidia-dcgm.service"]
    assert (bad.active_state, bad.result, bad.exec_main_status) == ("failed", "exit-code", 1)
    assert (services["opensm.service"].load_state, services["opensm.service"].active_state) == ("not-found", "inactive")


def test_systemctl_stop_start_round_trip(state_file: Path) -> None:
    assert on_file(state_file, "systemctl", "stop", "nvidia-dcgm").exit_code == 0
    result = on_file(state_file, "systemctl", "is-active", "nvidia-dcgm")
    assert (result.exit_code, result.stdout) == (3, "inactive\n")
    (service,) = parse("systemctl-show", on_file(state_file, *SHOW, "nvidia-dcgm.service").stdout).services or []
    assert (service.active_state, service.sub_state) == ("inactive", "dead")
    assert on_file(state_file, "systemctl", "start", "nvidia-dcgm.service").exit_code == 0
    result = on_file(state_file, "systemctl", "is-active", "nvidia-dcgm")
    assert (result.exit_code, result.stdout) == (0, "active\n")


def test_stopping_nvidia_persistenced_turns_persistence_mode_off(h100: NodeState) -> None:
    run(h100, "systemctl", "stop", "nvidia-persistenced")
    assert not any(g.persistence_mode for g in h100.gpus)
    run(h100, "systemctl", "restart", "nvidia-persistenced")
    assert all(g.persistence_mode for g in h100.gpus)


def test_systemctl_start_and_stop_need_root(state_file: Path) -> None:
    result = on_file(state_file, "systemctl", "stop", "nvidia-fabricmanager", euid=1000)
    assert result.exit_code == 1
    assert result.stderr.startswith("Failed to stop nvidia-fabricmanager.service: Access denied")
    assert load_state(state_file).services["nvidia-fabricmanager.service"].active_state == "active"


def test_systemctl_on_an_unknown_unit(h100: NodeState) -> None:
    status = run(h100, "systemctl", "status", "foo")
    assert (status.exit_code, status.stderr) == (4, "Unit foo.service could not be found.\n")
    start = run(h100, "systemctl", "start", "foo")
    assert (start.exit_code, start.stderr) == (5, "Failed to start foo.service: Unit foo.service not found.\n")
    assert run(h100, "systemctl", "is-active", "foo").stdout == "inactive\n"


def test_fabric_manager_without_nvswitches_fails_to_start(h100: NodeState) -> None:
    h100.nvswitches = []
    run(h100, "systemctl", "stop", "nvidia-fabricmanager")
    result = run(h100, "systemctl", "start", "nvidia-fabricmanager")
    assert result.exit_code == 1
    assert (
        "Job for nvidia-fabricmanager.service failed because the control process exited with error code."
        in result.stderr
    )
    (service,) = parsed("systemctl-show", run(h100, *SHOW, "nvidia-fabricmanager.service")).services or []
    assert (service.active_state, service.result, service.exec_main_status) == ("failed", "exit-code", 1)


def test_systemctl_status_parses_as_services(h100: NodeState) -> None:
    h100.services["nvidia-fabricmanager.service"].active_state = "failed"
    h100.services["nvidia-fabricmanager.service"].result = "exit-code"
    h100.services["nvidia-fabricmanager.service"].exec_main_status = 1
    result = run(h100, "systemctl", "status", "nvidia-persistenced", "nvidia-fabricmanager")
    assert result.exit_code == 3
    services = {s.name: s for s in parse("systemctl-show", result.stdout).services or []}
    assert services["nvidia-persistenced.service"].active_state == "active"
    fm = services["nvidia-fabricmanager.service"]
    assert (fm.active_state, fm.result, fm.exec_main_status, fm.unit_file_state) == (
        "failed",
        "exit-code",
        1,
        "enabled",
    )


# ---- cat / uname -----------------------------------------------------------------------------


def test_driver_version_file_shows_the_kernel_module(h100: NodeState) -> None:
    h100.driver.version = "565.77.01"  # a newer library than the loaded module
    driver = parsed("driver-version", run(h100, "cat", "/proc/driver/nvidia/version")).driver
    assert driver is not None
    assert (driver.kernel_module_version, driver.open_kernel_module) == ("565.57.01", False)
    assert driver.kernel_module is not None and driver.kernel_module.endswith("Wed Oct 16 06:04:34 UTC 2024")


def test_driver_version_file_is_absent_without_the_module(h100: NodeState) -> None:
    h100.driver.loaded = False
    result = run(h100, "cat", "/proc/driver/nvidia/version")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == "cat: /proc/driver/nvidia/version: No such file or directory\n"


def test_os_release_and_uname(h100: NodeState) -> None:
    assert parsed("os-release", run(h100, "cat", "/etc/os-release")).os_release == h100.os_release
    assert parsed("uname", run(h100, "uname", "-a")).uname == h100.uname
    assert run(h100, "uname", "-r").stdout == "5.15.0-91-generic\n"
    assert run(h100, "uname", "-n").stdout == "hgx-h100-01\n"
    assert run(h100, "cat", "/etc/shadow").stderr == "cat: /etc/shadow: No such file or directory\n"


def test_systemctl_status_names_the_main_pid_by_its_15_character_comm(h100: NodeState) -> None:
    # corpus/fabricmanager/02: "   Main PID: 29850 (nv-fabricmanage)" (TASK_COMM_LEN cuts nv-fabricmanager)
    assert (
        "   Main PID: 29850 (nv-fabricmanage)"
        in read_corpus("fabricmanager/02_systemctl_status_active_running_b200_nvlsm.txt").splitlines()
    )
    out = run(h100, "systemctl", "status", "nvidia-fabricmanager").stdout
    assert any(line.startswith("   Main PID: ") and line.endswith(" (nv-fabricmanage)") for line in out.splitlines())


def test_an_aarch64_node_says_so_everywhere_the_architecture_shows() -> None:
    from assessor.sim.fixtures import load_fixture

    tray = load_fixture("gb200-tray")
    assert tray.uname is not None and " aarch64 aarch64 aarch64 GNU/Linux" in tray.uname
    assert run(tray, "uname", "-m").stdout == "aarch64\n"
    assert run(tray, "uname", "-m", "-p", "-i").stdout == "aarch64 aarch64 aarch64\n"
    version = run(tray, "cat", "/proc/driver/nvidia/version").stdout
    assert version.startswith("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.172.08  Release Build  ")
    h100 = load_fixture("hgx-h100")
    assert run(h100, "uname", "-m").stdout == "x86_64\n"
