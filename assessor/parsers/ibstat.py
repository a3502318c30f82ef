"""``ibstat`` (and ``ibstatus``) output to ``NodeFacts.ib_ports``.

``ibstat`` prints one ``CA 'name'`` block per adapter, its ``Key: value`` lines, then one
``Port N:`` block per port. Indentation is tabs or spaces depending on the build, so the
parser goes by the key, not by the depth. When a device cannot be read, ibstat prints an
``ibpanic:`` line and exits 255; the ports printed before it are still good facts.

Users paste ``ibstatus`` (the sysfs-reading script) just as often, so :func:`parse` accepts
it too and tells the two apart by their first line of output.

What a paste holds before the tool's own first line (the command echoed, ``set -x`` trace lines,
libibumad's ``ibwarn:`` debug lines, the end of the previous command's output) is not ibstat's
and is skipped: the output starts at its first ``CA '...'`` (ibstatus: ``Infiniband device``) line.

>>> facts = parse('''CA 'mlx5_11'
... \tCA type: MT4129
... \tPort 1:
... \t\tState: Down
... \t\tPhysical state: Polling
... \t\tRate: 40
... \t\tLink layer: Ethernet''')
>>> p = facts.ib_ports[0]
>>> (p.ca, p.port, p.state, p.physical_state, p.rate_gbps, p.link_layer, p.ca_type)
('mlx5_11', 1, 'Down', 'Polling', 40.0, 'Ethernet', 'MT4129')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assessor.errors import ParseError
from assessor.facts import IbPort, NodeFacts
from assessor.parsers._text import clean_lines, cut_line

_CA = re.compile(r"^CA:?\s+'(?P<name>[^']+)'\s*$")
_PORT = re.compile(r"^Port\s+(?P<port>\d+)\s*:\s*$")
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_ ]*?)\s*:\s*(?P<value>.*)$")
_IBSTATUS_HEADER = re.compile(r"^Infiniband device\s+'(?P<ca>[^']+)'\s+port\s+(?P<port>\d+)\s+status:\s*$")

# ibstatus prints the sysfs form "4: ACTIVE"; ibstat's words are the vocabulary of the facts.
_STATE_BY_NUMBER = {1: "Down", 2: "Initializing", 3: "Armed", 4: "Active", 5: "ActiveDefer"}
_PHYS_STATE_BY_NUMBER = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "PhyTest",
}


@dataclass
class _Ca:
    name: str
    fields: dict[str, str] = field(default_factory=dict)
    ports: list[IbPort] = field(default_factory=list)


def parse(text: str) -> NodeFacts:
    """Parse ``ibstat`` or ``ibstatus`` output into ``ib_ports``, one IbPort per port."""
    lines = clean_lines(text)
    first = next((line.strip() for line in lines if line.strip()), None)
    if first is None:
        raise ParseError("empty ibstat output")
    start = next((i for i, line in enumerate(lines) if _is_first_line(line)), None)
    if start is None:
        number = next(i for i, line in enumerate(lines, start=1) if line.strip())
        raise ParseError(f"expected a CA 'name' line, got {first!r}", line=number)
    # Lines before the tool's first line of output are the paste's, not ibstat's: blanked, numbers kept.
    lines = [""] * start + lines[start:]
    if _IBSTATUS_HEADER.match(lines[start].strip()):
        return NodeFacts(ib_ports=_parse_ibstatus(lines))
    return NodeFacts(ib_ports=_parse_ibstat(lines, cut_line(text, lines)))


def _is_first_line(line: str) -> bool:
    """ibstat's ``CA 'mlx5_0'`` or ibstatus's ``Infiniband device 'mlx5_0' port 1 status:``."""
    if "CA" not in line and "Infiniband" not in line:
        return False  # the cheap test: a hostile megabyte of other lines costs one scan
    stripped = line.strip()
    return _CA.match(stripped) is not None or _IBSTATUS_HEADER.match(stripped) is not None


def _parse_ibstat(lines: list[str], cut: int = -1) -> list[IbPort]:
    cas: list[_Ca] = []
    port: IbPort | None = None
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("ibpanic:"):
            # ibstat gave up on a device (exit 255): what came before is still valid output.
            break
        if m := _CA.match(line):
            cas.append(_Ca(m["name"]))
            port = None
            continue
        if not cas:
            raise ParseError(f"expected a CA 'name' line, got {line!r}", line=number)
        if m := _PORT.match(line):
            port = IbPort(ca=cas[-1].name, port=int(m["port"]))
            cas[-1].ports.append(port)
            continue
        m = _KEY_VALUE.match(line)
        if m is None:
            if number - 1 == cut:
                break  # the paste ends halfway through this line
            raise ParseError(f"not an ibstat line: {line!r}", line=number)
        key, value = m["key"].lower(), m["value"].strip()
        if port is None:
            cas[-1].fields[key] = value
        else:
            _set_port_field(port, key, value, number)
    ports: list[IbPort] = []
    for ca in cas:
        for p in ca.ports:
            # CA-level facts are copied onto each port so a port stands on its own in checks.
            p.ca_type = ca.fields.get("ca type") or None
            p.firmware = ca.fields.get("firmware version") or None
            p.node_guid = ca.fields.get("node guid") or None
            ports.append(p)
    return ports


def _set_port_field(port: IbPort, key: str, value: str, number: int) -> None:
    if key == "state":
        port.state = value or None
    elif key == "physical state":
        port.physical_state = value or None
    elif key == "rate":
        port.rate_gbps = _number(value)
    elif key == "link layer":
        port.link_layer = value or None
    elif key == "port guid":
        port.port_guid = value or None
    elif key == "base lid":
        port.base_lid = _lid(value, number)
    elif key == "sm lid":
        port.sm_lid = _lid(value, number)
    # LMC, Capability mask and keys of newer releases are not facts we use.


def _parse_ibstatus(lines: list[str]) -> list[IbPort]:
    ports: list[IbPort] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if m := _IBSTATUS_HEADER.match(line):
            ports.append(IbPort(ca=m["ca"], port=int(m["port"])))
            continue
        m = _KEY_VALUE.match(line)
        if m is None or not ports:
            raise ParseError(f"not an ibstatus line: {line!r}", line=number)
        port, key, value = ports[-1], m["key"].lower(), m["value"].strip()
        if key == "state":
            port.state = _numbered(value, _STATE_BY_NUMBER, number)
        elif key == "phys state":
            port.physical_state = _numbered(value, _PHYS_STATE_BY_NUMBER, number)
        elif key == "rate":
            # "200 Gb/sec (4X HDR)": the first number is the port rate in Gb/s.
            port.rate_gbps = _number(value.split()[0]) if value else None
        elif key == "link_layer":
            port.link_layer = value or None
        elif key == "base lid":
            port.base_lid = _lid(value, number)
        elif key == "sm lid":
            port.sm_lid = _lid(value, number)
    return ports


def _numbered(value: str, names: dict[int, str], number: int) -> str:
    """``4: ACTIVE`` -> ``Active`` (ibstat's word), by the number sysfs puts first."""
    m = re.match(r"^(\d+)\s*:\s*(.*)$", value)
    if m is None:
        raise ParseError(f"expected 'N: NAME', got {value!r}", line=number)
    return names.get(int(m[1]), m[2].strip())


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _lid(value: str, number: int) -> int:
    """LIDs are decimal in ibstat and hexadecimal (``0x33bf``) in ibstatus."""
    try:
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        raise ParseError(f"LID is not a number: {value!r}", line=number) from None
