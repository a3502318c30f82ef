"""``ibv_devinfo`` (and ``ibv_devinfo -v``) output to ``NodeFacts.ib_devices``.

One ``hca_id:`` block per device, its ``key: value`` lines, then one ``port: N`` block per
port. ``-v`` adds many device capabilities, flag lists on lines of their own (no colon)
and, per port, ``active_width``, ``active_speed`` and ``phys_state``, from which the port
rate follows. Pasted excerpts often start in the middle of a device: lines before the
first ``hca_id:`` belong to a device we cannot name, and are skipped.

>>> facts = parse('''hca_id:\tmlx5_0
... \ttransport:\t\t\tInfiniBand (0)
... \tvendor_part_id:\t\t\t4129
... \t\tport:\t1
... \t\t\tstate:\t\t\tPORT_ACTIVE (4)
... \t\t\tport_lid:\t\t1691
... \t\t\tactive_width:\t\t4X (2)
... \t\t\tactive_speed:\t\t100.0 Gbps (128)
... \t\t\tphys_state:\t\tLINK_UP (5)''')
>>> dev = facts.ib_devices[0]
>>> (dev.hca_id, dev.vendor_part_id, dev.ports[0].state, dev.ports[0].base_lid, dev.ports[0].rate_gbps)
('mlx5_0', 4129, 'Active', 1691, 400.0)
>>> dev.ports[0].physical_state
'LinkUp'
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import IbDevice, IbPort, NodeFacts
from assessor.parsers._text import clean_lines

_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][\w ]*?)\s*:\s*(?P<value>.*)$")
# "PORT_ACTIVE (4)", "LINK_UP (5)", "4X (2)": the number in parentheses is the verbs enum.
_ENUM = re.compile(r"\((?P<number>\d+)\)\s*$")

# Port states and physical states in ibstat's words, by their verbs enum value.
_STATE_BY_NUMBER = {0: "Nop", 1: "Down", 2: "Initializing", 3: "Armed", 4: "Active", 5: "ActiveDefer"}
_PHYS_STATE_BY_NUMBER = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "PhyTest",
}
_LANES_BY_WIDTH_ENUM = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}


def parse(text: str) -> NodeFacts:
    """Parse ``ibv_devinfo`` output into ``ib_devices``, each with its ports."""
    if not text.strip():
        raise ParseError("empty ibv_devinfo output")
    devices: list[IbDevice] = []
    port: IbPort | None = None
    widths: dict[int, str] = {}  # id(port) -> active_width value, until active_speed is known
    speeds: dict[int, str] = {}
    for number, raw in enumerate(clean_lines(text), start=1):
        line = raw.strip()
        if not line:
            continue
        m = _KEY_VALUE.match(line)
        if m is None:
            # -v prints capability flag names on lines of their own: not facts we use.
            continue
        key, value = m["key"].strip().lower(), m["value"].strip()
        if key == "hca_id":
            devices.append(IbDevice(hca_id=value))
            port = None
            continue
        if not devices:
            continue  # the tail of a device the excerpt does not name
        if key == "port" and value.isdigit():
            port = IbPort(ca=devices[-1].hca_id, port=int(value))
            devices[-1].ports.append(port)
            continue
        if port is None:
            _set_device_field(devices[-1], key, value, number)
        elif key == "active_width":
            widths[id(port)] = value
        elif key == "active_speed":
            speeds[id(port)] = value
        else:
            _set_port_field(port, key, value, number)
    if not devices and "No IB devices found" not in text:
        raise ParseError("not ibv_devinfo output: no hca_id: line names a device")
    for device in devices:
        for p in device.ports:
            p.firmware = device.fw_ver
            p.node_guid = device.node_guid
            p.rate_gbps = _rate(widths.get(id(p)), speeds.get(id(p)))
    return NodeFacts(ib_devices=devices)


def ports_of(devices: list[IbDevice]) -> list[IbPort]:
    """Every port of ``devices``, whatever its state (PORT_DOWN, PORT_INIT, PORT_ARMED included).

    The node's port list when ibstat was not captured; the snapshot builder decides whether to
    use it (a broken ibstat must stay an error, not be replaced silently).
    """
    return [port for device in devices for port in device.ports]


def _set_device_field(device: IbDevice, key: str, value: str, number: int) -> None:
    value_or_none = value or None  # a truncated capture can end on "node_guid:"
    if key == "transport":
        device.transport = value_or_none
    elif key == "fw_ver":
        device.fw_ver = value_or_none
    elif key == "node_guid":
        device.node_guid = value_or_none
    elif key == "sys_image_guid":
        device.sys_image_guid = value_or_none
    elif key == "vendor_id":
        device.vendor_id = value_or_none
    elif key == "vendor_part_id":
        device.vendor_part_id = _int(value, key, number)
    elif key == "hw_ver":
        device.hw_ver = value_or_none
    elif key == "board_id":
        device.board_id = value_or_none
    elif key == "phys_port_cnt":
        device.phys_port_cnt = _int(value, key, number)


def _set_port_field(port: IbPort, key: str, value: str, number: int) -> None:
    if key == "state":
        port.state = _enum_name(value, _STATE_BY_NUMBER, prefix="PORT_")
    elif key == "phys_state":
        port.physical_state = _enum_name(value, _PHYS_STATE_BY_NUMBER, prefix="")
    elif key == "link_layer":
        port.link_layer = value or None
    elif key == "port_lid":
        port.base_lid = _int(value, key, number)
    elif key == "sm_lid":
        port.sm_lid = _int(value, key, number)


def _enum_name(value: str, names: dict[int, str], *, prefix: str) -> str | None:
    """``PORT_ACTIVE (4)`` -> ``Active``; an unknown number keeps the printed word."""
    if not value:
        return None
    m = _ENUM.search(value)
    if m and int(m["number"]) in names:
        return names[int(m["number"])]
    word = _ENUM.sub("", value).strip().removeprefix(prefix)
    return word.replace("_", " ").title().replace(" ", "")


def _rate(width: str | None, speed: str | None) -> float | None:
    """Port rate in Gb/s: lanes x per-lane speed (``4X (2)`` and ``100.0 Gbps (128)`` -> 400)."""
    if not width or not speed:
        return None
    w = _ENUM.search(width)
    lanes = _LANES_BY_WIDTH_ENUM.get(int(w["number"])) if w else None
    if lanes is None:
        lanes_m = re.match(r"^(\d+)X\b", width)
        lanes = int(lanes_m[1]) if lanes_m else None
    per_lane = re.match(r"^([\d.]+)\s*Gbps", speed)
    if lanes is None or per_lane is None:
        return None
    return lanes * float(per_lane[1])


def _int(value: str, key: str, number: int) -> int | None:
    if not value:
        return None
    try:
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        raise ParseError(f"{key} is not a number: {value!r}", line=number) from None
