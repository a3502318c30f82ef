"""Simulated command-line tools over a simulated node's state.

Each tool is a function ``(args: list[str], session: Session) -> ToolResult`` (``args``
without the program name) that prints what the real tool prints and refuses what it
refuses. :func:`run_tool` dispatches by program name; shims on a PATH and the ``mock:``
target both go through it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assessor.sim.state import NodeState


@dataclass
class ToolResult:
    exit_code: int
    stdout: str = ""
    stderr: str = ""


@dataclass
class Session:
    """How a simulated tool reaches its node: a state file or an in-memory state.

    With a ``path``, every read loads the file and every update is a locked, atomic
    read-modify-write (two tools at once never lose a change). Without one, the tools
    work on ``state`` in memory (a fresh ``mock:NAME`` node).
    """

    state: NodeState | None = None
    path: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    euid: int = 0  # root unless told otherwise; -mig, -r, modprobe need root

    def root(self) -> Path | None:
        """The node's configuration root (:mod:`assessor.sim.config_root`); None when it has none."""
        from assessor.sim.config_root import node_root

        return node_root(self.path, self.env)

    def read(self) -> NodeState:
        """The node as the caller sees it: inside a Slurm job, only the job's GPUs (:mod:`..slurm_node.jobs`)."""
        from assessor.sim.slurm_node.jobs import job_view

        if self.path is not None:
            from assessor.sim.state import load_state

            return job_view(load_state(self.path), self.env)
        if self.state is None:
            raise RuntimeError("session has neither a state file nor a state")
        return job_view(self.state, self.env)

    @contextlib.contextmanager
    def update(self) -> Iterator[NodeState]:
        if self.path is not None:
            from assessor.sim.state import updating

            with updating(self.path) as state:
                yield state
            return
        yield self.read()


Tool = Callable[[list[str], Session], ToolResult]

# program name -> (module under assessor.sim.tools, function)
TOOLS: dict[str, tuple[str, str]] = {
    "nvidia-smi": ("nvidia_smi", "main"),
    "ibstat": ("ib", "ibstat"),
    "ibstatus": ("ib", "ibstatus"),
    "ibv_devinfo": ("ib", "ibv_devinfo"),
    "perfquery": ("perfquery", "perfquery"),
    "iblinkinfo": ("ibfabric", "iblinkinfo"),
    "ibnetdiscover": ("ibfabric", "ibnetdiscover"),
    "sminfo": ("ibfabric", "sminfo"),
    "ibswitches": ("ibfabric", "ibswitches"),
    "ibhosts": ("ibfabric", "ibhosts"),
    "ib_write_bw": ("ib", "ib_write_bw"),
    "ib_read_bw": ("ib", "ib_read_bw"),
    "ib_send_bw": ("ib", "ib_send_bw"),
    "ib_write_lat": ("ib", "ib_write_lat"),
    "ib_read_lat": ("ib", "ib_read_lat"),
    "ib_send_lat": ("ib", "ib_send_lat"),
    "ibdev2netdev": ("lspci", "ibdev2netdev"),
    "lspci": ("lspci", "lspci"),
    "lsmod": ("system", "lsmod"),
    "dmesg": ("system", "dmesg"),
    "journalctl": ("system", "journalctl"),
    "systemctl": ("system", "systemctl"),
    "modprobe": ("system", "modprobe"),
    "cat": ("system", "cat"),
    "uname": ("system", "uname"),
    "rmmod": ("system", "rmmod"),
    "kill": ("node", "kill"),
    "reboot": ("node", "reboot"),
    "shutdown": ("node", "shutdown"),
    "uptime": ("node", "uptime"),
    "dcgmi": ("dcgmi", "main"),
    "nvidia-ctk": ("nvidia_ctk", "main"),
    "docker": ("docker", "main"),
    "nv-fabricmanager": ("daemons", "nv_fabricmanager"),  # typed by hand: -v (the daemon runs from its unit)
    "dpkg": ("packages", "dpkg"),
    "apt": ("packages", "apt"),
    "apt-get": ("packages", "apt"),
    "dkms": ("packages", "dkms"),
    "modinfo": ("packages", "modinfo"),
    "all_reduce_perf": ("nccl", "all_reduce_perf"),
    "all_gather_perf": ("nccl", "all_gather_perf"),
    "reduce_scatter_perf": ("nccl", "reduce_scatter_perf"),
    "alltoall_perf": ("nccl", "alltoall_perf"),
    "sendrecv_perf": ("nccl", "sendrecv_perf"),
    "broadcast_perf": ("nccl", "broadcast_perf"),
    "reduce_perf": ("nccl", "reduce_perf"),
    "mpirun": ("hpl", "mpirun"),
    "hpl.sh": ("hpl", "hpl_sh"),
    "nvbandwidth": ("nvbandwidth", "nvbandwidth"),
    "update-grub": ("grub", "update_grub"),
    "mlxlink": ("mlxlink", "mlxlink"),
    "flint": ("mlxfw", "flint"),
    "mstflint": ("mlxfw", "mstflint"),
    "mlxfwmanager": ("mlxfw", "mlxfwmanager"),
    "mlxfwreset": ("mlxfw", "mlxfwreset"),
    "ipmitool": ("ipmitool", "ipmitool"),
}


def tool(name: str) -> Tool | None:
    entry = TOOLS.get(os.path.basename(name))
    if entry is None:
        return None
    module = importlib.import_module(f"assessor.sim.tools.{entry[0]}")
    func: Tool = getattr(module, entry[1])
    return func


def run_tool(argv: list[str], session: Session) -> ToolResult:
    """Run a simulated tool; an unknown program answers like a shell: 127, command not found.

    ``env NAME=VALUE... PROGRAM ARGS`` runs PROGRAM with those variables, as env(1) does.
    """
    if argv and os.path.basename(argv[0]) == "env":
        rest = list(argv[1:])
        extra: dict[str, str] = {}
        while rest and "=" in rest[0] and not rest[0].startswith("="):
            name, _, value = rest.pop(0).partition("=")
            extra[name] = value
        if not rest:
            return ToolResult(0, "".join(f"{k}={v}\n" for k, v in {**session.env, **extra}.items()))
        inner = Session(session.state, session.path, {**session.env, **extra}, session.euid)
        return run_tool(rest, inner)
    if os.path.basename(argv[0]) == "systemctl":
        verbs = [a for a in argv[1:] if not a.startswith("-")]
        if verbs and verbs[0] in ("reboot", "poweroff", "halt"):  # systemd's power verbs are reboot/shutdown's
            argv = ["reboot"] if verbs[0] == "reboot" else ["shutdown", "-h", "now"]
    func = tool(argv[0])
    if func is None:
        return ToolResult(127, "", f"bash: {argv[0]}: command not found\n")
    return func(list(argv[1:]), session)
