"""``nvidia-smi nvlink``: link status, error counters and their reset, from a node state.

Layouts from public captures (corpus ``nvidia_smi_nvlink/``): a ``GPU n: NAME (UUID: ...)`` line, then one
line per link indented with a tab and a space; ``-s`` prints the link speed in GB/s (``25 GB/s`` on A100,
``26.562 GB/s`` on H100) or ``<inactive>``; ``-e`` prints Replay, Recovery and CRC errors per link with a blank
line between links; ``-R`` names the remote end and its port (``Remote Device 00000000:07:00.0: Link 46``,
an HGX H100 in NVIDIA/nccl#1182). A board with NVLink and no link up (an H100 NVL or A30 without bridges)
prints NVML's ``NVML: Unable to retrieve NVLink information as all links are inActive`` under its GPU line
for ``-s``; a GPU without NVLink at all prints nothing (R580 and older) or ``Device does not have or support
Nvlink`` (R595). The options and their help are those of the R535+ ``nvidia-smi nvlink -h``.
"""

from __future__ import annotations

from dataclasses import dataclass

from assessor.sim.state import GpuState, NodeState, NvLinkState
from assessor.sim.tools import Session, ToolResult
from assessor.sim.tools.nvidia_smi_common import (
    EXIT_INVALID_ARGUMENT,
    EXIT_NO_PERMISSION,
    EXIT_NOT_FOUND,
    EXIT_OK,
    NO_DEVICES,
    NVML_NO_PERMISSION,
    NoSuchGpu,
    driver_failure,
    result,
    select_gpus,
    text,
    usage_error,
    visible,
)

HELP = """
    nvlink -- Display NvLink information.

    Usage: nvidia-smi nvlink [options]

    Options include:
    [-h | --help]: Display help information
    [-i | --id]: Enumeration index, PCI bus ID or UUID.
    [-l | --link]: Limit a command to a specific link.  Without this flag, all link information is displayed.
    [-s | --status]: Display link state (active/inactive).
    [-c | --capabilities]: Display link capabilities.
    [-p | --pcibusid]: Display remote node PCI bus ID for a link.
    [-R | --remotelinkinfo]: Display remote device PCI bus ID and NvLink ID for a link.
    [-sc | --setcontrol]: Setting counter control is deprecated!
    [-gc | --getcontrol]: Getting counter control is deprecated!
    [-g | --getcounters]: Getting counters using option -g is deprecated. Please use option -gt/--getthroughput instead.
    [-r | --resetcounters]: Resetting counters is deprecated!
    [-e | --errorcounters]: Display error counters for a link.
    [-ec | --crcerrorcounters]: Display per-lane CRC error counters for a link.
    [-re | --reseterrorcounters]: Reset all error counters to zero.
    [-gt | --getthroughput]: Display link throughput counters for specified counter type
       The arguments consist of character string representing the type of traffic counted:
          d: Display tx and rx data payload in KiB
          r: Display tx and rx data payload and protocol overhead in KiB if supported

"""

_ACTIONS = {
    "-s": "status",
    "--status": "status",
    "-e": "errors",
    "--errorcounters": "errors",
    "-re": "reset-errors",
    "--reseterrorcounters": "reset-errors",
    "-c": "capabilities",
    "--capabilities": "capabilities",
    "-p": "pcibusid",
    "--pcibusid": "pcibusid",
    "-R": "remote",
    "--remotelinkinfo": "remote",
    "-h": "help",
    "--help": "help",
}
# Deprecated options: the value they take and what nvidia-smi says instead of acting.
_DEPRECATED = {
    "-r": "Resetting counters is deprecated!",
    "--resetcounters": "Resetting counters is deprecated!",
    "-sc": "Setting counter control is deprecated!",
    "--setcontrol": "Setting counter control is deprecated!",
}
_CAPABILITIES = (
    "P2P is supported",
    "Access to system memory supported",
    "P2P atomics supported",
    "System memory atomics supported",
    "SLI is supported",
    "Link is supported",
)


@dataclass
class _Args:
    action: str = "status"
    ids: str | None = None
    link: int | None = None
    deprecated: str | None = None


def _parse(args: list[str]) -> _Args | None:
    parsed = _Args()
    actions: list[str] = []
    i = 0
    while i < len(args):
        name, eq, inline = args[i].partition("=")
        if name in ("-i", "--id", "-l", "--link"):
            if not eq and i + 1 >= len(args):
                return None
            value = inline if eq else args[i + 1]
            i += 1 if eq else 2
            if name in ("-i", "--id"):
                parsed.ids = value
            elif value.isdigit():
                parsed.link = int(value)
            else:
                return None
            continue
        if name in _DEPRECATED:
            parsed.deprecated = _DEPRECATED[name]
            # The counter set (0 or 1) the old option took.
            i += 2 if not eq and i + 1 < len(args) and args[i + 1] in ("0", "1") else 1
            actions.append("deprecated")
            continue
        if name in _ACTIONS and not eq:
            actions.append(_ACTIONS[name])
            i += 1
            continue
        return None
    if len(actions) > 1:
        return None
    if actions:
        parsed.action = actions[0]
    return parsed


def speed(link: NvLinkState) -> str:
    """A link's speed as ``-s`` prints it: ``25 GB/s``, ``26.562 GB/s``, or ``<inactive>``."""
    if not link.active or link.speed_gbps is None:
        return "<inactive>"
    return f"{link.speed_gbps:g} GB/s"


def nvlink(args: list[str], session: Session) -> ToolResult:
    """Run ``nvidia-smi nvlink ARGS``."""
    parsed = _parse(args)
    if parsed is None:
        return usage_error()
    if parsed.action == "help":
        return ToolResult(EXIT_OK, HELP)
    if parsed.action == "deprecated":
        assert parsed.deprecated is not None
        return result(EXIT_INVALID_ARGUMENT, [parsed.deprecated])
    if parsed.action == "reset-errors":
        if session.euid != 0:
            return result(EXIT_NO_PERMISSION, [f"Unable to reset NvLink error counters: {NVML_NO_PERMISSION}"])
        with session.update() as state:
            failure = driver_failure(state)
            if failure is not None:
                return failure
            try:
                chosen = select_gpus(state, parsed.ids)
            except NoSuchGpu:
                return result(EXIT_NOT_FOUND, [NO_DEVICES])
            for gpu in visible(chosen):
                for link in _links(gpu, parsed.link):
                    link.errors = dict.fromkeys(link.errors, 0)
        return ToolResult(EXIT_OK)
    state = session.read()
    failure = driver_failure(state)
    if failure is not None:
        return failure
    try:
        chosen = visible(select_gpus(state, parsed.ids))
    except NoSuchGpu:
        return result(EXIT_NOT_FOUND, [NO_DEVICES])
    lines: list[str] = []
    major = _driver_major(state)
    for gpu in chosen:
        header = f"GPU {gpu.index}: {gpu.name} (UUID: {gpu.uuid})"
        if not gpu.nvlinks and not has_nvlink_hardware(gpu):
            if major >= 595:  # R595 says so; older drivers print nothing for such a GPU
                lines += [header, "Device does not have or support Nvlink"]
            continue
        if not any(link.active for link in gpu.nvlinks):
            if parsed.action == "status":
                spelling = "Nvlink" if major >= 580 else "NVLink"  # 555: NVLink; 590 captures: Nvlink
                lines += [header, f"NVML: Unable to retrieve {spelling} information as all links are inActive"]
            elif gpu.nvlinks:
                lines.append(header)
            continue
        lines.append(header)
        lines += _gpu_lines(parsed.action, _links(gpu, parsed.link), state, gpu)
    return ToolResult(EXIT_OK, text(*lines) if lines else "")


# PCIe boards with NVLink bridge connectors: their links exist (and are down) when no bridge is fitted.
_BRIDGE_BOARDS = ("H100 NVL", "H100 PCIe", "A100-PCIE", "A100 80GB PCIe", "A30", "A800 PCIe", "H800 PCIe")


def has_nvlink_hardware(gpu: GpuState) -> bool:
    return bool(gpu.nvlinks) or any(board in gpu.name for board in _BRIDGE_BOARDS)


def _driver_major(state: NodeState) -> int:
    head = state.driver.version.split(".")[0]
    return int(head) if head.isdigit() else 0


def remote_end(state: NodeState, gpu: GpuState, link: NvLinkState) -> tuple[str, int]:
    """(PCI bus id, link number) at the far end of ``link``: a peer GPU's link or an NVSwitch port.

    Links spread over the baseboard's NVSwitches in turn (link ``n`` to switch ``n mod switches``); a GPU's
    ports on a switch are numbered by its slot, so no two GPUs share a port. Real port numbers depend on the
    board's wiring (``Link 0: Remote Device 00000000:07:00.0: Link 46`` on an HGX H100).
    """
    if link.remote.startswith("GPU") and link.remote[3:].isdigit():
        peer = state.gpu(int(link.remote[3:]))
        mine = [n.link for n in gpu.nvlinks if n.remote == link.remote]
        theirs = [n.link for n in peer.nvlinks if n.remote == f"GPU{gpu.index}"]
        k = mine.index(link.link)
        return _long_bus_id(peer.bus_id), theirs[k] if k < len(theirs) else link.link
    if not state.nvswitches:
        return "00000000:00:00.0", link.link
    count = len(state.nvswitches)
    switch = state.nvswitches[link.link % count]
    per_switch = -(-max(len(gpu.nvlinks), 1) // count)
    return _long_bus_id(switch.bus_id), gpu.index * per_switch + link.link // count


def _long_bus_id(bus_id: str) -> str:
    """NVML's form: an 8-digit domain, upper-case hex."""
    return ("0000" + bus_id if len(bus_id.split(":")[0]) == 4 else bus_id).upper()


def _links(gpu: GpuState, only: int | None) -> list[NvLinkState]:
    return [link for link in gpu.nvlinks if only is None or link.link == only]


def _gpu_lines(action: str, links: list[NvLinkState], state: NodeState, gpu: GpuState) -> list[str]:
    lines: list[str] = []
    for n, link in enumerate(links):
        tag = f"\t Link {link.link}:"
        if action == "status":
            lines.append(f"{tag} {speed(link)}")
        elif action == "errors":
            if n:
                lines.append("")
            errors = link.errors
            lines.append(f"{tag} Replay Errors: {errors.get('replay', 0)}")
            lines.append(f"{tag} Recovery Errors: {errors.get('recovery', 0)}")
            lines.append(f"{tag} CRC Errors: {errors.get('crc_flit', 0) + errors.get('crc_data', 0)}")
        elif action == "capabilities":
            lines += [f"{tag} {cap}: {'true' if link.active else 'false'}" for cap in _CAPABILITIES]
        elif link.active:  # -p / -R: the remote end (and its port, for -R)
            bus_id, remote_link = remote_end(state, gpu, link)
            port = f": Link {remote_link}" if action == "remote" else ""
            lines.append(f"{tag} Remote Device {bus_id}{port}")
    return lines
