"""Captures that run once per network adapter: ``mlxlink -d DEV -m -c`` for every adapter ``ibstat`` lists.

mlxlink reads one port of one device per run and its output never names the device, so the capture runs it
for each ``CA 'mlx5_N'`` of the snapshot's ``ibstat.txt`` and writes each run after its command, as a prompt
line (``$ mlxlink -d mlx5_3 -m -c``): the form people paste, which the ``mlxlink`` parser reads the device
from. It loads nothing on the node (mlxlink reads registers), but it needs MFT and root, so it runs on
request (the ``mlxlink`` active test; a lab with a ``cable.*`` check asks for it).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from assessor.capture.snapshot import Source

FILE = "mlxlink.txt"
TEST = "mlxlink"
_CA = re.compile(r"^CA '(?P<name>[\w.-]{1,64})'[ \t]*$", re.MULTILINE)


def adapters(ibstat_text: str | None) -> list[str]:
    """The adapters an ibstat output lists, in its order."""
    return _CA.findall(ibstat_text or "")


def argv(adapter: str) -> tuple[str, ...]:
    """The mlxlink command line run for ``adapter``."""
    return ("mlxlink", "-d", adapter, "-m", "-c")


def capture_mlxlink(run: Callable[[tuple[str, ...]], Source], ibstat: Source | None) -> Source:
    """Run mlxlink (through ``run``, one argv to its source) on each adapter of ``ibstat``; a gap (``missing``)
    when there is none or no mlxlink."""
    names = adapters(ibstat.text if ibstat is not None else None)
    if not names:
        return Source(FILE, command="mlxlink -d DEV -m -c", status="missing", message="ibstat lists no adapter")
    parts: list[str] = []
    for name in names:
        line = argv(name)
        last = run(line)
        if last.status == "missing":
            return last
        parts.append(f"$ {shlex.join(line)}\n{last.text or ''}")
    src = Source(FILE, command="for each adapter: mlxlink -d DEV -m -c", exit_code=0)
    src.text = "".join(p if p.endswith("\n") else p + "\n" for p in parts)
    return src
