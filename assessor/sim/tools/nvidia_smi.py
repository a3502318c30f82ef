"""The simulated ``nvidia-smi``: what the real one prints and refuses, read from and written to a node state.

Covered: the default table in the layout of the driver branch (:mod:`.nvidia_smi_layout`), ``-L``, ``-q``
(and ``-d SECTION,...``), ``-q -x``, ``--query-gpu=``/``--query-remapped-rows=``/``--query-compute-apps=`` with
``--format=csv[,noheader][,nounits]``, ``-i`` (index, bus id or UUID, comma lists), ``-pm``, ``-r``/``--gpu-reset``,
``-mig``, ``topo -m``, ``nvlink`` (:mod:`.nvidia_smi_nvlink_cmd`) and the ``mig`` sub-commands
(:mod:`.nvidia_smi_mig_cmd`). A broken driver answers every command with the real
message (:func:`.nvidia_smi_common.driver_failure`).

State changes go through :meth:`Session.update`, so two shims run at once never lose one another's change.
Messages are the real ones, from the corpus (``nvml/mig_enable_messages.txt``), NVIDIA's MIG User Guide and
public captures; where no capture was found the wording follows nvidia-smi's usual pattern and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from assessor.sim import clock, gpu_memory
from assessor.sim.gpu_clients import NO_RESET_FOR_MIG, gpu_holders, mig_change_blockers
from assessor.sim.state import ComputeInstanceState, GpuInstanceState, GpuState, NodeState, gpu_utilization
from assessor.sim.tools import Session, ToolResult
from assessor.sim.tools.nvidia_smi_apps import (
    applications_clocks_set,
    dmon_header,
    dmon_rows,
    help_query_gpu,
    monitor_options,
    pmon_header,
    pmon_rows,
    stream,
    version_text,
)
from assessor.sim.tools.nvidia_smi_common import (
    ALL_DONE,
    EXIT_GPU_LOST,
    EXIT_INVALID_ARGUMENT,
    EXIT_NO_PERMISSION,
    EXIT_NOT_FOUND,
    EXIT_NOT_SUPPORTED,
    EXIT_OK,
    EXIT_OTHER,
    NO_DEVICES,
    NVML_IN_USE,
    NVML_NO_PERMISSION,
    NVML_NOT_SUPPORTED,
    TERMINATING,
    NoSuchGpu,
    driver_failure,
    lost_lines,
    result,
    select_gpus,
    text,
    usage_error,
    visible,
)
from assessor.sim.tools.nvidia_smi_query import (
    REMAPPED_ROW_FIELDS,
    default_app_clocks,
    display_sections,
    field_of,
    memory_free_mib,
    mig_uuid,
    render_csv,
    render_remapped_rows_csv,
    render_text,
    render_xml,
    supported_graphics_clocks,
    timestamp,
)

_HELP = """NVIDIA System Management Interface -- v{version}

NVSMI provides monitoring information for Tesla and select Quadro devices.
The data is presented in either a plain text or an XML format, via stdout or a file.
NVSMI also provides several management operations for changing the device state.

nvidia-smi [OPTION1 [ARG1]] [OPTION2 [ARG2]] ...

    -h,   --help                Print usage information and exit.

  LIST OPTIONS:

    -L,   --list-gpus           Display a list of GPUs connected to the system.

  SUMMARY OPTIONS:

    <no arguments>              Show a summary of GPUs connected to the system.

  QUERY OPTIONS:

    -q,   --query               Display GPU or Unit info.
    -i,   --id=                 Target a specific GPU.
    -x,   --xml-format          Produce XML output.
    -d,   --display=            Display only selected information: MEMORY,
                                    UTILIZATION, ECC, TEMPERATURE, POWER, CLOCK,
                                    COMPUTE, PIDS, PERFORMANCE, SUPPORTED_CLOCKS,
                                    PAGE_RETIREMENT, ACCOUNTING, ENCODER_STATS,
                                    SUPPORTED_GPU_TARGET_TEMP, VOLTAGE, FBC_STATS
                                    ROW_REMAPPER, RESET_STATUS, GSP_FIRMWARE_VERSION
                                Flags can be combined with comma e.g. ECC,POWER.
                                Sampling data with max/min/avg is also returned
                                for POWER, UTILIZATION and CLOCK display types.
                                Doesn't work with -u or -x flags.
          --query-gpu=          Information about GPU.
          --query-compute-apps= List of currently active compute processes.
          --format=             Comma separated list of format options: csv, noheader, nounits.

  DEVICE MODIFICATION OPTIONS:

    -pm,  --persistence-mode=   Set persistence mode: 0/DISABLED, 1/ENABLED
    -e,   --ecc-config=         Toggle ECC support: 0/DISABLED, 1/ENABLED
    -r    --gpu-reset           Trigger reset of the GPU.
    -mig  --multi-instance-gpu= Enable or disable Multi Instance GPU: 0/DISABLED, 1/ENABLED

  TOPOLOGY AND MIG:

    topo -m                     Display the GPUDirect communication matrix for the system.
    topo -mp                    Display the GPUDirect communication matrix (PCI paths only).
    topo -p2p <r|w|n|a|p>       Display the P2P status between GPUs: read, write, NVLink, atomics, PCIe.
    nvlink                      Display NvLink information (nvidia-smi nvlink -h).
    mig                         Multi Instance GPU management (nvidia-smi mig -h).
"""


@dataclass
class _Args:
    """The top-level options nvidia-smi was given."""

    ids: str | None = None
    actions: list[str] = field(default_factory=list)  # list, query, query-gpu, pm, reset, mig, help
    xml: bool = False
    query_gpu: str | None = None
    query_apps: str | None = None
    fmt: str | None = None
    value: str | None = None  # the argument of -pm / -mig
    display: str | None = None  # -d: the -q sections to print
    loop_s: float | None = None  # -l SEC / -lms MS: repeat until interrupted


_VALUE_OPTIONS = {
    "-i": "ids",
    "--id": "ids",
    "-pm": "pm",
    "--persistence-mode": "pm",
    "-mig": "mig",
    "--multi-instance-gpu": "mig",
    "--query-gpu": "query-gpu",
    "--query-remapped-rows": "query-remapped-rows",
    "--query-compute-apps": "query-apps",
    "-e": "ecc",
    "--ecc-config": "ecc",
    "--format": "format",
    "-d": "display",
    "--display": "display",
    "-l": "loop",
    "--loop": "loop",
    "-lms": "loop-ms",
    "--loop-ms": "loop-ms",
    "-pl": "pl",
    "--power-limit": "pl",
    "-c": "compute-mode",
    "--compute-mode": "compute-mode",
    "-lgc": "lgc",
    "--lock-gpu-clocks": "lgc",
    "-ac": "ac",
    "--applications-clocks": "ac",
    "-am": "am",
    "--accounting-mode": "am",
    "--query-supported-clocks": "query-supported-clocks",
    "--query-retired-pages": "query-retired-pages",
    "--query-accounted-apps": "query-accounted-apps",
}
_FLAG_OPTIONS = {
    "-L": "list",
    "--list-gpus": "list",
    "-q": "query",
    "--query": "query",
    "-x": "xml",
    "--xml-format": "xml",
    "-r": "reset",
    "--gpu-reset": "reset",
    "-h": "help",
    "--help": "help",
    "-rgc": "rgc",
    "--reset-gpu-clocks": "rgc",
    "-rac": "rac",
    "--reset-applications-clocks": "rac",
    "-B": "list-excluded",
    "--list-excluded-gpus": "list-excluded",
    "--version": "version",
    "--help-query-gpu": "help-query-gpu",
}


def _parse(args: list[str]) -> _Args | None:
    """The options of a top-level nvidia-smi command line; None when nvidia-smi would refuse them."""
    parsed = _Args()
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if name in _VALUE_OPTIONS and (eq or i + 1 < len(args)):
            value = inline if eq else args[i + 1]
            i += 1 if eq else 2
            kind = _VALUE_OPTIONS[name]
            if kind == "ids":
                parsed.ids = value
            elif kind in ("pm", "mig", "ecc"):
                parsed.actions.append(kind)
                parsed.value = value
            elif kind in ("query-gpu", "query-remapped-rows"):
                parsed.actions.append(kind)
                parsed.query_gpu = value
            elif kind == "query-apps":
                parsed.actions.append("query-apps")
                parsed.query_apps = value
            elif kind == "format":
                parsed.fmt = value
            elif kind == "display":
                parsed.display = value
            elif kind in ("loop", "loop-ms"):
                if not value.isdigit() or int(value) == 0:
                    return None
                parsed.loop_s = int(value) / (1000 if kind == "loop-ms" else 1)
            elif kind in ("pl", "compute-mode", "lgc", "ac", "am"):
                parsed.actions.append(kind)
                parsed.value = value
            elif kind in ("query-supported-clocks", "query-retired-pages", "query-accounted-apps"):
                parsed.actions.append(kind)
                parsed.query_gpu = value
            continue
        if name in ("-l", "--loop") and not eq and i + 1 == len(args):
            parsed.loop_s = 5.0  # -l without an interval: every 5 seconds (nvidia-smi -h)
            i += 1
            continue
        if arg in _FLAG_OPTIONS and not eq:
            kind = _FLAG_OPTIONS[arg]
            if kind == "xml":
                parsed.xml = True
            else:
                parsed.actions.append(kind)
            i += 1
            continue
        return None
    if len(parsed.actions) > 1 or (parsed.xml and parsed.actions != ["query"]):
        return None
    csv_actions = ("query-gpu", "query-remapped-rows", "query-apps", *_CSV_QUERIES)
    if parsed.fmt is not None and (len(parsed.actions) != 1 or parsed.actions[0] not in csv_actions):
        return None
    if parsed.loop_s is not None and parsed.actions[:1] not in ([], ["query"], ["query-gpu"]):
        return None
    if parsed.display is not None and (parsed.actions != ["query"] or display_sections(parsed.display) is None):
        return None  # -d selects sections of -q, by the names nvidia-smi -h lists
    return parsed


_CSV_QUERIES = ("query-supported-clocks", "query-retired-pages", "query-accounted-apps")
_SETTINGS = ("pm", "reset", "mig", "ecc", "pl", "compute-mode", "lgc", "rgc", "ac", "rac", "am")


def main(args: list[str], session: Session) -> ToolResult:
    """Run ``nvidia-smi ARGS`` against the session's node."""
    if args and args[0] in ("topo", "mig", "nvlink"):
        return _subcommand(args[0], args[1:], session)
    if args and args[0] in ("dmon", "pmon", "drain", "conf-compute"):
        return _monitor_or_admin(args[0], args[1:], session)
    if "-h" in args or "--help" in args:
        # nvidia-smi prints its help for -h whatever else is on the line ("nvidia-smi -r -h").
        return ToolResult(EXIT_OK, _HELP.format(version=session.read().driver.version))
    parsed = _parse(args)
    if parsed is None:
        return usage_error()
    action = parsed.actions[0] if parsed.actions else "summary"
    if action == "help":
        return ToolResult(EXIT_OK, _HELP.format(version=session.read().driver.version))
    if action == "version":
        state = session.read()
        return driver_failure(state) or ToolResult(
            EXIT_OK, version_text(state.driver.version, state.driver.cuda_version)
        )
    if action == "help-query-gpu":
        from assessor.sim.tools.nvidia_smi_query import FIELDS

        return ToolResult(EXIT_OK, help_query_gpu(list(FIELDS)))
    if action == "list-excluded":
        # No GPU is excluded on a simulated node (NVreg_ExcludedGpus unset): nvidia-smi prints nothing.
        state = session.read()
        return driver_failure(state) or ToolResult(EXIT_OK, "")
    if action in _SETTINGS:
        with session.update() as state:
            return _modify(action, parsed, state, session.euid)
    state = session.read()
    if parsed.loop_s is not None:
        return _loop(parsed, action, session)
    chosen, refusal = _chosen(state, parsed.ids)
    if refusal is not None:
        return refusal
    lost = lost_lines(chosen)
    gpus = visible(chosen)
    now = clock.now(state)  # the node's clock, the one dmesg -T and systemctl read too
    if action in ("query-gpu", "query-remapped-rows"):
        out = _query_gpu(state, gpus, parsed, action)
    elif action in _CSV_QUERIES:
        out = _other_csv(gpus, parsed, action)
    elif action == "query-apps":
        from assessor.sim.tools.nvidia_smi_apps import query_compute_apps

        out = query_compute_apps(gpus, parsed.query_apps or "", parsed.fmt)
    elif action == "list":
        out = ToolResult(EXIT_OK, list_gpus(gpus))
    elif action == "query" and parsed.xml:
        out = ToolResult(EXIT_OK, render_xml(state, gpus, now))
    elif action == "query":
        only = display_sections(parsed.display) if parsed.display is not None else None
        out = ToolResult(EXIT_OK, render_text(state, gpus, now, only=only))
    else:
        out = ToolResult(EXIT_OK, summary(state, gpus, now))
    if lost:
        # The lost GPU's line goes to stderr; the others are still listed (exit: the GPU is lost).
        code = EXIT_GPU_LOST if out.exit_code == EXIT_OK else out.exit_code
        stdout = out.stdout if gpus else ""
        return ToolResult(code, stdout, text(*lost) + out.stderr)
    return out


def _subcommand(name: str, args: list[str], session: Session) -> ToolResult:
    if name == "topo":
        from assessor.sim.tools.nvidia_smi_topo_cmd import topo

        state = session.read()
        return driver_failure(state) or topo(args, state)
    if name == "nvlink":
        from assessor.sim.tools.nvidia_smi_nvlink_cmd import nvlink

        return nvlink(args, session)
    from assessor.sim.tools.nvidia_smi_mig_cmd import mig

    return mig(args, session)


def _query_gpu(state: NodeState, gpus: list[GpuState], parsed: _Args, action: str = "query-gpu") -> ToolResult:
    """``--query-gpu``, ``--query-remapped-rows`` or ``--query-compute-apps`` with ``--format=csv[,...]``."""
    assert parsed.query_gpu is not None
    if parsed.fmt is None:
        return usage_error()
    options = [o.strip() for o in parsed.fmt.split(",") if o.strip()]
    if "csv" not in options or any(o not in ("csv", "noheader", "nounits") for o in options):
        return usage_error()
    names = [n for n in parsed.query_gpu.split(",") if n.strip()]
    known = {
        "query-gpu": lambda n: field_of(n) is not None,
        "query-remapped-rows": lambda n: n.strip() in REMAPPED_ROW_FIELDS,
    }[action]
    for name in names:
        if not known(name):
            return result(2, [f'Field "{name.strip()}" is not a valid field to query.', ""])
    render = {
        "query-gpu": render_csv,
        "query-remapped-rows": render_remapped_rows_csv,
    }[action]
    csv = render(state, gpus, names, header="noheader" not in options, units="nounits" not in options)
    return ToolResult(EXIT_OK, csv)


# ---------------------------------------------------------------- -L


def list_gpus(gpus: list[GpuState]) -> str:
    """``nvidia-smi -L``: one line per GPU, its MIG devices indented below it."""
    lines = []
    for gpu in gpus:
        lines.append(f"GPU {gpu.index}: {gpu.name} (UUID: {gpu.uuid})")
        if gpu.mig_mode_current:
            for n, (gi, ci) in enumerate(_mig_devices(gpu)):
                lines.append(f"  MIG {ci.name:<11} Device {n:>2}: (UUID: {mig_uuid(gpu, gi.gi_id, ci.ci_id)})")
    return text(*lines)


def _mig_devices(gpu: GpuState) -> list[tuple[GpuInstanceState, ComputeInstanceState]]:
    return [
        (gi, ci)
        for gi in sorted(gpu.mig_instances, key=lambda g: g.gi_id)
        for ci in sorted(gi.compute_instances, key=lambda c: c.ci_id)
    ]


# ---------------------------------------------------------------- the default table


def summary(state: NodeState, gpus: list[GpuState], now: datetime | None = None) -> str:
    """The table nvidia-smi prints without arguments, in the layout of the node's driver branch."""
    from assessor.sim.tools.nvidia_smi_layout import layout_for

    drv = state.driver
    lay = layout_for(drv.version)
    if lay.middle == 22:
        version = f"| NVIDIA-SMI {drv.version:<23}Driver Version: {drv.version:<13}CUDA Version: {drv.cuda_version:<9}|"
        bus, memory = "| Bus-Id        Disp.A |", "|         Memory-Usage |"
    else:
        version = f"| NVIDIA-SMI {drv.version:<23}Driver Version: {drv.version:<15}CUDA Version: {drv.cuda_version:<9}|"
        bus, memory = "| Bus-Id          Disp.A |", "|           Memory-Usage |"
    blank_mid = "|" + " " * lay.middle + "|"
    lines = [
        timestamp(now).ljust(31),
        lay.rule,
        version,
        lay.header_rule,
        f"| GPU  Name                 Persistence-M {bus} Volatile Uncorr. ECC |",
        f"| Fan  Temp   Perf          Pwr:Usage/Cap {memory} GPU-Util  Compute M. |",
        f"|{'':41}{blank_mid}               MIG M. |",
        "|" + "=" * 41 + "+" + "=" * lay.middle + "+" + "=" * 22 + "|",
    ]
    for gpu in gpus:
        lines += _gpu_rows(gpu, lay.middle, lay.limit_digits)
        lines.append(lay.cells)
    # The blank line after a box is 89 spaces in every capture, whatever the table's width.
    lines.append(" " * 89)
    if any(g.mig_mode_current for g in gpus):
        lines += _mig_table(gpus, lay.inner, lay.mig_memory)
        lines.append(" " * 89)
    lines += _process_table(gpus, lay.inner, lay.pid_width)
    return text(*lines)


_COMPUTE_MODES = {"Default": "Default", "Exclusive_Process": "E. Process", "Prohibited": "Prohibited"}


def _gpu_rows(g: GpuState, middle: int = 24, limit_digits: int = 4) -> list[str]:
    name = g.name if len(g.name) <= 31 else g.name[:28] + "..."
    pm = "On" if g.persistence_mode else "Off"
    if g.ecc_mode_current is None or not g.ecc_mode_current:
        ecc = "N/A"
    elif g.mig_mode_current:
        ecc = "On"  # error counts are per MIG device in MIG mode
    else:
        ecc = str(g.ecc.volatile_uncorrected)
    util = "N/A" if g.mig_mode_current else f"{gpu_utilization(g)[0]}%"
    mig = "N/A" if not g.mig_supported else ("Enabled" if g.mig_mode_current else "Disabled")
    compute = _COMPUTE_MODES.get(g.compute_mode, g.compute_mode)
    # Whole watts, cut (not rounded): 100.89 W prints as 100W (corpus nvml/nvidia_smi_default_8xH100_SXM.txt).
    # The draw and the limit share 24 columns: "  46W / 400W" on R535, "100W /  700W" from R550.
    draw = 19 - limit_digits
    power = f"{int(g.power_draw_w):>{draw}}W / {int(g.power_limit_w):>{limit_digits}}W "
    pad = middle - 22  # the wider R550 cell pads the bus id and memory figures on the left
    used = f"{gpu_memory.used_mib(g)}MiB"
    return [
        f"|{g.index:>4}  {name:<31}{pm:<3} | {'':{pad}}{g.bus_id} {'Off':<3} |{ecc:>21} |",
        f"| N/A{g.temperature_c:>5}C    {g.performance_state:<2}{power}|"
        f"{used:>{10 + pad // 2}} / {g.memory_total_mib:>{5 + pad // 2}}MiB |{util:>8}{compute:>13} |",
        f"|{'':41}|{'':{middle}}|{mig:>21} |",
    ]


def _mig_table(gpus: list[GpuState], inner: int = 89, memory_width: int = 34) -> list[str]:
    from assessor.sim.tools.nvidia_smi_mig_cmd import device_resources

    rule = "+" + "-" * inner + "+"
    cells = "+------------------+" + "-" * memory_width + "+-----------+-----------------------+"
    if memory_width == 32:  # R535 (corpus nvml/nvidia_smi_default_A100_40GB_mig_535.txt)
        heads = [
            "| GPU  GI  CI  MIG |                   Memory-Usage |        Vol|      Shared           |",
            "|      ID  ID  Dev |                     BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |",
        ]
    else:
        heads = [
            "| GPU  GI  CI  MIG |                     Memory-Usage |        Vol|        Shared         |",
            "|      ID  ID  Dev |                       BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |",
        ]
    lines = [
        rule,
        "| MIG devices:".ljust(inner + 1) + "|",
        cells,
        *heads,
        "|                  |" + " " * memory_width + "|        ECC|                       |",
        "|==================+" + "=" * memory_width + "+===========+=======================|",
    ]
    rows = 0
    for gpu in gpus:
        if not gpu.mig_mode_current:
            continue
        for dev, (gi, ci) in enumerate(_mig_devices(gpu)):
            r = device_resources(gpu, gi, ci)
            memory = f"{r.used_mib}MiB / {r.memory_mib}MiB"
            bar1 = f"{0}MiB / {r.bar1_mib}MiB"
            lines.append(
                f"|{gpu.index:>3}{gi.gi_id:>5}{ci.ci_id:>4}{dev:>4}  |{memory:>30}{'':{memory_width - 30}}|"
                f"{r.sm:>3}{0:>7} |{r.ce:>3}{r.enc:>4}{r.dec:>5}{r.ofa:>5}{r.jpeg:>5} |"
            )
            lines.append(f"|{'':18}|{bar1:>{memory_width - 2}}  |{'':11}|{'':23}|")
            lines.append(cells)
            rows += 1
    if rows == 0:
        lines.append("|  No MIG devices found".ljust(inner + 1) + "|")
        lines.append(rule)
    return lines


def _process_table(gpus: list[GpuState], inner: int = 89, pid_width: int = 10) -> list[str]:
    rule = "+" + "-" * inner + "+"
    name_width = inner - 5 - 6 - 5 - pid_width - 7 - 3 - 14 - 1
    head = f"|  GPU   GI   CI{'PID':>{pid_width + 1}}   Type   Process name"
    lines = [
        rule,
        "| Processes:".ljust(inner + 1) + "|",
        head.ljust(inner + 1 - 11) + "GPU Memory |",
        "|        ID   ID".ljust(inner + 1 - 11) + "Usage      |",
        "|" + "=" * inner + "|",
    ]
    procs = [(g, p) for g in gpus for p in g.processes]
    if not procs:
        lines.append("|  No running processes found".ljust(inner + 1) + "|")
    for gpu, p in procs:
        name = p.name if len(p.name) <= name_width else "..." + p.name[-(name_width - 3) :]
        memory = f"{p.used_memory_mib}MiB"
        gi = "N/A" if p.gi_id is None else str(p.gi_id)
        ci = "N/A" if p.ci_id is None else str(p.ci_id)
        row = f"|{gpu.index:>5}{gi:>6}{ci:>5}{p.pid:>{pid_width}}{p.type:>7}   {name:<{name_width}}{memory:>14} |"
        lines.append(row)
    lines.append(rule)
    return lines


# ---------------------------------------------------------------- -pm, -r, -mig


def _chosen(state: NodeState, ids: str | None) -> tuple[list[GpuState], ToolResult | None]:
    """The GPUs ``-i`` selects, or how nvidia-smi refuses: a broken driver, no such GPU, no GPUs."""
    failure = driver_failure(state)
    if failure is not None:
        return [], failure
    try:
        chosen = select_gpus(state, ids)
    except NoSuchGpu:
        return [], result(EXIT_NOT_FOUND, [NO_DEVICES])
    if not state.gpus:
        return [], result(EXIT_NOT_FOUND, [NO_DEVICES])
    return chosen, None


def _modify(action: str, parsed: _Args, state: NodeState, euid: int) -> ToolResult:
    chosen, refusal = _chosen(state, parsed.ids)
    if refusal is not None:
        return refusal
    lost = lost_lines(chosen)
    if lost:
        return result(EXIT_GPU_LOST, [], lost)
    if action == "reset":
        fabric_manager = state.services.get("nvidia-fabricmanager.service")
        return gpu_reset(
            chosen,
            euid,
            fabric_manager=fabric_manager is not None and fabric_manager.active_state == "active",
            state=state,
        )
    if action in ("pl", "compute-mode", "lgc", "rgc", "ac", "rac"):
        return _clock_or_power(action, parsed.value, chosen, euid)
    mode = _mode(parsed.value)
    if mode is None:
        return usage_error()
    if action == "am":
        return _accounting(chosen, mode, euid)
    if action == "pm":
        daemon = state.services.get("nvidia-persistenced.service")
        return set_persistence(chosen, mode, euid, legacy=daemon is None or daemon.active_state != "active")
    if action == "ecc":
        return set_ecc_mode(chosen, mode, euid)
    return set_mig_mode(chosen, mode, euid, explicit=parsed.ids is not None, state=state)


def _mode(value: str | None) -> bool | None:
    if value is None:
        return None
    key = value.strip().upper()
    if key in ("1", "ENABLED"):
        return True
    if key in ("0", "DISABLED"):
        return False
    return None


def set_persistence(gpus: list[GpuState], on: bool, euid: int, *, legacy: bool = False) -> ToolResult:
    """``nvidia-smi -pm 0|1``: root only; says when a GPU already is in that mode.

    With nvidia-persistenced not running (``legacy``) the driver keeps the GPU initialised itself, the
    deprecated way, and nvidia-smi says so: "Enabled Legacy persistence mode for GPU 00000000:07:00.0."
    """
    word = "Enabled" if on else "Disabled"
    lines = []
    for gpu in gpus:
        if euid != 0:
            # nvidia-smi's usual refusal pattern ("Unable to ... for GPU ...: <NVML error>").
            lines += [f"Unable to set persistence mode for GPU {gpu.bus_id}: {NVML_NO_PERMISSION}", TERMINATING]
            return result(EXIT_NO_PERMISSION, lines)
        if gpu.persistence_mode == on:
            lines.append(f"Persistence mode is already {word} for GPU {gpu.bus_id}.")
        else:
            gpu.persistence_mode = on
            kind = "Legacy persistence" if on and legacy else "persistence"
            lines.append(f"{word} {kind} mode for GPU {gpu.bus_id}.")
    lines.append(ALL_DONE)
    return result(EXIT_OK, lines)


def set_ecc_mode(gpus: list[GpuState], on: bool, euid: int) -> ToolResult:
    """``nvidia-smi -e 0|1``: root only; the new mode is pending until the GPU is reset or the node reboots.

    nvidia-smi's messages, as a public Tesla T4 capture shows them::

        Disabled ECC support for GPU 00000000:00:05.0.
        All done.
        Reboot required.

    The pending mode shows in ``-q`` as "Pending" under "ECC Mode" and applies at the next reset or reboot.
    """
    word = "Enabled" if on else "Disabled"
    lines = []
    for gpu in gpus:
        if euid != 0:
            lines += [f"Unable to set the ECC mode for GPU {gpu.bus_id}: {NVML_NO_PERMISSION}", TERMINATING]
            return result(EXIT_NO_PERMISSION, lines)
        if gpu.ecc_mode_current is None:
            lines += [f"Unable to set the ECC mode for GPU {gpu.bus_id}: {NVML_NOT_SUPPORTED}", TERMINATING]
            return result(EXIT_NOT_SUPPORTED, lines)
        if gpu.ecc_mode_pending == on:
            lines.append(f"ECC support is already {word} for GPU {gpu.bus_id}.")
        else:
            gpu.ecc_mode_pending = on
            lines.append(f"{word} ECC support for GPU {gpu.bus_id}.")
    lines.append(ALL_DONE)
    if any(g.ecc_mode_pending != g.ecc_mode_current for g in gpus):
        lines.append("Reboot required.")
    return result(EXIT_OK, lines)


def reset_gpu_state(gpu: GpuState) -> None:
    """What a GPU reset does to a GPU's state: pending modes apply, instances and volatile counts go."""
    if gpu.mig_supported:
        gpu.mig_mode_current = gpu.mig_mode_pending
    gpu.mig_instances = []  # GPU and compute instances do not survive a reset
    if gpu.ecc_mode_pending is not None:
        gpu.ecc_mode_current = gpu.ecc_mode_pending
    gpu.ecc.volatile_corrected = 0
    gpu.ecc.volatile_uncorrected = 0
    if gpu.remapped_rows is not None:
        gpu.remapped_rows.pending = False
    if gpu.retired_pages is not None:
        gpu.retired_pages.pending = False
    for link in gpu.nvlinks:
        # A link a fatal NVLink error took down (Xid 74: a recovery counted) trains again at the reset,
        # and the link's error counters are hardware counters that the reset clears.
        if not link.active and link.errors.get("recovery", 0) > 0:
            link.active = True
        link.errors = dict.fromkeys(link.errors, 0)


def await_fabric_registration(gpu: GpuState, state: NodeState | None) -> None:
    """After a reset, a driver load or a boot an NVSwitch GPU registers with the NVLink fabric again: it is
    "In Progress" (and CUDA refuses to start) until the fabric manager registers it.

    Only where the node has NVSwitches of its own: a GB200 tray's GPUs are registered by the NVLink switch
    trays' fabric manager, outside the node, and stay "Completed". Without the node (``state`` None) the GPU's
    own fabric state decides.
    """
    if gpu.fabric_state is not None and (state is None or state.nvswitches):
        gpu.fabric_state, gpu.fabric_status = "In Progress", None


def nvlink_peers_left_out(gpus: list[GpuState], state: NodeState | None, *, fabric_manager: bool) -> list[GpuState]:
    """The NVLink peers a reset of ``gpus`` must include but does not: empty when the reset may go ahead.

    nvidia-smi(1), ``-r``: "On Ampere NVSwitch systems, Fabric Manager is required to facilitate reset. [...]
    If Fabric Manager is not running, [...] any GPUs with NVLink connections to a GPU being reset must also be
    reset in the same command", and the command names the GPUs left out. From Hopper on the reset no longer
    depends on the fabric manager. A GPU that fell off the bus cannot be reset at all and is not asked for.
    """
    if state is None or fabric_manager or not state.nvswitches:
        return []
    if not any(g.architecture == "Ampere" and g.nvlinks for g in gpus):
        return []
    chosen = {g.index for g in gpus}
    return [g for g in state.gpus if g.nvlinks and not g.lost and g.index not in chosen]


def _peers_refusal(gpus: list[GpuState], missing: list[GpuState]) -> ToolResult:
    """The refusal of a partial reset on an Ampere NVSwitch node without its fabric manager (exit 255).

    No capture of it was found: the lines follow nvidia-smi's other reset refusals and say what the man page
    says the command reports, the GPUs to add.
    """
    lines = ["The following GPUs could not be reset:"]
    lines += [f"  GPU {g.bus_id}: Fabric Manager is not running" for g in gpus]
    lines.append("")
    lines.append(
        "Without Fabric Manager, every GPU connected through NVLink to a GPU being reset must be reset in the "
        "same command (omit -i, or list them all with -i). The following GPUs must also be reset:"
    )
    lines += [f"  GPU {g.bus_id}" for g in missing]
    return result(EXIT_OTHER, lines)


def gpu_reset(
    gpus: list[GpuState], euid: int, *, fabric_manager: bool = True, state: NodeState | None = None
) -> ToolResult:
    """``nvidia-smi -r``: refused for non-root, in a VM (passthrough) and while anything holds a GPU.

    What holds a GPU is :func:`assessor.sim.gpu_clients.gpu_holders`: compute processes always; on a node
    whose daemons hold the GPUs, also persistenced (or persistence mode), DCGM's nv-hostengine and a loaded
    nvidia_drm. The fabric manager does not hold a GPU: on Ampere NVSwitch systems it facilitates the reset
    (nvidia-smi man page, ``-r``), so a single GPU resets with it running. The refusal is the one public
    captures show, exit 255 (NVIDIA/mig-parted#181, 4 GPUs; ComputeCanada/puppet-magic_castle#387, 1 GPU;
    NVIDIA/NVSentinel#1690, persistence mode)::

        The following GPUs could not be reset:
          GPU 00000000:01:00.0: In use by another client

        1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA
        application, graphics application such as an X server, or a monitoring application such as another
        instance of nvidia-smi). Please first kill all processes using this device and all compute
        applications running in the system.

    (Drivers of 2020 worded the first line "GPU 00000000:C1:00.0 is currently in use by another process.",
    NVIDIA/gpu-operator#118; the simulator prints the current form.) After the drain the reset succeeds:
    "GPU 00000000:1A:00.0 was successfully reset." then "All done.".

    With the fabric manager stopped (``fabric_manager`` False) an Ampere NVSwitch GPU resets only together
    with all its NVLink peers (:func:`nvlink_peers_left_out`), and a reset GPU of any NVSwitch system waits
    "In Progress" for the fabric registration the fabric manager does (:func:`await_fabric_registration`).
    """
    if euid != 0:
        lines = [f"Unable to reset GPU {gpus[0].bus_id}: {NVML_NO_PERMISSION}", TERMINATING]
        return result(EXIT_NO_PERMISSION, lines)
    for gpu in gpus:
        if gpu.passthrough:
            return result(EXIT_NOT_SUPPORTED, [f"Resetting GPU {gpu.bus_id} is not supported."])
    missing = nvlink_peers_left_out(gpus, state, fabric_manager=fabric_manager)
    if missing:
        return _peers_refusal(gpus, missing)
    busy = [g for g in gpus if _holders(state, g)]
    if busy:
        lines = ["The following GPUs could not be reset:"]
        lines += [f"  GPU {g.bus_id}: {NVML_IN_USE}" for g in busy]
        lines.append("")
        many = len(busy) > 1
        lines.append(
            f"{len(busy)} {'devices are' if many else 'device is'} currently being used by one or more other "
            "processes (e.g., Fabric Manager, CUDA application, graphics application such as an X server, or a "
            "monitoring application such as another instance of nvidia-smi). Please first kill all processes "
            f"using {'these devices' if many else 'this device'} and all compute applications running in the system."
        )
        return result(EXIT_OTHER, lines)
    lines = []
    for gpu in gpus:
        reset_gpu_state(gpu)
        if state is not None:
            clock.advance(state, 1.0)
        if not fabric_manager:
            await_fabric_registration(gpu, state)
        lines.append(f"GPU {gpu.bus_id} was successfully reset.")
    lines.append(ALL_DONE)
    return result(EXIT_OK, lines)


def _persistence_warning(gpu: GpuState) -> list[str]:
    if gpu.persistence_mode:
        return []
    return [
        "",
        f"Warning: persistence mode is disabled on device {gpu.bus_id}. See the Known Issues section of the "
        "nvidia-smi(1) man page for more information. Run with [--help | -h] switch to get more information on "
        "how to enable persistence mode.",
    ]


def _holders(state: NodeState | None, gpu: GpuState) -> list[str]:
    """What holds ``gpu``; without the node, only what the GPU itself records."""
    if state is None:
        return [f"{p.name} (pid {p.pid})" for p in gpu.processes] + list(gpu.mig_reset_blocked_by)
    return gpu_holders(state, gpu)


def _mig_blockers(state: NodeState | None, gpu: GpuState) -> list[str]:
    if state is None:
        if gpu.architecture in NO_RESET_FOR_MIG:
            return [p.name for p in gpu.processes]
        return _holders(None, gpu)
    return mig_change_blockers(state, gpu)


def set_mig_mode(
    gpus: list[GpuState], on: bool, euid: int, *, explicit: bool, state: NodeState | None = None
) -> ToolResult:
    """``nvidia-smi [-i IDS] -mig 0|1``.

    Root only. A GPU without MIG is a warning when every GPU was asked (no ``-i``) and an error when it was
    named. Disabling is refused while GPU instances exist. Before Hopper the driver must reset the GPU for
    the mode to take effect: with clients holding it, or in a VM where reset is not allowed, the new mode
    stays pending with the driver's warning (MIG User Guide, "Enable MIG Mode"; NVIDIA/gpu-operator#118 and
    #1845, an A100 on 580.65.06)::

        Warning: MIG mode is in pending enable state for GPU 00000000:C1:00.0:In use by another client
        00000000:C1:00.0 is currently being used by one or more other processes (e.g. CUDA application or a
        monitoring application such as another instance of nvidia-smi). Please first kill all processes
        using the device and retry the command or reboot the system to make MIG mode effective.
        All done.

    The pending mode applies at the next ``nvidia-smi -r`` or reboot. From Hopper on no reset is needed
    (MIG User Guide: H100/H200 apply the mode at once), so only compute work on the GPU keeps it pending.
    """
    verb = "enable" if on else "disable"
    word = "Enabled" if on else "Disabled"
    lines: list[str] = []
    for gpu in gpus:
        if euid != 0:
            lines += [f"Unable to {verb} MIG Mode for GPU {gpu.bus_id}: {NVML_NO_PERMISSION}", TERMINATING]
            return result(EXIT_NO_PERMISSION, lines)
        if not gpu.mig_supported:
            lines.append(f"Unable to {verb} MIG Mode for GPU {gpu.bus_id}: {NVML_NOT_SUPPORTED}")
            if explicit:
                lines.append(TERMINATING)
                return result(EXIT_NOT_SUPPORTED, lines)
            lines.append("Treating as warning and moving on.")
            continue
        if not on and gpu.mig_instances:
            lines += [f"Unable to disable MIG Mode for GPU {gpu.bus_id}: {NVML_IN_USE}", TERMINATING]
            return result(EXIT_OTHER, lines)
        gpu.mig_mode_pending = on
        needs_reset = gpu.architecture not in NO_RESET_FOR_MIG and gpu.mig_mode_current != on
        if needs_reset and gpu.passthrough:
            lines += [
                f"Warning: MIG mode is in pending {verb} state for GPU {gpu.bus_id}:{NVML_NOT_SUPPORTED}",
                f"Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU {gpu.bus_id}",
            ]
            continue
        if gpu.mig_mode_current != on and _mig_blockers(state, gpu):
            lines += [
                f"Warning: MIG mode is in pending {verb} state for GPU {gpu.bus_id}:{NVML_IN_USE}",
                f"{gpu.bus_id} is currently being used by one or more other processes (e.g. CUDA application or a "
                "monitoring application such as another instance of nvidia-smi). Please first kill all processes "
                "using the device and retry the command or reboot the system to make MIG mode effective.",
            ]
            continue
        if needs_reset:
            reset_gpu_state(gpu)
        gpu.mig_mode_current = on
        lines.append(f"{word} MIG Mode for GPU {gpu.bus_id}")
        lines += _persistence_warning(gpu)
    lines.append(ALL_DONE)
    return result(EXIT_OK, lines)


# ---------------------------------------------------------------- -l, dmon, pmon, -pl, clocks, accounting


def _loop(parsed: _Args, action: str, session: Session) -> ToolResult:
    """``-l SEC`` / ``-lms MS``: the same report again every interval until Ctrl-C (no count: nvidia-smi -h)."""
    interval = parsed.loop_s or 5.0
    once = _Args(ids=parsed.ids, actions=list(parsed.actions), xml=parsed.xml, query_gpu=parsed.query_gpu)
    once.fmt, once.display = parsed.fmt, parsed.display
    args_header = once.fmt is None or "noheader" in once.fmt
    no_header = _Args(ids=once.ids, actions=once.actions, query_gpu=once.query_gpu, fmt=f"{once.fmt},noheader")

    def sample(first: list[bool] = [True]) -> str:  # noqa: B006 - a one-shot flag: the CSV header once
        state = session.read()
        clock.advance(state, interval)
        chosen, refusal = _chosen(state, once.ids)
        if refusal is not None:
            return refusal.stdout
        gpus = visible(chosen)
        if action == "query-gpu":
            use = once if first[0] or args_header else no_header
            first[0] = False
            return _query_gpu(state, gpus, use, action).stdout
        if action == "query":
            only = display_sections(once.display) if once.display is not None else None
            return render_text(state, gpus, clock.now(state), only=only)
        return summary(state, gpus, clock.now(state))

    return stream("", sample, None, interval)


def _monitor_or_admin(name: str, args: list[str], session: Session) -> ToolResult:
    state = session.read()
    failure = driver_failure(state)
    if failure is not None:
        return failure
    if name in ("dmon", "pmon"):
        options = monitor_options(args)
        if options is None:
            return usage_error()
        count, delay, ids = options
        chosen, refusal = _chosen(state, ids)
        if refusal is not None:
            return refusal
        gpus = visible(chosen)
        header = dmon_header() if name == "dmon" else pmon_header()
        rows = dmon_rows if name == "dmon" else pmon_rows

        def sample() -> str:
            return text(*rows(gpus))

        return stream(text(*header), sample, count, delay)
    if name == "conf-compute":
        # A node without confidential computing turned on (none of the fixtures runs CC mode).
        if args in (["-f"], ["--get-cc-feature"]):
            return ToolResult(EXIT_OK, text("CC status: OFF"))
        if args in (["-grs"], ["--get-gpus-ready-state"]):
            return ToolResult(EXIT_OK, text("Confidential Compute GPUs Ready state: not-ready"))
        return usage_error()
    # drain: "-p BUSID -q" asks; "-p BUSID -m 0|1" sets (root); the node's GPUs are never drained here.
    if len(args) == 3 and args[0] in ("-p", "--pciid") and args[2] in ("-q", "--query"):
        chosen, refusal = _chosen(state, args[1])
        if refusal is not None:
            return refusal
        return ToolResult(
            EXIT_OK, text(*(f"The current drain state of GPU {g.bus_id} is: not draining" for g in chosen))
        )
    return usage_error()


_COMPUTE_MODE_ARGS = {
    "0": "Default",
    "DEFAULT": "Default",
    "2": "Prohibited",
    "PROHIBITED": "Prohibited",
    "3": "Exclusive_Process",
    "EXCLUSIVE_PROCESS": "Exclusive_Process",
}


def _clock_or_power(action: str, value: str | None, gpus: list[GpuState], euid: int) -> ToolResult:
    """``-pl W``, ``-c MODE``, ``-lgc MIN[,MAX]``, ``-rgc``, ``-ac MEM,GR``, ``-rac``: root only."""
    what = {
        "pl": "set power limit",
        "compute-mode": "set the compute mode",
        "lgc": "set GPU locked clocks",
        "rgc": "reset GPU locked clocks",
        "ac": "set applications clocks",
        "rac": "reset applications clocks",
    }[action]
    if euid != 0:
        return result(
            EXIT_NO_PERMISSION, [f"Unable to {what} for GPU {gpus[0].bus_id}: {NVML_NO_PERMISSION}", TERMINATING]
        )
    lines: list[str] = []
    if action == "pl":
        try:
            watts = float(value or "")
        except ValueError:
            return usage_error()
        for g in gpus:
            low, high = g.power_min_limit_w, g.power_max_limit_w
            if low is None or high is None:
                return result(
                    EXIT_NOT_SUPPORTED, [f"Changing power management limit is not supported for GPU: {g.bus_id}."]
                )
            if not low <= watts <= high:
                return result(
                    EXIT_INVALID_ARGUMENT,
                    [
                        f"Provided power limit {watts:.2f} W is not a valid power limit which should be between "
                        f"{low:.2f} W and {high:.2f} W for GPU {g.bus_id}",
                        TERMINATING,
                    ],
                )
        for g in gpus:
            before, g.power_limit_w = g.power_limit_w, watts
            lines.append(f"Power limit for GPU {g.bus_id} was set to {watts:.2f} W from {before:.2f} W.")
    elif action == "compute-mode":
        mode = _COMPUTE_MODE_ARGS.get((value or "").strip().upper())
        if mode is None:
            return usage_error()
        for g in gpus:
            if g.compute_mode == mode:
                lines.append(f"Compute mode is already set to {mode.upper()} for GPU {g.bus_id}.")
            else:
                g.compute_mode = mode
                lines.append(f"Set compute mode to {mode.upper()} for GPU {g.bus_id}.")
    elif action == "lgc":
        parts = (value or "").split(",")
        if not all(p.strip().isdigit() for p in parts) or len(parts) > 2:
            return usage_error()
        low, high = int(parts[0]), int(parts[-1])
        for g in gpus:
            g.locked_gpu_clocks_mhz = [low, high]
            lines.append(f'GPU clocks set to "(gpuClkMin {low}, gpuClkMax {high})" for GPU {g.bus_id}')
    elif action == "rgc":
        for g in gpus:
            g.locked_gpu_clocks_mhz = None
    elif action == "ac":
        parts = (value or "").split(",")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            return usage_error()
        memory, graphics = int(parts[0]), int(parts[1])
        for g in gpus:
            if memory != g.max_clocks_mhz.get("memory") or graphics not in supported_graphics_clocks(g):
                return result(
                    EXIT_INVALID_ARGUMENT,
                    [
                        f'Specified clock combination "(MEM {memory}, SM {graphics})" is not supported for GPU '
                        f"{g.bus_id}. Run 'nvidia-smi -q -d SUPPORTED_CLOCKS' to see list of supported clock "
                        "combinations",
                        TERMINATING,
                    ],
                )
        lines += applications_clocks_set(gpus, memory, graphics)
    else:  # rac
        for g in gpus:
            g.applications_clocks_mhz = {}
    if action in ("lgc", "rgc", "ac", "rac"):
        for g in gpus:
            sync_clock_setting_reason(g)
    lines.append(ALL_DONE)
    return result(EXIT_OK, lines)


CLOCK_SETTING_REASON = "applications_clocks_setting"


def sync_clock_setting_reason(gpu: GpuState) -> None:
    """The "Applications Clocks Setting" clock-event reason (NVML's user-defined clocks, 0x2) follows the clocks
    a user set: active while a lock (``-lgc``) caps the GPU clock below its maximum, or applications clocks
    (``-ac``) sit below the board's default; cleared when neither does (``-rgc``, ``-rac``, a boot)."""
    top = gpu.max_clocks_mhz.get("graphics") or gpu.max_clocks_mhz.get("sm")
    locked = gpu.locked_gpu_clocks_mhz
    capped = bool(locked and top and locked[-1] < top)
    app_graphics = gpu.applications_clocks_mhz.get("graphics") if gpu.applications_clocks_mhz else None
    default_graphics = default_app_clocks(gpu)[0]
    if app_graphics is not None and default_graphics is not None and app_graphics < default_graphics:
        capped = True
    reasons = [r for r in gpu.throttle_reasons if r != CLOCK_SETTING_REASON]
    if capped:
        reasons.append(CLOCK_SETTING_REASON)
    gpu.throttle_reasons = reasons


def _accounting(gpus: list[GpuState], on: bool, euid: int) -> ToolResult:
    """``-am 0|1``: per-process accounting, root only."""
    word = "Enabled" if on else "Disabled"
    lines = []
    for g in gpus:
        if euid != 0:
            return result(
                EXIT_NO_PERMISSION,
                [f"Unable to set accounting mode for GPU {g.bus_id}: {NVML_NO_PERMISSION}", TERMINATING],
            )
        g.accounting_mode = on
        lines.append(f"{word} Accounting Mode for GPU {g.bus_id}.")
    lines.append(ALL_DONE)
    return result(EXIT_OK, lines)


def _other_csv(gpus: list[GpuState], parsed: _Args, action: str) -> ToolResult:
    """``--query-supported-clocks``, ``--query-retired-pages``, ``--query-accounted-apps`` with ``--format=csv``."""
    fmt = [o.strip() for o in (parsed.fmt or "").split(",") if o.strip()]
    if "csv" not in fmt or any(o not in ("csv", "noheader", "nounits") for o in fmt):
        return usage_error()
    units = "nounits" not in fmt
    names = [n.strip() for n in (parsed.query_gpu or "").split(",") if n.strip()]
    known = {
        "query-supported-clocks": {
            "timestamp",
            "gpu_name",
            "gpu_bus_id",
            "gpu_serial",
            "gpu_uuid",
            "memory",
            "graphics",
        },
        "query-retired-pages": {
            "timestamp",
            "gpu_name",
            "gpu_bus_id",
            "gpu_serial",
            "gpu_uuid",
            "retired_pages.address",
            "retired_pages.cause",
            "retired_pages.timestamp",
        },
        "query-accounted-apps": {
            "timestamp",
            "gpu_name",
            "gpu_bus_id",
            "gpu_serial",
            "gpu_uuid",
            "vgpu_instance",
            "pid",
            "gpu_utilization",
            "mem_utilization",
            "max_memory_usage",
            "time",
        },
    }[action]
    aliases = {"mem": "memory", "gr": "graphics", "address": "retired_pages.address", "cause": "retired_pages.cause"}
    names = [aliases.get(n, n) for n in names]
    for name in names:
        if name not in known:
            return result(2, [f'Field "{name}" is not a valid field to query.', ""])
    unit = {"memory": "MHz", "graphics": "MHz"}
    lines = []
    if "noheader" not in fmt:
        lines.append(", ".join(f"{n} [{unit[n]}]" if units and n in unit else n for n in names))
    if action == "query-supported-clocks":
        for g in gpus:
            for mhz in supported_graphics_clocks(g):
                row = {
                    "gpu_name": g.name,
                    "gpu_bus_id": g.bus_id,
                    "gpu_serial": g.serial,
                    "gpu_uuid": g.uuid,
                    "memory": g.max_clocks_mhz.get("memory"),
                    "graphics": mhz,
                    "timestamp": timestamp(),
                }
                lines.append(", ".join(f"{row[n]} {unit[n]}" if units and n in unit else str(row[n]) for n in names))
    # Retired pages: HBM GPUs remap rows instead and retire none; accounting: no accounted process is kept.
    return ToolResult(EXIT_OK, "".join(line + "\n" for line in lines))


__all__ = ["list_gpus", "main", "memory_free_mib", "summary"]
