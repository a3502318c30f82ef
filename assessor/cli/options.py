"""The options that say which targets a command works on and how to reach them, defined once."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import click


def _inventory() -> Any:
    return click.option("--inventory", "-i", metavar="FILE", help="Ansible inventory (YAML, INI, script or plugin).")


def _ssh() -> list[Any]:
    return [
        click.option(
            "--accept-new-host-keys",
            is_flag=True,
            help="Trust and remember unknown SSH host keys (fresh lab VMs); changed keys are still refused.",
        ),
        click.option("--identity", metavar="KEYFILE", help="SSH private key (else agent, inventory, ~/.ssh)."),
        click.option("--known-hosts", metavar="FILE", help="known_hosts file besides ~/.ssh/known_hosts."),
    ]


def _limit() -> Any:
    return click.option(
        "--limit", "-l", metavar="PATTERN", help="Hosts or groups of the inventory, as Ansible's --limit."
    )


def _forks() -> Any:
    return click.option(
        "--forks", type=click.IntRange(1, 1024), default=32, show_default=True, help="Targets handled at once."
    )


def _apply(f: Any, options: list[Any]) -> Any:
    for option in reversed(options):
        f = option(f)
    return f


def ssh_options(f: Any) -> Any:
    """--inventory and how to reach an SSH node: for commands that name their --target themselves."""
    return _apply(f, [_inventory(), *_ssh()])


def cohort_options(f: Any) -> Any:
    """--limit, --forks and --candidates: a lab command over every selected host of --inventory (no --target)."""
    return _apply(
        f,
        [
            _limit(),
            _forks(),
            click.option(
                "--candidates",
                "candidates_file",
                type=click.Path(dir_okay=False),
                metavar="FILE",
                help="Host -> candidate (YAML mapping or CSV host,candidate); else each host's gpulab_candidate.",
            ),
        ],
    )


def target_options(identity: str | None, known_hosts: str | None, accept_new_host_keys: bool) -> Any:
    """The library's TargetOptions from the SSH options."""
    from assessor.targets import TargetOptions

    return TargetOptions(accept_new_host_keys=accept_new_host_keys, identity=identity, known_hosts=known_hosts)


def check_options(f: Any) -> Any:
    """--profile and --check: which checks an assessment runs, with which parameters (``profile``, ``check_opts``)."""
    f = click.option(
        "--check",
        "-c",
        "check_opts",
        multiple=True,
        metavar="ID[:key=value,...]",
        help="Run this check (with parameters); with --profile, adds to or overrides it.",
    )(f)
    return click.option("--profile", "-p", metavar="NAME|FILE", help="Readiness profile (see `gpulab profiles list`).")(
        f
    )


def reach_options(f: Any) -> Any:
    """Options every command that reaches many targets shares; they reach the command as one Reach."""
    options = [
        click.option(
            "--target",
            "-t",
            "targets",
            multiple=True,
            metavar="TARGET",
            help="local, snapshot:DIR, mock:NAME, mock:FILE.json, ssh://[user@]host[:port] (repeatable).",
        ),
        _inventory(),
        _limit(),
        _forks(),
        click.option("--timeout", type=float, default=30.0, show_default=True, help="Seconds per command."),
        click.option(
            "--host-timeout", type=float, default=600.0, show_default=True, help="Seconds for one whole target."
        ),
        click.option(
            "--max-file-size",
            type=click.IntRange(1, 4096),
            default=64,
            show_default=True,
            metavar="MIB",
            help="Largest tool output read from a snapshot; a larger file is an error for its checks.",
        ),
        click.option(
            "--max-reply",
            type=click.IntRange(1024),
            default=256 * 1024 * 1024,
            show_default=True,
            metavar="BYTES",
            help="Bytes one SSH node may send back; a longer reply is an error for that host.",
        ),
        *_ssh(),
    ]

    @functools.wraps(f)
    def packed(**kwargs: Any) -> Any:
        reach = Reach(**{name: kwargs.pop(name) for name in Reach.__dataclass_fields__})
        return f(reach=reach, **kwargs)

    return _apply(packed, options)


@dataclasses.dataclass
class Reach:
    """Which targets a command works on and how to reach them (the shared options)."""

    targets: tuple[str, ...]
    inventory: str | None
    limit: str | None
    forks: int
    timeout: float
    host_timeout: float
    max_reply: int
    accept_new_host_keys: bool
    max_file_size: int
    identity: str | None
    known_hosts: str | None

    def jobs(self, default: tuple[str, ...] = ()) -> list[Any]:
        from assessor.assess.pipeline import Job
        from assessor.targets import TargetOptions, open_target

        targets = self.targets or (() if self.inventory else default)
        if not targets and not self.inventory:
            raise click.UsageError(
                "give --target (local, snapshot:DIR, mock:NAME, ssh://host, ...) or --inventory FILE"
            )
        if self.limit and not self.inventory:
            raise click.UsageError("--limit selects hosts of an --inventory")
        options = TargetOptions(
            accept_new_host_keys=self.accept_new_host_keys,
            identity=self.identity,
            known_hosts=self.known_hosts,
            host_timeout=self.host_timeout,
            max_file_bytes=self.max_file_size * 1024 * 1024,
            max_reply=self.max_reply,
        )
        jobs = []
        for spec in targets:
            # snapshot:DIR of host snapshots (capture.yml, capture -i, assess --out): one job per host
            fleet = _snapshot_fleet(spec)
            if fleet:
                jobs += [Job(sub.name, open_target(f"snapshot:{sub}", options, name=sub.name)) for sub in fleet]
            else:
                jobs.append(Job(spec, open_target(spec, options)))
        if self.inventory:
            from assessor.targets import inventory as inv

            for host in inv.load(self.inventory, self.limit):
                ssh = host.ssh if host.target.startswith("ssh://") else None
                jobs.append(Job(host.name, open_target(host.target, options, name=host.name, ssh=ssh)))
        return jobs


def active_option(f: Any) -> Any:
    """--with: the active tests to run besides the capture (they load the node, so only on request)."""
    return click.option(
        "--with",
        "active",
        default="",
        metavar="TESTS",
        help="Also run active tests, comma-separated: nccl[:GPUS] (all_reduce_perf, 8 GPUs), dcgm[:LEVEL] "
        "(dcgmi diag -r 2), hpl[:GPUS] (HPL-NVIDIA's hpl.sh, 8 GPUs), nvbandwidth (host/device copies).",
    )(f)


def _snapshot_fleet(spec: str) -> list[Any]:
    if not spec.startswith("snapshot:"):
        return []
    from assessor.capture.snapshot import host_snapshots

    return host_snapshots(spec.removeprefix("snapshot:"))


def active_tests(text: str) -> tuple[str, ...]:
    from assessor.capture.run import active_command
    from assessor.errors import InputError

    tests = tuple(t.strip() for t in text.split(",") if t.strip())
    for test in tests:
        try:
            active_command(test)
        except InputError as exc:
            raise InputError(f"--with: {exc}") from None
    return tests
