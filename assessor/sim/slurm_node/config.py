"""The Slurm files a simulated node starts with: ``slurm.conf``, ``gres.conf`` and munge's key (pure).

A one-node cluster named after nothing but the node: its host name is both ``SlurmctldHost`` and the one
``NodeName``, whose ``Gres=gpu:N`` is the node's GPU count, and ``gres.conf`` names the node's GPU device files
(``/dev/nvidia[0-7]``). Slurm's own defaults are kept where the node allows them; what a simulated node needs
differently is said beside it: no cgroups (``proctrack/linuxproc``, ``task/none``), the daemons run as the
node's root (``SlurmUser=root``), no accounting database.
"""

from __future__ import annotations

import hashlib

from assessor.sim.state import NodeState


def gpu_minors(state: NodeState) -> list[int]:
    """The minor numbers of the node's GPU device files, in order."""
    return sorted(g.minor_number if g.minor_number is not None else g.index for g in state.gpus)


def device_range(minors: list[int]) -> str:
    """``/dev/nvidia[0-7]`` for consecutive minors, ``/dev/nvidia[0-2,4]`` otherwise (Slurm's host list form)."""
    if not minors:
        return ""
    parts: list[str] = []
    start = prev = minors[0]
    for m in [*minors[1:], None]:
        if m is not None and m == prev + 1:
            prev = m
            continue
        parts.append(f"{start}-{prev}" if prev != start else str(start))
        if m is not None:
            start = prev = m
    return f"/dev/nvidia[{','.join(parts)}]" if len(minors) > 1 else f"/dev/nvidia{minors[0]}"


def slurm_conf(state: NodeState) -> str:
    host = state.host
    return f"""# /etc/slurm/slurm.conf: a one-node cluster, {host} both its controller and its compute node.
ClusterName=gpulab
SlurmctldHost={host}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# This node has no cgroup controllers of its own: processes are tracked through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=1
# The site's GPU health check (slurmd runs it at its start and every interval): it drains a node with a GPU missing.
HealthCheckProgram=/etc/slurm/healthcheck.sh
HealthCheckInterval=30
HealthCheckNodeState=ANY
GresTypes=gpu
NodeName={host} Gres=gpu:{len(state.gpus)} State=UNKNOWN
PartitionName=gpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def gres_conf(state: NodeState) -> str:
    return f"# /etc/slurm/gres.conf: the GPUs of {state.host}\nName=gpu File={device_range(gpu_minors(state))}\n"


def health_check(state: NodeState) -> str:
    """The site's health check: drains the node (never resumes it) when nvidia-smi lists fewer GPUs than it has."""
    return f"""#!/bin/sh
# /etc/slurm/healthcheck.sh: the site's GPU health check, run by slurmd (HealthCheckProgram in slurm.conf).
# A node that shows fewer GPUs than it was built with is drained; an admin resumes it once it is repaired.
expected={len(state.gpus)}
found=$(/usr/bin/nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$found" -lt "$expected" ]; then
  /usr/bin/scontrol update nodename="$(/bin/hostname -s)" state=drain \\
    reason="healthcheck: $found of $expected GPUs visible"
  exit 1
fi
exit 0
"""


def munge_key(state: NodeState) -> str:
    """The cluster's shared munge key (any bytes, at least 32; this one is 64 hexadecimal characters)."""
    return hashlib.sha256(f"gpulab-munge:{state.host}:{state.node_id}".encode()).hexdigest() + "\n"


def files(state: NodeState) -> dict[str, str]:
    """node path -> text of every Slurm file the node starts with."""
    from assessor.sim.slurm_node import GRES_CONF, HEALTH_CHECK, MUNGE_KEY, SLURM_CONF

    return {
        SLURM_CONF: slurm_conf(state),
        GRES_CONF: gres_conf(state),
        HEALTH_CHECK: health_check(state),
        MUNGE_KEY: munge_key(state),
    }
