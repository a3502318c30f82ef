"""Simulated ``dcgmi``: ``discovery -l``, ``group -l``, ``dmon``, ``stats``, ``-v``, and the dispatch to ``diag``
(:mod:`.dcgmi_diag`), ``health`` (:mod:`.dcgmi_health`), ``nvlink`` and ``topo`` (:mod:`.dcgmi_links`).

Without a running ``nvidia-dcgm`` host engine every subsystem but ``-v`` fails like the real one.
"""

from __future__ import annotations

from assessor.sim import gpu_memory
from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import Session, ToolResult

# What dcgmi prints when nv-hostengine is not running (dcgmi prints its errors on stdout).
CONNECTION_ERROR = (
    "Error: unable to establish a connection to the specified host: localhost\n"
    "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"
)
# DCGM_ST_CONNECTION_NOT_VALID (-21) as the process exit status.
CONNECTION_EXIT = 235


def _usage(message: str) -> ToolResult:
    return ToolResult(255, "", f"{message}\nUsage: dcgmi <diag|discovery|group|dmon|stats|health|nvlink|topo> ...\n")


def main(args: list[str], session: Session) -> ToolResult:
    """``dcgmi diag -r N [-i GPUS]``, ``discovery -l``, ``group -l``, ``dmon``, ``stats``, ``health``, ``nvlink``,
    ``topo``, ``-v``."""
    state = session.read()
    if not args:
        return _usage("ERROR: a subsystem is required (diag, discovery, ...)")
    service = state.services.get("nvidia-dcgm.service")
    running = service is not None and service.active_state == "active"
    if args[0] in ("-v", "--version"):
        return _version(state, args[0], running=running)
    if args[0] == "diag":
        from assessor.sim.tools.dcgmi_diag import diag

        return diag(args[1:], session, unreachable=None if running else ToolResult(CONNECTION_EXIT, CONNECTION_ERROR))
    if not running:
        return ToolResult(CONNECTION_EXIT, CONNECTION_ERROR)
    if args[0] == "discovery":
        return _discovery(state)
    if args[0] == "health":
        from assessor.sim.tools.dcgmi_health import health

        return health(args[1:], state)
    if args[0] == "group":
        return _group(args[1:], state)
    if args[0] == "dmon":
        return _dmon(args[1:], state)
    if args[0] == "stats":
        return _stats(args[1:])
    if args[0] in ("nvlink", "topo"):
        from assessor.sim.tools import dcgmi_links

        return (dcgmi_links.nvlink if args[0] == "nvlink" else dcgmi_links.topo)(args[1:], state)
    return _usage(f"ERROR: unknown subsystem '{args[0]}'")


_GPU_RULE = "+--------+----------------------------------------------------------------------+\n"


def _discovery(state: NodeState) -> ToolResult:
    """``dcgmi discovery -l``: GPUs, NvSwitches, ConnectX (4.2+), then CPUs (corpus dcgmi_discovery/01, 02)."""
    gpus = [g for g in state.gpus if not g.lost]
    lines = [
        f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''} found.\n",
        _GPU_RULE,
        "| GPU ID | Device Information                                                   |\n",
        _GPU_RULE,
    ]
    for g in gpus:
        lines.append(f"| {g.index:<7}| Name: {g.name:<63}|\n")
        lines.append(f"|        | PCI Bus ID: {g.bus_id:<57}|\n")
        lines.append(f"|        | Device UUID: {g.uuid:<56}|\n")
        lines.append(_GPU_RULE)
    switches = state.nvswitches
    lines.append(f"{len(switches)} NvSwitch{'' if len(switches) == 1 else 'es'} found.\n")
    lines += ["+-----------+\n", "| Switch ID |\n", "+-----------+\n"]
    for switch in switches:
        lines.append(f"| {switch.index:<10}|\n")
    lines.append("+-----------+\n")
    if _version_at_least(state.perf.dcgm_version or "", (4, 2)):
        # DCGM 4.2 added ConnectX entities (dcgmi/Query.cpp): NVSDM enumerates them on Blackwell NVLink 5
        # systems; the NSCQ module of Ampere/Hopper boards has none, so the box is empty there.
        blackwell = any(g.architecture == "Blackwell" for g in state.gpus)
        cards = [h for h in state.ib_hcas if h.ca_type.startswith("MT")] if blackwell else []
        lines.append(f"{len(cards)} ConnectX found.\n")
        lines += ["+----------+\n", "| ConnectX |\n", "+----------+\n"]
        lines += [f"| {i:<9}|\n" for i in range(len(cards))]
        lines.append("+----------+\n")
    # x86 hosts have no CPU entities in DCGM (only Grace does): an empty CPU box.
    lines += ["0 CPUs found.\n", _GPU_RULE.replace("GPU", "CPU"), "| CPU ID | Device Information"]
    lines[-1] += " " * 51 + "|\n"
    lines += [_GPU_RULE, _GPU_RULE]
    return ToolResult(0, "".join(lines))


def _version_at_least(version: str, wanted: tuple[int, int]) -> bool:
    parts = [int(p) for p in version.split(".")[:2] if p.isdigit()]
    return len(parts) == 2 and (parts[0], parts[1]) >= wanted


def _build_info(version: str) -> str:
    """DcgmBuildInfo's lines (DCGM dcgmi/Version.cpp), for a release build of ``version``."""
    major_minor = "_".join(version.split(".")[:2])
    return (
        f"Version : {version}\n"
        "Build ID : 1\n"
        "Build Date : 2024-08-22\n"
        "Build Type : Release\n"
        "Commit ID : v" + version + "\n"
        f"Branch Name : rel_dcgm_{major_minor}\n"
        "CPU Arch : x86_64\n"
        "Build Platform : Linux 4.15.0-180-generic #189-Ubuntu SMP Wed May 18 14:13:57 UTC 2022 x86_64\n"
    )


def _version(state: NodeState, flag: str, *, running: bool) -> ToolResult:
    """``dcgmi -v``: dcgmi's own build, then the host engine's when one answers (else nothing more).

    ``dcgmi --version`` prints only ``dcgmi  version: X``. Sites wait for DCGM to stop by looping until
    ``Hostengine build info:`` is gone from ``dcgmi -v``.
    """
    version = state.perf.dcgm_version or "3.3.8"
    if flag == "--version":
        return ToolResult(0, f"dcgmi  version: {version}\n")
    text = _build_info(version)
    if running:
        text += "\nHostengine build info:\n" + _build_info(version)
    return ToolResult(0, text)


# ---- group -l, dmon, stats: the subsystems a candidate types next to diag (DCGM dcgmi/Group.cpp,
# DeviceMonitor.cpp, ProcessStats.cpp) ----------------------------------------------------------------------

_GROUP_RULE = "+" + "-" * 19 + "+" + "-" * 58 + "+\n"


def _group_row(name: str, value: str) -> str:
    return f"| {name:<17} | {value:<56} |\n"


def _groups(state: NodeState) -> ToolResult:
    """``dcgmi group -l``: the host engine's two default groups (captures of DCGM 3.x and 4.x agree)."""
    gpus = ", ".join(f"GPU {g.index}" for g in state.gpus if not g.lost) or "None"
    if len(gpus) > 56:
        gpus = gpus[:53] + "..."
    lines = [_GROUP_RULE, f"| {'GROUPS':<77}|\n", f"| {'2 groups found.':<77}|\n"]
    lines.append(_GROUP_RULE.replace("-", "="))
    lines.append(_group_row("Groups", ""))
    for gid, name, entities in ((0, "DCGM_ALL_SUPPORTED_GPUS", gpus), (1, "DCGM_ALL_SUPPORTED_NVSWITCHES", "None")):
        lines.append(_group_row(f"-> {gid}", ""))
        lines.append(_group_row("   -> Group ID", str(gid)))
        lines.append(_group_row("   -> Group Name", name))
        lines.append(_group_row("   -> Entities", entities))
    lines.append(_GROUP_RULE)
    return ToolResult(0, "".join(lines))


def _group(args: list[str], state: NodeState) -> ToolResult:
    if args[:1] in (["-l"], ["--list"]):
        return _groups(state)
    return ToolResult(255, "", "Usage: dcgmi group -l | -c <groupName> | -d <groupId> | -g <groupId> -i\n")


# field id -> (short name, unit, width) as dcgm_fields.cpp formats them for dmon
_DMON_FIELDS: dict[int, tuple[str, str, int]] = {
    100: ("SMCLK", "", 5),
    101: ("MMCLK", "", 5),
    140: ("MMTMP", "C", 10),
    150: ("TMPTR", " C", 5),
    155: ("POWER", " W", 10),
    203: ("GPUTL", "", 10),
    204: ("MCUTL", "", 10),
    230: ("XIDER", "", 5),
    250: ("FBTTL", "", 10),
    251: ("FBFRE", "", 10),
    252: ("FBUSD", "", 10),
    311: ("EDVTL", "", 5),
    1001: ("GRACT", "", 5),
    1002: ("SMACT", "", 5),
    1003: ("SMOCC", "", 5),
    1004: ("TENSO", "", 5),
    1005: ("DRAMA", "", 5),
}


def _dmon_value(gpu: GpuState, field_id: int) -> str:
    from assessor.sim.state import gpu_utilization

    util, mem_util = gpu_utilization(gpu)
    values: dict[int, str] = {
        100: str(gpu.clocks_mhz.get("sm", 0)),
        101: str(gpu.clocks_mhz.get("memory", 0)),
        140: "N/A" if gpu.temperature_memory_c is None else str(gpu.temperature_memory_c),
        150: str(gpu.temperature_c),
        155: f"{gpu.power_draw_w:.3f}",
        203: str(util),
        204: str(mem_util),
        230: "0",
        250: str(gpu.memory_total_mib),
        251: str(gpu.memory_total_mib - gpu_memory.used_mib(gpu) - gpu.memory_reserved_mib),
        252: str(gpu_memory.used_mib(gpu)),
        311: str(gpu.ecc.volatile_uncorrected) if gpu.ecc_mode_current else "N/A",
    }
    # profiling metrics: the fraction of the sampling interval the engine was busy
    for field_id_prof, share in ((1001, util), (1002, util * 0.9), (1003, util * 0.4), (1004, util * 0.3)):
        values[field_id_prof] = f"{share / 100:.3f}"
    values[1005] = f"{mem_util / 100:.3f}"
    return values[field_id]


def _dmon(args: list[str], state: NodeState) -> ToolResult:
    """``dcgmi dmon -e F1,F2 [-i GPUS] [-c N]``: the two header lines, then one row per GPU per sample."""
    fields: list[int] | None = None
    chosen: list[int] | None = None
    count = 1
    it = iter(args)
    for arg in it:
        value = (
            next(it, "")
            if arg
            in (
                "-e",
                "--field-id",
                "-i",
                "--gpu-id",
                "-c",
                "--count",
                "-d",
                "--delay",
                "-g",
                "--group-id",
                "-f",
                "--field-group-id",
            )
            else None
        )
        try:
            if arg in ("-e", "--field-id"):
                fields = [int(x) for x in (value or "").split(",") if x]
            elif arg in ("-i", "--gpu-id"):
                chosen = [int(x) for x in (value or "").split(",") if x]
            elif arg in ("-c", "--count"):
                count = max(int(value or "0"), 1)
        except ValueError:
            return ToolResult(255, f"Error: invalid value '{value}' for {arg}.\n")
    if not fields:
        return ToolResult(
            255, "Either field group ID or a list of field IDs must be provided. See dcgmi dmon --help for usage.\n"
        )
    unknown = [f for f in fields if f not in _DMON_FIELDS]
    if unknown:
        return ToolResult(255, f"Unknown Field ID: {unknown[0]}\n")
    four = (state.perf.dcgm_version or "").startswith("4")
    first = 11 if four else 10  # DeviceMonitor's entity column: 10 in 3.x, 11 in 4.x
    head, unit = f"{'#Entity':<{first}}", f"{'ID':<{first}}"
    for f in fields:
        short, unit_text, width = _DMON_FIELDS[f]
        head += f"{short:<{width + 6 + 2}}"
        unit += f"{unit_text:<{width + 6 + 2}}"
    gpus = [g for g in state.gpus if not g.lost and (chosen is None or g.index in chosen)]
    lines = [head + "\n", unit + "\n"]
    for sample in range(count):
        if sample and sample % 14 == 0:
            lines += [head + "\n", unit + "\n"]  # the header comes back every 14 samples
        for g in gpus:
            row = f"{'GPU ' + str(g.index):<{first}}"
            for f in fields:
                row += f"{_dmon_value(g, f):<{_DMON_FIELDS[f][2] + 6 + 2}}"
            lines.append(row + "\n")
    return ToolResult(0, "".join(lines))


def _stats(args: list[str]) -> ToolResult:
    """``dcgmi stats``: process watches and jobs, with ProcessStats.cpp's messages."""
    flag, value = [*args, "", ""][:2]
    if flag in ("-e", "--enable"):
        return ToolResult(0, "Successfully started process watches.\n")
    if flag in ("-d", "--disable"):
        return ToolResult(0, "Process stats watches cannot be disabled at this time.\n")
    if flag in ("-s", "--jstart") and value:
        return ToolResult(0, f"Successfully started recording stats for {value}.\n")
    if flag in ("-x", "--jstop", "-r", "--jremove") and value:
        return ToolResult(255, f"Error: Job {value} was not found.\n")
    if flag in ("-j", "--jobid") and value:
        return ToolResult(255, "Error: Unable to retrieve job statistics. Return: No data is available.\n")
    if flag in ("-p", "--pid") and value:
        return ToolResult(
            255, f"Error: Unable to get information for process with PID {value}. Return: No data is available.\n"
        )
    return ToolResult(255, "", "Usage: dcgmi stats -e | -d | -s <jobId> | -x <jobId> | -j <jobId> | -p <pid>\n")
