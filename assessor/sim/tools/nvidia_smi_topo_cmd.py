"""``nvidia-smi topo -m``: the GPU/NIC connection matrix of a simulated node.

Codes, as the legend explains them: ``NV#`` for GPUs joined by # NVLinks (through NVSwitches: the fewer
active links of the two GPUs; direct links: the links between them), else the PCIe path: ``PIX`` for two
functions of one device, ``PXB`` behind the same PCIe switch, ``NODE`` in one NUMA node, ``SYS`` across
NUMA nodes. Cells are tab-separated and NICs are named in a ``NIC Legend:`` (R520+ layout; corpus
``nvidia_smi_topo/01_dgx_a100_40gb_nv12_12nics_pxb.txt`` and ``nvml/topo_m_*``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assessor.sim.state import GpuState, IbHcaState, NodeState
from assessor.sim.tools import ToolResult
from assessor.sim.tools.nvidia_smi_common import EXIT_OK, text, usage_error

LEGEND = [
    "Legend:",
    "",
    "  X    = Self",
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
    "  PIX  = Connection traversing at most a single PCIe bridge",
    "  NV#  = Connection traversing a bonded set of # NVLinks",
]


@dataclass(frozen=True)
class _Device:
    label: str  # GPU0, NIC3
    numa: int | None
    switch: str | None
    pci: str | None  # domain:bus:device without the function, to spot functions of one card
    gpu: GpuState | None = None


def _pci_device(bus_id: str | None) -> str | None:
    if not bus_id:
        return None
    head = bus_id.rsplit(".", 1)[0]
    domain, bus, dev = head.split(":")
    return f"{int(domain, 16):04x}:{bus.lower()}:{dev.lower()}"


def _natural(hca: IbHcaState) -> tuple[str, int]:
    match = re.match(r"^(.*?)(\d+)$", hca.name)
    return (match.group(1), int(match.group(2))) if match else (hca.name, 0)


def devices(state: NodeState) -> list[_Device]:
    """The matrix's rows and columns: the reachable GPUs, then the HCAs in name order as NIC0..."""
    out = [
        _Device(f"GPU{g.index}", g.numa_node, g.pcie_switch, _pci_device(g.bus_id), g) for g in state.gpus if not g.lost
    ]
    for i, hca in enumerate(sorted(state.ib_hcas, key=_natural)):
        out.append(_Device(f"NIC{i}", hca.numa_node, hca.pcie_switch, _pci_device(hca.bus_id)))
    return out


def nic_names(state: NodeState) -> dict[str, str]:
    """NIC0 -> mlx5_0, as the NIC legend pairs them."""
    return {f"NIC{i}": hca.name for i, hca in enumerate(sorted(state.ib_hcas, key=_natural))}


def _nvlinks(a: GpuState, b: GpuState) -> int:
    direct = sum(1 for link in a.nvlinks if link.active and link.remote == f"GPU{b.index}")
    if direct:
        return direct
    via_a = sum(1 for link in a.nvlinks if link.active and link.remote == "nvswitch")
    via_b = sum(1 for link in b.nvlinks if link.active and link.remote == "nvswitch")
    return min(via_a, via_b)


def connection(a: _Device, b: _Device) -> str:
    """The matrix cell between two devices."""
    if a.label == b.label:
        return " X "
    if a.gpu is not None and b.gpu is not None:
        links = _nvlinks(a.gpu, b.gpu)
        if links:
            return f"NV{links}"
    return pcie_connection(a, b)


def pcie_connection(a: _Device, b: _Device) -> str:
    """How two devices meet on PCIe alone (NVML's common ancestor): PIX, PXB, NODE or SYS."""
    if a.pci is not None and a.pci == b.pci:
        return "PIX"
    if a.switch is not None and a.switch == b.switch:
        return "PXB"
    if a.numa is not None and a.numa == b.numa:
        return "NODE"
    return "SYS"


def render(state: NodeState) -> str:
    """The whole ``topo -m`` output: matrix, legend and NIC legend."""
    devs = devices(state)
    header = ["", *(d.label for d in devs), "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    lines = ["\t".join(header)]
    for row in devs:
        cells = [row.label, *(connection(row, col) for col in devs)]
        if row.gpu is not None:
            numa = "N/A" if row.gpu.numa_node is None else str(row.gpu.numa_node)
            # The real output leaves an empty cell before GPU NUMA ID (corpus nvml/topo_m_HGX_H100_excerpt.txt).
            cells += [row.gpu.cpu_affinity or "N/A", numa, "", "N/A"]
        lines.append("\t".join(cells))
    lines += ["", *LEGEND]
    names = nic_names(state)
    if names:
        lines += ["", "NIC Legend:", ""]
        lines += [f"  {nic}: {name}" for nic, name in names.items()]
    return text(*lines)


def topo(args: list[str], state: NodeState) -> ToolResult:
    """``nvidia-smi topo -m`` (``--matrix``); other topo options are not simulated."""
    if args not in (["-m"], ["--matrix"]):
        return usage_error()
    return ToolResult(EXIT_OK, render(state))
