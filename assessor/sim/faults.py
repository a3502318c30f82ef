"""Faults to inject into a simulated node: each changes the state the way the real failure shows.

A :class:`Fault` has a name, what it does, the catalogue check it makes fail, ``apply(state,
**options)`` and, where the repair is a state change too, ``revert(state, **options)``. Faults set
every fact a real node would show (DESIGN.md, "The simulator"): an Xid 79 is a kernel log line in
the driver's format *and* a lost GPU; a missing subnet manager is ``sm_present: false`` *and*
ports stuck in ``Initializing``. Reverting restores the parts a fault touched from a fresh copy of
the node's fixture, so a repaired node is a healthy one again.

Options name the device: ``gpu`` (NVML index), ``ca`` (an HCA name such as ``mlx5_3``); each fault
picks a sensible default when none is given.

A fault whose cause lives on the node's disk (a configuration a daemon fails on) also writes that cause into
the node's files when it is injected into a state file with files of its own (:func:`inject`), and takes it
away again on :func:`repair`: a reboot does not clear such a fault, and the daemon logs the cause each time it
fails on it, as the real one does.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.sim import cabling_faults, grub, link_faults, switch_firmware
from assessor.sim import clock as node_clock
from assessor.sim.bmc_faults import FAULTS as BMC_FAULTS
from assessor.sim.container_faults import FAULTS as CONTAINER_FAULTS
from assessor.sim.dcgm_faults import FAULTS as DCGM_FAULTS
from assessor.sim.package_faults import KERNEL_UPDATE_NO_DKMS
from assessor.sim.peer_faults import CONDITIONS as PEER_CONDITIONS
from assessor.sim.slurm_faults import CONDITIONS as SLURM_CONDITIONS
from assessor.sim.slurm_faults import FAULTS as SLURM_FAULTS
from assessor.sim.state import GpuProcess, GpuState, IbHcaState, NodeState, ServiceState
from assessor.sim.tools.system import IMEX_CONFIG, IMEX_NODES_CONFIG, IMEX_UNIT, NETPLAN_CONFIG, append_kernel_log

FaultFunc = Callable[..., None]
DiskFunc = Callable[[NodeState, Path], None]  # writes (or removes) a fault's cause in the node's files


@dataclass(frozen=True)
class Fault:
    name: str
    description: str
    check: str  # the catalogue check id this fault makes fail; "" for a condition (no check fails on it)
    _apply: FaultFunc
    _revert: FaultFunc | None = None
    _cause: DiskFunc | None = None  # the cause on the node's disk, written on inject
    _cure: DiskFunc | None = None  # and taken away on repair

    @property
    def options(self) -> tuple[str, ...]:
        """The options ``apply`` accepts (``gpu``, ``ca``, ...)."""
        params = list(inspect.signature(self._apply).parameters.values())[1:]
        return tuple(p.name for p in params)

    @property
    def reversible(self) -> bool:
        return self._revert is not None

    def apply(self, state: NodeState, **options: Any) -> None:
        """Inject the fault into ``state`` (InputError for an unknown option or device)."""
        self._check_options(options)
        self._apply(state, **options)

    def revert(self, state: NodeState, **options: Any) -> None:
        """Repair what :meth:`apply` broke (InputError when this fault has no state-level repair)."""
        if self._revert is None:
            raise InputError(f"fault {self.name} cannot be reverted by a state change: reset or reboot the node")
        self._check_options(options)
        self._revert(state, **options)

    def write_cause(self, state: NodeState, root: Path) -> None:
        """Write the fault's cause into the node's files under ``root`` (nothing for a fault without one)."""
        if self._cause is not None:
            self._cause(state, root)

    def remove_cause(self, state: NodeState, root: Path) -> None:
        """Take the fault's cause out of the node's files under ``root``."""
        if self._cure is not None:
            self._cure(state, root)

    def _check_options(self, options: dict[str, Any]) -> None:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            accepted = ", ".join(self.options) or "none"
            raise InputError(f"fault {self.name}: unknown option {', '.join(unknown)} (options: {accepted})")


# ---- helpers ---------------------------------------------------------------------------------


def _fresh(state: NodeState) -> NodeState | None:
    """A healthy copy of this node from its fixture (None when the state has no shipped fixture)."""
    from assessor.sim.fixtures import fixture_names, load_fixture

    if state.fixture not in fixture_names():
        return None
    return load_fixture(state.fixture, host=state.host)


def _gpu(state: NodeState, gpu: Any) -> GpuState:
    if not state.gpus:
        raise InputError(f"{state.host} has no GPU")
    index = state.gpus[0].index if gpu is None else _int(gpu, "gpu")
    try:
        return state.gpu(index)
    except IndexError:
        indices = ", ".join(str(g.index) for g in state.gpus)
        raise InputError(f"no GPU {index} on {state.host} (GPUs: {indices})") from None


def _int(value: Any, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"option {name} must be a number, not {value!r}") from None


def _compute_hcas(state: NodeState) -> list[IbHcaState]:
    return [h for h in state.ib_hcas if h.role == "compute"] or list(state.ib_hcas)


def _hca(state: NodeState, ca: Any) -> IbHcaState:
    hcas = _compute_hcas(state)
    if not hcas:
        raise InputError(f"{state.host} has no InfiniBand HCA")
    if ca is None:
        return hcas[-1]  # the last compute HCA: far from where a reader looks first
    try:
        return state.hca(str(ca))
    except KeyError:
        names = ", ".join(h.name for h in state.ib_hcas)
        raise InputError(f"no HCA {ca} on {state.host} (HCAs: {names})") from None


def _pci(gpu: GpuState) -> str:
    """``00000000:18:00.0`` -> ``0000:18:00`` (the address an Xid line names)."""
    return gpu.bus_id[-12:-2].lower()


def _xid(gpu: GpuState, code: int, text: str, *, pid: str = "'<unknown>'", name: str = "<unknown>") -> str:
    return f"NVRM: Xid (PCI:{_pci(gpu)}): {code}, pid={pid}, name={name}, {text}"


def _service(state: NodeState, unit: str) -> ServiceState:
    service = state.services.get(unit)
    if service is None or service.load_state == "not-found":
        raise InputError(f"{unit} is not installed on {state.host}")
    return service


def _restore_service(state: NodeState, unit: str) -> None:
    fresh = _fresh(state)
    if fresh is not None and unit in fresh.services:
        state.services[unit] = fresh.services[unit]
    else:
        service = _service(state, unit)
        service.active_state, service.sub_state, service.result, service.exec_main_status = (
            "active",
            "running",
            "success",
            0,
        )


def _restore_hca_port(state: NodeState, hca: IbHcaState) -> None:
    fresh = _fresh(state)
    if fresh is not None:
        try:
            hca.ports = fresh.hca(hca.name).ports
            return
        except KeyError:
            pass
    for port in hca.ports:
        port.state, port.physical_state = "Active", "LinkUp"


# ---- InfiniBand ------------------------------------------------------------------------------


def _ib_port_down(state: NodeState, ca: Any = None) -> None:
    hca = _hca(state, ca)
    for port in hca.ports:
        # What ibstat shows for a port with no link partner: Down/Polling at the lowest rate.
        port.state, port.physical_state = "Down", "Polling"
        port.rate_gbps = 10 if port.link_layer == "InfiniBand" else 40
        port.speed = "SDR" if port.link_layer == "InfiniBand" else port.speed
        port.base_lid, port.sm_lid = 0, 0
    append_kernel_log(state, [f"mlx5_core {hca.bus_id}: Port module event: module 0, Cable unplugged"])


def _ib_port_up(state: NodeState, ca: Any = None) -> None:
    hca = _hca(state, ca)
    _restore_hca_port(state, hca)
    append_kernel_log(state, [f"mlx5_core {hca.bus_id}: Port module event: module 0, Cable plugged"])


def _no_subnet_manager(state: NodeState) -> None:
    ib_ports = [p for h in state.ib_hcas for p in h.ports if p.link_layer == "InfiniBand"]
    if not ib_ports:
        raise InputError(f"{state.host} has no InfiniBand port (RoCE needs no subnet manager)")
    state.sm_present = False
    for port in ib_ports:
        if port.physical_state == "LinkUp":
            # Trained link, but nobody assigned a LID or moved the port to Active.
            port.state, port.base_lid, port.sm_lid = "Initializing", 0, 0
    if "opensm.service" in state.services:
        sm = state.services["opensm.service"]
        sm.active_state, sm.sub_state = "inactive", "dead"


def _subnet_manager_back(state: NodeState) -> None:
    fresh = _fresh(state)
    state.sm_present = True
    for hca in state.ib_hcas:
        if any(p.link_layer == "InfiniBand" for p in hca.ports):
            _restore_hca_port(state, hca)
    if fresh is not None and "opensm.service" in fresh.services:
        state.services["opensm.service"] = fresh.services["opensm.service"]


_LOWER_SPEED = {"XDR": "NDR", "NDR": "HDR", "HDR": "EDR", "EDR": "FDR", "FDR": "QDR"}


def _ib_degraded_rate(state: NodeState, ca: Any = None) -> None:
    from assessor.sim.tools.ib import port_speed

    hca = _hca(state, ca)
    for port in hca.ports:
        # The link trained one speed grade down (a marginal cable or transceiver): half the rate.
        speed = port_speed(port)
        port.speed = _LOWER_SPEED.get(speed, speed)
        port.rate_gbps = port.rate_gbps / 2


def _ib_rate_back(state: NodeState, ca: Any = None) -> None:
    _restore_hca_port(state, _hca(state, ca))


# ---- GPU: Xid, memory, PCIe, NVLink, heat ----------------------------------------------------


def _xid_79(state: NodeState, gpu: Any = None) -> None:
    g = _gpu(state, gpu)
    g.lost = True
    append_kernel_log(
        state,
        [
            f"NVRM: GPU at PCI:{_pci(g)}: {g.uuid}",
            f"NVRM: GPU Board Serial Number: {g.serial}",
            _xid(g, 79, "GPU has fallen off the bus."),
            f"NVRM: GPU {_pci(g)}.0: GPU has fallen off the bus.",
        ],
    )


def _xid_48(state: NodeState, gpu: Any = None) -> None:
    g = _gpu(state, gpu)
    # A double-bit error is an uncorrectable ECC error: the counters count it too.
    g.ecc.volatile_uncorrected += 1
    g.ecc.aggregate_uncorrected += 1
    lines = [
        _xid(
            g,
            48,
            "An uncorrectable double bit error (DBE) has been detected on GPU in the "
            "framebuffer at partition 6, subpartition 0.",
            pid="3012447",
            name="python3",
        )
    ]
    if g.remapped_rows is not None:
        # Ampere and later remap rows instead of retiring pages: the uncorrectable error marks its row for
        # remapping, pending until the GPU is reset (NVIDIA's GPU memory error management guide; Xid catalogue,
        # Xid 63: "Row Remapper: New row marked for remapping, reset gpu to activate").
        g.remapped_rows.uncorrectable += 1
        g.remapped_rows.pending = True
        remap = "Row Remapper: New row (0x0000000000a4c3b0) marked for remapping, reset gpu to activate."
        lines.append(_xid(g, 63, remap))
    append_kernel_log(state, lines)


def _xid_74(state: NodeState, gpu: Any = None, link: Any = None) -> None:
    g = _gpu(state, gpu)
    if not g.nvlinks:
        raise InputError(f"GPU {g.index} ({g.name}) has no NVLink")
    number = _int(link, "link") if link is not None else g.nvlinks[len(g.nvlinks) // 2].link
    target = next((lk for lk in g.nvlinks if lk.link == number), None)
    if target is None:
        raise InputError(f"GPU {g.index} has no NVLink {number}")
    # A fatal NVLink error takes the link down until the GPU is reset.
    target.active = False
    target.errors["recovery"] = target.errors.get("recovery", 0) + 1
    append_kernel_log(
        state, [_xid(g, 74, f"NVLink: fatal error detected on link {number}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")]
    )


def _clear_xid(state: NodeState, gpu: Any = None, **_: Any) -> None:
    """Reboot: the GPU comes back healthy and the kernel log starts over (an Xid stays in dmesg until then)."""
    g = _gpu(state, gpu)
    fresh = _fresh(state)
    healthy = fresh.gpu(g.index) if fresh is not None else None
    g.lost = False
    g.ecc.volatile_uncorrected = 0
    for link in g.nvlinks:
        link.active = True
    if healthy is not None:
        g.nvlinks = healthy.nvlinks
    if fresh is not None:
        state.kernel_log = list(fresh.kernel_log)
    else:
        state.kernel_log = [line for line in state.kernel_log if f"PCI:{_pci(g)}" not in line]


def _revert_xid_74(state: NodeState, gpu: Any = None, link: Any = None) -> None:
    _clear_xid(state, gpu)


def _revert_xid_48(state: NodeState, gpu: Any = None) -> None:
    """Reboot: the reset activates the row the error marked for remapping."""
    _clear_xid(state, gpu)
    g = _gpu(state, gpu)
    if g.remapped_rows is not None:
        g.remapped_rows.pending = False


def _row_remap_pending(state: NodeState, gpu: Any = None) -> None:
    g = _gpu(state, gpu)
    if g.remapped_rows is None:
        raise InputError(f"GPU {g.index} ({g.name}) does not remap rows")
    g.remapped_rows.uncorrectable += 1
    g.remapped_rows.pending = True
    append_kernel_log(
        state, [_xid(g, 63, "Row Remapper: New row (0x00000000000d7e1c) marked for remapping, reset gpu to activate.")]
    )


def _row_remap_applied(state: NodeState, gpu: Any = None) -> None:
    g = _gpu(state, gpu)
    if g.remapped_rows is not None:
        g.remapped_rows.pending = False  # a GPU reset activates the spare row


def _ecc_uncorrectable(state: NodeState, gpu: Any = None, count: Any = 2, pid: Any = None) -> None:
    g = _gpu(state, gpu)
    if g.ecc_mode_current is None:
        raise InputError(f"GPU {g.index} ({g.name}) has no ECC")
    n = _int(count, "count")
    g.ecc.volatile_uncorrected += n
    g.ecc.aggregate_uncorrected += n
    if pid is not None:
        _error_in_job(state, g, _int(pid, "pid"))


def _error_in_job(state: NodeState, g: GpuState, pid: int) -> None:
    """What the driver logs when a job's read hits an uncorrectable HBM error, everywhere at once: the DBE
    (Xid 48), from Ampere on the row marked for remapping, pending until a GPU reset (Xid 63, the remapper's
    pending flag), and the error contained to the job that consumed it (Xid 94 in the format of the open GPU
    kernel modules' ``_gpuGenerateErrorLog``, ``Contained: SM (0x1). RST: No, D-RST: No``: the SM consumed the
    poisoned data, other work on the GPU goes on). NVIDIA's GPU memory error management guide: the pending
    remap takes effect at the next reset, and every GPU process ends before it."""
    lines = [
        _xid(
            g,
            48,
            "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 3, "
            "subpartition 1.",
            pid=str(pid),
            name="python3",
        )
    ]
    if g.remapped_rows is not None:
        g.remapped_rows.uncorrectable += 1
        g.remapped_rows.pending = True
        lines.append(
            _xid(g, 63, "Row Remapper: New row (0x0000000000ec51d0) marked for remapping, reset gpu to activate.")
        )
    lines.append(_xid(g, 94, "Contained: SM (0x1). RST: No, D-RST: No", pid=str(pid), name="python3"))
    append_kernel_log(state, lines)


def _ecc_reset(state: NodeState, gpu: Any = None, count: Any = 2, pid: Any = None) -> None:
    g = _gpu(state, gpu)
    g.ecc.volatile_uncorrected = 0  # volatile counters clear on a GPU reset
    if pid is not None and g.remapped_rows is not None:
        g.remapped_rows.pending = False  # and the reset activates the row the error marked


_GT_PER_LANE = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
_ENCODING = {1: 0.8, 2: 0.8}  # 8b/10b; Gen3+ is 128b/130b


def _pcie_gbps(gen: int, width: int) -> float:
    return _GT_PER_LANE.get(gen, 16.0) * _ENCODING.get(gen, 128 / 130) * width


def _pcie_degraded(state: NodeState, gpu: Any = None, width: Any = 8, gen: Any = None) -> None:
    g = _gpu(state, gpu)
    new_width = _int(width, "width")
    new_gen = g.pcie_gen_max if gen is None else _int(gen, "gen")
    if new_width >= g.pcie_width_max and new_gen >= g.pcie_gen_max:
        raise InputError(
            f"x{new_width} Gen{new_gen} is not below GPU {g.index}'s maximum (Gen{g.pcie_gen_max} x{g.pcie_width_max})"
        )
    g.pcie_width_current, g.pcie_gen_current = new_width, new_gen
    if "gpu_idle" in g.throttle_reasons:
        g.throttle_reasons.remove("gpu_idle")  # measured under load: a downshift is not idle power saving
    address = g.bus_id[-12:].lower()  # 0000:18:00.0
    domain, bus = address.split(":")[:2]
    upstream = f"{domain}:{max(int(bus, 16) - 2, 0):02x}:00.0"  # the switch port above the GPU
    # The kernel's PCI core message (drivers/pci/pci.c, pcie_report_downtraining).
    now, best = _GT_PER_LANE.get(new_gen, 16.0), _GT_PER_LANE.get(g.pcie_gen_max, 16.0)
    append_kernel_log(
        state,
        [
            f"nvidia {address}: {_pcie_gbps(new_gen, new_width):.3f} Gb/s available PCIe bandwidth, "
            f"limited by {now:.1f} GT/s PCIe x{new_width} link at {upstream} (capable of "
            f"{_pcie_gbps(g.pcie_gen_max, g.pcie_width_max):.3f} Gb/s with {best:.1f} GT/s PCIe "
            f"x{g.pcie_width_max} link)"
        ],
    )


def _pcie_restored(state: NodeState, gpu: Any = None, width: Any = 8, gen: Any = None) -> None:
    g = _gpu(state, gpu)
    g.pcie_width_current, g.pcie_gen_current = g.pcie_width_max, g.pcie_gen_max


def _nvlink_down(state: NodeState, gpu: Any = None, links: Any = None) -> None:
    g = _gpu(state, gpu)
    if not g.nvlinks:
        raise InputError(f"GPU {g.index} ({g.name}) has no NVLink")
    n = len(g.nvlinks) if links is None else min(_int(links, "links"), len(g.nvlinks))
    for link in g.nvlinks[:n]:
        link.active = False


def _nvlink_up(state: NodeState, gpu: Any = None, links: Any = None) -> None:
    for link in _gpu(state, gpu).nvlinks:
        link.active = True


def _thermal_throttle(state: NodeState, gpu: Any = None) -> None:
    g = _gpu(state, gpu)
    slowdown = g.temperature_slowdown_c or 87
    g.temperature_c = slowdown + 2
    if g.temperature_memory_c is not None:
        g.temperature_memory_c = max(g.temperature_memory_c, slowdown + 4)
    # Busy and too hot: the hardware holds the clocks down.
    g.throttle_reasons = [r for r in g.throttle_reasons if r != "gpu_idle"]
    for reason in ("sw_thermal_slowdown", "hw_thermal_slowdown"):
        if reason not in g.throttle_reasons:
            g.throttle_reasons.append(reason)
    for clock in ("graphics", "sm"):
        if clock in g.max_clocks_mhz:
            g.clocks_mhz[clock] = int(g.max_clocks_mhz[clock] * 0.55)
    g.power_draw_w = round(g.power_limit_w * 0.62, 2)


def _thermal_cooled(state: NodeState, gpu: Any = None) -> None:
    g = _gpu(state, gpu)
    fresh = _fresh(state)
    healthy = fresh.gpu(g.index) if fresh is not None else None
    g.throttle_reasons = list(healthy.throttle_reasons) if healthy else ["gpu_idle"]
    g.temperature_c = healthy.temperature_c if healthy else 35
    if healthy is not None:
        g.temperature_memory_c = healthy.temperature_memory_c
        g.clocks_mhz = dict(healthy.clocks_mhz)
        g.power_draw_w = healthy.power_draw_w


# ---- services, driver, modules, NCCL ---------------------------------------------------------


def _fabric_manager_stopped(state: NodeState) -> None:
    service = _service(state, "nvidia-fabricmanager.service")
    service.since_s = node_clock.advance(state, 1.0)
    service.active_state, service.sub_state = "failed", "failed"
    service.result, service.exec_main_status = "exit-code", 1
    # Without the fabric manager the GPUs wait for fabric registration, and CUDA refuses to start.
    for g in state.gpus:
        if g.fabric_state is not None:
            g.fabric_state, g.fabric_status = "In Progress", None


def _fabric_manager_started(state: NodeState) -> None:
    _restore_service(state, "nvidia-fabricmanager.service")
    for g in state.gpus:
        if g.fabric_state is not None:
            g.fabric_state, g.fabric_status = "Completed", "Success"


# Why the fabric manager fails, on the node's disk: a drop-in left from a test starts it with a copy of its
# config whose TOPOLOGY_FILE_PATH names a folder without the board's topology file. The fabric manager then
# exits at every start, at boot too, logging "failed to open fabric topology file PATH" (its fabric parser's
# FM_LOG_ERROR/FM_SYSLOG_ERR; seen on HGX H100/H200 in NVIDIA/nvrc#203), until the config or the drop-in is put
# right: a restart or a reboot alone does not bring it back.
FM_TEST_CFG = "/etc/nvidia-fabricmanager/fabricmanager.cfg"
FM_TEST_TOPOLOGY_PATH = "/opt/nvidia/nvswitch"
FM_DROP_IN = "/etc/systemd/system/nvidia-fabricmanager.service.d/override.conf"


def fabric_manager_test_drop_in() -> str:
    return (
        f"# fabric manager test config\n[Service]\nExecStart=\nExecStart=/usr/bin/nv-fabricmanager -c {FM_TEST_CFG}\n"
    )


def _fabric_manager_cause(state: NodeState, root: Path) -> None:
    from assessor.sim.config_root import FABRIC_MANAGER_CFG, default_files, read_config, write_node_file

    shipped = read_config(root, FABRIC_MANAGER_CFG) or default_files(state).get(FABRIC_MANAGER_CFG, "")
    lines = [
        f"TOPOLOGY_FILE_PATH={FM_TEST_TOPOLOGY_PATH}" if line.startswith("TOPOLOGY_FILE_PATH=") else line
        for line in shipped.splitlines()
    ]
    write_node_file(root, FM_TEST_CFG, "\n".join(lines) + "\n")
    write_node_file(root, FM_DROP_IN, fabric_manager_test_drop_in())


def _fabric_manager_cause_gone(state: NodeState, root: Path) -> None:
    for node_path in (FM_DROP_IN, FM_TEST_CFG):
        target = root / node_path.lstrip("/")
        if target.is_file() or target.is_symlink():
            target.unlink()


# The IMEX daemon of a GB200 NVL72 compute tray, failed: last night the rack's management network moved from
# 10.114.1.0/24 to 10.114.2.0/24 (trays 1-18 at .11-.28). The tray's netplan has its new address, but its IMEX
# node list (/etc/nvidia-imex/nodes_config.cfg) still lists the rack's old addresses, so the daemon finds none of
# them on this node and exits, at every start and at boot, logging "No matching network interface found for any IP
# addresses in the node configuration file ..." (assessor.sim.tools.system.imex_error). A restart or a reboot alone
# does not bring it back: the node list must name the trays' new addresses (the same list on every tray).
IMEX_OLD_NET, IMEX_NEW_NET, IMEX_TRAYS = "10.114.1", "10.114.2", 18


def imex_nodes_list(net: str) -> str:
    return "".join(f"{net}.{11 + i}\n" for i in range(IMEX_TRAYS))


def imex_netplan(address: str) -> str:
    gateway = address.rsplit(".", 1)[0] + ".1"
    return (
        "# This file is generated from information provided by the datasource.  Changes\n"
        "# to it will not persist across an instance reboot.\n"
        "network:\n    version: 2\n    ethernets:\n        enP5p9s0:\n"
        f"            addresses:\n            - {address}/24\n"
        f"            routes:\n            -   to: default\n                via: {gateway}\n"
    )


def _imex_stopped(state: NodeState) -> None:
    service = _service(state, IMEX_UNIT)
    service.since_s = node_clock.advance(state, 1.0)
    service.active_state, service.sub_state = "failed", "failed"
    service.result, service.exec_main_status = "exit-code", 1


def _imex_started(state: NodeState) -> None:
    _restore_service(state, IMEX_UNIT)


# The keys of the config the nvidia-imex package installs that the lab's story touches, with their defaults
# (NVIDIA IMEX guide, "IMEX Service Config Options"; the installed file as aws/aws-parallelcluster-cookbook#2996
# ships it).
IMEX_DEFAULT_CONFIG = (
    "DAEMONIZE=1\nBIND_INTERFACE_IP=\nSERVER_PORT=50000\nIMEX_NODE_CONFIG_FILE=" + IMEX_NODES_CONFIG + "\n"
    "IMEX_WAIT_FOR_QUORUM=RECOVERY\nIMEX_ENABLE_AUTH_ENCRYPTION=0\n"
)


def _imex_cause(state: NodeState, root: Path) -> None:
    from assessor.sim.config_root import read_config, write_node_file

    if read_config(root, IMEX_CONFIG) is None:
        write_node_file(root, IMEX_CONFIG, IMEX_DEFAULT_CONFIG)
    write_node_file(root, NETPLAN_CONFIG, imex_netplan(f"{IMEX_NEW_NET}.11"))
    write_node_file(root, IMEX_NODES_CONFIG, imex_nodes_list(IMEX_OLD_NET))


def _imex_cause_gone(state: NodeState, root: Path) -> None:
    from assessor.sim.config_root import write_node_file

    write_node_file(root, IMEX_NODES_CONFIG, imex_nodes_list(IMEX_NEW_NET))


def _newer(version: str) -> str:
    """A later release of the same branch: 535.129.03 -> 535.161.03."""
    parts = version.split(".")
    if len(parts) >= 2 and parts[1].isdigit():
        parts[1] = str(int(parts[1]) + 32)
        return ".".join(parts)
    return version + ".1"


def _driver_mismatch(state: NodeState, version: Any = None) -> None:
    drv = state.driver
    library = str(version) if version is not None else _newer(drv.kernel_module_version)
    if library == drv.kernel_module_version:
        raise InputError(f"version {library} is the loaded kernel module's: no mismatch")
    # The packages were upgraded without a reboot: new user-space library, old module still loaded.
    drv.version = library
    append_kernel_log(
        state,
        [
            f"NVRM: API mismatch: the client has the version {library}, but",
            f"NVRM: this kernel module has the version {drv.kernel_module_version}.  Please",
            "NVRM: make sure that this kernel module and all NVIDIA driver",
            "NVRM: components have the same version.",
        ],
    )


def _driver_reloaded(state: NodeState, version: Any = None) -> None:
    state.driver.kernel_module_version = state.driver.version  # the reboot loads the new module


def _peermem_unloaded(state: NodeState) -> None:
    if not state.module_loaded("nvidia_peermem"):
        raise InputError(f"nvidia_peermem is not loaded on {state.host}")
    state.modules = [m for m in state.modules if m.name != "nvidia_peermem"]
    for m in state.modules:
        if "nvidia_peermem" in m.used_by:
            m.used_by.remove("nvidia_peermem")
            if m.used_by_count is not None:
                m.used_by_count = max(0, m.used_by_count - 1)


def _peermem_loaded(state: NodeState) -> None:
    from assessor.sim.tools import Session
    from assessor.sim.tools.system import modprobe

    result = modprobe(["nvidia_peermem"], Session(state=state))
    if result.exit_code != 0:
        raise InputError(result.stderr.strip())


def _nccl_socket_fallback(state: NodeState, hca: Any = "mlx5_99") -> None:
    # NCCL_IB_HCA naming no HCA of this node: NCCL finds no IB device and falls back to sockets.
    state.nccl_env["NCCL_IB_HCA"] = str(hca)


def _nccl_ib_back(state: NodeState, hca: Any = "mlx5_99") -> None:
    fresh = _fresh(state)
    value = fresh.nccl_env.get("NCCL_IB_HCA") if fresh is not None else None
    if value is None:
        state.nccl_env.pop("NCCL_IB_HCA", None)
    else:
        state.nccl_env["NCCL_IB_HCA"] = value


def _persistence_off(state: NodeState) -> None:
    for g in state.gpus:
        g.persistence_mode = False
    if "nvidia-persistenced.service" in state.services:
        service = state.services["nvidia-persistenced.service"]
        service.since_s = node_clock.advance(state, 1.0)
        service.active_state, service.sub_state = "inactive", "dead"


def _persistence_on(state: NodeState) -> None:
    for g in state.gpus:
        g.persistence_mode = True
    if "nvidia-persistenced.service" in state.services:
        _restore_service(state, "nvidia-persistenced.service")


def _mig_gpus(state: NodeState, gpu: Any) -> list[GpuState]:
    chosen = list(state.gpus) if gpu is None else [_gpu(state, gpu)]
    supported = [g for g in chosen if g.mig_supported]
    if not supported:
        raise InputError(f"no GPU with MIG support among {', '.join(str(g.index) for g in chosen)}")
    return supported


def _mig_pending(state: NodeState, gpu: Any = None) -> None:
    for g in _mig_gpus(state, gpu):
        # `nvidia-smi -mig 1` ran but the GPU was never reset: enabled pending, still off.
        g.mig_mode_current, g.mig_mode_pending = False, True


def _mig_pending_cleared(state: NodeState, gpu: Any = None) -> None:
    for g in _mig_gpus(state, gpu):
        g.mig_mode_pending = g.mig_mode_current


def _dcgm_stopped(state: NodeState) -> None:
    service = _service(state, "nvidia-dcgm.service")
    service.since_s = node_clock.advance(state, 1.0)
    service.active_state, service.sub_state = "inactive", "dead"
    service.result, service.exec_main_status = "success", 0


def _dcgm_started(state: NodeState) -> None:
    _restore_service(state, "nvidia-dcgm.service")


def _gpu_job(state: NodeState, gpu: Any = None, pid: Any = None, unit: Any = None) -> None:
    """A compute job (python3, 30 GiB) left running on a GPU: it holds the GPU until killed or its unit stops."""
    g = _gpu(state, gpu)
    number = _int(pid, "pid") if pid is not None else 24000 + g.index * 7
    if any(p.pid == number for gpu_ in state.gpus for p in gpu_.processes):
        raise InputError(f"a process {number} already runs on {state.host}")
    unit_name = None
    if unit is not None:
        unit_name = str(unit) if "." in str(unit) else f"{unit}.service"
        state.services.setdefault(unit_name, ServiceState(description=f"Training job {unit_name}"))
    g.processes.append(GpuProcess(pid=number, name="python3", used_memory_mib=30720, unit=unit_name))
    g.memory_used_mib += 30720


def _gpu_job_gone(state: NodeState, gpu: Any = None, pid: Any = None, unit: Any = None) -> None:
    g = _gpu(state, gpu)
    gone = [p for p in g.processes if pid is None or p.pid == _int(pid, "pid")]
    g.processes = [p for p in g.processes if p not in gone]
    g.memory_used_mib = max(0, g.memory_used_mib - sum(p.used_memory_mib for p in gone))


# ---- the table -------------------------------------------------------------------------------

FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "hca-firmware-old",
            "an HCA runs older firmware than the rest of the fleet, on flash too (options ca, version)",
            "firmware.baseline",
            link_faults.hca_firmware_old,
            link_faults.hca_firmware_restored,
        ),
        Fault(
            "switch-firmware-old",
            "one switch of the fabric (the last leaf by default) runs older firmware than the rest (options switch, "
            "version); flint -d lid-N q shows it, the fabric team updates it (a ticket, graded by design.diagnosis)",
            "firmware.baseline",
            switch_firmware.switch_firmware_old,
            switch_firmware.switch_firmware_restored,
        ),
        Fault(
            "vbios-mismatch",
            "a GPU runs another VBIOS than the rest of the fleet (options gpu, version)",
            "firmware.baseline",
            link_faults.vbios_mismatch,
            link_faults.vbios_restored,
        ),
        Fault(
            "ib-rails-crossed",
            "two rails' cables swapped at the leaves, every port still Active at full rate (options a, b)",
            "ib.cabling",
            cabling_faults.rails_crossed,
            cabling_faults.cables_restored,
        ),
        Fault(
            "ib-degraded-width",
            "an IB port trains on two of its four lanes: Active at full speed, 2X, half the rate (option ca)",
            "ib.rate",
            cabling_faults.link_on_fewer_lanes,
            cabling_faults.lanes_restored,
        ),
        Fault(
            "ib-cable-wrong-leaf",
            "one rail's cable in another rail's leaf, on a free port (options ca, leaf, port)",
            "ib.cabling",
            cabling_faults.cable_in_wrong_leaf,
            cabling_faults.cables_restored,
        ),
        Fault(
            "ib-ber-high",
            "a marginal cable or transceiver: the port stays Active at full rate, mlxlink -c counts raw BER near "
            "the FEC limit, uncorrected errors and link recoveries, 'Bad signal integrity' (option ca)",
            "cable.ber",
            link_faults.ber_high,
            link_faults.ber_restored,
        ),
        Fault(
            "ib-link-flapped",
            "an IB link went down and retrained days ago: its channel is clean now, but mlxlink -c still counts "
            "the old link-down events and uncorrected errors until they are cleared (option ca)",
            "cable.ber",
            link_faults.link_flapped,
            link_faults.ber_restored,
        ),
        Fault(
            "ib-port-down",
            "an IB port loses its link: Down/Polling (option ca, default the last compute HCA)",
            "ib.ports_active",
            _ib_port_down,
            _ib_port_up,
        ),
        Fault(
            "no-subnet-manager",
            "the subnet manager is gone: every IB port stays Initializing/LinkUp, no LIDs",
            "ib.ports_active",
            _no_subnet_manager,
            _subnet_manager_back,
        ),
        Fault(
            "ib-degraded-rate",
            "an IB port trains one speed grade down: 200 on NDR, 100 on HDR (option ca)",
            "ib.rate",
            _ib_degraded_rate,
            _ib_rate_back,
        ),
        Fault(
            "xid-79",
            "a GPU falls off the bus: Xid 79 in the kernel log, NVML reports it lost (option gpu)",
            "gpu.xid",
            _xid_79,
            _clear_xid,
        ),
        Fault(
            "xid-48",
            "a double-bit ECC error: Xid 48, an uncorrectable ECC count and, from Ampere on, a row marked for "
            "remapping (Xid 63) (option gpu)",
            "gpu.xid",
            _xid_48,
            _revert_xid_48,
        ),
        Fault(
            "xid-74",
            "a fatal NVLink error: Xid 74 and the link down until reset (options gpu, link)",
            "gpu.xid",
            _xid_74,
            _revert_xid_74,
        ),
        Fault(
            "row-remap-pending",
            "an uncorrectable error marked a row for remapping: reset needed (option gpu)",
            "gpu.row_remap",
            _row_remap_pending,
            _row_remap_applied,
        ),
        Fault(
            "ecc-uncorrectable",
            "volatile uncorrectable ECC errors on a GPU (options gpu, count; pid: a job hit it, logged as Xid 48, "
            "63 with a row marked for remapping, and 94 contained to that job)",
            "gpu.ecc_errors",
            _ecc_uncorrectable,
            _ecc_reset,
        ),
        Fault(
            "pcie-degraded",
            "a GPU's PCIe link trained narrow: x8 by default (options gpu, width, gen)",
            "gpu.pcie_link",
            _pcie_degraded,
            _pcie_restored,
        ),
        Fault(
            "fabric-manager-stopped",
            "nvidia-fabricmanager failed on a test config a drop-in starts it with (a topology path without the "
            "topology file; logged at every start): fabric In Progress, CUDA 'system not yet initialized'",
            "fabric.state",
            _fabric_manager_stopped,
            _fabric_manager_started,
            _fabric_manager_cause,
            _fabric_manager_cause_gone,
        ),
        Fault(
            "imex-stopped",
            "nvidia-imex failed on a GB200 tray: its node list (/etc/nvidia-imex/nodes_config.cfg) names the rack's "
            "old addresses, none of them this tray's (logged at every start): no multi-node NVLink memory sharing",
            "services.active",
            _imex_stopped,
            _imex_started,
            _imex_cause,
            _imex_cause_gone,
        ),
        Fault(
            "driver-mismatch",
            "driver packages upgraded without a reboot: library newer than the loaded kernel module (option version)",
            "driver.loaded",
            _driver_mismatch,
            _driver_reloaded,
        ),
        Fault(
            "peermem-unloaded",
            "nvidia_peermem is not loaded: no GPUDirect RDMA",
            "ib.peermem",
            _peermem_unloaded,
            _peermem_loaded,
        ),
        Fault(
            "nccl-socket-fallback",
            "NCCL_IB_HCA names no HCA of the node (mlx5_99): NCCL falls back to sockets (option hca)",
            "nccl.transport",
            _nccl_socket_fallback,
            _nccl_ib_back,
        ),
        Fault(
            "iommu-translated",
            "the kernel booted with intel_iommu=on and no iommu=pt (in /etc/default/grub and grub.cfg): DMA "
            "translated, GPU peer-to-peer over PCIe at half speed",
            "node.iommu",
            grub.iommu_translated,
            grub.iommu_default,
            grub.iommu_translated_cause,
            grub.iommu_translated_cause_gone,
        ),
        Fault(
            "nvlink-down",
            "a GPU's NVLinks are inactive (options gpu, links: how many, default all)",
            "gpu.nvlink",
            _nvlink_down,
            _nvlink_up,
        ),
        Fault(
            "persistence-off",
            "nvidia-persistenced stopped and persistence mode off on every GPU",
            "gpu.persistence",
            _persistence_off,
            _persistence_on,
        ),
        Fault(
            "mig-pending",
            "MIG enabled but the GPU never reset: mode pending (option gpu, default all)",
            "mig.mode",
            _mig_pending,
            _mig_pending_cleared,
        ),
        Fault(
            "thermal-throttle",
            "a GPU overheats: HW thermal slowdown, temperature past its slowdown point (option gpu)",
            "gpu.throttle",
            _thermal_throttle,
            _thermal_cooled,
        ),
        Fault(*KERNEL_UPDATE_NO_DKMS),
        Fault(
            "dcgm-stopped",
            "the DCGM host engine (nvidia-dcgm) is stopped: dcgmi cannot connect",
            "services.active",
            _dcgm_stopped,
            _dcgm_started,
        ),
    )
}


# Conditions: states a node can be put in that no catalogue check fails on, but that change how it
# behaves under a candidate's hands (``gpulab sim fault STATE gpu-job`` injects them like faults).
CONDITIONS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "gpu-job",
            "a compute job (python3) holds a GPU: reset and A100 MIG changes refused until it ends "
            "(options gpu, pid, unit: the systemd unit that runs it)",
            "",
            _gpu_job,
            _gpu_job_gone,
        ),
    )
}


def get(name: str) -> Fault:
    """The fault or condition called ``name``; InputError naming the closest ones when there is none."""
    fault = FAULTS.get(name) or CONDITIONS.get(name)
    if fault is None:
        import difflib

        close = difflib.get_close_matches(name, [*FAULTS, *CONDITIONS], n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise InputError(f"unknown fault {name!r}{hint} (faults: {', '.join(sorted(FAULTS))})")
    return fault


def inject(path: str | os.PathLike[str], name: str, **options: Any) -> str:
    """Apply fault ``name`` to the state file at ``path`` (locked read-modify-write); a one-line report."""
    from assessor.sim.config_root import populated, root_for_state, sync_nccl_conf
    from assessor.sim.state import updating

    fault = get(name)
    with updating(path) as state:
        before = dict(state.nccl_env)
        fault.apply(state, **options)
        host = state.host
        root = root_for_state(path)
        sync_nccl_conf(root, before, state.nccl_env)
        if populated(root):
            fault.write_cause(state, root)
    shown = ", ".join(f"{k}={v}" for k, v in sorted(options.items()))
    effect = f"{fault.check} should now fail" if fault.check else fault.description
    return f"{name} injected into {host} ({path}){f' with {shown}' if shown else ''}: {effect}"


def repair(path: str | os.PathLike[str], name: str, **options: Any) -> str:
    """Revert fault ``name`` in the state file at ``path``; a one-line report."""
    from assessor.sim.config_root import populated, root_for_state, sync_nccl_conf
    from assessor.sim.state import updating

    fault = get(name)
    with updating(path) as state:
        before = dict(state.nccl_env)
        root = root_for_state(path)
        if populated(root):
            fault.remove_cause(state, root)
        fault.revert(state, **options)
        host = state.host
        sync_nccl_conf(root, before, state.nccl_env)
    return f"{name} reverted on {host} ({path})"


# The container stack's faults live in their own module.
FAULTS.update({spec[0]: Fault(*spec) for spec in CONTAINER_FAULTS})

# The Slurm cluster on the node (a condition) and its faults live in their own module.
FAULTS.update({spec[0]: Fault(*spec) for spec in SLURM_FAULTS})
CONDITIONS.update({spec[0]: Fault(*spec) for spec in SLURM_CONDITIONS})

# The peer node a lab measures east-west against (a condition) lives in its own module.
CONDITIONS.update({spec[0]: Fault(*spec) for spec in PEER_CONDITIONS})

# The BMC's faults live in their own module.
FAULTS.update({spec[0]: Fault(*spec) for spec in BMC_FAULTS})

# Faults only an active DCGM diagnostic finds live in their own module.
FAULTS.update({spec[0]: Fault(*spec) for spec in DCGM_FAULTS})
