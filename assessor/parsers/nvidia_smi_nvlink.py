"""``nvidia-smi nvlink -s``: each GPU's NVLinks, with the link speed or ``<inactive>`` (or ``-R``: the far end).

::

    GPU 3: Tesla V100-SXM2-32GB (UUID: GPU-...)
             Link 0: 25.781 GB/s
             Link 3: <inactive>

A GPU without NVLink prints its header alone (or NVML's "Unable to retrieve NVLink
information" line): its link list is empty, which is what it has.
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import GpuNvLinks, NodeFacts, NvLink
from assessor.parsers._nvsmi import check_text, raise_on_failure, says_no_devices
from assessor.parsers._text import last_content_line

_GPU_START = re.compile(r"^GPU\s+(?P<index>\d+):")
_UUID = re.compile(r"^\(UUID:\s*(?P<uuid>[^)\s]+)\)$")
_LINK = re.compile(r"^Link\s+(?P<link>\d+):\s*(?P<value>.*)$")
_SPEED = re.compile(r"^(?P<speed>\d+(?:\.\d+)?)\s*GB/s$")
# nvlink -R: "Remote Device 00000000:07:00.0: Link 46", the far end of a link that is up
_REMOTE = re.compile(r"^Remote Device\s+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d:\s*Link\s+\d+$")


def parse(text: str) -> NodeFacts:
    """Parse ``nvidia-smi nvlink -s`` into ``nvlink_status`` (one entry per GPU, its links in order)."""
    lines = check_text(text)
    if says_no_devices(text):
        return NodeFacts(nvlink_status=[])
    raise_on_failure(text)
    last = last_content_line(lines)
    gpus: list[GpuNvLinks] = []
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if start := _GPU_START.match(line):
            at = line.rfind("(UUID:")
            uuid = _UUID.match(line[at:].rstrip()) if at > start.end() else None
            name = line[start.end() : at if uuid else len(line)].strip()
            gpus.append(GpuNvLinks(gpu=int(start["index"]), name=name or None, uuid=uuid["uuid"] if uuid else None))
            continue
        if m := _LINK.match(line):
            if not gpus:
                raise ParseError("a Link line before any 'GPU N:' line", line=i + 1)
            value = m["value"].strip()
            speed = _SPEED.match(value)
            if value.lower() == "<inactive>":
                gpus[-1].links.append(NvLink(link=int(m["link"]), active=False))
            elif _REMOTE.match(value):
                gpus[-1].links.append(NvLink(link=int(m["link"]), active=True))  # connected; -R gives no speed
            elif speed:
                gpus[-1].links.append(NvLink(link=int(m["link"]), active=True, speed_gbps=float(speed["speed"])))
            elif i != last:  # the last line may be cut in half
                raise ParseError(f"link state is neither a speed nor <inactive>: {value[:40]!r}", line=i + 1)
            continue
        if gpus and "nvlink" in line.lower():
            continue  # "NVML: Unable to retrieve NVLink information as all links are inActive"
        if i != last:
            raise ParseError(f"not an nvidia-smi nvlink -s line: {line[:80]!r}", line=i + 1)
    if not gpus:
        raise ParseError("no 'GPU N: ... (UUID: ...)' line in nvidia-smi nvlink -s output", line=1)
    return NodeFacts(nvlink_status=gpus)
