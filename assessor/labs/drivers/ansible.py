"""The Ansible lab driver: a real node's lab playbooks, run through :mod:`assessor.targets.ansible`.

That module is the one that calls ``ansible_runner``: a private data directory per run, quiet, host keys
checked as gpulab checks them, no SSH connection reused from an earlier run.

What a lab's playbooks are given, as extra variables (they outrank the inventory's):

- ``gpulab_lab``: the lab's id;
- ``gpulab_variant``: the candidate's variant of the lab, one mapping of variant name -> value (the lab's
  ``variants:``, picked per candidate by :func:`assessor.labs.loader.pick_variant`), e.g. ``{gpu: 5}``;
  ``{}`` for a lab without variants. A playbook reads ``{{ gpulab_variant.gpu | default(3) }}``: the
  default keeps a plain ``ansible-playbook`` run without gpulab working.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assessor.errors import InputError
from assessor.labs.drivers import StepFailed, Unreachable
from assessor.labs.model import Lab
from assessor.targets import TargetOptions, TargetSpec
from assessor.targets.ansible import failed_task, ssh_common_args, ssh_host_vars
from assessor.targets.inventory import find_host

__all__ = ["failed_task", "lab_vars", "run_playbook", "ssh_common_args", "ssh_host_vars"]


def run_playbook(
    lab: Lab,
    action: str,
    target: TargetSpec,
    options: TargetOptions | None = None,
    *,
    host_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """Run the lab's ``action`` playbook on an ssh:// or inventory target through ansible-runner.

    Exit 2 (InputError) when the lab has no such playbook; StepFailed naming the failed task and its
    message when the playbook fails. ``host_vars`` are variables for the node (a test bed's ``nccl_conf``).
    The playbook gets ``gpulab_lab`` and ``gpulab_variant`` (``lab.variant``: build the lab with the
    candidate's variant first, :func:`assessor.labs.loader.with_variant`).
    Ansible runs in a private temporary directory, quietly, with host keys checked (``ssh_common_args``)
    and pipelining on unless ``ANSIBLE_PIPELINING`` says otherwise (sudo with ``requiretty`` needs it off).
    No password is ever put on a command line: an ssh:// target with one is refused, and an inventory's
    ``ansible_password`` reaches ssh through sshpass's pipe, as Ansible does it.
    """
    rel = lab.playbooks.get(action)
    if rel is None:
        raise InputError(
            f"lab {lab.id} has no {action} playbook yet (scenario.playbooks.{action}): "
            f"it cannot be run on {target.spec}; use a mock:FILE.json target"
        )
    playbook = lab.path / rel
    if not playbook.is_file():
        raise InputError(f"lab {lab.id}: {action} playbook {playbook} does not exist yet; use a mock:FILE.json target")
    from assessor.targets import ansible

    options = options or TargetOptions()
    extravars = lab_vars(lab)
    inventory: Any
    if target.kind.name == "inventory":
        assert target.path is not None
        find_host(str(target.path), target.spec)  # Ansible would skip a missing host and say nothing
        inventory, host, limit = str(target.path.resolve()), target.spec, target.spec
        extravars.update(host_vars or {})
    else:
        host, hostvars = ssh_host_vars(target.spec, options)
        hostvars.update(host_vars or {})
        inventory, limit = {"all": {"hosts": {host: hostvars}}}, None
    run = ansible.run(playbook, inventory, options, limit=limit, extravars=extravars)
    if run.rc != 0:
        failure = failed_task(run.events)
        where = f"{action} playbook {lab.id}/{rel} failed on {host}"
        lost = first_unreachable(run.events)
        if lost is not None:  # nothing after the lost connection ran: the node is unreachable, not broken
            raise Unreachable(f"{where}: task '{lost[0]}': unreachable: {lost[1]}")
        raise StepFailed(f"{where}: {failure}" if failure else f"{where} (status {run.status}, rc {run.rc})")
    return [f"{action} playbook {lab.id}/{rel} ran on {host}"]


def lab_vars(lab: Lab) -> dict[str, Any]:
    """The extra variables every playbook of ``lab`` gets: its id and the variant it was built with."""
    return {"gpulab_lab": lab.id, "gpulab_variant": dict(lab.variant)}


# ---- a cohort: one run over many hosts of an inventory ----------------------------------------


@dataclass(frozen=True)
class HostOutcome:
    """What one step did on one host: ``ok``, ``failed`` (the failed task and its message) or ``unreachable``."""

    host: str
    status: str
    message: str = ""


def run_playbook_on_hosts(
    lab: Lab,
    action: str,
    inventory: str,
    hosts: Sequence[str],
    options: TargetOptions | None = None,
    *,
    limit: str | None = None,
    forks: int = 32,
    extravars: Mapping[str, Any] | None = None,
) -> dict[str, HostOutcome]:
    """Run the lab's ``action`` playbook once over ``hosts`` of ``inventory`` with Ansible's ``forks``.

    ``limit`` is the user's pattern (what selected ``hosts``); without one the host names are the limit.
    Returns each host's outcome (ok, failed with the failed task and its message, unreachable with why), in
    the order of ``hosts``: one host failing never stops the others. Exit 2 (InputError) when the lab has no
    such playbook. Ansible runs as :func:`run_playbook` runs it: a private directory, quietly, host keys checked;
    every host gets the same ``gpulab_variant`` (``lab.variant``), so hosts of different variants need one
    run each (:func:`assessor.labs.cohort.run_step` groups them).
    """
    rel = lab.playbooks.get(action)
    if rel is None:
        raise InputError(
            f"lab {lab.id} has no {action} playbook yet (scenario.playbooks.{action}): it cannot run on {inventory}"
        )
    playbook = lab.path / rel
    if not playbook.is_file():
        raise InputError(f"lab {lab.id}: {action} playbook {playbook} does not exist yet")
    if not hosts:
        return {}
    from assessor.targets import ansible as runner

    run = runner.run(
        playbook,
        inventory,
        options,
        limit=limit or ",".join(hosts),
        forks=max(1, forks),
        extravars={**lab_vars(lab), **(extravars or {})},
    )
    return host_outcomes(run.events, hosts, rc=run.rc, status=run.status)


def host_outcomes(
    events: Iterable[Mapping[str, Any]], hosts: Sequence[str], *, rc: int, status: str
) -> dict[str, HostOutcome]:
    """Each host's outcome from ansible-runner's events: its first failure or unreachable task, else ok.

    A host Ansible never got to (the run itself failed: a syntax error, ansible-playbook missing) is failed
    with the run's status, never ok.
    """
    found: dict[str, HostOutcome] = {}
    processed: set[str] = set()
    for event in events:
        kind = event.get("event")
        data = event.get("event_data") or {}
        host = data.get("host")
        if kind == "playbook_on_stats":
            processed.update(data.get("processed") or {})
            continue
        if host is None or host in found or kind not in ("runner_on_failed", "runner_on_unreachable"):
            continue
        if data.get("ignore_errors"):
            continue
        if kind == "runner_on_unreachable":
            found[host] = HostOutcome(host, "unreachable", unreachable_message(data.get("res") or {}))
        else:
            found[host] = HostOutcome(host, "failed", failed_task([event]) or "failed")
    out = {}
    for host in hosts:
        if host in found:
            out[host] = found[host]
        elif host in processed:
            out[host] = HostOutcome(host, "ok")
        else:
            why = "Ansible did not run on this host" + (f" (status {status}, rc {rc})" if rc != 0 else "")
            out[host] = HostOutcome(host, "failed", why)
    return out


def first_unreachable(events: Iterable[Mapping[str, Any]]) -> tuple[str, str] | None:
    """The task and the reason of the first host Ansible could not reach in ansible-runner's events, or None."""
    for event in events:
        data = event.get("event_data") or {}
        if event.get("event") == "runner_on_unreachable" and not data.get("ignore_errors"):
            return str(data.get("task") or "?"), unreachable_message(data.get("res") or {})
    return None


def unreachable_message(res: Mapping[str, Any]) -> str:
    """What ssh said about a host Ansible could not reach, from the task's result: a looped task reports
    "All items completed" for itself and the reason in each item's result."""
    items = [r for r in res.get("results") or () if isinstance(r, Mapping)]
    lost = next((r for r in items if r.get("unreachable")), items[0] if items else None)
    text = str((lost or {}).get("msg") or "") or str(res.get("msg") or "")
    if text.strip() == "All items completed":
        text = ""
    return unreachable_reason(text)


def unreachable_reason(message: str) -> str:
    """What ssh said about an unreachable host, without Ansible's wrapping ("Task failed: Data could not...")."""
    text = message.strip()
    marker = "can be reached over ssh:"
    if marker in text:
        text = text.split(marker, 1)[1].strip()
    for prefix in ("Task failed:", "Failed to connect to the host via ssh:"):
        if text.startswith(prefix):
            text = text[len(prefix) :].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # ssh's own verdict wins over what followed it: under load the pipe to a refused host breaks after ssh has
    # said why ("Host key verification failed." then "Broken pipe").
    for verdict in SSH_VERDICTS:
        said = next((line for line in lines if line.lower().startswith(verdict)), None)
        if said is not None:
            return said
    return lines[-1] if lines else "unreachable"


# The first words of ssh's fatal messages (OpenSSH's ssh.c and sshconnect.c), the most telling first.
SSH_VERDICTS = (
    "host key verification failed",
    "permission denied",
    "no ed25519 host key is known",
    "no ecdsa host key is known",
    "no rsa host key is known",
    "ssh: connect to host",
    "ssh: could not resolve hostname",
)


def inventory_variable(path: str, name: str, limit: str | None = None) -> dict[str, Any]:
    """Each host's value of the variable ``name`` (None where unset), hosts after ``limit``, in inventory order.

    A ``limit`` part that matches nothing is an error naming it ("no host named node09 in inv.yml"), not
    Ansible's warning on the terminal. Read the inventory with ``targets.inventory.load`` first: its errors
    are reported as every command reports them.
    """
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    from assessor.targets import inventory as inv

    loader = DataLoader()
    warnings: list[str] = []
    with inv._collected_warnings(warnings):
        manager = InventoryManager(loader=loader, sources=[path])
        if limit:
            manager.subset(limit)
        hosts = manager.get_hosts("all")
    for text in warnings:
        unmatched = re.search(r"Could not match supplied host pattern, ignoring: (.+)", text)
        if unmatched:
            part = unmatched.group(1).strip()
            if any(c in part for c in "*?[]~!&"):
                raise InputError(f"nothing in {path} matches {part} (--limit {limit})")
            raise InputError(f"no host or group named {part} in {path} (--limit {limit})")
    if not hosts:
        raise InputError(f"{path}: no hosts" + (f" matching --limit {limit}" if limit else ""))
    variables = VariableManager(loader=loader, inventory=manager)
    return {h.name: variables.get_vars(host=h, include_hostvars=False).get(name) for h in hosts}
