"""The InfiniBand fabric around a simulated node: the leaf and spine switches its HCAs are cabled to.

A node's state holds its own HCAs; the fabric tools (``iblinkinfo``, ``ibnetdiscover``, ``sminfo``,
``ibswitches``, ``ibhosts``) also show what is at the other end of each cable. This module derives that
neighbourhood from the state, the same every time, as a rail-optimised scalable unit is cabled:

- each compute HCA is one rail (``IbHcaState.rail``, else its place among the compute HCAs, from 1), and
  rail *r* of every node goes to leaf ``ib-leaf-0r``, on the switch port that is the node's number in the
  unit (``hgx-h100-01`` -> port 1); storage HCAs go to ``st-leaf-01`` on a fabric of their own;
- three neighbour nodes of the unit share each leaf (ports 2-4 for node 1), two spines take each leaf's
  uplinks (leaf ports 33 and 34), and a SHARP aggregation node sits on each leaf's last port;
- the subnet manager runs on ``ib-spine-01`` (LID 1, as the fixtures' ``SM lid: 1``).

Rail-optimised as NVIDIA's HGX reference architecture cables the compute fabric (rail N of every server on
leaf N). That is the site's cabling plan (:func:`planned_peer`). A port whose cable lands elsewhere says so in
``IbPortState.peer`` (a switch name and port): two rails crossed at the leaf, a cable in the wrong leaf. The
switch port the plan gives it is then empty, or holds whichever cable landed there instead.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from assessor.sim.state import IbHcaState, IbPortState, NodeState

SPINES = ("ib-spine-01", "ib-spine-02")
UPLINK_PORTS = (33, 34)  # leaf ports to the spines, in SPINES order
STORAGE_LEAF = "st-leaf-01"
NEIGHBOURS = 3  # other nodes of the unit on each leaf
_SM_SWITCH = SPINES[0]
# Quantum-2 (NDR) switches have 64 ports and Quantum (HDR) 40, plus the SHARP aggregation node's port after
# them (corpus/iblinkinfo/01: the Aggregation Node on port 41 of an MQM8700).
_MODELS = {"NDR": ("MQM9700", 65), "XDR": ("Q3400", 145)}
_HDR_MODEL = ("MQM8700", 41)
AGGREGATION_NODE = "Mellanox Technologies Aggregation Node"
_SWITCH_OUI = "fc6a1c0300"  # NVIDIA (Mellanox) switch GUIDs start with an OUI of theirs


@dataclass(frozen=True)
class SwitchPort:
    switch: str  # ib-leaf-03
    port: int


@dataclass
class Link:
    """One cable, seen from one end: this end's port, the far end's node and port."""

    port: int
    peer_kind: str  # "switch" or "ca"
    peer_guid: str  # the far node's GUID (a switch's, or a CA's node GUID)
    peer_port: int
    peer_port_guid: str  # the far port's GUID (a switch port has its switch's)
    peer_description: str  # "MF0;ib-leaf-03:MQM9700/U1", "hgx-h100-02 mlx5_3"
    peer_lid: int  # the far port's LID (a switch's is its port 0 LID)
    width: str = "4X"
    speed: str = "NDR"
    state: str = "Active"
    physical_state: str = "LinkUp"


@dataclass
class Switch:
    name: str  # ib-leaf-03
    description: str  # MF0;ib-leaf-03:MQM9700/U1
    guid: str
    lid: int
    ports: int  # numports, the aggregation node's port included
    links: dict[int, Link] = field(default_factory=dict)
    sys_image_guid: str = ""


@dataclass
class Ca:
    description: str  # "hgx-h100-01 mlx5_3" (node description: host and device)
    node_guid: str
    sys_image_guid: str
    ports: int
    port_guids: dict[int, str] = field(default_factory=dict)
    lids: dict[int, int] = field(default_factory=dict)
    links: dict[int, Link] = field(default_factory=dict)
    local: bool = False  # one of this node's own HCAs
    devid: int = 0x1021  # ConnectX-7
    ca_name: str = ""  # mlx5_3, for the node's own HCAs


@dataclass
class Fabric:
    switches: list[Switch]
    cas: list[Ca]
    sm_lid: int
    sm_guid: str
    speed: str

    def switch(self, name: str) -> Switch | None:
        return next((s for s in self.switches if s.name == name), None)


def _hex(seed: str, digits: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:digits]


def node_number(host: str) -> int:
    """The node's number in its unit: the digits its host name ends with (``hgx-h100-01`` -> 1), else 1."""
    m = re.search(r"(\d+)$", host)
    return max(int(m.group(1)), 1) if m else 1


def _neighbour_hosts(host: str) -> list[tuple[str, int]]:
    """The other nodes of the unit sharing the leaves: (host name, node number)."""
    m = re.search(r"(\d+)$", host)
    prefix, width = (host[: m.start()], len(m.group(1))) if m else (f"{host}-", 2)
    own = node_number(host)
    numbers = [n for n in range(1, NEIGHBOURS + 2) if n != own][:NEIGHBOURS]
    return [(f"{prefix}{n:0{width}d}", n) for n in numbers]


def ib_ports(hca: IbHcaState) -> list[IbPortState]:
    return [p for p in hca.ports if p.link_layer == "InfiniBand"]


def compute_hcas(state: NodeState) -> list[IbHcaState]:
    """The compute HCAs with InfiniBand ports, in the state's order."""
    return [h for h in state.ib_hcas if h.role == "compute" and ib_ports(h)]


def rail_of(state: NodeState, hca: IbHcaState) -> int | None:
    """The rail of a compute HCA (1..N), None for a storage or Ethernet one."""
    if hca.rail is not None:
        return hca.rail
    rails = compute_hcas(state)
    return rails.index(hca) + 1 if hca in rails else None


def leaf_name(rail: int) -> str:
    return f"ib-leaf-{rail:02d}"


def planned_peer(state: NodeState, hca: IbHcaState, port: IbPortState) -> SwitchPort | None:
    """The switch port the site's cabling plan gives ``hca``'s ``port``; None for a port off the IB fabric."""
    if port.link_layer != "InfiniBand":
        return None
    rail = rail_of(state, hca)
    number = node_number(state.host)
    if rail is not None:
        # a second port of a dual-port HCA goes to the same rail's leaf, 16 ports further on
        return SwitchPort(leaf_name(rail), number + (port.port - 1) * 16)
    storage = [h for h in state.ib_hcas if h.role != "compute" and ib_ports(h)]
    place = storage.index(hca) if hca in storage else 0
    return SwitchPort(STORAGE_LEAF, (number - 1) * 2 + place + 1)


def peer_of(state: NodeState, hca: IbHcaState, port: IbPortState) -> SwitchPort | None:
    """Where the port's cable lands: the state's ``peer`` when it says, else the plan's port."""
    if port.peer is not None:
        return SwitchPort(port.peer.switch, port.peer.port)
    return planned_peer(state, hca, port)


def fabric_speed(state: NodeState) -> str:
    """The fabric's speed: what the node's compute ports would train at (the fixture's, NDR on ConnectX-7)."""
    speeds = [_port_speed(p) for h in compute_hcas(state) for p in ib_ports(h) if p.speed or p.rate_gbps]
    return max(set(speeds), key=speeds.count) if speeds else "NDR"


def _switch(name: str, speed: str) -> Switch:
    model, ports = _MODELS.get(speed, _HDR_MODEL)
    guid = f"0x{_SWITCH_OUI}{_hex(name, 6)}"
    lid = 1 + SPINES.index(name) if name in SPINES else 10 + int(_hex(name + ":lid", 4), 16) % 200
    m = re.match(r"ib-leaf-(\d+)$", name)
    if m:
        lid = len(SPINES) + int(m.group(1))
    return Switch(name, f"MF0;{name}:{model}/U1", guid, lid, ports, sys_image_guid=guid)


def _guid_like(template: str, seed: str) -> str:
    """A GUID with ``template``'s vendor part (its first 10 hex digits) and 6 digits from ``seed``."""
    digits = template.removeprefix("0x").rjust(16, "0")
    return f"0x{digits[:10]}{_hex(seed, 6)}"


def _link_down(port: IbPortState) -> bool:
    return port.state == "Down" or port.physical_state in ("Polling", "Disabled", "Sleep")


def fabric(state: NodeState, *, storage: bool = False) -> Fabric:
    """The compute fabric around the node (or, with ``storage``, the storage fabric), as the tools see it."""
    speed = fabric_speed(state)
    switches: dict[str, Switch] = {}
    cas: list[Ca] = []

    def sw(name: str) -> Switch:
        if name not in switches:
            switches[name] = _switch(name, speed)
        return switches[name]

    def connect(ca: Ca, ca_port: int, at: SwitchPort, width: str, link_speed: str, state_: str, phys: str) -> None:
        s = sw(at.switch)
        lid = ca.lids.get(ca_port, 0)
        ca.links[ca_port] = Link(
            ca_port, "switch", s.guid, at.port, s.guid, s.description, s.lid, width, link_speed, state_, phys
        )
        s.links[at.port] = Link(
            at.port,
            "ca",
            ca.node_guid,
            ca_port,
            ca.port_guids[ca_port],
            ca.description,
            lid,
            width,
            link_speed,
            state_,
            phys,
        )

    own = [h for h in state.ib_hcas if ib_ports(h) and ((h.role != "compute") == storage)]
    if not storage:
        for rail in range(1, len(own) + 1):
            sw(leaf_name(rail))
        for spine_name in SPINES:
            sw(spine_name)
    for hca in own:
        ports = ib_ports(hca)
        ca = Ca(
            f"{state.host} {hca.name}",
            hca.node_guid,
            hca.sys_image_guid,
            len(hca.ports),
            {p.port: p.port_guid or hca.node_guid for p in ports},
            {p.port: p.base_lid for p in ports},
            local=True,
            devid=_part_id(hca),
            ca_name=hca.name,
        )
        cas.append(ca)
        for port in ports:
            at = peer_of(state, hca, port)
            if at is None or _link_down(port):
                continue
            connect(ca, port.port, at, port.width, _port_speed(port), port.state, port.physical_state)
    # The unit's other nodes, cabled as the plan says, on the same leaves (or the storage leaf).
    template = own[0].node_guid if own else f"0x{_SWITCH_OUI}000000"
    for host, number in _neighbour_hosts(state.host):
        for i, hca in enumerate(own):
            guid = _guid_like(template, f"{host}:{hca.name}")
            lid = 0 if not state.sm_present else 1000 + number * 32 + i
            ca = Ca(f"{host} {hca.name}", guid, guid, 1, {1: guid}, {1: lid}, devid=_part_id(hca))
            cas.append(ca)
            their_rail = rail_of(state, hca)
            at = (
                SwitchPort(leaf_name(their_rail), number)
                if their_rail is not None
                else SwitchPort(STORAGE_LEAF, (number - 1) * 2 + i + 1)
            )
            taken = switches.get(at.switch)
            if taken is not None and at.port in taken.links:
                continue  # a cable of this node landed on that port: the neighbour's is elsewhere
            connect(ca, 1, at, "4X", speed, "Active" if state.sm_present else "Initializing", "LinkUp")
    leaves = [s for s in switches.values() if s.name not in SPINES]
    if not storage:
        for leaf in leaves:
            for spine_name, up in zip(SPINES, UPLINK_PORTS, strict=True):
                spine = sw(spine_name)
                down = _leaf_number(leaf.name)
                link_state = "Active" if state.sm_present else "Initializing"
                leaf.links[up] = Link(
                    up,
                    "switch",
                    spine.guid,
                    down,
                    spine.guid,
                    spine.description,
                    spine.lid,
                    "4X",
                    speed,
                    link_state,
                    "LinkUp",
                )
                spine.links[down] = Link(
                    down,
                    "switch",
                    leaf.guid,
                    up,
                    leaf.guid,
                    leaf.description,
                    leaf.lid,
                    "4X",
                    speed,
                    link_state,
                    "LinkUp",
                )
    for leaf in leaves:
        an_guid = f"0x{_SWITCH_OUI}{_hex(leaf.name + ':an', 6)}"
        an = Ca(AGGREGATION_NODE, an_guid, an_guid, 1, {1: an_guid}, {1: leaf.lid + 100}, devid=0xD2F2)
        cas.append(an)
        connect(
            an,
            1,
            SwitchPort(leaf.name, leaf.ports),
            "4X",
            speed,
            "Active" if state.sm_present else "Initializing",
            "LinkUp",
        )
    if not state.sm_present:
        for s in switches.values():
            s.lid = 0
        for ca in cas:
            ca.lids = {p: 0 for p in ca.lids}
    ordered = sorted(switches.values(), key=lambda s: (s.name not in SPINES, s.name))
    sm = switches.get(_SM_SWITCH)
    return Fabric(ordered, cas, sm.lid if sm and state.sm_present else 0, sm.guid if sm else "0x0", speed)


# per-lane Gb/s of each IB speed (as the HCA's rate divided by its lanes gives it)
_LANE_GBPS = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0, "NDR": 100.0, "XDR": 200.0}


def _port_speed(port: IbPortState) -> str:
    """The port's speed name: the state's, else the one whose lane rate gives its rate."""
    if port.speed:
        return port.speed
    try:
        lanes = max(int(port.width.rstrip("Xx")), 1)
    except ValueError:
        lanes = 4
    per_lane = port.rate_gbps / lanes
    return next((name for name, lane in _LANE_GBPS.items() if abs(lane - per_lane) < 0.01), "SDR")


def _leaf_number(name: str) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else 1


def _part_id(hca: IbHcaState) -> int:
    """The PCI device id of the HCA (NodeInfo's devid): ConnectX-7 is 0x1021, ConnectX-6 0x101b."""
    digits = "".join(c for c in hca.ca_type if c.isdigit())
    return {"4129": 0x1021, "4123": 0x101B, "4125": 0x101D, "4131": 0x1023}.get(digits, 0x1021)
