"""The facts model: what gpulab knows about one node, typed and JSON-serialisable.

Parsers and the NVML collector produce these objects; checks read them. A field that is
``None`` is unknown (the snapshot did not hold that source); a field that could not be read
because its source was broken has an entry in ``NodeFacts.problems`` instead.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union


@dataclass
class NvLink:
    link: int
    active: bool
    speed_gbps: float | None = None  # per-link, GB/s as nvidia-smi reports it
    errors: dict[str, int] = field(default_factory=dict)  # replay, recovery, crc_flit, crc_data


@dataclass
class Gpu:
    index: int
    name: str | None = None
    uuid: str | None = None
    serial: str | None = None
    bus_id: str | None = None  # as nvidia-smi prints it: 00000000:07:00.0
    architecture: str | None = None
    vbios: str | None = None
    memory_total_mib: int | None = None
    persistence_mode: bool | None = None
    ecc_mode_current: bool | None = None
    ecc_mode_pending: bool | None = None
    ecc_volatile_corrected: int | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_aggregate_corrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    retired_pages_pending: bool | None = None  # None on HBM parts (N/A)
    remap_correctable: int | None = None
    remap_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    temperature_c: int | None = None
    temperature_slowdown_c: int | None = None
    temperature_shutdown_c: int | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    # Active clock throttle ("clocks event") reasons, NVML names without the prefix:
    # gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown, sync_boost,
    # sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, display_clock_setting
    throttle_reasons: list[str] | None = None
    mig_mode_current: bool | None = None  # None: MIG not supported
    mig_mode_pending: bool | None = None
    fabric_state: str | None = None  # Completed, In Progress, Not Started, Not Supported
    fabric_status: str | None = None  # Success, or the error
    nvlinks: list[NvLink] | None = None
    compute_mode: str | None = None
    # What says whether the GPU is busy, besides the gpu_idle clock-event reason (which a process merely
    # holding memory clears): the performance state (P0 busiest .. P8/P12 idle) and utilisation in percent.
    performance_state: str | None = None  # P0 .. P15, as nvidia-smi prints it
    utilization_gpu_pct: float | None = None


@dataclass
class GpuNvLinks:
    """One GPU's block of ``nvidia-smi nvlink -s``: each link's speed, or inactive."""

    gpu: int
    name: str | None = None
    uuid: str | None = None
    links: list[NvLink] = field(default_factory=list)


@dataclass
class MigDevice:
    """One row of the default ``nvidia-smi`` table's "MIG devices" box."""

    gpu: int
    gi_id: int
    ci_id: int
    mig_device: int
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    sm: int | None = None


@dataclass
class GpuProcess:
    """One row of the default ``nvidia-smi`` table's "Processes" box."""

    gpu: int
    pid: int
    gi_id: int | None = None  # N/A outside MIG
    ci_id: int | None = None
    type: str | None = None  # C, G, C+G
    name: str | None = None
    memory_mib: int | None = None


@dataclass
class ComputeInstance:
    ci_id: int
    profile_id: int | None = None
    name: str | None = None  # e.g. 1c.3g.40gb, or 3g.40gb for a full CI
    placement_start: int | None = None
    placement_size: int | None = None


@dataclass
class GpuInstance:
    gpu: int
    gi_id: int
    profile_id: int | None
    name: str  # short profile name without the "MIG " prefix: 3g.40gb
    placement_start: int | None = None
    placement_size: int | None = None
    compute_instances: list[ComputeInstance] | None = None


@dataclass
class MigProfile:
    """One row of ``nvidia-smi mig -lgip`` (placements from ``-lgipp``)."""

    gpu: int
    name: str  # 1g.10gb, 1g.10gb+me
    profile_id: int
    instances_free: int | None = None
    instances_total: int | None = None
    memory_gib: float | None = None
    p2p: bool | None = None
    sm: int | None = None
    dec: int | None = None
    enc: int | None = None
    ce: int | None = None
    jpeg: int | None = None
    ofa: int | None = None
    placements: list[tuple[int, int]] | None = None  # (start, size) from -lgipp


@dataclass
class Topology:
    """``nvidia-smi topo -m``: the connection matrix and affinities."""

    devices: list[str]  # column order: GPU0.., NIC0..
    matrix: dict[str, dict[str, str]]  # row -> column -> X, NV12, PIX, PXB, PHB, NODE, SYS
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    numa_affinity: dict[str, str] = field(default_factory=dict)
    nic_names: dict[str, str] = field(default_factory=dict)  # NIC0 -> mlx5_0 (legend)


@dataclass
class IbPort:
    ca: str  # mlx5_0
    port: int
    state: str | None = None  # Active, Down, Initializing, Armed
    physical_state: str | None = None  # LinkUp, Polling, Disabled, ...
    rate_gbps: float | None = None
    link_layer: str | None = None  # InfiniBand, Ethernet
    ca_type: str | None = None  # MT4129
    firmware: str | None = None
    node_guid: str | None = None
    port_guid: str | None = None
    base_lid: int | None = None
    sm_lid: int | None = None


@dataclass
class IbDevice:
    """One ``hca_id`` block of ``ibv_devinfo``."""

    hca_id: str
    transport: str | None = None
    fw_ver: str | None = None
    node_guid: str | None = None
    sys_image_guid: str | None = None
    vendor_id: str | None = None
    vendor_part_id: int | None = None
    hw_ver: str | None = None
    board_id: str | None = None
    phys_port_cnt: int | None = None
    ports: list[IbPort] = field(default_factory=list)


@dataclass
class IbLink:
    """One cable from a CA's port into the fabric, as ``ibnetdiscover`` or ``iblinkinfo`` show it."""

    ca: str  # the CA's node description: "hgx-h100-01 mlx5_2" (host and device)
    port: int
    peer: str | None = None  # the far end's node description: "MF0;ib-leaf-03:MQM9700/U1"
    peer_port: int | None = None
    peer_guid: str | None = None  # 0xfc6a1c0300a1b2c3
    peer_lid: int | None = None
    guid: str | None = None  # the CA's node GUID
    lid: int | None = None
    width: str | None = None  # 4X
    speed: str | None = None  # NDR, HDR
    state: str | None = None  # Active (iblinkinfo)


@dataclass
class LinkPhy:
    """One port's physical layer as ``mlxlink -d DEV [-m] [-c]`` prints it: link, counters and BER, module."""

    device: str | None = None  # what -d named (mlx5_3, /dev/mst/mt4129_pciconf3); None when the paste lacks it
    port: int | None = None
    state: str | None = None  # Active
    physical_state: str | None = None  # LinkUp
    speed: str | None = None  # IB-NDR, 400G
    width: str | None = None  # 4x
    fec: str | None = None
    status_opcode: int | None = None  # 0: no issue
    recommendation: str | None = None
    firmware: str | None = None  # the adapter's, from Tool Information
    time_since_clear_min: float | None = None
    effective_errors: int | None = None
    effective_ber: float | None = None
    raw_ber: float | None = None
    raw_errors_per_lane: list[int] = field(default_factory=list)
    link_down: int | None = None
    link_recovery: int | None = None
    module_identifier: str | None = None  # OSFP, QSFP28
    module_vendor: str | None = None
    module_part_number: str | None = None
    module_serial: str | None = None
    module_firmware: str | None = None  # None: N/A (a passive copper cable has none)


@dataclass
class AdapterFirmware:
    """One adapter as ``mlxfwmanager --query`` (or ``mlxup``) lists it: the firmware on flash and, where a
    burned image is not loaded yet, the one still running."""

    device: str | None = None  # PCI Device Name: /dev/mst/mt4129_pciconf0 or 0000:1a:00.0
    device_type: str | None = None  # ConnectX7
    part_number: str | None = None
    psid: str | None = None
    base_guid: str | None = None  # the node GUID ibstat prints (without 0x)
    firmware: str | None = None  # the FW row's Current: the image on flash
    running: str | None = None  # the FW (Running) row: only while a burned image waits for a reset
    available: str | None = None  # what the given image (or the web) offers; None: N/A
    status: str | None = None  # Up to date, Update required, No matching image found


@dataclass
class BmcLan:
    """The BMC's LAN channel as ``ipmitool lan print`` shows it."""

    ip_source: str | None = None  # static, dhcp (IP Address Source: Static Address / DHCP Address)
    ip: str | None = None
    netmask: str | None = None
    gateway: str | None = None
    mac: str | None = None
    vlan: int | None = None  # None: 802.1q Disabled (or not shown: see vlan_shown)
    vlan_shown: bool = False


@dataclass
class BmcUser:
    """One BMC user slot (``ipmitool channel getaccess 1`` or ``user list 1``); a password is never read."""

    id: int
    name: str = ""
    privilege: str | None = None  # ADMINISTRATOR, OPERATOR, USER, CALLBACK, NO ACCESS, Unknown (0x00)
    enabled: bool | None = None  # Enable Status; None: user list (which does not show it)


@dataclass
class KernelModule:
    name: str
    size: int | None = None
    used_by_count: int | None = None
    used_by: list[str] = field(default_factory=list)


@dataclass
class DebPackage:
    """One row of ``dpkg -l``: a package in dpkg's database."""

    name: str  # without its :arch: libnvidia-compute-535-server
    status: str  # the first two letters: ii installed, rc removed (configuration files left), iU, iF, ...
    version: str | None = None  # 535.129.03-0ubuntu0.22.04.1 (may be cut short in a narrow terminal)
    arch: str | None = None


@dataclass
class DkmsBuild:
    """One line of ``dkms status``: a module version in the DKMS tree and the kernel it was built for."""

    module: str  # nvidia
    version: str  # 535.129.03
    state: str  # added, built, installed
    kernel: str | None = None  # None: added only
    arch: str | None = None


@dataclass
class SlurmNode:
    """One node as Slurm's controller sees it (``scontrol show node``): its state, why, and its GRES."""

    name: str
    state: str  # as scontrol prints it: IDLE, MIXED, IDLE+DRAIN, IDLE+DRAIN+INVALID_REG, DOWN*
    reason: str | None = None  # without the [user@time] scontrol adds; None: no reason set
    gres: str | None = None  # Gres=: gpu:8, gpu:h100:8(S:0-1), gpu:1g.10gb:7; None for (null)
    gres_used: str | None = None  # GresUsed= where scontrol prints it
    alloc_tres: str | None = None  # AllocTRES=: cpu=2,gres/gpu=1
    version: str | None = None  # the slurmd's version, once it registered
    partitions: list[str] = field(default_factory=list)


@dataclass
class Service:
    name: str  # unit name as systemd gives it: nvidia-fabricmanager.service
    load_state: str | None = None  # loaded, not-found
    active_state: str | None = None  # active, inactive, failed
    sub_state: str | None = None  # running, dead, failed
    unit_file_state: str | None = None  # enabled, disabled
    result: str | None = None  # success, exit-code
    exec_main_status: int | None = None
    reason: str | None = None  # the error its own journal lines give (systemctl status, journalctl -u)


@dataclass
class KernelEvent:
    kind: str  # xid, sxid, fallen_off_bus, pcie_degraded
    message: str
    code: int | None = None  # Xid / SXid number
    bus_id: str | None = None  # PCI address as printed
    pid: str | None = None
    process: str | None = None
    timestamp: str | None = None
    line: int | None = None  # 1-based line in the source


@dataclass
class NcclDevice:
    rank: int
    host: str | None = None
    device: int | None = None
    bus: str | None = None
    name: str | None = None
    pid: int | None = None


@dataclass
class NcclRow:
    size_bytes: int
    count: int | None = None
    type: str | None = None
    redop: str | None = None
    root: int | None = None
    oop_time_us: float | None = None
    oop_algbw: float | None = None
    oop_busbw: float | None = None
    oop_wrong: int | None = None  # None where the column says N/A
    ip_time_us: float | None = None
    ip_algbw: float | None = None
    ip_busbw: float | None = None
    ip_wrong: int | None = None


@dataclass
class NcclDebug:
    """What ``NCCL_DEBUG=INFO`` lines say about the network and the channels."""

    nccl_version: str | None = None  # 2.18.3+cuda12.2
    network: str | None = None  # IB, IBext_v8, Socket
    ib_no_device: bool = False  # "NET/IB : No device found."
    ib_devices: list[str] = field(default_factory=list)  # mlx5_0:1/IB ...
    transports: list[str] = field(
        default_factory=list
    )  # distinct, e.g. P2P/IPC, P2P/CUMEM, NVLS, NET/IB/GDRDMA, NET/IB, NET/Socket, SHM
    gdrdma: bool | None = None  # True when some NET/IB channel says GDRDMA
    warnings: list[str] = field(default_factory=list)  # NCCL WARN lines
    # The hosts of NCCL's "host:pid:tid [dev]" line prefixes, and the communicator size of its
    # "comm ... rank R nranks N" lines: how many nodes and ranks a log without a results table came from.
    hosts: list[str] = field(default_factory=list)
    nranks: int | None = None
    # How NCCL registers GPU memory with the HCAs, from its "NET/IB : GPU Direct RDMA (X) enabled for HCA"
    # lines (NCCL 2.19+): "DMABUF" (the kernel's DMA-BUF, open kernel modules) and/or "nvidia-peermem".
    gdr_paths: list[str] = field(default_factory=list)
    dmabuf_enable: str | None = None  # NCCL_DMABUF_ENABLE as NCCL logs it ("set by environment to 0")


@dataclass
class NcclRun:
    """One nccl-tests run (``all_reduce_perf`` and friends)."""

    test: str | None = None  # all_reduce_perf when the command line or header shows it
    tests_version: str | None = None  # nccl-tests version header (2.20+)
    nthreads: int | None = None
    ngpus: int | None = None  # -g
    devices: list[NcclDevice] = field(default_factory=list)
    rows: list[NcclRow] = field(default_factory=list)
    out_of_bounds: int | None = None
    avg_busbw: float | None = None
    debug: NcclDebug = field(default_factory=NcclDebug)
    tests_output: bool = True  # False for an NCCL_DEBUG log with no nccl-tests table at all
    # The line nccl-tests stopped on, without its host prefix: "Test CUDA failure common.cu:941 'system not yet
    # initialized'" (CUDA or NCCL could not start, a device or the memory was missing).
    failure: str | None = None

    @property
    def nranks(self) -> int:
        return len(self.devices)

    def peak_busbw(self) -> float | None:
        """busbw at the largest message size (the number to compare, see docs/REFERENCES.md)."""
        if not self.rows:
            return None
        last = max(self.rows, key=lambda r: r.size_bytes)
        # NaN or infinity is no reading: unknown, never a number to compare.
        values = [v for v in (last.oop_busbw, last.ip_busbw) if v is not None and math.isfinite(v)]
        return max(values) if values else None


MIB_PER_SEC_TO_GBITS = (1 << 20) * 8 / 1e9


@dataclass
class PerftestRow:
    size_bytes: int
    iterations: int | None = None
    bw_peak: float | None = None
    bw_average: float | None = None
    msg_rate_mpps: float | None = None


@dataclass
class PerftestRun:
    test: str | None = None  # RDMA_Write BW Test
    device: str | None = None
    link_type: str | None = None  # IB, Ethernet
    unit: str | None = None  # Gb/sec or MB/sec
    rows: list[PerftestRow] = field(default_factory=list)

    def average_gbits(self) -> float | None:
        """BW average at the largest message size, in Gb/s whatever the unit printed.

        perftest's MB/sec is MiB/s (its format_factor is 0x100000); --report_gbits is 10^9 bits/s.
        """
        if not self.rows:
            return None
        last = max(self.rows, key=lambda r: r.size_bytes)
        if last.bw_average is None or not math.isfinite(last.bw_average):
            return None
        if self.unit and self.unit.lower().startswith("mb"):
            return last.bw_average * MIB_PER_SEC_TO_GBITS
        return last.bw_average


@dataclass
class DcgmTest:
    category: str  # Deployment, Integration, Hardware, Stress
    name: str
    result: str  # Pass, Fail, Skip, Warn
    details: list[str] = field(default_factory=list)


@dataclass
class DcgmDiag:
    version: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    tests: list[DcgmTest] = field(default_factory=list)


@dataclass
class HplResult:
    """One result row of HPL (netlib's ``xhpl`` or NVIDIA's HPL-NVIDIA) and its residual check."""

    variant: str  # T/V: WR01C2R4 (netlib), WC0 or WC03R2R2 (HPL-NVIDIA)
    n: int
    nb: int
    p: int
    q: int
    time_s: float
    gflops: float
    gflops_per_gpu: float | None = None  # HPL-NVIDIA's "(   per GPU)" column; None in netlib's table
    residual: float | None = None  # the scaled residual ||Ax-b||_oo/(eps*(...)*N)
    residual_check: str | None = None  # PASSED or FAILED; None: the paste holds no residual line for it


@dataclass
class HplRun:
    version: str | None = None  # "HPL-NVIDIA 24.3.0", "HPLinpack 2.1"
    results: list[HplResult] = field(default_factory=list)
    error: str | None = None  # why it stopped: an "HPL ERROR" line, a CUDA or MPI failure


@dataclass
class NvbandwidthRow:
    label: int  # the CPU (NUMA node) or source GPU of the row
    values: list[float | None] = field(default_factory=list)  # one per column; None where it printed N/A


@dataclass
class NvbandwidthTest:
    """One nvbandwidth test case: its matrix (rows: CPU or source GPU, columns: GPU) and its SUM."""

    name: str | None  # host_to_device_memcpy_ce; None when the paste lost the "Running" and SUM lines
    title: str | None = None  # memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
    columns: list[int] = field(default_factory=list)
    rows: list[NvbandwidthRow] = field(default_factory=list)
    sum_gbps: float | None = None
    error: str | None = None  # an ASSERT or CUDA error printed instead of the matrix

    def per_column(self) -> dict[int, float]:
        """The best figure each column (GPU) reached over the rows: GB/s by GPU index."""
        out: dict[int, float] = {}
        for row in self.rows:
            for column, value in zip(self.columns, row.values, strict=False):
                if value is not None and math.isfinite(value):
                    out[column] = max(out.get(column, value), value)
        return out


@dataclass
class NvbandwidthRun:
    version: str | None = None  # v0.8
    driver_version: str | None = None
    devices: list[str] = field(default_factory=list)  # GPU names in device order ("Device N: NAME (bus)")
    tests: list[NvbandwidthTest] = field(default_factory=list)


@dataclass
class ContainerEngine:
    """``docker info``: what the running docker daemon offers containers."""

    server_version: str | None = None
    runtimes: list[str] = field(default_factory=list)  # io.containerd.runc.v2 nvidia runc
    default_runtime: str | None = None
    cdi_spec_dirs: list[str] | None = None  # None: no CDI section (CDI off, or an engine before 25)
    error: str | None = None  # the daemon did not answer ("Cannot connect to the Docker daemon ...")


@dataclass
class CdiDevice:
    name: str  # qualified: nvidia.com/gpu=0:1
    device_nodes: list[str] = field(default_factory=list)


@dataclass
class CdiSpec:
    """A CDI spec file (``/etc/cdi/nvidia.yaml``): the devices it defines and the driver files it injects."""

    kind: str | None = None  # nvidia.com/gpu
    cdi_version: str | None = None
    devices: list[CdiDevice] = field(default_factory=list)
    common_device_nodes: list[str] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)  # host paths of the driver libraries it mounts
    driver_version: str | None = None  # the driver it was generated for (its library names, the compat hook)


@dataclass
class DriverInfo:
    version: str | None = None  # 535.129.03
    cuda_version: str | None = None  # 12.2
    kernel_module: str | None = None  # the /proc/driver/nvidia/version first line
    kernel_module_version: str | None = None
    open_kernel_module: bool | None = None
    nvml_error: str | None = None  # e.g. "Driver/library version mismatch"


@dataclass
class NodeFacts:
    host: str | None = None
    driver: DriverInfo | None = None
    gpus: list[Gpu] | None = None
    mig_instances: list[GpuInstance] | None = None
    # GPU index -> the GPU instance id of each MIG device (a GPU instance with a compute instance), from
    # nvidia-smi -q -x for the GPUs in MIG mode: what shows a GPU instance can run work without NVML
    mig_compute_gis: dict[int, list[int]] | None = None
    mig_profiles: list[MigProfile] | None = None
    mig_devices: list[MigDevice] | None = None
    gpu_processes: list[GpuProcess] | None = None
    nvlink_status: list[GpuNvLinks] | None = None
    topology: Topology | None = None
    ib_ports: list[IbPort] | None = None
    ib_devices: list[IbDevice] | None = None
    link_phy: list[LinkPhy] | None = None  # mlxlink, one entry per port it was run on
    adapter_firmware: list[AdapterFirmware] | None = None  # mlxfwmanager --query
    bmc_lan: BmcLan | None = None  # ipmitool lan print 1
    bmc_users: list[BmcUser] | None = None  # ipmitool channel getaccess 1 (or user list 1)
    ib_links: list[IbLink] | None = None  # the cables from CA ports into the fabric (ibnetdiscover, iblinkinfo)
    modules: list[KernelModule] | None = None
    services: list[Service] | None = None
    slurm_nodes: list[SlurmNode] | None = None  # scontrol show node -o: Slurm's own view of its nodes
    kernel_events: list[KernelEvent] | None = None
    nccl: NcclRun | None = None
    ib_write_bw: PerftestRun | None = None
    dcgm_diag: DcgmDiag | None = None
    hpl: HplRun | None = None
    nvbandwidth: NvbandwidthRun | None = None
    os_release: dict[str, str] | None = None
    uname: str | None = None
    kernel_cmdline: str | None = None  # cat /proc/cmdline: what the running kernel booted with
    grub_cmdline: str | None = None  # /etc/default/grub: the parameters the next boot gets (after update-grub)
    packages: list[DebPackage] | None = None  # dpkg -l
    dkms: list[DkmsBuild] | None = None  # dkms status
    container_engine: ContainerEngine | None = None
    cdi_spec: CdiSpec | None = None
    # How many GPUs the driver reports attached (nvidia-smi -q's "Attached GPUs", the XML's
    # <attached_gpus>): more than ``gpus`` holds when the output was cut or filtered (-i 0, -d MEMORY).
    gpus_attached: int | None = None
    # fact field -> why it could not be read (a broken source, not a missing one)
    problems: dict[str, str] = field(default_factory=dict)
    # fact field -> why the source gave only part of it (a cut or filtered excerpt such as `lsmod | grep`):
    # what is there counts, but what is absent is not evidence of absence.
    partial: dict[str, str] = field(default_factory=dict)
    # What fact assembly tells the reader: sources that disagreed and which one was taken, excerpts.
    notes: list[str] = field(default_factory=list)
    # fact field -> snapshot file it came from
    sources: dict[str, str] = field(default_factory=dict)


def to_jsonable(value: Any) -> Any:
    """Dataclasses, lists, tuples and dicts to plain JSON values.

    A float that is NaN or infinite becomes None (unknown): JSON has no such numbers, and a
    bare ``NaN`` in a results file breaks every strict reader.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


T = TypeVar("T")


def from_jsonable(cls: type[T], data: Any) -> T:
    """The inverse of :func:`to_jsonable` for the dataclasses of this module."""
    return typing.cast(T, _convert(cls, data))


@functools.cache
def _field_types(cls: type) -> tuple[tuple[str, Any], ...]:
    """(field name, resolved type) of a dataclass; resolving string annotations is slow, so once."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def _convert(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(args[0], data) if len(args) == 1 else data
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        kwargs = {name: _convert(hint, data[name]) for name, hint in _field_types(tp) if name in data}
        return tp(**kwargs)
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_convert(item, v) for v in data]
    if origin is tuple:
        return tuple(data)
    if origin is dict:
        _, val = typing.get_args(tp)
        return {k: _convert(val, v) for k, v in data.items()}
    return data
