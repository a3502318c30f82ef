"""A mock of ``pynvml`` (nvidia-ml-py) driven by a simulated node's state.

:class:`MockNvml` is a module-like object: the ``nvml*`` functions the readiness collector and the labs use,
with pynvml's signatures and return shapes, and every other public name of pynvml (``NVML_*`` constants,
``NVMLError*`` exception classes, ``c_nvml*`` ctypes structures) passed through from the real module. Errors
are the real ``pynvml.NVMLError_*`` classes, raised where real NVML raises them:

- ``NVMLError_Uninitialized`` for any call before ``nvmlInit`` (or after the last ``nvmlShutdown``);
- ``nvmlInit``: ``NVMLError_DriverNotLoaded`` when the kernel module is not loaded,
  ``NVMLError_LibRmVersionMismatch`` when the library and kernel module versions differ;
- ``NVMLError_NotSupported``: MIG queries on a GPU without MIG (L40S), retired pages on HBM parts (A100, H100,
  H200 remap rows instead), NVLink queries on a GPU without NVLink, fabric info outside an NVSwitch fabric;
- ``NVMLError_InvalidArgument``: a bad handle or index, an NVLink past the GPU's last link, a MIG device index
  past ``nvmlDeviceGetMaxMigDeviceCount``;
- ``NVMLError_NotFound``: an empty MIG device slot, a GPU instance id that does not exist;
- ``NVMLError_GpuIsLost``: any device query on a GPU that fell off the bus.

Handles are opaque ctypes pointers of pynvml's own handle types (they are never dereferenced), so they fit
into pynvml's structures and arrays exactly like real handles: ``nvmlDeviceGetGpuInstances`` fills a
``(c_nvmlGpuInstance_t * n)()`` array and ``nvmlGpuInstanceGetInfo`` returns a real ``c_nvmlGpuInstanceInfo_t``.

MIG profiles (names, sizes, engines, placements) come from :mod:`assessor.sim.mig`, the same tables the
simulated ``nvidia-smi mig`` uses, so both faces of the simulator agree.

Strings come back as ``str`` (pynvml's ``convertStrBytes`` decodes them). Structures are pynvml's own, filled
in, so their fields read as they do from real pynvml: in the installed nvidia-ml-py, ``_PrintableStructure``
decodes char arrays, so ``nvmlPciInfo_t.busId`` reads as ``str``. A function of pynvml that the mock does not
simulate raises ``NVMLError_FunctionNotFound`` (what pynvml raises when the library lacks a symbol).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pynvml

from assessor.sim import mig
from assessor.sim.state import THROTTLE_REASON_BITS, GpuInstanceState, GpuState, NodeState, load_state

# NVML's GPU instance profile *indices* (what nvmlDeviceGetGpuInstanceProfileInfo takes) -> profile *ids*
# (the ID column of nvidia-smi mig -lgip). The profiles themselves come from assessor.sim.mig.
_GI_PROFILE_IDS: dict[int, int] = {
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: 19,
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: 20,  # 1g+me
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: 15,  # 1g with twice the memory
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: 14,
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: 9,
    pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: 5,
    pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: 0,
}
_MAX_MIG_DEVICES = 7

_ARCH = {
    "Ampere": pynvml.NVML_DEVICE_ARCH_AMPERE,
    "Ada Lovelace": pynvml.NVML_DEVICE_ARCH_ADA,
    "Hopper": pynvml.NVML_DEVICE_ARCH_HOPPER,
    "Blackwell": pynvml.NVML_DEVICE_ARCH_BLACKWELL,
}
_COMPUTE_MODE = {
    "Default": pynvml.NVML_COMPUTEMODE_DEFAULT,
    "Prohibited": pynvml.NVML_COMPUTEMODE_PROHIBITED,
    "Exclusive_Process": pynvml.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS,
}
_CLOCK_KEYS = {
    pynvml.NVML_CLOCK_GRAPHICS: "graphics",
    pynvml.NVML_CLOCK_SM: "sm",
    pynvml.NVML_CLOCK_MEM: "memory",
    pynvml.NVML_CLOCK_VIDEO: "video",
}
_NVLINK_COUNTERS = {
    pynvml.NVML_NVLINK_ERROR_DL_REPLAY: "replay",
    pynvml.NVML_NVLINK_ERROR_DL_RECOVERY: "recovery",
    pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT: "crc_flit",
    pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA: "crc_data",
}
_NVLINK_VERSION = {
    3: pynvml.NVML_NVLINK_VERSION_3_0,
    4: pynvml.NVML_NVLINK_VERSION_4_0,
    5: pynvml.NVML_NVLINK_VERSION_5_0,
}
_FABRIC_STATE = {
    "Not Started": pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED,
    "In Progress": pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS,
    "Completed": pynvml.NVML_GPU_FABRIC_STATE_COMPLETED,
}


def _raise(code: int) -> NoReturn:
    # NVMLError(code) maps the code to its real subclass (NVMLError_NotSupported, ...).
    raise pynvml.NVMLError(code)


def _out(ref: Any) -> Any:
    """The ctypes object behind an output argument: ctypes.pointer(x), ctypes.byref(x), or x itself."""
    if hasattr(ref, "contents"):
        return ref.contents
    return getattr(ref, "_obj", ref)  # byref() gives a CArgObject whose _obj is the target


class MockNvml:
    """A pynvml stand-in over one :class:`NodeState` (or a state file, re-read at every ``nvmlInit``)."""

    def __init__(self, state: NodeState | None = None, *, path: str | os.PathLike[str] | None = None) -> None:
        if state is None and path is None:
            raise ValueError("MockNvml needs a NodeState or a state file path")
        self.state = state
        self.path = Path(path) if path is not None else None
        self._refcount = 0
        self._handles: dict[int, tuple[Any, ...]] = {}
        self._by_key: dict[tuple[Any, ...], Any] = {}

    # ---- pass-through of pynvml's constants, exception classes and structures -------------------------
    def __getattr__(self, name: str) -> Any:
        real = getattr(pynvml, name)  # AttributeError for a name pynvml lacks, as the module would
        if name.startswith("nvml") and callable(real) and not isinstance(real, type):

            def not_simulated(*_args: Any, **_kwargs: Any) -> Any:
                _raise(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)

            not_simulated.__name__ = name
            return not_simulated
        return real

    # ---- handles ---------------------------------------------------------------------------------------
    def _handle(self, ctype: Any, key: tuple[Any, ...]) -> Any:
        if key not in self._by_key:
            address = 0x7F0000001000 + 0x40 * len(self._handles)  # distinct, never dereferenced
            self._handles[address] = key
            self._by_key[key] = address
        return ctypes.cast(ctypes.c_void_p(self._by_key[key]), ctype)

    def _lookup(self, handle: Any) -> tuple[Any, ...]:
        """The key behind a handle; InvalidArgument for anything that is not one of ours."""
        try:
            address = ctypes.cast(handle, ctypes.c_void_p).value
        except (ctypes.ArgumentError, TypeError):
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        key = self._handles.get(address or 0)
        if key is None:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return key

    def _key(self, handle: Any, kind: str) -> tuple[Any, ...]:
        key = self._lookup(handle)
        if key[0] != kind:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return key

    def _st(self) -> NodeState:
        if self._refcount == 0:
            _raise(pynvml.NVML_ERROR_UNINITIALIZED)
        assert self.state is not None
        return self.state

    def _gpu(self, handle: Any) -> GpuState:
        """The physical GPU of a device handle (MIG device handles answer for their parent where NVML does)."""
        state = self._st()
        key = self._lookup(handle)
        if key[0] not in ("device", "mig"):
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        gpu = state.gpu(key[1])
        if gpu.lost:
            _raise(pynvml.NVML_ERROR_GPU_IS_LOST)
        return gpu

    def _physical(self, handle: Any) -> GpuState:
        """A physical-GPU-only query: a MIG device handle is an invalid argument."""
        gpu = self._gpu(handle)
        self._key(handle, "device")
        return gpu

    def _gi(self, handle: Any) -> tuple[GpuState, GpuInstanceState]:
        self._st()
        _, index, gi_id = self._key(handle, "gi")
        gpu = self._gpu(self._handle(pynvml.c_nvmlDevice_t, ("device", index)))
        for gi in gpu.mig_instances:
            if gi.gi_id == gi_id:
                return gpu, gi
        _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)  # destroyed since the handle was taken

    def _mig_gpu(self, handle: Any) -> GpuState:
        gpu = self._physical(handle)
        if not gpu.mig_supported:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return gpu

    # ---- init / system ---------------------------------------------------------------------------------
    def nvmlInitWithFlags(self, flags: int) -> None:
        if self.path is not None:
            self.state = load_state(self.path)
        assert self.state is not None
        drv = self.state.driver
        if not drv.loaded:
            _raise(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
        if drv.version != drv.kernel_module_version:
            _raise(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)
        self._refcount += 1

    def nvmlInit(self) -> None:
        self.nvmlInitWithFlags(0)

    def nvmlShutdown(self) -> None:
        self._st()
        self._refcount -= 1

    def nvmlErrorString(self, result: int) -> str:
        return str(pynvml.NVMLError(result))

    def nvmlSystemGetDriverVersion(self) -> str:
        return self._st().driver.version

    def nvmlSystemGetNVMLVersion(self) -> str:
        major = self._st().driver.cuda_version.split(".")[0]
        return f"{major}.{self._st().driver.version}"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        major, _, minor = self._st().driver.cuda_version.partition(".")
        return int(major) * 1000 + int(minor or 0) * 10  # 12.2 -> 12020, as cudaDriverGetVersion

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self.nvmlSystemGetCudaDriverVersion()

    # ---- device enumeration ----------------------------------------------------------------------------
    def nvmlDeviceGetCount(self) -> int:
        return len(self._st().gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        state = self._st()
        if not 0 <= index < len(state.gpus):
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self._handle(pynvml.c_nvmlDevice_t, ("device", state.gpus[index].index))

    def _find(self, match: Callable[[GpuState], bool]) -> Any:
        for gpu in self._st().gpus:
            if match(gpu):
                return self._handle(pynvml.c_nvmlDevice_t, ("device", gpu.index))
        _raise(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetHandleByUUID(self, uuid: str | bytes) -> Any:
        text = uuid.decode() if isinstance(uuid, bytes) else uuid
        return self._find(lambda g: g.uuid == text)

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str | bytes) -> Any:
        text = (bus_id.decode() if isinstance(bus_id, bytes) else bus_id).upper()
        return self._find(lambda g: g.bus_id.upper() == text or g.bus_id.upper().endswith(text))

    def nvmlDeviceGetHandleBySerial(self, serial: str | bytes) -> Any:
        text = serial.decode() if isinstance(serial, bytes) else serial
        return self._find(lambda g: g.serial == text)

    def nvmlDeviceGetIndex(self, handle: Any) -> int:
        return self._physical(handle).index

    # ---- identity --------------------------------------------------------------------------------------
    def _mig_instance(self, handle: Any) -> GpuInstanceState | None:
        """The GPU instance of a MIG device handle; None for a physical GPU's handle."""
        key = self._lookup(handle)
        if key[0] != "mig":
            return None
        gpu = self._gpu(handle)
        return next((gi for gi in gpu.mig_instances if gi.gi_id == key[2]), None)

    def nvmlDeviceGetName(self, handle: Any) -> str:
        gpu = self._gpu(handle)
        gi = self._mig_instance(handle)
        return f"{gpu.name} MIG {gi.name}" if gi else gpu.name

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        gpu = self._gpu(handle)
        key = self._lookup(handle)
        if key[0] == "mig":
            # MIG devices have their own UUIDs (MIG-<uuid>), stable for a given GPU, GI and CI.
            h = hashlib.sha256(f"{gpu.uuid}:{key[2]}:{key[3]}".encode()).hexdigest()
            return f"MIG-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        return gpu.uuid

    def nvmlDeviceGetSerial(self, handle: Any) -> str:
        return self._gpu(handle).serial

    def nvmlDeviceGetVbiosVersion(self, handle: Any) -> str:
        return self._physical(handle).vbios

    def nvmlDeviceGetBoardPartNumber(self, handle: Any) -> str:
        part = self._physical(handle).board_part_number
        if part is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return part

    def nvmlDeviceGetMinorNumber(self, handle: Any) -> int:
        minor = self._physical(handle).minor_number
        return minor if minor is not None else self._physical(handle).index

    def nvmlDeviceGetArchitecture(self, handle: Any) -> int:
        return int(_ARCH.get(self._gpu(handle).architecture, pynvml.NVML_DEVICE_ARCH_UNKNOWN))

    def nvmlDeviceGetPciInfo_v3(self, handle: Any) -> Any:
        gpu = self._physical(handle)
        domain, bus, devfn = gpu.bus_id.split(":")
        info = pynvml.nvmlPciInfo_t()
        info.busId = gpu.bus_id.encode()
        info.busIdLegacy = gpu.bus_id[4:].encode()  # the old 13-character form: 0000:18:00.0
        info.domain = int(domain, 16)
        info.bus = int(bus, 16)
        info.device = int(devfn.split(".")[0], 16)
        info.pciDeviceId = gpu.pci_device_id
        info.pciSubSystemId = gpu.pci_subsystem_id
        return info

    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any:
        return self.nvmlDeviceGetPciInfo_v3(handle)

    # ---- memory, modes ---------------------------------------------------------------------------------
    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: int | None = None) -> Any:
        gpu = self._gpu(handle)
        mib = 1024 * 1024
        total = gpu.memory_total_mib * mib
        used = gpu.memory_used_mib * mib
        if version:
            info = pynvml.c_nvmlMemory_v2_t()
            info.version = version
            info.reserved = gpu.memory_reserved_mib * mib
            info.total = total + info.reserved  # v2 counts the reserved memory in total, like the driver
            info.used = used
            info.free = total - used
            return info
        info = pynvml.c_nvmlMemory_t()
        info.total = total
        info.used = used
        info.free = total - used
        return info

    def nvmlDeviceGetPersistenceMode(self, handle: Any) -> int:
        return pynvml.NVML_FEATURE_ENABLED if self._physical(handle).persistence_mode else pynvml.NVML_FEATURE_DISABLED

    def nvmlDeviceGetComputeMode(self, handle: Any) -> int:
        return _COMPUTE_MODE.get(self._gpu(handle).compute_mode, pynvml.NVML_COMPUTEMODE_DEFAULT)

    def nvmlDeviceGetPerformanceState(self, handle: Any) -> int:
        return int(self._gpu(handle).performance_state.lstrip("P") or 0)

    def nvmlDeviceGetPowerState(self, handle: Any) -> int:
        return self.nvmlDeviceGetPerformanceState(handle)

    # ---- ECC, row remapping, retired pages -------------------------------------------------------------
    def _ecc_gpu(self, handle: Any) -> GpuState:
        gpu = self._gpu(handle)
        if gpu.ecc_mode_current is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return gpu

    def nvmlDeviceGetEccMode(self, handle: Any) -> list[int]:
        gpu = self._ecc_gpu(handle)
        return [int(bool(gpu.ecc_mode_current)), int(bool(gpu.ecc_mode_pending))]

    def nvmlDeviceGetCurrentEccMode(self, handle: Any) -> int:
        return self.nvmlDeviceGetEccMode(handle)[0]

    def nvmlDeviceGetPendingEccMode(self, handle: Any) -> int:
        return self.nvmlDeviceGetEccMode(handle)[1]

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, errorType: int, counterType: int) -> int:
        gpu = self._ecc_gpu(handle)
        if not gpu.ecc_mode_current:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)  # counters are not kept while ECC is off
        kinds = {
            pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED: "corrected",
            pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED: "uncorrected",
        }
        scopes = {pynvml.NVML_VOLATILE_ECC: "volatile", pynvml.NVML_AGGREGATE_ECC: "aggregate"}
        if errorType not in kinds or counterType not in scopes:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return int(getattr(gpu.ecc, f"{scopes[counterType]}_{kinds[errorType]}"))

    def nvmlDeviceGetRemappedRows(self, handle: Any) -> tuple[int, int, int, int]:
        rows = self._physical(handle).remapped_rows
        if rows is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return (rows.correctable, rows.uncorrectable, int(rows.pending), int(rows.failure))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: Any) -> int:
        pages = self._physical(handle).retired_pages
        if pages is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)  # HBM parts remap rows instead of retiring pages
        return int(pages.pending)

    # ---- thermal, power, clocks ------------------------------------------------------------------------
    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        gpu = self._physical(handle)
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return gpu.temperature_c

    def nvmlDeviceGetTemperatureV(self, handle: Any, sensor: int, version: int = pynvml.nvmlTemperature_v1) -> int:
        return self.nvmlDeviceGetTemperature(handle, sensor)

    def nvmlDeviceGetTemperatureThreshold(self, handle: Any, threshold: int) -> int:
        gpu = self._physical(handle)
        value = {
            pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: gpu.temperature_shutdown_c,
            pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: gpu.temperature_slowdown_c,
            pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX: gpu.temperature_memory_max_c,
            pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX: gpu.temperature_max_operating_c,
        }.get(threshold)
        if value is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        return round(self._physical(handle).power_draw_w * 1000)  # milliwatts

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        return round(self._physical(handle).power_limit_w * 1000)

    def nvmlDeviceGetPowerManagementLimit(self, handle: Any) -> int:
        return round(self._physical(handle).power_limit_w * 1000)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any) -> int:
        gpu = self._physical(handle)
        return round((gpu.power_default_limit_w or gpu.power_limit_w) * 1000)

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Any) -> list[int]:
        gpu = self._physical(handle)
        if gpu.power_min_limit_w is None or gpu.power_max_limit_w is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return [round(gpu.power_min_limit_w * 1000), round(gpu.power_max_limit_w * 1000)]

    def _clock(self, table: dict[str, int], clock_type: int) -> int:
        key = _CLOCK_KEYS.get(clock_type)
        if key is None:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        if key not in table:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return table[key]

    def nvmlDeviceGetClockInfo(self, handle: Any, type: int) -> int:
        return self._clock(self._physical(handle).clocks_mhz, type)

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, type: int) -> int:
        return self._clock(self._physical(handle).max_clocks_mhz, type)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        mask = 0
        for reason in self._physical(handle).throttle_reasons:
            mask |= THROTTLE_REASON_BITS.get(reason, 0)
        return mask

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: Any) -> int:
        return self.nvmlDeviceGetCurrentClocksEventReasons(handle)

    def nvmlDeviceGetSupportedClocksEventReasons(self, handle: Any) -> int:
        self._physical(handle)
        return sum(THROTTLE_REASON_BITS.values())

    def nvmlDeviceGetSupportedClocksThrottleReasons(self, handle: Any) -> int:
        return self.nvmlDeviceGetSupportedClocksEventReasons(handle)

    # ---- PCIe ------------------------------------------------------------------------------------------
    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> int:
        return self._physical(handle).pcie_gen_current

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> int:
        return self._physical(handle).pcie_gen_max

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: Any) -> int:
        return self._physical(handle).pcie_gen_max

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> int:
        return self._physical(handle).pcie_width_current

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:
        return self._physical(handle).pcie_width_max

    # ---- NVLink and fabric -----------------------------------------------------------------------------
    def _link(self, handle: Any, link: int) -> Any:
        gpu = self._physical(handle)
        if not gpu.nvlinks:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if not 0 <= link < len(gpu.nvlinks):
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)  # past the last link, as real NVML answers
        return gpu.nvlinks[link]

    def nvmlDeviceGetNvLinkState(self, device: Any, link: int) -> int:
        return pynvml.NVML_FEATURE_ENABLED if self._link(device, link).active else pynvml.NVML_FEATURE_DISABLED

    def nvmlDeviceGetNvLinkVersion(self, device: Any, link: int) -> int:
        return _NVLINK_VERSION.get(self._link(device, link).version, pynvml.NVML_NVLINK_VERSION_INVALID)

    def nvmlDeviceGetNvLinkErrorCounter(self, device: Any, link: int, counter: int) -> int:
        nvlink = self._link(device, link)
        name = _NVLINK_COUNTERS.get(counter)
        if name is None:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return int(nvlink.errors.get(name, 0))

    def _fill_fabric(self, device: Any, info: Any) -> int:
        gpu = self._physical(device)
        target = _out(info)
        if gpu.fabric_state is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        target.state = _FABRIC_STATE.get(gpu.fabric_state, pynvml.NVML_GPU_FABRIC_STATE_NOT_SUPPORTED)
        # status is an nvmlReturn_t: NVML_SUCCESS, or an error code when training the fabric failed
        target.status = pynvml.NVML_SUCCESS if gpu.fabric_status in (None, "Success") else pynvml.NVML_ERROR_UNKNOWN
        target.cliqueId = gpu.fabric_clique_id or 0
        return int(pynvml.NVML_SUCCESS)

    def nvmlDeviceGetGpuFabricInfo(self, device: Any, gpuFabricInfo: Any) -> int:
        return self._fill_fabric(device, gpuFabricInfo)

    def nvmlDeviceGetGpuFabricInfoV(self, device: Any, gpuFabricInfo: Any) -> int:
        return self._fill_fabric(device, gpuFabricInfo)

    # ---- MIG -------------------------------------------------------------------------------------------
    def nvmlDeviceGetMigMode(self, device: Any) -> list[int]:
        gpu = self._mig_gpu(device)
        return [int(gpu.mig_mode_current), int(gpu.mig_mode_pending)]

    def nvmlDeviceGetMaxMigDeviceCount(self, device: Any) -> int:
        self._mig_gpu(device)
        return _MAX_MIG_DEVICES

    def _mig_devices(self, gpu: GpuState) -> list[tuple[int, int]]:
        """(gi_id, ci_id) of every MIG device (one per compute instance), in NVML's order."""
        return [
            (gi.gi_id, ci.ci_id)
            for gi in sorted(gpu.mig_instances, key=lambda g: g.gi_id)
            for ci in sorted(gi.compute_instances, key=lambda c: c.ci_id)
        ]

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: Any, index: int) -> Any:
        gpu = self._mig_gpu(device)
        if not 0 <= index < _MAX_MIG_DEVICES:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        devices = self._mig_devices(gpu) if gpu.mig_mode_current else []
        if index >= len(devices):
            _raise(pynvml.NVML_ERROR_NOT_FOUND)  # an empty slot
        gi_id, ci_id = devices[index]
        return self._handle(pynvml.c_nvmlDevice_t, ("mig", gpu.index, gi_id, ci_id))

    def nvmlDeviceIsMigDeviceHandle(self, device: Any) -> int:
        self._gpu(device)
        return int(self._lookup(device)[0] == "mig")

    def nvmlDeviceGetGpuInstanceId(self, device: Any) -> int:
        self._gpu(device)
        return int(self._key(device, "mig")[2])

    def nvmlDeviceGetComputeInstanceId(self, device: Any) -> int:
        self._gpu(device)
        return int(self._key(device, "mig")[3])

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, migDevice: Any) -> Any:
        gpu = self._gpu(migDevice)
        self._key(migDevice, "mig")
        return self._handle(pynvml.c_nvmlDevice_t, ("device", gpu.index))

    def _gi_profiles(self, gpu: GpuState) -> dict[int, mig.GiProfile]:
        """This GPU model's GI profiles by id; NotSupported for a model without a MIG table."""
        try:
            return {p.id: p for p in mig.profiles_for(gpu.name)}
        except mig.MigUnsupported:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetGpuInstanceProfileInfo(self, device: Any, profile: int, version: int = 2) -> Any:
        gpu = self._mig_gpu(device)
        if not 0 <= profile < pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        gi = self._gi_profiles(gpu).get(_GI_PROFILE_IDS.get(profile, -1))
        if gi is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)  # a profile this GPU does not offer
        info = pynvml.c_nvmlGpuInstanceProfileInfo_v2_t() if version == 2 else pynvml.c_nvmlGpuInstanceProfileInfo_t()
        info.id = gi.id
        info.isP2pSupported = int(gi.p2p)
        info.sliceCount = gi.slices
        info.instanceCount = gi.max_instances
        info.multiprocessorCount = gi.sm
        info.copyEngineCount = gi.ce
        info.decoderCount = gi.dec
        info.encoderCount = gi.enc
        info.jpegCount = gi.jpeg
        info.ofaCount = gi.ofa
        info.memorySizeMB = round(gi.memory_gib * 1024)
        if version == 2:
            info.name = gi.full_name.encode()
        return info

    def nvmlDeviceGetGpuInstanceProfileInfoV(self, device: Any, profile: int, version: int = 2) -> Any:
        return self.nvmlDeviceGetGpuInstanceProfileInfo(device, profile, version)

    def nvmlDeviceGetGpuInstances(self, device: Any, profileId: int, gpuInstancesRef: Any, countRef: Any) -> int:
        gpu = self._mig_gpu(device)
        if not gpu.mig_mode_current:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if profileId not in self._gi_profiles(gpu):
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        matches = [gi for gi in sorted(gpu.mig_instances, key=lambda g: g.gi_id) if gi.profile_id == profileId]
        array = _out(gpuInstancesRef)
        if len(matches) > len(array):
            _raise(pynvml.NVML_ERROR_INSUFFICIENT_SIZE)
        for i, gi in enumerate(matches):
            array[i] = self._handle(pynvml.c_nvmlGpuInstance_t, ("gi", gpu.index, gi.gi_id))
        _out(countRef).value = len(matches)
        return int(pynvml.NVML_SUCCESS)

    def nvmlDeviceGetGpuInstanceById(self, device: Any, gpuInstanceId: int) -> Any:
        gpu = self._mig_gpu(device)
        if not gpu.mig_mode_current:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if not any(gi.gi_id == gpuInstanceId for gi in gpu.mig_instances):
            _raise(pynvml.NVML_ERROR_NOT_FOUND)
        return self._handle(pynvml.c_nvmlGpuInstance_t, ("gi", gpu.index, gpuInstanceId))

    def nvmlGpuInstanceGetInfo(self, gpuInstance: Any) -> Any:
        gpu, gi = self._gi(gpuInstance)
        info = pynvml.c_nvmlGpuInstanceInfo_t()
        info.device = self._handle(pynvml.c_nvmlDevice_t, ("device", gpu.index))
        info.id = gi.gi_id
        info.profileId = gi.profile_id
        info.placement.start = gi.start
        info.placement.size = gi.size
        return info

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(
        self, device: Any, profile: int, engProfile: int, version: int = 2
    ) -> Any:
        gpu, gi = self._gi(device)  # pynvml names the GPU instance argument "device"
        if not 0 <= profile < pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        try:
            # mig.py's CI profile ids are NVML's CI profile indices (0: 1 slice ... 4: 7 slices)
            ci = next((c for c in mig.ci_profiles_for(gpu.name, gi.profile_id) if c.id == profile), None)
        except (mig.MigUnsupported, KeyError):
            ci = None
        if ci is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)  # wider than this GPU instance, or no such profile
        info = (
            pynvml.c_nvmlComputeInstanceProfileInfo_v2_t()
            if version == 2
            else pynvml.c_nvmlComputeInstanceProfileInfo_t()
        )
        info.id = ci.id
        info.sliceCount = ci.slices
        info.instanceCount = ci.max_instances
        info.multiprocessorCount = ci.sm
        if version == 2:
            info.name = ci.full_name.encode()
        return info

    def nvmlGpuInstanceGetComputeInstances(
        self, gpuInstance: Any, profileId: int, computeInstancesRef: Any, countRef: Any
    ) -> int:
        gpu, gi = self._gi(gpuInstance)
        matches = [ci for ci in sorted(gi.compute_instances, key=lambda c: c.ci_id) if ci.profile_id == profileId]
        array = _out(computeInstancesRef)
        if len(matches) > len(array):
            _raise(pynvml.NVML_ERROR_INSUFFICIENT_SIZE)
        for i, ci in enumerate(matches):
            array[i] = self._handle(pynvml.c_nvmlComputeInstance_t, ("ci", gpu.index, gi.gi_id, ci.ci_id))
        _out(countRef).value = len(matches)
        return int(pynvml.NVML_SUCCESS)

    def nvmlGpuInstanceGetComputeInstanceById(self, gpuInstance: Any, computeInstanceId: int) -> Any:
        gpu, gi = self._gi(gpuInstance)
        if not any(ci.ci_id == computeInstanceId for ci in gi.compute_instances):
            _raise(pynvml.NVML_ERROR_NOT_FOUND)
        return self._handle(pynvml.c_nvmlComputeInstance_t, ("ci", gpu.index, gi.gi_id, computeInstanceId))

    def nvmlComputeInstanceGetInfo_v2(self, computeInstance: Any) -> Any:
        self._st()
        _, index, gi_id, ci_id = self._key(computeInstance, "ci")
        gpu, gi = self._gi(self._handle(pynvml.c_nvmlGpuInstance_t, ("gi", index, gi_id)))
        for ci in gi.compute_instances:
            if ci.ci_id == ci_id:
                info = pynvml.c_nvmlComputeInstanceInfo_t()
                info.device = self._handle(pynvml.c_nvmlDevice_t, ("device", gpu.index))
                info.gpuInstance = self._handle(pynvml.c_nvmlGpuInstance_t, ("gi", gpu.index, gi.gi_id))
                info.id = ci.ci_id
                info.profileId = ci.profile_id
                info.placement.start = ci.start
                info.placement.size = ci.size
                return info
        _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlComputeInstanceGetInfo(self, computeInstance: Any) -> Any:
        return self.nvmlComputeInstanceGetInfo_v2(computeInstance)

    # ---- processes -------------------------------------------------------------------------------------
    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]:
        gpu = self._physical(handle)
        procs = []
        for p in gpu.processes:
            if p.type == "C":
                procs.append(
                    pynvml.nvmlFriendlyObject(
                        {
                            "pid": p.pid,
                            "usedGpuMemory": p.used_memory_mib * 1024 * 1024,
                            # 0xFFFFFFFF: not on a MIG device (NVML's "invalid" instance id)
                            "gpuInstanceId": 0xFFFFFFFF if p.gi_id is None else p.gi_id,
                            "computeInstanceId": 0xFFFFFFFF if p.ci_id is None else p.ci_id,
                        }
                    )
                )
        return procs
