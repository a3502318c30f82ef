"""Targets: where facts come from (DESIGN.md, Targets). Each kind is imported lazily."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from assessor.capture.snapshot import Snapshot
from assessor.errors import InputError


class Target(Protocol):
    spec: str
    name: str | None

    def snapshot(self, *, timeout: float, active: tuple[str, ...] = ()) -> Snapshot: ...


@dataclass
class TargetOptions:
    """How to reach targets; SSH settings apply to ssh:// targets only."""

    accept_new_host_keys: bool = False
    identity: str | None = None  # private key file
    known_hosts: str | None = None
    connect_timeout: float = 10.0
    host_timeout: float = 600.0


@dataclass
class SnapshotTarget:
    spec: str
    path: Path
    name: str | None = None
    cpu_bound = True  # reading and parsing files: a fleet of these runs in processes

    def snapshot(self, *, timeout: float, active: tuple[str, ...] = ()) -> Snapshot:
        from assessor.capture import snapshot

        return snapshot.read(self.path)


@dataclass
class LocalTarget:
    spec: str = "local"
    name: str | None = None

    def snapshot(self, *, timeout: float, active: tuple[str, ...] = ()) -> Snapshot:
        import socket

        from assessor.capture.run import capture, run_local

        return capture(run_local, host=socket.gethostname(), timeout=timeout, active=active, nvml_json=_local_nvml)


def _local_nvml() -> str:
    import json

    import pynvml

    from assessor.capture.nvml import collect_json

    return json.dumps(collect_json(pynvml), indent=2)


def open_target(
    spec: str,
    options: TargetOptions | None = None,
    *,
    name: str | None = None,
    ssh: dict[str, Any] | None = None,
) -> Target:
    """A target from its spec: local, snapshot:DIR, mock:NAME, mock:FILE.json, ssh://...

    ``name`` is the inventory host name; ``ssh`` the connection settings an inventory gave.
    """
    options = options or TargetOptions()
    target: Target
    if spec == "local":
        target = LocalTarget()
    elif spec.startswith("snapshot:"):
        rest = spec.removeprefix("snapshot:")
        if not rest:
            raise InputError("snapshot: target needs a directory, e.g. snapshot:./node01")
        from assessor.capture.snapshot import validate_dir

        target = SnapshotTarget(spec, validate_dir(rest))
    elif spec.startswith("mock:"):
        from assessor.targets.mock import MockTarget

        target = MockTarget.open(spec)
    elif spec.startswith("ssh://"):
        from assessor.targets.ssh import SshTarget, parse_spec
        from assessor.targets.ssh_connection import SshParams

        params = SshParams(**ssh) if ssh else parse_spec(spec)
        params.accept_new_host_keys = options.accept_new_host_keys
        params.known_hosts = options.known_hosts
        params.connect_timeout = options.connect_timeout
        params.host_timeout = options.host_timeout
        if options.identity and not params.key_file:
            params.key_file = options.identity
        target = SshTarget(spec, params)
    else:
        raise InputError(
            f"unknown target {spec!r}: use local, snapshot:DIR, mock:NAME, mock:FILE.json or ssh://[user@]host[:port]"
        )
    if name is not None:
        target.name = name
    return target
