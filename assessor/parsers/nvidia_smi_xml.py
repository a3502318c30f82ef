"""``nvidia-smi -q -x``: the driver and every GPU's state, from nvidia-smi's XML log.

The schema changed across drivers (DTD v11, v12, v13, and no DTD at all on R418) and the
parser reads each fact from whichever element the file has:

- ECC counters: ``volatile/single_bit/total`` and ``double_bit/total`` on old drivers;
  ``volatile/sram_correctable``, ``dram_uncorrectable``, ``sram_uncorrectable_parity`` ...
  on newer ones (summed: the facts keep one corrected and one uncorrected count).
- power: ``power_readings`` (v11) or ``gpu_power_readings`` (v12+); the draw is
  ``power_draw``, or ``instant_power_draw`` / ``average_power_draw`` on v13.
- throttle reasons: ``clocks_throttle_reasons`` (v11) or ``clocks_event_reasons`` (v12+).

nvidia-smi's "no value" spellings (N/A, [Not Supported], Unknown Error, ...) become None.
The NVLink state is not part of this XML (it comes from ``nvidia-smi nvlink``), so
``Gpu.nvlinks`` stays None here.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from assessor.errors import ParseError
from assessor.facts import DriverInfo, Gpu, NodeFacts
from assessor.parsers._nvsmi import flag_of, is_not_available, number_of, raise_on_failure, says_no_devices
from assessor.parsers._text import check_input
from assessor.pci import normalize_bus_id

# XML tag suffix -> the name facts.py uses (NVML's constant names, without the prefix).
_THROTTLE_NAMES = {"display_clocks_setting": "display_clock_setting"}

_LOST = re.compile(r"unable to determine the device handle", re.IGNORECASE)


def parse(text: str) -> NodeFacts:
    """Parse ``nvidia-smi -q -x`` output into ``driver`` and ``gpus``.

    Raises ParseError (with the line) for truncated or malformed XML, and a ParseError whose
    message is nvidia-smi's own text when it printed a driver/NVML failure instead of XML.
    "No devices were found" is a valid answer: zero GPUs.
    """
    check_input(text, what="nvidia-smi XML")  # XML needs no paste cleanup, only the byte checks
    start = text.find("<")
    if start < 0 or "<nvidia_smi_log" not in text:
        if says_no_devices(text):
            return NodeFacts(gpus=[])
        raise_on_failure(text)
        first = next((i for i, line in enumerate(text.splitlines(), start=1) if line.strip()), 1)
        raise ParseError("not nvidia-smi XML output (no <nvidia_smi_log> element)", line=first)
    # Anything before the XML (a warning nvidia-smi wrote to the same stream) is skipped; the
    # offset keeps the line numbers of XML errors true to the file.
    offset = text.count("\n", 0, start)
    body = text[start:]
    if "<!ENTITY" in body:
        # nvidia-smi never declares entities; refusing them keeps expat's expansion out.
        line = offset + body.count("\n", 0, body.index("<!ENTITY")) + 1
        raise ParseError("XML entity declarations are not nvidia-smi output", line=line)
    doctype = body.find("<!DOCTYPE")
    if doctype >= 0:
        end = body.find(">", doctype)
        if "[" in body[doctype : end if end >= 0 else len(body)]:
            # An internal subset can declare attribute defaults that expat copies into every
            # element (gigabytes from a megabyte); nvidia-smi only ever names its external DTD.
            line = offset + body.count("\n", 0, doctype) + 1
            raise ParseError("an XML DOCTYPE internal subset is not nvidia-smi output", line=line)
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        line, _column = exc.position
        raise ParseError(f"malformed nvidia-smi XML: {exc}", line=offset + line) from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"root element is <{root.tag}>, expected <nvidia_smi_log>", line=offset + 1)

    driver = DriverInfo(version=_text(root, "driver_version"), cuda_version=_text(root, "cuda_version"))
    elements = root.findall("gpu")
    gpus = [_gpu(index, element) for index, element in enumerate(elements)]
    devices = {
        gpu.index: found
        for gpu, element in zip(gpus, elements, strict=True)
        if gpu.mig_mode_current and (found := _mig_devices(element)) is not None
    }
    facts = NodeFacts(driver=driver, gpus=gpus, mig_compute_gis=devices or None)
    attached = _int(root, "attached_gpus")
    # A GPU lost from the bus is counted in the header but printed as 'Unable to determine the device
    # handle': then the missing block is the fault itself, not a cut.
    if attached is not None and attached >= len(gpus) and _LOST.search(text) is None:
        facts.gpus_attached = attached
        if attached > len(gpus):
            # nvidia-smi -q -x -i N lists one GPU under the count of all: the rest were filtered out.
            facts.partial["gpus"] = f"<attached_gpus> says {attached}, the XML holds {len(gpus)} <gpu> (filtered)"
    return facts


def _gpu(index: int, g: ET.Element) -> Gpu:
    bus_id = normalize_bus_id(g.get("id", "")) or normalize_bus_id(_text(g, "pci/pci_bus_id") or "")
    power = g.find("gpu_power_readings")
    if power is None:
        power = g.find("power_readings")
    volatile_corr, volatile_unc = _ecc_counts(g.find("ecc_errors/volatile"))
    aggregate_corr, aggregate_unc = _ecc_counts(g.find("ecc_errors/aggregate"))
    return Gpu(
        index=index,
        name=_text(g, "product_name"),
        uuid=_text(g, "uuid"),
        serial=_text(g, "serial"),
        bus_id=bus_id,
        architecture=_text(g, "product_architecture"),
        vbios=_text(g, "vbios_version"),
        memory_total_mib=_int(g, "fb_memory_usage/total"),
        persistence_mode=_bool(g, "persistence_mode"),
        ecc_mode_current=_bool(g, "ecc_mode/current_ecc"),
        ecc_mode_pending=_bool(g, "ecc_mode/pending_ecc"),
        ecc_volatile_corrected=volatile_corr,
        ecc_volatile_uncorrected=volatile_unc,
        ecc_aggregate_corrected=aggregate_corr,
        ecc_aggregate_uncorrected=aggregate_unc,
        # pending_blacklist is the pre-R460 name of pending_retirement.
        retired_pages_pending=_first_bool(g, "retired_pages/pending_retirement", "retired_pages/pending_blacklist"),
        remap_correctable=_int(g, "remapped_rows/remapped_row_corr"),
        remap_uncorrectable=_int(g, "remapped_rows/remapped_row_unc"),
        remap_pending=_bool(g, "remapped_rows/remapped_row_pending"),
        remap_failure=_bool(g, "remapped_rows/remapped_row_failure"),
        pcie_gen_current=_int(g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
        pcie_gen_max=_int(g, "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
        pcie_width_current=_int(g, "pci/pci_gpu_link_info/link_widths/current_link_width"),
        pcie_width_max=_int(g, "pci/pci_gpu_link_info/link_widths/max_link_width"),
        temperature_c=_int(g, "temperature/gpu_temp"),
        temperature_slowdown_c=_threshold(g, "slow"),
        temperature_shutdown_c=_threshold(g, "max"),
        power_draw_w=_first_float(power, "power_draw", "instant_power_draw", "average_power_draw"),
        # current_power_limit (v12+) and enforced_power_limit (v11) are the limit in force;
        # v11's power_limit is the one requested, which the enforced one can undercut.
        power_limit_w=_first_float(power, "current_power_limit", "enforced_power_limit", "power_limit"),
        throttle_reasons=_throttle_reasons(g),
        mig_mode_current=_bool(g, "mig_mode/current_mig"),
        mig_mode_pending=_bool(g, "mig_mode/pending_mig"),
        fabric_state=_text(g, "fabric/state"),
        fabric_status=_text(g, "fabric/status"),
        compute_mode=_text(g, "compute_mode"),
        performance_state=_text(g, "performance_state"),
        utilization_gpu_pct=_float(g, "utilization/gpu_util"),
    )


def _threshold(g: ET.Element, kind: str) -> int | None:
    """An absolute temperature threshold (C): ``gpu_temp_<kind>_threshold``, or from a T.Limit GPU's spelling.

    T.Limit GPUs (Hopper, Ada and Blackwell from R550: 580 H100 and 595 L40S captures) give the thresholds
    relative to the T.Limit point (``gpu_temp_max_tlimit_threshold`` -8 C) and the margin to it
    (``gpu_temp_tlimit`` 57 C at ``gpu_temp`` 30 C): the point is 87 C, the threshold 87 - (-8) = 95 C.
    """
    absolute = _int(g, f"temperature/gpu_temp_{kind}_threshold")
    if absolute is not None:
        return absolute
    relative = _int(g, f"temperature/gpu_temp_{kind}_tlimit_threshold")
    current, margin = _int(g, "temperature/gpu_temp"), _int(g, "temperature/gpu_temp_tlimit")
    if relative is None or current is None or margin is None:
        return None
    return current + margin - relative


def _mig_devices(g: ET.Element) -> list[int] | None:
    """The GPU instance id of each ``<mig_device>``; ``<mig_devices>None</mig_devices>`` is none, absent unknown.

    A GPU instance without a compute instance has no MIG device, so it is missing here.
    """
    block = g.find("mig_devices")
    if block is None:
        return None
    out = []
    for dev in block.findall("mig_device"):
        gi = _text(dev, "gpu_instance_id")
        if gi is not None and gi.isdigit():
            out.append(int(gi))
    return out


def _text(parent: ET.Element | None, path: str) -> str | None:
    """The stripped text at ``path``; None when absent or one of nvidia-smi's N/A spellings."""
    if parent is None:
        return None
    element = parent.find(path)
    if element is None or element.text is None:
        return None
    # Some drivers wrap values over lines ("Not Active\n            ").
    value = " ".join(element.text.split())
    return None if is_not_available(value) else value


def _float(parent: ET.Element | None, path: str) -> float | None:
    return number_of(_text(parent, path))


def _int(parent: ET.Element | None, path: str) -> int | None:
    value = _float(parent, path)
    return None if value is None else int(value)


def _bool(parent: ET.Element | None, path: str) -> bool | None:
    return flag_of(_text(parent, path))


def _first_bool(parent: ET.Element, *paths: str) -> bool | None:
    for path in paths:
        value = _bool(parent, path)
        if value is not None:
            return value
    return None


def _first_float(parent: ET.Element | None, *paths: str) -> float | None:
    for path in paths:
        value = _float(parent, path)
        if value is not None:
            return value
    return None


def _ecc_counts(section: ET.Element | None) -> tuple[int | None, int | None]:
    """(corrected, uncorrected) ECC error totals of a ``volatile`` or ``aggregate`` element.

    Old schema: ``single_bit/total`` (corrected) and ``double_bit/total`` (uncorrected). New
    schema: leaf counters named ``*_correctable`` / ``*_uncorrectable*`` summed over SRAM and
    DRAM. A total is None when no counter in it has a value (N/A on GeForce, or in MIG mode).
    """
    if section is None:
        return None, None
    if section.find("single_bit") is not None or section.find("double_bit") is not None:
        return _int(section, "single_bit/total"), _int(section, "double_bit/total")
    corrected: list[int] = []
    uncorrected: list[int] = []
    for child in section:
        if len(child):
            continue
        value = _int(section, child.tag)
        if value is None:
            continue
        if "uncorrectable" in child.tag:
            uncorrected.append(value)
        elif "correctable" in child.tag:
            corrected.append(value)
        # other leaves (sram_threshold_exceeded) are flags, not counts
    return (sum(corrected) if corrected else None, sum(uncorrected) if uncorrected else None)


def _throttle_reasons(g: ET.Element) -> list[str] | None:
    """Active clock throttle reasons by NVML name; None when the XML does not report them."""
    for section, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
    ):
        element = g.find(section)
        if element is None:
            continue
        reasons: list[str] = []
        known = False
        for child in element:
            if not child.tag.startswith(prefix):
                continue
            state = _bool(element, child.tag)
            if state is None:
                continue
            known = True
            if state:
                name = child.tag[len(prefix) :]
                reasons.append(_THROTTLE_NAMES.get(name, name))
        # NVML bit order (gpu_idle 0x1 ... display_clock_setting 0x100), as the NVML collector lists them
        reasons.sort(key=lambda r: _REASON_ORDER.index(r) if r in _REASON_ORDER else len(_REASON_ORDER))
        return reasons if known else None
    return None


_REASON_ORDER = (
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "display_clock_setting",
)
