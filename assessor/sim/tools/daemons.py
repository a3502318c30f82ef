"""The GPU daemons' binaries typed by hand: ``nv-fabricmanager -v`` answers as the real one.

The daemons themselves run through their systemd units (the node's stand-in processes). Typed in a shell,
the fabric manager's binary prints its version, which is the driver's: the fabric manager package must match
the driver exactly (``Fabric Manager version is : 450.102.04``, ``tests/data/corpus/fabricmanager``). Any
other command line starts nothing on the simulated node and says how to start the daemon.
"""

from __future__ import annotations

from assessor.sim.tools import Session, ToolResult

_BY_HAND = "{0}: on this simulated node, start the daemon through its unit (systemctl start ...)\n"


def nv_fabricmanager(args: list[str], session: Session) -> ToolResult:
    """``nv-fabricmanager -v`` / ``--version``: the version line; a node without the package has no binary."""
    state = session.read()
    unit = state.services.get("nvidia-fabricmanager.service")
    if unit is None or unit.load_state == "not-found":
        return ToolResult(127, "", "bash: nv-fabricmanager: command not found\n")
    if args in (["-v"], ["--version"]):
        return ToolResult(0, f"Fabric Manager version is : {state.driver.version}\n")
    return ToolResult(1, "", _BY_HAND.format("nv-fabricmanager"))
