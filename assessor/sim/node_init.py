"""``gpulab sim init`` as a library function: a new simulated node, its configuration root, what to do next."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from assessor.errors import InputError


def init_node(
    fixture: str, state_path: str | os.PathLike[str], *, host: str | None = None, force: bool = False
) -> list[str]:
    """Write a fresh node of ``fixture`` to ``state_path`` and its configuration root; the lines to print.

    The node behaves as a real one under a candidate's hands: its GPU daemons hold the GPUs
    (``daemons_hold_gpus``), so a reset needs a drain. ``host`` names the node and gives it GPU UUIDs,
    serials and HCA GUIDs of its own. The suggested ``export`` names the state by its absolute path, so it
    works from any directory.
    """
    from assessor.sim.config_root import populate, root_for_state
    from assessor.sim.fixtures import fixture_names, load_fixture
    from assessor.sim.state import save_state

    if fixture not in fixture_names():
        raise InputError(f"unknown fixture {fixture!r} (fixtures: {', '.join(fixture_names())})")
    path = Path(state_path).absolute()
    if path.exists() and not force:
        raise InputError(f"{path}: already exists (use --force to start over)")
    state = load_fixture(fixture, host=host, in_use=True)
    save_state(state, path)
    root = root_for_state(path)
    populate(root, state, overwrite=force)
    return [
        f"simulated {fixture} node {state.host} written to {path}",
        f"its configuration files (/etc/nccl.conf, /etc/modprobe.d, ...) are under {root}",
        f"enter it: gpulab sim shell {shlex.quote(str(path))}",
    ]
