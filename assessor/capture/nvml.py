"""The NVML collector: node facts from NVML through pynvml's API.

:func:`collect` takes the module to use, the real ``pynvml`` on a GPU host or
:class:`assessor.sim.mock_nvml.MockNvml` on a simulated node, and calls only pynvml functions. A query the GPU
does not support (``NVMLError_NotSupported``, or a function the installed driver lacks) leaves its field
``None``; any other NVML error on one query leaves the field ``None`` too and is recorded in
``NodeFacts.problems["gpus"]``, so one bad GPU never stops the collection. A GPU that fell off the bus
(``NVMLError_GpuIsLost``) is listed with its index only, and recorded once.

MIG instances (when a GPU's current MIG mode is enabled) are read the way ``nvidia-smi mig -lgi`` reads
them: for each GPU instance profile (``nvmlDeviceGetGpuInstanceProfileInfo`` over the profile indices, giving
the profile id and name), ``nvmlDeviceGetGpuInstances`` lists the instances, ``nvmlGpuInstanceGetInfo`` gives
the id and placement; compute instances likewise with ``nvmlGpuInstanceGetComputeInstanceProfileInfo``,
``nvmlGpuInstanceGetComputeInstances`` and ``nvmlComputeInstanceGetInfo``. A GPU instance without compute
instances is still listed (MIG device handles would miss it).

:func:`collect_json` is the ``nvml.json`` snapshot file (read back by :mod:`assessor.parsers.nvml_json`).
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable
from typing import Any, TypeVar

from assessor.errors import GpulabError
from assessor.facts import ComputeInstance, DriverInfo, Gpu, GpuInstance, NodeFacts, NvLink, to_jsonable

T = TypeVar("T")

NO_DRIVER_MESSAGE = "NVML library not found: no NVIDIA driver on this host; try --target mock:hgx-h100"

# NVML architecture enum -> the name nvidia-smi prints ("Product Architecture").
_ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada Lovelace",
    9: "Hopper",
    10: "Blackwell",
}
_COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
_FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
# Clock event reason bits (nvmlClocksEventReason*) -> the names used by facts.Gpu.throttle_reasons.
_THROTTLE_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
_NVLINK_COUNTERS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3))  # NVML_NVLINK_ERROR_DL_*


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _mig_name(value: Any) -> str:
    """A profile name without NVML's "MIG " prefix: MIG 3g.40gb -> 3g.40gb."""
    name = _text(value)
    return name[4:] if name.startswith("MIG ") else name


class _Session:
    """One collection: the module, and the problems met on the way."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.problems: list[str] = []

    def get(self, what: str, func: Callable[..., T], *args: Any) -> T | None:
        """``func(*args)``, or None when NVML cannot answer (NotSupported silently, other errors as problems)."""
        nvml = self.nvml
        try:
            return func(*args)
        except nvml.NVMLError_GpuIsLost:
            raise  # the whole GPU is gone: collect() records it once and moves to the next GPU
        except nvml.NVMLError as exc:
            if not isinstance(exc, (nvml.NVMLError_NotSupported, nvml.NVMLError_FunctionNotFound)):
                self.problems.append(f"{what}: {exc}")
            return None


def _init(nvml: Any) -> None:
    try:
        nvml.nvmlInit()
    except nvml.NVMLError_LibraryNotFound:
        raise GpulabError(NO_DRIVER_MESSAGE) from None
    except nvml.NVMLError as exc:
        raise GpulabError(f"NVML initialisation failed: {exc}") from None


def collect(nvml: Any) -> NodeFacts:
    """Facts (driver, gpus, mig_instances) from NVML through ``nvml`` (pynvml or a mock of it).

    Raises GpulabError when NVML cannot start: no driver on this host, or the driver/library mismatch."""
    _init(nvml)
    try:
        s = _Session(nvml)
        driver = DriverInfo(
            version=s.get("driver version", lambda: _text(nvml.nvmlSystemGetDriverVersion())),
            cuda_version=s.get("CUDA version", lambda: _cuda_version(nvml.nvmlSystemGetCudaDriverVersion())),
        )
        count = s.get("device count", nvml.nvmlDeviceGetCount) or 0
        gpus: list[Gpu] = []
        mig: list[GpuInstance] = []
        mig_capable = False
        for index in range(count):
            handle = s.get(f"GPU {index}", nvml.nvmlDeviceGetHandleByIndex, index)
            if handle is None:
                gpus.append(Gpu(index=index))
                continue
            try:
                gpu = _gpu(s, index, handle)
            except nvml.NVMLError_GpuIsLost as exc:
                s.problems.append(f"GPU {index}: {exc}")
                gpus.append(Gpu(index=index))
                continue
            gpus.append(gpu)
            if gpu.mig_mode_current is not None:
                mig_capable = True  # MIG instances are known (maybe none) once one GPU speaks MIG
            if gpu.mig_mode_current:
                with contextlib.suppress(nvml.NVMLError_GpuIsLost):
                    mig.extend(_mig_instances(s, index, handle))
        facts = NodeFacts(driver=driver, gpus=gpus, mig_instances=mig if mig_capable else None)
        if s.problems:
            facts.problems["gpus"] = "; ".join(s.problems)
        return facts
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def collect_json(nvml: Any) -> dict[str, Any]:
    """The ``nvml.json`` snapshot document: the collected driver, gpus and mig_instances (and problems)."""
    facts = collect(nvml)
    data: dict[str, Any] = {
        "driver": to_jsonable(facts.driver),
        "gpus": to_jsonable(facts.gpus),
        "mig_instances": to_jsonable(facts.mig_instances),
    }
    if facts.problems:
        data["problems"] = dict(facts.problems)
    return data


def _cuda_version(value: int) -> str:
    """NVML's CUDA driver version integer as nvidia-smi prints it: 12020 -> 12.2."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def _gpu(s: _Session, index: int, h: Any) -> Gpu:
    nvml = s.nvml
    p = f"GPU {index}"
    gpu = Gpu(index=index)
    gpu.name = s.get(f"{p} name", lambda: _text(nvml.nvmlDeviceGetName(h)))
    gpu.uuid = s.get(f"{p} UUID", lambda: _text(nvml.nvmlDeviceGetUUID(h)))
    gpu.serial = s.get(f"{p} serial", lambda: _text(nvml.nvmlDeviceGetSerial(h)))
    gpu.vbios = s.get(f"{p} VBIOS", lambda: _text(nvml.nvmlDeviceGetVbiosVersion(h)))
    pci = s.get(f"{p} PCI info", lambda: nvml.nvmlDeviceGetPciInfo(h))
    if pci is not None:
        gpu.bus_id = _text(pci.busId)
    arch = s.get(f"{p} architecture", lambda: nvml.nvmlDeviceGetArchitecture(h))
    gpu.architecture = _ARCHITECTURES.get(arch) if arch is not None else None
    memory = s.get(f"{p} memory", lambda: nvml.nvmlDeviceGetMemoryInfo(h))
    if memory is not None:
        gpu.memory_total_mib = int(memory.total) // (1024 * 1024)
    persistence = s.get(f"{p} persistence mode", lambda: nvml.nvmlDeviceGetPersistenceMode(h))
    gpu.persistence_mode = bool(persistence) if persistence is not None else None
    mode = s.get(f"{p} compute mode", lambda: nvml.nvmlDeviceGetComputeMode(h))
    gpu.compute_mode = _COMPUTE_MODES.get(mode) if mode is not None else None
    pstate = s.get(f"{p} performance state", lambda: nvml.nvmlDeviceGetPerformanceState(h))
    gpu.performance_state = f"P{pstate}" if pstate is not None and 0 <= pstate <= 15 else None  # 32: unknown
    util = s.get(f"{p} utilization", lambda: nvml.nvmlDeviceGetUtilizationRates(h))  # NotSupported in MIG mode
    gpu.utilization_gpu_pct = float(util.gpu) if util is not None else None
    _ecc(s, p, h, gpu)
    _memory_health(s, p, h, gpu)
    _pcie(s, p, h, gpu)
    _thermal_power(s, p, h, gpu)
    mig = s.get(f"{p} MIG mode", lambda: nvml.nvmlDeviceGetMigMode(h))
    if mig is not None:
        gpu.mig_mode_current, gpu.mig_mode_pending = bool(mig[0]), bool(mig[1])
    _fabric(s, p, h, gpu)
    gpu.nvlinks = _nvlinks(s, p, h)
    return gpu


def _ecc(s: _Session, p: str, h: Any, gpu: Gpu) -> None:
    nvml = s.nvml
    ecc = s.get(f"{p} ECC mode", lambda: nvml.nvmlDeviceGetEccMode(h))
    if ecc is None:
        return
    gpu.ecc_mode_current, gpu.ecc_mode_pending = bool(ecc[0]), bool(ecc[1])
    if not gpu.ecc_mode_current:
        return
    corrected, uncorrected = nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    volatile, aggregate = nvml.NVML_VOLATILE_ECC, nvml.NVML_AGGREGATE_ECC

    def total(kind: int, scope: int) -> int | None:
        return s.get(f"{p} ECC errors", lambda: int(nvml.nvmlDeviceGetTotalEccErrors(h, kind, scope)))

    gpu.ecc_volatile_corrected = total(corrected, volatile)
    gpu.ecc_volatile_uncorrected = total(uncorrected, volatile)
    gpu.ecc_aggregate_corrected = total(corrected, aggregate)
    gpu.ecc_aggregate_uncorrected = total(uncorrected, aggregate)


def _memory_health(s: _Session, p: str, h: Any, gpu: Gpu) -> None:
    nvml = s.nvml
    rows = s.get(f"{p} remapped rows", lambda: nvml.nvmlDeviceGetRemappedRows(h))
    if rows is not None:
        corr, unc, pending, failure = rows
        gpu.remap_correctable, gpu.remap_uncorrectable = int(corr), int(unc)
        gpu.remap_pending, gpu.remap_failure = bool(pending), bool(failure)
    # HBM parts answer NotSupported: retired pages stay None (nvidia-smi: N/A).
    retired = s.get(f"{p} retired pages", lambda: nvml.nvmlDeviceGetRetiredPagesPendingStatus(h))
    gpu.retired_pages_pending = bool(retired) if retired is not None else None


def _pcie(s: _Session, p: str, h: Any, gpu: Gpu) -> None:
    nvml = s.nvml
    gpu.pcie_gen_current = s.get(f"{p} PCIe gen", lambda: nvml.nvmlDeviceGetCurrPcieLinkGeneration(h))
    gpu.pcie_gen_max = s.get(f"{p} PCIe max gen", lambda: nvml.nvmlDeviceGetMaxPcieLinkGeneration(h))
    gpu.pcie_width_current = s.get(f"{p} PCIe width", lambda: nvml.nvmlDeviceGetCurrPcieLinkWidth(h))
    gpu.pcie_width_max = s.get(f"{p} PCIe max width", lambda: nvml.nvmlDeviceGetMaxPcieLinkWidth(h))


def _thermal_power(s: _Session, p: str, h: Any, gpu: Gpu) -> None:
    nvml = s.nvml
    gpu.temperature_c = s.get(f"{p} temperature", lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU))
    gpu.temperature_slowdown_c = s.get(
        f"{p} slowdown temperature",
        lambda: nvml.nvmlDeviceGetTemperatureThreshold(h, nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
    )
    gpu.temperature_shutdown_c = s.get(
        f"{p} shutdown temperature",
        lambda: nvml.nvmlDeviceGetTemperatureThreshold(h, nvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
    )
    draw = s.get(f"{p} power draw", lambda: nvml.nvmlDeviceGetPowerUsage(h))
    gpu.power_draw_w = draw / 1000 if draw is not None else None  # NVML speaks milliwatts
    limit = s.get(f"{p} power limit", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(h))
    gpu.power_limit_w = limit / 1000 if limit is not None else None
    reasons = s.get(f"{p} clock event reasons", lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(h))
    if reasons is not None:
        gpu.throttle_reasons = [name for bit, name in _THROTTLE_BITS if reasons & bit]


def _fabric(s: _Session, p: str, h: Any, gpu: Gpu) -> None:
    nvml = s.nvml
    if not hasattr(nvml, "nvmlDeviceGetGpuFabricInfo"):
        return  # an nvidia-ml-py older than the fabric API
    info = nvml.c_nvmlGpuFabricInfo_t()
    if s.get(f"{p} fabric info", lambda: nvml.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(info))) is None:
        return  # NotSupported: not in an NVSwitch fabric
    gpu.fabric_state = _FABRIC_STATES.get(int(info.state), str(info.state))
    gpu.fabric_status = "Success" if info.status == nvml.NVML_SUCCESS else str(nvml.NVMLError(info.status))


def _nvlinks(s: _Session, p: str, h: Any) -> list[NvLink] | None:
    nvml = s.nvml
    links: list[NvLink] = []
    for link in range(nvml.NVML_NVLINK_MAX_LINKS):  # stops at the first link NVML refuses
        try:
            active = nvml.nvmlDeviceGetNvLinkState(h, link)
        except (nvml.NVMLError_NotSupported, nvml.NVMLError_FunctionNotFound):
            break  # no NVLink on this GPU (or past the links a driver reports as supported)
        except nvml.NVMLError_InvalidArgument:
            break  # past the last link
        except nvml.NVMLError as exc:
            s.problems.append(f"{p} NVLink {link}: {exc}")
            break
        errors: dict[str, int] = {}
        for name, counter in _NVLINK_COUNTERS:
            value = s.get(f"{p} NVLink {link} {name}", nvml.nvmlDeviceGetNvLinkErrorCounter, h, link, counter)
            if value is not None:
                errors[name] = int(value)
        links.append(NvLink(link=link, active=bool(active), errors=errors))
    return links or None


def _mig_instances(s: _Session, index: int, h: Any) -> list[GpuInstance]:
    nvml = s.nvml
    p = f"GPU {index}"
    instances: list[GpuInstance] = []
    for profile in range(nvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        info = s.get(f"{p} MIG profile {profile}", nvml.nvmlDeviceGetGpuInstanceProfileInfo, h, profile)
        if info is None or info.instanceCount == 0:
            continue
        handles = (nvml.c_nvmlGpuInstance_t * info.instanceCount)()
        count = ctypes.c_uint(0)
        listed = s.get(
            f"{p} GPU instances of profile {info.id}",
            nvml.nvmlDeviceGetGpuInstances,
            h,
            info.id,
            handles,
            ctypes.byref(count),
        )
        if listed is None:
            continue
        name = _mig_name(info.name)
        for k in range(count.value):
            gi = s.get(f"{p} GPU instance info", nvml.nvmlGpuInstanceGetInfo, handles[k])
            if gi is None:
                continue
            instances.append(
                GpuInstance(
                    gpu=index,
                    gi_id=int(gi.id),
                    profile_id=int(gi.profileId),
                    name=name,
                    placement_start=int(gi.placement.start),
                    placement_size=int(gi.placement.size),
                    compute_instances=_compute_instances(s, f"{p} GI {gi.id}", handles[k]),
                )
            )
    return sorted(instances, key=lambda g: g.gi_id)


def _compute_instances(s: _Session, p: str, gi: Any) -> list[ComputeInstance]:
    nvml = s.nvml
    result: list[ComputeInstance] = []
    for profile in range(nvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
        info = s.get(
            f"{p} CI profile {profile}",
            nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo,
            gi,
            profile,
            nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
        )
        if info is None or info.instanceCount == 0:
            continue
        handles = (nvml.c_nvmlComputeInstance_t * info.instanceCount)()
        count = ctypes.c_uint(0)
        listed = s.get(
            f"{p} compute instances of profile {info.id}",
            nvml.nvmlGpuInstanceGetComputeInstances,
            gi,
            info.id,
            handles,
            ctypes.byref(count),
        )
        if listed is None:
            continue
        for k in range(count.value):
            ci = s.get(f"{p} compute instance info", nvml.nvmlComputeInstanceGetInfo, handles[k])
            if ci is None:
                continue
            result.append(
                ComputeInstance(
                    ci_id=int(ci.id),
                    profile_id=int(ci.profileId),
                    name=_mig_name(info.name),
                    placement_start=int(ci.placement.start),
                    placement_size=int(ci.placement.size),
                )
            )
    return sorted(result, key=lambda c: c.ci_id)


# ---- the collector as one self-contained script, for a node reached over SSH ----------------------

_STANDALONE_MAIN = """
def _main():
    import json
    import sys

    try:
        import pynvml
    except ImportError:
        sys.stderr.write("python3 on this node has no nvidia-ml-py (pynvml)\\n")
        return 127
    nvml = _load("_gpulab_nvml.collector", _SOURCES["nvml"])
    try:
        data = nvml.collect_json(pynvml)
    except Exception as exc:  # GpulabError from the collector, or NVML's own
        sys.stderr.write(str(exc) + "\\n")
        return 127 if "not found" in str(exc) else 1
    sys.stdout.write(json.dumps(data, indent=2) + "\\n")
    return 0


sys.exit(_main())
"""


def standalone_script() -> str:
    """This collector as one Python script that needs nothing of gpulab: only python3 and nvidia-ml-py.

    The script carries the sources of :mod:`assessor.errors`, :mod:`assessor.facts` and this module,
    loaded under a private package name (``_gpulab_nvml``) so they never meet an installed gpulab. It prints
    ``nvml.json`` on stdout; without pynvml it exits 127 (the collector is missing), and on an NVML
    error it says why on stderr and exits 1 (127 when no driver library was found).
    """
    from pathlib import Path

    package = Path(__file__).resolve().parents[1]
    sources = {
        "errors": (package / "errors.py").read_text(encoding="utf-8"),
        "facts": (package / "facts.py").read_text(encoding="utf-8"),
        "nvml": (package / "capture" / "nvml.py")
        .read_text(encoding="utf-8")
        .replace("from assessor.errors import", "from _gpulab_nvml.errors import")
        .replace("from assessor.facts import", "from _gpulab_nvml.facts import"),
    }
    lines = [
        "# gpulab's NVML collector, generated from assessor/capture/nvml.py; writes nvml.json on stdout.",
        "import sys",
        "import types",
        "",
        f"_SOURCES = {sources!r}",
        "",
        "",
        "def _load(name, source):",
        "    module = types.ModuleType(name)",
        "    module.__file__ = '<' + name + '>'",
        "    sys.modules[name] = module",
        "    exec(compile(source, module.__file__, 'exec'), module.__dict__)",
        "    return module",
        "",
        "",
        "_package = types.ModuleType('_gpulab_nvml')",
        "_package.__path__ = []",
        "sys.modules['_gpulab_nvml'] = _package",
        "_load('_gpulab_nvml.errors', _SOURCES['errors'])",
        "_load('_gpulab_nvml.facts', _SOURCES['facts'])",
        _STANDALONE_MAIN,
    ]
    return "\n".join(lines)
