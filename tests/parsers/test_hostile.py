"""Hostile input: every parser is linear in its input, and refuses what no tool prints by name and line."""

from __future__ import annotations

import contextlib
import time

import pytest

from assessor import parsers
from assessor.errors import ParseError
from tests.parsers.hostile import QUICK_RUNS, hostile_inputs
from tests.support.corpus import read_corpus

# 64 kB of the inputs that were quadratic (a 20 kB one took 4 s in ib_write_bw): a linear parser
# reads each in milliseconds, a quadratic one in seconds. bench/parsers.py times 1 MB.
SIZE = 64_000
LIMIT_S = 1.0


@pytest.mark.parametrize("kind", sorted(parsers.KINDS))
def test_every_parser_reads_hostile_input_in_linear_time(kind):
    slowest = (0.0, "")
    for label, text in hostile_inputs(kind, SIZE, QUICK_RUNS):
        start = time.perf_counter()
        with contextlib.suppress(ParseError):
            parsers.parse(kind, text)
        slowest = max(slowest, (time.perf_counter() - start, label))
    assert slowest[0] < LIMIT_S, f"{kind} took {slowest[0]:.2f} s on {slowest[1]}"


XML = "nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml"


def test_xml_with_a_doctype_internal_subset_is_refused_naming_its_line():
    # One attribute default copied into thousands of empty elements: gigabytes from a megabyte.
    text = read_corpus(XML)
    start = text.index("<!DOCTYPE")
    end = text.index(">", start) + 1
    bomb = '<!DOCTYPE nvidia_smi_log [\n<!ATTLIST gpu x CDATA "' + "a" * 1000 + '">\n]>'
    hostile = text[:start] + bomb + text[end:].replace("</nvidia_smi_log>", "<gpu/>" * 3000 + "</nvidia_smi_log>")
    with pytest.raises(ParseError) as info:
        parsers.parse("nvidia-smi-xml", hostile)
    assert "internal subset" in str(info.value)
    assert info.value.line == text[:start].count("\n") + 1


def test_xml_with_its_external_dtd_still_parses():
    facts = parsers.parse("nvidia-smi-xml", read_corpus(XML))
    assert facts.gpus


def test_a_five_thousand_digit_field_is_a_parse_error_naming_its_line():
    text = read_corpus(XML)
    at = text.index("<gpu_temp>") + len("<gpu_temp>")
    hostile = text[:at] + "9" * 5000 + text[at:]
    with pytest.raises(ParseError) as info:
        parsers.parse("nvidia-smi-xml", hostile)
    assert info.value.line == text[:at].count("\n") + 1


def test_deeply_nested_xml_is_read_or_refused_quickly():
    hostile = "<nvidia_smi_log>" + "<a>" * 100_000 + "</a>" * 100_000 + "</nvidia_smi_log>"
    start = time.perf_counter()
    try:
        facts = parsers.parse("nvidia-smi-xml", hostile)
    except ParseError:
        pass
    else:
        assert facts.gpus == []
    assert time.perf_counter() - start < 5


def test_deeply_nested_json_is_a_parse_error_naming_its_line():
    hostile = '{"gpus":\n' + "[" * 100_000
    with pytest.raises(ParseError) as info:
        parsers.parse("nvml", hostile)
    assert info.value.line == 2


def test_nan_in_nvml_json_is_refused():
    with pytest.raises(ParseError):
        parsers.parse("nvml", '{"gpus": [{"index": 0, "temperature_c": NaN}]}')


def test_a_nul_byte_is_a_parse_error_naming_its_line_for_every_kind():
    for kind in parsers.KINDS:
        with pytest.raises(ParseError) as info:
            parsers.parse(kind, "first line\nsecond\x00line\n")
        assert info.value.line == 2, kind
