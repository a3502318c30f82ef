"""PCI addresses, the one way gpulab reads them.

nvidia-smi prints GPU bus ids with an 8-digit domain (``00000000:07:00.0``), the kernel and lspci
with a 4-digit one (``0000:07:00.0``), some tools without a domain (``07:00.0``), kernel Xid lines
without the function (``0000:07:00``) and NCCL in brackets. Parsers hand bus ids over in the one
nvidia-smi form (:func:`normalize_bus_id`); checks compare them by bus and device (:func:`bus_key`).
"""

from __future__ import annotations

import re

_BUS_ID = re.compile(
    r"""(?:(?P<domain>[0-9a-f]{1,8}):)?   # domain, any width; absent means 0
        (?P<bus>[0-9a-f]{1,2}):
        (?P<device>[0-9a-f]{1,2})
        (?:\.(?P<function>[0-7]))?$       # absent in kernel Xid lines: GPUs are function 0
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _parts(value: str) -> re.Match[str] | None:
    text = value.strip().strip("[]()")
    # Prefixes some tools glue on: "PCI:" in kernel logs, "GPU" in nvidia-smi error lines.
    for prefix in ("PCI:", "GPU"):
        if text.upper().startswith(prefix):
            text = text[len(prefix) :].strip()
    return _BUS_ID.match(text)


def normalize_bus_id(value: str) -> str | None:
    """``0000:07:00.0``, ``00000000:07:00.0``, ``07:00.0``, ``PCI:0000:07:00`` → ``00000000:07:00.0``.

    Hex digits come back upper case as nvidia-smi prints them. None for anything that is not a
    PCI address (``N/A``, an empty string).
    """
    match = _parts(value)
    if match is None:
        return None
    domain = int(match["domain"] or "0", 16)
    function = int(match["function"] or "0")
    return f"{domain:08X}:{int(match['bus'], 16):02X}:{int(match['device'], 16):02X}.{function}"


def bus_key(bus_id: str | None) -> str | None:
    """``bus:device`` in lower-case hex, the part of a PCI address every tool prints."""
    if not bus_id:
        return None
    match = _parts(bus_id)
    if match is None:
        return None
    return f"{int(match['bus'], 16):02x}:{int(match['device'], 16):02x}"
