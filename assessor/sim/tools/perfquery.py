"""Simulated ``perfquery`` (infiniband-diags, rdma-core): the port counters of a local InfiniBand port.

Layout from rdma-core's ``infiniband-diags/perfquery.c`` and ``libibmad/dump.c``, checked against a real
``perfquery -x`` (``tests/data/corpus/perfquery``):

- ``perfquery`` [``-C CA`` ``-P PORT``]: ``# Port counters: Lid L port P (CapMask: 0x5300)`` then the
  PortCounters fields, each ``Name:`` padded with dots to column 33 (QP1Dropped before VL15Dropped, as
  ``mad_dump_perfcounters`` prints them). The 32-bit data and packet counters stop at 4294967295 on a busy
  port, as real HCAs show them.
- ``perfquery -x``: ``# Port extended counters: ... (CapMask: 0x5300 CapMask2: 0x0000002)`` and the 64-bit
  PortCountersExtended fields, then the error counters (CapMask2 bit 1: additional counters supported).
- Without ``-C`` the first adapter with an active InfiniBand port; without ``-P`` its first port.
- A port that is not Active has no LID to query: the PMA query fails, and perfquery says so the way
  ``IBEXIT`` does: ``perfquery: iberror: failed: classportinfo query`` (exit 255). An Ethernet (RoCE) port
  has no PMA either.

The error counters are 0 (the simulator models link faults as port states, not as counter values); the
traffic counters are stable per host, adapter and port.
"""

from __future__ import annotations

import hashlib

from assessor.sim.state import IbHcaState, IbPortState, NodeState
from assessor.sim.tools import Session, ToolResult

_CAP_MASK = "0x5300"
_CAP_MASK2 = "0x0000002"
_MAX32 = 0xFFFFFFFF

_ERRORS = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
)
_TRAFFIC = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts")
_UNICAST = ("PortUnicastXmitPkts", "PortUnicastRcvPkts", "PortMulticastXmitPkts", "PortMulticastRcvPkts")

USAGE = (
    "Usage: perfquery [options]  [<lid|guid> [[port(s)] [reset_mask]]]\n"
    "\n"
    "Options:\n"
    "  --extended, -x          show extended port counters\n"
    "  --Ca, -C <ca>           Ca name to use\n"
    "  --Port, -P <port>       Ca port number to use\n"
    "  --help, -h              help message\n"
)


def _field(name: str, value: object) -> str:
    """libibmad's ``Name:`` padded with dots to column 33, then the value."""
    label = f"{name}:"
    return f"{label}{'.' * max(33 - len(label), 1)}{value}\n"


def _traffic(state: NodeState, hca: IbHcaState, port: IbPortState) -> dict[str, int]:
    """Stable traffic counters of a port: data in 4-byte words, packets, unicast and multicast packets."""
    seed = hashlib.sha256(f"{state.host}:{hca.name}:{port.port}".encode()).digest()

    def pick(i: int, low: int, high: int) -> int:
        return low + int.from_bytes(seed[4 * i : 4 * i + 4], "big") % (high - low)

    xmit_pkts, rcv_pkts = pick(2, 10**9, 10**11), pick(3, 10**9, 10**11)
    multicast_x, multicast_r = pick(4, 10, 10**6), pick(5, 10**3, 10**7)
    return {
        "PortXmitData": pick(0, 10**12, 10**14),
        "PortRcvData": pick(1, 10**12, 10**14),
        "PortXmitPkts": xmit_pkts,
        "PortRcvPkts": rcv_pkts,
        "PortUnicastXmitPkts": xmit_pkts - multicast_x,
        "PortUnicastRcvPkts": rcv_pkts - multicast_r,
        "PortMulticastXmitPkts": multicast_x,
        "PortMulticastRcvPkts": multicast_r,
    }


def _basic(state: NodeState, hca: IbHcaState, port: IbPortState) -> str:
    counts = _traffic(state, hca, port)
    out = f"# Port counters: Lid {port.base_lid} port {port.port} (CapMask: {_CAP_MASK})\n"
    out += _field("PortSelect", port.port) + _field("CounterSelect", "0x0000")
    out += "".join(_field(name, 0) for name in _ERRORS)
    out += _field("CounterSelect2", "0x00")
    out += _field("LocalLinkIntegrityErrors", 0) + _field("ExcessiveBufferOverrunErrors", 0)
    out += _field("QP1Dropped", 0) + _field("VL15Dropped", 0)
    out += "".join(_field(name, min(counts[name], _MAX32)) for name in _TRAFFIC)
    return out + _field("PortXmitWait", 0)


def _extended(state: NodeState, hca: IbHcaState, port: IbPortState) -> str:
    counts = _traffic(state, hca, port)
    out = (
        f"# Port extended counters: Lid {port.base_lid} port {port.port} "
        f"(CapMask: {_CAP_MASK} CapMask2: {_CAP_MASK2})\n"
    )
    out += _field("PortSelect", port.port) + _field("CounterSelect", "0x0000")
    out += "".join(_field(name, counts[name]) for name in (*_TRAFFIC, *_UNICAST))
    out += _field("CounterSelect2", "0x00000000")
    out += "".join(_field(name, 0) for name in _ERRORS)
    out += _field("LocalLinkIntegrityErrors", 0) + _field("ExcessiveBufferOverrunErrors", 0)
    return out + _field("VL15Dropped", 0) + _field("PortXmitWait", 0) + _field("QP1Dropped", 0)


def _option(args: list[str], *names: str) -> str | None:
    for name in names:
        if name in args:
            at = args.index(name)
            return args[at + 1] if at + 1 < len(args) else ""
    return None


def _failed(what: str) -> ToolResult:
    # infiniband-diags ibexit(): printed on stdout, then exit(-1)
    return ToolResult(255, f"perfquery: iberror: failed: {what}\n")


def perfquery(args: list[str], session: Session) -> ToolResult:
    """``perfquery [-x] [-C CA] [-P PORT]``: the counters of a local port."""
    if "-h" in args or "--help" in args:
        return ToolResult(0, USAGE)
    state = session.read()
    ca_name = _option(args, "-C", "--Ca")
    port_arg = _option(args, "-P", "--Port")
    if ca_name is not None:
        hca = next((h for h in state.ib_hcas if h.name == ca_name), None)
        if hca is None:
            return _failed(f"Failed to open '{ca_name}' port '{port_arg or 0}'")
    else:
        active = [h for h in state.ib_hcas if any(p.state == "Active" for p in h.ports)]
        if not (active or state.ib_hcas):
            return _failed("Failed to open '(null)' port '0'")
        hca = (active or state.ib_hcas)[0]
    if port_arg is not None:
        port = next((p for p in hca.ports if str(p.port) == port_arg), None)
        if port is None:
            return _failed(f"Failed to open '{hca.name}' port '{port_arg}'")
    else:
        port = next((p for p in hca.ports if p.state == "Active"), hca.ports[0] if hca.ports else None)
        if port is None:
            return _failed(f"Failed to open '{hca.name}' port '0'")
    if port.state != "Active" or port.link_layer != "InfiniBand" or port.base_lid in (0, 0xFFFF):
        return _failed("classportinfo query")
    extended = "-x" in args or "--extended" in args
    return ToolResult(0, (_extended if extended else _basic)(state, hca, port))
