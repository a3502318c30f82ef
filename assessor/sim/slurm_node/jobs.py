"""The GPUs and MIG devices a Slurm job may use, as the simulated tools see them from inside it (pure).

On a real node with ``ConstrainDevices=yes`` (cgroup.conf), slurmd puts a job step in a device cgroup that
opens only the device files of its allocated GPU records (``gres.conf``'s ``File=``, or ``MultipleFiles=`` for a
MIG device: the GPU's ``/dev/nvidiaN`` and its GPU and compute instance capability nodes). NVML, and so
``nvidia-smi``, then enumerates only those GPUs, numbered from 0, and on a GPU in MIG mode only the MIG devices
whose two capabilities it can open. The simulated node has no device cgroup; the job's environment stands in
for it: a tool run with ``SLURM_STEP_GPUS`` (a step: ``srun``) or ``SLURM_JOB_GPUS`` (a batch script) in its
environment sees only what those indices name. They index slurmd's GPU devices (:mod:`.gres`), read from the
node's ``gres.conf`` and ``slurm.conf`` when the tool's environment names the node's files (inside the node it
does); without them an index is taken as the device minor, which is what ``File=/dev/nvidia[0-N]`` makes it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping

from assessor.sim.mig_caps import ci_minor, gi_minor, gpu_minor
from assessor.sim.slurm_node import GRES_CONF, SLURM_CONF
from assessor.sim.state import GpuState, NodeState

_GPU_FILE = re.compile(r"^/dev/nvidia(\d+)$")
_CAP_FILE = re.compile(r"^/dev/nvidia-caps/nvidia-cap(\d+)$")


def job_gpus(env: Mapping[str, str]) -> set[int] | None:
    """The indices of the GPU records a job step may use, None outside a Slurm job (or a job without GPUs
    listed)."""
    if not env.get("SLURM_JOB_ID"):
        return None
    listed = env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS")
    if listed is None:
        return None
    return {int(word) for word in listed.split(",") if word.strip().isdigit()}


def job_files(state: NodeState, env: Mapping[str, str], indices: set[int]) -> set[str]:
    """The device files the job's GPU devices open (its device cgroup on a real node): slurmd's devices at those
    indices, from the node's ``gres.conf`` and ``slurm.conf`` (:mod:`.gres`); ``/dev/nvidiaN`` for index N when
    the tool cannot read the node's files."""
    from assessor.sim.config_root import node_root, read_config
    from assessor.sim.slurm_node.gres import gpu_devices

    root = node_root(None, env)
    gres_conf = read_config(root, GRES_CONF)
    if gres_conf is None:
        return {f"/dev/nvidia{i}" for i in indices}
    devices = gpu_devices(gres_conf, read_config(root, SLURM_CONF), state.host.split(".")[0])
    return {path for i in indices if 0 <= i < len(devices) for path in devices[i].files}


def _keep_mig_devices(gpu: GpuState, caps: set[int]) -> None:
    """Only the MIG devices of ``gpu`` whose GPU and compute instance capabilities the job opens."""

    m = gpu_minor(gpu)
    kept = []
    for gi in gpu.mig_instances:
        if gi_minor(m, gi.gi_id) not in caps:
            continue
        gi.compute_instances = [ci for ci in gi.compute_instances if ci_minor(m, gi.gi_id, ci.ci_id) in caps]
        if gi.compute_instances:
            kept.append(gi)
    gpu.mig_instances = kept
    devices = {(gi.gi_id, ci.ci_id) for gi in kept for ci in gi.compute_instances}
    gpu.processes = [p for p in gpu.processes if (p.gi_id, p.ci_id) in devices]


def job_view(state: NodeState, env: Mapping[str, str]) -> NodeState:
    """``state`` as a tool inside the job sees it: only the job's GPUs, indexed from 0, and on a GPU in MIG
    mode only the job's MIG devices (``state`` itself when the caller is not in a Slurm job)."""
    indices = job_gpus(env)
    if indices is None:
        return state
    files = job_files(state, env, indices)
    gpu_minors = {int(m.group(1)) for f in files if (m := _GPU_FILE.match(f))}
    caps = {int(m.group(1)) for f in files if (m := _CAP_FILE.match(f))}
    view = copy.deepcopy(state)
    kept: list[GpuState] = []
    for gpu in view.gpus:
        minor = gpu_minor(gpu)
        if minor not in gpu_minors:
            continue
        gpu.minor_number = minor
        gpu.index = len(kept)
        if gpu.mig_mode_current:
            _keep_mig_devices(gpu, caps)
        kept.append(gpu)
    view.gpus = kept
    return view
