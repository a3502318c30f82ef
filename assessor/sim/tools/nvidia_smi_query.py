"""``nvidia-smi -q`` (text), ``-q -x`` (XML) and ``--query-gpu=... --format=csv`` from a node state.

The XML follows the R535 layout (``nvsmi_device_v12.dtd``, corpus ``nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml``);
the text follows the R565 ``-q`` of an H100 (corpus ``nvml/nvidia_smi_q_H100_SXM_gpu0.txt``). Both say ``N/A``
where the state says ``None``, and, as the real driver does, report row remapping as ``N/A`` while MIG mode is on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from assessor.sim import gpu_memory
from assessor.sim.state import THROTTLE_REASON_BITS, GpuState, NodeState, gpu_utilization
from assessor.sim.tools.nvidia_smi_common import enabled

NA = "N/A"


def escape(text: str) -> str:
    """XML character data: ``&``, ``<`` and ``>`` escaped (xml.sax.saxutils pulls in urllib and ssl)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# State throttle-reason keys in the order nvidia-smi lists them, with their XML tag suffix and -q label.
_REASONS: list[tuple[str, str, str]] = [
    ("gpu_idle", "gpu_idle", "Idle"),
    ("applications_clocks_setting", "applications_clocks_setting", "Applications Clocks Setting"),
    ("sw_power_cap", "sw_power_cap", "SW Power Cap"),
    ("hw_slowdown", "hw_slowdown", "HW Slowdown"),
    ("hw_thermal_slowdown", "hw_thermal_slowdown", "HW Thermal Slowdown"),
    ("hw_power_brake_slowdown", "hw_power_brake_slowdown", "HW Power Brake Slowdown"),
    ("sync_boost", "sync_boost", "Sync Boost"),
    ("sw_thermal_slowdown", "sw_thermal_slowdown", "SW Thermal Slowdown"),
    ("display_clock_setting", "display_clocks_setting", "Display Clock Setting"),
]


def timestamp(now: datetime | None = None) -> str:
    """nvidia-smi's timestamp: ``Fri Aug  4 11:44:30 2023``."""
    return (now or datetime.now()).strftime("%a %b %e %H:%M:%S %Y")


def remap_visible(gpu: GpuState) -> bool:
    """Row remapping is reported (not N/A): supported, and MIG mode off (the driver hides it in MIG mode)."""
    return gpu.remapped_rows is not None and not gpu.mig_mode_current


def memory_free_mib(gpu: GpuState) -> int:
    return max(gpu.memory_total_mib - gpu.memory_reserved_mib - gpu_memory.used_mib(gpu), 0)


def throttle_mask(gpu: GpuState) -> int:
    mask = 0
    for reason in gpu.throttle_reasons:
        mask |= THROTTLE_REASON_BITS.get(reason, 0)
    return mask


def mig_uuid(gpu: GpuState, gi_id: int, ci_id: int) -> str:
    """A deterministic MIG device UUID (MIG-8-4-4-4-12) for a GPU's GI/CI pair."""
    import hashlib  # here: OpenSSL's start-up costs every shim call otherwise

    h = hashlib.sha256(f"{gpu.uuid}:{gi_id}:{ci_id}".encode()).hexdigest()
    return f"MIG-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _driver_major(state: NodeState) -> int:
    head = state.driver.version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def split_sram_counts(state: NodeState) -> bool:
    """Whether this driver splits SRAM uncorrectable errors into parity and SEC-DED counts.

    535 prints one ``SRAM Uncorrectable`` (corpus nvidia_smi_xml/a100-...-535); 565 and 595 print
    ``SRAM Uncorrectable Parity``/``SEC-DED``, ``SRAM Threshold Exceeded`` and the SRAM sources
    (corpus nvml/nvidia_smi_q_H100_SXM_gpu0.txt, nvidia_smi_xml/rtx-3080-595). 550 is where the
    split is placed here; no fixture has a driver between 535 and 565.
    """
    return _driver_major(state) >= 550


def tlimit_temperatures(state: NodeState, g: GpuState) -> bool:
    """Whether ``-q`` shows T.Limit temperatures instead of absolute thresholds.

    Hopper (H100 SXM 565, H100 NVL 550), Ada (L40S 550.127.05) and Blackwell (B200 580 XML) from R550:
    ``GPU T.Limit Temp : 57 C`` is the margin to the max operating temperature and the thresholds are on
    that scale. Ampere keeps the absolute ones with ``GPU T.Limit Temp : N/A`` (A100 555 capture).
    """
    return g.architecture in ("Hopper", "Ada Lovelace", "Blackwell") and _driver_major(state) >= 550


_SRAM_SOURCES = (
    ("sram_l2", "SRAM L2"),
    ("sram_sm", "SRAM SM"),
    ("sram_microcontroller", "SRAM Microcontroller"),
    ("sram_pcie", "SRAM PCIE"),
    ("sram_other", "SRAM Other"),
)


def _tlimit_margin(g: GpuState) -> str:
    if g.temperature_c is None or g.temperature_max_operating_c is None:
        return NA
    return _temp(g.temperature_max_operating_c - g.temperature_c)


def _watts(value: float | None) -> str:
    return NA if value is None else f"{value:.2f} W"


def _temp(value: int | None) -> str:
    return NA if value is None else f"{value} C"


def _mhz(clocks: dict[str, int], key: str) -> str:
    value = clocks.get(key)
    return NA if value is None else f"{value} MHz"


def _yes(value: bool) -> str:
    return "Yes" if value else "No"


# ---------------------------------------------------------------- what a driver branch prints
#
# Captures the layouts follow (tests/data/corpus, sources in SOURCES.md):
# R535 nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml;
# R550 nvidia_smi_q/06_550.127.05_l40s_q_full.txt; R555 nvidia_smi_q/07_555.42.02_a100_sxm4_80gb_q_gpu0_of_4.txt; R565
# nvml/nvidia_smi_q_H100_SXM_gpu0.txt; R570 nvidia_smi_xml/qx-a100-sxm4-40gb-570-v12.xml; R580 nvidia_smi_q/10_580.65.06
# (-d POWER) and nvidia_smi_xml/qx-h100-580-v13-gpu0.xml. Between two captures a change is placed at the later one.


def module_id(g: GpuState) -> int:
    """The baseboard module id: its slot on an SXM/NVLink board, 1 on a PCIe card (L40S and A40 captures)."""
    return g.index + 1 if g.fabric_state is not None or g.nvlinks else 1


def gsp_firmware(state: NodeState, g: GpuState) -> str:
    """GSP firmware runs on Hopper and later always, and on Turing to Ada from R555 (the L40S at 550.127.05: N/A)."""
    if g.architecture in ("Hopper", "Blackwell") or _driver_major(state) >= 555:
        return state.driver.version
    return NA


def _tlimit_thresholds(g: GpuState) -> tuple[int | None, int | None]:
    """(shutdown, slowdown) on the T.Limit scale: the absolute thresholds less the max operating temperature.

    So -q, -q -x and NVML report one set of values (audit row 7). The captures' scale: H100 SXM/NVL -8/-2, L40S
    -5/-2, B200 -5/-3; a fixture whose absolute thresholds differ shows its own.
    """
    top = g.temperature_max_operating_c
    if top is None:
        return None, None
    shutdown = None if g.temperature_shutdown_c is None else top - g.temperature_shutdown_c
    slowdown = None if g.temperature_slowdown_c is None else top - g.temperature_slowdown_c
    return shutdown, slowdown


_VOLTAGE_MV = {"Hopper": "685.000 mV", "Ada Lovelace": "875.000 mV", "Ampere": "706.250 mV"}
# The default applications clock where it is below the max graphics clock (A100 40GB 570 XML: 1095 MHz; A100 80GB
# 555 -q: 1140 MHz); the others run their applications clock at the max (H100, L40S captures).
_DEFAULT_APP_GRAPHICS = {"A100-SXM4-40GB": 1095, "A100-PCIE-40GB": 1095, "A100-SXM4-80GB": 1140, "A30": 1440}


def app_clocks(g: GpuState) -> tuple[int | None, int | None]:
    """(graphics, memory) applications clocks: the state's when set with ``-ac``, else the board default."""
    if g.applications_clocks_mhz:
        return g.applications_clocks_mhz.get("graphics"), g.applications_clocks_mhz.get("memory")
    return default_app_clocks(g)


def default_app_clocks(g: GpuState) -> tuple[int | None, int | None]:
    graphics = g.max_clocks_mhz.get("graphics")
    for model, mhz in _DEFAULT_APP_GRAPHICS.items():
        if model in g.name:
            graphics = mhz
    return graphics, g.max_clocks_mhz.get("memory")


def supported_graphics_clocks(g: GpuState) -> list[int]:
    """The graphics clocks a GPU supports at its memory clock: max down to 210 MHz in 15 MHz steps (A100, H100)."""
    top = g.max_clocks_mhz.get("graphics")
    if top is None:
        return []
    return list(range(top, 209, -15))


def _mhz_value(value: int | None) -> str:
    return NA if value is None else f"{value} MHz"


def _power_draw_split(state: NodeState) -> bool:
    """From R570 the power blocks print an average and an instantaneous draw (570 XML, 580 -d POWER)."""
    return _driver_major(state) >= 570


# ---------------------------------------------------------------- XML


class _Xml:
    """An indented XML writer: one tab a level, as nvidia-smi writes it (corpus nvidia_smi_xml, 6 of 7 captures)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def leaf(self, tag: str, value: object) -> None:
        self.lines.append(f"{chr(9) * self.depth}<{tag}>{escape(str(value))}</{tag}>")

    def open(self, tag: str, attrs: str = "") -> None:
        self.lines.append(f"{chr(9) * self.depth}<{tag}{attrs}>")
        self.depth += 1

    def close(self, tag: str) -> None:
        self.depth -= 1
        self.lines.append(f"{chr(9) * self.depth}</{tag}>")

    def block(self, tag: str, leaves: Sequence[tuple[str, object]]) -> None:
        self.open(tag)
        for name, value in leaves:
            self.leaf(name, value)
        self.close(tag)

    def empty(self, tag: str) -> None:
        # nvidia-smi writes an empty list as an open and a close tag on two lines (<processes>\n</processes>)
        self.lines.append(f"{chr(9) * self.depth}<{tag}>")
        self.lines.append(f"{chr(9) * self.depth}</{tag}>")


# The header line every driver prints (scripts that merge several logs strip it by this exact text).
XML_DECLARATION = '<?xml version="1.0" ?>'


def render_xml(state: NodeState, gpus: list[GpuState], now: datetime | None = None) -> str:
    """``nvidia-smi -q -x`` of ``gpus`` (attached_gpus counts every GPU NVML sees)."""
    x = _Xml()
    dtd = "nvsmi_device_v13.dtd" if _driver_major(state) >= 580 else "nvsmi_device_v12.dtd"
    x.lines += [XML_DECLARATION, f'<!DOCTYPE nvidia_smi_log SYSTEM "{dtd}">']
    x.open("nvidia_smi_log")
    x.leaf("timestamp", timestamp(now))
    x.leaf("driver_version", state.driver.version)
    x.leaf("cuda_version", state.driver.cuda_version)
    x.leaf("attached_gpus", sum(1 for g in state.gpus if not g.lost))
    for gpu in gpus:
        _xml_gpu(x, state, gpu)
    x.close("nvidia_smi_log")
    return "\n".join(x.lines) + "\n"


def _xml_gpu(x: _Xml, state: NodeState, g: GpuState) -> None:
    major = _driver_major(state)
    x.open("gpu", f' id="{g.bus_id}"')
    x.leaf("product_name", g.name)
    x.leaf("product_brand", "NVIDIA")
    x.leaf("product_architecture", g.architecture)
    x.leaf("display_mode", "Enabled")
    x.leaf("display_active", "Disabled")
    x.leaf("persistence_mode", enabled(g.persistence_mode))
    x.leaf("addressing_mode", "None")
    x.block(
        "mig_mode",
        [
            ("current_mig", enabled(g.mig_mode_current if g.mig_supported else None)),
            ("pending_mig", enabled(g.mig_mode_pending if g.mig_supported else None)),
        ],
    )
    _xml_mig_devices(x, g)
    x.leaf("accounting_mode", enabled(g.accounting_mode))
    x.leaf("accounting_mode_buffer_size", 4000)
    x.block("driver_model", [("current_dm", NA), ("pending_dm", NA)])
    x.leaf("serial", g.serial)
    x.leaf("uuid", g.uuid)
    x.leaf("minor_number", NA if g.minor_number is None else g.minor_number)
    x.leaf("vbios_version", g.vbios)
    x.leaf("multigpu_board", "No")
    _, bus_hex, devfn_hex = g.bus_id.split(":")
    x.leaf("board_id", f"0x{int(bus_hex, 16) << 8 | int(devfn_hex.split('.')[0], 16):x}")
    x.leaf("board_part_number", g.board_part_number or NA)
    x.leaf("gpu_part_number", _GPU_PART.get(g.pci_device_id, NA))
    x.leaf("gpu_fru_part_number", NA)
    if major >= 565:
        platform = [(k, NA) for k in ("chassis_serial_number", "slot_number", "tray_index", "host_id", "peer_type")]
        x.block("platformInfo", [*platform, ("module_id", module_id(g)), ("gpu_fabric_guid", NA)])
    else:
        x.leaf("gpu_module_id", module_id(g))
    oem, ecc_object = _INFOROM.get(g.architecture, (NA, NA))
    x.block(
        "inforom_version",
        [
            ("img_version", _inforom_image(g)),
            ("oem_object", oem),
            ("ecc_object", ecc_object if g.ecc_mode_current is not None else NA),
            ("pwr_object", NA),
        ],
    )
    if major >= 550:
        x.block("inforom_bbx_flush", [("latest_timestamp", NA), ("latest_duration", NA)])
    x.block("gpu_operation_mode", [("current_gom", NA), ("pending_gom", NA)])
    virtualization = [("virtualization_mode", "Pass-Through" if g.passthrough else "None"), ("host_vgpu_mode", NA)]
    reset = [("reset_required", _yes(_reset_required(g))), ("drain_and_reset_recommended", "No")]
    if major < 550:
        x.leaf("gsp_firmware_version", gsp_firmware(state, g))
        x.block("gpu_virtualization_mode", virtualization)
        x.block("gpu_reset_status", reset)
    else:
        x.leaf("c2c_mode", "Disabled" if g.architecture in ("Hopper", "Blackwell") else NA)
        x.block("gpu_virtualization_mode", [*virtualization, ("vgpu_heterogeneous_mode", NA)])
        x.block("gpu_reset_status", reset)
        if major >= 565:
            x.leaf("gpu_recovery_action", "Reset" if _reset_required(g) else "None")
        x.leaf("gsp_firmware_version", gsp_firmware(state, g))
    x.block("ibmnpu", [("relaxed_ordering_mode", NA)])
    _xml_pci(x, g, major)
    x.leaf("fan_speed", NA)
    x.leaf("performance_state", g.performance_state)
    x.open("clocks_event_reasons")
    for key, tag, _label in _REASONS:
        x.leaf(f"clocks_event_reason_{tag}", "Active" if key in g.throttle_reasons else "Not Active")
    x.close("clocks_event_reasons")
    if major >= 550:
        x.leaf("sparse_operation_mode", "Disabled" if g.architecture in ("Hopper", "Blackwell") else NA)
    x.block(
        "fb_memory_usage",
        [
            ("total", f"{g.memory_total_mib} MiB"),
            ("reserved", f"{g.memory_reserved_mib} MiB"),
            ("used", f"{gpu_memory.used_mib(g)} MiB"),
            ("free", f"{memory_free_mib(g)} MiB"),
        ],
    )
    bar1 = bar1_total_mib(g)
    bar1_used = 1 if g.memory_used_mib else 0
    x.block(
        "bar1_memory_usage",
        [("total", f"{bar1} MiB"), ("used", f"{bar1_used} MiB"), ("free", f"{bar1 - bar1_used} MiB")],
    )
    x.block("cc_protected_memory_usage", [("total", "0 MiB"), ("used", "0 MiB"), ("free", "0 MiB")])
    x.leaf("compute_mode", g.compute_mode)
    x.open("utilization")
    sm, memory = gpu_utilization(g)
    for tag, value in (("gpu_util", sm), ("memory_util", memory)):
        x.leaf(tag, NA if g.mig_mode_current else f"{value} %")
    for tag in ("encoder_util", "decoder_util", "jpeg_util", "ofa_util"):
        x.leaf(tag, NA if g.mig_mode_current else "0 %")
    x.close("utilization")
    stats = [("session_count", 0), ("average_fps", 0), ("average_latency", 0)]
    x.block("encoder_stats", stats)
    x.block("fbc_stats", stats)
    if major >= 570:
        x.block("dram_encryption_mode", [("current_dram_encryption", NA), ("pending_dram_encryption", NA)])
    x.block("ecc_mode", [("current_ecc", enabled(g.ecc_mode_current)), ("pending_ecc", enabled(g.ecc_mode_pending))])
    _xml_ecc(x, g, split_sram_counts(state))
    _xml_retired(x, g)
    _xml_remapped(x, g)
    _xml_temperature(x, state, g)
    x.block("supported_gpu_target_temp", [("gpu_target_temp_min", NA), ("gpu_target_temp_max", NA)])
    _xml_power(x, state, g)
    _xml_clocks(x, g)
    x.block("voltage", [("graphics_volt", _VOLTAGE_MV.get(g.architecture, NA))])
    x.open("fabric")
    x.leaf("state", g.fabric_state or NA)
    x.leaf("status", g.fabric_status or NA)
    if major >= 550:
        cluster = g.fabric_cluster_uuid or "00000000-0000-0000-0000-000000000000"
        x.leaf("cliqueId", NA if g.fabric_clique_id is None else g.fabric_clique_id)
        x.leaf("clusterUuid", NA if g.fabric_state is None else cluster)
        health = ["bandwidth"]
        if major >= 570:
            health += ["route_recovery_in_progress", "route_unhealthy", "access_timeout_recovery"]
        x.block("health", [(tag, NA) for tag in health])
    x.close("fabric")
    _xml_supported_clocks(x, g)
    if g.processes:
        x.open("processes")
        for p in g.processes:
            x.block(
                "process_info",
                [
                    ("gpu_instance_id", NA),
                    ("compute_instance_id", NA),
                    ("pid", p.pid),
                    ("type", p.type),
                    ("process_name", p.name),
                    ("used_memory", f"{p.used_memory_mib} MiB"),
                ],
            )
        x.close("processes")
    else:
        x.empty("processes")
    x.empty("accounted_processes")
    if major >= 555:
        x.block("capabilities", [("egm", "disabled")])
    x.close("gpu")


def _xml_temperature(x: _Xml, state: NodeState, g: GpuState) -> None:
    x.open("temperature")
    x.leaf("gpu_temp", _temp(g.temperature_c))
    if tlimit_temperatures(state, g):
        # The element names of a T.Limit GPU (580 H100, 595 L40S captures): *_tlimit_threshold, one -q shows.
        shutdown, slowdown = _tlimit_thresholds(g)
        x.leaf("gpu_temp_tlimit", _tlimit_margin(g))
        x.leaf("gpu_temp_max_tlimit_threshold", _temp(shutdown))
        x.leaf("gpu_temp_slow_tlimit_threshold", _temp(slowdown))
        x.leaf("gpu_temp_max_gpu_tlimit_threshold", _temp(0))
        x.leaf("gpu_target_temperature", NA)
        x.leaf("memory_temp", _temp(g.temperature_memory_c))
        x.leaf("gpu_temp_max_mem_tlimit_threshold", NA if g.temperature_memory_c is None else _temp(0))
    else:
        x.leaf("gpu_temp_tlimit", NA)
        x.leaf("gpu_temp_max_threshold", _temp(g.temperature_shutdown_c))
        x.leaf("gpu_temp_slow_threshold", _temp(g.temperature_slowdown_c))
        x.leaf("gpu_temp_max_gpu_threshold", _temp(g.temperature_max_operating_c))
        x.leaf("gpu_target_temperature", NA)
        x.leaf("memory_temp", _temp(g.temperature_memory_c))
        x.leaf("gpu_temp_max_mem_threshold", _temp(g.temperature_memory_max_c))
    x.close("temperature")


def _xml_power(x: _Xml, state: NodeState, g: GpuState) -> None:
    split = _power_draw_split(state)
    draw = [("average_power_draw", _watts(g.power_draw_w)), ("instant_power_draw", _watts(g.power_draw_w))]
    limits = [
        ("current_power_limit", _watts(g.power_limit_w)),
        ("requested_power_limit", _watts(g.power_limit_w)),
        ("default_power_limit", _watts(g.power_default_limit_w)),
        ("min_power_limit", _watts(g.power_min_limit_w)),
        ("max_power_limit", _watts(g.power_max_limit_w)),
    ]
    x.block(
        "gpu_power_readings",
        [("power_state", g.performance_state), *(draw if split else [("power_draw", _watts(g.power_draw_w))]), *limits],
    )
    if _driver_major(state) >= 550:
        x.block("gpu_memory_power_readings", [(k, NA) for k, _ in draw] if split else [("power_draw", NA)])
    module = [(k, NA) for k, _ in draw] if split else [("power_draw", NA)]
    x.block("module_power_readings", [("power_state", g.performance_state), *module, *((k, NA) for k, _ in limits)])
    if split:
        x.leaf("power_smoothing", NA)
        x.block("power_profiles", [("power_profile_requested_profiles", NA), ("power_profile_enforced_profiles", NA)])


def _xml_clocks(x: _Xml, g: GpuState) -> None:
    keys = (("graphics", "graphics_clock"), ("sm", "sm_clock"), ("memory", "mem_clock"), ("video", "video_clock"))
    x.block("clocks", [(tag, _mhz(g.clocks_mhz, key)) for key, tag in keys])
    graphics, memory = app_clocks(g)
    x.block("applications_clocks", [("graphics_clock", _mhz_value(graphics)), ("mem_clock", _mhz_value(memory))])
    graphics, memory = default_app_clocks(g)
    x.block(
        "default_applications_clocks", [("graphics_clock", _mhz_value(graphics)), ("mem_clock", _mhz_value(memory))]
    )
    x.block("deferred_clocks", [("mem_clock", NA)])
    x.block("max_clocks", [(tag, _mhz(g.max_clocks_mhz, key)) for key, tag in keys])
    x.block("max_customer_boost_clocks", [("graphics_clock", _mhz(g.max_clocks_mhz, "graphics"))])
    x.block("clock_policy", [("auto_boost", NA), ("auto_boost_default", NA)])


def _xml_supported_clocks(x: _Xml, g: GpuState) -> None:
    clocks = supported_graphics_clocks(g)
    if not clocks:
        x.leaf("supported_clocks", NA)
        return
    x.open("supported_clocks")
    x.open("supported_mem_clock")
    x.leaf("value", _mhz_value(g.max_clocks_mhz.get("memory")))
    for mhz in clocks:
        x.leaf("supported_graphics_clock", f"{mhz} MHz")
    x.close("supported_mem_clock")
    x.close("supported_clocks")


def _reset_required(g: GpuState) -> bool:
    return bool(g.remapped_rows is not None and g.remapped_rows.pending)


def _xml_mig_devices(x: _Xml, g: GpuState) -> None:
    """``<mig_devices>``, on every GPU: "None" on its own line when there are none (570 A100, 595 L40S captures)."""
    devices = [(gi, ci) for gi in sorted(g.mig_instances, key=lambda i: i.gi_id) for ci in gi.compute_instances]
    if not (g.mig_supported and g.mig_mode_current and devices):
        x.open("mig_devices")
        x.lines.append(f"{chr(9) * x.depth}None")
        x.close("mig_devices")
        return
    x.open("mig_devices")
    for index, (gi, ci) in enumerate(devices):
        x.open("mig_device")
        x.leaf("index", index)
        x.leaf("gpu_instance_id", gi.gi_id)
        x.leaf("compute_instance_id", ci.ci_id)
        x.close("mig_device")
    x.close("mig_devices")


def _xml_pci(x: _Xml, g: GpuState, major: int) -> None:
    domain, bus, devfn = g.bus_id.split(":")
    x.open("pci")
    x.leaf("pci_bus", bus)
    x.leaf("pci_device", devfn.split(".")[0])
    x.leaf("pci_domain", domain[-4:])
    if major >= 550:
        x.leaf("pci_base_class", 3)
        x.leaf("pci_sub_class", 2)
    x.leaf("pci_device_id", f"{g.pci_device_id:08X}")
    x.leaf("pci_bus_id", g.bus_id)
    x.leaf("pci_sub_system_id", f"{g.pci_subsystem_id:08X}")
    x.open("pci_gpu_link_info")
    x.block(
        "pcie_gen",
        [
            ("max_link_gen", g.pcie_gen_max),
            ("current_link_gen", g.pcie_gen_current),
            ("device_current_link_gen", g.pcie_gen_current),
            ("max_device_link_gen", g.pcie_gen_max),
            ("max_host_link_gen", g.pcie_gen_max),
        ],
    )
    x.block(
        "link_widths", [("max_link_width", f"{g.pcie_width_max}x"), ("current_link_width", f"{g.pcie_width_current}x")]
    )
    x.close("pci_gpu_link_info")
    x.block("pci_bridge_chip", [("bridge_chip_type", NA), ("bridge_chip_fw", NA)])
    x.leaf("replay_counter", 0)
    x.leaf("replay_rollover_counter", 0)
    x.leaf("tx_util", "0 KB/s")
    x.leaf("rx_util", "0 KB/s")
    atomics = [("atomic_caps_inbound", NA), ("atomic_caps_outbound", NA)]
    if major >= 565:
        atomics.reverse()
    for tag, value in atomics:
        x.leaf(tag, value)
    x.close("pci")


def _xml_ecc(x: _Xml, g: GpuState, split: bool) -> None:
    x.open("ecc_errors")
    on = bool(g.ecc_mode_current)
    for scope, corrected, uncorrected in (
        ("volatile", g.ecc.volatile_corrected, g.ecc.volatile_uncorrected),
        ("aggregate", g.ecc.aggregate_corrected, g.ecc.aggregate_uncorrected),
    ):
        # HBM errors are DRAM errors; the SRAM counters stay at zero.
        x.open(scope)
        x.leaf("sram_correctable", 0 if on else NA)
        if split:
            x.leaf("sram_uncorrectable_parity", 0 if on else NA)
            x.leaf("sram_uncorrectable_secded", 0 if on else NA)
        else:
            x.leaf("sram_uncorrectable", 0 if on else NA)
        x.leaf("dram_correctable", corrected if on else NA)
        x.leaf("dram_uncorrectable", uncorrected if on else NA)
        if split and scope == "aggregate":
            x.leaf("sram_threshold_exceeded", "No" if on else NA)
        x.close(scope)
    if split:
        x.open("aggregate_uncorrectable_sram_sources")
        for tag, _ in _SRAM_SOURCES:
            x.leaf(tag, 0 if on else NA)
        x.close("aggregate_uncorrectable_sram_sources")
    x.close("ecc_errors")


def _xml_retired(x: _Xml, g: GpuState) -> None:
    r = g.retired_pages
    x.open("retired_pages")
    x.open("multiple_single_bit_retirement")
    x.leaf("retired_count", NA if r is None else r.single_bit)
    x.leaf("retired_pagelist", NA)
    x.close("multiple_single_bit_retirement")
    x.open("double_bit_retirement")
    x.leaf("retired_count", NA if r is None else r.double_bit)
    x.leaf("retired_pagelist", NA)
    x.close("double_bit_retirement")
    x.leaf("pending_blacklist", NA if r is None else _yes(r.pending))
    x.leaf("pending_retirement", NA if r is None else _yes(r.pending))
    x.close("retired_pages")


def _xml_remapped(x: _Xml, g: GpuState) -> None:
    rows = g.remapped_rows
    if rows is None or not remap_visible(g):
        x.leaf("remapped_rows", NA)
        return
    x.open("remapped_rows")
    x.leaf("remapped_row_corr", rows.correctable)
    x.leaf("remapped_row_unc", rows.uncorrectable)
    x.leaf("remapped_row_pending", _yes(rows.pending))
    x.leaf("remapped_row_failure", _yes(rows.failure))
    x.open("row_remapper_histogram")
    x.leaf("row_remapper_histogram_max", f"{_banks(g)} bank(s)")
    for level in ("high", "partial", "low", "none"):
        x.leaf(f"row_remapper_histogram_{level}", "0 bank(s)")
    x.close("row_remapper_histogram")
    x.close("remapped_rows")


def _banks(g: GpuState) -> int:
    """The histogram's ``Max``: spare-row banks per GiB of the board's nominal memory (rounded up to 8 GiB).

    H100 80 GB 2560 and H100 NVL 3072 (32/GiB), A100 80 GB 640 (8/GiB), L40S 48 GB 192 (4/GiB): captures.
    """
    nominal = -(-g.memory_total_mib // 8192) * 8
    per_gib = {"Ampere": 8, "Ada Lovelace": 4}.get(g.architecture, 32)
    return max(nominal * per_gib, 1)


# ---------------------------------------------------------------- text (-q)


class _Text:
    """``Key : value`` lines with the colon in column 43, as nvidia-smi -q aligns them.

    ``only`` holds the ``-d`` section names asked for; a line belongs to the section named by the last
    :meth:`section` call (None: the part of ``-q`` that no ``-d`` name selects) and is kept when asked for.
    """

    def __init__(self, only: frozenset[str] | None = None) -> None:
        self.lines: list[str] = []
        self.only = only
        self.current: str | None = None

    def section(self, name: str | None) -> None:
        self.current = name

    def _kept(self) -> bool:
        return self.only is None or (self.current is not None and self.current in self.only)

    def kv(self, depth: int, key: str, value: object) -> None:
        if self._kept():
            self.lines.append(f"{'    ' * depth}{key}".ljust(42) + f": {value}")

    def head(self, depth: int, title: str) -> None:
        if self._kept():
            self.lines.append(f"{'    ' * depth}{title}")


# The ``-d`` names nvidia-smi accepts (nvidia-smi -h, "-d, --display="). Those the simulator has no
# lines for print the header and the GPU line only, as the real one does where a section does not apply.
DISPLAY_SECTIONS = frozenset(
    {
        "MEMORY",
        "UTILIZATION",
        "ECC",
        "TEMPERATURE",
        "POWER",
        "CLOCK",
        "COMPUTE",
        "PIDS",
        "PERFORMANCE",
        "SUPPORTED_CLOCKS",
        "PAGE_RETIREMENT",
        "ACCOUNTING",
        "ENCODER_STATS",
        "SUPPORTED_GPU_TARGET_TEMP",
        "VOLTAGE",
        "FBC_STATS",
        "ROW_REMAPPER",
        "RESET_STATUS",
        "GSP_FIRMWARE_VERSION",
        "POWER_SMOOTHING",
        "POWER_PROFILES",
        "PCIE",  # the PCI block: link generation, width, replays (accepted by current drivers, not in -h)
    }
)


def display_sections(value: str) -> frozenset[str] | None:
    """The sections a ``-d`` value names (comma-separated, any case); None when one is not a section."""
    names = frozenset(part.strip().upper() for part in value.split(",") if part.strip())
    return names if names and names <= DISPLAY_SECTIONS else None


def render_text(
    state: NodeState, gpus: list[GpuState], now: datetime | None = None, only: frozenset[str] | None = None
) -> str:
    """``nvidia-smi -q`` of ``gpus``; with ``only`` (``-d``), the header and just those sections."""
    t = _Text(only)
    t.lines += ["", "==============NVSMI LOG==============", ""]
    t.lines.append("Timestamp".ljust(42) + f": {timestamp(now)}")
    t.lines.append("Driver Version".ljust(42) + f": {state.driver.version}")
    t.lines.append("CUDA Version".ljust(42) + f": {state.driver.cuda_version}")
    t.lines.append("")
    t.lines.append("Attached GPUs".ljust(42) + f": {sum(1 for g in state.gpus if not g.lost)}")
    for g in gpus:
        t.lines.append(f"GPU {g.bus_id}")
        _text_gpu(t, state, g)
        t.lines.append("")
    return "\n".join(t.lines) + "\n"


# Per board model: BAR1 size and the inforom a public capture shows. BAR1 is split evenly over the eight
# MIG memory slots, so a MIG device's BAR1 is its slots' share minus 1 MiB (A100 40GB 3g.20gb: 32767 MiB).
# Sources: A100 40GB: corpus nvml/nvidia_smi_default_A100_40GB_mig_535.txt (4 slots -> 32767); A100 80GB:
# nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml (2 slots -> 32767, inforom G506.0212.00.01, ECC object
# 6.16); H100 SXM: nvml/nvidia_smi_q_H100_SXM_gpu0.txt (131072, G520.0200.00.05, 7.16); H100 NVL:
# nvml/nvidia_smi_mig_devices_H100_NVL.txt (4 slots -> 65535). H200 and L40S are not in the corpus: their
# BAR1 (256 GiB, 64 GiB) is as NVIDIA's product briefs give it.
_BAR1_MIB = {
    "A100-SXM4-40GB": 65536,
    "A100-PCIE-40GB": 65536,
    "A100-SXM4-80GB": 131072,
    "A100 80GB PCIe": 131072,
    "H100 80GB HBM3": 131072,
    "H100 NVL": 131072,
    "H200": 262144,
    "L40S": 65536,
}
_INFOROM = {  # architecture -> (OEM object, ECC object)
    "Ampere": ("2.0", "6.16"),
    "Hopper": ("2.1", "7.16"),
    "Ada Lovelace": ("2.1", "7.16"),
}
_GPU_PART = {0x20B210DE: "20B2-895-A1", 0x233010DE: "2330-885-A1"}


def bar1_total_mib(gpu: GpuState) -> int:
    """The BAR1 aperture of a GPU model (MiB); 128 GiB for a model not in the table."""
    for model, mib in _BAR1_MIB.items():
        if model in gpu.name:
            return mib
    return 131072


def _inforom_image(gpu: GpuState) -> str:
    # The image version follows the board part number: 692-2G520-0200-000 carries G520.0200.00.05.
    part = (gpu.board_part_number or "").split("-")
    if len(part) >= 3 and part[1][:1].isdigit():
        return f"{part[1][1:]}.{part[2]}.00.05"
    return NA


def _text_gpu(t: _Text, state: NodeState, g: GpuState) -> None:
    major = _driver_major(state)
    t.section(None)
    t.kv(1, "Product Name", g.name)
    t.kv(1, "Product Brand", "NVIDIA")
    t.kv(1, "Product Architecture", g.architecture)
    t.kv(1, "Display Mode", "Enabled")
    t.kv(1, "Display Active", "Disabled")
    t.kv(1, "Persistence Mode", enabled(g.persistence_mode))
    t.kv(1, "Addressing Mode", "None")
    t.head(1, "MIG Mode")
    t.kv(2, "Current", enabled(g.mig_mode_current if g.mig_supported else None))
    t.kv(2, "Pending", enabled(g.mig_mode_pending if g.mig_supported else None))
    t.section("ACCOUNTING")
    t.kv(1, "Accounting Mode", enabled(g.accounting_mode))
    t.kv(1, "Accounting Mode Buffer Size", 4000)
    t.section(None)
    t.head(1, "Driver Model")
    t.kv(2, "Current", NA)
    t.kv(2, "Pending", NA)
    t.kv(1, "Serial Number", g.serial)
    t.kv(1, "GPU UUID", g.uuid)
    t.kv(1, "Minor Number", NA if g.minor_number is None else g.minor_number)
    t.kv(1, "VBIOS Version", g.vbios)
    t.kv(1, "MultiGPU Board", "No")
    # Board ID: the PCI bus and device numbers, bus << 8 | device (00000000:18:00.0 -> 0x1800, 00000000:00:1E.0
    # -> 0x1e in the captures).
    _, bus_hex, devfn_hex = g.bus_id.split(":")
    t.kv(1, "Board ID", f"0x{int(bus_hex, 16) << 8 | int(devfn_hex.split('.')[0], 16):x}")
    t.kv(1, "Board Part Number", g.board_part_number or NA)
    t.kv(1, "GPU Part Number", _GPU_PART.get(g.pci_device_id, NA))
    t.kv(1, "FRU Part Number", NA)
    if major >= 565:  # 550 and 555 print "Module ID" (L40S, A100 captures); 565 the Platform Info block
        t.head(1, "Platform Info")
        for key in ("RACK Serial Number", "Chassis Physical Slot Number", "Compute Slot Index", "Node Index"):
            t.kv(2, key, NA)
        t.kv(2, "Peer Type", NA)
        t.kv(2, "Module Id", module_id(g))
    else:
        t.kv(1, "Module ID", module_id(g))
    oem, ecc_object = _INFOROM.get(g.architecture, (NA, NA))
    t.head(1, "Inforom Version")
    t.kv(2, "Image Version", _inforom_image(g))
    t.kv(2, "OEM Object", oem)
    t.kv(2, "ECC Object", ecc_object if g.ecc_mode_current is not None else NA)
    t.kv(2, "Power Management Object", NA)
    if major >= 550:
        t.head(1, "Inforom BBX Object Flush")
        t.kv(2, "Latest Timestamp", NA)
        t.kv(2, "Latest Duration", NA)
    t.head(1, "GPU Operation Mode")
    t.kv(2, "Current", NA)
    t.kv(2, "Pending", NA)
    if major < 550:  # R535 order (535 XML): GSP firmware, virtualization, reset status
        t.section("GSP_FIRMWARE_VERSION")
        t.kv(1, "GSP Firmware Version", gsp_firmware(state, g))
        t.section(None)
        t.head(1, "GPU Virtualization Mode")
        t.kv(2, "Virtualization Mode", "Pass-Through" if g.passthrough else "None")
        t.kv(2, "Host VGPU Mode", NA)
        _text_reset_status(t, g)
    else:
        t.kv(1, "GPU C2C Mode", "Disabled" if g.architecture in ("Hopper", "Blackwell") else NA)
        t.head(1, "GPU Virtualization Mode")
        t.kv(2, "Virtualization Mode", "Pass-Through" if g.passthrough else "None")
        t.kv(2, "Host VGPU Mode", NA)
        t.kv(2, "vGPU Heterogeneous Mode", NA)
        _text_reset_status(t, g)
        if major >= 565:
            t.section(None)
            t.kv(1, "GPU Recovery Action", "Reset" if _reset_required(g) else "None")
        t.section("GSP_FIRMWARE_VERSION")
        t.kv(1, "GSP Firmware Version", gsp_firmware(state, g))
    t.section(None)
    t.head(1, "IBMNPU")
    t.kv(2, "Relaxed Ordering Mode", NA)
    t.section("PCIE")
    t.head(1, "PCI")
    domain, bus, devfn = g.bus_id.split(":")
    t.kv(2, "Bus", f"0x{bus}")
    t.kv(2, "Device", f"0x{devfn.split('.')[0]}")
    t.kv(2, "Domain", f"0x{domain[-4:]}")
    if major >= 550:
        t.kv(2, "Base Classcode", "0x3")
        t.kv(2, "Sub Classcode", "0x2")
    t.kv(2, "Device Id", f"0x{g.pci_device_id:08X}")
    t.kv(2, "Bus Id", g.bus_id)
    t.kv(2, "Sub System Id", f"0x{g.pci_subsystem_id:08X}")
    t.head(2, "GPU Link Info")
    t.head(3, "PCIe Generation")
    t.kv(4, "Max", g.pcie_gen_max)
    t.kv(4, "Current", g.pcie_gen_current)
    t.kv(4, "Device Current", g.pcie_gen_current)
    t.kv(4, "Device Max", g.pcie_gen_max)
    t.kv(4, "Host Max", g.pcie_gen_max)
    t.head(3, "Link Width")
    t.kv(4, "Max", f"{g.pcie_width_max}x")
    t.kv(4, "Current", f"{g.pcie_width_current}x")
    t.head(2, "Bridge Chip")
    t.kv(3, "Type", NA)
    t.kv(3, "Firmware", NA)
    t.kv(2, "Replays Since Reset", 0)
    t.kv(2, "Replay Number Rollovers", 0)
    t.kv(2, "Tx Throughput", "0 KB/s")
    t.kv(2, "Rx Throughput", "0 KB/s")
    atomics = [("Atomic Caps Inbound", NA), ("Atomic Caps Outbound", NA)]
    if major >= 565:  # 565 prints outbound first (H100 capture); 550 and 555 inbound first
        atomics.reverse()
    for key, value in atomics:
        t.kv(2, key, value)
    t.section(None)
    t.kv(1, "Fan Speed", NA)
    t.section("PERFORMANCE")
    t.kv(1, "Performance State", g.performance_state)
    # Renamed in R535 (corpus nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml: clocks_event_reasons).
    t.head(1, "Clocks Event Reasons" if major >= 535 else "Clocks Throttle Reasons")
    for key, _tag, label in _REASONS:
        depth = 3 if key in ("hw_thermal_slowdown", "hw_power_brake_slowdown") else 2
        t.kv(depth, label, "Active" if key in g.throttle_reasons else "Not Active")
    if major >= 550:
        t.kv(1, "Sparse Operation Mode", "Disabled" if g.architecture in ("Hopper", "Blackwell") else NA)
    t.section("MEMORY")
    t.head(1, "FB Memory Usage")
    t.kv(2, "Total", f"{g.memory_total_mib} MiB")
    t.kv(2, "Reserved", f"{g.memory_reserved_mib} MiB")
    t.kv(2, "Used", f"{gpu_memory.used_mib(g)} MiB")
    t.kv(2, "Free", f"{memory_free_mib(g)} MiB")
    bar1 = bar1_total_mib(g)
    bar1_used = 1 if g.memory_used_mib else 0
    t.head(1, "BAR1 Memory Usage")
    t.kv(2, "Total", f"{bar1} MiB")
    t.kv(2, "Used", f"{bar1_used} MiB")
    t.kv(2, "Free", f"{bar1 - bar1_used} MiB")
    t.head(1, "Conf Compute Protected Memory Usage")
    for key in ("Total", "Used", "Free"):
        t.kv(2, key, "0 MiB")
    t.section("COMPUTE")
    t.kv(1, "Compute Mode", g.compute_mode)
    t.section("UTILIZATION")
    # MIG mode: utilization is per MIG device, and the GPU-level counters read N/A.
    sm, memory = gpu_utilization(g)  # as the default table's GPU-Util
    t.head(1, "Utilization")
    t.kv(2, "Gpu", NA if g.mig_mode_current else f"{sm} %")
    t.kv(2, "Memory", NA if g.mig_mode_current else f"{memory} %")
    engines = ("Encoder", "Decoder", "JPEG", "OFA") if major >= 535 else ("Encoder", "Decoder")
    for key in engines:
        t.kv(2, key, NA if g.mig_mode_current else "0 %")
    t.section("ENCODER_STATS")
    t.head(1, "Encoder Stats")
    for key in ("Active Sessions", "Average FPS", "Average Latency"):
        t.kv(2, key, 0)
    t.section("FBC_STATS")
    t.head(1, "FBC Stats")
    for key in ("Active Sessions", "Average FPS", "Average Latency"):
        t.kv(2, key, 0)
    t.section("ECC")
    t.head(1, "ECC Mode")
    t.kv(2, "Current", enabled(g.ecc_mode_current))
    t.kv(2, "Pending", enabled(g.ecc_mode_pending))
    t.head(1, "ECC Errors")
    on = bool(g.ecc_mode_current)
    split = split_sram_counts(state)
    for scope, corrected, uncorrected in (
        ("Volatile", g.ecc.volatile_corrected, g.ecc.volatile_uncorrected),
        ("Aggregate", g.ecc.aggregate_corrected, g.ecc.aggregate_uncorrected),
    ):
        t.head(2, scope)
        t.kv(3, "SRAM Correctable", 0 if on else NA)
        if split:
            t.kv(3, "SRAM Uncorrectable Parity", 0 if on else NA)
            t.kv(3, "SRAM Uncorrectable SEC-DED", 0 if on else NA)
        else:
            t.kv(3, "SRAM Uncorrectable", 0 if on else NA)
        t.kv(3, "DRAM Correctable", corrected if on else NA)
        t.kv(3, "DRAM Uncorrectable", uncorrected if on else NA)
        if split and scope == "Aggregate":
            t.kv(3, "SRAM Threshold Exceeded", "No" if on else NA)
    if split:
        t.head(2, "Aggregate Uncorrectable SRAM Sources")
        for _, label in _SRAM_SOURCES:
            t.kv(3, label, 0 if on else NA)
    t.section("PAGE_RETIREMENT")
    r = g.retired_pages
    t.head(1, "Retired Pages")
    t.kv(2, "Single Bit ECC", NA if r is None else r.single_bit)
    t.kv(2, "Double Bit ECC", NA if r is None else r.double_bit)
    t.kv(2, "Pending Page Blacklist", NA if r is None else _yes(r.pending))
    t.section("ROW_REMAPPER")
    rows = g.remapped_rows
    if rows is None or not remap_visible(g):
        t.kv(1, "Remapped Rows", NA)
    else:
        t.head(1, "Remapped Rows")
        t.kv(2, "Correctable Error", rows.correctable)
        t.kv(2, "Uncorrectable Error", rows.uncorrectable)
        t.kv(2, "Pending", _yes(rows.pending))
        t.kv(2, "Remapping Failure Occurred", _yes(rows.failure))
        t.head(2, "Bank Remap Availability Histogram")
        t.kv(3, "Max", f"{_banks(g)} bank(s)")
        for level in ("High", "Partial", "Low", "None"):
            t.kv(3, level, "0 bank(s)")
    t.section("TEMPERATURE")
    t.head(1, "Temperature")
    t.kv(2, "GPU Current Temp", _temp(g.temperature_c))
    if tlimit_temperatures(state, g):
        shutdown, slowdown = _tlimit_thresholds(g)
        memory_tlimit = NA if g.temperature_memory_c is None else _temp(0)
        t.kv(2, "GPU T.Limit Temp", _tlimit_margin(g))
        t.kv(2, "GPU Shutdown T.Limit Temp", _temp(shutdown))
        t.kv(2, "GPU Slowdown T.Limit Temp", _temp(slowdown))
        t.kv(2, "GPU Max Operating T.Limit Temp", _temp(0))
        t.kv(2, "GPU Target Temperature", NA)
        t.kv(2, "Memory Current Temp", _temp(g.temperature_memory_c))
        t.kv(2, "Memory Max Operating T.Limit Temp", memory_tlimit)
    else:
        # A100 at 555 (and the A800/A100 at 535): the T.Limit line is there, N/A, before the absolute thresholds.
        t.kv(2, "GPU T.Limit Temp", NA)
        t.kv(2, "GPU Shutdown Temp", _temp(g.temperature_shutdown_c))
        t.kv(2, "GPU Slowdown Temp", _temp(g.temperature_slowdown_c))
        t.kv(2, "GPU Max Operating Temp", _temp(g.temperature_max_operating_c))
        t.kv(2, "GPU Target Temperature", NA)
        t.kv(2, "Memory Current Temp", _temp(g.temperature_memory_c))
        t.kv(2, "Memory Max Operating Temp", _temp(g.temperature_memory_max_c))
    t.section("POWER")
    _text_power(t, state, g)
    t.section("CLOCK")
    _text_clocks(t, g)
    t.section("VOLTAGE")
    t.head(1, "Voltage")
    t.kv(2, "Graphics", _VOLTAGE_MV.get(g.architecture, NA))
    t.section(None)
    t.head(1, "Fabric")
    t.kv(2, "State", g.fabric_state or NA)
    t.kv(2, "Status", g.fabric_status or NA)
    if major >= 550:
        t.kv(2, "CliqueId", NA if g.fabric_clique_id is None else g.fabric_clique_id)
        cluster = g.fabric_cluster_uuid or "00000000-0000-0000-0000-000000000000"  # zeros: no NVLink domain
        t.kv(2, "ClusterUUID", NA if g.fabric_state is None else cluster)
        t.head(2, "Health")
        t.kv(3, "Bandwidth", NA)
    t.section("SUPPORTED_CLOCKS")
    if t.only is not None:  # only asked for: a full -q leaves the list out (565 capture)
        t.head(1, "Supported Clocks")
        clocks = supported_graphics_clocks(g)
        if not clocks:
            t.kv(2, "Memory", NA)
        else:
            t.kv(2, "Memory", _mhz_value(g.max_clocks_mhz.get("memory")))
            for mhz in clocks:
                t.kv(3, "Graphics", f"{mhz} MHz")
    t.section("PIDS")
    if g.processes:
        t.head(1, "Processes")
        for p in g.processes:
            t.kv(2, "GPU instance ID", NA)
            t.kv(2, "Compute instance ID", NA)
            t.kv(2, "Process ID", p.pid)
            t.kv(3, "Type", p.type)
            t.kv(3, "Name", p.name)
            t.kv(3, "Used GPU Memory", f"{p.used_memory_mib} MiB")
    else:
        t.kv(1, "Processes", "None")
    if major >= 555:
        t.section(None)
        t.head(1, "Capabilities")
        t.kv(2, "EGM", "disabled")


def _text_reset_status(t: _Text, g: GpuState) -> None:
    t.section("RESET_STATUS")
    t.head(1, "GPU Reset Status")
    t.kv(2, "Reset Required", _yes(_reset_required(g)))
    t.kv(2, "Drain and Reset Recommended", "No")


def _text_power(t: _Text, state: NodeState, g: GpuState) -> None:
    """GPU, GPU memory and module power; ``-d POWER`` adds the Power Samples (580 -d POWER capture)."""
    split = _power_draw_split(state)
    limits = (
        ("Current Power Limit", _watts(g.power_limit_w)),
        ("Requested Power Limit", _watts(g.power_limit_w)),
        ("Default Power Limit", _watts(g.power_default_limit_w)),
        ("Min Power Limit", _watts(g.power_min_limit_w)),
        ("Max Power Limit", _watts(g.power_max_limit_w)),
    )
    t.head(1, "GPU Power Readings")
    if split:
        t.kv(2, "Average Power Draw", _watts(g.power_draw_w))
        t.kv(2, "Instantaneous Power Draw", _watts(g.power_draw_w))
    else:
        t.kv(2, "Power Draw", _watts(g.power_draw_w))
    for key, value in limits:
        t.kv(2, key, value)
    if t.only is not None:
        t.head(1, "Power Samples")
        t.kv(2, "Duration", "2.36 sec")
        t.kv(2, "Number of Samples", 119)
        t.kv(2, "Max", _watts(g.power_draw_w * 1.05))
        t.kv(2, "Min", _watts(g.power_draw_w * 0.97))
        t.kv(2, "Avg", _watts(g.power_draw_w))
    if _driver_major(state) >= 550:
        t.head(1, "GPU Memory Power Readings ")  # the trailing space is nvidia-smi's
        if split:
            t.kv(2, "Average Power Draw", NA)
            t.kv(2, "Instantaneous Power Draw", NA)
        else:
            t.kv(2, "Power Draw", NA)
    t.head(1, "Module Power Readings")
    draws = ("Average Power Draw", "Instantaneous Power Draw") if split else ("Power Draw",)
    for key in (*draws, *(k for k, _ in limits)):
        t.kv(2, key, NA)


def _text_clocks(t: _Text, g: GpuState) -> None:
    """Clocks; ``-d CLOCK`` adds the SM and memory clock samples (510 and 580 -d CLOCK captures: Not Found)."""
    t.head(1, "Clocks")
    for key, label in (("graphics", "Graphics"), ("sm", "SM"), ("memory", "Memory"), ("video", "Video")):
        t.kv(2, label, _mhz(g.clocks_mhz, key))
    graphics, memory = app_clocks(g)
    t.head(1, "Applications Clocks")
    t.kv(2, "Graphics", _mhz_value(graphics))
    t.kv(2, "Memory", _mhz_value(memory))
    graphics, memory = default_app_clocks(g)
    t.head(1, "Default Applications Clocks")
    t.kv(2, "Graphics", _mhz_value(graphics))
    t.kv(2, "Memory", _mhz_value(memory))
    t.head(1, "Deferred Clocks")
    t.kv(2, "Memory", NA)
    t.head(1, "Max Clocks")
    for key, label in (("graphics", "Graphics"), ("sm", "SM"), ("memory", "Memory"), ("video", "Video")):
        t.kv(2, label, _mhz(g.max_clocks_mhz, key))
    t.head(1, "Max Customer Boost Clocks")
    t.kv(2, "Graphics", _mhz(g.max_clocks_mhz, "graphics"))
    if t.only is not None:
        for title in ("SM Clock Samples", "Memory Clock Samples"):
            t.head(1, title)
            for key in ("Duration", "Number of Samples", "Max", "Min", "Avg"):
                t.kv(2, key, "Not Found")
    t.head(1, "Clock Policy")
    t.kv(2, "Auto Boost", NA)
    t.kv(2, "Auto Boost Default", NA)


# ---------------------------------------------------------------- --query-gpu


@dataclass(frozen=True)
class Field:
    unit: str | None  # MiB, W, %, MHz: in the header ([MiB]) and after the value, unless nounits
    value: Callable[[NodeState, GpuState], object]  # None: [N/A]


def _pstate_mig(g: GpuState, pending: bool) -> str | None:
    if not g.mig_supported:
        return None
    return enabled(g.mig_mode_pending if pending else g.mig_mode_current)


def _ecc(value: bool | None) -> str | None:
    return None if value is None else enabled(value)


def _rows(g: GpuState, attr: str) -> object:
    if g.remapped_rows is None or not remap_visible(g):
        return None
    value = getattr(g.remapped_rows, attr)
    return _yes(value) if isinstance(value, bool) else value


def _ecc_count(g: GpuState, attr: str) -> int | None:
    return getattr(g.ecc, attr) if g.ecc_mode_current else None


def _ecc_by_location(kind: str, scope: str, where: str) -> Callable[[NodeState, GpuState], object]:
    """ECC counts by memory location: every simulated error is in device memory (DRAM), SRAM stays 0."""

    def value(s: NodeState, g: GpuState) -> object:
        if not g.ecc_mode_current:
            return None
        return getattr(g.ecc, f"{scope}_{kind}") if where == "dram" else 0

    return value


def _reason(key: str) -> Callable[[NodeState, GpuState], object]:
    return lambda s, g: "Active" if key in g.throttle_reasons else "Not Active"


def _retired(g: GpuState, attr: str) -> object:
    if g.retired_pages is None:
        return None
    value = getattr(g.retired_pages, attr)
    return _yes(value) if isinstance(value, bool) else value


def _tlimit_value(s: NodeState, g: GpuState) -> object:
    if not tlimit_temperatures(s, g) or g.temperature_max_operating_c is None:
        return None
    return g.temperature_max_operating_c - g.temperature_c


FIELDS: dict[str, Field] = {
    "timestamp": Field(None, lambda s, g: datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]),
    "driver_version": Field(None, lambda s, g: s.driver.version),
    "count": Field(None, lambda s, g: sum(1 for x in s.gpus if not x.lost)),
    "index": Field(None, lambda s, g: g.index),
    "name": Field(None, lambda s, g: g.name),
    "serial": Field(None, lambda s, g: g.serial),
    "uuid": Field(None, lambda s, g: g.uuid),
    "pci.bus_id": Field(None, lambda s, g: g.bus_id),
    "pci.domain": Field(None, lambda s, g: "0x" + g.bus_id.split(":")[0][-4:]),
    "pci.bus": Field(None, lambda s, g: "0x" + g.bus_id.split(":")[1]),
    "pci.device_id": Field(None, lambda s, g: f"0x{g.pci_device_id:08X}"),
    "pci.sub_device_id": Field(None, lambda s, g: f"0x{g.pci_subsystem_id:08X}"),
    "vbios_version": Field(None, lambda s, g: g.vbios),
    "persistence_mode": Field(None, lambda s, g: enabled(g.persistence_mode)),
    "compute_mode": Field(None, lambda s, g: g.compute_mode),
    "pstate": Field(None, lambda s, g: g.performance_state),
    "pcie.link.gen.current": Field(None, lambda s, g: g.pcie_gen_current),
    "pcie.link.gen.gpucurrent": Field(None, lambda s, g: g.pcie_gen_current),
    "pcie.link.gen.max": Field(None, lambda s, g: g.pcie_gen_max),
    "pcie.link.gen.gpumax": Field(None, lambda s, g: g.pcie_gen_max),
    "pcie.link.gen.hostmax": Field(None, lambda s, g: g.pcie_gen_max),
    "pcie.link.width.current": Field(None, lambda s, g: g.pcie_width_current),
    "pcie.link.width.max": Field(None, lambda s, g: g.pcie_width_max),
    "fan.speed": Field("%", lambda s, g: None),
    "memory.total": Field("MiB", lambda s, g: g.memory_total_mib),
    "memory.reserved": Field("MiB", lambda s, g: g.memory_reserved_mib),
    "memory.used": Field("MiB", lambda s, g: gpu_memory.used_mib(g)),
    "memory.free": Field("MiB", lambda s, g: memory_free_mib(g)),
    "utilization.gpu": Field("%", lambda s, g: None if g.mig_mode_current else gpu_utilization(g)[0]),
    "utilization.memory": Field("%", lambda s, g: None if g.mig_mode_current else gpu_utilization(g)[1]),
    "temperature.gpu": Field(None, lambda s, g: g.temperature_c),
    "temperature.memory": Field(None, lambda s, g: g.temperature_memory_c),
    "power.draw": Field("W", lambda s, g: f"{g.power_draw_w:.2f}"),
    "power.limit": Field("W", lambda s, g: f"{g.power_limit_w:.2f}"),
    "enforced.power.limit": Field("W", lambda s, g: f"{g.power_limit_w:.2f}"),
    "power.default_limit": Field("W", lambda s, g: _opt_w(g.power_default_limit_w)),
    "power.min_limit": Field("W", lambda s, g: _opt_w(g.power_min_limit_w)),
    "power.max_limit": Field("W", lambda s, g: _opt_w(g.power_max_limit_w)),
    "clocks.sm": Field("MHz", lambda s, g: g.clocks_mhz.get("sm")),
    "clocks.gr": Field("MHz", lambda s, g: g.clocks_mhz.get("graphics")),
    "clocks.mem": Field("MHz", lambda s, g: g.clocks_mhz.get("memory")),
    "clocks.max.sm": Field("MHz", lambda s, g: g.max_clocks_mhz.get("sm")),
    "clocks.max.gr": Field("MHz", lambda s, g: g.max_clocks_mhz.get("graphics")),
    "clocks.max.mem": Field("MHz", lambda s, g: g.max_clocks_mhz.get("memory")),
    "clocks_throttle_reasons.active": Field(None, lambda s, g: f"0x{throttle_mask(g):016X}"),
    "ecc.mode.current": Field(None, lambda s, g: _ecc(g.ecc_mode_current)),
    "ecc.mode.pending": Field(None, lambda s, g: _ecc(g.ecc_mode_pending)),
    "ecc.errors.corrected.volatile.total": Field(None, lambda s, g: _ecc_count(g, "volatile_corrected")),
    "ecc.errors.uncorrected.volatile.total": Field(None, lambda s, g: _ecc_count(g, "volatile_uncorrected")),
    "ecc.errors.corrected.aggregate.total": Field(None, lambda s, g: _ecc_count(g, "aggregate_corrected")),
    "ecc.errors.uncorrected.aggregate.total": Field(None, lambda s, g: _ecc_count(g, "aggregate_uncorrected")),
    "remapped_rows.correctable": Field(None, lambda s, g: _rows(g, "correctable")),
    "remapped_rows.uncorrectable": Field(None, lambda s, g: _rows(g, "uncorrectable")),
    "remapped_rows.pending": Field(None, lambda s, g: _rows(g, "pending")),
    "remapped_rows.failure": Field(None, lambda s, g: _rows(g, "failure")),
    "compute_cap": Field(None, lambda s, g: compute_capability(g)),
    "fabric.state": Field(None, lambda s, g: g.fabric_state),
    "fabric.status": Field(None, lambda s, g: g.fabric_status),
    "mig.mode.current": Field(None, lambda s, g: _pstate_mig(g, pending=False)),
    "mig.mode.pending": Field(None, lambda s, g: _pstate_mig(g, pending=True)),
    # Fields nvidia-smi --help-query-gpu lists that scripts ask for (audit row 11).
    "display_mode": Field(None, lambda s, g: "Enabled"),
    "display_active": Field(None, lambda s, g: "Disabled"),
    "accounting.mode": Field(None, lambda s, g: enabled(g.accounting_mode)),
    "accounting.buffer_size": Field(None, lambda s, g: 4000),
    "driver_model.current": Field(None, lambda s, g: None),
    "driver_model.pending": Field(None, lambda s, g: None),
    "inforom.img": Field(None, lambda s, g: None if _inforom_image(g) == NA else _inforom_image(g)),
    "inforom.oem": Field(None, lambda s, g: _INFOROM.get(g.architecture, (None, None))[0]),
    "inforom.ecc": Field(None, lambda s, g: _INFOROM.get(g.architecture, (None, None))[1]),
    "inforom.pwr": Field(None, lambda s, g: None),
    "gom.current": Field(None, lambda s, g: None),
    "gom.pending": Field(None, lambda s, g: None),
    "reset_status.reset_required": Field(None, lambda s, g: _yes(_reset_required(g))),
    "reset_status.drain_and_reset_recommended": Field(None, lambda s, g: "No"),
    "utilization.encoder": Field("%", lambda s, g: None if g.mig_mode_current else 0),
    "utilization.decoder": Field("%", lambda s, g: None if g.mig_mode_current else 0),
    "utilization.jpeg": Field("%", lambda s, g: None if g.mig_mode_current else 0),
    "utilization.ofa": Field("%", lambda s, g: None if g.mig_mode_current else 0),
    "temperature.gpu.tlimit": Field(None, lambda s, g: _tlimit_value(s, g)),
    "power.management": Field(None, lambda s, g: "Enabled"),
    "power.draw.average": Field("W", lambda s, g: f"{g.power_draw_w:.2f}"),
    "clocks.video": Field("MHz", lambda s, g: g.clocks_mhz.get("video")),
    "clocks.max.video": Field("MHz", lambda s, g: g.max_clocks_mhz.get("video")),
    "clocks.applications.graphics": Field("MHz", lambda s, g: app_clocks(g)[0]),
    "clocks.applications.memory": Field("MHz", lambda s, g: app_clocks(g)[1]),
    "clocks.default_applications.graphics": Field("MHz", lambda s, g: default_app_clocks(g)[0]),
    "clocks.default_applications.memory": Field("MHz", lambda s, g: default_app_clocks(g)[1]),
    "retired_pages.single_bit_ecc.count": Field(None, lambda s, g: _retired(g, "single_bit")),
    "retired_pages.double_bit.count": Field(None, lambda s, g: _retired(g, "double_bit")),
    "retired_pages.pending": Field(None, lambda s, g: _retired(g, "pending")),
    **{
        f"ecc.errors.{kind}.{scope}.{where}": Field(None, _ecc_by_location(kind, scope, where))
        for kind in ("corrected", "uncorrected")
        for scope in ("volatile", "aggregate")
        for where in ("dram", "sram")
    },
    **{
        f"clocks_throttle_reasons.{key}": Field(None, _reason(key))
        for key in (
            *("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown"),
            *("hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown"),
        )
    },
    "clocks_throttle_reasons.supported": Field(None, lambda s, g: f"0x{sum(THROTTLE_REASON_BITS.values()):016X}"),
}

# nvidia-smi's other spellings of the same fields.
ALIASES = {
    **{f"clocks_event_reasons.{key}": f"clocks_throttle_reasons.{key}" for key in THROTTLE_REASON_BITS},
    "clocks_event_reasons.supported": "clocks_throttle_reasons.supported",
    "clocks.applications.gr": "clocks.applications.graphics",
    "clocks.applications.mem": "clocks.applications.memory",
    "clocks.default_applications.gr": "clocks.default_applications.graphics",
    "clocks.default_applications.mem": "clocks.default_applications.memory",
    "clocks.current.video": "clocks.video",
    "accounting.buffer_size": "accounting.buffer_size",
    "retired_pages.sbe": "retired_pages.single_bit_ecc.count",
    "retired_pages.dbe": "retired_pages.double_bit.count",
    "driver_model.cur": "driver_model.current",
    "gom.cur": "gom.current",
    "power.draw.avg": "power.draw.average",
    "gpu_name": "name",
    "gpu_serial": "serial",
    "gpu_uuid": "uuid",
    "gpu_bus_id": "pci.bus_id",
    "pci.device": "pci.device_id",
    "persistence.mode": "persistence_mode",
    "performance_state": "pstate",
    "clocks_event_reasons.active": "clocks_throttle_reasons.active",
    "clocks.current.sm": "clocks.sm",
    "clocks.current.graphics": "clocks.gr",
    "clocks.current.memory": "clocks.mem",
    "clocks.max.graphics": "clocks.max.gr",
    "clocks.max.memory": "clocks.max.mem",
    "clocks.max.sm": "clocks.max.sm",
    "power.draw.instant": "power.draw",
    "power.management.limit": "power.limit",
}


# CUDA compute capability by architecture; Ampere data-centre parts (A100, A30) are 8.0, the others 8.6.
_COMPUTE_CAP = {"Volta": "7.0", "Turing": "7.5", "Ada Lovelace": "8.9", "Hopper": "9.0", "Blackwell": "10.0"}


def compute_capability(gpu: GpuState) -> str | None:
    """``compute_cap``: the CUDA compute capability, Major.Minor."""
    if gpu.architecture == "Ampere":
        return "8.0" if any(model in gpu.name for model in ("A100", "A30")) else "8.6"
    return _COMPUTE_CAP.get(gpu.architecture)


def _opt_w(value: float | None) -> str | None:
    return None if value is None else f"{value:.2f}"


def field_of(name: str) -> Field | None:
    """The :class:`Field` nvidia-smi knows as ``name`` (or an alias of it), None when it is not a field."""
    key = name.strip()
    return FIELDS.get(ALIASES.get(key, key))


def render_csv(
    state: NodeState, gpus: list[GpuState], names: list[str], *, header: bool = True, units: bool = True
) -> str:
    """``--query-gpu=NAMES --format=csv[,noheader][,nounits]`` rows for ``gpus`` (names already validated)."""
    fields = [(name.strip(), field_of(name)) for name in names]
    lines: list[str] = []
    if header:
        lines.append(
            ", ".join(
                f"{name} [{f.unit}]" if units and f is not None and f.unit is not None else name for name, f in fields
            )
        )
    for gpu in gpus:
        cells = []
        for _name, f in fields:
            assert f is not None  # validated by the caller
            value = f.value(state, gpu)
            if value is None:
                cells.append("[N/A]")
            elif units and f.unit is not None:
                cells.append(f"{value} {f.unit}")
            else:
                cells.append(str(value))
        lines.append(", ".join(cells))
    return "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------- --query-remapped-rows


def _flag(value: bool) -> int:
    return 1 if value else 0


# --query-remapped-rows prints its yes/no fields as 0/1 (stas00/ml-engineering, debug.md capture).
REMAPPED_ROW_FIELDS: dict[str, Field] = {
    "gpu_bus_id": Field(None, lambda s, g: g.bus_id),
    "gpu_uuid": Field(None, lambda s, g: g.uuid),
    "gpu_name": Field(None, lambda s, g: g.name),
    "remapped_rows.correctable": Field(None, lambda s, g: _remap(g, "correctable")),
    "remapped_rows.uncorrectable": Field(None, lambda s, g: _remap(g, "uncorrectable")),
    "remapped_rows.pending": Field(None, lambda s, g: _remap(g, "pending")),
    "remapped_rows.failure": Field(None, lambda s, g: _remap(g, "failure")),
}


def _remap(g: GpuState, attr: str) -> object:
    if g.remapped_rows is None or not remap_visible(g):
        return None
    value = getattr(g.remapped_rows, attr)
    return _flag(value) if isinstance(value, bool) else value


def render_remapped_rows_csv(
    state: NodeState, gpus: list[GpuState], names: list[str], *, header: bool = True, units: bool = True
) -> str:
    """``--query-remapped-rows=NAMES --format=csv[,...]``: one row per GPU (names already validated)."""
    del units  # no remapped-rows field has a unit
    keys = [n.strip() for n in names]
    lines = [", ".join(keys)] if header else []
    for gpu in gpus:
        cells = []
        for key in keys:
            value = REMAPPED_ROW_FIELDS[key].value(state, gpu)
            cells.append("[N/A]" if value is None else str(value))
        lines.append(", ".join(cells))
    return "".join(line + "\n" for line in lines)
