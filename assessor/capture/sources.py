"""The snapshot files: one table that capture, parsing, fact assembly and the check docs all read.

Each row is one file of a snapshot: its name, the parser kind that reads it, the command that
produces it (alternatives tried in order while a tool is missing or refuses), what it is in words,
and its priority when several files give the same fact (lower wins: NVML's own answer beats
``nvidia-smi -q -x``, which beats ``nvidia-smi -L``). Active tests (nccl-tests, dcgmi diag) load the
node, so they run only on request; their command takes an argument (GPU count, diagnostic level).
"""

from __future__ import annotations

from dataclasses import dataclass

SERVICES = (
    "nvidia-persistenced.service",
    "nvidia-fabricmanager.service",
    "nvidia-dcgm.service",
    "nvidia-imex.service",  # GB200 NVL72 compute trays: the IMEX daemon of the NVLink domain
    "openibd.service",
    "opensm.service",
    "docker.service",  # the container engine and its runtime, where a node runs containers
    "containerd.service",
    # a node in a Slurm cluster: the scheduler's daemons (a Slurm lab's guard wants them running)
    "munge.service",
    "slurmctld.service",
    "slurmd.service",
)
SERVICE_PROPERTIES = "Id,LoadState,ActiveState,SubState,UnitFileState,Result,ExecMainStatus"
NVML_COLLECTOR = "the NVML collector (pynvml)"
LAST = 100  # the priority of a file no other file competes with


@dataclass(frozen=True)
class SnapshotFile:
    file: str
    kind: str  # the parser kind (`gpulab parse KIND`)
    argvs: tuple[tuple[str, ...], ...]  # the command and its alternatives; () for the NVML collector
    description: str
    priority: int = LAST
    active: str | None = None  # the active test that produces it (`--with NAME`), else captured always


def _row(
    file: str, kind: str, description: str, *argvs: tuple[str, ...], priority: int = LAST, active: str | None = None
) -> SnapshotFile:
    return SnapshotFile(file, kind, tuple(argvs), description, priority, active)


FILES: tuple[SnapshotFile, ...] = (
    _row("nvml.json", "nvml", NVML_COLLECTOR, priority=0),
    _row("nvidia-smi-q.xml", "nvidia-smi-xml", "nvidia-smi -q -x", ("nvidia-smi", "-q", "-x"), priority=1),
    _row("nvidia-smi-q.txt", "nvidia-smi-q", "nvidia-smi -q (text, as pasted in bug reports)", priority=2),
    _row("nvidia-smi.txt", "nvidia-smi", "the default nvidia-smi table", priority=3),
    _row("nvidia-smi-L.txt", "nvidia-smi-list", "nvidia-smi -L", ("nvidia-smi", "-L"), priority=4),
    _row("nvidia-smi-topo.txt", "nvidia-smi-topo", "nvidia-smi topo -m", ("nvidia-smi", "topo", "-m")),
    _row("nvidia-smi-mig-lgi.txt", "nvidia-smi-mig-lgi", "nvidia-smi mig -lgi", ("nvidia-smi", "mig", "-lgi")),
    _row("nvidia-smi-nvlink.txt", "nvidia-smi-nvlink", "nvidia-smi nvlink -s"),
    _row("nvidia-smi-mig-lgip.txt", "nvidia-smi-mig-lgip", "nvidia-smi mig -lgip", priority=20),
    # -lgipp adds each -lgip profile's placements (fact assembly joins them by GPU and profile id).
    _row("nvidia-smi-mig-lgipp.txt", "nvidia-smi-mig-lgipp", "nvidia-smi mig -lgipp", priority=21),
    _row("ibstat.txt", "ibstat", "ibstat", ("ibstat",)),
    _row("ibv_devinfo.txt", "ibv-devinfo", "ibv_devinfo", ("ibv_devinfo",)),
    _row("mlxfwmanager.txt", "mlxfwmanager", "mlxfwmanager --query (MFT)", ("mlxfwmanager", "--query")),
    _row("ipmitool-lan.txt", "ipmitool-lan", "ipmitool lan print 1 (the BMC)", ("ipmitool", "lan", "print", "1")),
    _row(
        "ipmitool-users.txt",
        "ipmitool-users",
        "ipmitool channel getaccess 1 (the BMC's users; never a password)",
        ("ipmitool", "channel", "getaccess", "1"),
        ("ipmitool", "user", "list", "1"),
    ),
    _row("lsmod.txt", "lsmod", "lsmod", ("lsmod",)),
    _row(
        "dmesg.txt",
        "dmesg",
        "dmesg (or journalctl -k)",
        ("dmesg",),
        ("journalctl", "-k", "--no-pager", "-q"),
    ),
    _row(
        "services.txt",
        "systemctl-show",
        "systemctl show of the NVIDIA services (and Slurm's)",
        ("systemctl", "show", "-p", SERVICE_PROPERTIES, *SERVICES),
        priority=10,
    ),
    # What people paste for a unit: its states, and the journal lines that say why it failed. The
    # states of services.txt win where both have a unit; the journal's reason is kept.
    _row(
        "systemctl-status.txt",
        "systemctl-status",
        "systemctl status or journalctl -u of the NVIDIA services (as pasted)",
        priority=11,
    ),
    _row(
        "driver-version.txt",
        "driver-version",
        "/proc/driver/nvidia/version",
        ("cat", "/proc/driver/nvidia/version"),
    ),
    _row("os-release.txt", "os-release", "/etc/os-release", ("cat", "/etc/os-release")),
    _row("docker-info.txt", "docker-info", "docker info", ("docker", "info")),
    _row(
        "cdi-spec.yaml",
        "cdi-spec",
        "the CDI spec of the NVIDIA GPUs (/etc/cdi/nvidia.yaml)",
        ("cat", "/etc/cdi/nvidia.yaml"),
        ("cat", "/var/run/cdi/nvidia.yaml"),
        ("cat", "/etc/cdi/nvidia.json"),
    ),
    _row("uname.txt", "uname", "uname -a", ("uname", "-a")),
    _row("cmdline.txt", "proc-cmdline", "cat /proc/cmdline", ("cat", "/proc/cmdline")),
    _row("grub-default.txt", "grub-default", "cat /etc/default/grub", ("cat", "/etc/default/grub")),
    # The cables from the node's HCAs into the fabric: the topology file, or iblinkinfo where it is pasted.
    _row("ibnetdiscover.txt", "ibnetdiscover", "ibnetdiscover", ("ibnetdiscover",), priority=30),
    _row("iblinkinfo.txt", "iblinkinfo", "iblinkinfo (as pasted)", priority=31),
    _row("dpkg.txt", "dpkg-list", "dpkg -l (the installed packages)", ("dpkg", "-l")),
    _row("dkms-status.txt", "dkms-status", "dkms status", ("dkms", "status")),
    _row(
        "scontrol-node.txt",
        "scontrol-node",
        "scontrol show node -o (Slurm's view of its nodes)",
        ("scontrol", "show", "node", "-o"),
    ),
    # mlxlink once per adapter ibstat lists, each run after its command (assessor.capture.per_adapter)
    _row("mlxlink.txt", "mlxlink", "mlxlink -d DEV -m -c, for each adapter", active="mlxlink"),
    _row("ib_write_bw.txt", "ib-write-bw", "perftest ib_write_bw, client side (run by hand between two nodes)"),
    _row("nccl-tests.txt", "nccl-tests", "an nccl-tests run such as all_reduce_perf", active="nccl"),
    _row("dcgmi-diag.txt", "dcgmi-diag", "dcgmi diag -r N", active="dcgm"),
    _row("hpl.txt", "hpl", "an HPL-NVIDIA run (hpl.sh over every GPU)", active="hpl"),
    _row(
        "nvbandwidth.txt", "nvbandwidth", "nvbandwidth's host-to-device and device-to-host copies", active="nvbandwidth"
    ),
)

BY_FILE: dict[str, SnapshotFile] = {f.file: f for f in FILES}


def captured() -> tuple[SnapshotFile, ...]:
    """The files every capture runs a command for (not the collector, not the active tests)."""
    return tuple(f for f in FILES if f.argvs and f.active is None)


def by_priority(names: list[str] | set[str] | tuple[str, ...]) -> list[str]:
    """Snapshot file names in the order their facts are taken (known files first, by priority)."""
    return sorted(names, key=lambda n: (BY_FILE[n].priority if n in BY_FILE else LAST + 1, n))


def named(file: str) -> str:
    """A file with what produces it, for messages: ``ibstat.txt (ibstat)``."""
    row = BY_FILE.get(file)
    return f"{file} ({row.description})" if row and row.description != file else file
