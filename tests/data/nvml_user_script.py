"""A monitoring/CI script as anyone would write it: only ``import pynvml``, nothing of gpulab.

It lists the GPUs, enables MIG, creates GPU and compute instances (one where the driver chooses, one at an
explicit placement), destroys one, and prints what it sees as JSON. gpulab's tests run it in a subprocess
against a simulated node (GPULAB_SIM_STATE) and compare with ``nvidia-smi mig -lgi``.
"""

import json
import sys

import pynvml


def instances(handle):
    """(gi id, profile id, start, size) of every GPU instance, through NVML's own enumeration."""
    found = []
    for index in range(pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        try:
            profile = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, index)
        except pynvml.NVMLError_NotSupported:
            continue
        array = (pynvml.c_nvmlGpuInstance_t * profile.instanceCount)()
        count = pynvml.c_uint(0)
        pynvml.nvmlDeviceGetGpuInstances(handle, profile.id, array, pynvml.byref(count))
        for i in range(count.value):
            info = pynvml.nvmlGpuInstanceGetInfo(array[i])
            found.append([info.id, info.profileId, info.placement.start, info.placement.size])
    return sorted(found)


def full_ci(gi, slices):
    """The compute instance profile index that spans a GPU instance of ``slices`` compute slices."""
    for index in range(pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
        try:
            info = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, index, pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
            )
        except pynvml.NVMLError_NotSupported:
            continue
        if info.sliceCount == slices:
            return index
    raise SystemExit("no GI-wide compute instance profile")


def main():
    pynvml.nvmlInit()
    report = {"driver": pynvml.nvmlSystemGetDriverVersion(), "gpus": []}
    for i in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        gpu = {"index": i, "name": pynvml.nvmlDeviceGetName(handle), "uuid": pynvml.nvmlDeviceGetUUID(handle)}
        report["gpus"].append(gpu)
        try:
            pynvml.nvmlDeviceGetMigMode(handle)
        except pynvml.NVMLError_NotSupported:
            gpu["mig"] = "not supported"
            gpu["max_mig_devices"] = pynvml.nvmlDeviceGetMaxMigDeviceCount(handle)
            continue
        status = pynvml.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_ENABLE)
        gpu["activation"] = status
        gpu["mig"] = pynvml.nvmlDeviceGetMigMode(handle)
        gpu["max_mig_devices"] = pynvml.nvmlDeviceGetMaxMigDeviceCount(handle)
        one = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE)
        two = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE)
        first = pynvml.nvmlDeviceCreateGpuInstance(handle, one.id)
        second = pynvml.nvmlDeviceCreateGpuInstance(handle, one.id)
        # An explicit placement: the last place a 2-slice instance can go.
        placements = (pynvml.c_nvmlGpuInstancePlacement_t * 8)()
        count = pynvml.c_uint(len(placements))
        pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(handle, two.id, placements, pynvml.byref(count))
        taken = {slot for _, _, start, size in instances(handle) for slot in range(start, start + size)}
        free = [p for p in placements[: count.value] if not taken & set(range(p.start, p.start + p.size))]
        where = free[-1]
        # the C function takes a pointer: pynvml passes the argument through as it is given
        third = pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(handle, two.id, pynvml.byref(where))
        for gi, slices in ((first, 1), (second, 1), (third, 2)):
            pynvml.nvmlGpuInstanceCreateComputeInstance(gi, full_ci(gi, slices))
        gpu["created"] = instances(handle)
        gpu["mig_devices"] = sum(
            1
            for m in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(handle))
            if _exists(lambda m=m, h=handle: pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, m))
        )
        # Destroy the first: its compute instance, then the GPU instance itself.
        try:
            pynvml.nvmlGpuInstanceDestroy(first)
            gpu["destroy_busy"] = "destroyed"
        except pynvml.NVMLError_InUse:
            gpu["destroy_busy"] = "in use"
        info = pynvml.nvmlGpuInstanceGetInfo(first)
        cis = (pynvml.c_nvmlComputeInstance_t * 8)()
        n = pynvml.c_uint(0)
        ci_index = full_ci(first, 1)
        pynvml.nvmlGpuInstanceGetComputeInstances(first, ci_index, cis, pynvml.byref(n))
        for k in range(n.value):
            pynvml.nvmlComputeInstanceDestroy(cis[k])
        pynvml.nvmlGpuInstanceDestroy(first)
        gpu["destroyed"] = info.id
        gpu["left"] = instances(handle)
    pynvml.nvmlShutdown()
    json.dump(report, sys.stdout)


def _exists(call):
    try:
        call()
    except pynvml.NVMLError_NotFound:
        return False
    return True


if __name__ == "__main__":
    main()
