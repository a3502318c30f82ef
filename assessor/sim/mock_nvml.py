"""A mock of ``pynvml`` (nvidia-ml-py) driven by a simulated node's state.

:class:`MockNvml` is a module-like object: the ``nvml*`` functions that monitoring, CI and gpulab's own
collector call, with pynvml's signatures and return shapes, and every other public name of pynvml (``NVML_*``
constants, ``NVMLError*`` exception classes, ``c_nvml*`` ctypes structures) passed through from the real module.
:mod:`assessor.sim.pynvml_hook` puts these functions into the real ``pynvml`` module, so unchanged programs use
them; ``docs/NVML_MOCK.md`` has the table of every function on every fixture.

Over a state file (``MockNvml(path=...)``) the node is live: every call sees the file as it is now (a simulated
``nvidia-smi -mig 1`` or ``-r`` shows up in the next call), and the setters (MIG mode, GPU and compute
instances, persistence, ECC mode and counters) write it under the simulator's lock, so the simulated tools see
them. Over an in-memory :class:`NodeState` the setters change that object.

Errors are the real ``pynvml.NVMLError_*`` classes, raised where real NVML raises them:

- ``NVMLError_Uninitialized`` for any call before ``nvmlInit`` (or after the last ``nvmlShutdown``);
- ``nvmlInit``: ``NVMLError_DriverNotLoaded`` when the kernel module is not loaded,
  ``NVMLError_LibRmVersionMismatch`` when the library and kernel module versions differ;
- ``NVMLError_NotSupported``: MIG calls on a GPU without MIG (L40S) or, for instance changes, with MIG
  disabled; retired pages on HBM parts (A100, H100, H200 remap rows instead); row remapping in MIG mode; NVLink
  queries on a GPU without NVLink; fabric info outside an NVSwitch fabric; fans (passively cooled boards);
- ``NVMLError_NoPermission``: a setter called by a user other than root (``euid``);
- ``NVMLError_InvalidArgument``: a bad handle or index, an NVLink past the GPU's last link, a MIG device index
  past ``nvmlDeviceGetMaxMigDeviceCount``, a placement that is not one of the profile's;
- ``NVMLError_InsufficientResources``: a GPU or compute instance that does not fit;
- ``NVMLError_InUse``: destroying a GPU instance that holds compute instances, disabling MIG with instances;
- ``NVMLError_NotFound``: an empty MIG device slot, a GPU instance id that does not exist;
- ``NVMLError_GpuIsLost``: any device query on a GPU that fell off the bus.

Handles are opaque ctypes pointers of pynvml's own handle types (they are never dereferenced), so they fit
into pynvml's structures and arrays exactly like real handles: ``nvmlDeviceGetGpuInstances`` fills a
``(c_nvmlGpuInstance_t * n)()`` array and ``nvmlGpuInstanceGetInfo`` returns a real ``c_nvmlGpuInstanceInfo_t``.

MIG profiles (names, sizes, engines, placements, GI numbering) come from :mod:`assessor.sim.mig`, the same
tables the simulated ``nvidia-smi mig`` uses, so both faces of the simulator agree.

Strings come back as ``str`` (pynvml's ``convertStrBytes`` decodes them). Structures are pynvml's own, filled
in, so their fields read as they do from real pynvml. A function of pynvml that the mock does not simulate
raises ``NVMLError_FunctionNotFound`` (what pynvml raises when the library lacks a symbol).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pynvml

from assessor.sim import gpu_memory, mig
from assessor.sim.state import (
    THROTTLE_REASON_BITS,
    ComputeInstanceState,
    GpuInstanceState,
    GpuState,
    NodeState,
    gpu_utilization,
    load_state,
    updating,
)

# NVML's GPU instance profile *indices* by shape: (compute slices, variant). The profile a model offers for a
# shape gives the id (A100: 1_SLICE -> 19; A30: 1_SLICE -> 14), so models with their own ids need no table.
_GI_PROFILE_SHAPES: dict[int, tuple[int, str]] = {
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: (1, "plain"),
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: (2, "plain"),
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: (3, "plain"),
    pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: (4, "plain"),
    pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: (7, "plain"),
    pynvml.NVML_GPU_INSTANCE_PROFILE_8_SLICE: (8, "plain"),
    pynvml.NVML_GPU_INSTANCE_PROFILE_6_SLICE: (6, "plain"),
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: (1, "me"),  # 1g+me: the media extension
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1: (2, "me"),  # 2g+me (A30)
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: (1, "double"),  # 1g with twice the memory
}

# Constants newer than the oldest supported nvidia-ml-py (12.535) are looked up with their header values.
_ARCH = {
    "Ampere": pynvml.NVML_DEVICE_ARCH_AMPERE,
    "Ada Lovelace": pynvml.NVML_DEVICE_ARCH_ADA,
    "Hopper": pynvml.NVML_DEVICE_ARCH_HOPPER,
    "Blackwell": getattr(pynvml, "NVML_DEVICE_ARCH_BLACKWELL", 10),
}
# CUDA compute capability by architecture; Ampere and Ada parts other than GA100 (A100, A30) are 8.6 / 8.9.
_COMPUTE_CAPABILITY = {"Ampere": (8, 6), "Ada Lovelace": (8, 9), "Hopper": (9, 0), "Blackwell": (10, 0)}
_GA100 = ("A100", "A30")
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
    3: getattr(pynvml, "NVML_NVLINK_VERSION_3_0", 4),
    4: getattr(pynvml, "NVML_NVLINK_VERSION_4_0", 6),
    5: getattr(pynvml, "NVML_NVLINK_VERSION_5_0", 7),
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


# NVML return codes of the MIG engine's refusals (the text nvidia-smi prints after a colon).
_MIG_ERRORS = {
    mig.INSUFFICIENT_RESOURCES: pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES,
    mig.INVALID_ARGUMENT: pynvml.NVML_ERROR_INVALID_ARGUMENT,
    mig.IN_USE: pynvml.NVML_ERROR_IN_USE,
    mig.NOT_FOUND: pynvml.NVML_ERROR_NOT_FOUND,
}
# nvmlErrorString's texts for the codes pynvml has no text of its own for (NVML's header, nvidia-smi output).
_ERROR_STRINGS = {
    pynvml.NVML_SUCCESS: "Success",
    pynvml.NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    pynvml.NVML_ERROR_CORRUPTED_INFOROM: "Corrupted infoROM",
    pynvml.NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    pynvml.NVML_ERROR_RESET_REQUIRED: "GPU requires restart",
    pynvml.NVML_ERROR_OPERATING_SYSTEM: "The operating system has blocked the request.",
    pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH: "RM has detected an NVML/RM version mismatch.",
    pynvml.NVML_ERROR_IN_USE: "In use by another client",
    pynvml.NVML_ERROR_MEMORY: "Insufficient Memory",
    pynvml.NVML_ERROR_NO_DATA: "No data",
    pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES: "Insufficient Resources",
    pynvml.NVML_ERROR_UNKNOWN: "Unknown Error",
}
# Architectures whose MIG mode change needs no GPU reset (MIG User Guide, "GPU Reset on Hopper+ GPUs").
_NO_RESET_FOR_MIG = ("Hopper", "Blackwell")


def _placed_one(gi: GpuInstanceState) -> mig.Placed:
    cis = [mig.ComputeInstance(c.ci_id, c.profile_id, c.name, c.start, c.size) for c in gi.compute_instances]
    return mig.Placed(gi.gi_id, gi.profile_id, gi.name, gi.start, gi.size, cis)


def _placed(gpu: GpuState) -> list[mig.Placed]:
    """A GPU's instances as the MIG engine holds them."""
    return [_placed_one(gi) for gi in gpu.mig_instances]


def _instances(placed: list[mig.Placed]) -> list[GpuInstanceState]:
    """The engine's instances in the node state's shape."""
    return [
        GpuInstanceState(
            p.gi_id,
            p.profile_id,
            p.name,
            p.start,
            p.size,
            [ComputeInstanceState(c.ci_id, c.profile_id, c.name, c.start, c.size) for c in p.compute_instances],
        )
        for p in placed
    ]


def _fill_placements(placementsRef: Any, countRef: Any, starts: tuple[int, ...], size: int) -> int:
    """Write placements into a caller's array (pynvml passes the C arguments through) and their count."""
    count = _out(countRef)
    if placementsRef is None:
        count.value = len(starts)  # the header: a NULL array asks for the count
        return int(pynvml.NVML_SUCCESS)
    array = _out(placementsRef)
    if hasattr(array, "__len__") and len(array) < len(starts):
        count.value = len(starts)
        _raise(pynvml.NVML_ERROR_INSUFFICIENT_SIZE)
    for i, start in enumerate(starts):
        array[i].start = start
        array[i].size = size
    count.value = len(starts)
    return int(pynvml.NVML_SUCCESS)


def _gi_profile_info(gi: mig.GiProfile, version: int) -> Any:
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


class MockNvml:
    """A pynvml stand-in over one :class:`NodeState` (or a state file, re-read at every ``nvmlInit``)."""

    def __init__(
        self, state: NodeState | None = None, *, path: str | os.PathLike[str] | None = None, euid: int = 0
    ) -> None:
        if state is None and path is None:
            raise ValueError("MockNvml needs a NodeState or a state file path")
        self.state = state
        self.path = Path(path) if path is not None else None
        self.euid = euid  # changes (MIG mode, instances, persistence, ECC) need root, as in real NVML
        self._refcount = 0
        self._handles: dict[int, tuple[Any, ...]] = {}
        self._by_key: dict[tuple[Any, ...], Any] = {}
        self._seen: tuple[int, int, int] | None = None  # (inode, mtime_ns, size) of the state file last read

    def point_at(self, path: str | os.PathLike[str]) -> None:
        """Answer for the node in another state file from the next ``nvmlInit`` on (old handles go)."""
        self.path = Path(path)
        self.state = None
        self._seen = None
        self._handles.clear()
        self._by_key.clear()

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

    def _signature(self) -> tuple[int, int, int] | None:
        assert self.path is not None
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _reload(self) -> None:
        """Read the state file again when a simulated tool (or another process) replaced it since."""
        if self.path is None:
            return
        sig = self._signature()
        if sig != self._seen or self.state is None:
            self.state = load_state(self.path)
            self._seen = sig

    def _st(self) -> NodeState:
        if self._refcount == 0:
            _raise(pynvml.NVML_ERROR_UNINITIALIZED)
        self._reload()  # the node is live: nvidia-smi -mig, -r, a fault... show up in the next call
        assert self.state is not None
        return self.state

    @contextlib.contextmanager
    def _changing(self, handle: Any) -> Iterator[GpuState]:
        """The GPU behind ``handle`` to change; with a state file, a locked read-modify-write of the file.

        NoPermission for a non-root caller (every NVML setter needs root). Nothing is written when the body
        raises, so a refused change leaves the node as it was.
        """
        self._physical(handle)  # Uninitialized / InvalidArgument / GpuIsLost before anything else
        if self.euid != 0:
            _raise(pynvml.NVML_ERROR_NO_PERMISSION)
        index = self._lookup(handle)[1]
        if self.path is None:
            assert self.state is not None
            yield self.state.gpu(index)
            return
        with updating(self.path) as fresh:
            yield fresh.gpu(index)
        self.state = fresh
        self._seen = self._signature()

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
            self._seen = self._signature()
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
        # Not str(NVMLError(result)): pynvml's __str__ asks nvmlErrorString for codes it has no text for.
        known = getattr(pynvml.NVMLError, "_errcode_to_string", {})
        return known.get(result) or _ERROR_STRINGS.get(result, "Unknown Error")

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
        """Framebuffer memory as the header defines it, and as ``nvidia-smi -q`` prints it (FB Memory Usage).

        v1 (``nvmlMemory_t``): ``used`` is reserved plus allocated memory. v2 (``nvmlMemory_v2_t``): ``reserved``
        apart and ``used`` the allocated memory only. Both: ``total`` is -q's Total, ``free`` its Free.
        """
        gpu = self._gpu(handle)
        mib = 1024 * 1024
        total = gpu.memory_total_mib * mib
        reserved = gpu.memory_reserved_mib * mib
        allocated = gpu_memory.used_mib(gpu) * mib
        gi = self._mig_instance(handle)
        if gi is not None:  # a MIG device: its GPU instance's memory, as the MIG devices box of nvidia-smi
            profile = self._gi_profiles(gpu).get(gi.profile_id)
            total = gpu_memory.mig_device_total_mib(gpu, profile) * mib if profile else 0
            reserved = 0
            allocated = gpu_memory.mig_device_used_mib(gpu, gi) * mib
        free = max(total - reserved - allocated, 0)
        if version:
            info = pynvml.c_nvmlMemory_v2_t()
            info.version = version
            info.total = total
            info.reserved = reserved
            info.used = allocated
            info.free = free
            return info
        info = pynvml.c_nvmlMemory_t()
        info.total = total
        info.used = reserved + allocated
        info.free = free
        return info

    def nvmlDeviceGetBAR1MemoryInfo(self, handle: Any) -> Any:
        """BAR1 aperture: the power of two at or above the framebuffer (a 80 GB H100: 131072 MiB), 1 MiB used."""
        gpu = self._gpu(handle)
        mib = 1024 * 1024
        total_mib = 1 << max(gpu.memory_total_mib - 1, 1).bit_length()
        gi = self._mig_instance(handle)
        if gi is not None:  # split by memory slots: 16383 MiB for one slot (corpus H100 NVL MIG devices table)
            total_mib = gi.size * 16384 - 1
        info = pynvml.c_nvmlBAR1Memory_t()
        info.bar1Total = total_mib * mib
        info.bar1Used = mib
        info.bar1Free = (total_mib - 1) * mib
        return info

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any:
        """0 % idle, busy while a job runs (nvidia-smi's Utilization); NotSupported with MIG on (N/A there)."""
        gpu = self._physical(handle)
        if gpu.mig_mode_current:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        util = pynvml.c_nvmlUtilization_t()
        util.gpu, util.memory = gpu_utilization(gpu)
        return util

    def nvmlDeviceGetFanSpeed(self, handle: Any) -> int:
        self._physical(handle)
        _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)  # passively cooled data-centre boards: Fan Speed N/A

    def nvmlDeviceGetFanSpeed_v2(self, handle: Any, fan: int) -> int:
        return self.nvmlDeviceGetFanSpeed(handle)

    def nvmlDeviceGetNumFans(self, device: Any) -> int:
        self._physical(device)
        return 0

    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]:
        gpu = self._gpu(handle)
        if gpu.architecture == "Ampere" and any(part in gpu.name for part in _GA100):
            return (8, 0)
        return _COMPUTE_CAPABILITY.get(gpu.architecture, (0, 0))

    def nvmlDeviceGetBrand(self, handle: Any) -> int:
        self._gpu(handle)
        return int(pynvml.NVML_BRAND_NVIDIA)  # -q: Product Brand : NVIDIA

    def nvmlDeviceGetDisplayMode(self, handle: Any) -> int:
        self._physical(handle)
        return int(pynvml.NVML_FEATURE_ENABLED)  # -q: Display Mode : Enabled (as real H100 boards report)

    def nvmlDeviceGetDisplayActive(self, handle: Any) -> int:
        self._physical(handle)
        return int(pynvml.NVML_FEATURE_DISABLED)

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
        gpu = self._physical(handle)
        rows = gpu.remapped_rows
        if rows is None or gpu.mig_mode_current:
            # The driver does not report row remapping in MIG mode (nvidia-smi -q prints N/A: corpus
            # nvidia_smi_xml/a100-sxm4-*-mig-*.xml).
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

    def nvmlDeviceGetTemperatureV(self, handle: Any, sensor: int, version: int = 0x100000C) -> int:
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
        return _NVLINK_VERSION.get(self._link(device, link).version, getattr(pynvml, "NVML_NVLINK_VERSION_INVALID", 0))

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

    def _max_mig_devices(self, gpu: GpuState) -> int:
        """One MIG device per compute slice at most: 7 on A100/H100/H200, 4 on A30."""
        try:
            return max(p.slices for p in mig.profiles_for(gpu.name))
        except mig.MigUnsupported:
            return 0

    def nvmlDeviceGetMaxMigDeviceCount(self, device: Any) -> int:
        """The header: zero when MIG is not supported or not enabled (never an error on a GPU without MIG)."""
        gpu = self._physical(device)
        if not gpu.mig_supported or not gpu.mig_mode_current:
            return 0
        return self._max_mig_devices(gpu)

    def _mig_devices(self, gpu: GpuState) -> list[tuple[int, int]]:
        """(gi_id, ci_id) of every MIG device (one per compute instance), in NVML's order."""
        return [
            (gi.gi_id, ci.ci_id)
            for gi in sorted(gpu.mig_instances, key=lambda g: g.gi_id)
            for ci in sorted(gi.compute_instances, key=lambda c: c.ci_id)
        ]

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: Any, index: int) -> Any:
        gpu = self._mig_gpu(device)
        if not 0 <= index < self._max_mig_devices(gpu):
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

    def _gi_profile_by_index(self, gpu: GpuState, index: int) -> mig.GiProfile | None:
        """The model's GI profile for an NVML profile index (``NVML_GPU_INSTANCE_PROFILE_*``), None if none."""
        slices, variant = _GI_PROFILE_SHAPES.get(index, (0, ""))
        shaped = [p for p in self._gi_profiles(gpu).values() if p.slices == slices]
        if variant == "me":
            return next((p for p in shaped if p.name.endswith("+me")), None)
        plain = sorted((p for p in shaped if not p.name.endswith("+me")), key=lambda p: p.size)
        if variant == "double":  # the 1g with more memory slots than the smallest 1g (1g.10gb on A100 40GB)
            return plain[1] if len(plain) > 1 else None
        return plain[0] if plain else None

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
        gi = self._gi_profile_by_index(gpu, profile)
        if gi is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)  # a profile this GPU does not offer
        return _gi_profile_info(gi, version)

    def nvmlDeviceGetGpuInstanceProfileInfoById(self, device: Any, profileId: int) -> Any:
        gi = self._gi_profiles(self._mig_gpu(device)).get(profileId)
        if gi is None:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return _gi_profile_info(gi, 2)

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

    # ---- settings: persistence, ECC ------------------------------------------------------------------
    def nvmlDeviceSetPersistenceMode(self, handle: Any, mode: int) -> None:
        with self._changing(handle) as gpu:
            gpu.persistence_mode = bool(mode)

    def nvmlDeviceSetEccMode(self, handle: Any, mode: int) -> None:
        """ECC takes effect at the next reset: only the pending mode changes (nvidia-smi -e)."""
        with self._changing(handle) as gpu:
            if gpu.ecc_mode_current is None:
                _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
            gpu.ecc_mode_pending = bool(mode)

    def nvmlDeviceClearEccErrorCounts(self, handle: Any, counterType: int) -> None:
        with self._changing(handle) as gpu:
            if gpu.ecc_mode_current is None:
                _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
            if counterType == pynvml.NVML_VOLATILE_ECC:
                gpu.ecc.volatile_corrected = gpu.ecc.volatile_uncorrected = 0
            elif counterType == pynvml.NVML_AGGREGATE_ECC:
                gpu.ecc.aggregate_corrected = gpu.ecc.aggregate_uncorrected = 0
            else:
                _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    # ---- retired pages (parts without row remapping) ---------------------------------------------------
    def _retired(self, device: Any, sourceFilter: int) -> list[int]:
        pages = self._physical(device).retired_pages
        if pages is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        counts = {
            pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS: (pages.single_bit, 0x1000),
            pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR: (pages.double_bit, 0x8000),
        }
        if sourceFilter not in counts:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        count, base = counts[sourceFilter]
        return [base + 0x20 * i for i in range(count)]  # addresses are made up; the count is the fact

    def nvmlDeviceGetRetiredPages(self, device: Any, sourceFilter: int) -> list[int]:
        return self._retired(device, sourceFilter)

    def nvmlDeviceGetRetiredPages_v2(self, device: Any, sourceFilter: int) -> list[dict[str, int]]:
        return [{"address": a, "timestamp": 0} for a in self._retired(device, sourceFilter)]

    # ---- PCIe counters ---------------------------------------------------------------------------------
    def nvmlDeviceGetPcieReplayCounter(self, handle: Any) -> int:
        self._physical(handle)
        return 0  # -q: Replays Since Reset 0

    def nvmlDeviceGetPcieThroughput(self, device: Any, counter: int) -> int:
        self._physical(device)
        if counter not in (pynvml.NVML_PCIE_UTIL_TX_BYTES, pynvml.NVML_PCIE_UTIL_RX_BYTES):
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 0  # KB/s: an idle GPU

    # ---- NVLink: capabilities and what a link goes to --------------------------------------------------
    def nvmlDeviceGetNvLinkCapability(self, device: Any, link: int, capability: int) -> int:
        self._link(device, link)
        if not 0 <= capability < pynvml.NVML_NVLINK_CAP_COUNT:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        # P2P, system memory access and atomics over every data-centre NVLink; no SLI bridge.
        return int(capability != pynvml.NVML_NVLINK_CAP_SLI_BRIDGE)

    def _remote(self, device: Any, link: int) -> tuple[int, str]:
        """(NVML device type, PCI bus id) at the far end of a link: an NVSwitch or a peer GPU."""
        nvlink = self._link(device, link)
        state = self._st()
        # the same far end as nvidia-smi nvlink -p / -R
        from assessor.sim.tools.nvidia_smi_nvlink_cmd import remote_end

        bus_id = remote_end(state, self._physical(device), nvlink)[0]
        if nvlink.remote.startswith("GPU") and nvlink.remote[3:].isdigit():
            return pynvml.NVML_NVLINK_DEVICE_TYPE_GPU, bus_id
        return pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH, bus_id

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: Any, link: int) -> int:
        return int(self._remote(handle, link)[0])

    def nvmlDeviceGetNvLinkRemotePciInfo(self, device: Any, link: int) -> Any:
        bus_id = self._remote(device, link)[1]
        if bus_id.count(":") == 2 and len(bus_id.split(":")[0]) == 4:
            bus_id = "0000" + bus_id  # NVML's 8-digit domain
        domain, bus, devfn = bus_id.split(":")
        info = pynvml.nvmlPciInfo_t()
        info.busId = bus_id.upper().encode()
        info.busIdLegacy = bus_id[4:].upper().encode()
        info.domain = int(domain, 16)
        info.bus = int(bus, 16)
        info.device = int(devfn.split(".")[0], 16)
        return info

    def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, device: Any, link: int) -> Any:
        return self.nvmlDeviceGetNvLinkRemotePciInfo(device, link)

    # ---- MIG changes -----------------------------------------------------------------------------------
    def nvmlDeviceSetMigMode(self, device: Any, mode: int) -> int:
        """Set the pending MIG mode; returns the activation status (an nvmlReturn_t), as the header says.

        Hopper and later switch at once. Before Hopper the GPU is reset to apply the mode: with a process or
        agent holding it the status is ``NVML_ERROR_IN_USE`` and in a VM without reset
        ``NVML_ERROR_RESET_REQUIRED``; the mode then stays pending until ``nvidia-smi -r`` or a reboot.
        Disabling while GPU instances exist is ``NVMLError_InUse``.
        """
        from assessor.sim.tools.nvidia_smi import reset_gpu_state

        with self._changing(device) as gpu:
            if not gpu.mig_supported:
                _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
            on = bool(mode)
            if not on and gpu.mig_instances:
                _raise(pynvml.NVML_ERROR_IN_USE)
            gpu.mig_mode_pending = on
            needs_reset = gpu.architecture not in _NO_RESET_FOR_MIG and gpu.mig_mode_current != on
            if needs_reset and gpu.passthrough:
                return int(pynvml.NVML_ERROR_RESET_REQUIRED)
            if needs_reset and (gpu.processes or gpu.mig_reset_blocked_by):
                return int(pynvml.NVML_ERROR_IN_USE)
            if needs_reset:
                reset_gpu_state(gpu)
            gpu.mig_mode_current = on
            return int(pynvml.NVML_SUCCESS)

    def _mig_changing(self, device: Any) -> contextlib.AbstractContextManager[GpuState]:
        gpu = self._mig_gpu(device)
        if not gpu.mig_mode_current:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)  # the header: MIG mode not enabled
        return self._changing(device)

    def nvmlDeviceGetGpuInstanceRemainingCapacity(self, device: Any, profileId: int) -> int:
        gpu = self._mig_gpu(device)
        if not gpu.mig_mode_current:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if profileId not in self._gi_profiles(gpu):
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return mig.remaining_capacity(gpu.name, _placed(gpu), profileId)

    def nvmlDeviceGetGpuInstancePossiblePlacements(
        self, device: Any, profileId: int, placementsRef: Any, countRef: Any
    ) -> int:
        """Every placement of a profile, whatever exists already (the header: static, like ``-lgipp``)."""
        gpu = self._mig_gpu(device)
        profile = self._gi_profiles(gpu).get(profileId)
        if profile is None:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return _fill_placements(placementsRef, countRef, profile.starts, profile.size)

    def _new_gi(self, device: Any, profileId: int, start: int | None) -> Any:
        with self._mig_changing(device) as gpu:
            profile = self._gi_profiles(gpu).get(profileId)
            if profile is None:
                _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            token = f"{profileId}" if start is None else f"{profileId}:{start}"
            before = {gi.gi_id for gi in gpu.mig_instances}
            result = mig.create_gpu_instances(gpu.name, _placed(gpu), [token], gpu_index=gpu.index)
            if result.error is not None:
                _raise(_MIG_ERRORS.get(result.error, pynvml.NVML_ERROR_UNKNOWN))
            gpu.mig_instances = _instances(result.placed)
            (gi_id,) = [gi.gi_id for gi in gpu.mig_instances if gi.gi_id not in before]
            index = gpu.index
        return self._handle(pynvml.c_nvmlGpuInstance_t, ("gi", index, gi_id))

    def nvmlDeviceCreateGpuInstance(self, device: Any, profileId: int) -> Any:
        """A GPU instance where the driver puts it (the placement ``nvidia-smi mig -cgi`` would choose)."""
        return self._new_gi(device, profileId, None)

    def nvmlDeviceCreateGpuInstanceWithPlacement(self, device: Any, profileId: int, placement: Any) -> Any:
        """A GPU instance at ``placement.start`` (``placement.size`` must be the profile's)."""
        target = _out(placement)
        gpu = self._mig_gpu(device)
        profile = self._gi_profiles(gpu).get(profileId)
        if profile is None or target.size != profile.size:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self._new_gi(device, profileId, int(target.start))

    def nvmlGpuInstanceDestroy(self, gpuInstance: Any) -> int:
        """InUse while the instance still holds compute instances (``nvidia-smi mig -dgi`` refuses alike)."""
        gpu, gi = self._gi(gpuInstance)
        device = self._handle(pynvml.c_nvmlDevice_t, ("device", gpu.index))
        with self._mig_changing(device) as fresh:
            result = mig.destroy_gpu_instances(fresh.name, _placed(fresh), [gi.gi_id], gpu_index=fresh.index)
            if result.error is not None:
                _raise(_MIG_ERRORS.get(result.error, pynvml.NVML_ERROR_UNKNOWN))
            fresh.mig_instances = _instances(result.placed)
        return int(pynvml.NVML_SUCCESS)

    def _ci_profile(self, gpu: GpuState, gi: GpuInstanceState, profileId: int) -> mig.CiProfile:
        try:
            profiles = mig.ci_profiles_for(gpu.name, gi.profile_id)
        except (mig.MigUnsupported, mig.MigError):
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        profile = next((c for c in profiles if c.id == profileId), None)
        if profile is None:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return profile

    def nvmlGpuInstanceGetComputeInstanceRemainingCapacity(self, gpuInstance: Any, profileId: int) -> int:
        gpu, gi = self._gi(gpuInstance)
        self._ci_profile(gpu, gi, profileId)
        return mig.ci_remaining_capacity(gpu.name, _placed_one(gi), profileId)

    def nvmlGpuInstanceGetComputeInstancePossiblePlacements(
        self, gpuInstance: Any, profileId: int, placementsRef: Any, countRef: Any
    ) -> int:
        gpu, gi = self._gi(gpuInstance)
        profile = self._ci_profile(gpu, gi, profileId)
        return _fill_placements(placementsRef, countRef, profile.starts, profile.slices)

    def _new_ci(self, gpuInstance: Any, profileId: int, start: int | None) -> Any:
        gpu, gi = self._gi(gpuInstance)
        profile = self._ci_profile(gpu, gi, profileId)
        device = self._handle(pynvml.c_nvmlDevice_t, ("device", gpu.index))
        with self._mig_changing(device) as fresh:
            target = next((g for g in fresh.mig_instances if g.gi_id == gi.gi_id), None)
            if target is None:
                _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            taken = {s for c in target.compute_instances for s in range(c.start, c.start + c.size)}
            same = sum(1 for c in target.compute_instances if c.profile_id == profile.id)
            if start is None:
                placed = _placed_one(target)
                if mig.ci_remaining_capacity(fresh.name, placed, profile.id) == 0:
                    _raise(pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES)
                result = mig.create_compute_instances(
                    fresh.name, [placed], None, [str(profile.id)], gpu_index=fresh.index
                )
                if result.error is not None:
                    _raise(_MIG_ERRORS.get(result.error, pynvml.NVML_ERROR_UNKNOWN))
                (after,) = _instances(result.placed)
                target.compute_instances = after.compute_instances
                used = {c.ci_id for c in placed.compute_instances}
                ci_id = next(c.ci_id for c in after.compute_instances if c.ci_id not in used)
            else:
                if start not in profile.starts:
                    _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
                if taken & set(range(start, start + profile.slices)) or same >= profile.max_instances:
                    _raise(pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES)
                used = {c.ci_id for c in target.compute_instances}
                ci_id = next(i for i in range(len(used) + 1) if i not in used)
                target.compute_instances.append(
                    ComputeInstanceState(ci_id, profile.id, profile.name, start, profile.slices)
                )
            index, gi_id = fresh.index, target.gi_id
        return self._handle(pynvml.c_nvmlComputeInstance_t, ("ci", index, gi_id, ci_id))

    def nvmlGpuInstanceCreateComputeInstance(self, gpuInstance: Any, profileId: int) -> Any:
        return self._new_ci(gpuInstance, profileId, None)

    def nvmlGpuInstanceCreateComputeInstanceWithPlacement(
        self, gpuInstance: Any, profileId: int, placement: Any
    ) -> Any:
        target = _out(placement)
        gpu, gi = self._gi(gpuInstance)
        if target.size != self._ci_profile(gpu, gi, profileId).slices:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self._new_ci(gpuInstance, profileId, int(target.start))

    def nvmlComputeInstanceDestroy(self, computeInstance: Any) -> int:
        self._st()
        _, index, gi_id, ci_id = self._key(computeInstance, "ci")
        device = self._handle(pynvml.c_nvmlDevice_t, ("device", index))
        with self._mig_changing(device) as fresh:
            gi = next((g for g in fresh.mig_instances if g.gi_id == gi_id), None)
            ci = next((c for c in gi.compute_instances if c.ci_id == ci_id), None) if gi else None
            if gi is None or ci is None:
                _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)  # destroyed since the handle was taken
            gi.compute_instances.remove(ci)
        return int(pynvml.NVML_SUCCESS)

    # ---- processes -------------------------------------------------------------------------------------
    def _running(self, handle: Any, kind: str) -> list[Any]:
        """The node's processes of one kind (C compute, G graphics) on a GPU, or on one MIG device.

        A MIG device handle answers for its own GPU and compute instance only, as NVML documents; the
        physical GPU's handle lists every process on it.
        """
        gpu = self._gpu(handle)
        key = self._lookup(handle)
        procs = []
        for p in gpu.processes:
            if p.type != kind:
                continue
            if key[0] == "mig" and (p.gi_id, p.ci_id) != (key[2], key[3]):
                continue
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

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]:
        return self._running(handle, "C")

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Any) -> list[Any]:
        return self._running(handle, "G")

    def nvmlDeviceGetMPSComputeRunningProcesses(self, handle: Any) -> list[Any]:
        self._gpu(handle)
        return []  # no MPS control daemon runs on a simulated node

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        """The command of a process that has a GPU open (NotFound for any other PID, as NVML answers)."""
        for gpu in self._st().gpus:
            for p in gpu.processes:
                if p.pid == pid:
                    return p.name
        _raise(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetProcessUtilization(self, handle: Any, lastSeenTimeStamp: int = 0) -> list[Any]:
        """Per-process samples: NotFound while no job runs (what a real idle GPU answers)."""
        gpu = self._physical(handle)
        sm, memory = gpu_utilization(gpu)
        jobs = [p for p in gpu.processes if p.type == "C" and p.unit is None]
        if not jobs:
            _raise(pynvml.NVML_ERROR_NOT_FOUND)
        samples = []
        for p in jobs:
            sample = pynvml.c_nvmlProcessUtilizationSample_t()
            sample.pid = p.pid
            sample.timeStamp = max(int(lastSeenTimeStamp) + 1, 1_700_000_000_000_000)
            sample.smUtil = sm // len(jobs)
            sample.memUtil = memory // len(jobs)
            samples.append(sample)
        return samples

    # ---- engines, energy, application clocks, board -----------------------------------------------------
    def nvmlDeviceGetEncoderUtilization(self, handle: Any) -> list[int]:
        self._physical(handle)
        return [0, 167000]  # no encode session on a simulated node; NVML's sampling period in microseconds

    def nvmlDeviceGetDecoderUtilization(self, handle: Any) -> list[int]:
        self._physical(handle)
        return [0, 167000]

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> int:
        """Millijoules since the driver loaded: the power drawn now over the node's uptime."""
        gpu = self._physical(handle)
        uptime_s = 3600 * 24
        return round(gpu.power_draw_w * 1000 * uptime_s)

    def nvmlDeviceGetApplicationsClock(self, handle: Any, clockType: int) -> int:
        return self._clock(self._physical(handle).max_clocks_mhz, clockType)

    def nvmlDeviceGetDefaultApplicationsClock(self, handle: Any, clockType: int) -> int:
        return self._clock(self._physical(handle).max_clocks_mhz, clockType)

    def nvmlDeviceGetMaxCustomerBoostClock(self, handle: Any, clockType: int) -> int:
        return self._clock(self._physical(handle).max_clocks_mhz, clockType)

    def nvmlDeviceGetClock(self, handle: Any, clockType: int, clockId: int) -> int:
        gpu = self._physical(handle)
        if clockId == pynvml.NVML_CLOCK_ID_CURRENT:
            return self._clock(gpu.clocks_mhz, clockType)
        if clockId in (
            pynvml.NVML_CLOCK_ID_APP_CLOCK_TARGET,
            pynvml.NVML_CLOCK_ID_APP_CLOCK_DEFAULT,
            pynvml.NVML_CLOCK_ID_CUSTOMER_BOOST_MAX,
        ):
            return self._clock(gpu.max_clocks_mhz, clockType)
        _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetMemoryBusWidth(self, handle: Any) -> int:
        """Bits: 1024 per HBM stack (A30 3, A100/H100 SXM 5, H100 NVL/H200 6, B200 8); 384 for GDDR boards."""
        gpu = self._physical(handle)
        widths = {"A30": 3072, "A100": 5120, "H100 NVL": 6144, "H100": 5120, "H800": 5120, "H200": 6144, "B200": 8192}
        return next((bits for model, bits in widths.items() if model in gpu.name), 384)

    def nvmlDeviceGetNumGpuCores(self, handle: Any) -> int:
        gpu = self._physical(handle)
        sms = {"A100": 108, "A30": 56, "H100 NVL": 132, "H100": 132, "H200": 132, "L40S": 142, "B200": 148}
        per_sm = 64 if gpu.architecture in ("Ampere",) and any(m in gpu.name for m in _GA100) else 128
        count = next((n for model, n in sms.items() if model in gpu.name), None)
        if count is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return count * per_sm

    def nvmlDeviceGetPcieLinkMaxSpeed(self, handle: Any) -> int:
        """MB/s per lane of the GPU's fastest generation (NVML_PCIE_LINK_MAX_SPEED_*)."""
        gen = self._physical(handle).pcie_gen_max
        return {1: 2500, 2: 5000, 3: 8000, 4: 16000, 5: 32000, 6: 64000}.get(gen, 0)

    def nvmlDeviceGetPcieSpeed(self, handle: Any) -> int:
        gen = self._physical(handle).pcie_gen_current
        return {1: 2500, 2: 5000, 3: 8000, 4: 16000, 5: 32000, 6: 64000}.get(gen, 0)

    def nvmlDeviceGetInforomImageVersion(self, handle: Any) -> str:
        gpu = self._physical(handle)
        return "G520.0200.00.05" if gpu.architecture == "Hopper" else "G506.0212.00.02"

    def nvmlDeviceGetInforomVersion(self, handle: Any, infoRomObject: int) -> str:
        self._physical(handle)
        versions = {pynvml.NVML_INFOROM_OEM: "2.1", pynvml.NVML_INFOROM_ECC: "7.16", pynvml.NVML_INFOROM_POWER: None}
        if infoRomObject not in versions:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        value = versions[infoRomObject]
        if value is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlDeviceGetBoardId(self, handle: Any) -> int:
        gpu = self._physical(handle)
        return int(gpu.bus_id.split(":")[1], 16) << 8

    def nvmlDeviceGetMultiGpuBoard(self, handle: Any) -> int:
        self._physical(handle)
        return 0

    def nvmlDeviceGetVirtualizationMode(self, handle: Any) -> int:
        gpu = self._physical(handle)
        return (
            pynvml.NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH
            if gpu.passthrough
            else pynvml.NVML_GPU_VIRTUALIZATION_MODE_NONE
        )

    def nvmlDeviceGetNumaNodeId(self, handle: Any) -> int:
        node = self._physical(handle).numa_node
        if node is None:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return node

    def nvmlDeviceGetModuleId(self, handle: Any) -> int:
        """The module's slot on an HGX/DGX baseboard (1-8, as ``nvidia-smi -q`` prints it); a PCIe card says 1.

        nvml.h says 0 for a product without a baseboard, but real 550 drivers print ``Module ID : 1`` for
        PCIe A40 and L40S boards (captures in tests/data/corpus/nvidia_smi_q), so the simulator follows them.
        """
        gpu = self._physical(handle)
        return gpu.index + 1 if gpu.fabric_state is not None or gpu.nvlinks else 1

    def _gsp_enabled(self, gpu: GpuState) -> bool:
        """GSP firmware runs on Hopper and later always, and on Turing to Ada from the R555 drivers on."""
        if gpu.architecture in ("Hopper", "Blackwell"):
            return True
        major = self._st().driver.version.split(".")[0]
        return major.isdigit() and int(major) >= 555

    def nvmlDeviceGetGspFirmwareMode(self, handle: Any) -> list[int]:
        """``[isEnabled, defaultMode]``: both follow the driver's default, nobody here sets NVreg_EnableGpuFirmware."""
        enabled = int(self._gsp_enabled(self._physical(handle)))
        return [enabled, enabled]

    def nvmlDeviceGetGspFirmwareVersion(self, handle: Any) -> str:
        gpu = self._physical(handle)
        if not self._gsp_enabled(gpu):
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return self._st().driver.version

    def nvmlUnitGetCount(self) -> int:
        self._st()
        return 0  # S-class units only; no HGX or DGX node has one

    # ---- memory errors ---------------------------------------------------------------------------------
    def nvmlDeviceGetMemoryErrorCounter(self, handle: Any, errorType: int, counterType: int, locationType: int) -> int:
        """ECC errors by memory location: every error of a simulated GPU is in device memory (DRAM)."""
        total = self.nvmlDeviceGetTotalEccErrors(handle, errorType, counterType)
        dram = (pynvml.NVML_MEMORY_LOCATION_DEVICE_MEMORY, getattr(pynvml, "NVML_MEMORY_LOCATION_DRAM", 7))
        if locationType in dram:
            return total
        if 0 <= locationType <= 7:
            return 0
        _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    # ---- topology --------------------------------------------------------------------------------------
    def _topo_device(self, handle: Any) -> Any:
        from assessor.sim.tools.nvidia_smi_topo_cmd import devices

        gpu = self._physical(handle)
        return next(d for d in devices(self._st()) if d.gpu is not None and d.gpu.index == gpu.index)

    def nvmlDeviceGetTopologyCommonAncestor(self, device1: Any, device2: Any) -> int:
        """Where two GPUs meet on PCIe, by the same rule as ``nvidia-smi topo -m`` (NVLink is not a level)."""
        from assessor.sim.tools.nvidia_smi_topo_cmd import pcie_connection

        a, b = self._topo_device(device1), self._topo_device(device2)
        if a.label == b.label:
            return pynvml.NVML_TOPOLOGY_INTERNAL
        return {
            "PIX": pynvml.NVML_TOPOLOGY_SINGLE,
            "PXB": pynvml.NVML_TOPOLOGY_MULTIPLE,
            "NODE": pynvml.NVML_TOPOLOGY_NODE,
        }.get(pcie_connection(a, b), pynvml.NVML_TOPOLOGY_SYSTEM)

    def nvmlDeviceGetP2PStatus(self, device1: Any, device2: Any, p2pIndex: int) -> int:
        """The status ``nvidia-smi topo -p2p`` prints for the pair (OK, CNS or NS)."""
        from assessor.sim.tools.nvidia_smi_topo_cmd import p2p_status

        a, b = self._topo_device(device1), self._topo_device(device2)
        if a.label == b.label:
            return pynvml.NVML_P2P_STATUS_OK
        # nvmlGpuP2PCapsIndex_t: READ 0, WRITE 1, NVLINK 2, ATOMICS 3, PCI (= PROP) 4; literal because pynvml
        # defines NVML_P2P_CAPS_INDEX_READ as the tuple (0,).
        capability = {0: "r", 1: "w", 2: "n", 3: "a", 4: "p"}.get(int(p2pIndex))
        if capability is None:
            return pynvml.NVML_P2P_STATUS_UNKNOWN
        return {
            "OK": pynvml.NVML_P2P_STATUS_OK,
            "CNS": pynvml.NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED,
            "NS": pynvml.NVML_P2P_STATUS_NOT_SUPPORTED,
        }[p2p_status(a, b, capability)]

    def nvmlDeviceGetCpuAffinityWithinScope(self, device: Any, cpuSetSize: int, scope: int) -> list[int]:
        """The CPUs ``topo -m`` lists as the GPU's affinity, as 64-bit words of a CPU mask."""
        affinity = self._physical(device).cpu_affinity
        words = [0] * cpuSetSize
        for part in (affinity or "").split(","):
            low, _, high = part.strip().partition("-")
            if not low.isdigit():
                continue
            for cpu in range(int(low), int(high or low) + 1):
                if cpu // 64 < cpuSetSize:
                    words[cpu // 64] |= 1 << (cpu % 64)
        return words

    def nvmlDeviceGetCpuAffinity(self, device: Any, cpuSetSize: int) -> list[int]:
        return self.nvmlDeviceGetCpuAffinityWithinScope(device, cpuSetSize, 1)

    # ---- field values ----------------------------------------------------------------------------------
    def nvmlDeviceGetFieldValues(self, handle: Any, values: Any) -> None:
        """Fill a caller's ``nvmlFieldValue_t`` array; a field the simulator does not keep says NotSupported."""
        gpu = self._physical(handle)
        answers: dict[int, tuple[int, int]] = {}  # field id -> (value type, value)
        ull, uint = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
        if gpu.ecc_mode_current:
            answers[pynvml.NVML_FI_DEV_ECC_DBE_VOL_TOTAL] = (ull, gpu.ecc.volatile_uncorrected)
            answers[pynvml.NVML_FI_DEV_ECC_SBE_VOL_TOTAL] = (ull, gpu.ecc.volatile_corrected)
            answers[pynvml.NVML_FI_DEV_ECC_DBE_AGG_TOTAL] = (ull, gpu.ecc.aggregate_uncorrected)
            answers[pynvml.NVML_FI_DEV_ECC_SBE_AGG_TOTAL] = (ull, gpu.ecc.aggregate_corrected)
        answers[pynvml.NVML_FI_DEV_PCIE_REPLAY_COUNTER] = (ull, 0)
        answers[pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION] = (ull, self.nvmlDeviceGetTotalEnergyConsumption(handle))
        answers[pynvml.NVML_FI_DEV_POWER_INSTANT] = (uint, round(gpu.power_draw_w * 1000))
        if gpu.nvlinks:
            active = sum(1 for link in gpu.nvlinks if link.active)
            answers[pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT] = (uint, len(gpu.nvlinks))
            busy = gpu_utilization(gpu)[0] > 0
            for name in ("NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX", "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX"):
                if hasattr(pynvml, name):
                    # KiB moved since the driver loaded: nothing while idle
                    answers[getattr(pynvml, name)] = (ull, active * 1024 * 1024 if busy else 0)
        for value in values:
            found = answers.get(int(value.fieldId))
            value.timestamp = 1_700_000_000_000_000
            value.latencyUsec = 0
            if found is None:
                value.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
                continue
            value.valueType, number = found
            value.nvmlReturn = pynvml.NVML_SUCCESS
            if value.valueType == uint:
                value.value.uiVal = number
            else:
                value.value.ullVal = number
