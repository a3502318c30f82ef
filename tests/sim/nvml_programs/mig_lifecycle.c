/* A C program of a tool author, compiled against NVIDIA's nvml.h and linked with -lnvidia-ml.
 * It lists the GPUs, enables MIG on GPU 0, creates a GPU instance and a compute instance in it and
 * reads them back: what the tests compare with nvidia-smi on the same node. */
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                   \
    do {                                                                              \
        nvmlReturn_t r_ = (call);                                                     \
        if (r_ != NVML_SUCCESS) {                                                     \
            printf("FAIL %s: %d %s\n", #call, (int)r_, nvmlErrorString(r_));          \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

int main(int argc, char **argv) {
    unsigned int count, i;
    int create = argc > 1 && strcmp(argv[1], "create") == 0;
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    CHECK(nvmlInit_v2());
    CHECK(nvmlSystemGetDriverVersion(version, sizeof version));
    CHECK(nvmlDeviceGetCount_v2(&count));
    printf("driver %s count %u\n", version, count);
    for (i = 0; i < count; i++) {
        nvmlDevice_t dev;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        nvmlMemory_t mem;
        unsigned int temp, procs = 0;
        CHECK(nvmlDeviceGetHandleByIndex_v2(i, &dev));
        CHECK(nvmlDeviceGetName(dev, name, sizeof name));
        CHECK(nvmlDeviceGetUUID(dev, uuid, sizeof uuid));
        CHECK(nvmlDeviceGetMemoryInfo(dev, &mem));
        CHECK(nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &temp));
        nvmlReturn_t pr = nvmlDeviceGetComputeRunningProcesses_v3(dev, &procs, NULL);
        if (pr != NVML_SUCCESS && pr != NVML_ERROR_INSUFFICIENT_SIZE) {
            printf("FAIL processes %d\n", (int)pr);
            return 1;
        }
        printf("gpu %u name=%s uuid=%s total_mib=%llu temp=%u procs=%u\n", i, name, uuid,
               mem.total / (1024 * 1024), temp, procs);
        if (procs > 0) {
            nvmlProcessInfo_t *infos = calloc(procs, sizeof *infos);
            CHECK(nvmlDeviceGetComputeRunningProcesses_v3(dev, &procs, infos));
            for (unsigned int p = 0; p < procs; p++) {
                char pname[256];
                CHECK(nvmlSystemGetProcessName(infos[p].pid, pname, sizeof pname));
                printf("process gpu=%u pid=%u mib=%llu name=%s\n", i, infos[p].pid,
                       infos[p].usedGpuMemory / (1024 * 1024), pname);
            }
            free(infos);
        }
    }
    nvmlDevice_t gpu0;
    unsigned int current, pending;
    CHECK(nvmlDeviceGetHandleByIndex_v2(0, &gpu0));
    if (create) {
        nvmlReturn_t activation;
        CHECK(nvmlDeviceSetMigMode(gpu0, NVML_DEVICE_MIG_ENABLE, &activation));
        printf("activation %d\n", (int)activation);
    }
    CHECK(nvmlDeviceGetMigMode(gpu0, &current, &pending));
    printf("mig current=%u pending=%u\n", current, pending);
    if (create) {
        nvmlGpuInstanceProfileInfo_t gip;
        nvmlGpuInstance_t gi;
        nvmlGpuInstanceInfo_t gii;
        nvmlComputeInstanceProfileInfo_t cip;
        nvmlComputeInstance_t ci;
        nvmlComputeInstanceInfo_t cii;
        CHECK(nvmlDeviceGetGpuInstanceProfileInfo(gpu0, NVML_GPU_INSTANCE_PROFILE_2_SLICE, &gip));
        CHECK(nvmlDeviceCreateGpuInstance(gpu0, gip.id, &gi));
        CHECK(nvmlGpuInstanceGetInfo(gi, &gii));
        printf("created gi id=%u profile=%u start=%u size=%u mem_mib=%llu\n", gii.id, gii.profileId,
               gii.placement.start, gii.placement.size, gip.memorySizeMB);
        CHECK(nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
                                                           NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cip));
        CHECK(nvmlGpuInstanceCreateComputeInstance(gi, cip.id, &ci));
        CHECK(nvmlComputeInstanceGetInfo_v2(ci, &cii));
        printf("created ci id=%u gi=%u profile=%u\n", cii.id, gii.id, cii.profileId);
    }
    /* read every GPU instance back, whoever made it */
    for (unsigned int profile = 0; profile < NVML_GPU_INSTANCE_PROFILE_COUNT; profile++) {
        nvmlGpuInstanceProfileInfo_t info;
        if (nvmlDeviceGetGpuInstanceProfileInfo(gpu0, profile, &info) != NVML_SUCCESS) continue;
        nvmlGpuInstance_t list[8];
        unsigned int n = 8;
        if (nvmlDeviceGetGpuInstances(gpu0, info.id, list, &n) != NVML_SUCCESS) continue;
        for (unsigned int k = 0; k < n; k++) {
            nvmlGpuInstanceInfo_t gii;
            CHECK(nvmlGpuInstanceGetInfo(list[k], &gii));
            printf("gi id=%u profile=%u start=%u size=%u\n", gii.id, gii.profileId, gii.placement.start,
                   gii.placement.size);
        }
    }
    CHECK(nvmlShutdown());
    return 0;
}
