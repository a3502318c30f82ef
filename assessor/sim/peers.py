"""Simulated nodes on one fabric: which other nodes a node can reach by host name.

A node's peers are listed in a small JSON file beside its state file, ``STATE.peers.json``: an object of
host name -> the peer's state file (absolute, or relative to the directory of the peers file)::

    {"node-b": "node-b.json"}

It lives outside the node (the candidate inside cannot edit it), and ``gpulab sim init --peer STATE`` writes
it for both nodes. The tools that talk to a far end (``ib_write_bw HOST``) read the peer's state read-only
through :func:`assessor.sim.state.look_at_state`; they never change it.

A node without a peers file is alone: its tools keep imagining the far end. A peers file that is not what it
should be (not JSON, not an object, a name that is no host name, a path that is no string) gives a node with
no peers, never a crash: a tool then answers as the real one answers a host it cannot reach.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from assessor.errors import InputError
from assessor.sim.state import NodeState

PEERS_SUFFIX = ".peers.json"
_MAX_PEERS_BYTES = 64 * 1024
_MAX_PEERS = 64
# RFC 1123 host names: labels of letters, digits and hyphens, dots between, 253 characters at most.
_HOST = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "localhost.localdomain"}


def peers_file(state_path: str | os.PathLike[str]) -> Path:
    """The peers file that belongs to the state file at ``state_path``."""
    p = Path(state_path).absolute()
    return p.with_name(p.name + PEERS_SUFFIX)


def is_host_name(text: str) -> bool:
    return bool(_HOST.match(text))


def read_peers(state_path: str | os.PathLike[str] | None) -> dict[str, Path] | None:
    """The node's peers (host -> state file), or None when the node has no peers file (it is alone).

    A peers file that cannot be read or is malformed gives ``{}``: the node is on a fabric, but reaches no one.
    """
    if state_path is None:
        return None
    path = peers_file(state_path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(_MAX_PEERS_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError:
        return {}
    if len(raw) > _MAX_PEERS_BYTES:
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, Path] = {}
    for host, target in list(data.items())[:_MAX_PEERS]:
        if not isinstance(host, str) or not is_host_name(host) or not isinstance(target, str) or not target:
            continue
        if "\x00" in target:
            continue
        target_path = Path(target)
        out[host.lower()] = target_path if target_path.is_absolute() else path.parent / target_path
    return out


def is_local(state: NodeState, host: str) -> bool:
    """Whether ``host`` names the node itself."""
    return host.lower() in _LOCAL_NAMES or host.lower() == state.host.lower()


def peer_state(state_path: str | os.PathLike[str] | None, host: str) -> tuple[bool, NodeState | None]:
    """``(on_fabric, peer)``: whether the node has a peers file, and the state of the peer ``host`` (None when
    ``host`` is not one of its peers or its state cannot be read). Read-only: never change the state returned."""
    peers = read_peers(state_path)
    if peers is None:
        return False, None
    target = peers.get(host.lower())
    if target is None:
        return True, None
    from assessor.sim.state import look_at_state

    state, _status = look_at_state(target)
    if state is None or state.host.lower() != host.lower():
        return True, None  # not a state, or a state of another node: nothing answers at that name
    return True, state


def add_peer(state_path: str | os.PathLike[str], host: str, peer_path: str | os.PathLike[str]) -> None:
    """Record ``host`` (its state at ``peer_path``) as a peer of the node at ``state_path``."""
    if not is_host_name(host):
        raise InputError(f"{host!r} is not a host name")
    path = peers_file(state_path)
    peers = {name: str(p) for name, p in (read_peers(state_path) or {}).items()}
    peers[host.lower()] = str(Path(peer_path).absolute())
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(peers, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def join(state_a: str | os.PathLike[str], state_b: str | os.PathLike[str]) -> tuple[str, str]:
    """Put the nodes at ``state_a`` and ``state_b`` on one fabric (each the other's peer); their host names."""
    from assessor.sim.state import load_state

    a, b = load_state(state_a), load_state(state_b)
    if a.host.lower() == b.host.lower():
        raise InputError(f"both nodes are named {a.host}: give the new one another name (--host)")
    add_peer(state_a, b.host, state_b)
    add_peer(state_b, a.host, state_a)
    return a.host, b.host


PEER_NODES_SUFFIX = ".peers.d"  # beside a state: the peer nodes gpulab made for it (a lab's, never a user's)


def state_for_root(root: Path) -> Path:
    """The state file whose configuration root is ``root`` (``STATE.d`` -> ``STATE``)."""
    return root.with_name(root.name.removesuffix(".d"))


def make_peer(state: NodeState, state_path: str | os.PathLike[str], host: str) -> Path:
    """A fresh healthy node of ``state``'s fixture named ``host``, made beside the node at ``state_path`` (in
    ``STATE.peers.d``, with its own configuration files) and on one fabric with it; its state file."""
    from assessor.sim.config_root import populate, root_for_state
    from assessor.sim.fixtures import load_fixture
    from assessor.sim.state import save_state

    folder = Path(state_path).absolute()
    folder = folder.with_name(folder.name + PEER_NODES_SUFFIX)
    folder.mkdir(exist_ok=True)
    peer_path = folder / f"{host}.json"
    peer = load_fixture(state.fixture, host=host, in_use=True)
    _own_lids(peer, state)
    save_state(peer, peer_path)
    populate(root_for_state(peer_path), peer, overwrite=True)
    add_peer(state_path, host, peer_path)
    add_peer(peer_path, state.host, state_path)
    return peer_path


def _own_lids(peer: NodeState, state: NodeState) -> None:
    """The subnet manager gives every port of a subnet its own LID: the twin's ports are numbered after the
    node's highest (a fixture's two copies would otherwise share LIDs, and ``ib_write_bw`` print one LID for
    both ends)."""
    taken = [p.base_lid for h in state.ib_hcas for p in h.ports if p.base_lid]
    next_lid = max(taken, default=0) + 1
    for hca in peer.ib_hcas:
        for port in hca.ports:
            if port.base_lid:
                port.base_lid, next_lid = next_lid, next_lid + 1


def leave_fabric(state_path: str | os.PathLike[str]) -> None:
    """Take the node at ``state_path`` off its fabric: its peers file goes, and the peer nodes gpulab made
    for it (:func:`make_peer`) with it. A user's own node it was joined to stays as it is."""
    import shutil

    peers_file(state_path).unlink(missing_ok=True)
    p = Path(state_path).absolute()
    folder = p.with_name(p.name + PEER_NODES_SUFFIX)
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
