"""``ibnetdiscover`` (the fabric's topology file) to ``NodeFacts.ib_links``.

The topology file lists each node after its ``vendid=``/``devid=``/``sysimgguid=`` lines: a switch as
``Switch <ports> "S-<guid>" # "<description>" enhanced port 0 lid <lid> lmc 0`` followed by one line per
cabled port (``[port] "H-<guid>"[port](<port guid>) # "<description>" lid <lid> 4xNDR``), a CA as
``Ca <ports> "H-<guid>" # "<description>"`` followed by its ports
(``[port](<port guid>) "S-<guid>"[port] # lid <lid> lmc 0 "<switch>" lid <lid> 4xNDR``). Every cable from a
CA port is one :class:`~assessor.facts.IbLink`, whether the paste holds the CA's block, the switch's, or both
(the CA's own block wins where they disagree). Comments (``#``), chassis lines and ``-f``'s ``s=.. w=.. v=..``
are read past; what a paste holds before the topology is skipped. A line in a node block that is none of
these is a ParseError naming it.

The port lines start with ``[N]``, which the shared paste cleaner takes for an MPI rank tag: this parser
reads those lines as printed and cleans only the others.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assessor.errors import ParseError
from assessor.facts import IbLink, NodeFacts
from assessor.parsers._text import check_input, clean_lines, cut_line

_GUID = r"[0-9a-fA-F]{1,16}"
_EXT = r"(?:\[ext \d{1,4}\])?"
_TAIL = r"(?:\s+s=\d{1,3}\s+w=\d{1,3}\s+v=\d{1,3})?(?:\s+slot \d{1,4}|\s+\(scp\))?\s*$"
_LINK = r"(?P<width>\d{1,2}x)(?P<speed>[A-Z]{3}\d{0,2})"
_SWITCH = re.compile(
    rf'^Switch\s+(?P<ports>\d{{1,4}})\s+"S-(?P<guid>{_GUID})"\s+#\s*"(?P<desc>[^"]{{0,200}})"'
    r"(?:\s+(?:base|enhanced)\s+port\s+0\s+lid\s+(?P<lid>\d{1,6})\s+lmc\s+\d{1,3})?"
)
_CA = re.compile(rf'^(?P<type>Ca|Rt)\s+(?P<ports>\d{{1,4}})\s+"[HR]-(?P<guid>{_GUID})"\s+#\s*"(?P<desc>[^"]{{0,200}})"')
_SWITCH_PORT = re.compile(
    rf'^\[(?P<port>\d{{1,4}})\]{_EXT}\s+"(?P<kind>[SHR])-(?P<guid>{_GUID})"\[(?P<peer_port>\d{{1,4}})\]{_EXT}'
    rf'(?:\((?P<port_guid>{_GUID})\))?\s*#\s*"(?P<desc>[^"]{{0,200}})"\s+lid\s+(?P<lid>\d{{1,6}})\s+{_LINK}{_TAIL}'
)
_CA_PORT = re.compile(
    rf'^\[(?P<port>\d{{1,4}})\]\((?P<port_guid>{_GUID})\)\s+"(?P<kind>[SHR])-(?P<guid>{_GUID})"\[(?P<peer_port>\d{{1,4}})\]'
    rf"{_EXT}(?:\s*\((?P<peer_port_guid>{_GUID})\))?\s*#\s*lid\s+(?P<own_lid>\d{{1,6}})\s+lmc\s+\d{{1,3}}\s+"
    rf'"(?P<desc>[^"]{{0,200}})"\s+lid\s+(?P<lid>\d{{1,6}})\s+{_LINK}{_TAIL}'
)
_IDS = re.compile(rf"^(?:vendid|devid|sysimgguid|switchguid|caguid|rtguid)=0x{_GUID}(?:\({_GUID}\))?(?:\s*#.*)?$")
_OTHER = re.compile(r"^(?:#.*|Non-Chassis Nodes|Chassis \d{1,6}.*|Hostname: .*)$")
_PORT_LINE = re.compile(r"^\s{0,8}\[\d{1,4}\]")


@dataclass
class _Node:
    kind: str  # switch, ca
    guid: str
    desc: str
    lid: int | None = None


def _guid(text: str) -> str:
    return f"0x{int(text, 16):016x}"


_START = re.compile(
    r'^[ \t]*(?:(?:Switch|Ca|Rt)[ \t]+\d{1,4}[ \t]+"[SHR]-|(?:vendid|switchguid|caguid)=0x)', re.MULTILINE
)
_CONTENT = re.compile(r"\S")


def _lines(text: str, cleaned: list[str], start: int) -> list[str]:
    """The cleaned lines from ``start`` on (blank before it), port lines (``[N]...``) kept as printed."""
    raw = text.splitlines()
    out = [""] * start
    for i in range(start, len(cleaned)):
        before = raw[i] if i < len(raw) else ""
        out.append(before.strip() if _PORT_LINE.match(before) else cleaned[i].strip())
    return out


def parse(text: str) -> NodeFacts:
    """Parse an ibnetdiscover topology file into ``ib_links``, one IbLink per cabled CA port."""
    check_input(text)
    cleaned = clean_lines(text)
    body = "\n".join(cleaned)
    found = _START.search(body)
    if found is None:
        content = _CONTENT.search(body)
        if content is None:
            raise ParseError("empty ibnetdiscover output")
        number = body.count("\n", 0, content.start())
        first = cleaned[number].strip()[:80]
        raise ParseError(f"expected an ibnetdiscover topology (Switch or Ca lines), got {first!r}", line=number + 1)
    start = body.count("\n", 0, found.start())
    lines = _lines(text, cleaned, start)
    from_ca: dict[tuple[str, int], IbLink] = {}
    from_switch: dict[tuple[str, int], IbLink] = {}
    node: _Node | None = None
    cut = cut_line(text, cleaned)
    partial: dict[str, str] = {}
    for number, line in enumerate(lines[start:], start=start + 1):
        if not line or _IDS.match(line) or _OTHER.match(line):
            continue
        if number - 1 == cut and not (_SWITCH_PORT.match(line) or _CA_PORT.match(line)):
            partial["ib_links"] = f"the output is cut at line {number}: nodes after it are not in it"
            continue
        if m := _SWITCH.match(line):
            lid = m.group("lid")
            node = _Node("switch", _guid(m.group("guid")), m.group("desc"), int(lid) if lid else None)
            continue
        if m := _CA.match(line):
            node = _Node("ca", _guid(m.group("guid")), m.group("desc"))
            continue
        if node is None:
            raise ParseError(f"a port line before any Switch or Ca line: {line[:80]!r}", line=number)
        if node.kind == "switch" and (m := _SWITCH_PORT.match(line)):
            if m.group("kind") == "S":
                continue  # switch to switch: no CA's cable
            key = (_guid(m.group("guid")), int(m.group("peer_port")))
            from_switch.setdefault(
                key,
                IbLink(
                    ca=m.group("desc"),
                    port=int(m.group("peer_port")),
                    peer=node.desc,
                    peer_port=int(m.group("port")),
                    peer_guid=node.guid,
                    peer_lid=node.lid,
                    guid=key[0],
                    lid=int(m.group("lid")),
                    width=m.group("width").upper(),
                    speed=m.group("speed"),
                ),
            )
            continue
        if node.kind == "ca" and (m := _CA_PORT.match(line)):
            key = (node.guid, int(m.group("port")))
            from_ca[key] = IbLink(
                ca=node.desc,
                port=int(m.group("port")),
                peer=m.group("desc"),
                peer_port=int(m.group("peer_port")),
                peer_guid=_guid(m.group("guid")),
                peer_lid=int(m.group("lid")),
                guid=node.guid,
                lid=int(m.group("own_lid")),
                width=m.group("width").upper(),
                speed=m.group("speed"),
            )
            continue
        what = "switch" if node.kind == "switch" else "CA"
        raise ParseError(f"not a port line of the {what} {node.desc!r}: {line[:80]!r}", line=number)
    links = {**from_switch, **from_ca}
    return NodeFacts(ib_links=sorted(links.values(), key=lambda link: (link.ca, link.port)), partial=partial)
