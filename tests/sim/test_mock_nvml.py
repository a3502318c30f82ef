"""The mock NVML answers like pynvml over real NVML: same shapes, same (real) exception classes."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest

from assessor.sim.fixtures import load_fixture
from assessor.sim.mock_nvml import MockNvml
from assessor.sim.state import ComputeInstanceState, GpuInstanceState, NodeState, RetiredPages, save_state


def started(state: NodeState) -> MockNvml:
    nvml = MockNvml(state)
    nvml.nvmlInit()
    return nvml


@pytest.fixture
def h100() -> Iterator[MockNvml]:
    nvml = started(load_fixture("hgx-h100"))
    yield nvml
    nvml.nvmlShutdown()


def test_every_call_before_init_is_uninitialized_as_in_pynvml() -> None:
    nvml = MockNvml(load_fixture("hgx-h100"))
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        nvml.nvmlDeviceGetCount()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        nvml.nvmlSystemGetDriverVersion()


def test_calls_after_the_last_shutdown_are_uninitialized_again() -> None:
    nvml = started(load_fixture("pcie-l40s"))
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    nvml.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        nvml.nvmlDeviceGetName(handle)


def test_init_refuses_a_driver_library_and_kernel_module_mismatch() -> None:
    state = load_fixture("dgx-a100")
    state.driver.version = "535.161.08"  # user space upgraded, the old kernel module still loaded
    with pytest.raises(pynvml.NVMLError_LibRmVersionMismatch) as err:
        MockNvml(state).nvmlInit()
    assert str(err.value) == "RM has detected an NVML/RM version mismatch."


def test_init_without_the_kernel_module_is_driver_not_loaded() -> None:
    state = load_fixture("pcie-l40s")
    state.driver.loaded = False
    with pytest.raises(pynvml.NVMLError_DriverNotLoaded):
        MockNvml(state).nvmlInit()


def test_system_queries_return_pynvml_shapes() -> None:
    nvml = started(load_fixture("dgx-a100"))
    assert nvml.nvmlSystemGetDriverVersion() == "535.129.03"
    assert nvml.nvmlSystemGetCudaDriverVersion() == 12020
    assert nvml.nvmlDeviceGetCount() == 8


def test_constants_and_exception_classes_are_pynvml_s_own(h100: MockNvml) -> None:
    assert h100.NVMLError_NotSupported is pynvml.NVMLError_NotSupported
    assert h100.NVML_TEMPERATURE_GPU == pynvml.NVML_TEMPERATURE_GPU
    assert h100.c_nvmlGpuInstance_t is pynvml.c_nvmlGpuInstance_t
    with pytest.raises(AttributeError):
        _ = h100.nvmlNoSuchFunction


def test_a_pynvml_function_the_mock_does_not_simulate_is_function_not_found(h100: MockNvml) -> None:
    handle = h100.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        h100.nvmlDeviceGetVgpuSchedulerLog(handle)  # vGPU: a bare-metal node's library has no simulation of it


def test_device_queries_return_units_and_types_as_pynvml(h100: MockNvml) -> None:
    h = h100.nvmlDeviceGetHandleByIndex(3)
    assert h100.nvmlDeviceGetName(h) == "NVIDIA H100 80GB HBM3"
    pci = h100.nvmlDeviceGetPciInfo(h)
    assert isinstance(pci, pynvml.nvmlPciInfo_t)
    # pynvml's own structure: nvidia-ml-py 12+ decodes its char arrays, so busId reads as str, as from real NVML
    assert pci.busId == "00000000:5D:00.0"
    assert (pci.bus, pci.pciDeviceId) == (0x5D, 0x233010DE)
    memory = h100.nvmlDeviceGetMemoryInfo(h)
    assert memory.total == 81559 * 1024 * 1024  # bytes
    assert memory.free + memory.used == memory.total
    assert h100.nvmlDeviceGetPowerUsage(h) == 85300  # milliwatts
    assert h100.nvmlDeviceGetEnforcedPowerLimit(h) == 700000
    assert h100.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM) == 2619  # MHz
    assert h100.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM) == 1980
    assert h100.nvmlDeviceGetPersistenceMode(h) == pynvml.NVML_FEATURE_ENABLED
    assert h100.nvmlDeviceGetEccMode(h) == [1, 1]
    assert h100.nvmlDeviceGetMigMode(h) == [0, 0]
    assert h100.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU) == 30
    assert h100.nvmlDeviceGetTemperatureThreshold(h, pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN) == 92
    assert (h100.nvmlDeviceGetCurrPcieLinkGeneration(h), h100.nvmlDeviceGetMaxPcieLinkWidth(h)) == (5, 16)
    assert h100.nvmlDeviceGetCurrentClocksEventReasons(h) == pynvml.nvmlClocksEventReasonGpuIdle
    assert h100.nvmlDeviceGetArchitecture(h) == pynvml.NVML_DEVICE_ARCH_HOPPER


def test_row_remapping_is_a_four_tuple_and_retired_pages_are_not_supported_on_hbm(h100: MockNvml) -> None:
    state = h100.state
    assert state is not None
    state.gpus[2].remapped_rows.correctable = 3  # type: ignore[union-attr]
    state.gpus[2].remapped_rows.pending = True  # type: ignore[union-attr]
    h = h100.nvmlDeviceGetHandleByIndex(2)
    assert h100.nvmlDeviceGetRemappedRows(h) == (3, 0, 1, 0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        h100.nvmlDeviceGetRetiredPagesPendingStatus(h)


def test_retired_pages_are_not_supported_on_a100_either() -> None:
    nvml = started(load_fixture("dgx-a100"))
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetRetiredPagesPendingStatus(nvml.nvmlDeviceGetHandleByIndex(0))


def test_ecc_counters_are_read_with_pynvml_s_type_and_counter_constants(h100: MockNvml) -> None:
    assert h100.state is not None
    h100.state.gpus[1].ecc.aggregate_corrected = 42
    h = h100.nvmlDeviceGetHandleByIndex(1)
    corrected, aggregate = pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_AGGREGATE_ECC
    assert h100.nvmlDeviceGetTotalEccErrors(h, corrected, aggregate) == 42
    assert h100.nvmlDeviceGetTotalEccErrors(h, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC) == 0


def test_nvlink_past_the_last_link_is_an_invalid_argument() -> None:
    for name, links in (("dgx-a100", 12), ("hgx-h100", 18)):
        nvml = started(load_fixture(name))
        h = nvml.nvmlDeviceGetHandleByIndex(0)
        assert nvml.nvmlDeviceGetNvLinkState(h, links - 1) == pynvml.NVML_FEATURE_ENABLED
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            nvml.nvmlDeviceGetNvLinkState(h, links)


def test_an_inactive_link_and_its_error_counters_show_through() -> None:
    state = load_fixture("hgx-h100")
    state.gpus[4].nvlinks[7].active = False
    state.gpus[4].nvlinks[7].errors["replay"] = 12
    nvml = started(state)
    h = nvml.nvmlDeviceGetHandleByIndex(4)
    assert nvml.nvmlDeviceGetNvLinkState(h, 7) == pynvml.NVML_FEATURE_DISABLED
    assert nvml.nvmlDeviceGetNvLinkErrorCounter(h, 7, pynvml.NVML_NVLINK_ERROR_DL_REPLAY) == 12


def test_l40s_has_no_mig_no_nvlink_and_no_fabric() -> None:
    nvml = started(load_fixture("pcie-l40s"))
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetMigMode(h)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetNvLinkState(h, 0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(pynvml.c_nvmlGpuFabricInfo_t()))


def test_fabric_info_fills_pynvml_s_structure(h100: MockNvml) -> None:
    info = pynvml.c_nvmlGpuFabricInfo_t()
    h = h100.nvmlDeviceGetHandleByIndex(0)
    assert h100.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(info)) == pynvml.NVML_SUCCESS
    assert info.state == pynvml.NVML_GPU_FABRIC_STATE_COMPLETED
    assert info.status == pynvml.NVML_SUCCESS


def test_an_empty_mig_device_slot_is_not_found_and_past_the_slots_invalid() -> None:
    state = load_fixture("dgx-a100")
    state.gpus[0].mig_mode_current = state.gpus[0].mig_mode_pending = True
    nvml = started(state)
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    assert nvml.nvmlDeviceGetMaxMigDeviceCount(h) == 7
    with pytest.raises(pynvml.NVMLError_NotFound):
        nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 7)


def _mig_h100() -> NodeState:
    state = load_fixture("hgx-h100")
    gpu = state.gpus[0]
    gpu.mig_mode_current = gpu.mig_mode_pending = True
    gpu.mig_instances = [
        GpuInstanceState(2, 9, "3g.40gb", 0, 4, [ComputeInstanceState(0, 2, "3g.40gb", 0, 3)]),
        GpuInstanceState(9, 19, "1g.10gb", 6, 1, []),
    ]
    return state


def test_gpu_instances_are_listed_into_a_ctypes_array_like_real_nvml() -> None:
    nvml = started(_mig_h100())
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    info = nvml.nvmlDeviceGetGpuInstanceProfileInfo(h, pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE)
    assert (info.id, info.name, info.instanceCount) == (9, "MIG 3g.40gb", 2)
    handles = (pynvml.c_nvmlGpuInstance_t * info.instanceCount)()
    count = ctypes.c_uint(0)
    nvml.nvmlDeviceGetGpuInstances(h, info.id, handles, ctypes.byref(count))
    assert count.value == 1
    gi = nvml.nvmlGpuInstanceGetInfo(handles[0])
    assert isinstance(gi, pynvml.c_nvmlGpuInstanceInfo_t)
    assert (gi.id, gi.profileId, gi.placement.start, gi.placement.size) == (2, 9, 0, 4)


def test_mig_device_handles_cover_compute_instances_only() -> None:
    nvml = started(_mig_h100())
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
    assert nvml.nvmlDeviceGetGpuInstanceId(mig) == 2
    assert nvml.nvmlDeviceGetComputeInstanceId(mig) == 0
    assert nvml.nvmlDeviceGetName(mig) == "NVIDIA H100 80GB HBM3 MIG 3g.40gb"
    assert nvml.nvmlDeviceGetUUID(mig).startswith("MIG-")
    with pytest.raises(pynvml.NVMLError_NotFound):
        nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 1)  # GI 9 has no compute instance: no MIG device
    with pytest.raises(pynvml.NVMLError_NotFound):
        nvml.nvmlDeviceGetGpuInstanceById(h, 5)


def test_a_handle_that_is_not_one_is_an_invalid_argument(h100: MockNvml) -> None:
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        h100.nvmlDeviceGetName("GPU-0")
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        h100.nvmlDeviceGetHandleByIndex(8)


def test_a_gpu_that_fell_off_the_bus_is_lost(h100: MockNvml) -> None:
    assert h100.state is not None
    h100.state.gpus[5].lost = True
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        h100.nvmlDeviceGetTemperature(h100.nvmlDeviceGetHandleByIndex(5), pynvml.NVML_TEMPERATURE_GPU)


def test_a_mock_over_a_state_file_rereads_it_at_init(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    state = load_fixture("hgx-h200")
    save_state(state, path)
    nvml = MockNvml(path=path)
    nvml.nvmlInit()
    assert nvml.nvmlDeviceGetPersistenceMode(nvml.nvmlDeviceGetHandleByIndex(0)) == 1
    nvml.nvmlShutdown()
    state.gpus[0].persistence_mode = False
    save_state(state, path)
    nvml.nvmlInit()
    assert nvml.nvmlDeviceGetPersistenceMode(nvml.nvmlDeviceGetHandleByIndex(0)) == 0


# ---- what monitoring and CI code calls -------------------------------------------------------------------


def test_memory_info_follows_the_header_v1_used_is_reserved_plus_allocated(h100: MockNvml) -> None:
    h = h100.nvmlDeviceGetHandleByIndex(0)
    mib = 1024 * 1024
    v1 = h100.nvmlDeviceGetMemoryInfo(h)
    v2 = h100.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
    # hgx-h100 as the corpus -q: Total 81559, Reserved 454, Used 1, Free 81104 MiB
    assert (v1.total // mib, v1.used // mib, v1.free // mib) == (81559, 455, 81104)
    assert (v2.total // mib, v2.reserved // mib, v2.used // mib, v2.free // mib) == (81559, 454, 1, 81104)
    assert v1.total == v2.total and v1.used + v1.free == v1.total


def test_max_mig_device_count_is_zero_unless_mig_is_enabled_and_never_raises_on_l40s() -> None:
    l40s = started(load_fixture("pcie-l40s"))
    assert l40s.nvmlDeviceGetMaxMigDeviceCount(l40s.nvmlDeviceGetHandleByIndex(0)) == 0
    a100 = started(load_fixture("dgx-a100"))
    h = a100.nvmlDeviceGetHandleByIndex(0)
    assert a100.nvmlDeviceGetMaxMigDeviceCount(h) == 0
    a100.nvmlDeviceSetMigMode(h, 1)
    assert a100.nvmlDeviceGetMaxMigDeviceCount(h) == 7
    a30 = started(load_fixture("a30"))
    h = a30.nvmlDeviceGetHandleByIndex(0)
    a30.nvmlDeviceSetMigMode(h, 1)
    assert a30.nvmlDeviceGetMaxMigDeviceCount(h) == 4  # four compute slices


def test_monitoring_queries_answer_like_an_idle_data_centre_gpu(h100: MockNvml) -> None:
    h = h100.nvmlDeviceGetHandleByIndex(0)
    util = h100.nvmlDeviceGetUtilizationRates(h)
    assert (util.gpu, util.memory) == (0, 0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        h100.nvmlDeviceGetFanSpeed(h)  # passively cooled: -q prints Fan Speed N/A
    bar1 = h100.nvmlDeviceGetBAR1MemoryInfo(h)
    assert bar1.bar1Total == 131072 * 1024 * 1024  # the corpus H100 -q: BAR1 Total 131072 MiB
    assert h100.nvmlDeviceGetCudaComputeCapability(h) == (9, 0)
    assert h100.nvmlDeviceGetBrand(h) == pynvml.NVML_BRAND_NVIDIA
    assert h100.nvmlDeviceGetDisplayMode(h) == pynvml.NVML_FEATURE_ENABLED
    assert h100.nvmlDeviceGetPcieReplayCounter(h) == 0
    assert h100.nvmlDeviceGetPcieThroughput(h, pynvml.NVML_PCIE_UTIL_TX_BYTES) == 0
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        h100.nvmlDeviceGetPcieThroughput(h, 7)
    a100 = started(load_fixture("dgx-a100"))
    assert a100.nvmlDeviceGetCudaComputeCapability(a100.nvmlDeviceGetHandleByIndex(0)) == (8, 0)
    l40s = started(load_fixture("pcie-l40s"))
    assert l40s.nvmlDeviceGetCudaComputeCapability(l40s.nvmlDeviceGetHandleByIndex(0)) == (8, 9)


def test_utilisation_is_not_supported_with_mig_on_as_nvidia_smi_prints_na() -> None:
    nvml = started(_mig_h100())
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetUtilizationRates(nvml.nvmlDeviceGetHandleByIndex(0))


def test_nvlink_capabilities_and_the_far_end_of_each_link(h100: MockNvml) -> None:
    h = h100.nvmlDeviceGetHandleByIndex(0)
    assert h100.nvmlDeviceGetNvLinkCapability(h, 0, pynvml.NVML_NVLINK_CAP_P2P_SUPPORTED) == 1
    assert h100.nvmlDeviceGetNvLinkCapability(h, 0, pynvml.NVML_NVLINK_CAP_SLI_BRIDGE) == 0
    assert h100.nvmlDeviceGetNvLinkRemoteDeviceType(h, 3) == pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH
    assert h100.state is not None
    switches = {sw.bus_id.upper() for sw in h100.state.nvswitches}
    remote = {h100.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId for link in range(18)}
    assert {r[-12:] for r in remote} == {s[-12:] for s in switches}  # every link lands on one of the switches


def test_retired_pages_are_listed_on_a_part_that_retires_pages() -> None:
    state = load_fixture("pcie-l40s")
    state.gpus[0].remapped_rows = None
    state.gpus[0].retired_pages = RetiredPages(single_bit=2, double_bit=1, pending=True)
    nvml = started(state)
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    sbe = pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
    assert len(nvml.nvmlDeviceGetRetiredPages(h, sbe)) == 2
    assert len(nvml.nvmlDeviceGetRetiredPages_v2(h, pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)) == 1
    assert nvml.nvmlDeviceGetRetiredPagesPendingStatus(h) == 1


def test_settings_change_the_node_and_ecc_waits_for_a_reset() -> None:
    state = load_fixture("dgx-a100")
    nvml = started(state)
    h = nvml.nvmlDeviceGetHandleByIndex(1)
    nvml.nvmlDeviceSetPersistenceMode(h, 0)
    nvml.nvmlDeviceSetEccMode(h, 0)
    assert state.gpus[1].persistence_mode is False
    assert nvml.nvmlDeviceGetEccMode(h) == [1, 0]
    state.gpus[1].ecc.volatile_corrected = 5
    nvml.nvmlDeviceClearEccErrorCounts(h, pynvml.NVML_VOLATILE_ECC)
    assert state.gpus[1].ecc.volatile_corrected == 0
    l40s = started(load_fixture("pcie-l40s"))
    with pytest.raises(pynvml.NVMLError_NotSupported):
        l40s.nvmlDeviceSetMigMode(l40s.nvmlDeviceGetHandleByIndex(0), 1)


def test_a_non_root_caller_may_read_but_not_change() -> None:
    nvml = MockNvml(load_fixture("hgx-h100"), euid=1000)
    nvml.nvmlInit()
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    assert nvml.nvmlDeviceGetPersistenceMode(h) == 1
    with pytest.raises(pynvml.NVMLError_NoPermission):
        nvml.nvmlDeviceSetPersistenceMode(h, 0)


def test_mig_mode_on_ampere_stays_pending_while_a_client_holds_the_gpu() -> None:
    state = load_fixture("dgx-a100")
    state.gpus[0].mig_reset_blocked_by = ["nvidia-dcgm.service (nv-hostengine)"]
    state.gpus[1].passthrough = True
    nvml = started(state)
    busy, vm, free = (nvml.nvmlDeviceGetHandleByIndex(i) for i in range(3))
    assert nvml.nvmlDeviceSetMigMode(busy, 1) == pynvml.NVML_ERROR_IN_USE
    assert nvml.nvmlDeviceGetMigMode(busy) == [0, 1]  # pending until a reset
    assert nvml.nvmlDeviceSetMigMode(vm, 1) == pynvml.NVML_ERROR_RESET_REQUIRED
    assert nvml.nvmlDeviceSetMigMode(free, 1) == pynvml.NVML_SUCCESS
    assert nvml.nvmlDeviceGetMigMode(free) == [1, 1]


def test_hopper_switches_mig_mode_without_a_reset_even_with_clients() -> None:
    state = load_fixture("hgx-h100")
    state.gpus[0].mig_reset_blocked_by = ["nvidia-dcgm.service (nv-hostengine)"]
    nvml = started(state)
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    assert nvml.nvmlDeviceSetMigMode(h, 1) == pynvml.NVML_SUCCESS
    assert nvml.nvmlDeviceGetMigMode(h) == [1, 1]


def test_the_full_mig_lifecycle_with_and_without_placement() -> None:
    nvml = started(load_fixture("hgx-h100"))
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nvml.nvmlDeviceCreateGpuInstance(h, 9)  # MIG not enabled yet
    nvml.nvmlDeviceSetMigMode(h, 1)
    placements = (pynvml.c_nvmlGpuInstancePlacement_t * 4)()
    count = ctypes.c_uint(len(placements))
    nvml.nvmlDeviceGetGpuInstancePossiblePlacements(h, 14, placements, ctypes.byref(count))
    assert [(p.start, p.size) for p in placements[: count.value]] == [(0, 2), (2, 2), (4, 2)]
    assert nvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, 9) == 2
    where = pynvml.c_nvmlGpuInstancePlacement_t()
    where.start, where.size = 4, 4
    big = nvml.nvmlDeviceCreateGpuInstanceWithPlacement(h, 9, where)
    assert nvml.nvmlGpuInstanceGetInfo(big).placement.start == 4
    assert nvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, 9) == 1
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        nvml.nvmlDeviceCreateGpuInstanceWithPlacement(h, 9, where)  # taken
    small = nvml.nvmlDeviceCreateGpuInstance(h, 19)
    info = nvml.nvmlGpuInstanceGetInfo(small)
    assert info.profileId == 19 and not 4 <= info.placement.start < 8
    assert nvml.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(big, 0) == 3
    ci_where = pynvml.c_nvmlComputeInstancePlacement_t()
    ci_where.start, ci_where.size = 1, 1
    ci = nvml.nvmlGpuInstanceCreateComputeInstanceWithPlacement(big, 0, ci_where)
    assert nvml.nvmlComputeInstanceGetInfo(ci).placement.start == 1
    whole = nvml.nvmlGpuInstanceCreateComputeInstance(small, 0)
    mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
    assert nvml.nvmlDeviceIsMigDeviceHandle(mig) == 1
    with pytest.raises(pynvml.NVMLError_InUse):
        nvml.nvmlGpuInstanceDestroy(big)
    nvml.nvmlComputeInstanceDestroy(ci)
    nvml.nvmlGpuInstanceDestroy(big)
    nvml.nvmlComputeInstanceDestroy(whole)
    nvml.nvmlGpuInstanceDestroy(small)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        nvml.nvmlGpuInstanceGetInfo(small)  # destroyed since the handle was taken
    assert nvml.nvmlDeviceGetGpuInstanceRemainingCapacity(h, 9) == 2
    nvml.nvmlDeviceSetMigMode(h, 0)
    assert nvml.nvmlDeviceGetMigMode(h) == [0, 0]


def test_disabling_mig_with_instances_is_in_use() -> None:
    nvml = started(_mig_h100())
    with pytest.raises(pynvml.NVMLError_InUse):
        nvml.nvmlDeviceSetMigMode(nvml.nvmlDeviceGetHandleByIndex(0), 0)


def test_a30_profile_indices_map_to_its_own_profile_ids_and_gi_numbering() -> None:
    nvml = started(load_fixture("a30"))
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    nvml.nvmlDeviceSetMigMode(h, 1)
    one = nvml.nvmlDeviceGetGpuInstanceProfileInfo(h, pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE)
    assert (one.id, one.name, one.instanceCount, one.memorySizeMB) == (14, "MIG 1g.6gb", 4, 5949)
    full = nvml.nvmlDeviceGetGpuInstanceProfileInfo(h, pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE)
    assert (full.id, full.name) == (0, "MIG 4g.24gb")
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetGpuInstanceProfileInfo(h, pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE)
    # corpus nvml/mig_lgi_A30_4x1g.txt: four 1g.6gb at slots 0-3 are GIs 3, 4, 5, 6
    made = [nvml.nvmlGpuInstanceGetInfo(nvml.nvmlDeviceCreateGpuInstance(h, 14)) for _ in range(4)]
    assert sorted((i.placement.start, i.id) for i in made) == [(0, 3), (1, 4), (2, 5), (3, 6)]
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        nvml.nvmlDeviceCreateGpuInstance(h, 14)


def test_unknown_error_codes_have_nvml_s_text_without_recursing() -> None:
    nvml = started(load_fixture("pcie-l40s"))
    assert nvml.nvmlErrorString(pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES) == "Insufficient Resources"
    assert nvml.nvmlErrorString(pynvml.NVML_ERROR_IN_USE) == "In use by another client"


def test_a_shim_change_shows_in_the_next_call_without_a_new_init(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100"), path)
    nvml = MockNvml(path=path)
    nvml.nvmlInit()
    h = nvml.nvmlDeviceGetHandleByIndex(2)
    from assessor.sim.tools import Session, run_tool

    assert run_tool(["nvidia-smi", "-i", "2", "-pm", "0"], Session(path=path, euid=0)).exit_code == 0
    assert nvml.nvmlDeviceGetPersistenceMode(h) == 0


def test_the_conformance_table_in_the_docs_is_up_to_date() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "nvml_conformance.py"
    proc = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_every_simulated_function_has_a_row_in_the_conformance_table() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "NVML_MOCK.md").read_text(encoding="utf-8")
    table = doc.split("<!-- conformance:begin", 1)[1].split("<!-- conformance:end", 1)[0]
    rows = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `nvml")}
    assert rows == {name for name in dir(MockNvml) if name.startswith("nvml")}


def test_a_mig_device_reports_its_own_memory_and_bar1_as_nvidia_smi_s_mig_table() -> None:
    state = load_fixture("h100-nvl")
    gpu = state.gpus[0]
    gpu.mig_mode_current = gpu.mig_mode_pending = True
    # corpus nvml/nvidia_smi_mig_devices_H100_NVL.txt: 3g.47gb 47488 MiB / BAR1 65535 MiB, 1g.12gb 11008 / 16383
    gpu.mig_instances = [
        GpuInstanceState(1, 9, "3g.47gb", 4, 4, [ComputeInstanceState(0, 2, "3g.47gb", 0, 3)]),
        GpuInstanceState(13, 19, "1g.12gb", 0, 1, [ComputeInstanceState(0, 0, "1g.12gb", 0, 1)]),
    ]
    nvml = started(state)
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    mib = 1024 * 1024
    big, small = (nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, i) for i in range(2))
    assert abs(nvml.nvmlDeviceGetMemoryInfo(big).total // mib - 47488) <= 8  # -lgip's 46.38 GiB, rounded
    assert nvml.nvmlDeviceGetMemoryInfo(small).total // mib == 11008
    assert nvml.nvmlDeviceGetBAR1MemoryInfo(big).bar1Total // mib == 65535
    assert nvml.nvmlDeviceGetBAR1MemoryInfo(small).bar1Total // mib == 16383
