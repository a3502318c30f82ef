"""``nvidia-smi -q`` text: the same facts as the XML, on real pasted outputs."""

from __future__ import annotations

import pytest

from assessor import parsers
from assessor.errors import ParseError
from tests.support.corpus import read_corpus

H100 = "nvml/nvidia_smi_q_H100_SXM_gpu0.txt"
T4 = "nvidia_smi_q/01_418.67_tesla_t4_root_prompt_excerpt.txt"
RTX2070 = "nvidia_smi_q/03_510.68.02_rtx2070_persistence_disabled_excerpt.txt"


def _gpu(text: str):
    facts = parsers.parse("nvidia-smi-q", text)
    assert facts.gpus
    return facts, facts.gpus[0]


def test_h100_565_gives_the_facts_the_xml_gives():
    facts, g = _gpu(read_corpus(H100))
    assert facts.driver is not None and (facts.driver.version, facts.driver.cuda_version) == ("565.57.01", "12.7")
    assert (g.name, g.bus_id, g.architecture) == ("NVIDIA H100 80GB HBM3", "00000000:18:00.0", "Hopper")
    assert g.uuid == "GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1"
    assert (g.persistence_mode, g.mig_mode_current, g.ecc_mode_current, g.ecc_mode_pending) == (True, False, True, True)
    assert (g.ecc_volatile_corrected, g.ecc_volatile_uncorrected) == (0, 0)
    assert (g.remap_pending, g.remap_failure, g.remap_uncorrectable) == (False, False, 0)
    assert g.retired_pages_pending is None  # N/A on HBM parts
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max) == (5, 5, 16, 16)
    assert (g.temperature_c, g.power_draw_w, g.power_limit_w) == (30, 100.89, 700.0)
    # "GPU Slowdown T.Limit Temp : -2 C" is relative to the limit, not a threshold.
    assert g.temperature_slowdown_c is None
    assert g.throttle_reasons == ["gpu_idle"]
    assert (g.fabric_state, g.fabric_status, g.memory_total_mib) == ("Completed", "Success", 81559)


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_remap_pending_yes_is_read_even_when_reset_required_says_no():
    text = read_corpus(H100)
    text = _edit(
        text, "        Pending                           : No\n", "        Pending                           : Yes\n"
    )
    _facts, g = _gpu(text)
    assert "Reset Required                    : No" in text
    assert g.remap_pending is True


@pytest.mark.parametrize(
    ("label", "reason"),
    [
        ("        HW Slowdown                       : Not Active", "hw_slowdown"),
        ("            HW Power Brake Slowdown       : Not Active", "hw_power_brake_slowdown"),
        ("            HW Thermal Slowdown           : Not Active", "hw_thermal_slowdown"),
        ("        SW Thermal Slowdown               : Not Active", "sw_thermal_slowdown"),
    ],
)
def test_an_active_clock_event_reason_is_read(label, reason):
    text = _edit(read_corpus(H100), label, label.replace("Not Active", "Active"))
    _facts, g = _gpu(text)
    assert g.throttle_reasons is not None and reason in g.throttle_reasons


def test_pre_r535_clocks_throttle_reasons_and_single_double_bit_ecc_are_read():
    text = _edit(read_corpus(H100), "Clocks Event Reasons", "Clocks Throttle Reasons")
    old_ecc = (
        "    ECC Errors\n        Volatile\n            Single Bit\n                Device Memory : 3\n"
        "                Total : 3\n            Double Bit\n                Device Memory : 1\n"
        "                Total : 1\n"
    )
    start = text.index("    ECC Errors\n")
    end = text.index("    Retired Pages\n")
    text = text[:start] + old_ecc + text[end:]
    _facts, g = _gpu(text)
    assert g.throttle_reasons == ["gpu_idle"]
    assert (g.ecc_volatile_corrected, g.ecc_volatile_uncorrected) == (3, 1)


def test_a_prompt_before_an_old_excerpt_is_skipped_and_what_it_holds_is_read():
    facts, g = _gpu(read_corpus(T4))
    assert facts.driver is not None and facts.driver.version == "418.67"
    assert (g.name, g.persistence_mode, g.bus_id) == ("Tesla T4", True, "00000000:00:08.0")
    assert g.mig_mode_current is None and g.ecc_mode_current is None  # not in the excerpt: unknown


def test_persistence_disabled_is_false_not_unknown():
    _facts, g = _gpu(read_corpus(RTX2070))
    assert g.persistence_mode is False
    assert g.serial is None  # "N/A"


def test_several_gpu_blocks_give_several_gpus_in_order():
    block = read_corpus(H100).split("GPU 00000000:18:00.0\n", 1)[1]
    text = read_corpus(H100) + "GPU 00000000:2A:00.0\n" + block
    facts = parsers.parse("nvidia-smi-q", text)
    assert [(g.index, g.bus_id) for g in facts.gpus or []] == [(0, "00000000:18:00.0"), (1, "00000000:2A:00.0")]


def test_driver_failure_message_is_carried_verbatim():
    with pytest.raises(ParseError) as info:
        parsers.parse("nvidia-smi-q", "Failed to initialize NVML: Driver/library version mismatch\n")
    assert "Driver/library version mismatch" in str(info.value)


def test_text_that_is_not_nvidia_smi_q_names_its_first_line():
    with pytest.raises(ParseError) as info:
        parsers.parse("nvidia-smi-q", "\n\nModule  Size  Used by\nnvidia 1 0\n")
    assert info.value.line == 3
