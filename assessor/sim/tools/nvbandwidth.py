"""Simulated ``nvbandwidth`` (github.com/NVIDIA/nvbandwidth, v0.8): host-device and device-to-device copies.

``nvbandwidth`` runs every test case it knows; ``-t NAME [NAME...]`` (or ``--testcase``) the named ones;
``-l`` lists them. The output has v0.8's shape (corpus ``nvbandwidth/01``): the version lines, the CUDA and
driver versions, one ``Device N: NAME (BUS)`` line per GPU, then per test ``Running NAME.``, the matrix
title, the matrix (rows: the CPU, or the source GPU; columns: the GPUs; ``N/A`` for a GPU to itself) and
``SUM NAME TOTAL``, and the closing NOTE.

The figures follow the node (:func:`host_device_gbps`, :func:`peer_gbps`):

- a host copy crosses the GPU's PCIe link: a Gen5 x16 link carries about 53 GB/s one way (NVIDIA/nvbandwidth#24:
  8x H100, device to host 52.77 per GPU), Gen4 x16 about 25 (NVIDIA/nvbandwidth#42: A100, 25.13); a link
  trained at fewer lanes or a lower generation carries that share of it (the `pcie-degraded` fault);
- a copy between GPUs goes over NVLink when both GPUs have every link up (the NVLink rate times the share of
  links active on the worse GPU), and over PCIe otherwise.

The copies of one GPU do not depend on the others': a slow link shows in its own column only.
"""

from __future__ import annotations

from assessor.sim.grub import p2p_share
from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import Session, ToolResult
from assessor.sim.tools.hpl import visible_gpus

VERSION = "v0.8"
# One direction of a x16 link, as nvbandwidth measures it with the copy engines (GB/s), by PCIe generation.
_PCIE_X16_GBPS = {3: 12.3, 4: 25.1, 5: 52.9, 6: 104.0}
# One direction between two GPUs over NVLink with every link up (GB/s): NVLink4 (H100/H200, 18 links) and
# NVLink3 (A100, 12 links) through NVSwitch, as device_to_device_memcpy_write_ce measures them (about 80 % of
# the 450 and 300 GB/s line rates; NVIDIA/nccl#1264 measured 380 one way on H100 with p2pBandwidthLatencyTest).
_NVLINK_GBPS = {4: 376.0, 3: 234.0, 5: 750.0}

TESTS: tuple[tuple[str, str], ...] = (
    ("host_to_device_memcpy_ce", "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)"),
    ("device_to_host_memcpy_ce", "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)"),
    ("host_to_device_bidirectional_memcpy_ce", "memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)"),
    ("device_to_host_bidirectional_memcpy_ce", "memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)"),
    ("device_to_device_memcpy_read_ce", "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)"),
    ("device_to_device_memcpy_write_ce", "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)"),
    ("host_to_device_memcpy_sm", "memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)"),
    ("device_to_host_memcpy_sm", "memcpy SM CPU(row) <- GPU(column) bandwidth (GB/s)"),
)
_NOTE = (
    "NOTE: The reported results may not reflect the full capabilities of the platform.\n"
    "Performance can vary with software drivers, hardware clocks, and system topology.\n"
)


def pcie_share(gpu: GpuState) -> float:
    """The link's capacity against the same generation's x16 (a Gen5 x8 link: 0.5)."""
    return (2.0 ** (gpu.pcie_gen_current - gpu.pcie_gen_max)) * gpu.pcie_width_current / 16


def host_device_gbps(gpu: GpuState, *, to_device: bool, bidirectional: bool = False) -> float:
    """One GPU's copy to or from host memory over its PCIe link (GB/s)."""
    full = _PCIE_X16_GBPS.get(gpu.pcie_gen_max, 25.1) * pcie_share(gpu)
    if to_device:
        full *= 0.995  # host to device runs a touch below the other way on every corpus run
    return full * (0.84 if bidirectional else 1.0)


def _links_share(gpu: GpuState) -> float:
    return sum(1 for link in gpu.nvlinks if link.active) / len(gpu.nvlinks) if gpu.nvlinks else 0.0


def peer_gbps(src: GpuState, dst: GpuState) -> float:
    """A copy from ``src`` to ``dst`` (GB/s): NVLink when both have links up, PCIe otherwise."""
    share = min(_links_share(src), _links_share(dst))
    if share > 0:
        version = src.nvlinks[0].version if src.nvlinks else 4
        return _NVLINK_GBPS.get(version, 234.0) * share
    return min(host_device_gbps(src, to_device=False), host_device_gbps(dst, to_device=True)) * 0.8


def nvbandwidth(args: list[str], session: Session) -> ToolResult:
    state = session.read()
    if "-h" in args or "--help" in args:
        return ToolResult(0, _help())
    if "-l" in args or "--list" in args:
        return ToolResult(0, _version() + "\nIndex, Name:\n\tDescription\n=======================\n" + _listing())
    wanted, error = _wanted(args)
    if error:
        return ToolResult(1, _version(), error + "\n")
    out = [_version(), _header(visible_gpus(state, session.env), state)]
    gpus = visible_gpus(state, session.env)
    if not state.driver.loaded or not state.module_loaded("nvidia") or not gpus:
        return ToolResult(1, "".join(out) + "ERROR: no CUDA-capable device is detected\n")
    for name, title in TESTS:
        if wanted and name not in wanted:
            continue
        out.append(_test(state, gpus, name, title))
    out.append(_NOTE)
    return ToolResult(0, "".join(out))


def _wanted(args: list[str]) -> tuple[list[str], str | None]:
    names = [n for n, _ in TESTS]
    wanted: list[str] = []
    taking = False
    for arg in args:
        if arg in ("-t", "--testcase"):
            taking = True
            continue
        if arg.startswith("-"):
            taking = False
            continue
        if not taking:
            continue
        name = names[int(arg)] if arg.isdigit() and int(arg) < len(names) else arg
        if name not in names:
            return [], f"ERROR: Testcase {arg} not found!"
        wanted.append(name)
    return wanted, None


def _version() -> str:
    return f"nvbandwidth Version: {VERSION}\nBuilt from Git version: {VERSION}\n\n"


def _header(gpus: list[GpuState], state: NodeState) -> str:
    cuda = state.driver.cuda_version.split(".")
    code = int(cuda[0]) * 1000 + (int(cuda[1]) * 10 if len(cuda) > 1 and cuda[1].isdigit() else 0)
    lines = [
        f"CUDA Runtime Version: {code}",
        f"CUDA Driver Version: {code}",
        f"Driver Version: {state.driver.version}",
        "",
    ]
    lines += [f"Device {i}: {g.name} ({g.bus_id[:-2].lower()})" for i, g in enumerate(gpus)]
    return "\n".join(lines) + "\n\n"


def _listing() -> str:
    return "".join(f"{i}, {name}:\n\t{title}\n\n" for i, (name, title) in enumerate(TESTS))


def _help() -> str:
    return (
        "nvbandwidth CLI:\n"
        "  -h [ --help ]                Produce help message\n"
        "  -b [ --bufferSize ] arg (=512)  Memcpy buffer size in MiB\n"
        "  -l [ --list ]                List available testcases\n"
        "  -t [ --testcase ] arg        Testcase(s) to run (by name or index)\n"
        "  -v [ --verbose ]             Verbose output\n"
    )


def _test(state: NodeState, gpus: list[GpuState], name: str, title: str) -> str:
    width = 10
    columns = "".join(f"{i:>{width}}" for i in range(len(gpus)))
    lines = [f"Running {name}.", title, f"   {columns}"]
    total = 0.0
    if name.startswith(("host_to_device", "device_to_host")):
        to_device = name.startswith("host_to_device")
        values = [host_device_gbps(g, to_device=to_device, bidirectional="bidirectional" in name) for g in gpus]
        total = sum(values)
        lines.append(" 0" + "".join(f"{v:>{width}.2f}" for v in values))
    else:
        for i, src in enumerate(gpus):
            row = []
            for j, dst in enumerate(gpus):
                if i == j:
                    row.append(f"{'N/A':>{width}}")
                    continue
                value = peer_gbps(src, dst)
                if min(_links_share(src), _links_share(dst)) == 0:
                    value *= p2p_share(state)  # over PCIe: an IOMMU that translates DMA slows it
                total += value
                row.append(f"{value:>{width}.2f}")
            lines.append(f"{i:>2}" + "".join(row))
    return "\n".join(lines) + f"\n\nSUM {name} {total:.2f}\n\n"
