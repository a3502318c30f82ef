"""Labs on a simulated node reached over SSH: the node's admin login runs the simulator's lab steps.

A simulated node served over SSH (:mod:`assessor.sim.machine.login`) lands every session inside the node;
its admin key also has ``gpulab-node VERB`` on the node's host. A lab whose steps only the simulator can
take (faults no playbook can make on real hardware) is started, solved and reset there through that verb,
and a grade reads the node's tamper evidence (a state edited by hand, a reference solution applied) the same
way, so a cheat on a simulated node shows over SSH as it does on a local state file: for an ``ssh://``
target and for an inventory host alike, one node or a cohort.

A node that cannot be reached is :class:`~assessor.labs.drivers.Unreachable`, never taken for a real node:
a step does not fall back to the lab's playbooks for it, and a grade whose flags could not be read carries
a flag that says so (:data:`FLAGS_UNREAD`) rather than none.

- :mod:`assessor.labs.node_admin`: the host side, run by ``gpulab sim login --admin STATE`` for a
  ``gpulab-node`` line;
- :func:`apply`, :func:`remote_flags`, :func:`is_simulated` here: the controller side, over an SSH
  connection of its own.
"""

from __future__ import annotations

import json
from typing import Any

from assessor.labs.drivers import StepFailed, Unreachable
from assessor.labs.model import Lab
from assessor.sim.machine.login import ADMIN_COMMAND, PROBE_ANSWER, remote_admin_line

FLAG_PREFIX = "flag: "
# The flag of a grade whose node could not be asked for its tamper evidence (the capture reached it, the
# question did not): the grade is shown, never counted, until a grade that could ask.
FLAGS_UNREAD = "tamper evidence of the node could not be read"


def over_ssh(spec: str, inventory: str | None = None) -> bool:
    """``spec`` is reached over SSH: an ``ssh://`` target, or an inventory host without a ``gpulab_target``
    of another kind (``mock:FILE.json`` is a local simulated node, read as such)."""
    if inventory is None:
        return spec.startswith("ssh://")
    from assessor.targets.inventory import find_host

    return find_host(inventory, spec).target.startswith("ssh://")


def _params(spec: str, options: Any, inventory: str | None) -> Any:
    from assessor.targets import TargetOptions
    from assessor.targets.inventory import find_host
    from assessor.targets.ssh import ssh_params

    options = options or TargetOptions()
    if inventory is not None:
        host = find_host(inventory, spec)
        return ssh_params(host.target, options, host.ssh if host.target.startswith("ssh://") else None)
    return ssh_params(spec, options)


# How paramiko's side words a node it could not get a session from at all (assessor.targets.ssh_connection),
# as opposed to one that answered and refused (a host key, the login): only these make a node Unreachable.
_NO_SESSION = ("unreachable", "no SSH banner", "SSH key exchange", "connection to ")


def _admin(spec: str, options: Any, inventory: str | None, line: str, timeout: float) -> tuple[int, str, str]:
    """Send one admin line; (exit status, stdout, the node's address).

    Unreachable when the node gave no session (no connection, no banner, a dropped session); StepFailed with
    the words of one that refused it (an unknown or changed host key, the login refused).
    """
    from assessor.targets.ssh import run_command
    from assessor.targets.ssh_connection import HostError

    params = _params(spec, options, inventory)
    try:
        status, out = run_command(params, line, timeout=timeout)
    except HostError as exc:
        text = str(exc)
        if text.startswith(_NO_SESSION):
            raise Unreachable(text if text.startswith("unreachable") else f"unreachable: {text}") from None
        raise StepFailed(text) from None
    return status, out, params.address


def apply(lab: Lab, action: str, spec: str, options: Any = None, inventory: str | None = None) -> list[str]:
    """Run the simulator's ``action`` step of ``lab`` on the simulated node behind ``spec`` (its admin login).

    Unreachable when the node cannot be reached; StepFailed with the node's words when the step failed.
    """
    line = remote_admin_line(action, lab.id, json.dumps(lab.variant or {}, sort_keys=True))
    status, out, address = _admin(spec, options, inventory, line, 300.0)
    if status != 0:
        last = (out.strip().splitlines() or ["no answer"])[-1]
        if "not found" in last or ADMIN_COMMAND not in out:
            raise StepFailed(
                f"{address} is not a simulated node's admin login ({ADMIN_COMMAND} {action} answered: {last}); "
                f"lab {lab.id} runs on the simulator only (docs/NODE.md: serving a simulated node over SSH)"
            )
        raise StepFailed(last)
    return [line for line in out.splitlines() if line.strip()]


def remote_flags(spec: str, options: Any = None, inventory: str | None = None) -> list[str]:
    """The tamper evidence of a simulated node behind ``spec``: [] for a real node (no admin verb there) or a
    key without the admin login; one :data:`FLAGS_UNREAD` flag when the node could not be asked."""
    if not over_ssh(spec, inventory):
        return []
    try:
        status, out, _ = _admin(spec, options, inventory, remote_admin_line("flags"), 60.0)
    except StepFailed as exc:
        return [f"{FLAGS_UNREAD} ({exc})"]
    if status != 0:
        return []
    return [line.removeprefix(FLAG_PREFIX) for line in out.splitlines() if line.startswith(FLAG_PREFIX)]


def probe(spec: str, options: Any = None, inventory: str | None = None) -> str | None:
    """None when the node behind ``spec`` is a simulated one whose admin login this connection has
    (``gpulab-node probe``); else why it is not known to be one (a real node, a key without the admin login,
    a host key or login refused: the lab's playbooks then meet the same refusal and say so).

    Unreachable when the node cannot be reached: an unreachable node is neither simulated nor real.
    """
    try:
        status, out, _ = _admin(spec, options, inventory, remote_admin_line("probe"), 60.0)
    except Unreachable:
        raise
    except StepFailed as exc:
        return str(exc)
    if status == 0 and out.startswith(PROBE_ANSWER):
        return None
    last = (out.strip().splitlines() or [f"exit status {status}"])[-1]
    return f"`{ADMIN_COMMAND} probe` answered: {last}"


def is_simulated(spec: str, options: Any = None, inventory: str | None = None) -> bool:
    """The node behind ``spec`` is a simulated one whose admin login this connection has (:func:`probe`).

    Unreachable when the node cannot be reached.
    """
    return probe(spec, options, inventory) is None
