"""Run a real program inside a running simulated node, as a login there would (for the ``mock:`` target).

The node's own daemons (Slurm's, :mod:`assessor.sim.slurm_node`) answer only inside it: ``scontrol`` must run
in the node's namespaces to reach its ``slurmctld`` on the node's loopback. The node is never booted here: a
capture of a node that is down reads nothing from it, as of a real node that is off.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from assessor.sim.machine.enter import nsenter_argv, running
from assessor.sim.machine.layout import NodePaths


def run_inside(
    state: str | os.PathLike[str], argv: Sequence[str], *, timeout: float
) -> subprocess.CompletedProcess[str] | None:
    """``argv`` run inside the running node of ``state``; None when the node is not running."""
    from assessor.sim.state import load_state

    paths = NodePaths.of(os.fspath(state))
    node = running(paths)
    if node is None:
        return None
    host = load_state(paths.state).host
    try:
        return subprocess.run(
            nsenter_argv(node, host, list(argv), None),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", f"{argv[0]}: no answer within {timeout:g}s\n")
