"""``dpkg -l`` output (whole, with a pattern, or through ``grep nvidia``) to ``NodeFacts.packages``.

A row is the two status letters (``ii`` installed, ``rc`` removed with its configuration files left, ``un``
never installed, ``iU``/``iF`` half-done), an optional error letter, the name (``:amd64`` on multi-arch
libraries), the version, the architecture and a description. The table's columns fit the terminal it was
printed on: a narrow one cuts a version short (``440.59-0ubuntu0.18``), which is kept as printed. Without the
``Desired=`` header the text is an excerpt (``dpkg -l | grep nvidia``): ``partial`` says so, for a package it
does not list may still be installed. ``un`` rows (known to dpkg, never installed) are left out.

>>> rows = '''ii  nvidia-dkms-535-server  535.129.03-0ubuntu0.22.04.1 amd64 DKMS
... rc  nvidia-utils-525-server 525.147.05-0ubuntu0.22.04.1 amd64 binaries'''
>>> [(p.name, p.status, p.version[:10]) for p in parse(rows).packages]
[('nvidia-dkms-535-server', 'ii', '535.129.03'), ('nvidia-utils-525-server', 'rc', '525.147.05')]
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import DebPackage, NodeFacts
from assessor.parsers._text import clean_lines, cut_line

_HEADER = re.compile(r"^(?:Desired=|\| Status=|\|/ Err\?=|\|\|/ Name\b|\+\+\+-=)")
_ROW = re.compile(
    r"^(?P<status>[uihrp][ncUHFWti])(?P<err>[R ]?)\s+(?P<name>[a-z0-9][a-z0-9+.\-]*)(?::(?P<qual>[a-z0-9]+))?"
    r"(?:\s+(?P<version>\S+)(?:\s+(?P<arch>\S+)(?:\s+(?P<description>.*))?)?)?\s*$"
)
_STDERR = re.compile(r"^dpkg-query: ")


def parse(text: str) -> NodeFacts:
    """Parse ``dpkg -l`` output into ``packages``."""
    lines = clean_lines(text)
    last = cut_line(text, lines)
    header = False
    packages: list[DebPackage] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        if not line.strip() or _STDERR.match(line):
            continue
        if _HEADER.match(line):
            header = True
            continue
        m = _ROW.match(line)
        if m is None:
            if number - 1 == last and packages:
                break  # the paste ends halfway through this row
            raise ParseError(f"not a dpkg -l row: {line[:80]!r}", line=number)
        if m.group("status") == "un":
            continue
        if number - 1 == last and m.group("arch") is None:
            break  # a row cut before its architecture: even its name may be cut short
        version = m.group("version")
        if version == "<none>":
            version = None
        arch = m.group("qual") or (m.group("arch") if m.group("arch") not in (None, "<none>") else None)
        packages.append(DebPackage(name=m.group("name"), status=m.group("status"), version=version, arch=arch))
    if not packages and not header:
        raise ParseError("empty dpkg -l output: no package rows")
    facts = NodeFacts(packages=packages)
    if not header:
        facts.partial["packages"] = (
            "no 'Desired=Unknown/Install/...' header: an excerpt such as dpkg -l | grep nvidia, so a package it "
            "does not list may still be installed"
        )
    elif last >= 0:
        facts.partial["packages"] = "the paste ends in the middle of a row: the packages after it are not there"
    return facts
