"""``mlxfwmanager --query`` (MFT; ``mlxup`` prints the same) to ``NodeFacts.adapter_firmware``.

After ``Querying Mellanox devices firmware ...`` each adapter is a ``Device #N:`` block of two-space indented
``Key:   value`` lines, then a ``Versions:  Current  Available`` table whose rows are ``FW``, ``PXE``, ``UEFI``
(and ``FW (Running)`` while an image burned to flash waits for a firmware reset or a reboot), and ``Status:``.
An update run (``-u``) prints the same blocks first, then a ``---------`` line and its progress: the blocks are
read, the progress is not.

>>> (a,) = parse('''Device #1:
... ----------
...
...   PSID:             MT_0000000838
...   Base GUID:        a088c203009b306a
...   Versions:         Current        Available
...      FW             28.41.1000     N/A
...      FW (Running)   28.39.1002     N/A
...
...   Status:           Up to date
... ''').adapter_firmware or []
>>> (a.psid, a.firmware, a.running, a.available, a.status)
('MT_0000000838', '28.41.1000', '28.39.1002', None, 'Up to date')
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import AdapterFirmware, NodeFacts
from assessor.parsers._text import clean_lines, cut_line

_DEVICE = re.compile(r"^Device #(?P<n>\d{1,4}):\s*$")
_FIELD = re.compile(r"^  (?P<key>[A-Z][\w ]{0,40}?):\s+(?P<value>.*?)\s*$")
_ROW = re.compile(
    r"^\s{3,}(?P<name>[A-Za-z][\w]{0,15}(?: \(Running\))?)\s+(?P<current>\S+)(?:\s+(?P<available>\S+))?\s*$"
)
_FIELDS = {
    "Device Type": "device_type",
    "Part Number": "part_number",
    "PSID": "psid",
    "PCI Device Name": "device",
    "Base GUID": "base_guid",
    "Status": "status",
}
_HEADER = "Querying Mellanox devices firmware"


def _na(value: str | None) -> str | None:
    return None if value in (None, "", "N/A", "-") else value


def parse(text: str) -> NodeFacts:
    lines = clean_lines(text)
    cut = cut_line(text, lines)
    adapters: list[AdapterFirmware] = []
    current: AdapterFirmware | None = None
    in_versions = False
    partial = False
    for i, raw in enumerate(lines):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith(_HEADER) or re.fullmatch(r"-{10}", stripped):
            continue
        if stripped == "-" * 9 or stripped.startswith("-E-"):
            break  # an update's progress (or an error) follows the blocks
        if _DEVICE.match(stripped):
            current = AdapterFirmware()
            adapters.append(current)
            in_versions = False
            continue
        if current is None:
            if i == cut:
                break
            raise ParseError(f"not mlxfwmanager output: {stripped[:80]!r}", line=i + 1)
        if i == cut:
            partial = True
            break
        if in_versions and (row := _ROW.match(line)):
            name, value, available = row.group("name"), _na(row.group("current")), _na(row.group("available"))
            if name == "FW":
                current.firmware, current.available = value, available
            elif name == "FW (Running)":
                current.running = value
            continue
        field = _FIELD.match(line)
        if field is None:
            raise ParseError(f"not a line of an mlxfwmanager device block: {stripped[:80]!r}", line=i + 1)
        key, value = field.group("key"), field.group("value")
        in_versions = key == "Versions"
        if key in _FIELDS:
            setattr(current, _FIELDS[key], _na(value))
    if not adapters:
        raise ParseError("no 'Device #N:' block: not mlxfwmanager --query output", line=1)
    facts = NodeFacts(adapter_firmware=adapters)
    if partial:
        facts.partial["adapter_firmware"] = "the last line was cut"
    return facts
