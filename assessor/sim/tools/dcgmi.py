"""Simulated ``dcgmi diag -r 1|2|3``, ``discovery -l``, ``group -l``, ``dmon``, ``stats``, ``-v``.

``dcgmi health`` is in :mod:`.dcgmi_health`.

The results come from the node state: a GPU with a pending or failed row remap, uncorrectable ECC
errors, a GPU that fell off the bus, NVLinks down, a degraded PCIe link, persistence off, a driver
mismatch or a fabric that never completed fails the test that would catch it; tests above the run
level are left out (the simulated node allows every test, so none is Skipped). The table is
DCGM 3.3's (``corpus/dcgmi_diag/01_...``): Metadata and Deployment under ``|-----`` rules, the
other sections under ``+-----`` rules, per-GPU results as ``Pass - GPUs: ...`` / ``Fail - GPU: N``
rows and messages wrapped at 45 characters. A node whose state names DCGM 4
(``perf.dcgm_version``) gets the 4.x layout: lower-case plugin names and ``GPUn: Pass`` rows.
Without a running ``nvidia-dcgm`` host engine the command fails like the real one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assessor.sim import gpu_memory
from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import Session, ToolResult

_NAME_W = 26  # "| " + name padded + "| "
_CELL_W = 45  # DCGM wraps result-cell text in pieces of this width
_RULE = "+" + "-" * 27 + "+" + "-" * 48 + "+\n"
_HEADER_RULE = "+" + "=" * 27 + "+" + "=" * 48 + "+\n"
# What dcgmi prints when nv-hostengine is not running (dcgmi prints its errors on stdout).
CONNECTION_ERROR = (
    "Error: unable to establish a connection to the specified host: localhost\n"
    "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"
)
# DCGM_ST_CONNECTION_NOT_VALID (-21) as the process exit status.
CONNECTION_EXIT = 235

_RUN_LEVELS = {"1": 1, "short": 1, "2": 2, "medium": 2, "3": 3, "long": 3}


@dataclass
class _Outcome:
    """One test's result: GPUs that failed (with messages), whether it ran at all."""

    ran: bool = True
    failed: dict[int, list[str]] = field(default_factory=dict)  # GPU index -> messages
    errors: list[str] = field(default_factory=list)  # node-level messages (Deployment tests)

    def fail(self, gpu: int, message: str) -> None:
        self.failed.setdefault(gpu, []).append(message)


# (category, DCGM 3.x name, DCGM 4.x name, lowest run level that runs it)
_TESTS: tuple[tuple[str, str, str, int], ...] = (
    ("Deployment", "Denylist", "software", 1),
    ("Deployment", "NVML Library", "software", 1),
    ("Deployment", "CUDA Main Library", "software", 1),
    ("Deployment", "Permissions and OS Blocks", "software", 1),
    ("Deployment", "Persistence Mode", "software", 1),
    ("Deployment", "Environment Variables", "software", 1),
    ("Deployment", "Page Retirement/Row Remap", "software", 1),
    ("Deployment", "Graphics Processes", "software", 1),
    ("Deployment", "Inforom", "software", 1),
    ("Integration", "PCIe", "pcie", 2),
    ("Hardware", "GPU Memory", "memory", 2),
    ("Hardware", "Diagnostic", "diagnostic", 3),
    ("Stress", "Targeted Stress", "targeted_stress", 3),
    ("Stress", "Targeted Power", "targeted_power", 3),
    ("Stress", "Memory Bandwidth", "memory_bandwidth", 3),
    ("Stress", "EUD Test", "eud", 3),
)
# The Extended Utility Diagnostics ship in a separate package (nvidia-diagnostic-NNN) that a node rarely has:
# DCGM 3.3 lists the test at level 3 as "Skip - All" (corpus dcgmi_diag/05).
_NOT_INSTALLED = {"EUD Test"}


def _outcomes(state: NodeState, gpus: list[GpuState], level: int) -> dict[str, _Outcome]:
    """Each test's outcome on this node (keyed by its DCGM 3.x name)."""
    out = {name: _Outcome(ran=lvl <= level and name not in _NOT_INSTALLED) for _, name, _, lvl in _TESTS}
    drv = state.driver
    if drv.version != drv.kernel_module_version:
        out["NVML Library"].errors.append(
            f"Error using NVML API nvmlInit: Driver/library version mismatch (library {drv.version}, "
            f"kernel module {drv.kernel_module_version}). Reboot or reload the nvidia kernel modules."
        )
    for g in gpus:
        if g.lost:
            out["NVML Library"].fail(
                g.index,
                f"GPU {g.index} is lost: it has fallen off the bus. Reboot the node; "
                "if it stays lost, reseat or RMA the GPU.",
            )
            continue
        if g.fabric_state not in (None, "Completed"):
            out["CUDA Main Library"].fail(
                g.index,
                f"GPU {g.index}: error using CUDA API cuInit: system not yet initialized (802): the "
                "NVSwitch fabric is not configured. Start nvidia-fabricmanager and rerun diagnostics.",
            )
        if not g.persistence_mode:
            # The real message, typo included.
            out["Persistence Mode"].fail(
                g.index,
                f"Persistence mode for GPU {g.index} is currently disabled. The DCGM diagnostic requires "
                'peristence mode to be enabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " '
                "as root.",
            )
        rows = g.remapped_rows
        if rows is not None and rows.failure:
            out["Page Retirement/Row Remap"].fail(
                g.index,
                f"GPU {g.index} had uncorrectable memory errors and row remapping failed. Run a field "
                "diagnostic on the GPU.",
            )
        elif rows is not None and rows.pending:
            out["Page Retirement/Row Remap"].fail(
                g.index,
                f"GPU {g.index} has uncorrectable memory errors and row remappings are pending. Drain the "
                "GPU and reset it or reboot the node.",
            )
        if g.ecc.volatile_uncorrected:
            out["GPU Memory"].fail(
                g.index,
                f"GPU {g.index} had {g.ecc.volatile_uncorrected} uncorrectable ECC errors (DBE) since the "
                "last reset. Drain the GPU and reset it or reboot the node.",
            )
        down = [str(link.link) for link in g.nvlinks if not link.active]
        if down:
            out["PCIe"].fail(
                g.index,
                f"GPU {g.index}'s NvLink link {', '.join(down)} is currently down Check DCGM and system logs "
                "for errors. Reset GPU. Restart DCGM. Rerun diagnostics.",
            )
        if g.pcie_width_current < g.pcie_width_max:
            out["PCIe"].fail(
                g.index,
                f"GPU {g.index} is running at PCI link width {g.pcie_width_current}X, which is below the "
                f"minimum allowed link width of {g.pcie_width_max}X.",
            )
        hot = [r for r in g.throttle_reasons if r in ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")]
        if hot:
            out["Targeted Power"].fail(
                g.index,
                f"GPU {g.index} Thermal violations totaling 12.1 seconds started at 3.2 seconds into the "
                f"test for GPU {g.index} Verify that the cooling on this machine is functional, including external, "
                "thermal material interface, fans, and any other components.",
            )
    return out


def _wrap(text: str) -> list[str]:
    """DCGM's wrapping: fixed-width pieces of the cell, cut mid-word."""
    return [text[i : i + _CELL_W] for i in range(0, len(text), _CELL_W)] or [""]


def _row(name: str, value: str) -> str:
    return f"| {name:<{_NAME_W}}| {value:<{_CELL_W}}  |\n"


def _message_rows(label: str, text: str) -> list[str]:
    pieces = _wrap(text)
    return [_row(label, pieces[0])] + [_row("", p) for p in pieces[1:]]


def _section(name: str, bar: str) -> str:
    head = f"{bar}-----  {name}  "
    left = head + "-" * (28 - len(head)) + "+"
    right = "-" * 48 + bar
    return left + right + "\n"


def _gpu_list(indices: list[int]) -> str:
    return ", ".join(str(i) for i in indices)


def _device_ids(gpus: list[GpuState], four: bool = False) -> str:
    """The ``GPU Device IDs Detected`` row: DCGM 3.x joins the ids with a bare comma
    (``2330,2330,...``, published 3.3 runs), 4.x with ``", "`` (dcgmi/Diag.cpp HelperDisplayVersionAndDevIds
    from 4.0.0 on). The value is one row: CommandOutputController cuts a longer one to the 46-character
    cell with ``...`` at its end."""
    ids = (", " if four else ",").join(f"{g.pci_device_id >> 16:04x}" for g in gpus)
    if len(ids) > _CELL_W + 1:
        ids = ids[: _CELL_W - 2] + "..."
    return f"| {'GPU Device IDs Detected':<{_NAME_W}}| {ids:<{_CELL_W + 1}} |\n"


def _render_3x(state: NodeState, gpus: list[GpuState], level: int, outcomes: dict[str, _Outcome]) -> str:
    lines = ["Successfully ran diagnostic for group.\n", _RULE, _row("Diagnostic", "Result"), _HEADER_RULE]
    lines.append(_section("Metadata", "|"))
    lines.append(_row("DCGM Version", state.perf.dcgm_version or "3.3.5"))
    lines.append(_row("Driver Version Detected", state.driver.version))
    lines.append(_device_ids(gpus))
    category = None
    indices = [g.index for g in gpus]
    for cat, name, _, lvl in _TESTS:
        if lvl > level:
            continue  # the simulated node allows every test: a run prints the tests of its level
        if cat != category:
            category = cat
            lines.append(_section(cat, "|" if cat in ("Metadata", "Deployment") else "+"))
        outcome = outcomes[name]
        if not outcome.ran:
            lines.append(_row(name, "Skip - All"))
            continue
        if cat == "Deployment":
            failed = bool(outcome.failed or outcome.errors)
            lines.append(_row(name, "Fail" if failed else "Pass"))
            for message in outcome.errors + [m for ms in outcome.failed.values() for m in ms]:
                lines.extend(_message_rows("Error", message))
            continue
        bad = sorted(outcome.failed)
        good = [i for i in indices if i not in outcome.failed]
        if not bad:
            lines.append(_row(name, "Pass - All"))
            continue
        if good:
            lines.append(_row(name, f"Pass - GPUs: {_gpu_list(good)}"))
            lines.append(_row("", f"Fail - GPU{'s' if len(bad) > 1 else ''}: {_gpu_list(bad)}"))
        else:
            lines.append(_row(name, "Fail - All"))
        for i in bad:
            for message in outcome.failed[i]:
                lines.extend(_message_rows("Warning", message))
    if level == 2:
        # DCGM 3.3 opens the Stress section at level 2 and closes the table right after (corpus dcgmi_diag/04).
        lines.append(_section("Stress", "+"))
    lines.append(_RULE)
    return "".join(lines)


def _render_4x(state: NodeState, gpus: list[GpuState], level: int, outcomes: dict[str, _Outcome]) -> str:
    lines = ["Successfully ran diagnostic for group.\n", _RULE, _row("Diagnostic", "Result"), _HEADER_RULE]
    lines.append(_section("Metadata", "|"))
    lines.append(_row("DCGM Version", state.perf.dcgm_version or "4.2.3"))
    lines.append(_row("Driver Version Detected", state.driver.version))
    lines.append(_device_ids(gpus, four=True))
    # DCGM 4 folds the software checks into one plugin.
    plugins: dict[str, tuple[str, int, list[str]]] = {}
    for cat, name, plugin, lvl in _TESTS:
        if name in _NOT_INSTALLED:
            continue
        entry = plugins.setdefault(plugin, (cat, lvl, []))
        entry[2].append(name)
    # 4.x prints the categories in a fixed order, Hardware before Integration (dcgmi/Diag.cpp, 4.0 on)
    order = ("Deployment", "Hardware", "Integration", "Stress")
    category = None
    for plugin, (cat, lvl, names) in sorted(plugins.items(), key=lambda item: order.index(item[1][0])):
        if lvl > level:
            continue
        if cat != category:
            category = cat
            lines.append(_section(cat, "|" if cat == "Deployment" else "+"))
        if lvl > level:
            lines.append(_row(plugin, "Skip"))
            continue
        failed: dict[int, list[str]] = {}
        errors: list[str] = []
        for name in names:
            for i, ms in outcomes[name].failed.items():
                failed.setdefault(i, []).extend(ms)
            errors.extend(outcomes[name].errors)
        lines.append(_row(plugin, "Fail" if failed or errors else "Pass"))
        for message in errors + [m for i in sorted(failed) for m in failed[i]]:
            lines.extend(_message_rows("Warning", message))
        for g in gpus:
            lines.append(_row("", f"GPU{g.index}: {'Fail' if g.index in failed else 'Pass'}"))
    lines.append(_RULE)
    return "".join(lines)


def _usage(message: str) -> ToolResult:
    return ToolResult(255, "", f"{message}\nUsage: dcgmi diag -r <1|2|3|short|medium|long> [-g groupId] [-i gpuList]\n")


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
    if args[0] != "diag":
        return _usage(f"ERROR: unknown subsystem '{args[0]}'")
    level: int | None = None
    chosen: list[int] | None = None
    it = iter(args[1:])
    for arg in it:
        if arg in ("-r", "--run"):
            level = _RUN_LEVELS.get(next(it, ""))
            if level is None:
                return _usage("ERROR: run level must be 1, 2, 3 (short, medium, long)")
        elif arg in ("-i", "--gpuList"):
            try:
                chosen = [int(x) for x in next(it, "").split(",") if x]
            except ValueError:
                return _usage("ERROR: -i takes a comma-separated list of GPU ids")
        elif arg in ("-g", "--group", "-p", "--parameters", "-c", "--configfile"):
            next(it, None)
    if level is None:
        return _usage("ERROR: dcgmi diag needs a run level (-r)")
    gpus = [g for g in state.gpus if chosen is None or g.index in chosen]
    if not gpus:
        return ToolResult(255, "Error: invalid GPU list: no such GPU.\n")
    outcomes = _outcomes(state, gpus, level)
    four = (state.perf.dcgm_version or "").startswith("4")
    text = (_render_4x if four else _render_3x)(state, gpus, level, outcomes)
    # The verdict is in the table: the diagnostic itself ran, so dcgmi reports success.
    return ToolResult(0, text)


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
