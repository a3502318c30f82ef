"""``dcgmi nvlink`` and ``dcgmi topo``: the interconnect views of DCGM, as ``dcgmi`` prints them.

Layouts from DCGM's own source (NVIDIA/DCGM 4.x ``dcgmi/Nvlink.cpp``, ``dcgmi/Topo.cpp`` and the tree box of
``dcgmi/DcgmiOutput.cpp``) and, for ``nvlink -s``, a real capture (``tests/data/corpus/dcgmi_nvlink``):

- ``nvlink -s``: a small title box, then one row of 18 link states per GPU (DCGM_NVLINK_MAX_LINKS_PER_GPU):
  ``U`` up, ``D`` down, ``_`` a link the GPU does not have. NvSwitches are listed through NVIDIA's NSCQ
  library, which the simulated node does not have: "No NvSwitches found.", as the 8x H100 capture shows.
- ``nvlink -e -g GPU``: a tree box (30 + 50 columns) with, up to Hopper, the four error counters of every link
  (CRC FLIT, CRC Data, Replay, Recovery), and from Blackwell the GPU's error totals under "Error Detail".
- ``topo --gpuid GPU``: a tree box (20 + 80 columns): the CPU cores the GPU is close to, then for every other
  GPU the PCIe path and, over NVLink, the links in use; ``topo`` alone (or ``-g GROUP``) the group view: the
  cores every GPU shares, whether they share a NUMA node, and the slowest path.
"""

from __future__ import annotations

from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import ToolResult

_MAX_LINKS_PER_GPU = 18  # DCGM_NVLINK_MAX_LINKS_PER_GPU
_ALL_GPUS_GROUP = "DCGM_ALL_SUPPORTED_GPUS"  # the default group's name (dcgmi group -l)

# nvidia-smi topo's PCIe codes as DCGM words the same NVML path (Topo.cpp HelperGetPciPath).
_PCI_PATH = {
    "PIX": "Connected via a single PCIe switch",
    "PXB": "Connected via multiple PCIe switches",
    "PHB": "Connected via a PCIe host bridge",
    "NODE": "Connected via a CPU-level link",
    "SYS": "Connected via a CPU-level link",
}
_PATH_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")  # best to worst

_COUNT_WORDS = (
    "",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
)

# Error counters per link up to Hopper (DCGM field order), and the GPU-wide totals from Blackwell on.
_LINK_ERRORS = (("CRC FLIT Error", "crc_flit"), ("CRC Data Error", "crc_data"), ("Replay Error", "replay"))
_BLACKWELL_ERRORS = (
    "Malformed Packet Error",
    "Buffer Overrun Error",
    "Rx Error",
    "Rx Remote Error",
    "Rx General Error",
    "Rx Symbol Error",
    "Effective Error",
    "Tx Discards",
    "Link Integrity Error",
)

NVLINK_USAGE = (
    "Usage: dcgmi nvlink\n   dcgmi nvlink --host <IP/FQDN> -g <gpuId> -e -j\n   dcgmi nvlink --host <IP/FQDN> -s\n"
)
TOPO_USAGE = (
    "Usage: dcgmi topo\n"
    "   dcgmi topo --host <IP/FQDN> -g <groupId> -j\n"
    "   dcgmi topo --host <IP/FQDN> --gpuid <gpuId> -j\n"
)


# ---- the tree box of dcgmi/DcgmiOutput.cpp (DcgmiOutputTree) ---------------------------------------------


class _Tree:
    """DCGM's two-column tree box: header lines across it, then label | value rows."""

    def __init__(self, left: int, right: int) -> None:
        self.left, self.right = left, right
        self.lines: list[str] = []

    def _hline(self, char: str) -> str:
        return "+" + char * (self.left - 1) + "+" + char * (self.right - 2) + "+"

    def row(self, label: str, value: str = "", level: int = 0) -> None:
        text = ("-> " if level else "") + label
        if level > 1:
            text = " " * (3 * level - 3) + text
        self.lines.append(f"| {text:<{self.left - 3}} | {value:<{self.right - 4}} |")

    def render(self, headers: list[str]) -> str:
        width = self.left + self.right
        out = [self._hline("-"), *(f"| {h:<{width - 3}}|" for h in headers), self._hline("="), *self.lines]
        out.append(self._hline("-"))
        return "".join(line + "\n" for line in out)


# ---- dcgmi nvlink ------------------------------------------------------------------------------------------


def _state_char(gpu: GpuState, link: int) -> str:
    found = next((lk for lk in gpu.nvlinks if lk.link == link), None)
    if found is None:
        return "_"
    return "U" if found.active else "D"


def _link_status(state: NodeState) -> str:
    lines = ["+----------------------+", "|  NvLink Link Status  |", "+----------------------+", "GPUs:"]
    gpus = [g for g in state.gpus if not g.lost]
    if not gpus:
        lines.append("    No GPUs found.")
    for gpu in gpus:
        lines.append(f"    gpuId {gpu.index}:")
        lines.append("        " + " ".join(_state_char(gpu, i) for i in range(_MAX_LINKS_PER_GPU)))
    lines += ["NvSwitches:", "    No NvSwitches found.", "", "Key: Up=U, Down=D, Disabled=X, Not Supported=_"]
    return "".join(line + "\n" for line in lines)


def _error_counts(gpu: GpuState) -> str:
    tree = _Tree(30, 50)
    if gpu.architecture == "Blackwell":
        errors: dict[str, int] = {}
        for link in gpu.nvlinks:
            for key, count in link.errors.items():
                errors[key] = errors.get(key, 0) + count
        tree.row("Error Detail")
        effective = errors.get("crc_flit", 0) + errors.get("crc_data", 0)
        for name in _BLACKWELL_ERRORS:
            tree.row(name, str(effective if name == "Effective Error" else 0), level=1)
    else:
        for link in sorted(gpu.nvlinks, key=lambda lk: lk.link):
            tree.row(f"Link {link.link}")
            for name, key in _LINK_ERRORS:
                tree.row(name, str(link.errors.get(key, 0)), level=1)
            tree.row("Recovery Error", str(link.errors.get("recovery", 0)), level=1)
    return tree.render(["NVLINK Error Counts", f"GPU {gpu.index}"])


def _gpu_arg(args: list[str], *flags: str) -> tuple[bool, int | None]:
    """Whether one of ``flags`` was given, and its integer value (None when missing or not a number)."""
    for flag in flags:
        if flag in args:
            at = args.index(flag)
            value = args[at + 1] if at + 1 < len(args) else ""
            return True, int(value) if value.isdigit() else None
    return False, None


def nvlink(args: list[str], state: NodeState) -> ToolResult:
    """``dcgmi nvlink -s`` / ``--link-status``; ``dcgmi nvlink -g GPU -e`` / ``--errors``."""
    if "-s" in args or "--link-status" in args:
        return ToolResult(0, _link_status(state))
    if "-e" in args or "--errors" in args:
        given, gpu_id = _gpu_arg(args, "-g", "--gpuid")
        if not given or gpu_id is None:
            return ToolResult(255, "", "ERROR: -g/--gpuid is required with -e\n" + NVLINK_USAGE)
        gpu = next((g for g in state.gpus if g.index == gpu_id and not g.lost), None)
        if gpu is None:
            return ToolResult(255, f"GPU ID {gpu_id} is not valid, return: Invalid GPU ID\n")
        return ToolResult(0, _error_counts(gpu))
    return ToolResult(255, "", NVLINK_USAGE)


# ---- dcgmi topo --------------------------------------------------------------------------------------------


def _cores(affinity: str | None) -> set[int]:
    out: set[int] = set()
    for part in (affinity or "").split(","):
        lo, _, hi = part.strip().partition("-")
        if lo.isdigit():
            out.update(range(int(lo), int(hi if hi.isdigit() else lo) + 1))
    return out


def _affinity_text(cores: set[int]) -> str:
    """DCGM's affinity words: ``48 - 63, 176 - 191`` (Topo.cpp HelperGetAffinity); N/A for none."""
    if not cores:
        return "N/A"
    spans: list[str] = []
    ordered = sorted(cores)
    start = prev = ordered[0]
    for core in [*ordered[1:], None]:
        if core is not None and core == prev + 1:
            prev = core
            continue
        spans.append(str(start) if start == prev else f"{start} - {prev}")
        if core is not None:
            start = prev = core
    return ", ".join(spans)


def _pcie(state: NodeState, a: GpuState, b: GpuState) -> str:
    from assessor.sim.tools.nvidia_smi_topo_cmd import devices, pcie_connection

    by_label = {d.label: d for d in devices(state)}
    return pcie_connection(by_label[f"GPU{a.index}"], by_label[f"GPU{b.index}"])


def _nvlink_path(a: GpuState, b: GpuState) -> str | None:
    """The NVLink line of a GPU pair: the links of ``a`` that reach ``b`` (through an NVSwitch, every one)."""
    switched = any(x.active and x.remote == "nvswitch" for x in b.nvlinks)
    links = sorted(
        lk.link
        for lk in a.nvlinks
        if lk.active and ((lk.remote == "nvswitch" and switched) or lk.remote == f"GPU{b.index}")
    )
    if not links:
        return None
    count = len(links)
    words = _COUNT_WORDS[count] if count < len(_COUNT_WORDS) else str(count)
    plural = "s" if count != 1 else ""
    listed = ", ".join(str(i) for i in links)
    return f"Connected via {words} NVLINK{plural} (Link{plural}: {listed})"


def _gpu_topology(state: NodeState, gpu: GpuState) -> str:
    tree = _Tree(20, 80)
    tree.row("CPU Core Affinity", _affinity_text(_cores(gpu.cpu_affinity)))
    for other in state.gpus:
        if other.index == gpu.index or other.lost:
            continue
        tree.row(f"To GPU {other.index}", _PCI_PATH[_pcie(state, gpu, other)])
        path = _nvlink_path(gpu, other)
        if path is not None:
            tree.row("", path)
    return tree.render(["Topology Information", f"GPU ID: {gpu.index}"])


def _group_topology(state: NodeState) -> str:
    gpus = [g for g in state.gpus if not g.lost]
    shared = set.intersection(*(_cores(g.cpu_affinity) for g in gpus)) if gpus else set()
    numa = {g.numa_node for g in gpus}
    paths = [_pcie(state, a, b) for a in gpus for b in gpus if a.index < b.index]
    worst = max(paths, key=_PATH_ORDER.index) if paths else "PIX"
    tree = _Tree(20, 80)
    tree.row("CPU Core Affinity", _affinity_text(shared))
    tree.row("NUMA Optimal", "True" if len(numa) == 1 and None not in numa else "False")
    tree.row("Worst Path", _PCI_PATH[worst])
    return tree.render(["Topology Information", _ALL_GPUS_GROUP])


def topo(args: list[str], state: NodeState) -> ToolResult:
    """``dcgmi topo --gpuid GPU``; ``dcgmi topo`` (the all-GPU group)."""
    given, gpu_id = _gpu_arg(args, "--gpuid")
    if given:
        gpu = next((g for g in state.gpus if g.index == gpu_id and not g.lost), None)
        if gpu is None:
            return ToolResult(255, f"Error: unable to get topology for GPU {gpu_id}. Return: Invalid GPU ID.\n")
        return ToolResult(0, _gpu_topology(state, gpu))
    if not args:
        return ToolResult(0, _group_topology(state))
    group_given, group = _gpu_arg(args, "-g", "--group")
    if not group_given or group is None:
        return ToolResult(255, "", TOPO_USAGE)
    if group != 0:  # group 0 is the built-in all-GPU group; no other group exists on a fresh host engine
        return ToolResult(255, "Error: Unable to get group information. Return: The Group is not found\n")
    return ToolResult(0, _group_topology(state))
