"""``ssh://[user@]host[:port]`` targets: one connection, one batched capture."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from assessor.capture.snapshot import Snapshot
from assessor.errors import InputError
from assessor.targets.ssh_connection import HostError, SshParams


def parse_spec(spec: str) -> SshParams:
    from assessor.secrets import has_password, redact

    shown = redact(spec)
    if has_password(spec):
        raise InputError(f"{shown}: no passwords in a target; use a key or the inventory")
    try:
        parts = urlsplit(spec)
        hostname = parts.hostname
    except ValueError:  # ssh://[::1 (an unclosed IPv6 bracket)
        raise InputError(f"bad ssh target {shown!r}: use ssh://[user@]host[:port]") from None
    if parts.scheme != "ssh" or not hostname:
        raise InputError(f"bad ssh target {shown!r}: use ssh://[user@]host[:port]")
    if parts.password is not None:
        raise InputError(f"{shown}: no passwords in a target; use a key or the inventory")
    try:
        port = parts.port or 22
    except ValueError:
        raise InputError(f"bad port in ssh target {shown!r}") from None
    return SshParams(hostname, port, unquote(parts.username) if parts.username else None)


def ssh_params(spec: str, options: Any, inventory_ssh: dict[str, Any] | None = None) -> SshParams:
    """Connection settings of an ssh:// target: the inventory's, else the spec's, with the user's options."""
    params = SshParams(**inventory_ssh) if inventory_ssh else parse_spec(spec)
    params.accept_new_host_keys = options.accept_new_host_keys
    params.known_hosts = options.known_hosts
    params.connect_timeout = options.connect_timeout
    params.host_timeout = options.host_timeout
    params.max_reply = getattr(options, "max_reply", params.max_reply)
    if options.identity and not params.key_file:
        params.key_file = options.identity
    return params


@dataclass
class SshTarget:
    spec: str
    params: SshParams
    name: str | None = None  # inventory host name, when it came from one

    @classmethod
    def open(cls, spec: str) -> SshTarget:
        return cls(spec, parse_spec(spec))

    def run_line(self, line: str, *, timeout: float) -> tuple[int, str]:
        """One command line on the node (already quoted for its shell): its exit status and stdout."""
        return run_command(self.params, line, timeout=timeout)

    def snapshot(self, *, timeout: float, active: tuple[str, ...] = ()) -> Snapshot:
        import time

        from assessor.capture import batch
        from assessor.capture.run import COMMANDS, active_command, capture
        from assessor.targets.ssh_connection import connect, run_script

        deadline = time.monotonic() + self.params.host_timeout  # the connection counts against the host's time
        # mlxlink runs once per adapter (assessor.capture.per_adapter): a second round below, once ibstat is known
        commands = list(COMMANDS) + [active_command(spec) for spec in active if spec != "mlxlink"]
        client = connect(self.params)
        try:
            text = batch.script(commands, timeout, nvml=True)
            output = run_script(client, text, self.params, batch.SHELL, deadline)
        finally:
            client.close()
        records = batch.parse_records(output, [*commands, batch.NVML_COMMAND], timeout, self.params.max_reply)
        if records.problem:
            raise HostError(f"{self.params.address}: {records.problem}")
        if not records.complete:
            raise HostError(
                f"connection to {self.params.address} dropped mid-capture "
                f"({len(records.outcomes)} of {len(commands)} commands finished)"
            )
        if "mlxlink" in active:  # a second round: mlxlink on each adapter the first round's ibstat listed
            self._per_adapter(records, timeout, deadline)
        snap = capture(records, host=self.name, timeout=timeout, active=active)
        batch.add_nvml(snap, records, timeout)
        return snap

    def _per_adapter(self, records: Any, timeout: float, deadline: float) -> None:
        """Run ``mlxlink -d DEV -m -c`` for each adapter ``ibstat`` listed, adding the outcomes to ``records``."""
        from assessor.capture import batch, per_adapter
        from assessor.capture.run import Command
        from assessor.targets.ssh_connection import connect, run_script

        ibstat = records.outcomes.get(("ibstat",))
        names = per_adapter.adapters(ibstat.stdout if ibstat is not None else None)
        if not names:
            return
        extra = [Command(f"mlxlink-{i}.txt", (per_adapter.argv(name),)) for i, name in enumerate(names)]
        client = connect(self.params)
        try:
            output = run_script(client, batch.script(extra, timeout), self.params, batch.SHELL, deadline)
        finally:
            client.close()
        more = batch.parse_records(output, extra, timeout, self.params.max_reply)
        if more.problem:
            raise HostError(f"{self.params.address}: {more.problem}")
        records.outcomes.update(more.outcomes)


def run_command(params: SshParams, line: str, *, timeout: float = 300.0) -> tuple[int, str]:
    """Run one command line on the node (what an SSH client sends); its exit status and stdout.

    The line is sent as written: it must already be quoted for a shell. Used for the admin login of a
    simulated node (``gpulab-node ...``), where the node's forced command reads it, not a shell.
    """
    from assessor.targets.ssh_connection import connect, run_line

    client = connect(params)
    try:
        return run_line(client, line, params, timeout)
    finally:
        client.close()
