"""Framebuffer memory in use on a simulated GPU and on its MIG devices, one figure for every tool.

``nvidia-smi`` (the default table, ``-q``, ``-q -x``, ``--query-gpu``), NVML and DCGM all read what is in use
here, so they never disagree.

A GPU outside MIG mode uses what the node records (``GpuState.memory_used_mib``: the idle figure of the
fixture, plus what its processes allocated). A MIG device is never empty: each one with a compute instance
holds a little memory while idle, about 12.5 MiB per compute slice of its GPU instance, and the GPU's own
row counts it too (real ``nvidia-smi`` of idle MIG GPUs, ``tests/data/corpus/nvml``):

- A30 at 535.183.01 (``nvidia_smi_default_A30_535_mig_idle.txt``): 12 MiB in each 1g.6gb, 25 MiB in the
  2g.12gb, 50 MiB on the GPU (four slices);
- A100-SXM4-40GB at 535.104.12 (``nvidia_smi_default_A100_40GB_mig_535.txt``): 37 MiB in a 3g.20gb;
- H100 NVL at 560.35.03 (``nvidia_smi_mig_devices_H100_NVL.txt``): 38 MiB in a 3g.47gb, 13 MiB in each
  1g, 64 MiB on the GPU (five slices).

12.4 MiB a slice on Ampere and 12.7 on Hopper give every one of those figures, the GPU's sums included, when
a figure is rounded once, half up (4 x 12.4 = 49.6 -> 50; 5 x 12.7 = 63.5 -> 64). No Blackwell MIG capture
was found: Blackwell takes Hopper's figure.
"""

from __future__ import annotations

from assessor.sim import mig
from assessor.sim.state import GpuInstanceState, GpuState

# Idle memory of a MIG device per compute slice of its GPU instance, in tenths of a MiB, by architecture.
_IDLE_TENTHS_PER_SLICE = {"Ampere": 124, "Hopper": 127, "Blackwell": 127}
_DEFAULT_TENTHS_PER_SLICE = 125

# The MIG devices box prints a device's total in MiB where -lgip prints GiB cut to two decimals; these are
# the real boxes' figures (corpus nvml/nvidia_smi_default_A100_40GB_mig_535.txt: 3g.20gb 19968 MiB;
# nvidia_smi_default_A30_535_mig_idle.txt: 5952 and 11968 MiB). Other models: -lgip's GiB to the 1/8 GiB.
_DEVICE_TOTAL_MIB = {
    ("A100-SXM4-40GB", "3g.20gb"): 19968,
    ("A100-SXM4-40GB", "4g.20gb"): 19968,
    ("A30", "1g.6gb"): 5952,
    ("A30", "1g.6gb+me"): 5952,
    ("A30", "2g.12gb"): 11968,
    ("A30", "2g.12gb+me"): 11968,
}


def _half_up(tenths: int) -> int:
    return (tenths + 5) // 10


def _slices(gpu: GpuState, gi: GpuInstanceState) -> int:
    """Compute slices of a GPU instance: its profile's, else the N of its ``Ng`` name."""
    try:
        profile = next(p for p in mig.profiles_for(gpu.name) if p.id == gi.profile_id)
    except (mig.MigUnsupported, StopIteration):
        head = gi.name.split("g", 1)[0]
        return int(head) if head.isdigit() else 1
    return profile.slices


def _idle_tenths(gpu: GpuState, gi: GpuInstanceState) -> int:
    """What a GPU instance with compute instances holds while idle; nothing without one (no MIG device)."""
    if not gi.compute_instances:
        return 0
    per_slice = _IDLE_TENTHS_PER_SLICE.get(gpu.architecture, _DEFAULT_TENTHS_PER_SLICE)
    return per_slice * _slices(gpu, gi)


def _mig_on(gpu: GpuState) -> bool:
    return gpu.mig_supported and gpu.mig_mode_current


def used_mib(gpu: GpuState) -> int:
    """The GPU's memory in use: the node's figure, plus what its idle MIG devices hold in MIG mode."""
    if not _mig_on(gpu):
        return gpu.memory_used_mib
    return gpu.memory_used_mib + _half_up(sum(_idle_tenths(gpu, gi) for gi in gpu.mig_instances))


def mig_device_used_mib(gpu: GpuState, gi: GpuInstanceState) -> int:
    """A MIG device's memory in use: its GPU instance's idle figure plus what the processes on it allocated.

    Memory belongs to the GPU instance, so every compute instance of one GPU instance shows the same figure.
    """
    jobs = sum(p.used_memory_mib for p in gpu.processes if p.gi_id == gi.gi_id)
    return _half_up(_idle_tenths(gpu, gi)) + jobs


def mig_device_total_mib(gpu: GpuState, profile: mig.GiProfile) -> int:
    """A MIG device's memory as the MIG devices box and NVML report it, in MiB."""
    exact = _DEVICE_TOTAL_MIB.get((gpu.name.removeprefix("NVIDIA "), profile.name))
    return exact if exact is not None else round(round(profile.memory_gib * 8) / 8 * 1024)
