"""Entering a simulated node: start its agent when it is not running, then ``nsenter`` into it.

Where user namespaces cannot be made (a kernel or container that forbids them), :func:`enter` says so in
one line and opens a shell with the simulated tools on PATH instead (the older, unisolated way), never
silently.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assessor.errors import InputError
from assessor.sim.machine.layout import NodePaths

ISOLATION_ENV = "GPULAB_NODE_ISOLATION"  # "shims" forces the unisolated fallback
NODE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class RunningNode:
    agent: int  # host PID of the agent
    init: int  # host PID of the node's PID 1


def isolation_problem() -> str | None:
    """Why the node cannot run in namespaces of its own here; None when it can."""
    if os.environ.get(ISOLATION_ENV) == "shims":
        return f"{ISOLATION_ENV}=shims"
    search = [*os.environ.get("PATH", "").split(":"), "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    for tool in ("unshare", "nsenter", "pivot_root"):
        if not any(os.access(os.path.join(d, tool), os.X_OK) for d in search if d):
            return f"{tool} (util-linux) is not installed"
    try:
        probe = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed: {exc}"
    if probe.returncode != 0:
        return "user namespaces are not available: " + (probe.stderr.strip().splitlines() or ["unshare failed"])[-1]
    return None


def _alive(pid: int) -> bool:
    """The process runs (a zombie waiting for its parent to reap it has ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def running(paths: NodePaths) -> RunningNode | None:
    """The node's agent and PID 1 when the node is up."""
    try:
        record = json.loads(paths.record.read_text(encoding="utf-8"))
        node = RunningNode(int(record["agent"]), int(record["init"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (_alive(node.agent) and _alive(node.init)):
        return None
    with open(paths.run / "agent.lock", "a+") as lock:  # an agent holds it for its life
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return node
        fcntl.flock(lock, fcntl.LOCK_UN)
    return None


def start(state: str | os.PathLike[str], *, timeout: float = 30.0) -> RunningNode:
    """The running node of ``state``, booted now if it is not up."""
    from assessor.sim.state import load_state

    paths = NodePaths.of(os.fspath(state))
    load_state(paths.state)  # a missing or broken state is bad input, said before anything starts
    node = running(paths)
    if node is not None:
        return node
    paths.run.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        paths.record.unlink()
    package_root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PATH"] = env.get("PATH", "") + ":/usr/sbin:/usr/bin:/sbin:/bin"  # unshare, mount, pivot_root
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(paths.log, "ab") as log:
        agent = subprocess.Popen(
            [sys.executable, "-m", "assessor.sim.machine.agent", str(paths.state)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env=env,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        node = running(paths)
        if node is not None:
            return node
        if agent.poll() is not None and agent.returncode != 0:
            break
        time.sleep(0.02)
    said: list[str] = []
    with contextlib.suppress(OSError):
        said = [line for line in paths.log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    why = "; ".join(line.strip() for line in said[-3:]) or "no reason given"
    raise InputError(f"{paths.state}: the simulated node did not start: {why} (log: {paths.log})")


def stop(state: str | os.PathLike[str]) -> bool:
    """End the node's agent and every process of the node; False when it was not running."""
    paths = NodePaths.of(os.fspath(state))
    node = running(paths)
    if node is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(node.agent, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (_alive(node.agent) or _alive(node.init)):
        time.sleep(0.02)
    if _alive(node.agent):
        with contextlib.suppress(ProcessLookupError):
            os.kill(node.agent, signal.SIGKILL)
    return True


def node_env(host: str, term: str | None) -> dict[str, str]:
    """The environment a login on the node starts from (its profile adds the rest)."""
    return {
        "HOME": "/root",
        "USER": "root",
        "LOGNAME": "root",
        "SHELL": "/bin/bash",
        "PATH": NODE_PATH,
        "TERM": term or "xterm",
        "LANG": "C.UTF-8",
        "HOSTNAME": host,
        "PS1": r"\u@\h:\w\$ ",
    }


def nsenter_argv(node: RunningNode, host: str, command: Sequence[str], term: str | None) -> list[str]:
    """The command line that runs ``command`` (or a login shell) inside the running node."""
    env = [f"{k}={v}" for k, v in node_env(host, term).items()]
    shell = ["/bin/bash", "-l"] if not command else ["/bin/bash", "-lc", 'exec "$@"', "bash", *command]
    return [
        "nsenter",
        f"--target={node.init}",
        "--user",
        "--mount",
        "--uts",
        "--ipc",
        "--net",
        "--pid",
        "--root",
        "--wd",
        "--",
        "/usr/bin/env",
        "-i",
        *env,
        *shell,
    ]


def fallback_argv(state: str | os.PathLike[str], command: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The unisolated way: a bash with the simulated tools on PATH (and bash's own kill turned off)."""
    from assessor.sim.shims import write_shims

    paths = NodePaths.of(os.fspath(state))
    shims = paths.run / "shims"
    write_shims(shims)
    env = dict(os.environ)
    env["PATH"] = f"{shims}:{env.get('PATH', NODE_PATH)}"
    env["GPULAB_SIM_STATE"] = str(paths.state)
    rc = paths.run / "shims.bashrc"
    rc.write_text("[ -f ~/.bashrc ] && . ~/.bashrc\nenable -n kill\n", encoding="utf-8")
    every = paths.run / "shims.bash_env"  # what a non-interactive bash reads first (BASH_ENV)
    every.write_text("enable -n kill\n", encoding="utf-8")
    env["BASH_ENV"] = str(every)
    if command:
        return ["bash", "-c", '"$@"', "bash", *command], env
    return ["bash", "--rcfile", str(rc), "-i"], env


def enter(state: str | os.PathLike[str], command: Sequence[str]) -> None:
    """Replace this process by ``command`` run in the node (a login shell without one)."""
    from assessor.sim.state import load_state

    host = load_state(state).host
    problem = isolation_problem()
    if problem is not None:
        print(
            f"gpulab sim shell: {problem}: the node runs as PATH shims in this shell, NOT isolated from the host",
            file=sys.stderr,
        )
        argv, env = fallback_argv(state, command)
        os.execvpe(argv[0], argv, env)
    node = start(state)
    argv = nsenter_argv(node, host, command, os.environ.get("TERM"))
    sys.stdout.flush()
    os.execvp(argv[0], argv)


def describe(state: str | os.PathLike[str]) -> str:
    """The one command that enters this node, quoted for a shell."""
    return f"gpulab sim shell {shlex.quote(str(Path(state).absolute()))}"
