"""The C functions gpulab's ``libnvidia-ml.so.1`` exports, and how the simulator answers each.

One table serves both halves of the library: :mod:`assessor.sim.nvml_lib.build` writes a C wrapper per entry
(its parameters typed by the entry's *kinds*), and :mod:`assessor.sim.nvml_lib.serve` answers a call by the
entry's *handler*, which asks :class:`~assessor.sim.mock_nvml.MockNvml`, the one implementation of NVML's
rules in gpulab (MIG, faults, permissions, error codes), and packs what it returns as the C structures of
``nvml.h`` (pynvml's ctypes structures have the header's layout).

Parameter kinds (one letter per C parameter, in order):

==== ============================================ ==========================================
kind C parameter                                  on the wire (request / reply)
==== ============================================ ==========================================
h    a handle (nvmlDevice_t, nvmlGpuInstance_t..) its pointer value / -
u    unsigned int or an enum                      decimal / -
i    int                                          decimal / -
U    unsigned long long                           decimal / -
s    const char * (input string)                  hex or ``-`` / -
o    pointer to one output value or structure     ``1``/``0`` (NULL) / bytes
S    char * output string; the next ``u`` is its  ``1``/``0`` / bytes with the NUL
     length
a    pointer to an output array                   ``1``/``0`` / bytes
n    unsigned int * count, in and out             4 bytes or ``-`` / 4 bytes
v    pointer to a versioned structure, in and out its version (4 bytes) / bytes
b    pointer to a whole structure, in and out     its bytes / bytes
p    const pointer to an input structure          its bytes / -
x    array in and out, sized by the argument      its bytes / bytes
     before it (count * element size)
==== ============================================ ==========================================

A handler returns the reply: ``(nvmlReturn, [bytes or None per output parameter])``; an
``pynvml.NVMLError`` it raises becomes that return code with nothing written.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pynvml

SUCCESS = int(pynvml.NVML_SUCCESS)
INVALID_ARGUMENT = int(pynvml.NVML_ERROR_INVALID_ARGUMENT)
NOT_SUPPORTED = int(pynvml.NVML_ERROR_NOT_SUPPORTED)
INSUFFICIENT_SIZE = int(pynvml.NVML_ERROR_INSUFFICIENT_SIZE)
NOT_FOUND = int(pynvml.NVML_ERROR_NOT_FOUND)

OUTPUT_KINDS = frozenset("oSanvbx")
C_TYPES = {"h": "void *", "u": "unsigned int", "i": "int", "U": "unsigned long long", "s": "const char *"}

Answer = tuple[int, list[bytes | None]]
Handler = Callable[[Any, list[Any]], Answer]

SIMULATED = "simulated"
NOT_SUPPORTED_AS_REAL = "NOT_SUPPORTED as on a real GPU"


@dataclass(frozen=True)
class Export:
    name: str
    kinds: str
    handler: Handler
    status: str = SIMULATED
    sizes: dict[int, int] = field(default_factory=dict)  # byte size per ``p``/``b``/``x`` parameter


EXPORTS: dict[str, Export] = {}


def _fail(code: int) -> Any:
    raise pynvml.NVMLError(code)


def _add(name: str, kinds: str, handler: Handler, *, status: str = SIMULATED, sizes: dict[int, int] | None = None):
    EXPORTS[name] = Export(name, kinds, handler, status, dict(sizes or {}))


# ---- packing -----------------------------------------------------------------------------------------------


def _pointer_value(handle: Any) -> int:
    return int(ctypes.cast(handle, ctypes.c_void_p).value or 0)


def _pack(fmt: str, value: Any) -> bytes:
    if fmt == "B":  # a ctypes structure as the header lays it out
        return bytes(value)
    if fmt == "H":  # a handle: its pointer value
        return struct.pack("<Q", _pointer_value(value))
    if fmt == "I":
        return struct.pack("<I", int(value) & 0xFFFFFFFF)
    if fmt == "i":
        return struct.pack("<i", int(value))
    return struct.pack("<Q", int(value) & 0xFFFFFFFFFFFFFFFF)  # Q


def _string(text: str | bytes, length: int) -> bytes:
    raw = (text.encode() if isinstance(text, str) else text) + b"\0"
    if len(raw) > length:
        _fail(INSUFFICIENT_SIZE)
    return raw


def _inputs(kinds: str, args: Sequence[Any]) -> list[Any]:
    """The arguments the mock method takes: inputs, less the length that follows an output string."""
    return [a for i, (k, a) in enumerate(zip(kinds, args, strict=True)) if k in "huiUs" and kinds[i - 1 : i] != "S"]


def getter(name: str, kinds: str, packs: str = "", method: str | None = None) -> None:
    """A function whose inputs go to the mock method as they are and whose ``o``/``S`` outputs are its result."""
    call_name = method or name

    def handle(nv: Any, args: list[Any]) -> Answer:
        for k, a in zip(kinds, args, strict=True):
            if k in "oS" and not a:
                _fail(INVALID_ARGUMENT)  # a NULL output pointer, as NVML answers it
        result = getattr(nv, call_name)(*_inputs(kinds, args))
        outs = [k for k in kinds if k in OUTPUT_KINDS]
        if not outs:
            return SUCCESS, []
        values = list(result) if len(outs) > 1 else [result]
        packed: list[bytes | None] = []
        fmts = iter(packs)
        for i, k in enumerate(kinds):
            if k == "S":
                packed.append(_string(values[len(packed)], args[i + 1]))
            elif k == "o":
                packed.append(_pack(next(fmts), values[len(packed)]))
        return SUCCESS, packed

    _add(name, kinds, handle)


def not_supported(name: str, kinds: str) -> None:
    """A function the driver has that answers NOT_SUPPORTED on the GPUs gpulab simulates, as they do."""

    def handle(nv: Any, args: list[Any]) -> Answer:
        nv._st()  # Uninitialized before nvmlInit, as any call
        return NOT_SUPPORTED, [None] * sum(k in OUTPUT_KINDS for k in kinds)

    _add(name, kinds, handle, status=NOT_SUPPORTED_AS_REAL)


# ---- init and system ---------------------------------------------------------------------------------------

getter("nvmlInit_v2", "", method="nvmlInit")
getter("nvmlInit", "", method="nvmlInit")
getter("nvmlInitWithFlags", "u")
getter("nvmlShutdown", "")
getter("nvmlSystemGetDriverVersion", "Su")
getter("nvmlSystemGetNVMLVersion", "Su")
getter("nvmlSystemGetCudaDriverVersion", "o", "i")
getter("nvmlSystemGetCudaDriverVersion_v2", "o", "i")
getter("nvmlSystemGetProcessName", "uSu")
getter("nvmlUnitGetCount", "o", "I")

# ---- enumeration and identity ------------------------------------------------------------------------------

for _name in ("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"):
    getter(_name, "o", "I", method="nvmlDeviceGetCount")
for _name in ("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"):
    getter(_name, "uo", "H", method="nvmlDeviceGetHandleByIndex")
getter("nvmlDeviceGetHandleByUUID", "so", "H")
for _name in ("nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"):
    getter(_name, "so", "H", method="nvmlDeviceGetHandleByPciBusId")
getter("nvmlDeviceGetHandleBySerial", "so", "H")
getter("nvmlDeviceGetIndex", "ho", "I")
for _name in ("Name", "UUID", "Serial", "VbiosVersion", "BoardPartNumber", "InforomImageVersion"):
    getter(f"nvmlDeviceGet{_name}", "hSu")
getter("nvmlDeviceGetInforomVersion", "huSu")
for _name in (
    "MinorNumber",
    "Architecture",
    "BoardId",
    "MultiGpuBoard",
    "VirtualizationMode",
    "NumaNodeId",
    "ModuleId",
):
    getter(f"nvmlDeviceGet{_name}", "ho", "I")
for _name in ("nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"):
    getter(_name, "ho", "B", method="nvmlDeviceGetPciInfo_v3")
getter("nvmlDeviceGetCudaComputeCapability", "hoo", "ii")
getter("nvmlDeviceGetGspFirmwareMode", "hoo", "II")


def _gsp_version(nv: Any, args: list[Any]) -> Answer:
    """``(device, char *version)``: the header gives no length, the caller's buffer is 64 bytes."""
    device, present = args
    if not present:
        _fail(INVALID_ARGUMENT)
    return SUCCESS, [_string(nv.nvmlDeviceGetGspFirmwareVersion(device), 64)]


_add("nvmlDeviceGetGspFirmwareVersion", "ha", _gsp_version)

# ---- memory, utilisation, modes ----------------------------------------------------------------------------

getter("nvmlDeviceGetMemoryInfo", "ho", "B")


def _memory_v2(nv: Any, args: list[Any]) -> Answer:
    device, version = args
    if version is None:
        _fail(INVALID_ARGUMENT)
    if version != pynvml.nvmlMemory_v2:
        _fail(int(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH))
    return SUCCESS, [bytes(nv.nvmlDeviceGetMemoryInfo(device, version=version))]


_add("nvmlDeviceGetMemoryInfo_v2", "hv", _memory_v2)
getter("nvmlDeviceGetBAR1MemoryInfo", "ho", "B")
getter("nvmlDeviceGetUtilizationRates", "ho", "B")
getter("nvmlDeviceGetEncoderUtilization", "hoo", "II")
getter("nvmlDeviceGetDecoderUtilization", "hoo", "II")
getter("nvmlDeviceGetFanSpeed", "ho", "I")
getter("nvmlDeviceGetFanSpeed_v2", "huo", "I")
getter("nvmlDeviceGetNumFans", "ho", "I")
for _name in (
    "Brand",
    "DisplayMode",
    "DisplayActive",
    "PersistenceMode",
    "ComputeMode",
    "PerformanceState",
    "PowerState",
    "RetiredPagesPendingStatus",
    "MemoryBusWidth",
    "NumGpuCores",
):
    getter(f"nvmlDeviceGet{_name}", "ho", "I")
getter("nvmlDeviceGetEccMode", "hoo", "II")
getter("nvmlDeviceGetTotalEccErrors", "huuo", "Q")
getter("nvmlDeviceGetMemoryErrorCounter", "huuuo", "Q")
getter("nvmlDeviceGetRemappedRows", "hoooo", "IIII")
getter("nvmlDeviceSetPersistenceMode", "hu")
getter("nvmlDeviceSetEccMode", "hu")
getter("nvmlDeviceClearEccErrorCounts", "hu")


def _retired_pages(nv: Any, args: list[Any]) -> Answer:
    device, cause, count = args[:3]
    if count is None:
        _fail(INVALID_ARGUMENT)
    pages = nv.nvmlDeviceGetRetiredPages_v2(device, cause)
    found = struct.pack("<I", len(pages))
    if not args[3] or count < len(pages):
        return (INSUFFICIENT_SIZE if pages and args[3] else SUCCESS), [found, None] + [None] * (len(args) - 4)
    addresses = b"".join(struct.pack("<Q", p["address"]) for p in pages)
    times = b"".join(struct.pack("<Q", p["timestamp"]) for p in pages)
    outs: list[bytes | None] = [found, addresses]
    if len(args) == 5:
        outs.append(times)
    return SUCCESS, outs


_add("nvmlDeviceGetRetiredPages", "huna", _retired_pages)
_add("nvmlDeviceGetRetiredPages_v2", "hunaa", _retired_pages)

# ---- temperature, power, clocks, PCIe ----------------------------------------------------------------------

getter("nvmlDeviceGetTemperature", "huo", "I")


def _temperature_v(nv: Any, args: list[Any]) -> Answer:
    device, raw = args
    if raw is None:
        _fail(INVALID_ARGUMENT)
    reading = pynvml.c_nvmlTemperature_v1_t.from_buffer_copy(
        raw.ljust(ctypes.sizeof(pynvml.c_nvmlTemperature_v1_t), b"\0")
    )
    if reading.version != pynvml.nvmlTemperature_v1:
        _fail(int(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH))
    reading.temperature = nv.nvmlDeviceGetTemperature(device, int(reading.sensorType))
    return SUCCESS, [bytes(reading)]


if hasattr(pynvml, "c_nvmlTemperature_v1_t"):
    _add("nvmlDeviceGetTemperatureV", "hb", _temperature_v, sizes={1: ctypes.sizeof(pynvml.c_nvmlTemperature_v1_t)})
getter("nvmlDeviceGetTemperatureThreshold", "huo", "I")
for _name in ("PowerUsage", "EnforcedPowerLimit", "PowerManagementLimit", "PowerManagementDefaultLimit"):
    getter(f"nvmlDeviceGet{_name}", "ho", "I")
getter("nvmlDeviceGetPowerManagementLimitConstraints", "hoo", "II")
getter("nvmlDeviceGetTotalEnergyConsumption", "ho", "Q")
for _name in ("ClockInfo", "MaxClockInfo", "ApplicationsClock", "DefaultApplicationsClock", "MaxCustomerBoostClock"):
    getter(f"nvmlDeviceGet{_name}", "huo", "I")
getter("nvmlDeviceGetClock", "huuo", "I")
for _name in (
    "CurrentClocksEventReasons",
    "CurrentClocksThrottleReasons",
    "SupportedClocksEventReasons",
    "SupportedClocksThrottleReasons",
):
    getter(f"nvmlDeviceGet{_name}", "ho", "Q")
for _name in (
    "CurrPcieLinkGeneration",
    "MaxPcieLinkGeneration",
    "GpuMaxPcieLinkGeneration",
    "CurrPcieLinkWidth",
    "MaxPcieLinkWidth",
    "PcieReplayCounter",
    "PcieLinkMaxSpeed",
    "PcieSpeed",
):
    getter(f"nvmlDeviceGet{_name}", "ho", "I")
getter("nvmlDeviceGetPcieThroughput", "huo", "I")

# ---- NVLink, fabric, topology ------------------------------------------------------------------------------

getter("nvmlDeviceGetNvLinkState", "huo", "I")
getter("nvmlDeviceGetNvLinkVersion", "huo", "I")
getter("nvmlDeviceGetNvLinkErrorCounter", "huuo", "Q")
getter("nvmlDeviceGetNvLinkCapability", "huuo", "I")
getter("nvmlDeviceGetNvLinkRemotePciInfo_v2", "huo", "B")
getter("nvmlDeviceGetNvLinkRemoteDeviceType", "huo", "I")
# Deprecated since Ampere: the per-link utilisation counters answer NOT_SUPPORTED (field values replace them).
not_supported("nvmlDeviceGetNvLinkUtilizationCounter", "huuoo")
not_supported("nvmlDeviceGetNvLinkUtilizationControl", "huuo")


def _fabric(nv: Any, args: list[Any]) -> Answer:
    device, present = args
    if not present:
        _fail(INVALID_ARGUMENT)
    info = pynvml.c_nvmlGpuFabricInfo_t()
    nv.nvmlDeviceGetGpuFabricInfo(device, ctypes.byref(info))
    return SUCCESS, [bytes(info)]


def _fabric_v(nv: Any, args: list[Any]) -> Answer:
    device, raw = args
    if raw is None:
        _fail(INVALID_ARGUMENT)
    info = pynvml.c_nvmlGpuFabricInfoV_t.from_buffer_copy(
        raw.ljust(ctypes.sizeof(pynvml.c_nvmlGpuFabricInfoV_t), b"\0")
    )
    nv.nvmlDeviceGetGpuFabricInfoV(device, ctypes.byref(info))
    return SUCCESS, [bytes(info)]


_add("nvmlDeviceGetGpuFabricInfo", "ho", _fabric)
if hasattr(pynvml, "c_nvmlGpuFabricInfoV_t"):
    _add("nvmlDeviceGetGpuFabricInfoV", "hb", _fabric_v, sizes={1: ctypes.sizeof(pynvml.c_nvmlGpuFabricInfoV_t)})
getter("nvmlDeviceGetTopologyCommonAncestor", "hho", "I")
getter("nvmlDeviceGetP2PStatus", "hhuo", "I")


def _affinity(nv: Any, args: list[Any]) -> Answer:
    device, words, present = args[:3]
    if not present or words == 0:
        _fail(INVALID_ARGUMENT)
    scope = args[3] if len(args) == 4 else 1  # nvmlDeviceGetCpuAffinity: the CPUs of the GPU's socket
    mask = nv.nvmlDeviceGetCpuAffinityWithinScope(device, words, scope)
    return SUCCESS, [b"".join(struct.pack("<Q", w) for w in mask)]


_add("nvmlDeviceGetCpuAffinity", "hua", _affinity)
_add("nvmlDeviceGetCpuAffinityWithinScope", "huau", _affinity)

# ---- MIG ---------------------------------------------------------------------------------------------------

getter("nvmlDeviceGetMigMode", "hoo", "II")


def _set_mig_mode(nv: Any, args: list[Any]) -> Answer:
    device, mode, present = args
    if not present:
        _fail(INVALID_ARGUMENT)
    return SUCCESS, [_pack("I", nv.nvmlDeviceSetMigMode(device, mode))]


_add("nvmlDeviceSetMigMode", "huo", _set_mig_mode)
getter("nvmlDeviceGetMaxMigDeviceCount", "ho", "I")
getter("nvmlDeviceGetMigDeviceHandleByIndex", "huo", "H")
getter("nvmlDeviceIsMigDeviceHandle", "ho", "I")
getter("nvmlDeviceGetGpuInstanceId", "ho", "I")
getter("nvmlDeviceGetComputeInstanceId", "ho", "I")
getter("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", "ho", "H")


def _gi_profile_info(nv: Any, args: list[Any]) -> Answer:
    device, profile, present = args
    if not present:
        _fail(INVALID_ARGUMENT)
    return SUCCESS, [bytes(nv.nvmlDeviceGetGpuInstanceProfileInfo(device, profile, version=1))]


def _gi_profile_info_v(nv: Any, args: list[Any]) -> Answer:
    device, profile, version = args
    if version is None:
        _fail(INVALID_ARGUMENT)
    if version != pynvml.nvmlGpuInstanceProfileInfo_v2:
        _fail(int(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH))
    info = nv.nvmlDeviceGetGpuInstanceProfileInfo(device, profile, version=2)
    info.version = version
    return SUCCESS, [bytes(info)]


_add("nvmlDeviceGetGpuInstanceProfileInfo", "huo", _gi_profile_info)
_add("nvmlDeviceGetGpuInstanceProfileInfoV", "huv", _gi_profile_info_v)
getter("nvmlDeviceGetGpuInstanceRemainingCapacity", "huo", "I")
getter("nvmlDeviceCreateGpuInstance", "huo", "H")
getter("nvmlDeviceGetGpuInstanceById", "huo", "H")
getter("nvmlGpuInstanceDestroy", "h")
getter("nvmlGpuInstanceGetInfo", "ho", "B")
getter("nvmlGpuInstanceGetComputeInstanceRemainingCapacity", "huo", "I")
getter("nvmlGpuInstanceCreateComputeInstance", "huo", "H")
getter("nvmlGpuInstanceGetComputeInstanceById", "huo", "H")
getter("nvmlComputeInstanceDestroy", "h")
for _name in ("nvmlComputeInstanceGetInfo_v2", "nvmlComputeInstanceGetInfo"):
    getter(_name, "ho", "B", method="nvmlComputeInstanceGetInfo_v2")


def _ci_profile_info(nv: Any, args: list[Any]) -> Answer:
    gi, profile, engine, present = args
    if not present:
        _fail(INVALID_ARGUMENT)
    return SUCCESS, [bytes(nv.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, profile, engine, version=1))]


def _ci_profile_info_v(nv: Any, args: list[Any]) -> Answer:
    gi, profile, engine, version = args
    if version is None:
        _fail(INVALID_ARGUMENT)
    if version != pynvml.nvmlComputeInstanceProfileInfo_v2:
        _fail(int(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH))
    info = nv.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, profile, engine, version=2)
    info.version = version
    return SUCCESS, [bytes(info)]


_add("nvmlGpuInstanceGetComputeInstanceProfileInfo", "huuo", _ci_profile_info)
_add("nvmlGpuInstanceGetComputeInstanceProfileInfoV", "huuv", _ci_profile_info_v)


def _with_placement(method: str, placement_type: Any) -> Handler:
    def handle(nv: Any, args: list[Any]) -> Answer:
        owner, profile, raw, present = args
        if raw is None or not present:
            _fail(INVALID_ARGUMENT)
        placement = placement_type.from_buffer_copy(raw)
        return SUCCESS, [_pack("H", getattr(nv, method)(owner, profile, ctypes.byref(placement)))]

    return handle


_add(
    "nvmlDeviceCreateGpuInstanceWithPlacement",
    "hupo",
    _with_placement("nvmlDeviceCreateGpuInstanceWithPlacement", pynvml.c_nvmlGpuInstancePlacement_t),
    sizes={2: ctypes.sizeof(pynvml.c_nvmlGpuInstancePlacement_t)},
)
_add(
    "nvmlGpuInstanceCreateComputeInstanceWithPlacement",
    "hupo",
    _with_placement("nvmlGpuInstanceCreateComputeInstanceWithPlacement", pynvml.c_nvmlComputeInstancePlacement_t),
    sizes={2: ctypes.sizeof(pynvml.c_nvmlComputeInstancePlacement_t)},
)


def _listing(method: str, element: Any) -> Handler:
    """``(owner, profileId, array, *count)`` (GPU/compute instances, placements): ``count`` is an output only.

    The header: the array must hold as many as the profile allows (its instanceCount, or its placements);
    a NULL array asks for the number of placements, and is an invalid argument for the instance lists.
    """

    def handle(nv: Any, args: list[Any]) -> Answer:
        owner, profile, array_present, count = args
        if count is None:
            _fail(INVALID_ARGUMENT)
        found = ctypes.c_uint(0)
        if not array_present:
            if not method.endswith("Placements"):
                _fail(INVALID_ARGUMENT)
            getattr(nv, method)(owner, profile, None, ctypes.byref(found))
            return SUCCESS, [None, _pack("I", found.value)]
        array = (element * 64)()  # more than any profile's instances or placements
        getattr(nv, method)(owner, profile, array, ctypes.byref(found))
        return SUCCESS, [bytes(array)[: ctypes.sizeof(element) * found.value], _pack("I", found.value)]

    return handle


_add(
    "nvmlDeviceGetGpuInstances",
    "huan",
    _listing("nvmlDeviceGetGpuInstances", pynvml.c_nvmlGpuInstance_t),
)
_add(
    "nvmlDeviceGetGpuInstancePossiblePlacements_v2",
    "huan",
    _listing("nvmlDeviceGetGpuInstancePossiblePlacements", pynvml.c_nvmlGpuInstancePlacement_t),
)
_add(
    "nvmlGpuInstanceGetComputeInstances",
    "huan",
    _listing("nvmlGpuInstanceGetComputeInstances", pynvml.c_nvmlComputeInstance_t),
)
_add(
    "nvmlGpuInstanceGetComputeInstancePossiblePlacements",
    "huan",
    _listing("nvmlGpuInstanceGetComputeInstancePossiblePlacements", pynvml.c_nvmlComputeInstancePlacement_t),
)

# ---- processes ---------------------------------------------------------------------------------------------


def _processes(method: str, with_instances: bool) -> Handler:
    """``(device, *count, infos)``: NVML's two-call protocol (a NULL array or a short one asks for the count)."""

    def handle(nv: Any, args: list[Any]) -> Answer:
        device, count, present = args
        if count is None:
            _fail(INVALID_ARGUMENT)
        procs = getattr(nv, method)(device)
        found = _pack("I", len(procs))
        if not procs:
            return SUCCESS, [found, None]
        if not present or count < len(procs):
            return INSUFFICIENT_SIZE, [found, None]
        rows = []
        for p in procs:
            if with_instances:  # nvmlProcessInfo_v2_t / nvmlProcessInfo_t of v3: 24 bytes
                rows.append(struct.pack("<IxxxxQII", p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId))
            else:  # nvmlProcessInfo_v1_t: pid and used memory
                rows.append(struct.pack("<IxxxxQ", p.pid, p.usedGpuMemory))
        return SUCCESS, [found, b"".join(rows)]

    return handle


for _kind in ("Compute", "Graphics", "MPSCompute"):
    _method = f"nvmlDeviceGet{_kind}RunningProcesses"
    _add(f"{_method}_v3", "hna", _processes(_method, True))
    _add(f"{_method}_v2", "hna", _processes(_method, True))
    _add(_method, "hna", _processes(_method, False))


def _process_utilization(nv: Any, args: list[Any]) -> Answer:
    device, present, count, since = args
    if count is None:
        _fail(INVALID_ARGUMENT)
    samples = nv.nvmlDeviceGetProcessUtilization(device, since)
    found = _pack("I", len(samples))
    if not present or count < len(samples):
        return INSUFFICIENT_SIZE, [None, found]
    rows = b"".join(bytes(s) for s in samples)
    return SUCCESS, [rows, found]


_add("nvmlDeviceGetProcessUtilization", "hanU", _process_utilization)

# ---- field values ------------------------------------------------------------------------------------------


def _field_values(nv: Any, args: list[Any]) -> Answer:
    device, count, raw = args
    if raw is None or count <= 0:
        _fail(INVALID_ARGUMENT)
    size = ctypes.sizeof(pynvml.c_nvmlFieldValue_t)
    values = (pynvml.c_nvmlFieldValue_t * count).from_buffer_copy(raw[: size * count])
    nv.nvmlDeviceGetFieldValues(device, values)
    return SUCCESS, [bytes(values)]


_add("nvmlDeviceGetFieldValues", "hix", _field_values, sizes={2: ctypes.sizeof(pynvml.c_nvmlFieldValue_t)})


# Windows only (WDDM/TCC): the Linux driver's library has the symbols and answers NOT_SUPPORTED.
not_supported("nvmlDeviceGetDriverModel", "hoo")
not_supported("nvmlDeviceGetDriverModel_v2", "hoo")
# Confidential computing is off on every simulated node: its queries answer NOT_SUPPORTED, as on such a GPU.
not_supported("nvmlDeviceGetConfComputeMemSizeInfo", "ho")


def conformance() -> list[tuple[str, str]]:
    """(function, status) of every exported function, sorted."""
    return sorted((e.name, e.status) for e in EXPORTS.values())
