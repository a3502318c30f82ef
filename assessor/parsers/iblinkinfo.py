"""``iblinkinfo`` (every port of the fabric, node by node) to ``NodeFacts.ib_links``.

The default layout is a header per node (``CA: <description>:`` or ``Switch: 0x<guid> <description>:``)
then one line per port: ``[0x<port guid>] <lid> <port>[  ] ==( 4X 106.25 Gbps Active/  LinkUp)==>  <lid>
<port>[  ] "<far end>" ( )``; a port without a cable reads ``==(  Down/ Polling)==>  [  ] "" ( )``. With
``-l`` every line carries its node instead: ``0x<guid> "<description>" <lid> <port>[  ] ==(...)==>  0x<guid>
<lid> <port>[  ] "<far end>" ( )``. Every cable at a CA port is one :class:`~assessor.facts.IbLink`: read
from the CA's own line, or from the switch's line where the paste holds only the switch. In ``-l`` output the
node type is not printed; a node with ports beyond 2, or the description a switch's header gives, is a switch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assessor.errors import ParseError
from assessor.facts import IbLink, NodeFacts
from assessor.parsers._text import clean_lines

_GUID = r"0x[0-9a-fA-F]{1,16}"
_CA_HEAD = re.compile(r"^CA: (?P<desc>.{0,200}):$")
_SWITCH_HEAD = re.compile(rf"^Switch: (?P<guid>{_GUID}) (?P<desc>.{{0,200}}):$")
_LINK = (
    r"==\(\s*(?:(?P<width>\d{1,2}X)\s+(?P<rate>[\d.]{1,12}) Gbps(?: \(FDR10\))?\s+)?"
    r"(?P<state>[A-Za-z]{1,16})/\s*(?P<phys>[A-Za-z]{1,32})\)"
    r"(?: \(HOQ:\d{1,6} VL_Stall:\d{1,6}\))?==>\s+"
)
_REMOTE = (
    rf'(?:(?P<rguid>{_GUID})\s+)?(?:(?P<rlid>\d{{1,6}})\s+(?P<rport>\d{{1,4}})\[\s{{0,2}}\d{{0,4}}\]\s+"(?P<rdesc>[^"]{{0,200}})"'
    r'\s+\((?P<note>[^)]{0,80})\)|\[\s{0,2}\]\s+""\s+\(\s*\)|"Port not available")\s*$'
)
_PORT = re.compile(
    rf"^(?:(?P<guid>{_GUID})\s+)?(?P<lid>\d{{1,6}})\s+(?P<port>\d{{1,4}})\[\s{{0,2}}\d{{0,4}}\]\s+{_LINK}{_REMOTE}"
)
_LINE_PORT = re.compile(
    rf'^(?P<guid>{_GUID})\s+"\s*(?P<desc>[^"]{{0,200}})"\s+(?P<lid>\d{{1,6}})\s+(?P<port>\d{{1,4}})\[\s{{0,2}}\d{{0,4}}\]\s+'
    rf"{_LINK}{_REMOTE}"
)
# iblinkinfo's per-lane speed column -> the speed's name
_SPEEDS = {
    "2.5": "SDR",
    "5.0": "DDR",
    "10.0": "QDR",
    "14.0625": "FDR",
    "25.78125": "EDR",
    "53.125": "HDR",
    "106.25": "NDR",
    "212.5": "XDR",
}


@dataclass
class _Row:
    node: str
    node_guid: str | None
    switch: bool | None  # None: not said (-l output)
    lid: int
    port: int
    match: re.Match[str]


def parse(text: str) -> NodeFacts:
    """Parse iblinkinfo output (default or ``-l``) into ``ib_links``, one IbLink per cabled CA port."""
    lines = clean_lines(text)
    rows: list[_Row] = []
    switch_names: set[str] = set()
    head: tuple[str, str | None, bool] | None = None
    started = False
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if m := _SWITCH_HEAD.match(line):
            head = (m.group("desc"), _norm(m.group("guid")), True)
            switch_names.add(m.group("desc"))
            started = True
            continue
        if m := _CA_HEAD.match(line):
            head = (m.group("desc"), None, False)
            started = True
            continue
        if m := _LINE_PORT.match(line):
            rows.append(
                _Row(m.group("desc"), _norm(m.group("guid")), None, int(m.group("lid")), int(m.group("port")), m)
            )
            started = True
            continue
        if m := _PORT.match(line):
            if head is None:
                raise ParseError("a port line before any CA: or Switch: header", line=number)
            guid = head[1] if head[2] else _norm(m.group("guid")) if m.group("guid") else None
            rows.append(_Row(head[0], guid, head[2], int(m.group("lid")), int(m.group("port")), m))
            continue
        if started:
            raise ParseError(f"not an iblinkinfo line: {line[:80]!r}", line=number)
    if not started:
        first = next(((i, line) for i, line in enumerate(lines, start=1) if line.strip()), None)
        if first is None:
            raise ParseError("empty iblinkinfo output")
        raise ParseError(
            f"expected iblinkinfo output (CA: or Switch: headers), got {first[1].strip()!r}", line=first[0]
        )
    # In -l output a node is a switch when it has ports past a CA's two, or carries a switch's description.
    many_ports = {r.node for r in rows if r.port > 2}
    is_switch = {
        r.node: r.switch if r.switch is not None else (r.node in switch_names or r.node in many_ports) for r in rows
    }
    links: dict[tuple[str, int], IbLink] = {}
    for r in rows:
        m = r.match
        if m.group("rdesc") is None:
            continue  # no cable
        speed = _SPEEDS.get(m.group("rate") or "")
        width = m.group("width")
        if not is_switch[r.node]:
            links[(r.node, r.port)] = IbLink(
                ca=r.node,
                port=r.port,
                peer=m.group("rdesc"),
                peer_port=int(m.group("rport")),
                peer_guid=_norm(m.group("rguid")) if m.group("rguid") else None,
                peer_lid=int(m.group("rlid")),
                guid=r.node_guid,
                lid=r.lid,
                width=width,
                speed=speed,
                state=m.group("state"),
            )
        elif not is_switch.get(m.group("rdesc"), m.group("rdesc") in switch_names or int(m.group("rport")) > 2):
            key = (m.group("rdesc"), int(m.group("rport")))
            links.setdefault(
                key,
                IbLink(
                    ca=key[0],
                    port=key[1],
                    peer=r.node,
                    peer_port=r.port,
                    peer_guid=r.node_guid,
                    peer_lid=r.lid,
                    guid=_norm(m.group("rguid")) if m.group("rguid") else None,
                    lid=int(m.group("rlid")),
                    width=width,
                    speed=speed,
                    state=m.group("state"),
                ),
            )
    return NodeFacts(ib_links=sorted(links.values(), key=lambda link: (link.ca, link.port)))


def _norm(guid: str) -> str:
    return f"0x{int(guid, 16):016x}"
