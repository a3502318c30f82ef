"""nvidia-smi -q -x: real captures from drivers 418 (no DTD) to 595 (DTD v13).

Fixtures: corpus/nvidia_smi_xml/ (attribution in corpus/SOURCES.md).
"""

from __future__ import annotations

import re

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.facts import Gpu, NodeFacts
from assessor.parsers import nvidia_smi_xml
from assessor.pci import normalize_bus_id
from tests.support.corpus import read_corpus

A100_40_V11 = "nvidia_smi_xml/a100-sxm4-40gb-mig-510-v11.xml"
A100_80_V12 = "nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml"
A10G_V11 = "nvidia_smi_xml/a10g-515-v11.xml"
P400_418 = "nvidia_smi_xml/quadro-p400-418-nodtd.xml"
RTX3080_V13 = "nvidia_smi_xml/rtx-3080-595-v13.xml"
T4_V11 = "nvidia_smi_xml/tesla-t4-515-v11.xml"
V100S_X8 = "nvidia_smi_xml/v100s-pcie-32gb-x8-460-v11.xml"

# file -> (driver, cuda, number of <gpu> elements, first GPU's name and bus id)
EXPECTED = {
    A100_40_V11: ("510.47.03", "11.6", 1, "NVIDIA A100-SXM4-40GB", "00000000:00:04.0"),
    # attached_gpus says 4, the capture kept one <gpu>: the parser reports what is there
    A100_80_V12: ("535.54.03", "12.2", 1, "NVIDIA A100-SXM4-80GB", "00000000:01:00.0"),
    A10G_V11: ("515.105.01", "11.7", 1, "NVIDIA A10G", "00000000:00:1E.0"),
    P400_418: ("418.43", "10.1", 1, "Quadro P400", "00000000:43:00.0"),
    RTX3080_V13: ("595.58.03", "13.2", 1, "NVIDIA GeForce RTX 3080", "00000000:0C:00.0"),
    T4_V11: ("515.105.01", "11.7", 1, "Tesla T4", "00000000:00:1E.0"),
    V100S_X8: ("460.73.01", "11.2", 8, "Tesla V100S-PCIE-32GB", "00000000:00:0D.0"),
}


def parse(rel: str) -> NodeFacts:
    return nvidia_smi_xml.parse(read_corpus(rel))


def first_gpu(text: str) -> Gpu:
    gpus = nvidia_smi_xml.parse(text).gpus
    assert gpus
    return gpus[0]


def all_gpus(rel: str) -> list[Gpu]:
    gpus = parse(rel).gpus
    assert gpus is not None
    return gpus


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_every_corpus_file_gives_driver_count_name_and_bus_id(rel: str) -> None:
    version, cuda, count, name, bus_id = EXPECTED[rel]
    facts = parse(rel)
    assert facts.driver is not None
    assert (facts.driver.version, facts.driver.cuda_version) == (version, cuda)
    assert facts.gpus is not None and len(facts.gpus) == count
    assert (facts.gpus[0].name, facts.gpus[0].bus_id) == (name, bus_id)
    assert facts.gpus[0].uuid is not None and facts.gpus[0].uuid.startswith("GPU-")
    # only this parser's fields are set
    assert facts.topology is None and facts.mig_instances is None and facts.ib_ports is None


def test_v100s_has_eight_gpus_indexed_in_document_order() -> None:
    gpus = all_gpus(V100S_X8)
    assert [g.index for g in gpus] == list(range(8))
    assert [g.bus_id for g in gpus] == [f"00000000:00:{n:02X}.0" for n in range(0x0D, 0x15)]
    assert {g.name for g in gpus} == {"Tesla V100S-PCIE-32GB"}
    assert gpus[1].serial == "1562920005886"
    assert [g.power_draw_w for g in gpus[:2]] == [232.8, 152.03]


def test_v100s_old_schema_ecc_totals_and_retired_pages() -> None:
    gpu = first_gpu(read_corpus(V100S_X8))
    assert (gpu.ecc_mode_current, gpu.ecc_mode_pending) == (True, True)
    assert (gpu.ecc_volatile_corrected, gpu.ecc_volatile_uncorrected) == (0, 0)
    assert (gpu.ecc_aggregate_corrected, gpu.ecc_aggregate_uncorrected) == (0, 0)
    assert gpu.retired_pages_pending is False
    assert gpu.remap_correctable is None  # Volta has no row remapper: N/A
    assert gpu.mig_mode_current is None
    assert gpu.architecture is None  # not in the v11 schema of driver 460


def test_v100s_power_capped_gpus_report_sw_power_cap() -> None:
    gpus = all_gpus(V100S_X8)
    assert {g.index: g.throttle_reasons for g in gpus if g.throttle_reasons} == {
        3: ["sw_power_cap"],
        6: ["sw_power_cap"],
    }
    assert gpus[0].throttle_reasons == []  # known and none active, not unknown


def test_old_schema_uses_the_total_not_a_sum_of_sub_counters() -> None:
    text = read_corpus(V100S_X8)
    # first GPU, volatile single_bit: device_memory 2, register_file 1, total 3
    text = text.replace("<device_memory>0</device_memory>", "<device_memory>2</device_memory>", 1)
    text = text.replace("<register_file>0</register_file>", "<register_file>1</register_file>", 1)
    text = text.replace("<total>0</total>", "<total>3</total>", 1)
    gpu = first_gpu(text)
    assert gpu.ecc_volatile_corrected == 3
    assert gpu.ecc_volatile_uncorrected == 0
    assert gpu.ecc_aggregate_corrected == 0


def test_a100_40gb_mig_enabled_with_volatile_ecc_not_available() -> None:
    gpu = first_gpu(read_corpus(A100_40_V11))
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (True, True)
    # MIG mode hides the volatile counters (N/A); aggregate ones are still there
    assert (gpu.ecc_volatile_corrected, gpu.ecc_volatile_uncorrected) == (None, None)
    assert (gpu.ecc_aggregate_corrected, gpu.ecc_aggregate_uncorrected) == (0, 0)
    assert gpu.retired_pages_pending is None  # HBM part: N/A
    assert (gpu.remap_correctable, gpu.remap_pending, gpu.remap_failure) == (None, None, None)
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (4, 4, 16, 16)
    assert (gpu.temperature_c, gpu.temperature_slowdown_c, gpu.temperature_shutdown_c) == (36, 89, 92)
    assert (gpu.power_draw_w, gpu.power_limit_w) == (66.92, 400.0)
    assert gpu.memory_total_mib == 40960
    assert gpu.architecture == "Ampere"
    assert gpu.vbios == "92.00.45.00.03"
    assert gpu.persistence_mode is False
    assert gpu.compute_mode == "Default"
    # a value wrapped over two lines ("Not Active\n   ") still reads as not active
    assert gpu.throttle_reasons == []


def test_a100_80gb_v12_power_from_gpu_power_readings_and_fabric_not_available() -> None:
    gpu = first_gpu(read_corpus(A100_80_V12))
    assert (gpu.mig_mode_current, gpu.mig_mode_pending) == (True, True)
    assert (gpu.power_draw_w, gpu.power_limit_w) == (67.03, 500.0)
    assert (gpu.ecc_volatile_corrected, gpu.ecc_volatile_uncorrected) == (0, 0)
    assert (gpu.fabric_state, gpu.fabric_status) == (None, None)  # N/A on A100
    assert gpu.throttle_reasons == []  # from clocks_event_reasons
    assert gpu.memory_total_mib == 81920


def test_new_schema_sums_sram_and_dram_counters() -> None:
    text = read_corpus(A100_80_V12)
    volatile = (
        "<volatile>\n<sram_correctable>2</sram_correctable>\n<sram_uncorrectable>1</sram_uncorrectable>\n"
        "<dram_correctable>3</dram_correctable>\n<dram_uncorrectable>4</dram_uncorrectable>\n</volatile>"
    )
    text = re.sub(r"<volatile>.*?</volatile>", volatile, text, count=1, flags=re.S)
    gpu = first_gpu(text)
    assert (gpu.ecc_volatile_corrected, gpu.ecc_volatile_uncorrected) == (5, 5)
    assert (gpu.ecc_aggregate_corrected, gpu.ecc_aggregate_uncorrected) == (0, 0)


def test_v13_sums_parity_and_secded_and_ignores_threshold_flag() -> None:
    text = read_corpus(RTX3080_V13)
    aggregate = (
        "<aggregate><sram_correctable>1</sram_correctable>"
        "<sram_uncorrectable_parity>2</sram_uncorrectable_parity>"
        "<sram_uncorrectable_secded>3</sram_uncorrectable_secded>"
        "<dram_correctable>N/A</dram_correctable><dram_uncorrectable>4</dram_uncorrectable>"
        "<sram_threshold_exceeded>No</sram_threshold_exceeded></aggregate>"
    )
    text = re.sub(r"<aggregate>.*?</aggregate>", aggregate, text, count=1, flags=re.S)
    gpu = first_gpu(text)
    assert (gpu.ecc_aggregate_corrected, gpu.ecc_aggregate_uncorrected) == (1, 9)
    assert gpu.ecc_volatile_corrected is None  # all N/A on GeForce


def test_a10g_row_remapper_idle_throttle_and_downtrained_link() -> None:
    gpu = first_gpu(read_corpus(A10G_V11))
    assert (gpu.remap_correctable, gpu.remap_uncorrectable) == (0, 0)
    assert (gpu.remap_pending, gpu.remap_failure) == (False, False)
    assert gpu.throttle_reasons == ["gpu_idle"]
    # idle link: gen 1 x8 of a gen 4 x16 slot
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (1, 4, 8, 16)
    assert gpu.mig_mode_current is None and gpu.mig_mode_pending is None  # N/A: no MIG on A10G


def test_row_remap_pending_and_failure_read_as_true() -> None:
    text = read_corpus(A10G_V11)
    text = text.replace("<remapped_row_corr>0<", "<remapped_row_corr>12<")
    text = text.replace("<remapped_row_pending>No<", "<remapped_row_pending>Yes<")
    text = text.replace("<remapped_row_failure>No<", "<remapped_row_failure>Yes<")
    gpu = first_gpu(text)
    assert (gpu.remap_correctable, gpu.remap_pending, gpu.remap_failure) == (12, True, True)


def test_t4_retired_pages_not_pending_and_x8_link() -> None:
    gpu = first_gpu(read_corpus(T4_V11))
    assert gpu.retired_pages_pending is False
    assert gpu.architecture == "Turing"
    assert (gpu.pcie_width_current, gpu.pcie_width_max) == (8, 16)
    assert (gpu.power_draw_w, gpu.power_limit_w) == (26.78, 70.0)


def test_p400_without_dtd_has_no_ecc_power_or_mig() -> None:
    gpu = first_gpu(read_corpus(P400_418))
    assert (gpu.ecc_mode_current, gpu.ecc_volatile_corrected, gpu.ecc_aggregate_uncorrected) == (None, None, None)
    assert (gpu.power_draw_w, gpu.power_limit_w) == (None, None)
    assert gpu.mig_mode_current is None  # no <mig_mode> element before R450
    assert gpu.remap_correctable is None  # no <remapped_rows> element
    assert gpu.throttle_reasons == ["gpu_idle"]
    assert (gpu.temperature_slowdown_c, gpu.temperature_shutdown_c) == (100, 103)


def test_v13_power_draw_from_instant_reading() -> None:
    gpu = first_gpu(read_corpus(RTX3080_V13))
    assert (gpu.power_draw_w, gpu.power_limit_w) == (142.33, 320.0)
    assert gpu.ecc_mode_current is None
    assert gpu.serial == "REDACTED"


def test_active_event_reasons_use_nvml_names() -> None:
    text = read_corpus(A100_80_V12)
    for reason in ("hw_slowdown", "display_clocks_setting"):
        tag = f"clocks_event_reason_{reason}"
        text = text.replace(f"<{tag}>Not Active</{tag}>", f"<{tag}>Active</{tag}>")
    gpu = first_gpu(text)
    assert gpu.throttle_reasons == ["hw_slowdown", "display_clock_setting"]


def test_fabric_state_and_status_read_when_set() -> None:
    text = read_corpus(A100_80_V12)
    text = text.replace("<state>N/A</state>", "<state>Completed</state>")
    text = text.replace("<status>N/A</status>", "<status>Success</status>")
    gpu = first_gpu(text)
    assert (gpu.fabric_state, gpu.fabric_status) == ("Completed", "Success")


@pytest.mark.parametrize("value", ["N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error"])
def test_not_available_spellings_are_none(value: str) -> None:
    text = read_corpus(T4_V11).replace("<gpu_temp>40 C</gpu_temp>", f"<gpu_temp>{value}</gpu_temp>")
    text = text.replace("<persistence_mode>Disabled<", f"<persistence_mode>{value}<")
    gpu = first_gpu(text)
    assert gpu.temperature_c is None
    assert gpu.persistence_mode is None


def test_truncated_file_is_a_parse_error_at_the_cut() -> None:
    lines = read_corpus(V100S_X8).splitlines(keepends=True)
    with pytest.raises(ParseError) as caught:
        nvidia_smi_xml.parse("".join(lines[:1000]))
    assert caught.value.line is not None and 990 <= caught.value.line <= 1001


def test_malformed_tag_reports_its_line() -> None:
    lines = read_corpus(T4_V11).splitlines(keepends=True)
    lines[19] = "        <serial>0000</seria>\n"
    with pytest.raises(ParseError) as caught:
        nvidia_smi_xml.parse("".join(lines))
    assert caught.value.line == 20


def test_garbage_is_a_parse_error_on_line_one() -> None:
    with pytest.raises(ParseError) as caught:
        nvidia_smi_xml.parse("this is not what nvidia-smi prints\nat all\n")
    assert caught.value.line == 1


def test_binary_data_is_a_parse_error_with_line() -> None:
    with pytest.raises(ParseError) as caught:
        nvidia_smi_xml.parse('<?xml version="1.0" ?>\n<nvidia_smi_log>\n\x00\x01\x02\x7f')
    assert caught.value.line == 3


def test_entity_declarations_are_refused() -> None:
    text = '<?xml version="1.0"?>\n<!DOCTYPE x [\n<!ENTITY a "aaaa">\n]>\n<nvidia_smi_log>&a;</nvidia_smi_log>'
    with pytest.raises(ParseError) as caught:
        nvidia_smi_xml.parse(text)
    assert caught.value.line == 3


def test_other_xml_is_refused() -> None:
    with pytest.raises(ParseError, match="nvidia_smi_log"):
        nvidia_smi_xml.parse('<?xml version="1.0"?>\n<nvidia_smi_log_x/>\n')


@pytest.mark.parametrize(
    "message",
    [
        "Failed to initialize NVML: Driver/library version mismatch",
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.183",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.",
    ],
)
def test_driver_failure_text_is_carried_verbatim(message: str) -> None:
    with pytest.raises(ParseError) as caught:
        nvidia_smi_xml.parse(message + "\n\n")
    assert message in str(caught.value)
    assert caught.value.reason == message


def test_no_devices_found_means_zero_gpus() -> None:
    facts = nvidia_smi_xml.parse("No devices were found\n")
    assert facts.gpus == []


def test_registry_names_the_snapshot_file_in_errors() -> None:
    with pytest.raises(ParseError, match=r"^nvidia-smi-q\.xml:1: Failed to initialize NVML"):
        parsers.parse("nvidia-smi-xml", "Failed to initialize NVML: Unknown Error\n", source="nvidia-smi-q.xml")


def test_warning_printed_before_the_xml_is_skipped_and_lines_stay_true() -> None:
    warning = "WARNING: infoROM is corrupted at gpu 0000:00:1E.0\n"
    facts = nvidia_smi_xml.parse(warning + read_corpus(T4_V11))
    assert facts.gpus is not None and facts.gpus[0].name == "Tesla T4"
    lines = read_corpus(T4_V11).splitlines(keepends=True)
    lines[19] = "        <serial>0000</seria>\n"
    with pytest.raises(ParseError) as caught:
        nvidia_smi_xml.parse(warning + "".join(lines))
    assert caught.value.line == 21


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("00000000:07:00.0", "00000000:07:00.0"),
        ("0000:07:00.0", "00000000:07:00.0"),
        ("07:00.0", "00000000:07:00.0"),
        ("0000:3b:00.0", "00000000:3B:00.0"),
        ("PCI:0000:3b:00", "00000000:3B:00.0"),  # kernel Xid lines omit the function
        ("00000001:00:00.0", "00000001:00:00.0"),  # Azure H100 NVL: domain 1
        ("N/A", None),
        ("", None),
    ],
)
def test_bus_ids_normalise_to_the_nvidia_smi_form(raw: str, normalised: str | None) -> None:
    assert normalize_bus_id(raw) == normalised


def test_mig_devices_give_the_gpu_instance_of_each_device() -> None:
    # corpus a100-sxm4-40gb-mig-510-v11: two MIG devices, in GPU instances 1 and 2
    assert nvidia_smi_xml.parse(read_corpus(A100_40_V11)).mig_compute_gis == {0: [1, 2]}


def test_gpus_not_in_mig_mode_report_no_mig_devices() -> None:
    # corpus a10g-515-v11: a <mig_devices> block on a GPU without MIG
    assert nvidia_smi_xml.parse(read_corpus("nvidia_smi_xml/a10g-515-v11.xml")).mig_compute_gis is None
