"""Healthy simulated nodes of real systems, built from the data files in ``assessor/sim/fixtures/``.

Each ``<name>.json`` describes one system compactly: a GPU model (the same for every slot), the GPU slots
(PCI bus id, NUMA node, CPU affinity), an HCA model and the HCAs, and the host's software (driver, modules,
services, NCCL environment). :func:`load_fixture` expands it into a full :class:`NodeState`, deriving what
repeats (UUIDs, serials, GUIDs, NVLinks, kernel log) deterministically from the fixture name and index, so
the same fixture always gives the same node; a node given another host name (``sim init --host``) gets
identities of its own, derived from that name. The numbers come from real systems; each file's ``_sources``
says where from.

Optional fields of a data file: ``machine`` (``uname -m``, default ``x86_64``; ``aarch64`` on Grace),
``gpu.fabric_clique_id`` and ``gpu.fabric_cluster_uuid`` (a GB200 NVL72 tray's NVLink domain), ``clock``
(``{"boot_time": ISO, "uptime_s": seconds}``), ``processes``
(compute processes: ``{"gpu": 0, "pid": 4242, "name": "python3", "used_memory_mib": 1024, "unit": ...}``)
and ``daemons_hold_gpus`` (see :mod:`assessor.sim.gpu_clients`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from functools import cache
from importlib import resources
from typing import Any

from assessor.errors import InputError
from assessor.sim.state import (
    ClockState,
    DriverState,
    EccCounters,
    GpuProcess,
    GpuState,
    IbHcaState,
    IbPortState,
    ModuleState,
    NodeState,
    NvLinkState,
    NvSwitchState,
    PerfState,
    RemappedRows,
    ServiceState,
)

_PACKAGE = "assessor.sim"
_DIR = "fixtures"  # data files, shipped inside the package


def fixture_names() -> list[str]:
    """Names of the shipped fixtures (``mock:NAME`` targets), sorted."""
    return sorted(
        entry.name[: -len(".json")]
        for entry in resources.files(_PACKAGE).joinpath(_DIR).iterdir()
        if entry.name.endswith(".json") and not entry.name.startswith("_")
    )


@cache
def _spec(name: str) -> dict[str, Any]:
    if name not in fixture_names():
        raise InputError(f"unknown simulated node {name!r} (fixtures: {', '.join(fixture_names())})")
    text = resources.files(_PACKAGE).joinpath(_DIR, f"{name}.json").read_text(encoding="utf-8")
    spec: dict[str, Any] = json.loads(text)
    return spec


def fixture_spec(name: str) -> dict[str, Any]:
    """The raw data file of fixture ``name`` (a copy: callers may change it)."""
    return copy.deepcopy(_spec(name))


def load_fixture(name: str, *, host: str | None = None, in_use: bool | None = None) -> NodeState:
    """A fresh, healthy :class:`NodeState` of fixture ``name``; InputError for an unknown name.

    ``in_use`` True: the node's GPU daemons hold its GPUs as on a real node (``daemons_hold_gpus``), so a
    GPU reset or an A100 MIG change needs a drain first; None keeps the fixture's own setting.
    """
    state = build_state(fixture_spec(name), host=host)
    if in_use is not None:
        state.daemons_hold_gpus = in_use
    return state


def _digest(*parts: object) -> str:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()


def gpu_uuid(fixture: str, index: int) -> str:
    """A deterministic GPU UUID in NVIDIA's form: GPU-8-4-4-4-12 hex digits."""
    h = _digest(fixture, "gpu", index)
    return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def gpu_serial(fixture: str, index: int, prefix: str) -> str:
    """A deterministic 13-digit board serial that starts like the real part's (``prefix``)."""
    digits = str(int(_digest(fixture, "serial", index), 16))
    return (prefix + digits)[:13]


def hca_guid(fixture: str, name: str, oui: str) -> str:
    """A deterministic 64-bit GUID whose first 3 bytes are the vendor's OUI (0x...)."""
    return "0x" + oui.lower() + "0300" + _digest(fixture, "guid", name)[:6]


def _netdev(bus_id: str, link_layer: str) -> str:
    """The predictable interface name of a PCI function: ibp12s0 (InfiniBand) or enp12s0np0 (Ethernet)."""
    _, bus, devfn = bus_id.split(":")
    dev, fn = devfn.split(".")
    suffix = f"s{int(dev, 16)}" + (f"f{int(fn)}" if int(fn) else "")
    return f"ibp{int(bus, 16)}{suffix}" if link_layer == "InfiniBand" else f"enp{int(bus, 16)}{suffix}np0"


def _gpus(spec: dict[str, Any], fixture: str) -> list[GpuState]:
    model = spec["gpu"]
    nvlink = model.get("nvlink")
    gpus = []
    for index, slot in enumerate(spec["gpu_slots"]):
        links = [
            NvLinkState(link=i, active=True, version=nvlink["version"], speed_gbps=nvlink["speed_gbps"])
            for i in range(nvlink["links"] if nvlink else 0)
        ]
        gpus.append(
            GpuState(
                index=index,
                name=model["name"],
                uuid=gpu_uuid(fixture, index),
                serial=gpu_serial(fixture, index, model["serial_prefix"]),
                bus_id=slot["bus_id"],
                architecture=model["architecture"],
                vbios=model["vbios"],
                pci_device_id=int(model["pci_device_id"], 16),
                pci_subsystem_id=int(model["pci_subsystem_id"], 16),
                memory_total_mib=model["memory_total_mib"],
                memory_used_mib=model.get("memory_used_mib", 0),
                memory_reserved_mib=model.get("memory_reserved_mib", 0),
                board_part_number=model.get("board_part_number"),
                minor_number=index,
                numa_node=slot.get("numa_node"),
                cpu_affinity=slot.get("cpu_affinity"),
                pcie_switch=slot.get("pcie_switch"),
                ecc_mode_current=model.get("ecc", True),
                ecc_mode_pending=model.get("ecc", True),
                ecc=EccCounters(),
                remapped_rows=RemappedRows() if model.get("row_remapping", True) else None,
                retired_pages=None,
                temperature_c=slot.get("temperature_c", model["temperature_c"]),
                temperature_memory_c=model.get("temperature_memory_c"),
                temperature_slowdown_c=model.get("temperature_slowdown_c"),
                temperature_shutdown_c=model.get("temperature_shutdown_c"),
                temperature_max_operating_c=model.get("temperature_max_operating_c"),
                temperature_memory_max_c=model.get("temperature_memory_max_c"),
                power_draw_w=slot.get("power_draw_w", model["power_draw_w"]),
                power_limit_w=model["power_limit_w"],
                power_default_limit_w=model.get("power_default_limit_w", model["power_limit_w"]),
                power_min_limit_w=model.get("power_min_limit_w"),
                power_max_limit_w=model.get("power_max_limit_w", model["power_limit_w"]),
                clocks_mhz=dict(model.get("clocks_mhz", {})),
                max_clocks_mhz=dict(model.get("max_clocks_mhz", {})),
                performance_state=model.get("performance_state", "P0"),
                throttle_reasons=list(model.get("throttle_reasons", [])),
                pcie_gen_current=model["pcie_gen"],
                pcie_gen_max=model["pcie_gen"],
                pcie_width_current=model["pcie_width"],
                pcie_width_max=model["pcie_width"],
                nvlinks=links,
                mig_supported=model.get("mig_supported", False),
                fabric_state="Completed" if model.get("nvswitch_fabric") else None,
                fabric_status="Success" if model.get("nvswitch_fabric") else None,
                fabric_clique_id=model.get("fabric_clique_id", 0) if model.get("nvswitch_fabric") else None,
                fabric_cluster_uuid=model.get("fabric_cluster_uuid") if model.get("nvswitch_fabric") else None,
            )
        )
    return gpus


def _hcas(spec: dict[str, Any], fixture: str, sm_present: bool) -> list[IbHcaState]:
    hcas = []
    for i, entry in enumerate(spec.get("hcas", [])):
        model = {**spec["hca"], **entry}  # an HCA entry may override the model (storage cards)
        name = model["name"]
        guid = hca_guid(fixture, name, model["oui"])
        ib = model["link_layer"] == "InfiniBand"
        port = IbPortState(
            port=1,
            state="Active",
            physical_state="LinkUp",
            rate_gbps=model["rate_gbps"],
            width=model.get("width", "4X"),
            speed=model.get("speed"),
            link_layer=model["link_layer"],
            # A subnet manager hands out LIDs on InfiniBand; Ethernet (RoCE) ports have none.
            base_lid=model.get("base_lid", 100 + i) if ib else 0,
            sm_lid=1 if ib and sm_present else 0,
            lmc=0,
            port_guid=guid,
            capability_mask=model.get("capability_mask"),
            netdev=model.get("netdev") or _netdev(model["bus_id"], model["link_layer"]),
        )
        hcas.append(
            IbHcaState(
                name=name,
                ca_type=model["ca_type"],
                firmware=model["firmware"],
                node_guid=guid,
                sys_image_guid=guid,
                hw_version=model.get("hw_version", "0"),
                board_id=model.get("board_id"),
                vendor_part_id=model.get("vendor_part_id"),
                bus_id=model["bus_id"],
                numa_node=model.get("numa_node"),
                pcie_switch=model.get("pcie_switch"),
                role=model.get("role", "compute"),
                ports=[port],
            )
        )
    # ibstat and /sys/class/infiniband list devices in name order: mlx5_2 before mlx5_10.
    return sorted(hcas, key=lambda h: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", h.name)])


def _kernel_log(spec: dict[str, Any], state: NodeState) -> list[str]:
    """Boot messages of a healthy node (no Xid): kernel, NICs, then the NVIDIA driver and its modules."""
    drv = state.driver
    t = 0.0
    lines: list[str] = []

    def emit(msg: str, step: float = 0.000731) -> None:
        nonlocal t
        t += step
        lines.append(f"[{t:12.6f}] {msg}")

    lines.append(f"[{0.0:12.6f}] Linux version {spec['kernel_banner']}")
    emit(f"Command line: BOOT_IMAGE=/boot/vmlinuz-{spec['kernel_release']} root=/dev/md0 ro quiet", 0.0)
    t = 2.1
    for hca in state.ib_hcas:
        emit(f"mlx5_core {hca.bus_id}: firmware version: {hca.firmware}", 0.0417)
    for hca in state.ib_hcas:
        emit(f"mlx5_core {hca.bus_id}: Port module event: module 0, Cable plugged", 0.0213)
    t = 5.2
    emit("nvidia: loading out-of-tree module taints kernel.")
    if not drv.open_kernel_module:  # the open modules are Dual MIT/GPL: no licence taint
        emit("nvidia: module license 'NVIDIA' taints kernel.")
    emit("nvidia-nvlink: Nvlink Core is being initialized, major device number 508")
    for gpu in state.gpus:
        emit(f"nvidia {gpu.bus_id[4:].lower()}: enabling device (0000 -> 0002)", 0.0121)
    if drv.open_kernel_module:  # the open module's banner, as in corpus dmesg_xid/01
        emit(
            f"NVRM: loading NVIDIA UNIX Open Kernel Module for {_machine(spec)}  {drv.kernel_module_version}"
            f"  Release Build  (dvs-builder@U22-I3-B10-02-5)  {drv.build_date or ''}".rstrip(),
            0.31,
        )
    else:
        emit(
            f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {drv.kernel_module_version}"
            f"  {drv.build_date or ''}".rstrip(),
            0.31,
        )
    emit(
        "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  "
        f"{drv.kernel_module_version}  {drv.build_date or ''}".rstrip(),
        0.0191,
    )
    emit("nvidia-uvm: Loaded the UVM driver, major device number 506.", 0.0342)
    t += 2.4
    for hca in state.ib_hcas:
        port = hca.ports[0]
        if port.link_layer == "Ethernet":
            emit(f"mlx5_core {hca.bus_id} {port.netdev}: Link up", 0.0077)
    return lines


def boot_kernel_log(state: NodeState) -> list[str]:
    """The kernel log of a fresh boot of ``state``'s node, with its present driver and devices.

    Uses the node's fixture for the kernel banner; a node without a shipped fixture keeps the first line
    of its present log (the ``Linux version`` banner) and the NVIDIA driver's messages are rebuilt.
    """
    if state.fixture in fixture_names():
        spec = _spec(state.fixture)
    else:
        release = _release_of(state)
        spec = {"kernel_banner": f"{release} (buildd@lcy02-amd64) #1 SMP", "kernel_release": release}
    return _kernel_log(spec, state)


def _release_of(state: NodeState) -> str:
    parts = (state.uname or "").split()
    return parts[2] if len(parts) > 2 else "5.15.0-91-generic"


def _machine(spec: dict[str, Any]) -> str:
    """The fixture's ``uname -m``: ``x86_64`` unless it says otherwise (a Grace node is ``aarch64``)."""
    return str(spec.get("machine", "x86_64"))


def build_state(spec: dict[str, Any], *, host: str | None = None) -> NodeState:
    """Expand a fixture data file (see module docstring) into a :class:`NodeState`."""
    fixture = spec["fixture"]
    # Identities (GPU UUIDs and serials, HCA GUIDs) derive from the fixture and, for any host but the
    # fixture's own, from the host name too: two nodes of one fixture must not look like one machine.
    seed = fixture if host is None or host == spec["host"] else f"{fixture}@{host}"
    sm_present = spec.get("sm_present", True)
    state = NodeState(
        fixture=fixture,
        host=host or spec["host"],
        system=spec.get("system"),
        driver=DriverState(**spec["driver"]),
        sm_present=sm_present,
        nvswitches=[NvSwitchState(index=i, bus_id=b) for i, b in enumerate(spec.get("nvswitches", []))],
        modules=[ModuleState(**m) for m in spec["modules"]],
        services={name: ServiceState(**s) for name, s in spec["services"].items()},
        nccl_env=dict(spec.get("nccl_env", {})),
        perf=PerfState(**spec.get("perf", {})),
        os_release=dict(spec.get("os_release", {})),
        uname=(
            f"Linux {host or spec['host']} {spec['kernel_release']} {spec['kernel_version']}"
            f" {_machine(spec)} {_machine(spec)} {_machine(spec)} GNU/Linux"
        ),
    )
    state.gpus = _gpus(spec, seed)
    state.ib_hcas = _hcas(spec, seed, sm_present)
    if "clock" in spec:
        state.clock = ClockState(**spec["clock"])
    for entry in spec.get("processes", []):
        # {"gpu": 0, "pid": 4242, "name": "python3", "used_memory_mib": 1024, "unit": "train.service"}
        proc = dict(entry)
        gpu = state.gpu(int(proc.pop("gpu")))
        gpu.processes.append(GpuProcess(**proc))
        gpu.memory_used_mib += gpu.processes[-1].used_memory_mib
    state.daemons_hold_gpus = bool(spec.get("daemons_hold_gpus", False))
    for sw in state.nvswitches:
        sw.links_active = spec.get("nvswitch_links")
    state.kernel_log = _kernel_log(spec, state)
    return state
