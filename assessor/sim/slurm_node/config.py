"""The Slurm files a simulated node starts with: ``slurm.conf``, ``gres.conf`` and munge's key (pure).

A one-node cluster named after nothing but the node: its host name is both ``SlurmctldHost`` and the one
``NodeName``, whose ``Gres=gpu:N`` is the node's GPU count, and ``gres.conf`` names the node's GPU device files
(``/dev/nvidia[0-7]``). A node with GPUs in MIG mode has typed GRES instead, as Slurm's MIG support wants them:
one type per MIG profile (``gpu:1g.10gb:7``), each MIG device a ``MultipleFiles=`` line naming its GPU's device
file and its two capability nodes (:mod:`assessor.sim.mig_caps`), and the whole GPUs typed by their model
(``gpu:h100:6``). Slurm's own defaults are kept where the node allows them; what a simulated node needs
differently is said beside it: no cgroups (``proctrack/linuxproc``, ``task/none``), the daemons run as the
node's root (``SlurmUser=root``), no accounting database.
"""

from __future__ import annotations

import hashlib

from assessor.sim.mig_caps import gpu_minor
from assessor.sim.state import GpuState, NodeState


def gpu_minors(state: NodeState) -> list[int]:
    """The minor numbers of the node's GPU device files, in order."""
    return sorted(gpu_minor(g) for g in state.gpus)


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


def gpu_type(gpu: GpuState) -> str:
    """A whole GPU's GRES type: its model, in lower case (``NVIDIA H100 80GB HBM3`` -> ``h100``)."""
    words = gpu.name.removeprefix("NVIDIA ").split()
    return (words[0] if words else "gpu").split("-")[0].lower()


def mig_gres(state: NodeState) -> list[tuple[str, list[str]]]:
    """``(type, device files)`` of every MIG device of the node (GPU, then GPU and compute instance IDs); the
    type is the MIG device's profile (``1g.10gb``; ``1c.3g.40gb`` for a compute instance smaller than its GI)."""
    from assessor.sim.mig_caps import device_files, mig_devices

    out: list[tuple[str, list[str]]] = []
    for gpu in state.gpus:
        names = {(gi.gi_id, ci.ci_id): ci.name for gi in gpu.mig_instances for ci in gi.compute_instances}
        out += [(names[d], device_files(gpu, *d)) for d in mig_devices(gpu)]
    return out


def whole_gpus(state: NodeState) -> list[GpuState]:
    """The GPUs a job gets whole: those not in MIG mode (or in it with no MIG device)."""
    from assessor.sim.mig_caps import mig_devices

    return [g for g in state.gpus if not mig_devices(g)]


def gres_value(state: NodeState) -> str:
    """``NodeName``'s ``Gres=``: ``gpu:8``, or typed on a node with MIG devices."""
    migs = mig_gres(state)
    if not migs:
        return f"gpu:{len(state.gpus)}"
    counts: dict[str, int] = {}
    for gpu in whole_gpus(state):
        counts[gpu_type(gpu)] = counts.get(gpu_type(gpu), 0) + 1
    for kind, _ in migs:
        counts[kind] = counts.get(kind, 0) + 1
    return ",".join(f"gpu:{kind}:{n}" for kind, n in counts.items())


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
NodeName={host} Gres={gres_value(state)} State=UNKNOWN
PartitionName=gpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def gres_conf(state: NodeState) -> str:
    head = f"# /etc/slurm/gres.conf: the GPUs of {state.host}\n"
    migs = mig_gres(state)
    if not migs:
        return head + f"Name=gpu File={device_range(gpu_minors(state))}\n"
    lines: list[str] = []
    by_type: dict[str, list[int]] = {}
    for gpu in whole_gpus(state):
        by_type.setdefault(gpu_type(gpu), []).append(gpu_minor(gpu))
    lines += [f"Name=gpu Type={kind} File={device_range(sorted(minors))}" for kind, minors in by_type.items()]
    lines.append("# MIG devices: the GPU's device file, then its GPU instance's and compute instance's capabilities")
    lines += [f"Name=gpu Type={kind} MultipleFiles={','.join(files)}" for kind, files in migs]
    return head + "\n".join(lines) + "\n"


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
