"""The kernel's command line: what the running kernel booted with, and what GRUB will boot it with next.

Two outputs, one subject:

- ``cat /proc/cmdline``: the command line the running kernel was booted with (one line, ``BOOT_IMAGE=...``
  first when GRUB booted it). Fills ``kernel_cmdline``.
- ``cat /etc/default/grub``: the shell-style settings ``update-grub`` turns into ``/boot/grub/grub.cfg``. The
  line the next boot gets is ``GRUB_CMDLINE_LINUX`` then ``GRUB_CMDLINE_LINUX_DEFAULT`` (the default entry
  carries both). Fills ``grub_cmdline``.

:func:`iommu_mode` reads an IOMMU mode from a command line, the way the kernel's parameters ask for it:
``iommu=pt`` (DMA passthrough: devices use physical addresses, GPU peer-to-peer is not translated),
``intel_iommu=off`` / ``amd_iommu=off`` / ``iommu=off`` (no IOMMU), ``intel_iommu=on`` / ``amd_iommu=on``
without ``pt`` (DMA translated through the IOMMU). A line that names none of them leaves the choice to the
kernel's build default: :func:`iommu_mode` says ``None``, it does not guess.
"""

from __future__ import annotations

import re
import shlex

from assessor.errors import ParseError
from assessor.facts import NodeFacts
from assessor.parsers._text import clean_lines

PASSTHROUGH = "passthrough"
OFF = "off"
TRANSLATED = "translated"
MODES = (PASSTHROUGH, OFF, TRANSLATED)

_GRUB_KEYS = ("GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT")
_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def iommu_mode(cmdline: str) -> str | None:
    """The IOMMU mode ``cmdline`` asks for (:data:`MODES`), None when it leaves it to the kernel's default.

    The last word for a parameter wins, as the kernel parses them left to right.
    """
    params: dict[str, str] = {}
    for word in cmdline.split():
        name, _, value = word.partition("=")
        if name in ("iommu", "intel_iommu", "amd_iommu"):
            params[name] = value.lower()
        elif name == "iommu.passthrough":  # the generic parameter (Arm servers): 1 passthrough, 0 translated
            params["iommu"] = "pt" if value in ("1", "y", "on") else "nopt"
    iommu = params.get("iommu", "")
    vendor = [v for k, v in params.items() if k != "iommu"]
    if iommu == "off" or any(v.split(",")[0] == "off" for v in vendor):
        return OFF
    if iommu == "pt":
        return PASSTHROUGH
    if any(v.split(",")[0] == "on" for v in vendor) or iommu in ("nopt", "force"):
        return TRANSLATED
    return None


def parse_cmdline(text: str) -> NodeFacts:
    """``cat /proc/cmdline``: its first non-blank line, the words single-spaced."""
    for number, line in enumerate(clean_lines(text), 1):
        if not line.strip():
            continue
        if "=" not in line and not line.strip().startswith("BOOT_IMAGE"):
            shown = line.strip()[:57]
            raise ParseError(f"not /proc/cmdline: it starts {shown!r}, not kernel parameters", line=number)
        return NodeFacts(kernel_cmdline=" ".join(line.split()))
    raise ParseError("empty /proc/cmdline")


def grub_cmdline(text: str) -> str | None:
    """The kernel parameters ``/etc/default/grub``'s default entry gets (LINUX then LINUX_DEFAULT).

    Reads the file as the shell that ``update-grub`` sources it with would, for what such files hold:
    ``KEY="value"``, ``KEY='value'``, ``KEY=value``, ``$KEY``/``${KEY}`` of a key set earlier; comments and
    other lines are skipped. None when neither key is set. ValueError (with the 1-based line) for a value
    whose quotes do not close.
    """
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        m = _ASSIGN.match(line)
        if not m or line.lstrip().startswith("#"):
            continue
        key, raw = m.groups()
        try:
            words = shlex.split(raw, comments=True, posix=True)
        except ValueError:
            raise ValueError(f"line {number}: {key}: unclosed quote") from None
        single = raw.strip().startswith("'")
        value = " ".join(words)
        if not single:
            value = _VAR.sub(lambda v: values.get(v.group(1) or v.group(2), ""), value)
        values[key] = value
    if not any(k in values for k in _GRUB_KEYS):
        return None
    return " ".join(" ".join(values.get(k, "") for k in _GRUB_KEYS).split())


def parse_grub_default(text: str) -> NodeFacts:
    """``cat /etc/default/grub``: the kernel parameters its default boot entry gets."""
    lines = clean_lines(text)
    try:
        line = grub_cmdline("\n".join(lines))
    except ValueError as exc:
        number = int(str(exc).split(":")[0].split()[1])
        raise ParseError(f"/etc/default/grub: {str(exc).split(': ', 1)[1]}", line=number) from None
    if line is None:
        raise ParseError("no GRUB_CMDLINE_LINUX or GRUB_CMDLINE_LINUX_DEFAULT in this /etc/default/grub")
    return NodeFacts(grub_cmdline=line)
