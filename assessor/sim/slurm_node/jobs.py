"""The GPUs a Slurm job may use, as the simulated tools see them from inside it (pure).

On a real node with ``ConstrainDevices=yes`` (cgroup.conf), slurmd puts a job step in a device cgroup that
opens only its allocated ``/dev/nvidiaN``: NVML, and so ``nvidia-smi``, enumerate those GPUs only, numbered
from 0. The simulated node has no device cgroup; the job's environment stands in for it: a tool run with
``SLURM_STEP_GPUS`` (a step: ``srun``) or ``SLURM_JOB_GPUS`` (a batch script) in its environment sees only the
GPUs whose device minor those list, as slurmd sets them from ``gres.conf``'s ``File=``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from assessor.sim.state import GpuState, NodeState


def job_gpus(env: Mapping[str, str]) -> set[int] | None:
    """The device minors a job step may use, None outside a Slurm job (or a job without GPUs listed)."""
    if not env.get("SLURM_JOB_ID"):
        return None
    listed = env.get("SLURM_STEP_GPUS") or env.get("SLURM_JOB_GPUS")
    if listed is None:
        return None
    minors = {int(word) for word in listed.split(",") if word.strip().isdigit()}
    return minors


def job_view(state: NodeState, env: Mapping[str, str]) -> NodeState:
    """``state`` as a tool inside the job sees it: only the job's GPUs, indexed from 0 (``state`` itself when
    the caller is not in a Slurm job)."""
    minors = job_gpus(env)
    if minors is None:
        return state
    view = copy.deepcopy(state)
    kept: list[GpuState] = []
    for gpu in view.gpus:
        minor = gpu.minor_number if gpu.minor_number is not None else gpu.index
        if minor in minors:
            gpu.minor_number = minor
            gpu.index = len(kept)
            kept.append(gpu)
    view.gpus = kept
    return view
