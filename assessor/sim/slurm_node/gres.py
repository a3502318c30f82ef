"""What slurmd makes of the node's GRES: its GPU devices, in the order a job's GPU indices count them (pure).

A job's ``SLURM_STEP_GPUS`` / ``SLURM_JOB_GPUS`` are indices into slurmd's list of GPU devices, not device
minors. slurmd (22.05, ``gres.c``: ``_merge_config``) builds that list by merging two files: for each GPU entry
of the node's ``Gres=`` in ``slurm.conf``, in the order written (``gpu:h100:6,gpu:1g.10gb:7``), it takes the
``gres.conf`` records of that type (any type for an untyped ``gpu:N``), in the order of the file (``Name=``
lines before ``NodeName=`` lines), until the entry's count is reached; a record beyond it is cut to fit, and
one no entry takes is dropped. Then each file of a ``File=`` record is one device, and a ``MultipleFiles=``
record (a MIG device: the GPU's ``/dev/nvidiaN`` and its two capability nodes) is one device of all its files.
Seen on the simulated node's real slurmd: the order of ``Gres=`` decides the indices, whatever the order of the
``gres.conf`` lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RANGE = re.compile(r"^(?P<head>[^\[\]]*)\[(?P<body>[^\[\]]+)\](?P<tail>[^\[\]]*)$")


@dataclass(frozen=True)
class GpuDevice:
    """One of slurmd's GPU devices: its type (``""`` untyped) and the device files a job given it opens."""

    type: str
    files: tuple[str, ...]


@dataclass
class _Record:
    type: str
    files: list[str]
    multiple: bool

    @property
    def count(self) -> int:
        return 1 if self.multiple else len(self.files)


def expand(text: str) -> list[str]:
    """``/dev/nvidia[0-2,5]`` -> four paths; a comma list (outside brackets) of such, each expanded.

    >>> expand("/dev/nvidia6,/dev/nvidia-caps/nvidia-cap[903-904]")
    ['/dev/nvidia6', '/dev/nvidia-caps/nvidia-cap903', '/dev/nvidia-caps/nvidia-cap904']
    """
    out: list[str] = []
    for word in re.split(r",(?![^\[]*\])", text.strip()):
        word = word.strip()
        if not word:
            continue
        m = _RANGE.match(word)
        if m is None:
            out.append(word)
            continue
        for part in m.group("body").split(","):
            first, _, last = part.strip().partition("-")
            if not first.isdigit() or (last and not last.isdigit()):
                out.append(word)  # not a range slurmd would expand: kept as written
                break
            width = len(first)
            for n in range(int(first), int(last or first) + 1):
                out.append(f"{m.group('head')}{n:0{width}d}{m.group('tail')}")
    return out


def _fields(line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in line.split():
        key, sep, value = word.partition("=")
        if sep:
            out[key.lower()] = value
    return out


def _lines(text: str) -> list[str]:
    return [line for raw in text.splitlines() if (line := raw.split("#", 1)[0].strip())]


def _for_node(value: str | None, host: str) -> bool:
    return value is None or host in expand(value)


def node_gres(slurm_conf: str, host: str) -> list[tuple[str | None, int]]:
    """The GPU entries of ``host``'s ``Gres=`` in ``slurm.conf``: ``(type or None, count)``, in order.

    >>> node_gres("NodeName=n1 Gres=gpu:h100:6,gpu:1g.10gb:7,nic:2 State=UNKNOWN", "n1")
    [('h100', 6), ('1g.10gb', 7)]
    """
    value = default = None
    for line in _lines(slurm_conf):
        fields = _fields(line)
        name = fields.get("nodename")
        if name is None or "gres" not in fields:
            continue
        if name.upper() == "DEFAULT":
            default = fields["gres"]
        elif _for_node(name, host):
            value = fields["gres"]
    out: list[tuple[str | None, int]] = []
    for part in re.split(r",(?![^()]*\))", value or default or ""):
        words = part.split("(")[0].strip().split(":")
        if words[0] != "gpu":
            continue
        count = int(words[-1]) if len(words) > 1 and words[-1].isdigit() else 1
        kind = words[1] if len(words) == 3 or (len(words) == 2 and not words[1].isdigit()) else None
        out.append((kind, count))
    return out


def _gres_records(gres_conf: str, host: str) -> list[_Record]:
    named: list[_Record] = []
    per_node: list[_Record] = []
    for line in _lines(gres_conf):
        fields = _fields(line)
        if fields.get("name") != "gpu" or not _for_node(fields.get("nodename"), host):
            continue
        kind = fields.get("type", "")
        into = per_node if "nodename" in fields else named
        if "multiplefiles" in fields:
            into.append(_Record(kind, expand(fields["multiplefiles"]), True))
        elif "file" in fields:
            into.append(_Record(kind, expand(fields["file"]), False))
    return named + per_node


def gpu_devices(gres_conf: str, slurm_conf: str | None, host: str) -> list[GpuDevice]:
    """slurmd's GPU devices on node ``host``, in index order, from the texts of ``gres.conf`` and ``slurm.conf``
    (None: no ``slurm.conf`` to read, every ``gres.conf`` record taken in order)."""
    records = _gres_records(gres_conf, host)
    entries = node_gres(slurm_conf, host) if slurm_conf is not None else [(None, sum(r.count for r in records))]
    merged: list[_Record] = []
    for kind, count in entries:
        while count > 0:
            match = next((r for r in records if kind is None or r.type.lower() == kind.lower()), None)
            if match is None:
                break
            records.remove(match)
            if match.count > count:
                match.files = match.files[:count]
            merged.append(match)
            count -= match.count
    devices: list[GpuDevice] = []
    for record in merged:
        if record.multiple:
            devices.append(GpuDevice(record.type, tuple(record.files)))
        else:
            devices += [GpuDevice(record.type, (path,)) for path in record.files]
    return devices
