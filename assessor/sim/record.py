"""Record a real node: a simulated node built from a snapshot of it (``gpulab sim record``).

:func:`record` parses the snapshot the way an assessment does (:func:`assessor.parsers.assemble.facts_from_snapshot`:
``nvml.json`` or ``nvidia-smi -q -x``, ``nvidia-smi -L``, ``topo -m``, ``mig -lgi``, ``ibstat``, ``lsmod``,
``systemctl show``, the driver version, ``os-release``, ``uname``, ``dmesg``) and writes every fact it finds
into a :class:`~assessor.sim.state.NodeState`. What the snapshot does not say comes from the closest shipped
fixture (same GPU model, else same MIG table, else same family such as A100, else same architecture,
else ``hgx-h100``) and is listed in
the returned ``filled`` paths (``gpus[*].clocks_mhz``, ``ib_hcas``, ``gpus[2].power_draw_w``...), so an
instructor knows which numbers are the real node's and which are the fixture's.

A fact the snapshot reports as not available (``N/A``) is kept as such where the state can say so: no row
remapping, no retired pages, no ECC, no MIG, no fabric. Where the state needs a value (a power draw, an
architecture), the fixture's is used and listed as filled.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path

from assessor.errors import InputError
from assessor.facts import Gpu, NodeFacts
from assessor.sim.state import (
    ComputeInstanceState,
    DriverState,
    EccCounters,
    GpuInstanceState,
    GpuState,
    IbHcaState,
    IbPortState,
    ModuleState,
    NodeState,
    NvLinkState,
    RemappedRows,
    RetiredPages,
    ServiceState,
)

DEFAULT_FIXTURE = "hgx-h100"

Fill = Callable[[str], None]  # records one state path as filled from the fixture

# GPU fields the state always takes from the fixture: no snapshot file carries them.
_ALWAYS_FILLED = (
    "pci_device_id",
    "pci_subsystem_id",
    "board_part_number",
    "memory_reserved_mib",
    "memory_used_mib",
    "temperature_memory_c",
    "temperature_max_operating_c",
    "temperature_memory_max_c",
    "power_default_limit_w",
    "power_min_limit_w",
    "power_max_limit_w",
    "clocks_mhz",
    "max_clocks_mhz",
    "performance_state",
    "processes",
)

# Fact field -> state field, for facts whose None means "use the fixture's value" (the state needs one).
_NEEDS_A_VALUE = {
    "name": "name",
    "uuid": "uuid",
    "serial": "serial",
    "bus_id": "bus_id",
    "architecture": "architecture",
    "vbios": "vbios",
    "memory_total_mib": "memory_total_mib",
    "persistence_mode": "persistence_mode",
    "compute_mode": "compute_mode",
    "pcie_gen_current": "pcie_gen_current",
    "pcie_gen_max": "pcie_gen_max",
    "pcie_width_current": "pcie_width_current",
    "pcie_width_max": "pcie_width_max",
    "temperature_c": "temperature_c",
    "temperature_slowdown_c": "temperature_slowdown_c",
    "temperature_shutdown_c": "temperature_shutdown_c",
    "power_draw_w": "power_draw_w",
    "power_limit_w": "power_limit_w",
    "throttle_reasons": "throttle_reasons",
    "performance_state": "performance_state",
}


def _model(name: str | None) -> str:
    return " ".join((name or "").split()).casefold().removeprefix("nvidia ")


def closest_fixture(facts: NodeFacts) -> str:
    """The shipped fixture most like the snapshot's node: same GPU model, MIG table, architecture."""
    from assessor.sim import mig
    from assessor.sim.fixtures import fixture_names, fixture_spec

    gpus = facts.gpus or []
    name = _model(gpus[0].name if gpus else None)
    arch = gpus[0].architecture if gpus else None
    try:
        table = mig.profiles_for(name) and mig._model_key(name)
    except mig.MigUnsupported:
        table = None

    def family(model: str) -> str:
        return model.replace("-", " ").split(" ")[0]  # a100-sxm4-80gb -> a100, h100 nvl -> h100

    def score(fixture: str) -> tuple[int, int]:
        spec = fixture_spec(fixture)
        theirs = _model(spec["gpu"]["name"])
        points = 0
        if theirs == name:
            points = 4
        elif table is not None and spec["gpu"].get("mig_supported"):
            try:
                points = 3 if mig._model_key(theirs) == table else 0
            except mig.MigUnsupported:
                points = 0
        if points == 0 and name and family(theirs) == family(name):
            points = 2
        if points == 0 and arch and spec["gpu"]["architecture"] == arch:
            points = 1
        return (points, -abs(len(spec["gpu_slots"]) - len(gpus)))

    best = max(fixture_names(), key=score)
    return best if score(best)[0] > 0 else DEFAULT_FIXTURE


def record(snapshot_dir: str | os.PathLike[str]) -> tuple[NodeState, list[str]]:
    """A simulated node from a real node's snapshot, and the state paths filled from the closest fixture.

    InputError when the directory is not a snapshot or tells nothing about the GPUs.
    """
    from assessor.capture.snapshot import read
    from assessor.parsers.assemble import facts_from_snapshot

    snap = read(Path(snapshot_dir))
    facts = facts_from_snapshot(snap)
    if not facts.gpus:
        raise InputError(
            f"{snapshot_dir}: no GPU facts to record (needs nvidia-smi-q.xml, nvml.json or nvidia-smi-L.txt)"
        )
    dmesg = snap.sources.get("dmesg.txt")
    return build_from_facts(facts, dmesg.text if dmesg is not None else None)


def build_from_facts(facts: NodeFacts, dmesg: str | None = None) -> tuple[NodeState, list[str]]:
    """The state of :func:`record` from already parsed facts (and the raw ``dmesg`` text, if any)."""
    from assessor.sim.fixtures import fixture_spec, load_fixture

    fixture = closest_fixture(facts)
    base = load_fixture(fixture)
    filled: list[str] = []

    def fill(path: str) -> None:
        if path not in filled:
            filled.append(path)

    host = facts.host
    if not host and facts.uname:
        host = facts.uname.split()[1] if len(facts.uname.split()) > 1 else None
    if not host:
        host = f"recorded-{fixture}"
        fill("host")
    state = copy.deepcopy(base)
    state.fixture = f"recorded-from-{fixture}"
    state.host = host
    state.driver = _driver(facts, base.driver, fill)
    # nvml.json and nvidia-smi -q -x say N/A for what a part lacks; nvidia-smi -L says nothing about it.
    detailed = facts.sources.get("gpus") in ("nvml.json", "nvidia-smi-q.xml")
    state.gpus = [
        _gpu(g, base.gpus[min(i, len(base.gpus) - 1)], i, fill, detailed) for i, g in enumerate(facts.gpus or [])
    ]
    for path in _ALWAYS_FILLED:
        fill(f"gpus[*].{path}")
    _mig(facts, state, fill)
    if not any(g.fabric_state for g in state.gpus):
        state.nvswitches = []
    elif state.nvswitches:
        fill("nvswitches")
    _ib(facts, state, base, fill)
    _topology(facts, state, fill)
    if facts.modules is not None:
        state.modules = [ModuleState(m.name, m.size or 0, list(m.used_by), m.used_by_count) for m in facts.modules]
    else:
        fill("modules")
    if facts.services is not None:
        state.services = {
            s.name: ServiceState(
                load_state=s.load_state or "loaded",
                active_state=s.active_state or "active",
                sub_state=s.sub_state or "running",
                unit_file_state=s.unit_file_state if s.unit_file_state is not None else "enabled",
                result=s.result or "success",
                exec_main_status=s.exec_main_status or 0,
            )
            for s in facts.services
        }
    else:
        fill("services")
    if facts.os_release is not None:
        state.os_release = dict(facts.os_release)
    else:
        fill("os_release")
    if facts.uname is not None:
        state.uname = facts.uname
    else:
        state.uname = base.uname.replace(base.host, host) if base.uname else None
        fill("uname")
    if dmesg is not None:
        state.kernel_log = dmesg.splitlines()
    else:
        from assessor.sim.fixtures import _kernel_log

        state.kernel_log = _kernel_log(fixture_spec(fixture), state)  # the recorded GPUs' bus ids and driver
        fill("kernel_log")
    for name in ("nccl_env", "perf"):
        fill(name)
    return state, filled


def _driver(facts: NodeFacts, base: DriverState, fill: Fill) -> DriverState:
    d = facts.driver
    driver = copy.deepcopy(base)
    if d is None or d.version is None:
        fill("driver.version")
    else:
        driver.version = driver.kernel_module_version = d.version
    if d is not None and d.kernel_module_version:
        driver.kernel_module_version = d.kernel_module_version
    if d is None or d.cuda_version is None:
        fill("driver.cuda_version")
    else:
        driver.cuda_version = d.cuda_version
    if d is not None and d.open_kernel_module is not None:
        driver.open_kernel_module = d.open_kernel_module
    fill("driver.build_date")
    return driver


def _gpu(fact: Gpu, template: GpuState, index: int, fill: Fill, detailed: bool = True) -> GpuState:
    """One GPU: the snapshot's facts over the fixture's GPU. ``detailed``: None facts mean N/A, not unknown."""
    gpu = copy.deepcopy(template)
    gpu.index = fact.index if fact.index is not None else index
    gpu.minor_number = gpu.index
    for fact_field, state_field in _NEEDS_A_VALUE.items():
        value = getattr(fact, fact_field)
        if value is None:
            fill(f"gpus[{index}].{state_field}")
        else:
            setattr(gpu, state_field, list(value) if isinstance(value, list) else value)
    if not detailed:  # a GPU list only (nvidia-smi -L): ECC, remapping, MIG, fabric, links are the fixture's
        for path in ("ecc_mode_current", "ecc", "remapped_rows", "retired_pages", "mig_supported", "fabric_state"):
            fill(f"gpus[{index}].{path}")
        if template.nvlinks:
            fill(f"gpus[{index}].nvlinks")
        gpu.mig_instances = []
        return gpu
    # ECC: None is "no ECC on this part" (N/A).
    gpu.ecc_mode_current = fact.ecc_mode_current
    gpu.ecc_mode_pending = fact.ecc_mode_pending if fact.ecc_mode_pending is not None else fact.ecc_mode_current
    gpu.ecc = EccCounters()
    for name in ("volatile_corrected", "volatile_uncorrected", "aggregate_corrected", "aggregate_uncorrected"):
        value = getattr(fact, f"ecc_{name}")
        if value is None:
            if fact.ecc_mode_current:
                fill(f"gpus[{index}].ecc.{name}")
        else:
            setattr(gpu.ecc, name, value)
    remap = (fact.remap_correctable, fact.remap_uncorrectable, fact.remap_pending, fact.remap_failure)
    gpu.remapped_rows = (
        None
        if all(v is None for v in remap)
        else RemappedRows(
            correctable=fact.remap_correctable or 0,
            uncorrectable=fact.remap_uncorrectable or 0,
            pending=bool(fact.remap_pending),
            failure=bool(fact.remap_failure),
        )
    )
    gpu.retired_pages = None if fact.retired_pages_pending is None else RetiredPages(pending=fact.retired_pages_pending)
    gpu.mig_supported = fact.mig_mode_current is not None
    gpu.mig_mode_current = bool(fact.mig_mode_current)
    gpu.mig_mode_pending = bool(fact.mig_mode_pending if fact.mig_mode_pending is not None else fact.mig_mode_current)
    gpu.mig_instances = []
    gpu.fabric_state = fact.fabric_state if fact.fabric_state not in (None, "Not Supported") else None
    gpu.fabric_status = fact.fabric_status if gpu.fabric_state else None
    gpu.fabric_clique_id = 0 if gpu.fabric_state else None
    if fact.nvlinks is not None:
        version = template.nvlinks[0].version if template.nvlinks else 4
        gpu.nvlinks = [
            NvLinkState(
                link=link.link,
                active=link.active,
                version=version,
                speed_gbps=link.speed_gbps,
                errors={**{"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}, **link.errors},
            )
            for link in fact.nvlinks
        ]
    else:
        fill(f"gpus[{index}].nvlinks")
    return gpu


def _mig(facts: NodeFacts, state: NodeState, fill: Fill) -> None:
    if facts.mig_instances is None:
        if any(g.mig_mode_current for g in state.gpus):
            fill("gpus[*].mig_instances")  # MIG on, but the snapshot has no -lgi: none recorded
        return
    by_index = {g.index: g for g in state.gpus}
    for gi in facts.mig_instances:
        gpu = by_index.get(gi.gpu)
        if gpu is None:
            continue
        cis = [
            ComputeInstanceState(
                ci.ci_id,
                ci.profile_id if ci.profile_id is not None else 0,
                ci.name or gi.name,
                ci.placement_start or 0,
                ci.placement_size or 1,
            )
            for ci in gi.compute_instances or []
        ]
        if gi.compute_instances is None:
            fill(f"gpus[{gpu.index}].mig_instances[{gi.gi_id}].compute_instances")
        gpu.mig_instances.append(
            GpuInstanceState(
                gi.gi_id,
                gi.profile_id if gi.profile_id is not None else -1,
                gi.name,
                gi.placement_start or 0,
                gi.placement_size or 1,
                cis,
            )
        )


def _topology(facts: NodeFacts, state: NodeState, fill: Fill) -> None:
    """CPU/NUMA affinity from ``topo -m``, and PCIe switches from its PXB/PIX cells (devices behind one switch)."""
    topo = facts.topology
    for gpu in state.gpus:
        label = f"GPU{gpu.index}"
        if topo is not None and label in topo.cpu_affinity:
            gpu.cpu_affinity = topo.cpu_affinity[label]
            numa = topo.numa_affinity.get(label, "")
            gpu.numa_node = int(numa) if numa.isdigit() else None
        else:
            fill(f"gpus[{gpu.index}].cpu_affinity")
            fill(f"gpus[{gpu.index}].numa_node")
    if topo is None:
        fill("gpus[*].pcie_switch")
        return
    # Union the devices that share a PCIe switch (PXB) or a card (PIX); each group is one switch.
    parent = {d: d for d in topo.devices}

    def root(d: str) -> str:
        while parent[d] != d:
            parent[d] = parent[parent[d]]
            d = parent[d]
        return d

    for a in topo.devices:
        for b, cell in topo.matrix.get(a, {}).items():
            if cell.strip() in ("PXB", "PIX") and b in parent:
                parent[root(a)] = root(b)
    groups: dict[str, list[str]] = {}
    for d in topo.devices:
        groups.setdefault(root(d), []).append(d)
    switch = {
        d: f"pcie-switch-{n}" for n, members in enumerate(g for g in groups.values() if len(g) > 1) for d in members
    }
    for gpu in state.gpus:
        gpu.pcie_switch = switch.get(f"GPU{gpu.index}")
    state_hcas = {h.name: h for h in state.ib_hcas}
    gpu_numa = {f"GPU{g.index}": g.numa_node for g in state.gpus}
    for nic, name in topo.nic_names.items():
        hca = state_hcas.get(name)
        if hca is None:
            continue
        hca.pcie_switch = switch.get(nic)
        near = [g for g, cell in topo.matrix.get(nic, {}).items() if cell.strip() in ("PIX", "PXB", "NODE")]
        hca_numa = next((gpu_numa[g] for g in near if gpu_numa.get(g) is not None), None)
        if hca_numa is not None:
            hca.numa_node = hca_numa


def _ib(facts: NodeFacts, state: NodeState, base: NodeState, fill: Fill) -> None:
    if not facts.ib_ports:
        fill("ib_hcas")
        fill("sm_present")
        return
    templates = base.ib_hcas or []
    hcas: dict[str, IbHcaState] = {}
    for port in facts.ib_ports:
        hca = hcas.get(port.ca)
        if hca is None:
            template = copy.deepcopy(templates[len(hcas) % len(templates)]) if templates else None
            hca = IbHcaState(
                name=port.ca,
                ca_type=port.ca_type or (template.ca_type if template else ""),
                firmware=port.firmware or (template.firmware if template else ""),
                node_guid=port.node_guid or (template.node_guid if template else ""),
                sys_image_guid=port.node_guid or (template.sys_image_guid if template else ""),
                bus_id=template.bus_id if template else None,
                numa_node=template.numa_node if template else None,
                ports=[],
            )
            hcas[port.ca] = hca
        hca.ports.append(
            IbPortState(
                port=port.port,
                state=port.state or "Active",
                physical_state=port.physical_state or "LinkUp",
                rate_gbps=port.rate_gbps if port.rate_gbps is not None else 0,
                link_layer=port.link_layer or "InfiniBand",
                base_lid=port.base_lid or 0,
                sm_lid=port.sm_lid or 0,
                port_guid=port.port_guid,
            )
        )
    state.ib_hcas = list(hcas.values())
    state.sm_present = any(p.sm_lid for p in facts.ib_ports if p.link_layer != "Ethernet")
    # The compute fabric's discovery (ibnetdiscover) reaches this node's compute HCAs: an InfiniBand HCA it does
    # not reach is on a fabric of its own (storage), as the fixtures that have one say.
    reached = {link.ca.rsplit(" ", 1)[-1] for link in facts.ib_links or () if link.ca.startswith(f"{state.host} ")}
    if reached:
        for hca in state.ib_hcas:
            if hca.name not in reached and any(p.link_layer != "Ethernet" for p in hca.ports):
                hca.role = "storage"
    devices = {d.hca_id: d for d in facts.ib_devices or []}
    for hca in state.ib_hcas:
        device = devices.get(hca.name)
        if device is None:
            fill(f"ib_hcas[{hca.name}].board_id")
            continue
        hca.hw_version = device.hw_ver or hca.hw_version
        hca.board_id = device.board_id or hca.board_id
        hca.vendor_part_id = device.vendor_part_id if device.vendor_part_id is not None else hca.vendor_part_id
        if device.sys_image_guid:
            hca.sys_image_guid = _guid(device.sys_image_guid)
        hca.firmware = device.fw_ver or hca.firmware
    fill("ib_hcas[*].bus_id")


def _guid(text: str) -> str:
    """A GUID as ibstat and the state write it (0x946dae03001b3073) from ibv_devinfo's 946d:ae03:001b:3073."""
    return "0x" + text.replace(":", "").lower().removeprefix("0x") if ":" in text else text


def record_command(source: str, out: str | os.PathLike[str]) -> tuple[NodeState, list[str]]:
    """``gpulab sim record --from snapshot:DIR --out node.json``: write the state; return it and the filled paths.

    ``source`` is ``snapshot:DIR`` (or a bare directory). InputError for anything else or a directory that
    holds no GPU facts; the state file is written only when the recording succeeded.
    """
    from assessor.sim.state import save_state

    if ":" in source and not source.startswith("snapshot:"):
        kind = source.split(":", 1)[0]
        raise InputError(f"sim record --from {source}: only snapshot:DIR can be recorded (not {kind}:)")
    directory = source.removeprefix("snapshot:")
    if not directory:
        raise InputError("sim record needs --from snapshot:DIR (a snapshot directory of the real node)")
    state, filled = record(Path(directory))
    save_state(state, out)
    return state, filled
