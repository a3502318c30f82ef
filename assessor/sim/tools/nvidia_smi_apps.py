"""``nvidia-smi --query-compute-apps=FIELDS --format=csv[,noheader][,nounits]``, and the monitoring commands.

One row per compute process per GPU, fields in the order asked; the header keeps the unit of a field
(``used_gpu_memory [MiB]``) as nvidia-smi's does, ``nounits`` drops it from the values. With no process
running only the header is printed. Field names and aliases as ``nvidia-smi --help-query-compute-apps``
lists them.
"""

from __future__ import annotations

from collections.abc import Callable

from assessor.sim.state import GpuProcess, GpuState
from assessor.sim.tools import ToolResult
from assessor.sim.tools.nvidia_smi_common import EXIT_OK, result, text, usage_error

Getter = Callable[[GpuState, GpuProcess, bool], str]

# canonical name -> (header unit or "", getter(gpu, process, units))
_FIELDS: dict[str, tuple[str, Getter]] = {
    "gpu_name": ("", lambda g, p, u: g.name),
    "gpu_bus_id": ("", lambda g, p, u: g.bus_id),
    "gpu_serial": ("", lambda g, p, u: g.serial),
    "gpu_uuid": ("", lambda g, p, u: g.uuid),
    "pid": ("", lambda g, p, u: str(p.pid)),
    "process_name": ("", lambda g, p, u: p.name),
    "used_gpu_memory": ("MiB", lambda g, p, u: f"{p.used_memory_mib} MiB" if u else str(p.used_memory_mib)),
}
_ALIASES = {"name": "process_name", "used_memory": "used_gpu_memory"}


def query_compute_apps(gpus: list[GpuState], fields: str, fmt: str | None) -> ToolResult:
    """The CSV of the compute processes on ``gpus``; nvidia-smi's refusals for a bad field or format."""
    if fmt is None:
        return usage_error()
    options = [o.strip() for o in fmt.split(",") if o.strip()]
    if "csv" not in options or any(o not in ("csv", "noheader", "nounits") for o in options):
        return usage_error()
    names = [n.strip() for n in fields.split(",") if n.strip()]
    if not names:
        return usage_error()
    for name in names:
        if _ALIASES.get(name, name) not in _FIELDS:
            return result(2, [f'Field "{name}" is not a valid field to query.', ""])
    units = "nounits" not in options
    lines = []
    if "noheader" not in options:
        heads = []
        for name in names:
            unit = _FIELDS[_ALIASES.get(name, name)][0]
            heads.append(f"{name} [{unit}]" if unit else name)
        lines.append(", ".join(heads))
    for gpu in gpus:
        for proc in gpu.processes:
            if proc.type != "C":
                continue
            lines.append(", ".join(_FIELDS[_ALIASES.get(n, n)][1](gpu, proc, units) for n in names))
    return result(EXIT_OK, lines)


# ---------------------------------------------------------------- the other commands of nvidia-smi -h (audit row 16)
#
# Captures: corpus nvidia_smi_cli/01_595.91.07_rtx_pro_6000_version_pmon_dmon.txt (--version, pmon, dmon -s pucm) and
# nvidia_smi_cli/02_dmon_default_lgc_pl_rtx3080.txt (default dmon columns, -lgc and -pl messages); -ac's message from
# public transcripts ('Applications clocks set to "(MEM 2505, SM 875)" for GPU 00000000:00:04.0').


def version_text(driver: str, cuda: str) -> str:
    """``nvidia-smi --version``."""
    nvml = ".".join(driver.split(".")[:2])
    return text(
        f"NVIDIA-SMI version  : {driver}",
        f"NVML version        : {nvml}",
        f"DRIVER version      : {driver}",
        f"CUDA Version        : {cuda}",
    )


def dmon_header() -> list[str]:
    names = ("pwr", "gtemp", "mtemp", "sm", "mem", "enc", "dec", "jpg", "ofa", "mclk", "pclk")
    units = ("W", "C", "C", "%", "%", "%", "%", "%", "%", "MHz", "MHz")
    return ["# gpu" + "".join(f"{n:>7}" for n in names) + " ", "# Idx" + "".join(f"{u:>7}" for u in units) + " "]


def dmon_rows(gpus: list[GpuState]) -> list[str]:
    """One sample of ``nvidia-smi dmon`` (default ``-s puc``): one row per GPU."""
    from assessor.sim.state import gpu_utilization

    rows = []
    for g in gpus:
        sm, mem = gpu_utilization(g)
        mtemp = "-" if g.temperature_memory_c is None else str(g.temperature_memory_c)
        values = (int(g.power_draw_w), g.temperature_c, mtemp, sm, mem, 0, 0, 0, 0)
        clocks = (g.clocks_mhz.get("memory", "-"), g.clocks_mhz.get("graphics", "-"))
        rows.append(f"{g.index:>5}" + "".join(f"{v!s:>7}" for v in (*values, *clocks)) + " ")
    return rows


def pmon_header() -> list[str]:
    metrics = ("sm", "mem", "enc", "dec", "jpg", "ofa")
    return [
        "# gpu         pid   type" + "".join(f"{m:>7}" for m in metrics) + "    command ",
        "# Idx           #    C/G" + "".join(f"{'%':>7}" for _ in metrics) + "    name ",
    ]


def pmon_rows(gpus: list[GpuState]) -> list[str]:
    """One sample of ``nvidia-smi pmon``: one row per process, a row of dashes for a GPU with none."""
    from assessor.sim.state import gpu_utilization

    rows = []
    for g in gpus:
        if not g.processes:
            rows.append(
                f"{g.index:>5}{'-':>11}{'-':>6}" + "".join(f"{'-':>7}" for _ in range(6)) + "    -              "
            )
        sm, mem = gpu_utilization(g)
        for p in g.processes:
            busy = p.type == "C" and p.unit is None
            util = [str(sm) if busy else "-", str(mem) if busy else "-", "-", "-", "-", "-"]
            rows.append(
                f"{g.index:>5}{p.pid:>11}{p.type:>6}" + "".join(f"{u:>7}" for u in util) + f"    {p.name[:15]:<15}"
            )
    return rows


def monitor_options(args: list[str]) -> tuple[int | None, float, str | None] | None:
    """``dmon``/``pmon`` options: (-c count or None, -d delay seconds, -i ids); None when refused."""
    count: int | None = None
    delay = 1.0
    ids: str | None = None
    i = 0
    while i < len(args):
        name = args[i]
        if name in ("-c", "--count", "-d", "--delay", "-i", "--id", "-s", "--select") and i + 1 < len(args):
            value = args[i + 1]
            if name in ("-c", "--count"):
                if not value.isdigit():
                    return None
                count = int(value) or None  # -c 0: collect until interrupted
            elif name in ("-d", "--delay"):
                if not value.isdigit() or not 1 <= int(value) <= 10:
                    return None
                delay = float(value)
            elif name in ("-i", "--id"):
                ids = value
            i += 2
            continue
        return None
    return count, delay, ids


def stream(first: str, sample: Callable[[], str], count: int | None, delay: float) -> ToolResult:
    """Print ``first`` and then ``sample()`` COUNT times (every DELAY seconds); without a count until interrupted.

    With a count the samples are returned at once (the simulated clock does the waiting). Without one the loop
    writes to the terminal as it goes and stops at Ctrl-C (SIGINT), which nvidia-smi takes as the normal end
    of a monitoring run: exit status 0.
    """
    if count is not None:
        return ToolResult(EXIT_OK, first + "".join(sample() for _ in range(count)))
    import sys
    import time

    try:
        sys.stdout.write(first)
        sys.stdout.flush()
        while True:
            sys.stdout.write(sample())
            sys.stdout.flush()
            time.sleep(delay)
    except KeyboardInterrupt:
        return ToolResult(EXIT_OK, "")


def help_query_gpu(fields: list[str]) -> str:
    """``nvidia-smi --help-query-gpu``: the fields --query-gpu accepts (names only)."""
    lines = [
        'List of valid properties to query for the switch "--query-gpu=":',
        "",
        "Section about timestamp properties",
        "",
    ]
    for name in fields:
        lines += [f'"{name}"', ""]
    return text(*lines)


def applications_clocks_set(gpus: list[GpuState], memory: int, graphics: int) -> list[str]:
    lines = []
    for g in gpus:
        g.applications_clocks_mhz = {"memory": memory, "graphics": graphics}
        lines.append(f'Applications clocks set to "(MEM {memory}, SM {graphics})" for GPU {g.bus_id}')
    return lines
