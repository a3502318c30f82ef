"""``ipmitool`` about the BMC: ``lan print`` to ``NodeFacts.bmc_lan``, the users to ``NodeFacts.bmc_users``.

``lan print [CHANNEL]`` is one ``Key : value`` line per LAN parameter, the keys padded to column 24; the
continuation lines of ``Auth Type Enable`` and ``Cipher Suite Priv Max`` start with spaces and a colon. Read:
``IP Address Source`` (``Static Address``, ``DHCP Address``), ``IP Address``, ``Subnet Mask``, ``MAC Address``,
``Default Gateway IP`` and ``802.1q VLAN ID`` (``Disabled`` or the id; older BMCs leave the line out).

The users come in two forms, both read by :func:`parse_users`:

- ``channel getaccess CHANNEL [ID]``: a block per user, ``User ID``, ``User Name``, ``Privilege Level`` and
  ``Enable Status`` (the only form that says whether an account is enabled);
- ``user list [CHANNEL]``: the table ``ID  Name  Callin  Link Auth  IPMI Msg  Channel Priv Limit`` (names may be
  empty; a row's privilege may hold spaces: ``NO ACCESS``, ``Unknown (0x00)``).

>>> parse_lan('IP Address Source       : DHCP Address\\nIP Address              : 10.0.0.5\\n').bmc_lan.ip_source
'dhcp'
>>> table = '''ID  Name             Callin  Link Auth  IPMI Msg   Channel Priv Limit
... 1                    true    false      false      NO ACCESS
... 2   ADMIN            true    true       true       ADMINISTRATOR
... '''
>>> [(u.id, u.name, u.privilege) for u in parse_users(table).bmc_users or []]
[(1, '', 'NO ACCESS'), (2, 'ADMIN', 'ADMINISTRATOR')]
"""

from __future__ import annotations

import ipaddress
import re

from assessor.errors import ParseError
from assessor.facts import BmcLan, BmcUser, NodeFacts
from assessor.parsers._text import clean_lines, cut_line

_FIELD = re.compile(r"^\s{0,8}(?P<key>[A-Za-z0-9+.][\w+./ ]{0,30}?)\s*:\s?(?P<value>.*?)\s*$")
_PROMPTED = re.compile(r"^.{0,160}?[$#%>\]]\s?(?:sudo\s+)?ipmitool(?:\s|$)")
_USER_HEADER = re.compile(r"^\s*ID\s+Name\s+Callin\s+Link Auth\s+IPMI Msg\s+Channel Priv Limit\s*$")
_USER_ROW = re.compile(
    r"^\s*(?P<id>\d{1,3})\s+(?:(?P<name>\S.*?)\s+)?(?:true|false)\s+(?:true|false)\s+(?:true|false)\s+"
    r"(?P<priv>\S.*?)\s*$"
)
_PRIVILEGES = ("CALLBACK", "USER", "OPERATOR", "ADMINISTRATOR", "OEM", "NO ACCESS")
_IP_KEYS = {"IP Address": "ip", "Subnet Mask": "netmask", "Default Gateway IP": "gateway"}


def _lines(text: str) -> tuple[list[str], int]:
    lines = [("" if _PROMPTED.match(line) else line) for line in clean_lines(text)]
    return lines, cut_line(text, lines)


def parse_lan(text: str) -> NodeFacts:
    lines, cut = _lines(text)
    lan = BmcLan()
    seen = False
    for i, line in enumerate(lines):
        m = _FIELD.match(line)
        if not m or i == cut:
            continue
        key, value = m.group("key"), m.group("value")
        if key == "IP Address Source":
            seen = True
            low = value.lower()
            lan.ip_source = "static" if "static" in low else "dhcp" if "dhcp" in low else low or None
        elif key in _IP_KEYS:
            seen = True
            try:
                setattr(lan, _IP_KEYS[key], str(ipaddress.IPv4Address(value)))
            except ValueError:
                raise ParseError(f"{key}: {value!r} is not an IPv4 address", line=i + 1) from None
        elif key == "MAC Address":
            lan.mac = value.lower() or None
        elif key == "802.1q VLAN ID":
            lan.vlan_shown = True
            if value.isdigit():
                lan.vlan = int(value)
            elif value.lower() != "disabled":
                raise ParseError(f"802.1q VLAN ID: {value!r} is neither Disabled nor a VLAN id", line=i + 1)
    if not seen:
        raise ParseError("not ipmitool lan print output: no IP Address Source or IP Address line", line=1)
    return NodeFacts(bmc_lan=lan)


def parse_users(text: str) -> NodeFacts:
    lines, cut = _lines(text)
    users: list[BmcUser] = []
    table = False
    current: BmcUser | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if i == cut:
            # a paste without its final newline: a row is kept only when its privilege is whole
            row = _USER_ROW.match(line) if table else None
            if row and (row.group("priv") in _PRIVILEGES or row.group("priv").startswith("Unknown (0x")):
                users.append(BmcUser(int(row.group("id")), (row.group("name") or "").strip(), row.group("priv")))
            continue
        if _USER_HEADER.match(line):
            table = True
            continue
        if table and (row := _USER_ROW.match(line)):
            users.append(BmcUser(int(row.group("id")), (row.group("name") or "").strip(), row.group("priv")))
            continue
        m = _FIELD.match(line)
        if not m:
            if table:
                raise ParseError(f"not a row of ipmitool user list: {line.strip()[:60]!r}", line=i + 1)
            continue
        key, value = m.group("key"), m.group("value")
        if key == "User ID":
            if not value.isdigit():
                raise ParseError(f"User ID: {value!r} is not a number", line=i + 1)
            current = BmcUser(int(value))
            users.append(current)
        elif current is not None and key == "User Name":
            current.name = value
        elif current is not None and key == "Privilege Level":
            current.privilege = value or None
        elif current is not None and key == "Enable Status":
            if value not in ("enabled", "disabled"):
                raise ParseError(f"Enable Status: {value!r} is neither enabled nor disabled", line=i + 1)
            current.enabled = value == "enabled"
    if not users:
        raise ParseError("not ipmitool user list or channel getaccess output: no user found", line=1)
    return NodeFacts(bmc_users=users)
