"""``nvidia-smi topo -m``: the GPU/NIC connection matrix of a simulated node.

Codes, as the legend explains them: ``NV#`` for GPUs joined by # NVLinks (through NVSwitches: the fewer
active links of the two GPUs; direct links: the links between them), else the PCIe path: ``PIX`` for two
functions of one device, ``PXB`` behind the same PCIe switch, ``NODE`` in one NUMA node, ``SYS`` across
NUMA nodes. Cells are tab-separated and NICs are named in a ``NIC Legend:`` (R520+ layout; corpus
``nvidia_smi_topo/01_dgx_a100_40gb_nv12_12nics_pxb.txt`` and ``nvml/topo_m_*``).

``topo -mp`` (``--matrix_pci``) is the same matrix with the PCIe codes only and a legend without ``NV#``
(corpus ``nvidia_smi_topo/13_*``). ``topo -p2p r|w|n|a|p`` (``--p2pstatus``) prints the GPUs' peer-to-peer
status for one capability: read, write, NVLink, atomics, PCIe (corpus ``nvidia_smi_topo/10_*`` to ``12_*``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assessor.sim.state import GpuState, IbHcaState, NodeState
from assessor.sim.tools import ToolResult
from assessor.sim.tools.nvidia_smi_common import EXIT_INVALID_ARGUMENT, EXIT_OK, result, text, usage_error

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

P2P_LEGEND = [
    "Legend:",
    "",
    "  X    = Self",
    "  OK   = Status Ok",
    "  CNS  = Chipset not supported",
    "  GNS  = GPU not supported",
    "  TNS  = Topology not supported",
    "  NS   = Not supported",
    "  U    = Unknown",
]
# ``DR = Disabled by regkey`` comes before ``U`` from R610 (the 610.43.02 capture has it, the 590 and older do not).
P2P_DR_FROM = 610
P2P_CAPABILITIES = "rwnap"  # read, write, nvlink, atomics, pcie (nvidia-smi topo -h)


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


def render(state: NodeState, pci_only: bool = False) -> str:
    """The whole ``topo -m`` output (``-mp``: PCIe codes only): matrix, legend and NIC legend."""
    devs = devices(state)
    header = ["", *(d.label for d in devs), "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    lines = ["\t".join(header)]
    for row in devs:
        cells = [row.label, *(_pci_cell(row, col) if pci_only else connection(row, col) for col in devs)]
        if row.gpu is not None:
            numa = "N/A" if row.gpu.numa_node is None else str(row.gpu.numa_node)
            # The real output leaves an empty cell before GPU NUMA ID (corpus nvml/topo_m_HGX_H100_excerpt.txt).
            cells += [row.gpu.cpu_affinity or "N/A", numa, "", "N/A"]
        lines.append("\t".join(cells))
    lines += ["", *(LEGEND[:-1] if pci_only else LEGEND)]
    names = nic_names(state)
    if names:
        lines += ["", "NIC Legend:", ""]
        lines += [f"  {nic}: {name}" for nic, name in names.items()]
    return text(*lines)


def _pci_cell(a: _Device, b: _Device) -> str:
    return " X " if a.label == b.label else pcie_connection(a, b)


def p2p_status(a: _Device, b: _Device, capability: str) -> str:
    """One cell of ``topo -p2p``: OK over NVLink (read, write, NVLink, atomics); over PCIe only within a NUMA node.

    Two GPUs whose PCIe path crosses the CPU interconnect (``SYS``) answer ``CNS``, as the capture of two L4s;
    without an active NVLink between them the ``n`` capability is ``NS``.
    """
    assert a.gpu is not None and b.gpu is not None
    nvlink = _nvlinks(a.gpu, b.gpu) > 0
    if capability == "n":
        return "OK" if nvlink else "NS"
    if nvlink and capability != "p":
        return "OK"
    return "CNS" if pcie_connection(a, b) == "SYS" else "OK"


def render_p2p(state: NodeState, capabilities: str) -> str:
    """``topo -p2p``: the GPU matrix with every cell followed by a tab, then the P2P legend (raw-tab capture 11)."""
    gpus = [d for d in devices(state) if d.gpu is not None]
    lines = [" \t" + "".join(f"{g.label}\t" for g in gpus)]
    for row in gpus:
        cells = []
        for col in gpus:
            if row.label == col.label:
                cells.append("X")
                continue
            statuses = [p2p_status(row, col, c) for c in capabilities]
            cells.append(next((s for s in statuses if s != "OK"), "OK"))
        lines.append(f" {row.label}\t" + "".join(f"{cell}\t" for cell in cells))
    legend = list(P2P_LEGEND)
    if int(state.driver.version.split(".")[0]) >= P2P_DR_FROM:
        legend.insert(-1, "  DR   = Disabled by regkey")
    return text(*lines, "", *legend)


def topo(args: list[str], state: NodeState) -> ToolResult:
    """``nvidia-smi topo -m`` (``--matrix``), ``-mp`` (``--matrix_pci``) and ``-p2p`` (``--p2pstatus``)."""
    if args in (["-m"], ["--matrix"]):
        return ToolResult(EXIT_OK, render(state))
    if args in (["-mp"], ["--matrix_pci"]):
        return ToolResult(EXIT_OK, render(state, pci_only=True))
    if args and args[0] in ("-p2p", "--p2pstatus"):
        if len(args) == 1 or args[1].startswith("-"):
            return result(EXIT_INVALID_ARGUMENT, [f'Option "{args[0]}" is missing its value.'])
        # One letter in the man page; the captures also show ``rw`` answered with one matrix (the worst status).
        if len(args) == 2 and args[1] and all(c in P2P_CAPABILITIES for c in args[1]):
            return ToolResult(EXIT_OK, render_p2p(state, args[1]))
    return usage_error()
