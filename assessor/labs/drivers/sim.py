"""The simulator's lab driver: start, solve and reset a simulated node in a state file.

``start`` restores the lab's fixture (keeping the host name), applies the scenario's faults
(:mod:`assessor.sim.faults`) and runs its commands through the simulated tools; ``solve`` runs the
solution's commands with the same tools (a physical fault stays: its remedy is the lab's reference ticket,
not a step on the node); ``reset`` writes the fixture back. The node is a strict
one, as ``gpulab sim init`` makes: its GPU daemons and ``nvidia_drm`` hold the GPUs, so a reset or an A100 MIG
change needs the drain a real admin does. Configuration files (``/etc/nccl.conf``) live in the node's
configuration root (:mod:`assessor.sim.config_root`); a lab's ``files:`` steps write them there, and
``reset`` puts the shipped ones back. A node running for ``gpulab sim shell`` is shut down first, as
re-imaging a machine would. The legacy pseudo-command ``gpulab-env NAME=VALUE`` /
``gpulab-env -u NAME`` (edits ``state.nccl_env``) is still understood but no lab uses it.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.labs.drivers import StepFailed, found_something
from assessor.labs.loader import ENV_COMMAND, env_command_problem
from assessor.labs.model import Lab


def run_line(line: str, path: Path) -> str:
    """Run one scenario/solution command line on the node in ``path``; StepFailed when the node refuses it."""
    from assessor.sim.tools import Session, run_tool

    argv = shlex.split(line)
    if argv and argv[0] == ENV_COMMAND:
        return env_edit(argv, path)
    result = run_tool(argv, Session(path=path))
    if result.exit_code != 0 and not found_something(line, result.exit_code, result.stdout):
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise StepFailed(f"`{line}` exited {result.exit_code} on the simulated node: {detail[-1] if detail else ''}")
    return f"$ {line}"


# What a candidate waits for before typing a Slurm command after a boot or a restart (20 s at most): the node's
# slurmctld answers, and its slurmd has registered (scontrol shows the node neither UNKNOWN, a restarted
# controller's state until then, nor NOT_RESPONDING, sinfo's '*'), so that whatever the scenario makes the
# daemons do has happened.
SETTLED = (
    "for i in $(seq 80); do scontrol ping >/dev/null 2>&1 && "
    "! scontrol -o show node | grep -q -e State=UNKNOWN -e NOT_RESPONDING && break; sleep 0.25; done"
)


def settle_node(path: Path) -> None:
    """Boot the node of a lab on a running node and wait until its scenario has played out (a health check)."""
    run_inside_node(SETTLED, path)


def run_inside_node(line: str, path: Path) -> str:
    """A command typed in the shell of the running node (a lab whose node runs real daemons, Slurm's), the node
    booted first if it is down, as a candidate's login would (its daemons are real processes only while it
    runs); a Slurm command first waits (20 s at most) until the node's slurmctld answers and its slurmd has
    registered: right after a reboot or a restart, slurmctld 22.05 refuses ``state=resume`` of a node it still
    holds UNKNOWN ("Invalid node state specified"), as a login after a real reboot would not see."""
    from assessor.sim.machine.enter import start
    from assessor.sim.machine.inside import run_inside
    from assessor.sim.slurm_node import CLIENTS

    start(path)
    words = line.split()
    typed = f"{SETTLED}; {line}" if words and words[0] in CLIENTS else line
    done = run_inside(path, ["bash", "-c", typed], timeout=90)
    if done is None or (done.returncode != 0 and not found_something(line, done.returncode, done.stdout)):
        detail = ((done.stderr or done.stdout) if done else "the node is not running").strip().splitlines()
        code = done.returncode if done else 1
        raise StepFailed(f"`{line}` exited {code} on the simulated node: {detail[-1] if detail else ''}")
    return f"$ {line}"


def env_edit(argv: list[str], path: Path) -> str:
    """``gpulab-env NAME=VALUE`` sets, ``gpulab-env -u NAME`` removes, a variable of ``state.nccl_env``."""
    from assessor.sim.state import updating

    problem = env_command_problem(argv)
    if problem:
        raise StepFailed(problem)
    from assessor.sim.config_root import root_for_state, sync_nccl_conf

    with updating(path) as state:
        before = dict(state.nccl_env)
        if argv[1] == "-u":
            state.nccl_env.pop(argv[2], None)
        else:
            name, _, value = argv[1].partition("=")
            state.nccl_env[name] = value
        sync_nccl_conf(root_for_state(path), before, state.nccl_env)
    return f"$ {shlex.join(argv)}"


def fixture_state(lab: Lab, path: Path) -> Any:
    """A fresh node of the lab's fixture, keeping the host name of the node already in ``path``."""
    from assessor.sim.fixtures import load_fixture
    from assessor.sim.state import load_state

    host = load_state(path).host if path.exists() else None
    assert lab.fixture is not None  # the loader requires a fixture on node labs
    # in_use: the daemons hold the GPUs as on a real node, so the lab's solutions must drain first
    return load_fixture(lab.fixture, host=host, in_use=True)


def write_files(files: dict[str, str], path: Path) -> list[str]:
    """Write node configuration files (node path -> text) into the configuration root of ``path``."""
    from assessor.sim.config_root import root_for_state, write_node_file

    root = root_for_state(path)
    log = []
    for node_path, text in files.items():
        parts = [p for p in node_path.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            raise StepFailed(f"{node_path}: not a file path on the node")
        write_node_file(root, node_path, text)  # a link the candidate made there is replaced, never followed
        log.append(f"wrote {node_path}")
    return log


def reset_file(lab: Lab, path: Path) -> list[str]:
    """Re-image the node in ``path`` as the lab's fixture (the host name stays): its state, and its own files
    (``STATE.d``) as a fresh node has them: what was changed, added or linked there, in ``/etc``, a home, ``/var``
    or the ``/usr`` layer, is gone."""
    from assessor.sim.config_root import populate, root_for_state
    from assessor.sim.machine.enter import stop
    from assessor.sim.peers import leave_fabric
    from assessor.sim.state import locked, save_state

    stop(path)  # a running node is re-imaged: its shells end, the next `gpulab sim shell` boots it afresh
    leave_fabric(path)  # and leaves any fabric: a lab that wants a peer makes a fresh one (peer-node)
    with locked(path):
        state = fixture_state(lab, path)
        save_state(state, path)
        root = root_for_state(path)
        clear_files(root)
        populate(root, state, overwrite=True)
    return [f"{path}: reset to a healthy {lab.fixture} node ({state.host})"]


def start_file(lab: Lab, path: Path) -> list[str]:
    """Fresh fixture, then the scenario's faults in order, then its commands."""
    from assessor.sim import faults

    log = reset_file(lab, path)
    for step in lab.faults:
        log.append(faults.inject(path, step.fault, **step.options))
    log += write_files(lab.files, path)
    for line in lab.commands:
        log.append(run_inside_node(line, path) if lab.needs_running_node else run_line(line, path))
    return log


def solve_file(lab: Lab, path: Path) -> list[str]:
    """The reference solution: write its configuration files, then run its commands on the node."""
    if not path.exists():
        raise InputError(
            f"{path}: no such simulated node state; start the lab first: gpulab lab start {lab.id} --target mock:{path}"
        )
    if lab.needs_running_node:  # the scenario plays out on the running node (a health check drains it)
        settle_node(path)
    log = write_files(lab.solution_files, path)
    for line in lab.solution_commands:  # on a running node's lab, typed in the node's shell
        log.append(run_inside_node(line, path) if lab.needs_running_node else run_line(line, path))
    if not log:
        log.append(
            f"nothing to do on the node: the remedy is physical (the reference ticket is {lab.solution_answer})"
            if lab.solution_answer
            else "the lab's solution has no steps"
        )
    return log


def clear_files(root: Path) -> None:
    """Remove everything in the node's own folder ``root`` (stopped first), never following a link: a link
    the candidate made there is removed itself. The next boot lays out the rest of a fresh node's files."""
    if root.is_symlink():
        raise StepFailed(f"{root}: the node's files are a symbolic link; gpulab re-images only a real folder")
    if not root.is_dir():
        return
    for entry in root.iterdir():
        _remove(entry)


def _remove(entry: Path) -> None:
    """Remove ``entry`` (a file, a link, or a folder with all in it), folders the candidate made unreadable or
    unwritable inside the node (``chmod 000``) included: they are the same user's out here."""
    import os
    import shutil
    import stat

    if not entry.is_dir() or entry.is_symlink():
        entry.unlink(missing_ok=True)
        return
    os.chmod(entry, stat.S_IRWXU)
    for folder, dirs, _files in os.walk(entry):  # top-down: each folder is opened up before it is listed
        for name in dirs:
            child = os.path.join(folder, name)
            if not os.path.islink(child):
                os.chmod(child, stat.S_IRWXU)
    shutil.rmtree(entry)
