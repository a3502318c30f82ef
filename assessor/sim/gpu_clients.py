"""Who holds a simulated GPU open, and who holds the NVIDIA kernel module: what refuses a reset, keeps an
A100's MIG change pending and keeps ``modprobe -r nvidia`` from working.

What the real node shows (public captures; the wording is reproduced in :mod:`.tools.nvidia_smi`):

- A compute process holds its GPU; ``nvidia-smi -r`` then answers "In use by another client" and exits
  255 (NVIDIA/mig-parted#181, ComputeCanada/puppet-magic_castle#387).
- ``nvidia-persistenced`` keeps a handle on every GPU it holds in persistence mode
  (NVIDIA/gpu-operator#118: the reset works once it is killed; NVIDIA/NVSentinel#1690: ``nvidia-smi -pm 0``
  on the GPU is enough). Legacy persistence mode without the daemon holds the GPU the same way.
- The DCGM host engine ``nv-hostengine`` (the MIG User Guide: "All daemons holding handles on driver
  modules need to be stopped before MIG enablement", naming DCGM and nvsm on DGX).
- Not the fabric manager: the nvidia-smi man page (``-r``) says that on Ampere NVSwitch systems the fabric
  manager is required to facilitate a reset (with it running each GPU can be reset individually) and that
  from Hopper on the reset no longer depends on it; a reset GPU registers with the fabric again, which
  :func:`.tools.nvidia_smi.gpu_reset` leaves "In Progress" while the fabric manager is down. With it
  stopped an Ampere NVSwitch GPU resets only together with all its NVLink peers
  (:func:`.tools.nvidia_smi.nvlink_peers_left_out`).
- ``nvidia_drm`` loaded: NVIDIA/mig-parted#181 ("Toggling MIG mode fails when nvidia_drm module is
  loaded"; the workaround is ``rmmod nvidia_drm``).

The daemons and ``nvidia_drm`` count only where the node says they do (``NodeState.daemons_hold_gpus``,
set by ``gpulab sim init``); compute processes and the explicit ``GpuState.mig_reset_blocked_by`` always do.
"""

from __future__ import annotations

from assessor.sim.state import GpuState, NodeState

# systemd units whose daemon opens the GPUs, with the process name ps and fuser show for it.
GPU_DAEMONS: dict[str, str] = {
    "nvidia-persistenced.service": "nvidia-persistenced",
    "nvidia-dcgm.service": "nv-hostengine",
    "nvidia-fabricmanager.service": "nv-fabricmanager",
}


def unit_running(state: NodeState, unit: str) -> bool:
    """The unit is installed and its daemon is running."""
    service = state.services.get(unit)
    return service is not None and service.active_state == "active" and service.sub_state == "running"


def gpu_holders(state: NodeState, gpu: GpuState) -> list[str]:
    """What holds ``gpu`` open, one phrase each (empty: the GPU is idle and may be reset)."""
    out = [f"{p.name} (pid {p.pid})" for p in gpu.processes]
    out += list(gpu.mig_reset_blocked_by)
    if not state.daemons_hold_gpus:
        return out
    if gpu.persistence_mode:
        if unit_running(state, "nvidia-persistenced.service"):
            out.append("nvidia-persistenced.service (nvidia-persistenced)")
        else:
            out.append("persistence mode (nvidia-smi -pm 1)")
    if unit_running(state, "nvidia-dcgm.service"):
        out.append("nvidia-dcgm.service (nv-hostengine)")
    if state.module_loaded("nvidia_drm"):
        out.append("the nvidia_drm kernel module")
    return out


def mig_change_blockers(state: NodeState, gpu: GpuState) -> list[str]:
    """What keeps a MIG mode change from taking effect now on ``gpu``.

    MIG User Guide, "Deployment Considerations": "Setting MIG mode on the A100/A30 requires a GPU reset"
    and "All daemons holding handles on driver modules need to be stopped before MIG enablement"; "depending
    on the GPU product, the driver will attempt to reset the GPU". So on Ampere everything that blocks a
    reset blocks it. H100/H200 apply the mode without that reset (NVIDIA/gpu-operator#1845: the same MIG
    config stays pending on A100 and applies on H100 and H200); only work running on the GPU keeps it pending.
    """
    if gpu.architecture in NO_RESET_FOR_MIG:
        return [f"{p.name} (pid {p.pid})" for p in gpu.processes]
    return gpu_holders(state, gpu)


# Architectures whose MIG mode change needs no GPU reset (the guide names the reset for A100/A30 only).
NO_RESET_FOR_MIG = ("Hopper", "Blackwell")


def driver_handles(state: NodeState) -> list[str]:
    """Processes with ``/dev/nvidia*`` open: each adds one to the ``nvidia`` module's use count."""
    out = [comm for unit, comm in GPU_DAEMONS.items() if unit_running(state, unit)]
    out += [p.name for g in state.gpus for p in g.processes]
    return out


def cuda_processes(state: NodeState) -> list[str]:
    """Compute processes: each holds ``nvidia_uvm`` (CUDA's unified memory) as well as ``nvidia``."""
    return [p.name for g in state.gpus for p in g.processes if p.type == "C"]
