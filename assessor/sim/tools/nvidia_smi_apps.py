"""``nvidia-smi --query-compute-apps=FIELDS --format=csv[,noheader][,nounits]``: the compute processes.

One row per compute process per GPU, fields in the order asked; the header keeps the unit of a field
(``used_gpu_memory [MiB]``) as nvidia-smi's does, ``nounits`` drops it from the values. With no process
running only the header is printed. Field names and aliases as ``nvidia-smi --help-query-compute-apps``
lists them.
"""

from __future__ import annotations

from collections.abc import Callable

from assessor.sim.state import GpuProcess, GpuState
from assessor.sim.tools import ToolResult
from assessor.sim.tools.nvidia_smi_common import EXIT_OK, result, usage_error

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
