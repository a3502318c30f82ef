"""HPL parser (HPL-NVIDIA and netlib xhpl), against the real outputs in corpus/hpl."""

from __future__ import annotations

import doctest

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.facts import HplRun
from assessor.parsers import hpl
from assessor.parsers.detect import detect_kind, snapshot_file
from tests.support.corpus import read_corpus


def run_of(rel: str) -> HplRun:
    run = hpl.parse(read_corpus(rel)).hpl
    assert run is not None
    return run


def test_hpl_nvidia_one_gpu_row_per_gpu_column_and_passed_residual() -> None:
    run = run_of("hpl/02_hpl_nvidia_a100_1gpu_passed.txt")
    assert run.version == "HPL-NVIDIA 24.3.0"
    (r,) = run.results
    assert (r.variant, r.n, r.nb, r.p, r.q, r.time_s) == ("WC0", 92160, 1024, 1, 1, 30.73)
    assert (r.gflops, r.gflops_per_gpu) == (16980.0, 16980.0)
    assert (r.residual, r.residual_check) == (0.000320172243, "PASSED")


def test_nccl_lines_between_row_and_residual_do_not_break_the_link() -> None:
    (r,) = run_of("hpl/03_hpl_nvidia_2node_a100_nccl_lines_inside.txt").results
    assert (r.p, r.q, r.gflops_per_gpu, r.residual_check) == (2, 1, 16560.0, "PASSED")


def test_progress_lines_and_a_cut_leave_the_row_without_a_residual() -> None:
    (r,) = run_of("hpl/05_hpl_nvidia_32gpu_progress_lines_skip.txt").results
    assert (r.variant, r.n, r.p, r.q, r.gflops_per_gpu) == ("WC03R2R2", 528384, 8, 4, 41920.0)
    assert r.residual_check is None  # the paste ends at the row: no evidence either way


def test_indented_excerpt_of_the_table_alone() -> None:
    (r,) = run_of("hpl/01_hpl_nvidia_h100_16gpu_pkb_docstring.txt").results
    assert (r.p * r.q, r.gflops, r.gflops_per_gpu) == (16, 417600.0, 26100.0)


def test_netlib_output_has_no_per_gpu_column() -> None:
    run = run_of("hpl/06_netlib_hpl_2.1_48proc_full.txt")
    assert run.version == "HPLinpack 2.1"
    (r,) = run.results
    assert (r.variant, r.gflops, r.gflops_per_gpu, r.residual_check) == ("WR01C2R4", 979.69, None, "PASSED")


def test_markdown_br_tags_are_not_part_of_the_numbers() -> None:
    (r,) = run_of("hpl/07_netlib_hpl_sycl_markdown_br_tags.txt").results
    assert (r.gflops, r.residual, r.residual_check) == (138.7, 0.0056536, "PASSED")


def test_failed_residual_and_launcher_prefixes() -> None:
    text = (
        "[1,0]<stdout>:T/V                N    NB     P     Q         Time          Gflops (   per GPU)\n"
        "[1,0]<stdout>:WC0           261120  1024     4     2        71.42       1.662e+05 ( 2.077e+04)\n"
        "[1,0]<stdout>:||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   1700000000.000000000000 ...... FAILED\n"
    )
    (r,) = hpl.parse(text).hpl.results  # type: ignore[union-attr]
    assert (r.gflops_per_gpu, r.residual_check) == (20770.0, "FAILED")


def test_hpl_error_is_the_runs_error() -> None:
    text = (
        "HPL ERROR from process # 0, on line 419 of function HPL_pdinfo:\n"
        ">>> Need at least 8 processes for these tests <<<\n"
    )
    run = hpl.parse(text).hpl
    assert run is not None and not run.results
    assert run.error == "Need at least 8 processes for these tests"


def test_a_broken_row_after_the_header_names_its_line() -> None:
    text = "T/V                N    NB     P     Q         Time          Gflops\nWC0           261120  10x4\n"
    with pytest.raises(ParseError) as err:
        hpl.parse(text)
    assert err.value.line == 2


def test_text_that_is_not_hpl_is_refused() -> None:
    with pytest.raises(ParseError, match="not HPL output"):
        hpl.parse("Running host_to_device_memcpy_ce.\n")


@pytest.mark.parametrize(
    "rel",
    [
        "hpl/02_hpl_nvidia_a100_1gpu_passed.txt",
        "hpl/06_netlib_hpl_2.1_48proc_full.txt",
        "hpl/01_hpl_nvidia_h100_16gpu_pkb_docstring.txt",
    ],
)
def test_recognised_and_filed_as_hpl(rel: str) -> None:
    text = read_corpus(rel)
    assert detect_kind(text) == "hpl"
    assert snapshot_file(text) == "hpl.txt"
    assert parsers.parse("auto", text).hpl is not None


def test_doctest() -> None:
    assert doctest.testmod(hpl).failed == 0
