"""``dcgmi health``: the health watches of the DCGM host engine, from a node state.

The tables are DCGM's ``DcgmiOutputTree`` (dcgmi/Health.cpp, dcgmi/DcgmiOutput.cpp): ``-c`` is a 28+60
column tree headed "Health Monitor Report" with "Overall Health", then per entity ``-> N`` and its
``-> Errors`` by system, messages wrapped at 54 characters; ``-f`` lists the systems watched (18+70).
The simulated host engine watches every system (as after ``dcgmi health -s a``): the watch set is not kept
in the node state, so ``-s`` is answered and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import ToolResult

_SYSTEM_LETTERS = set("apnmsitvdcNP")  # DCGM's -s letters (p PCIe, n NVLink, m memory, ... a all)
_HEALTH = {0: "Healthy", 10: "Warning", 20: "Failure"}
_WATCHED = ("PCIe", "NVLINK", "Memory", "SM", "InfoROM", "Thermal", "Power", "Driver", "NvSwitch NF", "NvSwitch F")


@dataclass(frozen=True)
class Incident:
    """One health incident: the GPU, the DCGM system it belongs to, how bad, what DCGM says."""

    gpu: int
    system: str  # "PCIe system", "NVLINK system", "Memory system", ...
    health: int  # 10 warning, 20 failure
    message: str


def incidents(gpus: list[GpuState]) -> list[Incident]:
    """The incidents DCGM's health check reports for the state of ``gpus`` (messages as dcgm_errors.h words them)."""
    found: list[Incident] = []
    for g in gpus:
        if g.ecc.volatile_uncorrected:
            found.append(
                Incident(
                    g.index,
                    "Memory system",
                    20,
                    f"Detected {g.ecc.volatile_uncorrected} volatile double-bit ECC error(s) in GPU {g.index}.",
                )
            )
        rows = g.remapped_rows
        if rows is not None and rows.failure:
            found.append(
                Incident(
                    g.index,
                    "Memory system",
                    20,
                    f"GPU {g.index} had uncorrectable memory errors and row remapping failed. "
                    "Run a field diagnostic on the GPU.",
                )
            )
        elif rows is not None and rows.pending:
            found.append(
                Incident(
                    g.index,
                    "Memory system",
                    10,
                    f"GPU {g.index} had uncorrectable memory errors and row remapping is pending. "
                    "Drain the GPU and reset it or reboot the node.",
                )
            )
        for link in g.nvlinks:
            if not link.active:
                found.append(
                    Incident(g.index, "NVLINK system", 20, f"GPU {g.index}'s NvLink link {link.link} is currently down")
                )
        if any(r in g.throttle_reasons for r in ("hw_thermal_slowdown", "sw_thermal_slowdown")):
            found.append(
                Incident(g.index, "Thermal system", 10, f"Thermal violations totaling 12.1 seconds for GPU {g.index}")
            )
    return found


def _wrap(message: str, width: int = 54) -> list[str]:
    """Health.cpp AddErrorMessage: pieces of at most ``width`` characters, broken at a space."""
    words, lines, line = message.replace("\n", " ").split(" "), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


class _Tree:
    """DcgmiOutputTree(left, right): ``| label | value |`` rows under a header."""

    def __init__(self, left: int, right: int) -> None:
        self.left, self.right = left, right
        self.hline = "+" + "-" * (left - 1) + "+" + "-" * (right - 2) + "+\n"
        self.rows: list[str] = []

    def header(self, text: str) -> list[str]:
        full = self.left + self.right
        eq = "+" + "=" * (self.left - 1) + "+" + "=" * (self.right - 2) + "+\n"
        return [f"| {text:<{full - 3}}|\n", eq]

    def row(self, level: int, label: str, value: str = "") -> None:
        prefix = "" if level == 0 else "-> "
        left = f"{prefix:>{level * 3}}{label}" if level else label
        self.rows.append(f"| {left:<{self.left - 3}} | {value:<{self.right - 4}} |\n")


def health(args: list[str], state: NodeState) -> ToolResult:
    """``dcgmi health [-g GROUP] -s SYSTEMS | -c | -f [-j]``."""
    action: str | None = None
    it = iter(args)
    for arg in it:
        if arg in ("-s", "--set"):
            systems = next(it, "")
            if not systems or not set(systems) <= _SYSTEM_LETTERS:
                return ToolResult(255, f"Error: Invalid health systems flag: {systems}\n")
            action = "set"
        elif arg in ("-c", "--check"):
            action = "check"
        elif arg in ("-f", "--fetch"):
            action = "fetch"
        elif arg in ("-g", "--group"):
            next(it, None)
        elif arg in ("-j", "--json"):
            pass
        else:
            return ToolResult(
                255, f"Error: unknown option {arg}\nUsage: dcgmi health -g <groupId> -c | -s <flags> | -f\n"
            )
    if action is None:
        return ToolResult(255, "Usage: dcgmi health -g <groupId> -c | -s <flags> | -f\n")
    if action == "set":
        return ToolResult(0, "Health monitor systems set successfully.\n")
    if action == "fetch":
        tree = _Tree(18, 70)
        for system in _WATCHED:
            tree.row(0, system, "On")
        return ToolResult(0, "Health monitor systems report\n" + tree.hline + "".join(tree.rows) + tree.hline)
    found = incidents([g for g in state.gpus if not g.lost])
    tree = _Tree(28, 60)
    overall = max((i.health for i in found), default=0)
    tree.row(0, "Overall Health", _HEALTH[overall])
    if found:
        tree.row(0, "GPU")
    for gpu in sorted({i.gpu for i in found}):
        mine = [i for i in found if i.gpu == gpu]
        tree.row(1, str(gpu), _HEALTH[max(i.health for i in mine)])
        tree.row(2, "Errors")
        for system in dict.fromkeys(i.system for i in mine):
            of_system = [i for i in mine if i.system == system]
            tree.row(3, system, _HEALTH[max(i.health for i in of_system)])
            for piece in _wrap(", ".join(i.message for i in of_system)):
                tree.row(0, "", piece)
    text = tree.hline + "".join(tree.header("Health Monitor Report")) + "".join(tree.rows) + tree.hline
    return ToolResult(0, text)
