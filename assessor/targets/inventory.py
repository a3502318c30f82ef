"""Ansible inventories as gpulab targets, read with ansible-core's own inventory manager.

One file drives both Ansible and gpulab: every form Ansible accepts (YAML, INI, groups,
children, group and host vars, inventory scripts and plugins) works. ansible-core is imported
only here, so start-up without an inventory stays fast.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.secrets import redact


@dataclass
class InventoryHost:
    name: str
    target: str  # ssh://user@host:port, or the gpulab_target host var (mock:hgx-h100)
    ssh: dict[str, Any]  # SshParams fields from ansible_* vars (password kept out of the target string)


# What each inventory read found, by the files it read: a cohort command looks hosts up one by one (capture,
# start, grade of each host) and ansible-core takes tens of milliseconds per read, so reading the inventory for
# every lookup made cohort commands quadratic in the number of hosts. A file changed since (or its group_vars
# and host_vars) is read again.
_READ: dict[tuple[str, str | None], tuple[tuple[tuple[str, int, int], ...], list[InventoryHost]]] = {}


def load(path: str, limit: str | None = None) -> list[InventoryHost]:
    """The inventory's hosts (after ``--limit``), in inventory order; read once while its files stay as they are."""
    source = Path(path)
    if not source.exists():
        raise InputError(f"{path}: inventory file does not exist")
    if source.is_file() and os.access(source, os.X_OK):  # an inventory script may answer differently each time
        return _read(source, path, limit)
    key = (str(source.resolve()), limit)
    stamp = _stamp(source)
    known = _READ.get(key)
    if known is None or known[0] != stamp:
        known = (stamp, _read(source, path, limit))
        _READ[key] = known
    return [replace(host, ssh=dict(host.ssh)) for host in known[1]]


def _stamp(source: Path) -> tuple[tuple[str, int, int], ...]:
    """What an inventory read depends on that a stat can see: the source (a file, or a folder of them) and the
    group_vars and host_vars beside it, each file's path, size and change time."""
    places = [source] + [source.parent / d for d in ("group_vars", "host_vars")]
    if source.is_dir():
        places += [source / d for d in ("group_vars", "host_vars")]
    found = []
    for place in places:
        files = sorted(p for p in place.rglob("*") if p.is_file()) if place.is_dir() else [place]
        for file in files:
            with contextlib.suppress(OSError):
                info = file.stat()
                found.append((str(file), info.st_size, info.st_mtime_ns))
    return tuple(found)


def _read(source: Path, path: str, limit: str | None) -> list[InventoryHost]:
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    loader = DataLoader()
    warnings: list[str] = []
    try:
        with _collected_warnings(warnings), _unparsed_is_failed():
            inventory = InventoryManager(loader=loader, sources=[str(source)])
    except AnsibleError as exc:
        raise InputError(_one_line(warnings, str(exc), path)) from None
    variables = VariableManager(loader=loader, inventory=inventory)
    if limit:
        inventory.subset(limit)
    hosts = inventory.get_hosts("all")
    if not hosts:
        what = f" matching --limit {limit}" if limit else ""
        raise InputError(f"{path}: no hosts{what}")
    out = []
    for host in hosts:
        hv = variables.get_vars(host=host, include_hostvars=False)
        out.append(_host(host.name, hv, path))
    return out


@contextlib.contextmanager
def _unparsed_is_failed() -> Iterator[None]:
    """Fail loudly on a source no plugin understands, instead of Ansible's warning and zero hosts: set for
    this parse only, so nothing else in the process (a playbook run, a linter) sees Ansible's settings
    changed."""
    from ansible import constants

    names = ("INVENTORY_UNPARSED_IS_FAILED", "INVENTORY_ANY_UNPARSED_IS_FAILED")
    saved = {name: getattr(constants, name) for name in names}
    for name in names:
        setattr(constants, name, True)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(constants, name, value)


def _host(name: str, hv: dict[str, Any], path: str) -> InventoryHost:
    from assessor.neutralise import visible
    from assessor.secrets import has_password, redact

    if name in (".", "..") or "/" in name or "\\" in name or not name.strip():
        # a host's name becomes a folder of --out and of the gradebook: it must not be a path
        raise InputError(f"{path}: host {visible(name)!r}: a host name cannot be '.', '..' or contain a slash")
    address = str(hv.get("ansible_host") or name)
    try:
        port = int(hv.get("ansible_port") or 22)
    except (TypeError, ValueError):
        raise InputError(
            f"{path}: host {name}: ansible_port must be a number, got {hv.get('ansible_port')!r}"
        ) from None
    user = hv.get("ansible_user")
    ssh = {
        "host": address,
        "port": port,
        "user": str(user) if user else None,
        "key_file": _path_or_none(hv.get("ansible_ssh_private_key_file")),
        "password": hv.get("ansible_password") or hv.get("ansible_ssh_pass"),
    }
    target = hv.get("gpulab_target")
    if target is not None and has_password(str(target)):
        raise InputError(
            f"{path}: host {name}: gpulab_target {redact(str(target))!r} carries a password: "
            "use a key, or ansible_password (passed to ssh through sshpass, never stored)"
        )
    if target is None:
        login = f"{user}@" if user else ""
        host_part = f"[{address}]" if ":" in address else address
        target = f"ssh://{login}{host_part}" + (f":{port}" if port != 22 else "")
    return InventoryHost(name, str(target), ssh)


@contextlib.contextmanager
def _collected_warnings(into: list[str]) -> Iterator[None]:
    """Keep Ansible's parse warnings (it prints them itself) so the error can quote them."""
    from ansible.utils.display import Display

    display = Display()
    originals = display.warning, display.error_as_warning

    def warning(msg: str, *args: Any, **kwargs: Any) -> None:
        into.append(str(msg))

    def error_as_warning(msg: str, exception: BaseException, *args: Any, **kwargs: Any) -> None:
        origin = getattr(exception, "obj", None)  # ansible's Origin tag: path, line_num
        line = getattr(origin, "line_num", None)
        where = f"Origin: {getattr(origin, 'path', '')}:{line}" if line else ""
        into.append(f"{msg} {exception}\n{where}")

    display.warning, display.error_as_warning = warning, error_as_warning
    try:
        yield
    finally:
        display.warning, display.error_as_warning = originals


def _path_or_none(value: Any) -> str | None:
    return os.path.expanduser(str(value)) if value else None


def _one_line(warnings: list[str], error: str, path: str) -> str:
    """Ansible's per-plugin parse failures as one line naming file, line and problem.

    Each plugin that tried the file left a warning; the one that points at a line of the
    file (the YAML plugin for YAML, the INI plugin for INI) says what is wrong.
    """
    for text in warnings:
        origin = re.search(r"Origin: (\S+?):(\d+)(?::\d+)?", text)
        if origin:
            problem = re.search(r"(YAML parsing failed: [^\n]+|Failed to parse inventory: [^\n]+)", text)
            reason = problem.group(1) if problem else text.strip().splitlines()[0]
            return redact(f"{origin.group(1)}:{origin.group(2)}: cannot read inventory: {reason.strip()}")
    plugin = "'ini'" if not path.endswith((".yml", ".yaml", ".json")) else "'yaml'"
    for text in warnings:
        if plugin in text:
            detail = re.search(r"plugin\.\s+(.+?)(?:\n|$)", text)
            return redact(f"{path}: cannot read inventory: {(detail.group(1) if detail else text).strip()}")
    return redact(f"{path}: cannot read inventory: {error}")


def find_host(inventory: str, name: str) -> InventoryHost:
    """The host ``name`` of ``inventory``; InputError when there is none (Ansible would skip it silently)."""
    from assessor.targets import parse_spec

    parse_spec(name, inventory)  # a host name, not a target spec
    hosts = [h for h in load(inventory) if h.name == name]
    if not hosts:
        raise InputError(f"{inventory}: no host named {name}")
    return hosts[0]
