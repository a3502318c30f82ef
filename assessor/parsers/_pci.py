"""PCI bus-id normalisation shared by the parsers.

nvidia-smi prints GPU bus ids with an 8-digit domain (``00000000:07:00.0``), the kernel and
lspci with a 4-digit one (``0000:07:00.0``), some tools without a domain (``07:00.0``) and
kernel Xid lines without the function (``0000:07:00``). Checks compare bus ids across sources,
so every parser hands them over in the one nvidia-smi form.
"""

from __future__ import annotations

import re

_BUS_ID = re.compile(
    r"""^(?:(?P<domain>[0-9a-f]{1,8}):)?   # domain, any width; absent means 0
        (?P<bus>[0-9a-f]{1,2}):
        (?P<device>[0-9a-f]{1,2})
        (?:\.(?P<function>[0-7]))?$       # absent in kernel Xid lines: GPUs are function 0
    """,
    re.IGNORECASE | re.VERBOSE,
)


def normalize_bus_id(value: str) -> str | None:
    """``0000:07:00.0``, ``00000000:07:00.0``, ``07:00.0``, ``PCI:0000:07:00`` → ``00000000:07:00.0``.

    Hex digits come back upper case as nvidia-smi prints them. Returns None for anything
    that is not a PCI address (``N/A``, an empty string).
    """
    text = value.strip()
    # Prefixes some tools glue on: "PCI:" in kernel logs, "GPU" in nvidia-smi error lines.
    for prefix in ("PCI:", "GPU"):
        if text.upper().startswith(prefix):
            text = text[len(prefix) :]
    match = _BUS_ID.match(text)
    if match is None:
        return None
    domain = int(match["domain"] or "0", 16)
    bus = int(match["bus"], 16)
    device = int(match["device"], 16)
    function = int(match["function"] or "0")
    return f"{domain:08X}:{bus:02X}:{device:02X}.{function}"
