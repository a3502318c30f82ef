"""hpl.gflops, hpl.residual and nvbandwidth.host_device: pass, fail, missing and broken facts, from real samples."""

from __future__ import annotations

from assessor.facts import HplResult, HplRun, NodeFacts, NvbandwidthRun
from assessor.parsers import hpl, nvbandwidth
from tests.support.builders import A100, H100, L40S, gpus, node, run
from tests.support.corpus import read_corpus


def hpl_run(rel: str) -> HplRun:
    parsed = hpl.parse(read_corpus(rel)).hpl
    assert parsed is not None
    return parsed


def nvb_run(rel: str) -> NvbandwidthRun:
    parsed = nvbandwidth.parse(read_corpus(rel)).nvbandwidth
    assert parsed is not None
    return parsed


# ---- hpl.gflops --------------------------------------------------------------------------------


def test_gflops_passes_a_real_h100_run_at_the_reference() -> None:
    r = run("hpl.gflops", node(gpus=gpus(8, H100), hpl=hpl_run("hpl/05_hpl_nvidia_32gpu_progress_lines_skip.txt")))
    assert r.status == "pass", r.message
    assert r.observed["tflops_per_gpu"] == 41.92 and r.expected == ">= 40 TFLOPS per GPU"


def test_gflops_fails_a_real_run_below_the_reference_and_says_where_to_look() -> None:
    r = run("hpl.gflops", node(gpus=gpus(8, H100), hpl=hpl_run("hpl/01_hpl_nvidia_h100_16gpu_pkb_docstring.txt")))
    assert r.status == "fail" and "26.10 TFLOPS per GPU" in r.message and "16 GPUs" in r.message
    assert r.hint and "POWER" in r.hint


def test_gflops_reference_follows_the_gpu_model() -> None:
    a100 = hpl_run("hpl/02_hpl_nvidia_a100_1gpu_passed.txt")
    assert run("hpl.gflops", node(gpus=gpus(1, A100), hpl=a100)).status == "pass"  # 16.98 against A100's 16
    assert run("hpl.gflops", node(gpus=gpus(1, H100), hpl=a100)).status == "fail"  # the same figure on an H100


def test_gflops_without_a_per_gpu_column_divides_by_the_ranks() -> None:
    netlib = hpl_run("hpl/06_netlib_hpl_2.1_48proc_full.txt")  # 979.69 Gflops over 6 x 8 ranks
    r = run("hpl.gflops", node(gpus=gpus(8, H100), hpl=netlib), min_tflops=0.02)
    assert r.status == "pass" and r.observed["tflops_per_gpu"] == 0.02


def test_gflops_skips_for_a_model_without_reference_and_when_hpl_is_absent() -> None:
    run_ = hpl_run("hpl/02_hpl_nvidia_a100_1gpu_passed.txt")
    r = run("hpl.gflops", node(gpus=gpus(4, L40S), hpl=run_))
    assert r.status == "skip" and "min_tflops" in r.message
    assert run("hpl.gflops", node(gpus=gpus(8, H100))).status == "skip"


def test_gflops_of_a_run_that_printed_no_row_is_an_error_naming_why() -> None:
    stopped = HplRun(version="HPL-NVIDIA 24.09.0", error="Need at least 8 processes for these tests")
    r = run("hpl.gflops", node(gpus=gpus(8, H100), hpl=stopped))
    assert r.status == "error" and "Need at least 8 processes" in r.message


def test_gflops_broken_source_is_an_error() -> None:
    facts = NodeFacts(gpus=gpus(8, H100), problems={"hpl": "hpl.txt could not be parsed (line 3)"})
    assert run("hpl.gflops", facts).status == "error"


# ---- hpl.residual ------------------------------------------------------------------------------


def test_residual_passes_only_when_every_row_says_passed() -> None:
    assert run("hpl.residual", node(hpl=hpl_run("hpl/04_hpl_nvidia_gh200_2node_finished.txt"))).status == "pass"


def test_residual_failed_is_a_fail() -> None:
    bad = HplRun(results=[HplResult("WC0", 261120, 1024, 4, 2, 71.4, 166200.0, 20770.0, 1.7e9, "FAILED")])
    r = run("hpl.residual", node(hpl=bad))
    assert r.status == "fail" and "FAILED" in r.message and r.hint


def test_residual_missing_from_a_cut_paste_is_an_error_never_a_pass() -> None:
    r = run("hpl.residual", node(hpl=hpl_run("hpl/05_hpl_nvidia_32gpu_progress_lines_skip.txt")))
    assert r.status == "error" and "WC03R2R2" in r.message


def test_residual_of_no_run_skips() -> None:
    assert run("hpl.residual", node()).status == "skip"


# ---- nvbandwidth.host_device -------------------------------------------------------------------


def test_host_device_passes_real_h100_device_to_host_copies() -> None:
    run_ = nvb_run("nvbandwidth/04_h100_8gpu_h2d_d2h_sm_quoted_no_header.txt")
    r = run("nvbandwidth.host_device", node(gpus=gpus(8, H100), nvbandwidth=run_), min_gbps=30)
    assert r.status == "pass", r.message


def test_host_device_fails_the_gpu_below_the_reference_by_name() -> None:
    # the real H100 run: host to device over SM at 35 GB/s (the question) against the 48 of Gen5 x16
    run_ = nvb_run("nvbandwidth/04_h100_8gpu_h2d_d2h_sm_quoted_no_header.txt")
    r = run("nvbandwidth.host_device", node(gpus=gpus(8, H100), nvbandwidth=run_))
    assert r.status == "fail"
    assert "GPU 3 (00000000:5D:00.0): 35.03 GB/s in host_to_device_memcpy_sm" in r.message
    assert r.expected == ">= 48 GB/s per GPU"


def test_host_device_reference_from_the_runs_own_device_list() -> None:
    run_ = nvb_run("nvbandwidth/01_v0.8_a100_h2d_sm_full.txt")  # A100 at 25.13: above A100's 23
    assert run("nvbandwidth.host_device", NodeFacts(nvbandwidth=run_)).status == "pass"


def test_host_device_of_a_run_without_host_tests_skips_and_a_failed_copy_is_an_error() -> None:
    d2d = nvb_run("nvbandwidth/03_v0.8_a6000_d2d_read_ce_na_diagonal_cut.txt")
    assert run("nvbandwidth.host_device", node(nvbandwidth=d2d), min_gbps=20).status == "skip"
    stopped = nvbandwidth.parse(
        "Running host_to_device_memcpy_ce.\nCUDA_ERROR_ILLEGAL_ADDRESS in cuMemcpyAsync\n"
    ).nvbandwidth
    r = run("nvbandwidth.host_device", node(nvbandwidth=stopped), min_gbps=20)
    assert r.status == "error" and "CUDA_ERROR_ILLEGAL_ADDRESS" in r.message
