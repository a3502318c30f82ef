"""A condition that gives a simulated node a peer on its fabric: a second node to measure east-west against.

``peer-node`` makes a fresh, healthy node of the same fixture beside the node's state (``STATE.peers.d``), named
``node02`` (``node03`` when the node itself is node02), and joins the two (:mod:`assessor.sim.peers`):
``ib_write_bw -d mlx5_0 node02`` and ``mpirun -H <node>:8,node02:8 all_reduce_perf`` then measure against it.
It changes nothing in the node's own state; it needs a node with files of its own (a state file, as ``gpulab
sim init`` and a lab's start make). A lab whose scenario names it gets its peer at every start, fresh.

:data:`CONDITIONS` lists it as the fields of :class:`assessor.sim.faults.Fault`; ``faults`` registers it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assessor.sim.state import NodeState

PEER_HOST = "node02"


def peer_host(state: NodeState) -> str:
    """The peer's host name: node02, unless that is the node's own."""
    return PEER_HOST if state.host.lower() != PEER_HOST else "node03"


def _nothing(state: NodeState) -> None:
    """The node's own state does not change: the peer is another node."""


def _make_peer(state: NodeState, root: Path) -> None:
    from assessor.sim.peers import make_peer, state_for_root

    make_peer(state, state_for_root(root), peer_host(state))


def _remove_peer(state: NodeState, root: Path) -> None:
    from assessor.sim.peers import leave_fabric, state_for_root

    leave_fabric(state_for_root(root))


CONDITIONS: tuple[tuple[Any, ...], ...] = (
    (
        "peer-node",
        "a second node of the same fixture on this node's fabric (node02, healthy), for east-west runs: "
        "ib_write_bw HOST, mpirun -H over both",
        "",
        _nothing,
        _nothing,
        _make_peer,
        _remove_peer,
    ),
)
