"""``nvidia-smi -q`` as text: the form most often pasted in bug reports.

::

    ==============NVSMI LOG==============
    Driver Version                            : 565.57.01
    CUDA Version                              : 12.7
    Attached GPUs                             : 8
    GPU 00000000:18:00.0
        Product Name                          : NVIDIA H100 80GB HBM3
        Persistence Mode                      : Enabled
        MIG Mode
            Current                           : Disabled
        ...

Every GPU block starts with ``GPU <bus id>``; inside it, a line without `` : `` opens a section
and the indentation says how deep. Each value is read by its path of section names (lower
case), so a key renamed between drivers is looked up under each of its names, as the XML
parser does with elements: ``Clocks Throttle Reasons`` (before R535) and ``Clocks Event
Reasons``, ``Power Readings`` and ``GPU Power Readings``, ``Ecc Mode`` and ``ECC Mode``, the
single/double-bit ECC totals of old drivers and the SRAM/DRAM counters of new ones.

``-q -d ECC`` and other partial outputs give the facts they hold; the rest stays unknown. The
``Attached GPUs`` header counts every GPU even when the output holds fewer blocks (``-q -i 0``, a
paste cut after GPU 0): the count is kept as ``gpus_attached`` and ``partial`` says the rest was cut.
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import DriverInfo, Gpu, NodeFacts
from assessor.parsers._nvsmi import check_text, flag_of, is_not_available, number_of, raise_on_failure, says_no_devices
from assessor.pci import normalize_bus_id

_GPU_HEADER = re.compile(r"^GPU\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")

# Clock event/throttle reason labels -> the NVML names facts.py uses.
_REASONS = {
    "idle": "gpu_idle",
    "gpu idle": "gpu_idle",
    "applications clocks setting": "applications_clocks_setting",
    "sw power cap": "sw_power_cap",
    "hw slowdown": "hw_slowdown",
    "sync boost": "sync_boost",
    "sw thermal slowdown": "sw_thermal_slowdown",
    "hw thermal slowdown": "hw_thermal_slowdown",
    "hw power brake slowdown": "hw_power_brake_slowdown",
    "display clock setting": "display_clock_setting",
}
_REASON_ORDER = tuple(dict.fromkeys(_REASONS.values()))
_REASON_SECTIONS = ("clocks event reasons", "clocks throttle reasons")
_POWER_SECTIONS = ("gpu power readings", "power readings")

Values = dict[str, str]  # "section/sub/key" (lower case) -> value as printed

_LOST = re.compile(r"unable to determine the device handle", re.IGNORECASE)
_GPU_HEADER_LINE = re.compile(r"^[ \t]*GPU[ \t]+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7][ \t]*$", re.M)


def _has_q_output(body: str) -> bool:
    """Whether the cleaned text holds the NVSMI LOG banner or a ``GPU <bus id>`` line at all."""
    return "NVSMI LOG" in body or _GPU_HEADER_LINE.search(body) is not None


def parse(text: str) -> NodeFacts:
    """Parse ``nvidia-smi -q`` text into ``driver`` and ``gpus``.

    "No devices were found" gives no GPUs; nvidia-smi's driver/NVML failure text raises a
    ParseError carrying it; text with neither the NVSMI LOG banner nor a ``GPU <bus id>`` block
    raises a ParseError naming its first line.
    """
    lines = check_text(text)
    if says_no_devices(text):
        return NodeFacts(gpus=[])
    if not _has_q_output("\n".join(lines)):
        # Neither the banner nor a GPU block anywhere: one search instead of a walk over every line.
        raise_on_failure(text)
        first = next((i for i, raw in enumerate(lines, start=1) if raw.strip()), 1)
        raise ParseError("not nvidia-smi -q output (no NVSMI LOG banner, no 'GPU <bus id>' block)", line=first)
    top: Values = {}
    blocks: list[tuple[str, Values]] = []
    stack: list[tuple[int, str]] = []  # open sections: (indent, lower-case name)
    banner = False
    for raw in lines:
        line = raw.rstrip()
        if not line.strip():
            continue
        stripped = line.strip()
        if stripped.startswith("=====") and "NVSMI LOG" in stripped:
            banner = True
            continue
        if m := _GPU_HEADER.match(stripped):
            blocks.append((m["bus"], {}))
            stack = []
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key, sep, value = stripped.partition(" :")
        if not sep and stripped.endswith(":"):
            key, sep, value = stripped[:-1], ":", ""
        name = " ".join(key.split()).lower()
        if not sep:
            stack.append((indent, name))
            continue
        path = "/".join([*(s for _, s in stack), name])
        target = blocks[-1][1] if blocks else top
        target.setdefault(path, value.strip())
    if not blocks and not banner:
        raise_on_failure(text)
        first = next((i for i, raw in enumerate(lines, start=1) if raw.strip()), 1)
        raise ParseError("not nvidia-smi -q output (no NVSMI LOG banner, no 'GPU <bus id>' block)", line=first)
    driver = DriverInfo(version=_text(top, "driver version"), cuda_version=_text(top, "cuda version"))
    gpus = [_gpu(index, bus, values) for index, (bus, values) in enumerate(blocks)]
    facts = NodeFacts(driver=driver, gpus=gpus)
    attached = _int(top, "attached gpus")
    # A GPU lost from the bus is counted in the header but printed as 'Unable to determine the device
    # handle': then the missing block is the fault itself, not a cut.
    if attached is not None and attached >= len(gpus) and _LOST.search(text) is None:
        facts.gpus_attached = attached
        if attached > len(gpus):
            shown = ", ".join(g.bus_id or str(g.index) for g in gpus) or "none"
            facts.partial["gpus"] = (
                f"'Attached GPUs : {attached}' but {len(gpus)} GPU block(s) ({shown}): the output was cut or "
                "filtered, the GPU count is taken from the header"
            )
    return facts


def _gpu(index: int, bus: str, v: Values) -> Gpu:
    volatile = _ecc_counts(v, "ecc errors/volatile")
    aggregate = _ecc_counts(v, "ecc errors/aggregate")
    return Gpu(
        index=index,
        name=_text(v, "product name"),
        uuid=_text(v, "gpu uuid"),
        serial=_text(v, "serial number"),
        bus_id=normalize_bus_id(bus) or normalize_bus_id(_text(v, "pci/bus id") or ""),
        architecture=_text(v, "product architecture"),
        vbios=_text(v, "vbios version"),
        memory_total_mib=_int(v, "fb memory usage/total"),
        persistence_mode=_bool(v, "persistence mode"),
        ecc_mode_current=_bool(v, "ecc mode/current"),
        ecc_mode_pending=_bool(v, "ecc mode/pending"),
        ecc_volatile_corrected=volatile[0],
        ecc_volatile_uncorrected=volatile[1],
        ecc_aggregate_corrected=aggregate[0],
        ecc_aggregate_uncorrected=aggregate[1],
        retired_pages_pending=_first_bool(
            v, "retired pages/pending page retirement", "retired pages/pending page blacklist", "retired pages/pending"
        ),
        remap_correctable=_int(v, "remapped rows/correctable error"),
        remap_uncorrectable=_int(v, "remapped rows/uncorrectable error"),
        remap_pending=_bool(v, "remapped rows/pending"),
        remap_failure=_bool(v, "remapped rows/remapping failure occurred"),
        pcie_gen_current=_int(v, "pci/gpu link info/pcie generation/current"),
        pcie_gen_max=_int(v, "pci/gpu link info/pcie generation/max"),
        pcie_width_current=_int(v, "pci/gpu link info/link width/current"),
        pcie_width_max=_int(v, "pci/gpu link info/link width/max"),
        temperature_c=_int(v, "temperature/gpu current temp"),
        # "GPU Slowdown T.Limit Temp" (R550+) is relative to the limit, not a threshold: not read.
        temperature_slowdown_c=_int(v, "temperature/gpu slowdown temp"),
        temperature_shutdown_c=_int(v, "temperature/gpu shutdown temp"),
        power_draw_w=_first_float(
            v,
            *(
                f"{s}/{k}"
                for s in _POWER_SECTIONS
                for k in ("power draw", "instantaneous power draw", "average power draw")
            ),
        ),
        power_limit_w=_first_float(
            v,
            *(
                f"{s}/{k}"
                for s in _POWER_SECTIONS
                for k in ("current power limit", "enforced power limit", "power limit")
            ),
        ),
        throttle_reasons=_throttle_reasons(v),
        mig_mode_current=_bool(v, "mig mode/current"),
        mig_mode_pending=_bool(v, "mig mode/pending"),
        fabric_state=_text(v, "fabric/state"),
        fabric_status=_text(v, "fabric/status"),
        compute_mode=_text(v, "compute mode"),
        performance_state=_text(v, "performance state"),
        utilization_gpu_pct=_float(v, "utilization/gpu"),
    )


def _text(v: Values, path: str) -> str | None:
    value = v.get(path)
    if value is None:
        return None
    value = " ".join(value.split())
    return None if is_not_available(value) else value


def _float(v: Values, path: str) -> float | None:
    return number_of(_text(v, path))


def _int(v: Values, path: str) -> int | None:
    value = _float(v, path)
    return None if value is None else int(value)


def _bool(v: Values, path: str) -> bool | None:
    return flag_of(_text(v, path))


def _first_bool(v: Values, *paths: str) -> bool | None:
    for path in paths:
        if (value := _bool(v, path)) is not None:
            return value
    return None


def _first_float(v: Values, *paths: str) -> float | None:
    for path in paths:
        if (value := _float(v, path)) is not None:
            return value
    return None


def _ecc_counts(v: Values, section: str) -> tuple[int | None, int | None]:
    """(corrected, uncorrected) under ``ecc errors/volatile`` or ``/aggregate``.

    Old drivers: ``Single Bit/Total`` (corrected) and ``Double Bit/Total`` (uncorrected); new
    ones: ``SRAM Correctable``, ``DRAM Uncorrectable``, ``SRAM Uncorrectable Parity`` ... summed.
    """
    prefix = section + "/"
    if any(k.startswith(prefix + "single bit/") or k.startswith(prefix + "double bit/") for k in v):
        return _int(v, prefix + "single bit/total"), _int(v, prefix + "double bit/total")
    corrected: list[int] = []
    uncorrected: list[int] = []
    for key in v:
        if not key.startswith(prefix) or "/" in key[len(prefix) :]:
            continue
        value = _int(v, key)
        if value is None:
            continue
        leaf = key[len(prefix) :]
        if "uncorrectable" in leaf:
            uncorrected.append(value)
        elif "correctable" in leaf:
            corrected.append(value)
    return (sum(corrected) if corrected else None, sum(uncorrected) if uncorrected else None)


def _throttle_reasons(v: Values) -> list[str] | None:
    """Active clock event/throttle reasons by NVML name; None when the output has none."""
    for section in _REASON_SECTIONS:
        prefix = section + "/"
        reasons: list[str] = []
        known = False
        for key in v:
            if not key.startswith(prefix):
                continue
            name = _REASONS.get(key[len(prefix) :].rsplit("/", 1)[-1])
            state = _bool(v, key)
            if name is None or state is None:
                continue
            known = True
            if state and name not in reasons:
                reasons.append(name)
        if known:
            return sorted(reasons, key=_REASON_ORDER.index)
    return None
