"""Labs on a simulated node reached over SSH: the node's admin login runs the simulator's lab steps.

A simulated node served over SSH (:mod:`assessor.sim.machine.login`) lands every session inside the node;
its admin key also has ``gpulab-node VERB`` on the node's host. A lab whose steps only the simulator can
take (faults no playbook can make on real hardware) is started, solved and reset there through that verb,
and a grade reads the node's tamper evidence (a state edited by hand, a reference solution applied) the same
way, so a cheat on a simulated node shows over SSH as it does on a local state file.

- :mod:`assessor.labs.node_admin`: the host side, run by ``gpulab sim login --admin STATE`` for a
  ``gpulab-node`` line;
- :func:`apply`, :func:`remote_flags` here: the controller side, over the SSH connection a capture uses.
"""

from __future__ import annotations

import json
from typing import Any

from assessor.labs.drivers import StepFailed
from assessor.labs.model import Lab
from assessor.sim.machine.login import ADMIN_COMMAND, PROBE_ANSWER, remote_admin_line

FLAG_PREFIX = "flag: "


def _params(spec: str, options: Any, inventory: str | None) -> Any:
    from assessor.targets import TargetOptions
    from assessor.targets.inventory import find_host
    from assessor.targets.ssh import ssh_params

    options = options or TargetOptions()
    if inventory is not None:
        host = find_host(inventory, spec)
        return ssh_params(host.target, options, host.ssh if host.target.startswith("ssh://") else None)
    return ssh_params(spec, options)


def apply(lab: Lab, action: str, spec: str, options: Any = None, inventory: str | None = None) -> list[str]:
    """Run the simulator's ``action`` step of ``lab`` on the simulated node behind ``spec`` (its admin login)."""
    from assessor.targets.ssh import run_command

    params = _params(spec, options, inventory)
    line = remote_admin_line(action, lab.id, json.dumps(lab.variant or {}, sort_keys=True))
    status, out = run_command(params, line)
    if status != 0:
        last = (out.strip().splitlines() or ["no answer"])[-1]
        if "not found" in last or ADMIN_COMMAND not in out:
            raise StepFailed(
                f"{params.address} is not a simulated node's admin login ({ADMIN_COMMAND} {action} answered: {last}); "
                f"lab {lab.id} runs on the simulator only (docs/NODE.md: serving a simulated node over SSH)"
            )
        raise StepFailed(last)
    return [line for line in out.splitlines() if line.strip()]


def remote_flags(spec: str, options: Any = None, inventory: str | None = None) -> list[str]:
    """The tamper evidence of a simulated node behind ``spec``; [] for a real node (no admin verb there)."""
    from assessor.targets.ssh import run_command
    from assessor.targets.ssh_connection import HostError

    try:
        status, out = run_command(_params(spec, options, inventory), remote_admin_line("flags"), timeout=60)
    except HostError:
        return []
    if status != 0:
        return []
    return [line.removeprefix(FLAG_PREFIX) for line in out.splitlines() if line.startswith(FLAG_PREFIX)]


def is_simulated(spec: str, options: Any = None, inventory: str | None = None) -> bool:
    """The node behind ``spec`` is a simulated one whose admin login this connection has (``gpulab-node probe``)."""
    from assessor.targets.ssh import run_command
    from assessor.targets.ssh_connection import HostError

    try:
        status, out = run_command(_params(spec, options, inventory), remote_admin_line("probe"), timeout=60)
    except HostError:
        return False
    return status == 0 and out.startswith(PROBE_ANSWER)
