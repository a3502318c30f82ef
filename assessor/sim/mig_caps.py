"""A node's MIG capability files: ``/dev/nvidia-caps/nvidia-capN`` and the driver's ``/proc`` files naming them.

Since R450 the driver guards each MIG GPU instance and compute instance behind a capability (NVIDIA MIG User
Guide, "Device Nodes and Capabilities"): a process may use a MIG device only when it can open the GPU's
``/dev/nvidiaN``, its GPU instance's capability and its compute instance's. Each capability is a file under
``/proc/driver/nvidia/capabilities`` whose three lines give the minor of its device node:

- ``mig/config`` (minor 1, mode 0400: create and destroy instances) and ``mig/monitor`` (minor 2, 0444);
- ``gpuG/mig/giI/access`` for each GPU instance, ``gpuG/mig/giI/ciC/access`` for each of its compute instances
  (``G`` the GPU's minor number), mode 0444;
- the minors follow the driver's fixed table, ``/proc/driver/nvidia-caps/mig-minors``: 1 config, 2 monitor,
  then per GPU 15 GPU instances of 9 minors each (the GI's access, then its compute instances 0 to 7).

The device nodes are ``/dev/nvidia-caps/nvidia-capN``, character devices of the ``nvidia-caps`` driver
(its major is dynamic: :data:`CAPS_MAJOR` on this node). A site that schedules MIG devices with Slurm lists the
GPU's ``/dev/nvidiaN`` and both capability nodes of each MIG device in ``gres.conf`` (``MultipleFiles=``), so
that a job's device cgroup opens exactly those.

Pure, but for :func:`write_proc_files` (which writes the ``/proc`` files the running node shows).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from assessor.sim.state import GpuState, NodeState

CAPS_DIR = "/dev/nvidia-caps"
CAPS_MAJOR = 508  # dynamic on a real node (/proc/devices names it); the preload library reports this one
CONFIG_MINOR = 1
MONITOR_MINOR = 2
GPU_INSTANCES = 15  # per GPU in the minors table
COMPUTE_INSTANCES = 8  # per GPU instance
MINORS_PER_GPU = GPU_INSTANCES * (1 + COMPUTE_INSTANCES)
TABLE_GPUS = 32  # GPUs the driver's mig-minors table lists
READ_ONLY = 0o444
OWNER_ONLY = 0o400


def gi_minor(gpu_minor: int, gi_id: int) -> int:
    """Minor of ``gpuG/mig/giI/access``."""
    return 3 + gpu_minor * MINORS_PER_GPU + gi_id * (1 + COMPUTE_INSTANCES)


def ci_minor(gpu_minor: int, gi_id: int, ci_id: int) -> int:
    """Minor of ``gpuG/mig/giI/ciC/access``."""
    return gi_minor(gpu_minor, gi_id) + 1 + ci_id


def cap_device(minor: int) -> str:
    return f"{CAPS_DIR}/nvidia-cap{minor}"


def gpu_minor(gpu: GpuState) -> int:
    return gpu.minor_number if gpu.minor_number is not None else gpu.index


def mig_devices(gpu: GpuState) -> list[tuple[int, int]]:
    """``(gi_id, ci_id)`` of every MIG device of a GPU in MIG mode (none otherwise), in ID order."""
    if not gpu.mig_mode_current or gpu.lost:
        return []
    return [
        (gi.gi_id, ci.ci_id)
        for gi in sorted(gpu.mig_instances, key=lambda g: g.gi_id)
        for ci in sorted(gi.compute_instances, key=lambda c: c.ci_id)
    ]


def device_files(gpu: GpuState, gi_id: int, ci_id: int) -> list[str]:
    """The files a MIG device is opened through: the GPU's, its GPU instance's and its compute instance's."""
    m = gpu_minor(gpu)
    return [f"/dev/nvidia{m}", cap_device(gi_minor(m, gi_id)), cap_device(ci_minor(m, gi_id, ci_id))]


def _node_caps(state: NodeState) -> dict[str, tuple[int, int]]:
    """``/proc`` path under ``capabilities/`` -> (minor, mode) of every capability the node has now."""
    if not state.driver.loaded or not state.module_loaded("nvidia"):
        return {}
    caps = {"mig/config": (CONFIG_MINOR, OWNER_ONLY), "mig/monitor": (MONITOR_MINOR, READ_ONLY)}
    for gpu in state.gpus:
        if not gpu.mig_mode_current or gpu.lost:
            continue
        m = gpu_minor(gpu)
        for gi in gpu.mig_instances:
            caps[f"gpu{m}/mig/gi{gi.gi_id}/access"] = (gi_minor(m, gi.gi_id), READ_ONLY)
            for ci in gi.compute_instances:
                caps[f"gpu{m}/mig/gi{gi.gi_id}/ci{ci.ci_id}/access"] = (ci_minor(m, gi.gi_id, ci.ci_id), READ_ONLY)
    return caps


def cap_device_files(state: NodeState) -> list[str]:
    """``/dev/nvidia-caps/nvidia-capN`` of every capability the node has (made at its boot, as the driver's
    udev-less setup does with ``nvidia-modprobe``)."""
    return [cap_device(minor) for minor, _ in sorted(_node_caps(state).values())]


def access_text(minor: int, mode: int) -> str:
    return f"DeviceFileMinor: {minor}\nDeviceFileMode: {mode}\nDeviceFileModify: 1\n"


def mig_minors_text() -> str:
    """``/proc/driver/nvidia-caps/mig-minors``: the driver's whole table, every possible GPU's."""
    lines = [f"config {CONFIG_MINOR}", f"monitor {MONITOR_MINOR}"]
    for g in range(TABLE_GPUS):
        for gi in range(GPU_INSTANCES):
            lines.append(f"gpu{g}/gi{gi}/access {gi_minor(g, gi)}")
            lines += [f"gpu{g}/gi{gi}/ci{ci}/access {ci_minor(g, gi, ci)}" for ci in range(COMPUTE_INSTANCES)]
    return "\n".join(lines) + "\n"


def proc_files(state: NodeState) -> dict[str, str]:
    """Path under ``/proc/driver`` -> text of every MIG capability file the node shows now (none while the
    driver is not loaded)."""
    caps = _node_caps(state)
    if not caps:
        return {}
    out = {f"nvidia/capabilities/{path}": access_text(minor, mode) for path, (minor, mode) in caps.items()}
    out["nvidia-caps/mig-minors"] = mig_minors_text()
    return out


def write_proc_files(driver_dir: Path, state: NodeState) -> None:
    """Make ``driver_dir`` (what the node shows as ``/proc/driver``) hold exactly the capability files of
    :func:`proc_files`: a GPU or compute instance destroyed takes its folder with it."""
    wanted = proc_files(state)
    for top in ("nvidia/capabilities", "nvidia-caps"):
        folder = driver_dir / top
        if not any(path.startswith(top + "/") for path in wanted):
            shutil.rmtree(folder, ignore_errors=True)
            continue
        for current, dirs, names in os.walk(folder, topdown=False):
            for name in names:
                rel = os.path.relpath(os.path.join(current, name), driver_dir)
                if rel not in wanted:
                    os.unlink(os.path.join(current, name))
            for name in dirs:
                with_dir = os.path.join(current, name)
                if not os.listdir(with_dir):
                    os.rmdir(with_dir)
    for rel, text in wanted.items():
        path = driver_dir / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
