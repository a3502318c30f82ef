"""Simulated ``mlxlink`` (MFT): a port's link, its physical counters and BER, and the module in its cage.

Layout from mstflint's ``mlxlink`` (``printutil/mlxlink_cmd_print.cpp``, ``mlxlink_record.cpp``) and real
outputs (``tests/data/corpus/mlxlink``): each section is a blank line, its title, a line of dashes as long as
the title, then ``Key`` padded to 35 columns, ``": "`` and the value.

- ``mlxlink -d DEV [-p 1]``: Operational Info (State, Physical state, Speed, Width, FEC, Loopback Mode, Auto
  Negotiation), Supported Info, Troubleshooting Info (Status Opcode, Group Opcode, Recommendation) and Tool
  Information.
- ``-m``: Module Info (temperature, voltage, per-lane bias and power with their alarm ranges, the EEPROM's
  identifier, vendor, part and serial numbers, the module's FW Version).
- ``-c``: Physical Counters and BER Info, counted since the last clear: a marginal channel keeps producing
  errors, so clearing them (``--pc``) and reading again shows the same BER within seconds.
- ``-e``: the eye opening and physical grade per lane.
- ``--pc``: clears the counters.

A port's channel and module are ``IbPortState.phy`` (:class:`assessor.sim.state.PortPhyState`): healthy it
runs with a pre-FEC (raw) BER FEC corrects fully (effective BER ``15E-255``, mlxlink's way of printing
nothing); the ``ib-ber-high`` fault makes it marginal: raw BER near the FEC limit, uncorrected errors, link
error recoveries and opcode 15, ``Bad signal integrity``.
"""

from __future__ import annotations

import hashlib
import math

from assessor.sim import clock
from assessor.sim.state import IbHcaState, IbPortState, NodeState
from assessor.sim.tools import Session, ToolResult
from assessor.sim.tools.mlxfw import clear_counters, find_device

WIDTH = 37  # PDDR_LINE_LEN: the key, its padding and ": " fill 37 columns
MFT_VERSION = "mft 4.30.1-8"
HEALTHY = "No issue was observed"
RECOMMENDATION = {0: HEALTHY, 15: "Bad signal integrity", 17: "Large number of physical errors (high BER)"}

# IB speed words as mlxlink prints them, with the lane rate in Gb/s and the FEC the speed runs.
_IB = {
    "XDR": (200, "Standard RS-FEC - RS(544,514)"),
    "NDR": (100, "Standard RS-FEC - RS(544,514)"),
    "HDR": (50, "Standard RS-FEC - RS(544,514)"),
    "EDR": (25, "Standard RS-FEC - RS(528,514)"),
}
_IB_MASK = ("NDR", "HDR", "EDR", "FDR", "FDR10", "QDR", "DDR", "SDR")


def _line(key: str, value: object) -> str:
    return f"{key.ljust(WIDTH - 2)}: {value}"


def _section(title: str, rows: list[tuple[str, object]]) -> list[str]:
    return ["", title, "-" * len(title), *(_line(k, v) for k, v in rows)]


def _speed(port: IbPortState) -> str:
    from assessor.sim.tools.ib import port_speed

    return port_speed(port)


def _lanes(port: IbPortState) -> int:
    digits = "".join(c for c in port.width if c.isdigit())
    return int(digits) if digits else 4


def _minutes(state: NodeState, port: IbPortState) -> float:
    """Minutes since the counters were last cleared: at least the few seconds one mlxlink run takes."""
    return max((clock.uptime(state) - port.phy.cleared_at_s) / 60.0, 0.1)


def _ber_value(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _serial(hca: IbHcaState, port: IbPortState) -> str:
    if port.phy.module.serial:
        return port.phy.module.serial
    digest = hashlib.sha256(f"{hca.node_guid}/{port.port}".encode()).hexdigest()
    return f"MT2{int(digest[:6], 16) % 1000:03d}FT{int(digest[6:12], 16) % 100000:05d}"


def module_serial(hca: IbHcaState, port: IbPortState) -> str:
    """The serial number ``mlxlink -m`` prints for the module in ``port``."""
    return _serial(hca, port)


def _operational(port: IbPortState) -> list[tuple[str, object]]:
    speed = _speed(port)
    up = port.physical_state == "LinkUp"
    if port.link_layer == "InfiniBand":
        shown = f"IB-{speed}" if up else "N/A"
        fec = _IB.get(speed, (0, "No FEC"))[1] if up else "N/A"
    else:
        shown = f"{int(port.rate_gbps)}G" if up else "N/A"
        fec = "Standard RS-FEC - RS(544,514)" if up else "N/A"
    return [
        ("State", port.state if up else "Disable" if port.physical_state == "Disabled" else "Polling"),
        ("Physical state", port.physical_state if up else "N/A"),
        ("Speed", shown),
        ("Width", f"{_lanes(port)}x" if up else "N/A"),
        ("FEC", fec),
        ("Loopback Mode", "No Loopback"),
        ("Auto Negotiation", "ON"),
    ]


def _supported(port: IbPortState) -> list[tuple[str, object]]:
    if port.link_layer == "InfiniBand":
        speeds = ",".join(_IB_MASK)
        return [("Enabled Link Speed", f"0x000000ff ({speeds})"), ("Supported Cable Speed", f"0x000000ff ({speeds})")]
    return [
        ("Enabled Link Speed (Ext.)", "0x000017f2 (400G_4X,200G_2X,100G_1X,100G_2X,50G_1X,25G,10G,1G)"),
        ("Supported Cable Speed (Ext.)", "0x000017f2 (400G_4X,200G_2X,100G_1X,100G_2X,50G_1X,25G,10G,1G)"),
    ]


def _troubleshooting(port: IbPortState) -> list[tuple[str, object]]:
    opcode = port.phy.status_opcode
    return [
        ("Status Opcode", opcode),
        ("Group Opcode", "N/A" if opcode == 0 else "PHY FW"),
        ("Recommendation", RECOMMENDATION.get(opcode, "Check the cable and the module")),
    ]


def _module(hca: IbHcaState, port: IbPortState) -> list[tuple[str, object]]:
    m = port.phy.module
    optical = m.fw_version is not None
    lanes = _lanes(port)

    def per_lane(values: list[float], low: float, high: float) -> str:
        shown = (values * lanes)[:lanes]
        return ",".join(f"{v:.3f}" for v in shown) + f" [{low:g}..{high:g}]"

    na = "N/A"
    return [
        ("Temperature [C]", f"{m.temperature_c} [-5..75]" if optical else na),
        ("Voltage [mV]", "3261.2 [2970..3630]" if optical else na),
        ("Bias Current [mA]", per_lane([8.38], 2, 15) if optical else na),
        ("Rx Power Current [dBm]", per_lane(m.rx_power_dbm, -10.41, 6) if optical else na),
        ("Tx Power Current [dBm]", per_lane(m.tx_power_dbm, -8.508, 5) if optical else na),
        ("Identifier", m.identifier),
        ("Cable Technology", "850 nm VCSEL" if optical else "Copper cable, passive, unequalized"),
        ("Cable Type", m.cable_type),
        ("OUI", "Mellanox" if m.vendor in ("NVIDIA", "Mellanox") else "Other"),
        ("Vendor Name", m.vendor),
        ("Vendor Part Number", m.part_number),
        ("Vendor Serial Number", _serial(hca, port)),
        ("Rev", "A4"),
        ("Wavelength [nm]", 850 if optical else na),
        ("Transfer Distance [m]", m.length_m),
        ("FW Version", m.fw_version or na),
        ("Digital Diagnostic Monitoring", "Yes" if optical else "No"),
    ]


def _counters(state: NodeState, port: IbPortState) -> list[tuple[str, object]]:
    phy = port.phy
    minutes = _minutes(state, port)
    lane_gbps = _IB.get(_speed(port), (port.rate_gbps / max(_lanes(port), 1), ""))[0] if port.rate_gbps else 0
    raw_per_lane = round(_ber_value(phy.raw_ber) * lane_gbps * 1e9 * 60 * minutes)
    effective = phy.past_effective_errors + round(phy.effective_errors_per_min * minutes)
    if phy.effective_errors_per_min:
        effective_ber = phy.effective_ber  # the channel's own rate
    elif effective:
        effective_ber = ber_text(effective / (lane_gbps * _lanes(port) * 1e9 * 60 * minutes))
    else:
        effective_ber = "15E-255"
    return [
        ("Time Since Last Clear [Min]", f"{minutes:.1f}"),
        ("Effective Physical Errors", effective),
        ("Effective Physical BER", effective_ber),
        ("Raw Physical Errors Per Lane", ",".join(str(raw_per_lane) for _ in range(_lanes(port)))),
        ("Link Down Counter", phy.link_down),
        ("Link Error Recovery Counter", phy.link_recovery),
        ("Raw Physical BER", phy.raw_ber),
    ]


def ber_text(ber: float) -> str:
    """A BER as mlxlink prints it: an integer coefficient and a power of ten (``3E-11``; ``15E-255`` for none)."""
    if ber <= 0:
        return "15E-255"
    exponent = math.floor(math.log10(ber))
    return f"{int(ber / 10**exponent)}E{exponent}"


def _eye(port: IbPortState) -> list[tuple[str, object]]:
    lanes = _lanes(port)
    bad = port.phy.status_opcode != 0
    grade = 1180 if bad else 3480
    heights = "9,11,8" if bad else "38,42,36"
    return [
        ("Physical Grade", ", ".join(str(grade + 17 * i) for i in range(lanes))),
        ("Height Eye Opening [mV]", ", ".join(heights for _ in range(lanes))),
        ("Phase Eye Opening [psec]", ", ".join(("6" if bad else "21") for _ in range(lanes))),
    ]


USAGE = (
    "NAME:\n    mlxlink\n\nSYNOPSIS:\n    mlxlink [OPTIONS]\n\n"
    "    -d |--device <device>        Perform operation for a specified mst device\n"
    "    -p |--port <port_number>     Port Number\n"
    "    -m |--show_module            Show Module Info\n"
    "    -c |--show_counters          Show Physical Counters and BER Info\n"
    "    -e |--show_eye               Show Eye Opening Info\n"
    "    --pc |--port_counters        Clear the physical counters\n"
)


def mlxlink(args: list[str], session: Session) -> ToolResult:
    """``mlxlink -d DEV [-p N] [-m] [-c] [-e]``, ``mlxlink -d DEV --pc``."""
    if "-h" in args or "--help" in args:
        return ToolResult(0, USAGE)
    device = None
    port_number = 1
    flags: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-d", "--device") and i + 1 < len(args):
            device, i = args[i + 1], i + 2
            continue
        if a in ("-p", "--port") and i + 1 < len(args):
            if not args[i + 1].isdigit():
                return ToolResult(1, "", f"-E- Invalid port number: {args[i + 1]}\n")
            port_number, i = int(args[i + 1]), i + 2
            continue
        if a.startswith("-") and not a.startswith("--") and len(a) > 2:  # -mc, -cm
            flags |= {f"-{c}" for c in a[1:]}
        else:
            flags.add(a)
        i += 1
    long_names = {"--show_module": "-m", "--show_counters": "-c", "--show_eye": "-e", "--port_counters": "--pc"}
    flags = {long_names.get(f, f) for f in flags}
    unknown = sorted(f for f in flags if f not in ("-m", "-c", "-e", "--pc"))
    if unknown:
        return ToolResult(1, "", f"-E- Invalid option {unknown[0]}\n{USAGE}")
    if device is None:
        return ToolResult(1, "", "-E- Please provide a device name (-d)\n")
    state = session.read()
    hca = find_device(state, device)
    if hca is None:
        return ToolResult(1, "", f'-E- Failed to open device: "{device}", No such file or directory\n')
    port = next((p for p in hca.ports if p.port == port_number), None)
    if port is None:
        return ToolResult(1, "", f"-E- Invalid port number: {port_number}\n")
    if "--pc" in flags:
        with session.update() as live:
            target = next(p for p in live.hca(hca.name).ports if p.port == port_number)
            clear_counters(target.phy, clock.uptime(live))
        return ToolResult(0, "\nClearing Counters...\n")
    lines = _section("Operational Info", _operational(port))
    lines += _section("Supported Info", _supported(port))
    lines += _section("Troubleshooting Info", _troubleshooting(port))
    lines += _section(
        "Tool Information",
        [("Firmware Version", hca.firmware), ("amBER Version", "3.6"), ("MFT Version", MFT_VERSION)],
    )
    if "-m" in flags:
        lines += _section("Module Info", _module(hca, port))
    if "-c" in flags:
        lines += _section("Physical Counters and BER Info", _counters(state, port))
    if "-e" in flags:
        lines += _section("EYE Opening Info", _eye(port))
    return ToolResult(0, "\n".join(lines) + "\n")
