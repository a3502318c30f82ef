"""Where a simulated node keeps its files, and what it shows inside: pure functions of its state.

A node whose state is ``node.json`` has two directories beside it:

- ``node.json.d/``: the node's own files, under their real paths (its ``/etc`` changes, ``/root``,
  ``/var``, ``/usr`` changes). The candidate edits them inside the node; the simulated tools read them
  (:mod:`assessor.sim.config_root`).
- ``node.json.run/``: what the running node needs and the candidate never sees: the agent's socket, its
  record (``agent.json``), overlay work directories, the tool layer laid over ``/usr``, the published
  ``/proc`` files.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from assessor.sim.gpu_clients import GPU_DAEMONS, unit_running
from assessor.sim.mig_caps import cap_device_files, gpu_minor
from assessor.sim.state import GpuState, NodeState

# Where each simulated tool sits on a real node (Debian/Ubuntu packages, merged /usr).
TOOL_PATHS: dict[str, str] = {
    "nvidia-smi": "/usr/bin/nvidia-smi",
    "ibstat": "/usr/sbin/ibstat",
    "ibstatus": "/usr/sbin/ibstatus",
    "ibv_devinfo": "/usr/bin/ibv_devinfo",
    "perfquery": "/usr/sbin/perfquery",
    "iblinkinfo": "/usr/sbin/iblinkinfo",
    "ibnetdiscover": "/usr/sbin/ibnetdiscover",
    "sminfo": "/usr/sbin/sminfo",
    "ibswitches": "/usr/sbin/ibswitches",
    "ibhosts": "/usr/sbin/ibhosts",
    "ib_write_bw": "/usr/bin/ib_write_bw",
    "ib_read_bw": "/usr/bin/ib_read_bw",
    "ib_send_bw": "/usr/bin/ib_send_bw",
    "ib_write_lat": "/usr/bin/ib_write_lat",
    "ib_read_lat": "/usr/bin/ib_read_lat",
    "ib_send_lat": "/usr/bin/ib_send_lat",
    "ibdev2netdev": "/usr/bin/ibdev2netdev",
    "lspci": "/usr/bin/lspci",
    "lsmod": "/usr/sbin/lsmod",
    "dmesg": "/usr/bin/dmesg",
    "journalctl": "/usr/bin/journalctl",
    "systemctl": "/usr/bin/systemctl",
    "modprobe": "/usr/sbin/modprobe",
    "rmmod": "/usr/sbin/rmmod",
    "uname": "/usr/bin/uname",
    "reboot": "/usr/sbin/reboot",
    "shutdown": "/usr/sbin/shutdown",
    "uptime": "/usr/bin/uptime",
    "dcgmi": "/usr/bin/dcgmi",
    "nvidia-ctk": "/usr/bin/nvidia-ctk",
    "docker": "/usr/bin/docker",
    "dpkg": "/usr/bin/dpkg",
    "apt": "/usr/bin/apt",
    "apt-get": "/usr/bin/apt-get",
    "dkms": "/usr/sbin/dkms",
    "modinfo": "/usr/sbin/modinfo",
    "all_reduce_perf": "/usr/bin/all_reduce_perf",
    "all_gather_perf": "/usr/bin/all_gather_perf",
    "reduce_scatter_perf": "/usr/bin/reduce_scatter_perf",
    "alltoall_perf": "/usr/bin/alltoall_perf",
    "sendrecv_perf": "/usr/bin/sendrecv_perf",
    "broadcast_perf": "/usr/bin/broadcast_perf",
    "reduce_perf": "/usr/bin/reduce_perf",
    "mpirun": "/usr/bin/mpirun",
    "hpl.sh": "/usr/local/bin/hpl.sh",  # the NGC HPC-Benchmarks launcher, installed on the node's PATH
    "nvbandwidth": "/usr/local/bin/nvbandwidth",  # built from github.com/NVIDIA/nvbandwidth
    "update-grub": "/usr/sbin/update-grub",
    "mlxlink": "/usr/bin/mlxlink",
    "flint": "/usr/bin/flint",
    "mstflint": "/usr/bin/mstflint",
    "mlxfwmanager": "/usr/bin/mlxfwmanager",
    "mlxfwreset": "/usr/bin/mlxfwreset",
    "ipmitool": "/usr/bin/ipmitool",
}
# The simulated tools that a node does NOT get: its real files and processes answer instead.
REAL_INSIDE = ("cat", "kill")

# Where each GPU daemon's binary is on a real node.
DAEMON_PATHS: dict[str, str] = {
    "nvidia-persistenced": "/usr/bin/nvidia-persistenced",
    "nv-hostengine": "/usr/bin/nv-hostengine",
    "nv-fabricmanager": "/usr/bin/nv-fabricmanager",
}
# The command line each daemon runs with (its unit's ExecStart), as ps shows it on a real node.
DAEMON_ARGS: dict[str, tuple[str, ...]] = {
    "nvidia-persistenced": ("--user", "nvidia-persistenced", "--verbose"),
    "nv-hostengine": ("-n", "--service-account", "nvidia-dcgm"),
    "nv-fabricmanager": ("-c", "/usr/share/nvidia/nvswitch/fabricmanager.cfg"),
}
NVML_LIBRARY_DIR = f"/usr/lib/{os.uname().machine}-linux-gnu"  # the driver's libnvidia-ml.so.1 on Debian/Ubuntu
GPULAB_DIR = "/usr/lib/gpulab"  # inside the node: the client, pid 1 and the job stand-ins
SOCKET_DIR = "/run/gpulab"  # inside the node: the agent's socket
SOCKET_NAME = "node.sock"


@dataclass(frozen=True)
class NodePaths:
    """The directories of the node whose state file is ``state`` (absolute)."""

    state: Path

    @classmethod
    def of(cls, state: str | Path) -> NodePaths:
        return cls(Path(state).absolute())

    @property
    def root(self) -> Path:
        return self.state.with_name(self.state.name + ".d")

    @property
    def run(self) -> Path:
        return self.state.with_name(self.state.name + ".run")

    @property
    def sockets(self) -> Path:
        return self.run / "sock"

    @property
    def socket(self) -> Path:
        return self.sockets / SOCKET_NAME

    @property
    def record(self) -> Path:
        return self.run / "agent.json"

    @property
    def log(self) -> Path:
        return self.run / "agent.log"

    @property
    def layer(self) -> Path:
        return self.run / "layer"

    @property
    def published(self) -> Path:
        return self.run / "proc"

    @property
    def work(self) -> Path:
        return self.run / "work"

    @property
    def newroot(self) -> Path:
        return self.run / "newroot"


# Directories of the node's own that are mounted read-write at their real paths.
OWN_DIRS = ("root", "home", "var", "opt", "srv", "boot")  # boot: GRUB's grub.cfg (assessor.sim.grub)


@dataclass(frozen=True)
class NodeProcess:
    """A process the node runs: a GPU daemon of a running unit, or a job with a GPU open."""

    pid: int
    comm: str  # the process name ps, pgrep, fuser and lsof show
    exe: str  # the file it runs inside the node
    argv: tuple[str, ...]
    holds: tuple[str, ...]  # the device files it keeps open, inside the node
    unit: str | None = None
    stop_signal: int = 9  # how the agent ends it: SIGKILL; a real daemon (Slurm) gets SIGTERM and saves its state

    @property
    def key(self) -> tuple[int, str, tuple[str, ...]]:
        return (self.pid, self.comm, self.holds)


def gpu_device(gpu: GpuState) -> str:
    """``/dev/nvidiaN`` of a GPU: its minor number, as the driver numbers the files."""
    return f"/dev/nvidia{gpu_minor(gpu)}"


def device_files(state: NodeState) -> list[str]:
    """The device files the node has (inside paths): NVIDIA's and the HCAs' user-space access points."""
    out = ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"]
    out += [gpu_device(g) for g in state.gpus]
    out += cap_device_files(state)  # /dev/nvidia-caps/nvidia-capN of the MIG instances it boots with
    out += [f"/dev/nvidia-nvswitch{i}" for i in range(len(state.nvswitches))]
    if state.ib_hcas:
        out.append("/dev/infiniband/rdma_cm")
        for i in range(len(state.ib_hcas)):
            out += [f"/dev/infiniband/uverbs{i}", f"/dev/infiniband/umad{i}", f"/dev/infiniband/issm{i}"]
    return out


_SAFE_NAME = re.compile(r"[A-Za-z0-9._+-]{1,64}")


def job_name(name: str) -> str:
    """The name a job stand-in runs under: the state's name when it is a plain file name, else ``job``."""
    return name if _SAFE_NAME.fullmatch(name) and name not in (".", "..") else "job"


def _daemon_holds(state: NodeState, comm: str) -> tuple[str, ...]:
    """What a GPU daemon keeps open: every GPU it holds (as :func:`gpu_holders` counts them), and nvidiactl."""
    held: list[str] = []
    if state.daemons_hold_gpus:
        for gpu in state.gpus:
            holds = {
                "nvidia-persistenced": gpu.persistence_mode,
                "nv-hostengine": True,
                "nv-fabricmanager": gpu.fabric_state is not None and gpu.architecture == "Ampere",
            }
            if holds.get(comm):
                held.append(gpu_device(gpu))
    if comm == "nv-fabricmanager":
        held += [f"/dev/nvidia-nvswitch{i}" for i in range(len(state.nvswitches))]
    return ("/dev/nvidiactl", *held)


def node_processes(state: NodeState) -> list[NodeProcess]:
    """The processes the node runs now: what ``ps`` shows beside the candidate's own.

    The GPU daemons of running units, under the PID ``systemctl status`` gives their main process, and each
    process of ``nvidia-smi``'s process table under its PID, holding the files of every GPU it runs on.
    """
    from assessor.sim.tools.system import main_pid

    out: list[NodeProcess] = []
    if state.driver.loaded and state.module_loaded("nvidia"):
        for unit, comm in GPU_DAEMONS.items():
            if unit_running(state, unit):
                exe = DAEMON_PATHS[comm]
                argv = (exe, *DAEMON_ARGS[comm])
                out.append(NodeProcess(main_pid(state, unit), comm, exe, argv, _daemon_holds(state, comm), unit))
    jobs: dict[int, tuple[str, list[str], str | None]] = {}
    for gpu in state.gpus:
        for p in gpu.processes:
            held = jobs.setdefault(p.pid, (job_name(p.name), ["/dev/nvidiactl", "/dev/nvidia-uvm"], p.unit))[1]
            if gpu_device(gpu) not in held:
                held.append(gpu_device(gpu))
    out += _slurm_processes(state)
    taken = {p.pid for p in out}
    for pid, (name, held, job_unit) in sorted(jobs.items()):
        if pid in taken:
            continue
        exe = f"{GPULAB_DIR}/jobs/{name}"
        out.append(NodeProcess(pid, name, exe, (name,), tuple(held), job_unit))
    return out


def _slurm_processes(state: NodeState) -> list[NodeProcess]:
    """The node's real Slurm daemons (:mod:`assessor.sim.slurm_node`), each started by its launcher."""
    from assessor.sim.slurm_node import daemon_processes
    from assessor.sim.slurm_node.runtime import LAUNCHER
    from assessor.sim.tools.system import main_pid

    return [
        NodeProcess(main_pid(state, unit), comm, LAUNCHER, ("slurm-daemon", *cmdline.split()), (), unit, stop_signal=15)
        for unit, comm, cmdline in daemon_processes(state)
    ]


def boot_id(state: NodeState) -> str:
    """The node's ``/proc/sys/kernel/random/boot_id``: new at each boot of the node."""
    seed = f"{state.host}|{state.node_id}|{state.clock.boot_time}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "gpulab-boot:" + seed))
