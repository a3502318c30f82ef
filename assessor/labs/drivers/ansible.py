"""The Ansible lab driver: a real node's lab playbooks, run through ansible-runner.

The one module that calls ``ansible_runner``. Ansible runs in a private temporary directory, quietly,
with host keys checked as gpulab checks them.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.labs.drivers import StepFailed
from assessor.labs.model import Lab
from assessor.targets import TargetOptions, TargetSpec
from assessor.targets.inventory import find_host


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
    import tempfile

    import ansible_runner

    options = options or TargetOptions()
    extravars: dict[str, Any] = {"gpulab_lab": lab.id}
    envvars = _ansible_env(options)
    inventory: Any
    if target.kind.name == "inventory":
        assert target.path is not None
        find_host(str(target.path), target.spec)  # Ansible would skip a missing host and say nothing
        inventory, host, limit = str(target.path.resolve()), target.spec, target.spec
        # the inventory says how to reach its hosts; the user's --identity / host-key settings are defaults
        if options.identity:
            envvars["ANSIBLE_PRIVATE_KEY_FILE"] = options.identity
        envvars["ANSIBLE_SSH_COMMON_ARGS"] = ssh_common_args(options)
        extravars.update(host_vars or {})
    else:
        host, hostvars = ssh_host_vars(target.spec, options)
        hostvars.update(host_vars or {})
        inventory, limit = {"all": {"hosts": {host: hostvars}}}, None
    with tempfile.TemporaryDirectory(prefix="gpulab-ansible-") as private:
        run = ansible_runner.run(
            private_data_dir=private,
            playbook=str(playbook),
            inventory=inventory,
            limit=limit,
            extravars=extravars,
            envvars=envvars,
            quiet=True,
            suppress_env_files=True,
        )
        failure = failed_task(run.events) if run.rc != 0 else None
    if run.rc != 0:
        where = f"{action} playbook {lab.id}/{rel} failed on {host}"
        raise StepFailed(f"{where}: {failure}" if failure else f"{where} (status {run.status}, rc {run.rc})")
    return [f"{action} playbook {lab.id}/{rel} ran on {host}"]


def ssh_common_args(options: TargetOptions) -> str:
    """OpenSSH options for Ansible: host keys checked as gpulab checks them (refused unless known or accept-new).

    ``--known-hosts FILE`` is read besides ~/.ssh/known_hosts, as paramiko does for `gpulab assess`; accepted
    new keys are written to the first file named.
    """
    args = ["-o", "StrictHostKeyChecking=" + ("accept-new" if options.accept_new_host_keys else "yes")]
    if options.known_hosts:
        files = [str(Path(options.known_hosts).expanduser()), "~/.ssh/known_hosts"]
        args += ["-o", "UserKnownHostsFile=" + " ".join(f'"{f}"' if " " in f else f for f in files)]
    return shlex.join(args)


def ssh_host_vars(spec: str, options: TargetOptions) -> tuple[str, dict[str, Any]]:
    """The inventory name and connection variables of an ssh:// target (a password in it is refused)."""
    from assessor.targets.ssh import parse_spec

    params = parse_spec(spec)
    hostvars: dict[str, Any] = {
        "ansible_host": params.host,
        "ansible_port": params.port,
        "ansible_ssh_common_args": ssh_common_args(options),
    }
    if params.user:
        hostvars["ansible_user"] = params.user
    if options.identity:
        hostvars["ansible_ssh_private_key_file"] = str(Path(options.identity).expanduser())
    return params.host, hostvars


def _ansible_env(options: TargetOptions) -> dict[str, str]:
    import os
    import sys

    # ansible-runner turns host key checking off unless told; gpulab never does.
    env = {"ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_TIMEOUT": str(max(1, round(options.connect_timeout)))}
    # one SSH round trip per task instead of three (module copied, run, removed), unless the user said otherwise
    env["ANSIBLE_PIPELINING"] = os.environ.get("ANSIBLE_PIPELINING", "True")
    # ansible-playbook from the interpreter's own environment (a venv not on PATH)
    bindir = Path(sys.executable).parent
    if (bindir / "ansible-playbook").exists():
        env["PATH"] = os.pathsep.join([str(bindir), os.environ.get("PATH", "")])
    return env


def failed_task(events: Any) -> str | None:
    """``task 'NAME': MESSAGE`` of the first failed or unreachable host in ansible-runner's events."""
    for event in events:
        if event.get("event") not in ("runner_on_failed", "runner_on_unreachable"):
            continue
        data = event.get("event_data", {})
        if data.get("ignore_errors"):
            continue
        res = data.get("res") or {}
        message = ""
        for key in ("stderr", "stdout", "msg"):
            text = str(res.get(key) or "").strip()
            if text:
                # the first line says what went wrong (nvidia-smi and systemctl add "Terminating early...",
                # "See 'systemctl status'..." after it)
                message = text.splitlines()[0].strip()
                break
        if res.get("rc") not in (None, 0):
            message = f"{message} (exit {res['rc']})" if message else f"exit {res['rc']}"
        return f"task '{data.get('task', '?')}': {message or 'failed'}"
    return None
