"""``mlxlink`` (MFT) output to ``NodeFacts.link_phy``: one entry per port it was run on.

mlxlink prints sections: a title, a line of dashes, then ``Key<padding>: value`` lines (``Operational Info``,
``Troubleshooting Info``, ``Module Info`` with ``-m``, ``Physical Counters and BER Info`` with ``-c``). Its
output never names the device: a paste of several runs names each with the command before it
(``$ mlxlink -d mlx5_3 -m -c``, ``sudo mlxlink -d /dev/mst/mt4129_pciconf0 -p 1 -c``), and gpulab's own
capture writes them that way. Each ``Operational Info`` starts a port; sections pasted without it (the
counters alone) still make one, marked partial.

On a terminal mlxlink colours its values (ANSI codes): they are removed. ``N/A`` is unknown. BER is printed
as ``15E-255`` (no error at all) or ``3E-11``.

>>> f = parse('''$ mlxlink -d mlx5_3 -c
...
... Physical Counters and BER Info
... ------------------------------
... Effective Physical BER             : 3E-11
... Raw Physical BER                   : 4E-5
... ''')
>>> (f.link_phy[0].device, f.link_phy[0].effective_ber, f.link_phy[0].raw_ber)
('mlx5_3', 3e-11, 4e-05)
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import LinkPhy, NodeFacts
from assessor.parsers._text import clean_lines, cut_line

_ANSI = re.compile(r"\x1b\[[0-9;]{0,32}[A-Za-z]")
_COMMAND = re.compile(r"(?:^|[\s$#>\]])mlxlink\s(?P<args>[^\n|]{0,400})")
_DEVICE = re.compile(r"(?:-d|--device)[ =](?P<dev>\S+)")
_PORT = re.compile(r"(?:-p|--port)[ =](?P<port>\d{1,3})")
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][^:]{0,60}?)\s*:\s?(?P<value>.*)$")
_DASHES = re.compile(r"^-{3,}\s*$")
_TITLES = frozenset(
    {
        "Operational Info",
        "Supported Info",
        "Troubleshooting Info",
        "Tool Information",
        "Module Info",
        "Physical Counters and BER Info",
        "EYE Opening Info",
        "EYE Opening Info (PAM4)",
        "FEC Capability Info",
        "Port Info",
        "Test Mode Info",
    }
)
_MESSAGE = re.compile(r"^-[EWI]- ")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_BER = re.compile(r"^(?P<mantissa>\d+(?:\.\d+)?)E(?P<exp>[-+]?\d{1,4})$", re.IGNORECASE)


def _ber(value: str, line: int) -> float | None:
    if value in ("N/A", ""):
        return None
    m = _BER.match(value)
    if m is None:
        try:
            return float(value)
        except ValueError:
            raise ParseError(f"not a BER: {value!r}", line=line) from None
    exponent = int(m.group("exp"))
    if exponent < -400:
        return 0.0
    return float(m.group("mantissa")) * 10.0**exponent


def _int(value: str, line: int) -> int | None:
    if value in ("N/A", ""):
        return None
    if not value.isdigit():
        raise ParseError(f"not a count: {value!r}", line=line)
    return int(value)


def _na(value: str) -> str | None:
    return None if value in ("N/A", "") else value


def _fill(port: LinkPhy, section: str, key: str, value: str, line: int) -> None:
    if section == "Operational Info":
        attr = {"State": "state", "Physical state": "physical_state", "Speed": "speed", "Width": "width", "FEC": "fec"}
        if key in attr:
            setattr(port, attr[key], _na(value))
    elif section == "Troubleshooting Info":
        if key == "Status Opcode":
            port.status_opcode = _int(value.split()[0] if value else value, line)
        elif key == "Recommendation":
            port.recommendation = _na(value)
    elif section == "Tool Information" and key == "Firmware Version":
        port.firmware = _na(value)
    elif section == "Module Info":
        attr = {
            "Identifier": "module_identifier",
            "Vendor Name": "module_vendor",
            "Vendor Part Number": "module_part_number",
            "Vendor Serial Number": "module_serial",
            "FW Version": "module_firmware",
        }
        if key in attr:
            setattr(port, attr[key], _na(value))
    elif section == "Physical Counters and BER Info":
        if key == "Time Since Last Clear [Min]":
            if value != "N/A" and not _NUMBER.match(value):
                raise ParseError(f"not a time: {value!r}", line=line)
            port.time_since_clear_min = None if value == "N/A" else float(value)
        elif key == "Effective Physical Errors":
            port.effective_errors = _int(value, line)
        elif key == "Effective Physical BER":
            port.effective_ber = _ber(value, line)
        elif key == "Raw Physical BER":
            port.raw_ber = _ber(value, line)
        elif key == "Raw Physical Errors Per Lane":
            lanes = [v.strip() for v in value.split(",") if v.strip()]
            port.raw_errors_per_lane = [n for n in (_int(v, line) for v in lanes) if n is not None]
        elif key == "Link Down Counter":
            port.link_down = _int(value, line)
        elif key == "Link Error Recovery Counter":
            port.link_recovery = _int(value, line)


def parse(text: str) -> NodeFacts:
    raw = text.splitlines()
    lines = clean_lines(text)
    cut = cut_line(text, lines)
    ports: list[LinkPhy] = []
    partial: list[str] = []
    device: str | None = None
    port_number: int | None = None
    current: LinkPhy | None = None
    section: str | None = None
    seen_operational = False
    for i, original in enumerate(raw):
        if m := _COMMAND.search(original):
            args = m.group("args")
            d, p = _DEVICE.search(args), _PORT.search(args)
            device = d.group("dev").strip("'\"") if d else None
            port_number = int(p.group("port")) if p else 1
            current, section = None, None
            continue
        line = _ANSI.sub("", lines[i] if i < len(lines) else "").strip()
        if not line or _DASHES.match(line) or _MESSAGE.match(line) or line.endswith("..."):
            continue
        if line in _TITLES:
            section = line
            if current is None or (line == "Operational Info" and seen_operational):
                current = LinkPhy(device=device, port=port_number)
                ports.append(current)
                seen_operational = False
            if line == "Operational Info":
                seen_operational = True
            continue
        kv = _KEY_VALUE.match(line)
        if kv is None or section is None or current is None:
            if i == cut:
                partial.append("the last line was cut")
                break
            raise ParseError(f"not mlxlink output: {line[:80]!r}", line=i + 1)
        if i == cut:
            partial.append("the last line was cut")
            break
        _fill(current, section, kv.group("key").strip(), kv.group("value").strip(), i + 1)
    if not ports:
        raise ParseError("no mlxlink section (Operational Info, Physical Counters and BER Info, ...)", line=1)
    facts = NodeFacts(link_phy=ports)
    if partial:
        facts.partial["link_phy"] = "; ".join(partial)
    return facts
