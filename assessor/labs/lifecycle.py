"""A lab's life on a target: start (set up or break the node), capture for grading, solve, reset.

Targets:

- ``mock:FILE.json``: a simulated node in a state file. ``start`` restores the lab's fixture (keeping the
  host name), applies the scenario's faults (:mod:`assessor.sim.faults`) and runs its commands through the
  simulated tools; ``solve`` reverts the ``repair`` faults and runs the solution's commands; ``reset``
  writes the fixture back. The pseudo-command ``gpulab-env NAME=VALUE`` / ``gpulab-env -u NAME`` edits the
  node's NCCL environment (``state.nccl_env``), standing in for editing /etc/nccl.conf.
- ``mock:NAME``: a fresh node in memory, gone when the command ends: it can be graded, but starting or
  solving it would change nothing the next command sees, so those are refused with what to do instead.
- ``ssh://...``: the lab's playbooks (ansible-runner), from ``playbooks/`` beside ``labs/``, with the SSH
  settings the user gave (key, known_hosts, accepting new host keys) passed on to Ansible. With an
  Ansible inventory (``--inventory FILE``) the target is one of its hosts, reached as the inventory says.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assessor.errors import GpulabError, InputError
from assessor.facts import NodeFacts
from assessor.labs.attempts import Identity
from assessor.labs.loader import ENV_COMMAND, env_command_problem
from assessor.labs.model import FaultStep, Lab
from assessor.targets import TargetOptions

ACTIONS = ("setup", "solve", "reset")


class StepFailed(GpulabError):
    """A scenario or solution step the simulated node refused: the lab itself is broken."""


@dataclass(frozen=True)
class TargetKind:
    kind: str  # file | memory | ssh | inventory | design | other
    spec: str
    path: Path | None = None  # the state file (file), the inventory (inventory)


def classify(spec: str, inventory: str | None = None) -> TargetKind:
    """What kind of target ``spec`` is, for the lifecycle commands; with ``inventory``, a host of it."""
    if inventory is not None:
        if "://" in spec or spec.startswith(("mock:", "snapshot:")) or spec == "local":
            raise InputError(f"with --inventory, --target names one host of the inventory, not {spec}")
        return TargetKind("inventory", spec, Path(inventory))
    if spec.startswith("mock:"):
        rest = spec.removeprefix("mock:")
        if rest.endswith(".json") or "/" in rest:
            return TargetKind("file", spec, Path(rest))
        return TargetKind("memory", spec)
    if spec.startswith("ssh://"):
        return TargetKind("ssh", spec)
    return TargetKind("other", spec)


def _refuse(lab: Lab, action: str, target: TargetKind) -> GpulabError:
    if target.kind == "memory":
        fixture = lab.fixture or target.spec.removeprefix("mock:")
        return InputError(
            f"{target.spec} is a fresh in-memory node that is gone when this command ends, so `lab {action}` "
            f"would change nothing the next command sees; make a node that lasts: "
            f"`gpulab sim init --fixture {fixture} --state node.json` then `--target mock:node.json`"
        )
    return InputError(
        f"`lab {action}` needs a target it can change: mock:FILE.json (a simulated node) or ssh://host, "
        f"not {target.spec}"
    )


def _check_fixture(lab: Lab, target: TargetKind) -> None:
    if "simulator" not in lab.runs_on and target.kind in ("file", "memory"):
        raise InputError(f"lab {lab.id} runs on real nodes only (runs_on: {', '.join(lab.runs_on)})")


def _check_real(lab: Lab, target: TargetKind) -> None:
    if "real" not in lab.runs_on and target.kind in ("ssh", "inventory"):
        raise InputError(
            f"lab {lab.id} runs on the simulator only (it injects what real hardware can't safely): "
            f"use a mock:FILE.json target"
        )


# ---- simulated nodes -------------------------------------------------------------------------


def run_line(line: str, path: Path) -> str:
    """Run one scenario/solution command line on the node in ``path``; StepFailed when the node refuses it."""
    from assessor.sim.tools import Session, run_tool

    argv = shlex.split(line)
    if argv and argv[0] == ENV_COMMAND:
        return env_edit(argv, path)
    result = run_tool(argv, Session(path=path))
    if result.exit_code != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise StepFailed(f"`{line}` exited {result.exit_code} on the simulated node: {detail[-1] if detail else ''}")
    return f"$ {line}"


def env_edit(argv: list[str], path: Path) -> str:
    """``gpulab-env NAME=VALUE`` sets, ``gpulab-env -u NAME`` removes, a variable of ``state.nccl_env``."""
    from assessor.sim.state import updating

    problem = env_command_problem(argv)
    if problem:
        raise StepFailed(problem)
    with updating(path) as state:
        if argv[1] == "-u":
            state.nccl_env.pop(argv[2], None)
        else:
            name, _, value = argv[1].partition("=")
            state.nccl_env[name] = value
    return f"$ {shlex.join(argv)}"


def _fixture_state(lab: Lab, path: Path) -> Any:
    """A fresh node of the lab's fixture, keeping the host name of the node already in ``path``."""
    from assessor.sim.fixtures import load_fixture
    from assessor.sim.state import load_state

    host = load_state(path).host if path.exists() else None
    assert lab.fixture is not None  # the loader requires a fixture on node labs
    return load_fixture(lab.fixture, host=host)


def reset_file(lab: Lab, path: Path) -> list[str]:
    """Write the lab's fixture back to ``path`` (the host name stays)."""
    from assessor.sim.state import locked, save_state

    with locked(path):
        state = _fixture_state(lab, path)
        save_state(state, path)
    return [f"{path}: reset to a healthy {lab.fixture} node ({state.host})"]


def start_file(lab: Lab, path: Path) -> list[str]:
    """Fresh fixture, then the scenario's faults in order, then its commands."""
    from assessor.sim import faults

    log = reset_file(lab, path)
    for step in lab.faults:
        log.append(faults.inject(path, step.fault, **step.options))
    for line in lab.commands:
        log.append(run_line(line, path))
    return log


def solve_file(lab: Lab, path: Path) -> list[str]:
    """The reference solution: revert the ``repair`` faults, then run the solution's commands."""
    from assessor.sim import faults

    if not path.exists():
        raise InputError(
            f"{path}: no such simulated node state; start the lab first: gpulab lab start {lab.id} --target mock:{path}"
        )
    log = []
    for step in lab.repair:
        log.append(faults.repair(path, step.fault, **step.options))
    for line in lab.solution_commands:
        log.append(run_line(line, path))
    if not log:
        log.append("the lab's solution has no steps")
    return log


# ---- real nodes ------------------------------------------------------------------------------


def playbooks_root() -> Path:
    """``playbooks/`` beside the labs (checkout), else the installed package data."""
    from assessor.labs.loader import default_root

    # repo/labs -> repo/playbooks; assessor/_data/labs -> assessor/_data/playbooks
    return default_root().parent / "playbooks"


def run_playbook(
    lab: Lab,
    action: str,
    target: TargetKind,
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
    root = playbooks_root()
    if rel is None:
        raise InputError(
            f"lab {lab.id} has no {action} playbook yet (scenario.playbooks.{action}): "
            f"it cannot be run on {target.spec}; use a mock:FILE.json target"
        )
    playbook = root / rel
    if not playbook.is_file():
        raise InputError(f"lab {lab.id}: {action} playbook {playbook} does not exist yet; use a mock:FILE.json target")
    import tempfile

    import ansible_runner

    options = options or TargetOptions()
    extravars: dict[str, Any] = {"gpulab_lab": lab.id}
    envvars = _ansible_env(options)
    inventory: Any
    if target.kind == "inventory":
        assert target.path is not None
        _inventory_host(str(target.path), target.spec)  # Ansible would skip a missing host and say nothing
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
        where = f"{action} playbook {rel} failed on {host}"
        raise StepFailed(f"{where}: {failure}" if failure else f"{where} (status {run.status}, rc {run.rc})")
    return [f"{action} playbook {rel} ran on {host}"]


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


# ---- the lifecycle -------------------------------------------------------------------------


def start(
    lab: Lab,
    spec: str | None,
    options: TargetOptions | None = None,
    *,
    inventory: str | None = None,
    host_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """Set the target up for ``lab``; design labs need no target.

    ``options`` (SSH key, known_hosts, accepting new host keys) and ``inventory`` matter for real nodes.
    """
    if lab.is_design:
        return [
            f"design lab {lab.id}: write your answer (format: {lab.answer_example}) and grade it with "
            f"`gpulab lab grade {lab.id} --answer FILE`"
        ]
    return _apply(lab, spec, "start", start_file, "setup", options, inventory, host_vars)


def solve(
    lab: Lab,
    spec: str | None,
    options: TargetOptions | None = None,
    *,
    inventory: str | None = None,
    host_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """Apply the reference solution (instructors, CI)."""
    return _apply(lab, spec, "solve", solve_file, "solve", options, inventory, host_vars)


def reset(
    lab: Lab,
    spec: str | None,
    options: TargetOptions | None = None,
    *,
    inventory: str | None = None,
    host_vars: Mapping[str, Any] | None = None,
) -> list[str]:
    """Restore the target to the lab's fixture (a real node: undo what the setup and the solution changed)."""
    return _apply(lab, spec, "reset", reset_file, "reset", options, inventory, host_vars)


def _apply(
    lab: Lab,
    spec: str | None,
    action: str,
    on_file: Callable[[Lab, Path], list[str]],
    playbook: str,
    options: TargetOptions | None,
    inventory: str | None,
    host_vars: Mapping[str, Any] | None,
) -> list[str]:
    """One lifecycle step: on a simulated node's state file directly, on a real node by its playbook."""
    target = _need_target(lab, spec, action, inventory)
    if target.kind == "file" and target.path is not None:
        return on_file(lab, target.path)
    if target.kind in ("ssh", "inventory"):
        return run_playbook(lab, playbook, target, options, host_vars=host_vars)
    raise _refuse(lab, action, target)


def _need_target(lab: Lab, spec: str | None, action: str, inventory: str | None = None) -> TargetKind:
    if lab.is_design:
        raise InputError(f"{lab.id} is a design lab: it has no node to {action}")
    if not spec:
        what = "a host of the inventory" if inventory else "mock:FILE.json or ssh://host"
        raise InputError(f"`lab {action} {lab.id}` needs --target ({what})")
    target = classify(spec, inventory)
    _check_fixture(lab, target)
    _check_real(lab, target)
    return target


# ---- capture for grading ---------------------------------------------------------------------


def capture_facts(
    lab: Lab,
    spec: str,
    *,
    timeout: float = 120.0,
    options: TargetOptions | None = None,
    inventory: str | None = None,
) -> NodeFacts:
    """Capture ``spec`` as `gpulab assess` does, with the active tests the lab's checks need.

    ``options`` are the SSH settings (key, known_hosts, new host keys); with ``inventory``, ``spec`` is one
    of its hosts, reached as the inventory says.
    """
    from assessor.capture import run as capture
    from assessor.labs.grading import active_tests
    from assessor.parsers.assemble import facts_from_snapshot
    from assessor.targets import open_target

    wanted = active_tests(lab)
    active: list[str] = []
    if "dcgm" in wanted:
        active.append(capture.dcgm_diag(lab.dcgm_level))
    target: Any
    if inventory is not None:
        host = _inventory_host(inventory, spec)
        spec = host.target
        ssh = host.ssh if spec.startswith("ssh://") else None
        target = open_target(spec, options, name=host.name, ssh=ssh)
    else:
        target = open_target(spec, options)
    gpus: int | None = None
    if "nccl" in wanted and spec.startswith("mock:"):
        # NCCL_DEBUG=INFO so nccl.transport sees the network NCCL chose, as a candidate would run it
        target.env = {**target.env, "NCCL_DEBUG": "INFO"}
        gpus = len(target.session().read().gpus)
    if "nccl" in wanted and gpus is None:
        # other targets: learn the GPU count from a first capture, then run the test over every GPU
        first = facts_from_snapshot(target.snapshot(timeout=timeout, active=tuple(active)))
        gpus = len(first.gpus or ()) or 8
    if "nccl" in wanted:
        active.append(capture.nccl_test(max(gpus or 8, 1)))
    snap = target.snapshot(timeout=timeout, active=tuple(active))
    return facts_from_snapshot(snap)


def _inventory_host(inventory: str, name: str) -> Any:
    from assessor.targets import inventory as inv

    classify(name, inventory)  # a host name, not a target spec
    hosts = [h for h in inv.load(inventory, limit=name) if h.name == name]
    if not hosts:
        raise InputError(f"{inventory}: no host named {name}")
    return hosts[0]


def identity(facts: NodeFacts) -> Identity:
    """Which machine the facts came from: host, GPU serials and UUIDs."""
    gpus = facts.gpus or []
    return Identity(
        host=facts.host,
        serials=tuple(sorted(g.serial for g in gpus if g.serial)),
        uuids=tuple(sorted(g.uuid for g in gpus if g.uuid)),
    )


def describe_steps(steps: tuple[FaultStep, ...]) -> list[str]:
    return [
        step.fault + (f" ({', '.join(f'{k}={v}' for k, v in step.options.items())})" if step.options else "")
        for step in steps
    ]
