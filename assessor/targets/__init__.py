"""Targets: where facts come from. One registry keyed by scheme; the spec is parsed here only.

Each kind of target says what it can do: whether a lab may change it (and the change lasts for the
next command), and which lab driver changes it (the simulator's, or Ansible's for real nodes).
Kinds are imported lazily, so a command that never opens an SSH target never imports paramiko.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from assessor.capture.snapshot import Snapshot
from assessor.errors import InputError

FORMS = "local, snapshot:DIR, mock:NAME, mock:FILE.json or ssh://[user@]host[:port]"


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
    max_file_bytes: int | None = None  # the largest tool output read from a snapshot (None: the default)
    max_reply: int = 256 * 1024 * 1024  # bytes one node may send back (--max-reply)


@dataclass(frozen=True)
class TargetKind:
    """A kind of target and what it can do."""

    name: str
    form: str  # how a user writes it
    description: str
    changeable: bool  # a lab can set it up and the change lasts for the next command
    lab_driver: str | None  # "sim" (the simulator's tools) or "ansible" (playbooks) for changeable kinds


KINDS: dict[str, TargetKind] = {
    k.name: k
    for k in (
        TargetKind("local", "local", "this host: NVML through pynvml, tools as subprocesses", False, None),
        TargetKind("snapshot", "snapshot:DIR", "a captured snapshot directory", False, None),
        TargetKind("mock", "mock:NAME", "a fresh simulated node in memory, gone when the command ends", False, None),
        TargetKind("mock-file", "mock:FILE.json", "a simulated node whose state lives in a file", True, "sim"),
        TargetKind("ssh", "ssh://[user@]host[:port]", "a remote node over SSH", True, "ansible"),
        TargetKind("inventory", "HOST with --inventory", "a host of an Ansible inventory", True, "ansible"),
    )
}


@dataclass(frozen=True)
class TargetSpec:
    """A parsed target spec: its kind and the part after the scheme."""

    spec: str
    kind: TargetKind
    rest: str = ""  # mock: fixture name or state file; snapshot: directory; inventory: host name
    path: Path | None = None  # the state file (mock-file), the directory (snapshot), the inventory (inventory)


def parse_spec(spec: str, inventory: str | None = None) -> TargetSpec:
    """What kind of target ``spec`` is; with ``inventory``, ``spec`` names one of its hosts."""
    if inventory is not None:
        if "://" in spec or spec.startswith(("mock:", "snapshot:")) or spec == "local":
            raise InputError(f"with --inventory, --target names one host of the inventory, not {spec}")
        return TargetSpec(spec, KINDS["inventory"], spec, Path(inventory))
    if spec == "local":
        return TargetSpec(spec, KINDS["local"])
    if spec.startswith("snapshot:"):
        rest = spec.removeprefix("snapshot:")
        if not rest:
            raise InputError("snapshot: target needs a directory, e.g. snapshot:./node01")
        return TargetSpec(spec, KINDS["snapshot"], rest, Path(rest))
    if spec.startswith("mock:"):
        rest = spec.removeprefix("mock:")
        if rest.endswith(".json") or "/" in rest:
            return TargetSpec(spec, KINDS["mock-file"], rest, Path(rest))
        return TargetSpec(spec, KINDS["mock"], rest)
    if spec.startswith("ssh://"):
        return TargetSpec(spec, KINDS["ssh"], spec.removeprefix("ssh://"))
    raise InputError(f"unknown target {spec!r}: use {FORMS}")


def open_target(
    spec: str,
    options: TargetOptions | None = None,
    *,
    name: str | None = None,
    ssh: dict[str, Any] | None = None,
) -> Target:
    """A target from its spec. ``name`` is the inventory host name; ``ssh`` the settings an inventory gave."""
    options = options or TargetOptions()
    parsed = parse_spec(spec)
    target: Target
    kind = parsed.kind.name
    if kind == "local":
        from assessor.targets.local import LocalTarget

        target = LocalTarget()
    elif kind == "snapshot":
        from assessor.capture.snapshot import validate_dir
        from assessor.targets.local import SnapshotTarget

        target = SnapshotTarget(spec, validate_dir(parsed.rest, any_names=True), max_bytes=options.max_file_bytes)
    elif kind in ("mock", "mock-file"):
        from assessor.targets.mock import MockTarget

        target = MockTarget.open(spec)
    else:
        from assessor.targets.ssh import SshTarget, ssh_params

        target = SshTarget(spec, ssh_params(spec, options, ssh))
    if name is not None:
        target.name = name
    return target
