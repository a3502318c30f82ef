"""The state of one simulated node: a JSON document that the mock NVML and the simulated tools read and change.

One file per node. Its top-level object is :class:`NodeState` (``schema: gpulab.simstate/1``)::

    {"schema": "gpulab.simstate/1", "fixture": "hgx-h100", "host": "hgx-h100-01", "system": "...",
     "driver":   {"version": "565.57.01", "kernel_module_version": "565.57.01", "cuda_version": "12.7", ...},
     "gpus":     [GpuState, ...],          # in NVML index order (PCI bus order)
     "nvswitches": [NvSwitchState, ...],   # empty on PCIe systems
     "ib_hcas":  [IbHcaState, ...],        # each with its ports
     "sm_present": true,                   # an InfiniBand subnet manager answers on the fabric
     "modules":  [ModuleState, ...],       # what lsmod lists
     "services": {"nvidia-fabricmanager.service": ServiceState, ...},
     "kernel_log": ["[    0.000000] Linux version ...", ...],   # dmesg lines, oldest first
     "nccl_env": {"NCCL_IB_HCA": "mlx5_0,..."},
     "perf": PerfState, "os_release": {...}, "uname": "Linux ...",
     "clock": {"boot_time": "2025-01-15T08:00:00+00:00", "uptime_s": 7380.0},   # the node's one clock
     "daemons_hold_gpus": false}           # true: running GPU daemons (DCGM, persistenced...) block a reset

Older state files without the newer fields (``clock``, ``daemons_hold_gpus``, a process's ``unit``) load
with their defaults.

Conventions a tool writer can rely on:

- Units are in the field names (``_mib``, ``_w``, ``_c``, ``_mhz``, ``_gbps``); NVML's own units (bytes,
  milliwatts) are the mock NVML's business, not the state's.
- ``None`` means "not supported on this part" (nvidia-smi prints ``N/A``): ``retired_pages`` on HBM GPUs,
  ``remapped_rows`` on parts without row remapping, ``ecc_mode_current`` on GPUs without ECC,
  ``fabric_state`` on GPUs outside an NVSwitch fabric. MIG support is ``mig_supported``.
- State fields are authoritative and independent: a fault sets what the real node would show. A subnet manager
  that goes away is ``sm_present: false`` *and* its IB ports in ``Initializing``/``LinkUp``; a driver upgrade
  without a reboot is ``driver.version`` (user-space library) differing from ``driver.kernel_module_version``.
- MIG instances are stored per GPU in the JSON shape shared with :mod:`assessor.sim.mig`:
  ``{gi_id, profile_id, name, start, size, compute_instances: [{ci_id, profile_id, name, start, size}]}``
  with short profile names (``3g.40gb``; a compute instance ``1c.3g.40gb``, or ``3g.40gb`` when it spans the GI).

Every write stamps the file (``integrity``: a keyed hash over the canonical document), so a state changed
by anything but the simulator's own code (a hand edit) no longer matches its stamp (:func:`stamp_status`).
The key is in this source, so the stamp is tamper *evidence* for graders, not a secret. ``node_id`` names
the node a lab was started on (``lab start`` sets a new one; empty on a node no lab started) and ``marks``
lists what gpulab did to it that a grade must know of (a lab's reference solution applied).

Writes are atomic (a temporary file in the same directory, fsync, ``os.replace``): a crash leaves the old
file or the new one, never half of one. :func:`updating` holds an exclusive ``fcntl`` lock on a sidecar
``.lock`` file for a whole read-modify-write, so two simulated tools run at once don't lose each other's changes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.facts import from_jsonable, to_jsonable
from assessor.sim.package_db import PackageDb

SCHEMA = "gpulab.simstate/1"

# Names of NVML's clock event ("throttle") reasons, in bit order, as stored in ``GpuState.throttle_reasons``.
THROTTLE_REASON_BITS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}


@dataclass
class DriverState:
    """The NVIDIA driver: user-space library (NVML) and kernel module, which can disagree."""

    version: str  # libnvidia-ml / nvidia-smi: 535.129.03
    kernel_module_version: str  # /proc/driver/nvidia/version; differs from ``version`` = mismatch fault
    cuda_version: str  # highest CUDA the driver supports: 12.2
    loaded: bool = True  # False: the kernel module is not loaded (nvidia-smi: "couldn't communicate")
    open_kernel_module: bool = False
    build_date: str | None = None  # the date on the /proc/driver/nvidia/version line


@dataclass
class EccCounters:
    """Total ECC error counts (NVML ``nvmlDeviceGetTotalEccErrors``)."""

    volatile_corrected: int = 0
    volatile_uncorrected: int = 0
    aggregate_corrected: int = 0
    aggregate_uncorrected: int = 0


@dataclass
class RemappedRows:
    """HBM row remapping (A100, H100, H200; also GDDR6 Ada parts): NVML ``nvmlDeviceGetRemappedRows``."""

    correctable: int = 0
    uncorrectable: int = 0
    pending: bool = False  # a remap waits for a GPU reset
    failure: bool = False  # a remap failed: RMA candidate


@dataclass
class RetiredPages:
    """Dynamic page retirement, only on parts without row remapping (V100, T4...)."""

    single_bit: int = 0
    double_bit: int = 0
    pending: bool = False


@dataclass
class NvLinkState:
    link: int
    active: bool = True
    version: int = 4  # NVLink generation: 3 on A100, 4 on H100/H200
    speed_gbps: float | None = None  # per link, GB/s as nvidia-smi nvlink -s prints it
    remote: str = "nvswitch"  # what the link goes to: nvswitch, or GPUn on direct-attach boards
    errors: dict[str, int] = field(default_factory=lambda: {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0})


@dataclass
class ComputeInstanceState:
    ci_id: int
    profile_id: int
    name: str  # 1c.3g.40gb, or 3g.40gb when it spans the whole GPU instance
    start: int
    size: int


@dataclass
class GpuInstanceState:
    gi_id: int
    profile_id: int  # the ID column of nvidia-smi mig -lgip: 19, 14, 9, 5, 0...
    name: str  # short name: 3g.40gb
    start: int  # placement on the memory-slice axis
    size: int
    compute_instances: list[ComputeInstanceState] = field(default_factory=list)


@dataclass
class GpuProcess:
    """A process with the GPU open (nvidia-smi's process table; what blocks a reset or a MIG change)."""

    pid: int
    name: str  # nv-hostengine, python3
    type: str = "C"  # C compute, G graphics
    used_memory_mib: int = 0
    unit: str | None = None  # the systemd unit that runs it (stopping the unit ends it); None: started by hand
    gi_id: int | None = None  # the MIG device it runs on (GPU and compute instance); None outside MIG
    ci_id: int | None = None


@dataclass
class GpuState:
    index: int
    name: str  # NVIDIA H100 80GB HBM3
    uuid: str
    serial: str
    bus_id: str  # 00000000:18:00.0, as nvidia-smi and NVML print it
    architecture: str  # Ampere, Hopper, Ada Lovelace
    vbios: str
    pci_device_id: int  # 0x233010DE: device id << 16 | vendor id, as NVML's pciDeviceId
    pci_subsystem_id: int
    memory_total_mib: int
    memory_used_mib: int = 0
    memory_reserved_mib: int = 0
    board_part_number: str | None = None
    minor_number: int | None = None
    numa_node: int | None = None
    cpu_affinity: str | None = None  # 48-63,176-191 as nvidia-smi topo -m prints it
    pcie_switch: str | None = None  # label of the PCIe switch it sits behind (topology: PIX/PXB when shared)
    persistence_mode: bool = True
    compute_mode: str = "Default"  # Default, Exclusive_Process, Prohibited
    ecc_mode_current: bool | None = True  # None: no ECC on this part
    ecc_mode_pending: bool | None = True
    ecc: EccCounters = field(default_factory=EccCounters)
    remapped_rows: RemappedRows | None = field(default_factory=RemappedRows)  # None: not supported
    retired_pages: RetiredPages | None = None  # None: N/A (HBM parts remap rows instead)
    temperature_c: int = 30
    temperature_memory_c: int | None = None
    temperature_slowdown_c: int | None = None
    temperature_shutdown_c: int | None = None
    temperature_max_operating_c: int | None = None
    temperature_memory_max_c: int | None = None
    power_draw_w: float = 60.0
    power_limit_w: float = 400.0  # current (enforced) limit
    power_default_limit_w: float | None = None
    power_min_limit_w: float | None = None
    power_max_limit_w: float | None = None
    clocks_mhz: dict[str, int] = field(default_factory=dict)  # graphics, sm, memory, video: current
    max_clocks_mhz: dict[str, int] = field(default_factory=dict)
    # Set by nvidia-smi -ac MEM,GR ({"graphics": .., "memory": ..}); empty: the board's default applications clocks.
    applications_clocks_mhz: dict[str, int] = field(default_factory=dict)
    locked_gpu_clocks_mhz: list[int] | None = None  # nvidia-smi -lgc MIN,MAX; None: not locked (-rgc)
    accounting_mode: bool = False  # nvidia-smi -am 1
    performance_state: str = "P0"
    throttle_reasons: list[str] = field(default_factory=list)  # keys of THROTTLE_REASON_BITS that are active
    pcie_gen_current: int = 4
    pcie_gen_max: int = 4
    pcie_width_current: int = 16
    pcie_width_max: int = 16
    nvlinks: list[NvLinkState] = field(default_factory=list)  # empty: no NVLink
    mig_supported: bool = False
    mig_mode_current: bool = False
    mig_mode_pending: bool = False
    mig_instances: list[GpuInstanceState] = field(default_factory=list)
    fabric_state: str | None = None  # Completed, In Progress, Not Started; None: not in an NVSwitch fabric
    fabric_status: str | None = None  # Success, or the NVML error text
    fabric_clique_id: int | None = None
    # The NVLink domain's cluster UUID (GB200 NVL72: shared by every GPU of the rack); None: all zeros.
    fabric_cluster_uuid: str | None = None
    processes: list[GpuProcess] = field(default_factory=list)
    # Who keeps the GPU busy so a MIG mode change stays pending / a reset is refused
    # ("In use by another client"), e.g. ["nvidia-dcgm.service (nv-hostengine)"]. Empty: nothing.
    mig_reset_blocked_by: list[str] = field(default_factory=list)
    passthrough: bool = False  # a VM with the GPU passed through: no GPU reset possible
    lost: bool = False  # fell off the bus (Xid 79): NVML answers GpuIsLost
    # Weaknesses no counter shows until a test exercises them (assessor.sim.dcgm_faults): "weak-hbm-row", HBM
    # cells that only the memtest patterns of dcgmi diag -r 4 trip. Empty: none.
    latent_faults: list[str] = field(default_factory=list)


# A job keeps its GPU busy: GPU-Util (SMs) and memory-controller utilisation while one runs.
JOB_UTILIZATION = (100, 38)


def gpu_utilization(gpu: GpuState) -> tuple[int, int]:
    """(GPU %, memory %) as nvidia-smi and NVML report them: busy while a job (a compute process that no
    systemd unit runs, such as an all_reduce_perf) is on the GPU, idle otherwise."""
    busy = any(p.type == "C" and p.unit is None for p in gpu.processes)
    return JOB_UTILIZATION if busy else (0, 0)


@dataclass
class NvSwitchState:
    index: int
    bus_id: str
    name: str = "NVSwitch"
    links_active: int | None = None


@dataclass
class CableModuleState:
    """The cable or transceiver in a port's cage, as ``mlxlink -m`` reads it (``assessor.sim.tools.mlxlink``)."""

    identifier: str = "OSFP"
    vendor: str = "NVIDIA"
    part_number: str = "MMA4Z00-NS400"  # NDR 400G OSFP multimode SR4 transceiver (flat top, for the HCA cage)
    serial: str = ""  # empty: derived from the port's HCA (stable per node)
    fw_version: str | None = "47.171.0001"  # None: a passive copper cable (no firmware)
    cable_type: str = "Optical Module"
    length_m: int = 30
    temperature_c: int = 47
    rx_power_dbm: list[float] = field(default_factory=lambda: [1.886, 1.989, 2.281, 1.976])
    tx_power_dbm: list[float] = field(default_factory=lambda: [1.562, 1.427, 1.559, 1.761])


@dataclass
class PortPhyState:
    """A port's physical layer as ``mlxlink -c`` reads it: the channel's error rates since the counters were
    last cleared (``mlxlink --pc``, a reboot), the troubleshooting verdict, and the module in the cage."""

    raw_ber: str = "2E-9"  # pre-FEC, as mlxlink prints it (PAM4 links run with raw errors that FEC corrects)
    effective_ber: str = "15E-255"  # post-FEC: mlxlink's way of writing none at all
    effective_errors_per_min: float = 0.0  # errors FEC could not correct, per minute of link time
    past_effective_errors: int = 0  # uncorrected errors counted before now (a flap last week), until a clear
    link_down: int = 0
    link_recovery: int = 0
    cleared_at_s: float = 0.0  # the node's uptime when the counters were last cleared
    status_opcode: int = 0  # the troubleshooting opcode (0: no issue; 15: bad signal integrity)
    module: CableModuleState = field(default_factory=CableModuleState)


@dataclass
class IbPeerState:
    """The switch port a cable lands on, where it is not the one the site's cabling plan gives
    (:mod:`assessor.sim.fabric`): two rails crossed at the leaf, a cable in the wrong leaf."""

    switch: str  # the switch's name, as its node description carries it: ib-leaf-03
    port: int


@dataclass
class IbPortState:
    port: int = 1
    state: str = "Active"  # Active, Down, Initializing, Armed
    physical_state: str = "LinkUp"  # LinkUp, Polling, Disabled, ...
    rate_gbps: float = 200  # ibstat Rate
    width: str = "4X"
    speed: str | None = None  # HDR, NDR (ibstatus: "200 Gb/sec (4X HDR)")
    link_layer: str = "InfiniBand"  # InfiniBand, Ethernet
    base_lid: int = 0
    sm_lid: int = 0
    lmc: int = 0
    port_guid: str | None = None
    capability_mask: str | None = None
    netdev: str | None = None  # ibp12s0, ens1np0
    peer: IbPeerState | None = None  # None: cabled where the plan says (assessor.sim.fabric)
    phy: PortPhyState = field(default_factory=PortPhyState)  # what mlxlink reads of the port's physical layer


@dataclass
class IbHcaState:
    name: str  # mlx5_0
    ca_type: str  # MT4123 (ConnectX-6), MT4129 (ConnectX-7)
    firmware: str
    node_guid: str
    sys_image_guid: str
    hw_version: str = "0"
    board_id: str | None = None
    vendor_part_id: int | None = None
    bus_id: str | None = None  # PCI address, 0000:0c:00.0
    numa_node: int | None = None
    pcie_switch: str | None = None  # shared label with GPUs behind the same switch
    role: str = "compute"  # compute, storage, management
    rail: int | None = None  # the fabric rail (1..N) of a compute HCA; None: its place among the compute HCAs
    ports: list[IbPortState] = field(default_factory=list)
    # The image burned to flash that runs after ``mlxfwreset`` or a reboot; None: the running one is on flash.
    firmware_next: str | None = None


@dataclass
class ModuleState:
    name: str
    size: int
    used_by: list[str] = field(default_factory=list)
    used_by_count: int | None = None  # lsmod's count when it differs from len(used_by) (users without a name)


@dataclass
class ServiceState:
    """A systemd unit as ``systemctl show`` describes it."""

    load_state: str = "loaded"  # loaded, not-found
    active_state: str = "active"  # active, inactive, failed
    sub_state: str = "running"  # running, dead, failed, exited
    unit_file_state: str = "enabled"  # enabled, disabled, "" when not found
    result: str = "success"  # success, exit-code
    exec_main_status: int = 0
    description: str | None = None
    # Seconds after boot at which the unit entered its present state (systemctl status "since");
    # None: during boot (its start at boot, or never started).
    since_s: float | None = None


@dataclass
class BmcUserState:
    """One user slot of the BMC (IPMI user id 1..N). The password is never kept: only its salted hash."""

    id: int
    name: str = ""
    enabled: bool = False
    # the privilege limit on LAN channel 1: 1 callback, 2 user, 3 operator, 4 admin, 15 no access, 0 never set
    privilege: int = 0
    password_hash: str = ""  # "salt$sha256"; "" never set
    factory_password: bool = False  # still the password it left the factory with


@dataclass
class BmcState:
    """The node's BMC as ``ipmitool`` reaches it in-band: LAN channel 1 and its users (assessor.sim.tools.ipmitool)."""

    ip_source: str = "dhcp"  # static | dhcp
    ip: str = "0.0.0.0"
    netmask: str = "0.0.0.0"
    gateway: str = "0.0.0.0"
    mac: str = "00:00:00:00:00:00"
    vlan: int | None = None  # None: 802.1q disabled
    users: list[BmcUserState] = field(default_factory=list)
    firmware: str = "1.0"
    resets: int = 0  # cold resets since the lab started


@dataclass
class DockerDaemonState:
    """What the running docker daemon read at its last start (:mod:`assessor.sim.containers`)."""

    config: str | None = None  # /etc/docker/daemon.json as it was then; None: there was none
    nvidia_hook: bool = False  # the toolkit's nvidia-container-runtime-hook was there: `--gpus` has a driver


@dataclass
class PerfState:
    """What benchmarks achieve on this node when it is healthy (faults lower it)."""

    nccl_version: str | None = None  # 2.18.3+cuda12.2
    nccl_allreduce_busbw_gbps: float | None = None  # peak busbw at the largest size, GB/s
    ib_write_bw_gbps: float | None = None  # per port, Gb/s, GPUDirect
    dcgm_version: str | None = None


@dataclass
class ClockState:
    """The node's clock: every simulated tool tells time from it (:mod:`assessor.sim.clock`).

    Now is ``boot_time + uptime_s``. It moves only when something happens on the node (a unit starts, a
    kernel message is logged, the node reboots), so the same state always prints the same times.
    """

    boot_time: str = "2025-01-15T08:00:00+00:00"  # ISO 8601 with an offset
    uptime_s: float = 7380.0  # 2 h 3 min after boot


@dataclass
class NodeState:
    fixture: str
    host: str
    driver: DriverState
    schema: str = SCHEMA
    system: str | None = None  # "DGX A100", "HGX H100 8-GPU"
    gpus: list[GpuState] = field(default_factory=list)
    nvswitches: list[NvSwitchState] = field(default_factory=list)
    ib_hcas: list[IbHcaState] = field(default_factory=list)
    sm_present: bool = True
    switch_firmware: dict[str, str] = field(default_factory=dict)  # a switch off the fabric's firmware
    modules: list[ModuleState] = field(default_factory=list)
    services: dict[str, ServiceState] = field(default_factory=dict)
    kernel_log: list[str] = field(default_factory=list)
    nccl_env: dict[str, str] = field(default_factory=dict)
    perf: PerfState = field(default_factory=PerfState)
    os_release: dict[str, str] = field(default_factory=dict)
    uname: str | None = None
    clock: ClockState = field(default_factory=ClockState)
    # True: the GPU daemons that run (persistenced, DCGM, the fabric manager on NVSwitch Ampere) and
    # nvidia_drm hold the GPUs as on a real node, so a reset or an A100 MIG change needs a drain first
    # (:mod:`assessor.sim.gpu_clients`). False: only compute processes and ``mig_reset_blocked_by`` do.
    daemons_hold_gpus: bool = False
    # dpkg's database, apt's repository and DKMS's modules; None: never changed, derived from the driver and kernel
    # (assessor.sim.packages)
    packages: PackageDb | None = None
    node_id: str = ""  # which simulated node this is: `lab start` gives the node it sets up a new id
    marks: list[str] = field(default_factory=list)  # what gpulab did here a grade must know ("solved mig-301")
    docker: DockerDaemonState | None = None  # None: no docker engine on the node
    kernel_cmdline: str | None = None  # /proc/cmdline; None: the fixture's (assessor.sim.grub)
    bmc: BmcState | None = None  # None: no BMC reachable in-band (no /dev/ipmi0)

    def gpu(self, index: int) -> GpuState:
        """The GPU with NVML index ``index`` (IndexError when absent)."""
        for g in self.gpus:
            if g.index == index:
                return g
        raise IndexError(f"no GPU {index} on {self.host}")

    def hca(self, name: str) -> IbHcaState:
        """The HCA named ``name`` (mlx5_0), KeyError when absent."""
        for h in self.ib_hcas:
            if h.name == name:
                return h
        raise KeyError(name)

    def module_loaded(self, name: str) -> bool:
        return any(m.name == name for m in self.modules)


def to_dict(state: NodeState) -> dict[str, Any]:
    """The JSON document of ``state``."""
    data: dict[str, Any] = to_jsonable(state)
    return data


def from_dict(data: Any, *, source: str = "state") -> NodeState:
    """A :class:`NodeState` from its JSON document; InputError when it is not one."""
    if not isinstance(data, dict):
        raise InputError(f"{source}: a simulated node state is a JSON object, not {type(data).__name__}")
    schema = data.get("schema", SCHEMA)
    if schema != SCHEMA:
        raise InputError(f"{source}: unknown state schema {schema!r} (expected {SCHEMA})")
    for key in ("fixture", "host", "driver"):
        if key not in data:
            raise InputError(f"{source}: state has no {key!r}")
    try:
        return from_jsonable(NodeState, data)
    except (TypeError, KeyError, ValueError, AttributeError, RecursionError) as exc:
        raise InputError(f"{source}: malformed simulated node state: {exc}") from None


def without_history(data: dict[str, Any]) -> dict[str, Any]:
    """A state document less what only records when things happened: the clock and each unit's ``since_s``.

    Two nodes that differ only there are the same node at different times (a unit stopped and started
    again is back to how it booted, an hour later); compare these to ask "is it back to the fixture?".
    """
    out = json.loads(json.dumps(data))
    for key in ("clock", "node_id", "marks", STAMP_KEY):
        out.pop(key, None)
    for service in (out.get("services") or {}).values():
        if isinstance(service, dict):
            service.pop("since_s", None)
    return out


def dumps(state: NodeState) -> str:
    """The state as pretty JSON text (stable key order, trailing newline)."""
    return json.dumps(to_dict(state), indent=2) + "\n"


# A node's state is a few hundred KiB at most; anything far larger is not one (and is not read whole).
MAX_STATE_BYTES = 16 * 1024 * 1024


def _open_regular(p: Path) -> int:
    """A read-only descriptor on the regular file ``p``; InputError for anything else.

    Refused: a FIFO or a device (reading one could block or never end), a directory, and a symbolic link
    that leads out of the file's own directory (a state path must not become a way to read any file).
    """
    try:
        if p.is_symlink():
            target = p.resolve(strict=True)
            if target.parent != p.parent.resolve():
                raise InputError(f"{p}: a symbolic link out of its directory, not a simulated node state")
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError(f"{p}: no such simulated node state") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise InputError(f"{p}: {kind}, not a simulated node state")
    if info.st_size > MAX_STATE_BYTES:
        os.close(fd)
        raise InputError(f"{p}: {info.st_size} bytes, larger than a simulated node state can be")
    return fd


def load_state(path: str | os.PathLike[str]) -> NodeState:
    """Read a state file; InputError naming the file (and line) when it is missing or not a state."""
    return from_dict(_read_document(Path(path)), source=str(path))


def _read_document(p: Path) -> Any:
    """The JSON document of the state file at ``p``; InputError naming the file (and line) when it is not one."""
    fd = _open_regular(p)
    try:
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(MAX_STATE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_STATE_BYTES:
        raise InputError(f"{p}: larger than a simulated node state can be")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text, not a simulated node state") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}:{exc.lineno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{p}: JSON nested too deeply to be a simulated node state") from None
    return data


STAMP_KEY = "integrity"
EDITED_MARK = "edited by hand"  # the mark a state gets when a tool finds it changed since its last stamp
# Tamper evidence, not secrecy: anyone with the source can stamp a file, a hand edit does not.
_STAMP_KEY_BYTES = b"gpulab.simstate/1 written by the simulator"


def stamp(data: dict[str, Any]) -> str:
    """The integrity stamp of a state document (its ``integrity`` key left out)."""
    import hashlib
    import hmac

    body = {k: v for k, v in data.items() if k != STAMP_KEY}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "hmac-sha256:" + hmac.new(_STAMP_KEY_BYTES, canonical.encode(), hashlib.sha256).hexdigest()


def stamp_status(path: str | os.PathLike[str]) -> str:
    """``ok`` when the state file at ``path`` is as the simulator last wrote it, ``missing`` (no stamp),
    ``mismatch`` (changed since), or ``unreadable``."""
    fd = _open_regular(Path(path))
    try:
        with os.fdopen(fd, "rb") as fh:
            data = json.loads(fh.read(MAX_STATE_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return "unreadable"
    return _stamp_status_of(data)


# The last read of each state file, for callers that only look (a grade's identity and tamper flags): the file is
# read again only when it changed (another inode, time or size), so one grade reads it once.
_LOOKED_AT: dict[str, tuple[tuple[int, int, int], NodeState | None, str]] = {}


def look_at_state(path: str | os.PathLike[str]) -> tuple[NodeState | None, str]:
    """The state at ``path`` (None when it is not a readable state) and its :func:`stamp_status`, from one read
    kept while the file is unchanged. For reading only: the state returned is shared, never change it."""
    p = Path(path)
    try:
        info = p.stat()
    except OSError:
        return None, "unreadable"
    key, stamp_of = str(p.absolute()), (info.st_ino, info.st_mtime_ns, info.st_size)
    kept = _LOOKED_AT.get(key)
    if kept is not None and kept[0] == stamp_of:
        return kept[1], kept[2]
    try:
        data = _read_document(p)
    except InputError:
        state, status = None, "unreadable"
    else:
        status = _stamp_status_of(data)
        try:
            state = from_dict(data, source=str(p))
        except InputError:
            state = None
    _LOOKED_AT[key] = (stamp_of, state, status)
    return state, status


def _stamp_status_of(data: Any) -> str:
    """:func:`stamp_status` of a document already read."""
    if not isinstance(data, dict):
        return "unreadable"
    written = data.get(STAMP_KEY)
    if not isinstance(written, str):
        return "missing"
    import hmac

    return "ok" if hmac.compare_digest(written, stamp(data)) else "mismatch"


def save_state(state: NodeState, path: str | os.PathLike[str]) -> None:
    """Write ``state`` to ``path`` atomically, stamped: the old file stays whole until the new one is complete."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = to_dict(state)
    data[STAMP_KEY] = stamp(data)
    # The temporary file lives beside the target so os.replace is a rename within one filesystem.
    import tempfile  # here, not at import: every simulated tool loads a state, few write one

    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The sidecar lock file of a state file (the state itself is replaced on write, so it can't hold a lock)."""
    p = Path(path)
    return p.with_name(p.name + ".lock")


@contextlib.contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the exclusive lock of the state at ``path`` (blocking until other holders are done)."""
    lp = lock_path(path)
    lp.parent.mkdir(parents=True, exist_ok=True)
    try:
        # never through a link planted where the lock file goes: it would create or open a file elsewhere
        fd = os.open(lp, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if os.path.islink(lp):
            raise InputError(f"{lp}: the state's lock file is a symbolic link; remove it") from None
        raise InputError(f"{lp}: cannot open the state's lock file: {exc.strerror}") from None
    with os.fdopen(fd, "r+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def updating(path: str | os.PathLike[str]) -> Iterator[NodeState]:
    """Read, let the caller change, and write back the state at ``path`` under the file lock.

    Nothing is written when the body raises, so a simulated tool that refuses an operation leaves the
    state as it found it::

        with updating(path) as state:
            state.gpu(0).persistence_mode = True
    """
    with locked(path):
        data = _read_document(Path(path))  # read once: the state and its stamp come from the same bytes
        edited = _stamp_status_of(data) == "mismatch"
        state = from_dict(data, source=str(path))
        if edited and EDITED_MARK not in state.marks:
            # a hand edit stays evident after the simulator stamps its own change on top of it
            state.marks.append(EDITED_MARK)
        yield state
        save_state(state, path)
