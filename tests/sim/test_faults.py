"""Faults: each one, applied to a fresh fixture, changes the facts the simulated tools report, the way
the real failure shows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from assessor import checks
from assessor.errors import InputError
from assessor.facts import ContainerEngine, NodeFacts
from assessor.parsers import parse
from assessor.pci import bus_key
from assessor.sim import faults
from assessor.sim.faults import FAULTS
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState, load_state, save_state
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.dcgmi_status import assert_tool_status

SHOW = ["systemctl", "show", "-p", "Id,LoadState,ActiveState,SubState,UnitFileState,Result,ExecMainStatus"]
REQUIRED = {
    "ib-port-down",
    "no-subnet-manager",
    "ib-degraded-rate",
    "xid-79",
    "xid-48",
    "xid-74",
    "row-remap-pending",
    "ecc-uncorrectable",
    "pcie-degraded",
    "fabric-manager-stopped",
    "driver-mismatch",
    "peermem-unloaded",
    "nccl-socket-fallback",
    "nvlink-down",
    "persistence-off",
    "mig-pending",
    "thermal-throttle",
    "dcgm-stopped",
}


def tool(state: NodeState, *argv: str, env: dict[str, str] | None = None) -> ToolResult:
    return run_tool(list(argv), Session(state=state, env=env or {}))


def facts(kind: str, state: NodeState, *argv: str, env: dict[str, str] | None = None) -> NodeFacts:
    result = tool(state, *argv, env=env)
    assert_tool_status(argv, result)
    return parse(kind, result.stdout)


def dcgm_results(state: NodeState, level: str) -> dict[str, str]:
    diag = facts("dcgmi-diag", state, "dcgmi", "diag", "-r", level).dcgm_diag
    assert diag is not None
    return {t.name: t.result for t in diag.tests}


def test_the_catalogue_has_every_required_fault_each_tied_to_a_real_check() -> None:
    assert set(FAULTS) >= REQUIRED
    for name, fault in FAULTS.items():
        assert fault.name == name
        assert fault.check in checks.REGISTRY, f"{name}: {fault.check} is not a catalogue check"
        assert fault.description and fault.reversible


# ---- one test per fault: what the tools say afterwards -----------------------------------------


def _ib_port_down(state: NodeState) -> None:
    ports = {p.ca: p for p in facts("ibstat", state, "ibstat").ib_ports or []}
    assert (ports["mlx5_7"].state, ports["mlx5_7"].physical_state) == ("Down", "Polling")
    assert all(p.state == "Active" for ca, p in ports.items() if ca != "mlx5_7")


def _no_subnet_manager(state: NodeState) -> None:
    ports = facts("ibstat", state, "ibstat").ib_ports or []
    assert {(p.state, p.physical_state, p.base_lid, p.sm_lid) for p in ports} == {("Initializing", "LinkUp", 0, 0)}
    assert state.sm_present is False


def _ib_degraded_rate(state: NodeState) -> None:
    rates = {p.ca: p.rate_gbps for p in facts("ibstat", state, "ibstat").ib_ports or []}
    assert rates["mlx5_7"] == 200 and set(rates.values()) == {200, 400}
    assert "200 Gb/sec (4X HDR)" in tool(state, "ibstatus", "mlx5_7").stdout


def _xid(code: int) -> Callable[[NodeState], None]:
    def verify(state: NodeState) -> None:
        events = facts("dmesg", state, "dmesg").kernel_events or []
        xids = [e for e in events if e.kind == "xid"]
        assert [(e.code, bus_key(e.bus_id)) for e in xids] == [(code, bus_key(state.gpu(0).bus_id))]

    return verify


def _xid_79(state: NodeState) -> None:
    _xid(79)(state)
    assert state.gpu(0).lost
    assert "'invalid device ordinal'" in tool(state, "all_reduce_perf", "-g", "8").stdout


def _xid_48(state: NodeState) -> None:
    # from Ampere on the uncorrectable error also marks its row for remapping: Xid 63, pending until a reset
    events = [e for e in facts("dmesg", state, "dmesg").kernel_events or [] if e.kind == "xid"]
    assert [(e.code, bus_key(e.bus_id)) for e in events] == [(c, bus_key(state.gpu(0).bus_id)) for c in (48, 63)]
    rows = state.gpu(0).remapped_rows
    assert rows is not None and rows.pending and rows.uncorrectable == 1
    assert dcgm_results(state, "2")["GPU Memory"] == "Fail"


def _xid_74(state: NodeState) -> None:
    _xid(74)(state)
    assert sum(not link.active for link in state.gpu(0).nvlinks) == 1


def _row_remap_pending(state: NodeState) -> None:
    assert dcgm_results(state, "1")["Page Retirement/Row Remap"] == "Fail"
    events = facts("dmesg", state, "dmesg").kernel_events or []
    assert [e.code for e in events] == [63]  # "reset gpu to activate": a warning-level Xid


def _ecc_uncorrectable(state: NodeState) -> None:
    assert state.gpu(0).ecc.volatile_uncorrected == 2
    assert dcgm_results(state, "2")["GPU Memory"] == "Fail"


def _pcie_degraded(state: NodeState) -> None:
    events = facts("dmesg", state, "dmesg").kernel_events or []
    assert [(e.kind, bus_key(e.bus_id)) for e in events] == [("pcie_degraded", bus_key(state.gpu(0).bus_id))]
    assert "limited by 32.0 GT/s PCIe x8 link" in events[0].message
    assert (state.gpu(0).pcie_width_current, state.gpu(0).pcie_gen_current) == (8, 5)


def _fabric_manager_stopped(state: NodeState) -> None:
    (fm,) = facts("systemctl-show", state, *SHOW, "nvidia-fabricmanager.service").services or []
    assert (fm.active_state, fm.result, fm.exec_main_status) == ("failed", "exit-code", 1)
    assert {g.fabric_state for g in state.gpus} == {"In Progress"}
    assert "'system not yet initialized'" in tool(state, "all_reduce_perf", "-g", "8").stdout
    assert dcgm_results(state, "1")["CUDA Main Library"] == "Fail"


def _driver_mismatch(state: NodeState) -> None:
    driver = facts("driver-version", state, "cat", "/proc/driver/nvidia/version").driver
    assert driver is not None and driver.kernel_module_version == "565.57.01"
    assert state.driver.version == "565.89.01"
    assert "NVRM: API mismatch: the client has the version 565.89.01, but" in tool(state, "dmesg").stdout


def _peermem_unloaded(state: NodeState) -> None:
    names = {m.name for m in facts("lsmod", state, "lsmod").modules or []}
    assert "nvidia_peermem" not in names and "nvidia" in names
    assert "Couldn't allocate MR" in tool(state, "ib_write_bw", "-d", "mlx5_0", "--use_cuda=0", "peer").stderr


def _nccl_socket_fallback(state: NodeState) -> None:
    run = facts("nccl-tests", state, "all_reduce_perf", "-g", "8", env={"NCCL_DEBUG": "INFO"}).nccl
    assert run is not None and (run.debug.network, run.debug.ib_no_device) == ("Socket", True)


def _nvlink_down(state: NodeState) -> None:
    assert dcgm_results(state, "2")["PCIe"] == "Fail"
    run = facts("nccl-tests", state, "all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8").nccl
    assert run is not None and (run.peak_busbw() or 0) < 30  # a GPU with no NVLink drags the ring to PCIe


def _persistence_off(state: NodeState) -> None:
    (service,) = facts("systemctl-show", state, *SHOW, "nvidia-persistenced.service").services or []
    assert service.active_state == "inactive"
    assert dcgm_results(state, "1")["Persistence Mode"] == "Fail"


def _mig_pending(state: NodeState) -> None:
    assert {(g.mig_mode_current, g.mig_mode_pending) for g in state.gpus} == {(False, True)}


def _thermal_throttle(state: NodeState) -> None:
    g = state.gpu(0)
    assert "hw_thermal_slowdown" in g.throttle_reasons and "gpu_idle" not in g.throttle_reasons
    assert g.temperature_slowdown_c is not None and g.temperature_c > g.temperature_slowdown_c
    assert dcgm_results(state, "3")["Targeted Power"] == "Fail"


def _dcgm_stopped(state: NodeState) -> None:
    result = tool(state, "dcgmi", "diag", "-r", "1")
    assert result.exit_code != 0 and "Unable to connect to host engine" in result.stdout


def _imex_stopped(state: NodeState) -> None:
    (imex,) = facts("systemctl-show", state, *SHOW, "nvidia-imex.service").services or []
    assert (imex.active_state, imex.result, imex.exec_main_status) == ("failed", "exit-code", 1)
    # the NVLink domain is the switch trays' business: the GPUs' fabric registration stands
    assert {(g.fabric_state, g.fabric_status) for g in state.gpus} == {("Completed", "Success")}


def _gpu_job(state: NodeState) -> None:
    assert "python3" in tool(state, "nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv").stdout
    refused = tool(state, "nvidia-smi", "-i", "0", "-r")
    assert refused.exit_code == 255 and "In use by another client" in refused.stdout


def _ib_rails_crossed(state: NodeState) -> None:
    # every port still Active at NDR; only the fabric's far ends moved: rails 2 and 3 trade leaves
    assert {p.state for h in state.ib_hcas for p in h.ports} == {"Active"}
    links = {(link.ca, link.port): link for link in facts("ibnetdiscover", state, "ibnetdiscover").ib_links or []}
    host = state.host
    assert links[(f"{host} mlx5_1", 1)].peer == "MF0;ib-leaf-03:MQM9700/U1"
    assert links[(f"{host} mlx5_2", 1)].peer == "MF0;ib-leaf-02:MQM9700/U1"
    assert links[(f"{host} mlx5_0", 1)].peer == "MF0;ib-leaf-01:MQM9700/U1"


def _ib_cable_wrong_leaf(state: NodeState) -> None:
    links = {(link.ca, link.port): link for link in facts("iblinkinfo", state, "iblinkinfo").ib_links or []}
    moved = links[(f"{state.host} mlx5_2", 1)]
    assert (moved.peer, moved.peer_port, moved.state) == ("MF0;ib-leaf-04:MQM9700/U1", 20, "Active")


def _docker_runtime_missing(state: NodeState) -> None:
    engine = facts("docker-info", state, "docker", "info").container_engine
    assert engine is not None and "nvidia" not in engine.runtimes and "runc" in engine.runtimes
    assert 'could not select device driver ""' in tool(state, "docker", "run", "--gpus", "all", "ubuntu").stderr


def _cdi_spec_stale(state: NodeState) -> None:
    # the node as it is now (the stale spec is on its disk: tests/sim/test_containers.py)
    assert [gi.name for gi in state.gpu(0).mig_instances] == ["3g.40gb", "3g.40gb"]
    assert "nvidia" in (facts("docker-info", state, "docker", "info").container_engine or ContainerEngine()).runtimes


def _cdi_spec_old_driver(state: NodeState) -> None:
    assert "nvidia" in (facts("docker-info", state, "docker", "info").container_engine or ContainerEngine()).runtimes


def _hca_firmware_old(state: NodeState) -> None:
    firmware = {p.ca: p.firmware for p in facts("ibstat", state, "ibstat").ib_ports or []}
    assert firmware["mlx5_7"] == "28.39.1002" and firmware["mlx5_0"] == "28.41.1000"
    query = tool(state, "flint", "-d", "mlx5_7", "q").stdout
    assert "FW Version:            28.39.1002" in query and "Running" not in query  # nothing pending on flash


def _switch_firmware_old(state: NodeState) -> None:
    lids = {
        line.split('"')[1].split(";")[1].split(":")[0]: line.split(" lid ")[1].split()[0]
        for line in tool(state, "ibswitches").stdout.splitlines()
    }
    assert "FW Version:            31.2010.1064" in tool(state, "flint", "-d", f"lid-{lids['ib-leaf-08']}", "q").stdout
    assert "FW Version:            31.2012.1024" in tool(state, "flint", "-d", f"lid-{lids['ib-leaf-01']}", "q").stdout


def _vbios_mismatch(state: NodeState) -> None:
    vbios = {g.index: g.vbios for g in facts("nvidia-smi-q", state, "nvidia-smi", "-q").gpus or []}
    assert vbios[0] == "96.00.61.00.01" and vbios[1] == "96.00.74.00.01"


def _ib_ber_high(state: NodeState) -> None:
    assert {p.state for p in facts("ibstat", state, "ibstat").ib_ports or []} == {"Active"}  # up at full rate
    tool(state, "mlxlink", "-d", "mlx5_7", "--pc")  # a fresh count: the errors come back at once
    (link,) = facts("mlxlink", state, "mlxlink", "-d", "mlx5_7", "-m", "-c").link_phy or []
    assert link.effective_errors and link.effective_ber == 3e-11 and link.status_opcode == 15
    assert link.recommendation == "Bad signal integrity" and link.module_serial


def _ib_link_flapped(state: NodeState) -> None:
    (old,) = facts("mlxlink", state, "mlxlink", "-d", "mlx5_7", "-c").link_phy or []
    assert (old.link_down, old.effective_errors) == (2, 41300)
    tool(state, "mlxlink", "-d", "mlx5_7", "--pc")
    (fresh,) = facts("mlxlink", state, "mlxlink", "-d", "mlx5_7", "-c").link_phy or []
    assert (fresh.link_down, fresh.effective_errors, fresh.status_opcode) == (0, 0, 0)


def _gpu_removed(state: NodeState) -> None:
    listed = tool(state, "nvidia-smi", "-L").stdout.splitlines()
    assert [line.split(":")[0] for line in listed] == [f"GPU {i}" for i in range(7)]  # numbered from 0 again
    assert [g.minor_number for g in state.gpus] == list(range(7))  # /dev/nvidia0-6
    FAULTS["gpu-removed"].revert(state)
    assert len(tool(state, "nvidia-smi", "-L").stdout.splitlines()) == 8


def _slurm_gres_short(state: NodeState) -> None:
    # the node's Slurm runs for real (tests/sim/test_slurm_node.py, tests/labs/test_walk_slurm.py): here its units
    for unit in ("munge", "slurmctld", "slurmd"):
        assert tool(state, "systemctl", "is-active", unit).stdout == "active\n"
    assert "Main PID" in tool(state, "systemctl", "status", "slurmd").stdout


def _slurm_mig_untyped(state: NodeState) -> None:
    # GPU 6 and 7 split (nvidia-smi -L lists their MIG devices); the node's Slurm runs for real (test_slurm_mig.py)
    listed = tool(state, "nvidia-smi", "-L").stdout
    assert listed.count("  MIG 1g.10gb ") == 7 and listed.count("  MIG 3g.40gb ") == 2
    assert tool(state, "systemctl", "is-active", "slurmd").stdout == "active\n"


def _kernel_update_no_dkms(state: NodeState) -> None:
    new = tool(state, "uname", "-r").stdout.strip()
    assert new == "5.15.0-94-generic"  # hgx-h100 ran 5.15.0-91
    assert "5.15.0-94" not in tool(state, "dkms", "status").stdout  # built for the old kernel only
    refused = tool(state, "modprobe", "nvidia").stderr
    assert refused == f"modprobe: FATAL: Module nvidia not found in directory /lib/modules/{new}\n"
    assert "rc  nvidia-dkms-525-server" in tool(state, "dpkg", "-l").stdout


def _ib_degraded_width(state: NodeState) -> None:
    # Active at NDR on two lanes: ibstatus says 2X NDR, the fabric 2xNDR for the third rail's link
    port = next(p for p in facts("ibstat", state, "ibstat").ib_ports or [] if p.ca == "mlx5_2")
    assert (port.state, port.rate_gbps) == ("Active", 200)
    assert "200 Gb/sec (2X NDR)" in tool(state, "ibstatus", "mlx5_2").stdout
    assert f'# "{state.host} mlx5_2" lid 202 2xNDR' in tool(state, "ibnetdiscover").stdout


def _iommu_translated(state: NodeState) -> None:
    # the kernel booted with intel_iommu=on alone: /proc/cmdline and dmesg say so, PCIe peer-to-peer halves
    from assessor.parsers.kernel_cmdline import iommu_mode

    cmdline = facts("proc-cmdline", state, "cat", "/proc/cmdline").kernel_cmdline or ""
    assert cmdline.endswith(" ro quiet intel_iommu=on") and iommu_mode(cmdline) == "translated"
    log = tool(state, "dmesg").stdout
    assert "DMAR: IOMMU enabled" in log and "iommu: Default domain type: Translated" in log
    healthy = load_fixture(state.fixture)
    run = ("nvbandwidth", "-t", "device_to_device_memcpy_write_ce")
    sick_bw = facts("nvbandwidth", state, *run).nvbandwidth
    good_bw = facts("nvbandwidth", healthy, *run).nvbandwidth
    assert sick_bw is not None and good_bw is not None
    (sick,), (good,) = sick_bw.tests, good_bw.tests
    assert sick.sum_gbps is not None and good.sum_gbps is not None
    assert sick.sum_gbps == pytest.approx(good.sum_gbps / 2, rel=0.01)


VERIFY: dict[str, Callable[[NodeState], None]] = {
    "kernel-update-no-dkms": _kernel_update_no_dkms,
    "slurm-gres-short": _slurm_gres_short,
    "slurm-mig-untyped": _slurm_mig_untyped,
    "gpu-removed": _gpu_removed,
    "docker-runtime-missing": _docker_runtime_missing,
    "cdi-spec-stale": _cdi_spec_stale,
    "cdi-spec-old-driver": _cdi_spec_old_driver,
    "ib-port-down": _ib_port_down,
    "no-subnet-manager": _no_subnet_manager,
    "ib-degraded-rate": _ib_degraded_rate,
    "ib-rails-crossed": _ib_rails_crossed,
    "ib-cable-wrong-leaf": _ib_cable_wrong_leaf,
    "ib-degraded-width": _ib_degraded_width,
    "xid-79": _xid_79,
    "xid-48": _xid_48,
    "xid-74": _xid_74,
    "row-remap-pending": _row_remap_pending,
    "ecc-uncorrectable": _ecc_uncorrectable,
    "pcie-degraded": _pcie_degraded,
    "fabric-manager-stopped": _fabric_manager_stopped,
    "driver-mismatch": _driver_mismatch,
    "peermem-unloaded": _peermem_unloaded,
    "nccl-socket-fallback": _nccl_socket_fallback,
    "nvlink-down": _nvlink_down,
    "persistence-off": _persistence_off,
    "mig-pending": _mig_pending,
    "thermal-throttle": _thermal_throttle,
    "dcgm-stopped": _dcgm_stopped,
    "imex-stopped": _imex_stopped,
    "hca-firmware-old": _hca_firmware_old,
    "switch-firmware-old": _switch_firmware_old,
    "vbios-mismatch": _vbios_mismatch,
    "ib-ber-high": _ib_ber_high,
    "ib-link-flapped": _ib_link_flapped,
    "iommu-translated": _iommu_translated,
}


def _bmc_factory_default(state: NodeState) -> None:
    # ipmitool in-band: the lease on DHCP, and the factory ADMIN enabled with ADMINISTRATOR on channel 1
    lan = facts("ipmitool-lan", state, "ipmitool", "lan", "print", "1").bmc_lan
    assert lan is not None and (lan.ip_source, lan.ip) == ("dhcp", "192.168.1.57")
    users = facts("ipmitool-users", state, "ipmitool", "channel", "getaccess", "1").bmc_users or []
    assert [(u.id, u.privilege, u.enabled) for u in users if u.name == "ADMIN"] == [(2, "ADMINISTRATOR", True)]


VERIFY["bmc-factory-default"] = _bmc_factory_default


def _weak_hbm_row(state: NodeState) -> None:
    # dcgmi diag -r 3 passes the weak GPU (the last by default); -r 4's memtest fails it (test_dcgmi_xlong.py)
    long_run = facts("dcgmi-diag", state, "dcgmi", "diag", "-r", "3").dcgm_diag
    assert long_run is not None and {t.result for t in long_run.tests} == {"Pass", "Skip"}  # Skip: EUD
    xlong = facts("dcgmi-diag", state, "dcgmi", "diag", "-r", "4").dcgm_diag
    assert xlong is not None
    assert [(t.name, t.details[1]) for t in xlong.tests if t.result == "Fail"] == [("Memtest", "Fail - GPU: 7")]


VERIFY["weak-hbm-row"] = _weak_hbm_row
# The node a fault is shown on, where the HGX H100 lacks what it breaks.
ON_FIXTURE = {"imex-stopped": "gb200-tray", "iommu-translated": "pcie-l40s"}


def test_every_fault_has_a_verification() -> None:
    assert set(VERIFY) == set(FAULTS)


@pytest.mark.parametrize("name", sorted(VERIFY))
def test_fault_changes_what_the_tools_report(name: str) -> None:
    state = load_fixture(ON_FIXTURE.get(name, "hgx-h100"))
    FAULTS[name].apply(state)
    VERIFY[name](state)


def test_degraded_rate_on_hdr_is_100() -> None:
    state = load_fixture("dgx-a100")
    FAULTS["ib-degraded-rate"].apply(state, ca="mlx5_0")
    rates = {p.ca: p.rate_gbps for p in facts("ibstat", state, "ibstat").ib_ports or []}
    assert rates["mlx5_0"] == 100 and rates["mlx5_1"] == 200


def test_options_choose_the_device() -> None:
    state = load_fixture("hgx-h100")
    FAULTS["xid-79"].apply(state, gpu=5)
    assert [g.index for g in state.gpus if g.lost] == [5]
    FAULTS["ib-port-down"].apply(state, ca="mlx5_2")
    assert state.hca("mlx5_2").ports[0].state == "Down"
    FAULTS["nvlink-down"].apply(state, gpu=3, links=4)
    assert sum(not link.active for link in state.gpu(3).nvlinks) == 4


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("xid-79", {"gpu": 12}, "no GPU 12"),
        ("ib-port-down", {"ca": "mlx5_42"}, "no HCA mlx5_42"),
        ("xid-79", {"bogus": 1}, "unknown option bogus"),
        ("pcie-degraded", {"width": 16}, "not below"),
    ],
)
def test_bad_options_are_input_errors(name: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        FAULTS[name].apply(load_fixture("hgx-h100"), **options)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nvlink-down", "has no NVLink"),
        ("mig-pending", "no GPU with MIG support"),
        ("fabric-manager-stopped", "not installed"),
        ("no-subnet-manager", "no InfiniBand port"),
    ],
)
def test_faults_that_do_not_exist_on_a_pcie_box_say_so(name: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        FAULTS[name].apply(load_fixture("pcie-l40s"))


def test_unknown_fault_suggests_the_closest() -> None:
    with pytest.raises(InputError, match="did you mean xid-79"):
        faults.get("xid-97")


def test_inject_and_repair_a_state_file(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100"), path)
    message = faults.inject(path, "peermem-unloaded")
    assert "peermem-unloaded" in message and "ib.peermem" in message
    assert not load_state(path).module_loaded("nvidia_peermem")
    faults.repair(path, "peermem-unloaded")
    assert load_state(path).module_loaded("nvidia_peermem")


def test_revert_restores_the_fixture_values() -> None:
    state = load_fixture("hgx-h100")
    healthy = load_fixture("hgx-h100")
    for name in (
        "ib-port-down",
        "no-subnet-manager",
        "ib-degraded-rate",
        "fabric-manager-stopped",
        "persistence-off",
        "nccl-socket-fallback",
        "thermal-throttle",
        "dcgm-stopped",
    ):
        FAULTS[name].apply(state)
        FAULTS[name].revert(state)
    assert state.ib_hcas == healthy.ib_hcas
    assert state.services == healthy.services
    assert state.nccl_env == healthy.nccl_env
    assert state.gpus == healthy.gpus
    assert state.sm_present


def test_gpu_job_condition_shows_and_holds_the_gpu() -> None:
    state = load_fixture("hgx-h100")
    faults.get("gpu-job").apply(state)
    _gpu_job(state)
    faults.get("gpu-job").revert(state)
    assert tool(state, "nvidia-smi", "-i", "0", "-r").exit_code == 0


def test_gpu_job_run_by_a_unit_ends_when_the_unit_stops(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100"), path)
    message = faults.inject(path, "gpu-job", gpu=3, unit="train")
    assert "holds a GPU" in message
    assert [p.pid for p in load_state(path).gpu(3).processes] == [24021]
    assert run_tool(["systemctl", "stop", "train"], Session(path=path)).exit_code == 0
    assert load_state(path).gpu(3).processes == []
    with pytest.raises(InputError, match="already runs"):
        faults.get("gpu-job").apply(_with_job(), gpu=1, pid=5)


def _with_job() -> NodeState:
    state = load_fixture("hgx-h100")
    faults.get("gpu-job").apply(state, gpu=0, pid=5)
    return state
