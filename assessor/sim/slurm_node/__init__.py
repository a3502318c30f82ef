"""A real Slurm on a simulated node: Debian's ``munged``, ``slurmctld`` and ``slurmd`` as the node's processes.

A node runs Slurm when its state has the Slurm units (the ``slurm`` condition of :mod:`assessor.sim.faults`
adds them and writes ``/etc/slurm/slurm.conf``, ``/etc/slurm/gres.conf`` and the munge key): a one-node
cluster, controller and compute node on the node itself. Their units are the node's like any other
(``systemctl start|stop|restart|status``, started at boot when enabled); the agent runs each running unit's
daemon for real, in the foreground, under the PID ``systemctl status`` shows (:func:`daemon_processes`), from
the node's own files. Nodes without these units boot as before, with no Slurm at all.

What the node needs for them, and why (:mod:`.runtime`): a launcher that starts each daemon as its unit does
(after munged's socket is there, once the previous instance has gone); a small library preloaded into the
daemons, since a user namespace refuses ``setgroups`` and cannot hold device nodes (slurmd's gres/gpu plugin
wants ``/dev/nvidiaN`` to be character devices); and an address that is not loopback, for glibc's
``getaddrinfo(AI_ADDRCONFIG)`` which Slurm uses finds no IPv4 address on a host with only ``127.0.0.1``.

Pure functions of the state (no process is started here).
"""

from __future__ import annotations

import shutil

from assessor.sim.state import NodeState

MUNGE_UNIT = "munge.service"
SLURMCTLD_UNIT = "slurmctld.service"
SLURMD_UNIT = "slurmd.service"

# unit -> (description, unit file folder, process name, command line): what systemctl status shows (Debian 12)
UNITS: dict[str, tuple[str, str, str, str]] = {
    MUNGE_UNIT: ("MUNGE authentication service", "/lib/systemd/system", "munged", "/usr/sbin/munged --foreground"),
    SLURMCTLD_UNIT: ("Slurm controller daemon", "/lib/systemd/system", "slurmctld", "/usr/sbin/slurmctld -D -s"),
    SLURMD_UNIT: ("Slurm node daemon", "/lib/systemd/system", "slurmd", "/usr/sbin/slurmd -D -s"),
}
# The order the units start in at boot (munge first: both Slurm daemons authenticate through it).
BOOT_ORDER = (MUNGE_UNIT, SLURMCTLD_UNIT, SLURMD_UNIT)
CLIENTS = ("scontrol", "sinfo", "squeue", "srun", "sbatch", "scancel")  # real programs, answering inside the node
BINARIES = ("munged", "slurmctld", "slurmd", *CLIENTS)

# The faults and conditions that make a node a Slurm cluster (assessor.sim.slurm_faults).
SCENARIO_FAULTS = ("slurm", "slurm-gres-short", "slurm-mig-untyped")  # gpu-removed alone needs no Slurm

SLURM_CONF = "/etc/slurm/slurm.conf"
GRES_CONF = "/etc/slurm/gres.conf"
MUNGE_KEY = "/etc/munge/munge.key"
HEALTH_CHECK = "/etc/slurm/healthcheck.sh"
MUNGE_SOCKET = "/run/munge/munge.socket.2"
# The node's management address, on its loopback device (the node has no other network).
NODE_ADDRESS = "10.128.0.11"


def runs_slurm(state: NodeState) -> bool:
    """The node has the Slurm units (a lab or fixture asked for a Slurm cluster on it). A unit recorded as
    ``not-found`` (a capture of a machine without Slurm asks systemctl for them too) is not one it has."""
    return any(unit in state.services and state.services[unit].load_state != "not-found" for unit in UNITS)


def missing_binaries() -> list[str]:
    """The Slurm and munge programs this machine lacks (the node runs the host's ``/usr``)."""
    return [name for name in BINARIES if not shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")]


def daemon_processes(state: NodeState) -> list[tuple[str, str, str]]:
    """``(unit, process name, command line)`` of every Slurm daemon the node runs now (its unit's main process,
    which runs under the PID ``systemctl status`` gives it)."""
    from assessor.sim.gpu_clients import unit_running

    return [(unit, UNITS[unit][2], UNITS[unit][3]) for unit in BOOT_ORDER if unit_running(state, unit)]
