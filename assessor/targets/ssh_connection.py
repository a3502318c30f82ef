"""SSH to one node with paramiko: connect with a host-key policy, run the batched capture.

Host keys are checked against known_hosts and refused when unknown or changed, unless the
user asked to accept new ones (fresh lab VMs); a changed key is refused always. Passwords
never appear in a repr, a message or a log line.

What a node sends back is data from a machine gpulab does not control: the reply is read up to
``max_reply`` bytes and no further (a node printing without end costs the limit, not memory), and
the whole host, connection included, ends within ``host_timeout``. paramiko's own log (tracebacks
from its transport thread) never reaches the user's terminal: every failure is a HostError in words.

Nothing of a capture outlives it on the node: the script runs under :func:`assessor.targets.guard.guarded`,
whose watchdog ends every process of the SSH session once the connection is gone (a host timed out here, or
gpulab was interrupted or killed) or the host's time limit has passed. A capture in flight stops early when
gpulab is told to stop (:data:`assessor.targets.guard.STOP`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assessor.capture.batch import DEFAULT_MAX_REPLY, size_words
from assessor.errors import GpulabError

if TYPE_CHECKING:
    import paramiko


class HostError(GpulabError):
    """This node could not be assessed; the others go on."""


# paramiko logs a transport thread's failures with their traceback; Python's last-resort handler would
# print them on stderr. gpulab reports each failure itself, in words.
_paramiko_log = logging.getLogger("paramiko")
_paramiko_log.addHandler(logging.NullHandler())
_paramiko_log.propagate = False


@dataclass
class SshParams:
    host: str  # what to connect to (ansible_host)
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    password: str | None = field(default=None, repr=False)
    accept_new_host_keys: bool = False
    known_hosts: str | None = None  # a known_hosts file besides ~/.ssh/known_hosts
    connect_timeout: float = 10.0
    host_timeout: float = 600.0  # the whole capture of one node, connection included
    max_reply: int = DEFAULT_MAX_REPLY  # bytes the node may send back

    @property
    def address(self) -> str:
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    @property
    def login(self) -> str:
        return f"{self.user}@{self.address}" if self.user else self.address


_known_hosts_lock = threading.Lock()


def _policy(params: SshParams) -> Any:
    import paramiko

    if not params.accept_new_host_keys:
        return paramiko.RejectPolicy()

    class AcceptNew(paramiko.MissingHostKeyPolicy):
        """Trust a key seen for the first time and remember it; changed keys still fail."""

        def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
            client.get_host_keys().add(hostname, key.get_name(), key)
            path = Path(params.known_hosts or Path.home() / ".ssh" / "known_hosts")
            with _known_hosts_lock:
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")

    return AcceptNew()


def connect(params: SshParams) -> paramiko.SSHClient:
    """An authenticated connection, or HostError with the reason in words."""
    import paramiko

    if params.key_file and not Path(params.key_file).expanduser().is_file():
        raise HostError(f"key file not found: {params.key_file}")
    # a node that accepts TCP and then says nothing costs at most the host's time limit
    wait = max(0.1, min(params.connect_timeout, params.host_timeout))
    client = paramiko.SSHClient()
    with contextlib.suppress(OSError):
        client.load_system_host_keys()
    if params.known_hosts and Path(params.known_hosts).exists():
        client.load_host_keys(params.known_hosts)
    client.set_missing_host_key_policy(_policy(params))
    try:
        client.connect(
            params.host,
            port=params.port,
            username=params.user,
            key_filename=str(Path(params.key_file).expanduser()) if params.key_file else None,
            password=params.password,
            timeout=wait,
            banner_timeout=wait,
            auth_timeout=wait,
            allow_agent=True,
            look_for_keys=params.key_file is None,
        )
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise HostError(
            f"host key for {params.address} has CHANGED (got {exc.key.get_name()} "
            f"{exc.key.get_fingerprint().hex()}): refusing to connect; if the node was rebuilt, "
            f"remove its old line from known_hosts (ssh-keygen -R '{params.address}')"
        ) from None
    except paramiko.AuthenticationException:
        client.close()
        raise HostError(f"authentication refused for {params.login}: check the user and key (or password)") from None
    except paramiko.SSHException as exc:
        transport = client.get_transport()
        banner = bool(getattr(transport, "remote_version", "")) if transport is not None else False
        client.close()
        if "Error reading SSH protocol banner" in str(exc) or not banner:
            raise HostError(f"no SSH banner from {params.address} within {wait:g} s") from None
        if "No existing session" in str(exc) or "Negotiation" in str(exc):
            raise HostError(f"SSH key exchange with {params.address} stalled: no answer within {wait:g} s") from None
        if "not found in known_hosts" in str(exc):
            raise HostError(
                f"unknown host key for {params.address}: add it to known_hosts (ssh-keyscan -p {params.port} "
                f"{params.host}) or pass --accept-new-host-keys for fresh lab machines"
            ) from None
        raise HostError(f"SSH to {params.address} failed: {exc}") from None
    except TimeoutError:
        client.close()
        raise HostError(f"unreachable: no answer from {params.address} within {wait:g} s") from None
    except (ValueError, EOFError) as exc:  # a key file paramiko cannot read, a peer that hung up
        client.close()
        raise HostError(f"SSH to {params.address} failed: {exc or type(exc).__name__}") from None
    except OSError as exc:
        client.close()
        reason = exc.strerror or str(exc)
        if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
            reason = "connection refused"
        raise HostError(f"unreachable: {params.address}: {reason}") from None
    return client


def run_script(
    client: paramiko.SSHClient,
    script: str,
    params: SshParams,
    shell: str = "sh -s",
    deadline: float | None = None,
) -> str:
    """Feed ``script`` to ``shell`` on the node and return its stdout, within the host time limit.

    At most ``params.max_reply`` bytes are read: a longer reply is a HostError naming the limit, and the
    channel is closed at once (the node stops on a broken pipe), so memory never holds more than the limit.
    ``deadline`` (time.monotonic) is when the host's time runs out, when the connection already used some.
    """
    from assessor.targets.guard import guarded

    if deadline is None:
        deadline = time.monotonic() + params.host_timeout
    command = guarded(shell, deadline - time.monotonic())  # on the node, nothing of it outlives the limit
    return _exchange(client, command, script.encode(), params, deadline, "capture")[1]


def run_line(client: paramiko.SSHClient, line: str, params: SshParams, timeout: float) -> tuple[int, str]:
    """Run one command line on the node (as sent, already quoted); its exit status (-1: none) and stdout."""
    return _exchange(client, line, b"", params, time.monotonic() + timeout, f"`{line.split()[0]}`")


def _exchange(
    client: paramiko.SSHClient, command: str, data_in: bytes, params: SshParams, deadline: float | None, what: str
) -> tuple[int, str]:
    """Run ``command`` with ``data_in`` on its stdin; its exit status and stdout, bounded in time and size."""
    from assessor.targets.guard import STOP

    if deadline is None:
        deadline = time.monotonic() + params.host_timeout
    try:
        transport = client.get_transport()
        if transport is None or not transport.is_active():
            raise HostError(f"connection to {params.address} dropped before the {what}")
        channel = transport.open_session(timeout=params.connect_timeout)
        channel.exec_command(command)
        if data_in:
            channel.sendall(data_in)
        channel.shutdown_write()
        reply = bytearray()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                channel.close()  # the connection closes next: the guard on the node ends what still runs
                raise HostError(f"{what} on {params.address} took longer than {params.host_timeout:g} s")
            if STOP.is_set():
                channel.close()
                raise HostError(f"{what} on {params.address} interrupted")
            channel.settimeout(min(remaining, 0.5))
            try:
                data = channel.recv(65536)
            except TimeoutError:
                if channel.exit_status_ready() and not channel.recv_ready():
                    break
                continue
            if not data:
                break
            if len(reply) + len(data) > params.max_reply:
                channel.close()
                raise HostError(
                    f"{params.address} sent more than the reply limit of {size_words(params.max_reply)} "
                    f"(--max-reply): {what} refused"
                )
            reply += data
        while channel.recv_stderr_ready():
            channel.recv_stderr(65536)
        while not channel.exit_status_ready() and time.monotonic() < deadline:  # it follows the output's end
            time.sleep(0.005)
        status = channel.recv_exit_status() if channel.exit_status_ready() else -1
        return status, reply.decode("utf-8", "replace")
    except HostError:
        raise
    except (EOFError, OSError) as exc:
        raise HostError(f"connection to {params.address} dropped mid-capture: {exc or type(exc).__name__}") from None
    except Exception as exc:  # paramiko.SSHException and friends
        raise HostError(f"connection to {params.address} dropped mid-capture: {exc}") from None
