"""NVML and the simulated ``nvidia-smi -q -x`` agree on every fact both report, on every fixture and fault.

Two layers: the facts the readiness checks use (:func:`assessor.capture.nvml.collect` through the mock against
:mod:`assessor.parsers.nvidia_smi_xml` on the simulated XML), and the wider set monitoring code reads
(memory v1/v2, utilisation, fan, brand, display, clocks, power limits, thresholds, PCIe replays, retired
pages, MIG devices, processes), read element by element from the XML.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pynvml
import pytest

from assessor.capture.nvml import collect
from assessor.parsers import nvidia_smi_xml
from assessor.sim import faults
from assessor.sim.fixtures import fixture_names, load_fixture
from assessor.sim.mock_nvml import MockNvml
from assessor.sim.state import ComputeInstanceState, GpuInstanceState, GpuProcess, NodeState, RetiredPages
from assessor.sim.tools import Session, run_tool

NA = None
MIB = 1024 * 1024


def _mig_node() -> NodeState:
    state = load_fixture("hgx-h100")
    gpu = state.gpus[1]
    gpu.mig_mode_current = gpu.mig_mode_pending = True
    gpu.mig_instances = [
        GpuInstanceState(1, 9, "3g.40gb", 4, 4, [ComputeInstanceState(0, 2, "3g.40gb", 0, 3)]),
        GpuInstanceState(5, 14, "2g.20gb", 0, 2, [ComputeInstanceState(0, 1, "2g.20gb", 0, 2)]),
    ]
    return state


def _retiring_node() -> NodeState:
    state = load_fixture("pcie-l40s")
    gpu = state.gpus[2]
    gpu.remapped_rows = None
    gpu.retired_pages = RetiredPages(single_bit=3, double_bit=1, pending=True)
    gpu.processes = [GpuProcess(4242, "python3", "C", 1024)]
    gpu.memory_used_mib = 1024
    return state


def _faulted(name: str) -> Callable[[], NodeState]:
    def build() -> NodeState:
        state = load_fixture("dgx-a100")
        faults.FAULTS[name].apply(state)
        return state

    return build


NODES: dict[str, Callable[[], NodeState]] = {
    **{f: (lambda f=f: load_fixture(f)) for f in fixture_names()},  # type: ignore[misc]
    "hgx-h100 with MIG instances": _mig_node,
    "l40s retiring pages, a process": _retiring_node,
    **{f"dgx-a100 + {f}": _faulted(f) for f in ("row-remap-pending", "ecc-uncorrectable", "thermal-throttle")},
    **{f"dgx-a100 + {f}": _faulted(f) for f in ("persistence-off", "mig-pending", "pcie-degraded")},
}


def _xml(state: NodeState) -> ET.Element:
    return ET.fromstring(run_tool(["nvidia-smi", "-q", "-x"], Session(state=state)).stdout.split("\n", 2)[2])


def _val(gpu: ET.Element, path: str) -> str | None:
    node = gpu.find(path)
    text = node.text.strip() if node is not None and node.text else None
    return None if text in (None, "N/A") else text


def _num(gpu: ET.Element, path: str) -> float | None:
    text = _val(gpu, path)
    return None if text is None else float(text.split()[0])


def _threshold(gpu: ET.Element, kind: str) -> float | None:
    """An absolute threshold; a T.Limit GPU (580 H100 capture) gives it relative to its T.Limit point.

    That point is gpu_temp + gpu_temp_tlimit; the memory threshold is not on that scale, so it is not compared.
    """
    absolute = _num(gpu, f"temperature/gpu_temp_{kind}_threshold")
    if absolute is not None or gpu.find(f"temperature/gpu_temp_{kind}_tlimit_threshold") is None:
        return absolute
    relative, now, margin = (
        _num(gpu, f"temperature/gpu_temp_{kind}_tlimit_threshold"),
        _num(gpu, "temperature/gpu_temp"),
        _num(gpu, "temperature/gpu_temp_tlimit"),
    )
    if kind == "max_mem" or None in (relative, now, margin):
        return _MEMORY_ON_TLIMIT
    assert relative is not None and now is not None and margin is not None
    return now + margin - relative


_MEMORY_ON_TLIMIT = -1.0  # a marker: the memory threshold of a T.Limit GPU, not in the XML as degrees


def _width(gpu: ET.Element, tag: str) -> float | None:
    text = _val(gpu, f"pci/pci_gpu_link_info/link_widths/{tag}")
    return None if text is None else float(text.rstrip("x"))


def _smi_facts(gpu: ET.Element) -> dict[str, Any]:
    enabled = {"Enabled": 1, "Disabled": 0}
    ecc: dict[str, float | None] = {}
    for scope in ("volatile", "aggregate"):
        counts = {e.tag: e.text for e in gpu.findall(f"ecc_errors/{scope}/*")}
        for kind, wanted in (("corrected", ("correctable",)), ("uncorrected", ("uncorrectable",))):
            # sram_uncorrectable, or its parity/secded halves (R550+); dram_*: the HBM.
            tags = [t for t in counts if t.split("_", 1)[-1].split("_")[0] in wanted]
            values = [counts[t] for t in tags]
            ecc[f"ecc {scope} {kind}"] = (
                None if not values or None in values or "N/A" in values else sum(float(v or 0) for v in values)
            )
    migs = gpu.findall("mig_devices/mig_device")
    return {
        "name": _val(gpu, "product_name"),
        "uuid": _val(gpu, "uuid"),
        "serial": _val(gpu, "serial"),
        "vbios": _val(gpu, "vbios_version"),
        "minor": _num(gpu, "minor_number"),
        "board part": _val(gpu, "board_part_number"),
        "pci device id": int(_val(gpu, "pci/pci_device_id") or "0", 16),
        "bus id": _val(gpu, "pci/pci_bus_id"),
        "brand": _val(gpu, "product_brand"),
        "display mode": enabled.get(_val(gpu, "display_mode") or ""),
        "display active": enabled.get(_val(gpu, "display_active") or ""),
        "persistence": enabled.get(_val(gpu, "persistence_mode") or ""),
        "mig": None
        if _val(gpu, "mig_mode/current_mig") is None
        else [enabled[_val(gpu, "mig_mode/current_mig") or ""], enabled[_val(gpu, "mig_mode/pending_mig") or ""]],
        "mig devices": len(migs),
        "fan": _num(gpu, "fan_speed"),
        "pstate": _val(gpu, "performance_state"),
        "memory total": _num(gpu, "fb_memory_usage/total"),
        "memory reserved": _num(gpu, "fb_memory_usage/reserved"),
        "memory used": _num(gpu, "fb_memory_usage/used"),
        "memory free": _num(gpu, "fb_memory_usage/free"),
        "util gpu": _num(gpu, "utilization/gpu_util"),
        "util memory": _num(gpu, "utilization/memory_util"),
        "ecc mode": None
        if _val(gpu, "ecc_mode/current_ecc") is None
        else [enabled[_val(gpu, "ecc_mode/current_ecc") or ""], enabled[_val(gpu, "ecc_mode/pending_ecc") or ""]],
        **ecc,
        "retired sbe": _num(gpu, "retired_pages/multiple_single_bit_retirement/retired_count"),
        "retired dbe": _num(gpu, "retired_pages/double_bit_retirement/retired_count"),
        "retired pending": None
        if _val(gpu, "retired_pages/pending_retirement") is None
        else int(_val(gpu, "retired_pages/pending_retirement") == "Yes"),
        "temperature": _num(gpu, "temperature/gpu_temp"),
        "shutdown": _threshold(gpu, "max"),
        "slowdown": _threshold(gpu, "slow"),
        "max operating": _threshold(gpu, "max_gpu"),
        "memory max": _threshold(gpu, "max_mem"),
        "power draw": _num(gpu, "gpu_power_readings/power_draw") or _num(gpu, "gpu_power_readings/instant_power_draw"),
        "power limit": _num(gpu, "gpu_power_readings/current_power_limit"),
        "power default": _num(gpu, "gpu_power_readings/default_power_limit"),
        "power min": _num(gpu, "gpu_power_readings/min_power_limit"),
        "power max": _num(gpu, "gpu_power_readings/max_power_limit"),
        **{f"clock {k}": _num(gpu, f"clocks/{k}_clock") for k in ("graphics", "sm", "mem", "video")},
        **{f"max clock {k}": _num(gpu, f"max_clocks/{k}_clock") for k in ("graphics", "sm", "mem", "video")},
        "pcie gen": [
            _num(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
            _num(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
        ],
        "pcie width": [_width(gpu, "current_link_width"), _width(gpu, "max_link_width")],
        "pcie replays": _num(gpu, "pci/replay_counter"),
        "fabric": _val(gpu, "fabric/state"),
        "processes": sorted(int(_val(p, "pid") or 0) for p in gpu.findall("processes/process_info")),
    }


_FABRIC = {
    pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED: "Not Started",
    pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS: "In Progress",
    pynvml.NVML_GPU_FABRIC_STATE_COMPLETED: "Completed",
}


def _nvml_facts(nvml: MockNvml, h: Any) -> dict[str, Any]:
    def get(func: Callable[..., Any], *args: Any) -> Any:
        try:
            return func(h, *args)
        except pynvml.NVMLError_NotSupported:
            return None

    def fabric() -> str | None:
        info = pynvml.c_nvmlGpuFabricInfo_t()
        if get(nvml.nvmlDeviceGetGpuFabricInfo, pynvml.byref(info)) is None:
            return None
        return _FABRIC[info.state]

    v2 = nvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
    util = get(nvml.nvmlDeviceGetUtilizationRates)
    ecc_mode = get(nvml.nvmlDeviceGetEccMode)
    ecc: dict[str, int | None] = {}
    for scope, counter in (("volatile", pynvml.NVML_VOLATILE_ECC), ("aggregate", pynvml.NVML_AGGREGATE_ECC)):
        for kind, etype in (
            ("corrected", pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
            ("uncorrected", pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
        ):
            ecc[f"ecc {scope} {kind}"] = get(nvml.nvmlDeviceGetTotalEccErrors, etype, counter)
    sbe = get(nvml.nvmlDeviceGetRetiredPages, pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
    dbe = get(nvml.nvmlDeviceGetRetiredPages, pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
    max_mig = nvml.nvmlDeviceGetMaxMigDeviceCount(h)
    mig_devices = 0
    for i in range(max_mig):
        try:
            nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
            mig_devices += 1
        except pynvml.NVMLError_NotFound:
            pass
    mw = 1000.0
    clocks = (
        ("graphics", pynvml.NVML_CLOCK_GRAPHICS),
        ("sm", pynvml.NVML_CLOCK_SM),
        ("mem", pynvml.NVML_CLOCK_MEM),
        ("video", pynvml.NVML_CLOCK_VIDEO),
    )
    limits = get(nvml.nvmlDeviceGetPowerManagementLimitConstraints)
    return {
        "name": nvml.nvmlDeviceGetName(h),
        "uuid": nvml.nvmlDeviceGetUUID(h),
        "serial": nvml.nvmlDeviceGetSerial(h),
        "vbios": nvml.nvmlDeviceGetVbiosVersion(h),
        "minor": nvml.nvmlDeviceGetMinorNumber(h),
        "board part": get(nvml.nvmlDeviceGetBoardPartNumber),
        "pci device id": nvml.nvmlDeviceGetPciInfo(h).pciDeviceId,
        "bus id": nvml.nvmlDeviceGetPciInfo(h).busId,
        "brand": {pynvml.NVML_BRAND_NVIDIA: "NVIDIA"}.get(nvml.nvmlDeviceGetBrand(h)),
        "display mode": nvml.nvmlDeviceGetDisplayMode(h),
        "display active": nvml.nvmlDeviceGetDisplayActive(h),
        "persistence": nvml.nvmlDeviceGetPersistenceMode(h),
        "mig": get(nvml.nvmlDeviceGetMigMode),
        "mig devices": mig_devices,
        "fan": get(nvml.nvmlDeviceGetFanSpeed),
        "pstate": f"P{nvml.nvmlDeviceGetPerformanceState(h)}",
        "memory total": v2.total / MIB,
        "memory reserved": v2.reserved / MIB,
        "memory used": v2.used / MIB,
        "memory free": v2.free / MIB,
        "util gpu": None if util is None else util.gpu,
        "util memory": None if util is None else util.memory,
        "ecc mode": ecc_mode,
        **ecc,
        "retired sbe": None if sbe is None else len(sbe),
        "retired dbe": None if dbe is None else len(dbe),
        "retired pending": get(nvml.nvmlDeviceGetRetiredPagesPendingStatus),
        "temperature": nvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
        "shutdown": get(nvml.nvmlDeviceGetTemperatureThreshold, pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
        "slowdown": get(nvml.nvmlDeviceGetTemperatureThreshold, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
        "max operating": get(nvml.nvmlDeviceGetTemperatureThreshold, pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX),
        "memory max": get(nvml.nvmlDeviceGetTemperatureThreshold, pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX),
        "power draw": nvml.nvmlDeviceGetPowerUsage(h) / mw,
        "power limit": nvml.nvmlDeviceGetEnforcedPowerLimit(h) / mw,
        "power default": nvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / mw,
        "power min": None if limits is None else limits[0] / mw,
        "power max": None if limits is None else limits[1] / mw,
        **{f"clock {k}": get(nvml.nvmlDeviceGetClockInfo, c) for k, c in clocks},
        **{f"max clock {k}": get(nvml.nvmlDeviceGetMaxClockInfo, c) for k, c in clocks},
        "pcie gen": [nvml.nvmlDeviceGetCurrPcieLinkGeneration(h), nvml.nvmlDeviceGetMaxPcieLinkGeneration(h)],
        "pcie width": [nvml.nvmlDeviceGetCurrPcieLinkWidth(h), nvml.nvmlDeviceGetMaxPcieLinkWidth(h)],
        "pcie replays": nvml.nvmlDeviceGetPcieReplayCounter(h),
        "fabric": fabric(),
        "processes": sorted(p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(h)),
    }


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return round(float(a), 2) == round(float(b), 2)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.mark.parametrize("node", list(NODES))
def test_nvml_and_nvidia_smi_xml_report_the_same_value_for_every_fact(node: str) -> None:
    state = NODES[node]()
    root = _xml(state)
    nvml = MockNvml(state)
    nvml.nvmlInit()
    gpus = root.findall("gpu")
    assert len(gpus) == len([g for g in state.gpus if not g.lost]) > 0
    for index, element in enumerate(gpus):
        smi = _smi_facts(element)
        api = _nvml_facts(nvml, nvml.nvmlDeviceGetHandleByIndex(index))
        assert smi.keys() == api.keys()
        wrong = {k: (smi[k], api[k]) for k in smi if smi[k] != _MEMORY_ON_TLIMIT and not _same(smi[k], api[k])}
        assert not wrong, f"{node} GPU {index}: nvidia-smi vs NVML {wrong}"


@pytest.mark.parametrize("node", list(NODES))
def test_the_collector_s_facts_equal_the_xml_parser_s_facts(node: str) -> None:
    state = NODES[node]()
    through_nvml = collect(MockNvml(state))
    through_xml = nvidia_smi_xml.parse(run_tool(["nvidia-smi", "-q", "-x"], Session(state=state)).stdout)
    assert through_nvml.gpus is not None and through_xml.gpus is not None
    for a, b in zip(through_nvml.gpus, through_xml.gpus, strict=True):
        left = {k: v for k, v in dataclasses.asdict(a).items() if k != "nvlinks"}  # -q -x has no NVLink section
        right = {k: v for k, v in dataclasses.asdict(b).items() if k != "nvlinks"}
        assert left == right
    assert through_nvml.driver is not None and through_xml.driver is not None
    assert (through_nvml.driver.version, through_nvml.driver.cuda_version) == (
        through_xml.driver.version,
        through_xml.driver.cuda_version,
    )
