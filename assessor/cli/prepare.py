"""``gpulab prepare``: make an inventory's nodes ready for gpulab with ``prepare-node.yml``."""

from __future__ import annotations

import sys
from typing import Any

import click

from assessor.cli.options import ssh_options


class _HostLine:
    """One host's outcome in the shape the assessment progress display reads."""

    def __init__(self, host: str, status: str, why: str) -> None:
        self.label = host
        self.error = why or (status if status == "unreachable" else None)
        self.failed = status == "failed"


@click.command()
@ssh_options
@click.option("--limit", "-l", metavar="PATTERN", help="Hosts or groups of the inventory, as Ansible's --limit.")
@click.option("--fixture", metavar="NAME", help="Simulated node for hosts without GPUs (gpulab sim fixtures).")
@click.option(
    "--no-packages",
    is_flag=True,
    help="Install no packages (nodes that cannot reach a package registry); the simulator is still set up.",
)
@click.option("--forks", type=click.IntRange(1, 1024), default=32, show_default=True, help="Hosts handled at once.")
@click.option(
    "--extra-vars", "-e", "extra", multiple=True, metavar="KEY=VALUE", help="A playbook variable (repeatable)."
)
def prepare(
    inventory: str | None,
    accept_new_host_keys: bool,
    identity: str | None,
    known_hosts: str | None,
    limit: str | None,
    fixture: str | None,
    no_packages: bool,
    forks: int,
    extra: tuple[str, ...],
) -> None:
    """Prepare an inventory's nodes for gpulab (playbooks/prepare-node.yml).

    Installs what capture uses (infiniband-diags, perftest, nccl-tests, nvidia-ml-py) and, on a node
    without GPUs, the simulator with the --fixture you choose. Exit 0 when every host is ready, 3 when
    one or more failed or could not be reached.
    """
    from assessor.assess.fleet import Progress
    from assessor.cli.options import target_options
    from assessor.errors import InputError
    from assessor.neutralise import visible
    from assessor.targets import ansible
    from assessor.targets import inventory as inv

    if not inventory:
        raise click.UsageError("give --inventory FILE")
    variables: dict[str, Any] = {}
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--extra-vars {item!r}: use KEY=VALUE")
        variables[key.strip()] = value
    hosts = inv.load(inventory, limit)  # a missing or empty selection is an error before Ansible runs
    bar = Progress(len(hosts))
    try:
        run = ansible.prepare(
            inventory,
            target_options(identity, known_hosts, accept_new_host_keys),
            limit=limit,
            fixture=fixture,
            install_packages=not no_packages,
            extravars=variables,
            forks=forks,
            on_host=lambda host, status, why: bar(_HostLine(host, status, why), _HostLine(host, status, why)),  # type: ignore[arg-type]
        )
    finally:
        bar.close()
    if run.error:
        click.echo(f"gpulab: error: prepare-node.yml did not run: {visible(run.error)}", err=True)
    for host in hosts:
        status = run.hosts.get(host.name, "not run")
        why = run.reasons.get(host.name, "")
        line = f"{visible(host.name)}: {'ready' if status == 'ok' else status}"
        click.echo(f"{line}: {visible(why)}" if why else line)
    sys.exit(0 if run.rc == 0 and all(run.hosts.get(h.name) == "ok" for h in hosts) else 3)
