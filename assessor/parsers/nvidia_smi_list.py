"""``nvidia-smi -L``: one line per GPU (index, name, UUID), MIG devices indented below it.

::

    GPU 0: A100-SXM4-40GB (UUID: GPU-e86cb44c-6756-fd30-cd4a-1e6da3caf9b0)
      MIG 3g.20gb Device 0: (UUID: MIG-c7384736-a75d-5afc-978f-d2f1294409fd)

The MIG lines do not say which GPU instance a device belongs to, so they add nothing to the
facts this parser fills (``gpus``); they are recognised and skipped.
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import Gpu, NodeFacts
from assessor.parsers._nvsmi import check_text, is_shell_noise, raise_on_failure, says_no_devices
from assessor.parsers._text import cut_line

# "GPU 0: <name> (UUID: GPU-...)": the name may hold parentheses of its own, so the UUID is the
# last "(UUID:" of the line; split by hand (a lazy name group before it is quadratic).
_GPU_START = re.compile(r"^GPU\s+(?P<index>\d+):")
_UUID = re.compile(r"^\(UUID:\s*(?P<uuid>[^)\s]+)\)$")
# Older drivers print "MIG 1g.5gb Device 0:"; some print "MIG 1g.5gb     Device  0:".
_MIG = re.compile(r"^MIG\s+\S+\s+Device\s+\d+:\s*\(UUID:\s*[^)\s]+\)\s*$")


def parse(text: str) -> NodeFacts:
    """Parse ``nvidia-smi -L`` into ``gpus`` (index, name, uuid).

    "No devices were found" gives an empty list; a driver/NVML failure message raises a
    ParseError carrying that message; any other unknown line raises a ParseError with its line.
    """
    lines = check_text(text)
    if says_no_devices(text):
        return NodeFacts(gpus=[])
    raise_on_failure(text)
    gpus: list[Gpu] = []
    cut = cut_line(text, lines)
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or is_shell_noise(line) or _MIG.match(line):
            continue
        match = _gpu_line(line)
        if match is None and number - 1 == cut and gpus:
            break  # the paste ends halfway through this line
        if match is None:
            raise ParseError(f"not an nvidia-smi -L line: {line[:80]!r}", line=number)
        index, name, uuid = match
        if any(gpu.index == index for gpu in gpus):
            # Two captures pasted into one file: which one is the node now is unknowable.
            raise ParseError(f"GPU {index} listed twice", line=number)
        gpus.append(Gpu(index=index, name=name or None, uuid=uuid))
    if not gpus:
        raise ParseError("no GPU lines in nvidia-smi -L output", line=1)
    return NodeFacts(gpus=gpus)


def _gpu_line(line: str) -> tuple[int, str, str] | None:
    """(index, name, uuid) of a ``GPU N: name (UUID: ...)`` line, else None."""
    start = _GPU_START.match(line)
    at = line.rfind("(UUID:")
    if start is None or at < start.end():
        return None
    uuid = _UUID.match(line[at:].rstrip())
    if uuid is None:
        return None
    return int(start["index"]), line[start.end() : at].strip(), uuid["uuid"]
