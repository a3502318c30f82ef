"""Small system files: ``/proc/driver/nvidia/version``, ``/etc/os-release``, ``uname -a``.

>>> d = parse_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  "
...                          "Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025").driver
>>> (d.version, d.open_kernel_module)
('570.158.01', True)
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import DriverInfo, NodeFacts
from assessor.parsers._text import clean_lines

# "NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 ..." (proprietary) and
# "NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build ..." (open).
_NVRM = re.compile(r"^NVRM version:\s*(?P<module>.*?Kernel Module(?: for \S+)?)\s+(?P<version>\d+(?:\.\d+)+)\b")
_OS_RELEASE_LINE = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")


def parse_driver_version(text: str) -> NodeFacts:
    """Parse ``/proc/driver/nvidia/version`` into ``driver``."""
    if not text.strip():
        raise ParseError("empty /proc/driver/nvidia/version")
    for raw in clean_lines(text):
        line = raw.strip()
        if m := _NVRM.match(line):
            version = m["version"]
            return NodeFacts(
                driver=DriverInfo(
                    version=version,
                    kernel_module=line,
                    kernel_module_version=version,
                    open_kernel_module="Open Kernel Module" in m["module"],
                )
            )
    if "No such file" in text:
        # The file exists only while the nvidia module is loaded.
        raise ParseError("/proc/driver/nvidia/version is missing: the nvidia kernel module is not loaded", line=1)
    raise ParseError("no 'NVRM version: ... Kernel Module <version>' line", line=1)


def parse_os_release(text: str) -> NodeFacts:
    """Parse ``/etc/os-release`` into the ``os_release`` dict, values unquoted.

    >>> parse_os_release('NAME="Ubuntu"\\nVERSION_ID="22.04"\\nID=ubuntu').os_release
    {'NAME': 'Ubuntu', 'VERSION_ID': '22.04', 'ID': 'ubuntu'}
    """
    values: dict[str, str] = {}
    for number, raw in enumerate(clean_lines(text), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _OS_RELEASE_LINE.match(line)
        if m is None:
            raise ParseError(f"not an os-release KEY=value line: {line!r}", line=number)
        values[m["key"]] = _unquote(m["value"].strip(), number)
    if not values:
        raise ParseError("empty os-release")
    return NodeFacts(os_release=values)


def _unquote(value: str, number: int) -> str:
    """Shell-style quoting as os-release(5) allows: "..." with backslash escapes, or '...'."""
    if value[:1] in ("'", '"'):
        quote = value[0]
        if len(value) < 2 or value[-1] != quote:
            raise ParseError(f"unterminated quoted value: {value!r}", line=number)
        inner = value[1:-1]
        if quote == '"':
            inner = re.sub(r'\\([\\"$`])', r"\1", inner)
        return inner
    return value


# ``uname -a`` (or ``uname -s -r``) starts with the kernel's name; ``uname -r`` alone is a release.
_UNAME = re.compile(
    r"^(?:(?:Linux|GNU|Darwin|FreeBSD|NetBSD|OpenBSD|DragonFly|SunOS|AIX|HP-UX|CYGWIN\S*|MINGW\S*|MSYS\S*)(?:\s|$)"
    r"|\d+\.\d+(?:\.\d+)?\S*$)"
)


def parse_uname(text: str) -> NodeFacts:
    """``uname -a`` output: its first non-blank line, stripped. A line that is not uname's (it names no
    kernel such as ``Linux``, and is no bare release) is a ParseError: it says nothing of the node."""
    number, line = next(((n, line.strip()) for n, line in enumerate(clean_lines(text), 1) if line.strip()), (0, None))
    if line is None:
        raise ParseError("empty uname output")
    if not _UNAME.match(line):
        shown = line if len(line) <= 60 else line[:57] + "..."
        raise ParseError(f"not uname output: it starts {shown!r}, not a kernel name such as Linux", line=number)
    return NodeFacts(uname=line)
