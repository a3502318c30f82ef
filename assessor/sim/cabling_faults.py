"""Cabling faults for :mod:`assessor.sim.faults`: cables that land on another switch port than the plan's.

Every port stays Active at full rate (ibstat, ibstatus and ib_write_bw against the same leaf look healthy);
only the fabric tools (``iblinkinfo``, ``ibnetdiscover``) show the far end, through ``IbPortState.peer``
(:mod:`assessor.sim.fabric`).
"""

from __future__ import annotations

from typing import Any

from assessor.errors import InputError
from assessor.sim.fabric import compute_hcas, ib_ports, planned_peer
from assessor.sim.state import IbHcaState, IbPeerState, NodeState


def _rail_hca(state: NodeState, name: Any, default: int) -> IbHcaState:
    rails = compute_hcas(state)
    if len(rails) < 2:
        raise InputError(f"{state.host} has fewer than two InfiniBand compute HCAs: no rails to cross")
    if name is None:
        return rails[min(default, len(rails) - 1)]
    hca = next((h for h in rails if h.name == str(name)), None)
    if hca is None:
        raise InputError(
            f"{name} is not an InfiniBand compute HCA of {state.host} ({', '.join(h.name for h in rails)})"
        )
    return hca


def rails_crossed(state: NodeState, a: Any = None, b: Any = None) -> None:
    """Two rails' cables swapped at the leaves: ``a`` lands where the plan puts ``b``, and ``b`` where ``a``
    belongs (default: the second and third rails)."""
    first, second = _rail_hca(state, a, 1), _rail_hca(state, b, 2)
    if first is second:
        raise InputError(f"cross two different HCAs, not {first.name} with itself")
    for one, other in ((first, second), (second, first)):
        for port, other_port in zip(ib_ports(one), ib_ports(other), strict=False):
            target = planned_peer(state, other, other_port)
            if target is not None:
                port.peer = IbPeerState(target.switch, target.port)


def cable_in_wrong_leaf(state: NodeState, ca: Any = None, leaf: Any = None, port: Any = None) -> None:
    """One rail's cable plugged into another rail's leaf, on a free port (default: the third rail's cable in
    the next rail's leaf, port 20)."""
    hca = _rail_hca(state, ca, 2)
    own = planned_peer(state, hca, ib_ports(hca)[0])
    assert own is not None
    if leaf is None:
        number = int(own.switch.rsplit("-", 1)[-1]) % len(compute_hcas(state)) + 1
        leaf = f"ib-leaf-{number:02d}"
    for p in ib_ports(hca):
        p.peer = IbPeerState(str(leaf), int(port) if port is not None else 20)


def cables_restored(state: NodeState, **_: Any) -> None:
    """Every cable back where the plan puts it."""
    for hca in state.ib_hcas:
        for p in hca.ports:
            p.peer = None


def link_on_fewer_lanes(state: NodeState, ca: Any = None) -> None:
    """A rail's link trained on two of its four lanes (a lane of the cable or optic is bad): Active at the
    fabric's speed, half the width and half the rate (default: the third rail)."""
    hca = _rail_hca(state, ca, 2)
    for p in ib_ports(hca):
        lanes = _lanes(p.width)
        p.width = f"{max(lanes // 2, 1)}X"
        p.rate_gbps = p.rate_gbps * max(lanes // 2, 1) / lanes


def lanes_restored(state: NodeState, ca: Any = None) -> None:
    """The link back on all its lanes, at the fixture's width and rate."""
    from assessor.sim.fixtures import fixture_names, load_fixture

    hca = _rail_hca(state, ca, 2)
    fresh = load_fixture(state.fixture, host=state.host) if state.fixture in fixture_names() else None
    healthy = {p.port: p for p in fresh.hca(hca.name).ports} if fresh is not None else {}
    for p in ib_ports(hca):
        if p.port in healthy:
            p.width, p.rate_gbps = healthy[p.port].width, healthy[p.port].rate_gbps
        else:
            p.width, p.rate_gbps = "4X", p.rate_gbps * 4 / max(_lanes(p.width), 1)


def _lanes(width: str) -> int:
    try:
        return max(int(width.rstrip("Xx")), 1)
    except ValueError:
        return 4
