"""The Ansible lab driver: a real node's lab playbooks, run through :mod:`assessor.targets.ansible`.

That module is the one that calls ``ansible_runner``: a private data directory per run, quiet, host keys
checked as gpulab checks them, no SSH connection reused from an earlier run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assessor.errors import InputError
from assessor.labs.drivers import StepFailed
from assessor.labs.model import Lab
from assessor.targets import TargetOptions, TargetSpec
from assessor.targets.ansible import failed_task, ssh_common_args, ssh_host_vars
from assessor.targets.inventory import find_host

__all__ = ["failed_task", "run_playbook", "ssh_common_args", "ssh_host_vars"]


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
    extravars: dict[str, Any] = {"gpulab_lab": lab.id}
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
        raise StepFailed(f"{where}: {failure}" if failure else f"{where} (status {run.status}, rc {run.rc})")
    return [f"{action} playbook {lab.id}/{rel} ran on {host}"]
