"""nvbandwidth parser, against the real outputs in corpus/nvbandwidth."""

from __future__ import annotations

import doctest

import pytest

from assessor.errors import ParseError
from assessor.facts import NvbandwidthRun
from assessor.parsers import nvbandwidth
from assessor.parsers.detect import detect_kind, snapshot_file
from tests.support.corpus import read_corpus


def run_of(rel: str) -> NvbandwidthRun:
    run = nvbandwidth.parse(read_corpus(rel)).nvbandwidth
    assert run is not None
    return run


def test_whole_run_versions_devices_matrix_and_sum() -> None:
    run = run_of("nvbandwidth/01_v0.8_a100_h2d_sm_full.txt")
    assert (run.version, run.driver_version, run.devices) == ("v0.8", "560.35.05", ["NVIDIA A100-SXM4-40GB"])
    (test,) = run.tests
    assert (test.name, test.columns, test.per_column(), test.sum_gbps) == (
        "host_to_device_memcpy_sm",
        [0],
        {0: 25.13},
        25.13,
    )
    assert test.title == "memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)"


def test_gpu_matrix_with_na_diagonal_and_no_running_line() -> None:
    (test,) = run_of("nvbandwidth/03_v0.8_a6000_d2d_read_ce_na_diagonal_cut.txt").tests
    assert test.name == "device_to_device_memcpy_read_ce"  # from the SUM line
    assert len(test.rows) == 6 and test.rows[0].values[0] is None and test.rows[0].values[1] == 26.34
    assert test.sum_gbps == 715.53


def test_quoted_running_lines_two_tests_without_sums() -> None:
    tests = run_of("nvbandwidth/04_h100_8gpu_h2d_d2h_sm_quoted_no_header.txt").tests
    assert [t.name for t in tests] == ["host_to_device_memcpy_sm", "device_to_host_memcpy_sm"]
    assert tests[1].per_column()[3] == 52.78 and tests[0].sum_gbps is None


def test_a_test_that_stops_on_an_assert_has_an_error_and_no_figures() -> None:
    run = run_of("nvbandwidth/05_v0.7_a100_8gpu_d2d_read_ce_assert.txt")
    (test,) = run.tests
    assert test.name == "device_to_device_memcpy_read_ce" and not test.rows
    assert test.error is not None and test.error.startswith("ASSERT in expression h_errorFlag == 0")
    assert len(run.devices) == 8


def test_a_row_with_too_few_values_names_its_line() -> None:
    text = "Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n   0   1\n 0  55.1\n"
    with pytest.raises(ParseError) as err:
        nvbandwidth.parse(text)
    assert err.value.line == 4


def test_text_that_is_not_nvbandwidth_is_refused() -> None:
    with pytest.raises(ParseError, match="not nvbandwidth output"):
        nvbandwidth.parse("T/V  N  NB  P  Q  Time  Gflops\n")


@pytest.mark.parametrize(
    "rel", ["nvbandwidth/01_v0.8_a100_h2d_sm_full.txt", "nvbandwidth/03_v0.8_a6000_d2d_read_ce_na_diagonal_cut.txt"]
)
def test_recognised_and_filed_as_nvbandwidth(rel: str) -> None:
    text = read_corpus(rel)
    assert detect_kind(text) == "nvbandwidth"
    assert snapshot_file(text) == "nvbandwidth.txt"


def test_doctest() -> None:
    assert doctest.testmod(nvbandwidth).failed == 0
