"""Playbooks on real nodes through ansible-runner: the one module that imports ``ansible_runner``.

Labs (:mod:`assessor.labs.drivers.ansible`) and fleets (``gpulab prepare``, ``capture.yml``) both run
playbooks here, the same way:

- a fresh private data directory per run, removed afterwards, so nothing of one run (facts cache,
  artifacts, SSH connections) is seen by the next;
- host keys checked as gpulab checks them: ``StrictHostKeyChecking=yes`` (``accept-new`` only with
  ``--accept-new-host-keys``), ``--known-hosts`` made absolute before Ansible changes directory, and these
  options first on ssh's command line, where OpenSSH takes the first value of each option, so an
  inventory's own ``ansible_ssh_common_args`` cannot loosen them;
- SSH connections shared only within the run: the ControlPath lives in the private directory and every
  master is told to exit when the run ends, so a second run always makes a new connection and checks the
  host key again (a node whose key changed a second ago is refused);
- Ansible quiet (its own warnings never reach the user); events reported host by host to a callback;
- nothing outlives a run. On the node: every remote command goes through gpulab's ``gpulab_ssh`` connection
  (:mod:`assessor.targets.ansible_plugins.connection.gpulab_ssh`), which runs it under the guard of
  :mod:`assessor.targets.guard`: a task Ansible gave up on (``ANSIBLE_TASK_TIMEOUT``) is ended on the node a
  moment later, and whatever runs there ends when the run's connections close. Here: ansible-playbook runs
  in a session of its own (ansible-runner spawns it on a pty) and is killed as a whole process group when
  the run is over its limit, when gpulab is interrupted (SIGINT, SIGTERM: :data:`assessor.targets.guard.STOP`,
  or a KeyboardInterrupt in the thread that waits for it), and the run's SSH masters are told to exit after.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assessor.targets import TargetOptions

# a host's part of a run: "ok", "changed", "failed" or "unreachable", and why
HostEvent = Callable[[str, str, str], None]


@dataclass
class PlaybookRun:
    """How a playbook run went, host by host."""

    rc: int
    status: str
    hosts: dict[str, str] = field(default_factory=dict)  # host -> ok / failed / unreachable
    reasons: dict[str, str] = field(default_factory=dict)  # host -> "task 'NAME': message"
    events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # why the playbook did not run at all (a syntax error, a missing role)

    @property
    def ok(self) -> bool:
        return self.rc == 0 and all(s == "ok" for s in self.hosts.values())


def known_hosts_files(options: TargetOptions) -> list[str]:
    """The known_hosts files ssh reads: ``--known-hosts`` (absolute) first, then ~/.ssh/known_hosts."""
    files = []
    if options.known_hosts:
        files.append(str(Path(options.known_hosts).expanduser().resolve()))
    return [*files, "~/.ssh/known_hosts"]


def ssh_common_args(options: TargetOptions) -> str:
    """OpenSSH options for Ansible: host keys checked as gpulab checks them (refused unless known or accept-new).

    ``--known-hosts FILE`` is read besides ~/.ssh/known_hosts, as paramiko does for `gpulab assess`; accepted
    new keys are written to the first file named. The path is made absolute: Ansible runs elsewhere.
    """
    args = ["-o", "StrictHostKeyChecking=" + ("accept-new" if options.accept_new_host_keys else "yes")]
    if options.known_hosts:
        files = known_hosts_files(options)
        args += ["-o", "UserKnownHostsFile=" + " ".join(f'"{f}"' if " " in f else f for f in files)]
    return shlex.join(args)


def ssh_args(options: TargetOptions, control_dir: Path) -> str:
    """ssh_args for the run: connections shared within it only (a ControlPath in its private directory),
    and the host-key options ahead of anything an inventory adds."""
    return " ".join(
        [
            "-o ControlMaster=auto",
            "-o ControlPersist=30s",
            f"-o ControlPath={shlex.quote(str(control_dir / '%C'))}",
            ssh_common_args(options),
        ]
    )


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
        hostvars["ansible_ssh_private_key_file"] = str(Path(options.identity).expanduser().resolve())
    return params.host, hostvars


def run_limit(options: TargetOptions) -> float:
    """How long one ansible-playbook run may take in all: tasks run in parallel over the hosts, each within
    ``host_timeout``; a playbook has a few of them."""
    return max(60.0, 4 * options.host_timeout)


def guard_environment(options: TargetOptions) -> dict[str, str]:
    """What puts every remote command of the run under gpulab's guard: the ``gpulab_ssh`` connection plugin as
    the default connection, the guard's text and each command's limit (a task's own, ``host_timeout``).

    A host whose inventory names its connection (``ansible_connection: ssh``, ``paramiko_ssh``) keeps it and
    runs unguarded: Ansible still gives up on its hung task, but what the task started stays on the node."""
    from assessor.targets import ansible_plugins, guard

    plugins = str(Path(ansible_plugins.__file__).resolve().parent / "connection")
    configured = os.environ.get("ANSIBLE_CONNECTION_PLUGINS", "")
    env = {
        "ANSIBLE_CONNECTION_PLUGINS": os.pathsep.join([plugins, configured]) if configured else plugins,
        "GPULAB_REMOTE_GUARD": guard.GUARD,
        "GPULAB_REMOTE_LIMIT": str(guard.limit_s(max(1, round(options.host_timeout)))),
    }
    if os.environ.get("ANSIBLE_TRANSPORT", "ssh") in ("ssh", "smart"):  # unless the user chose another
        env["ANSIBLE_TRANSPORT"] = "gpulab_ssh"
    return env


def environment(options: TargetOptions, control_dir: Path) -> dict[str, str]:
    """Ansible's environment for one run."""
    env = {
        # ansible-runner turns host key checking off unless told; gpulab never does.
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        # An inventory may pick the paramiko connection (`ansible_connection: paramiko_ssh`): it checks keys
        # too, never adds one on its own, and refuses an unknown key with an error rather than the yes/no
        # prompt nobody would see (it prompts unless persistent connections are on; only the paramiko and
        # network plugins read that switch).
        "ANSIBLE_PARAMIKO_HOST_KEY_AUTO_ADD": "False",
        "ANSIBLE_PARAMIKO_RECORD_HOST_KEYS": "False",
        "ANSIBLE_USE_PERSISTENT_CONNECTIONS": "True",
        "ANSIBLE_TIMEOUT": str(max(1, round(options.connect_timeout))),
        # every task of a lab's playbook ends within the per-host limit: a hung tool on one node (an
        # nvidia-smi waiting on a GPU that fell off the bus) fails that node's task and the others go on
        "ANSIBLE_TASK_TIMEOUT": str(max(1, round(options.host_timeout))),
        "ANSIBLE_SSH_ARGS": ssh_args(options, control_dir),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control_dir),
        "ANSIBLE_SSH_COMMON_ARGS": ssh_common_args(options),
        # one SSH round trip per task instead of three, unless the user said otherwise (requiretty)
        "ANSIBLE_PIPELINING": os.environ.get("ANSIBLE_PIPELINING", "True"),
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
    }
    if options.identity:
        env["ANSIBLE_PRIVATE_KEY_FILE"] = str(Path(options.identity).expanduser().resolve())
    env.update(guard_environment(options))
    # ansible-playbook from the interpreter's own environment (a venv not on PATH)
    bindir = Path(sys.executable).parent
    if (bindir / "ansible-playbook").exists():
        env["PATH"] = os.pathsep.join([str(bindir), os.environ.get("PATH", "")])
    return env


def run(
    playbook: Path | str,
    inventory: str | Mapping[str, Any],
    options: TargetOptions | None = None,
    *,
    limit: str | None = None,
    extravars: Mapping[str, Any] | None = None,
    forks: int | None = None,
    on_host: HostEvent | None = None,
) -> PlaybookRun:
    """Run ``playbook`` on ``inventory`` (a file, or an inventory as a dict) in a fresh private directory.

    ``on_host(host, status, why)`` is called once per host as its outcome is known: at its first failure
    or unreachable task, else when the play ends.
    """
    import ansible_runner

    options = options or TargetOptions()
    if isinstance(inventory, str):
        inventory = str(Path(inventory).expanduser().resolve())
    with _private_directory() as private:
        control_dir = Path(private) / "cp"
        control_dir.mkdir(mode=0o700)
        # how often ansible-runner looks whether to stop (read from this file only: a settings= argument is
        # dropped when the file is missing)
        (Path(private) / "env").mkdir(mode=0o700)
        (Path(private) / "env" / "settings").write_text("pexpect_timeout: 1\n", encoding="utf-8")
        host_keys = {
            # as extra variables they outrank anything the inventory sets for these
            "ansible_ssh_args": ssh_args(options, control_dir),
            "ansible_host_key_checking": True,
            "ansible_ssh_host_key_checking": True,
            # an inventory's `ansible_connection: paramiko_ssh` reads this one
            "ansible_paramiko_host_key_checking": True,
        }
        result = PlaybookRun(rc=-1, status="unstarted")
        told: set[str] = set()

        def handler(event: dict[str, Any]) -> bool:
            _host_outcome(event, result, told, on_host)
            return True

        try:
            runner = _run_stoppable(
                ansible_runner.run,
                private_data_dir=private,
                playbook=str(Path(playbook).resolve()),
                inventory=inventory,
                limit=limit,
                extravars={**(extravars or {}), **host_keys},
                envvars=environment(options, control_dir),
                forks=forks,
                # the last resort when a task's own limit (ANSIBLE_TASK_TIMEOUT) did not end a hung host: the
                # whole ansible-playbook is stopped and the run says "timeout"
                timeout=round(run_limit(options)),
                quiet=True,
                suppress_env_files=True,
                event_handler=handler,
            )
        finally:
            _close_masters(control_dir)
        result.rc, result.status = int(runner.rc), str(runner.status)
        result.events = list(runner.events)
        if result.rc != 0 and not result.hosts:
            result.error = _ansible_error(result.events) or f"ansible-playbook exited {result.rc}"
    return result


@contextlib.contextmanager
def _private_directory() -> Iterator[str]:
    """A fresh private directory for one run, removed afterwards: once more a moment later when ansible-runner,
    stopped in the middle, was still writing its last events into it."""
    private = tempfile.mkdtemp(prefix="gpulab-ansible-")
    try:
        yield private
    finally:
        for attempt in range(5):
            try:
                shutil.rmtree(private)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.2 * (attempt + 1))
        shutil.rmtree(private, ignore_errors=True)


def _run_stoppable(start: Callable[..., Any], **kwargs: Any) -> Any:
    """``start(**kwargs)`` (``ansible_runner.run``) in a thread of its own, ended early when gpulab stops.

    ansible-runner checks ``cancel_callback`` about once a second (``pexpect_timeout``, :func:`run`) and, when
    it says so, kills ansible-playbook's process group (its forks and their ssh clients with it). The callback
    is true when :data:`~assessor.targets.guard.STOP` is set (a signal, in any thread) or when the thread
    waiting here was interrupted (KeyboardInterrupt): then the run is cancelled, waited for, and the
    interrupt goes on.
    Given a cancel_callback, ansible-runner also leaves the process's own signal handlers alone.
    """
    from assessor.targets.guard import STOP

    cancel = threading.Event()
    outcome: list[Any] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            outcome.append(start(**kwargs))
        except BaseException as exc:  # handed to the waiting thread
            failure.append(exc)

    kwargs["cancel_callback"] = lambda: cancel.is_set() or STOP.is_set()
    worker = threading.Thread(target=work, name="gpulab-ansible", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except BaseException:
        cancel.set()
        worker.join(30)  # ansible-runner kills the group at its next look (a second) and then returns
        raise
    if failure:
        raise failure[0]
    return outcome[0]


def _host_outcome(event: dict[str, Any], result: PlaybookRun, told: set[str], on_host: HostEvent | None) -> None:
    kind = event.get("event")
    data = event.get("event_data") or {}
    if kind in ("runner_on_failed", "runner_on_unreachable") and not data.get("ignore_errors"):
        host = str(data.get("host", "?"))
        status = "unreachable" if kind == "runner_on_unreachable" else "failed"
        result.hosts.setdefault(host, status)
        result.reasons.setdefault(host, failed_task([event]) or status)
        if host not in told:
            told.add(host)
            if on_host is not None:
                on_host(host, status, result.reasons[host])
    elif kind == "playbook_on_stats":
        seen: set[str] = set()
        for key in ("ok", "changed", "skipped", "failures", "dark", "processed"):
            seen.update((data.get(key) or {}).keys())
        for host in sorted(seen):
            if host in (data.get("dark") or {}):
                result.hosts.setdefault(host, "unreachable")
            elif host in (data.get("failures") or {}):
                result.hosts.setdefault(host, "failed")
            else:
                result.hosts.setdefault(host, "ok")
            if host not in told:
                told.add(host)
                if on_host is not None:
                    on_host(host, result.hosts[host], result.reasons.get(host, ""))


def _first_words(text: str) -> str:
    """What went wrong, from a task's output: ssh's host-key verdicts by name, else the first line that
    says something (nvidia-smi and systemctl add "Terminating early...", "See 'systemctl status'..." after
    it; ssh frames its warnings in lines of @)."""
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        return "host key has CHANGED (REMOTE HOST IDENTIFICATION HAS CHANGED): refused"
    if "Host key verification failed" in text:
        return "host key verification failed: the host key is unknown or changed"
    for line in text.splitlines():
        line = line.strip()
        if any(c.isalnum() for c in line):
            return line
    return text.splitlines()[0].strip()


def _ansible_error(events: list[dict[str, Any]]) -> str | None:
    """Ansible's own error message (ERROR! or [ERROR]: lines), without its colours."""
    import re

    for event in events:
        for line in str(event.get("stdout") or "").splitlines():
            text = re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
            if text.startswith(("ERROR!", "[ERROR]:")):
                return text.removeprefix("ERROR!").removeprefix("[ERROR]:").strip()
    return None


def _close_masters(control_dir: Path) -> None:
    """Tell every SSH master of the run to exit now (nobody may reuse it, and it holds no process after)."""
    if not control_dir.is_dir():
        return
    for sock in control_dir.iterdir():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "gpulab-control"],
                capture_output=True,
                timeout=5,
                check=False,
            )


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
                message = _first_words(text)
                break
        if res.get("rc") not in (None, 0):
            message = f"{message} (exit {res['rc']})" if message else f"exit {res['rc']}"
        return f"task '{data.get('task', '?')}': {message or 'failed'}"
    return None


def node_playbook(name: str) -> Path:
    """One of gpulab's node-wide playbooks (``prepare-node.yml``, ``capture.yml``)."""
    from assessor.content import folder

    return folder("playbooks") / name


def prepare(
    inventory: str,
    options: TargetOptions | None = None,
    *,
    limit: str | None = None,
    fixture: str | None = None,
    install_packages: bool = True,
    extravars: Mapping[str, Any] | None = None,
    forks: int | None = None,
    on_host: HostEvent | None = None,
) -> PlaybookRun:
    """Run ``prepare-node.yml``: capture's tools on every node, the simulator (``fixture``) where no GPU is."""
    import assessor

    variables: dict[str, Any] = {
        "gpulab_source": str(Path(assessor.__file__).resolve().parent),
        "gpulab_install_packages": install_packages,
    }
    if fixture:
        from assessor.sim.fixtures import fixture_names

        if fixture not in fixture_names():
            from assessor.errors import InputError

            raise InputError(f"unknown fixture {fixture!r} (fixtures: {', '.join(fixture_names())})")
        variables["gpulab_fixture"] = fixture
    variables.update(extravars or {})
    return run(
        node_playbook("prepare-node.yml"),
        inventory,
        options,
        limit=limit,
        extravars=variables,
        forks=forks,
        on_host=on_host,
    )


def capture_fleet(
    inventory: str,
    snapshot_dir: Path | str,
    options: TargetOptions | None = None,
    *,
    limit: str | None = None,
    timeout: float = 30.0,
    max_reply: int | None = None,
    extravars: Mapping[str, Any] | None = None,
    forks: int | None = None,
    on_host: HostEvent | None = None,
) -> PlaybookRun:
    """Run ``capture.yml``: every host's snapshot in ``snapshot_dir/<inventory_hostname>/``."""
    variables: dict[str, Any] = {
        "gpulab_snapshot_dir": str(Path(snapshot_dir).resolve()),
        "gpulab_capture_timeout": timeout,
        "gpulab_controller_python": sys.executable,
    }
    if max_reply is not None:
        variables["gpulab_max_reply"] = max_reply
    variables.update(extravars or {})
    return run(
        node_playbook("capture.yml"),
        inventory,
        options,
        limit=limit,
        extravars=variables,
        forks=forks,
        on_host=on_host,
    )
