"""dcgmi diag on real DCGM 4.x runs and real level-4 runs (tests/data/corpus/dcgmi_diag/06-10, SOURCES.md), read
by the parser and judged by dcgm.diag, its run level included."""

from __future__ import annotations

import pytest

from assessor.checks.dcgm import run_level
from assessor.facts import DcgmDiag, NodeFacts
from assessor.parsers import parse
from tests.support.builders import run
from tests.support.corpus import read_corpus

GB10_R3 = "dcgmi_diag/07_dcgm4.4.2_r3_gb10_nvbandwidth_all_skip.txt"
GUIDE_R3 = "dcgmi_diag/08_dcgm4.0.0_r3_four_gpus_user_guide.txt"
GCM_R4 = "dcgmi_diag/09_dcgm2.x_r4_blacklist_pulse_test_memtest.txt"
PAGE_R4 = "dcgmi_diag/10_dcgm3.x_r4_one_gpu_persistence_fail_memtest.txt"
ONE_GPU_R2 = "dcgmi_diag/06_dcgm4.4.2_r2_single_gpu_4x_plugins.txt"


def diag_of(rel: str) -> DcgmDiag:
    facts = parse("dcgmi-diag", read_corpus(rel))
    assert facts.dcgm_diag is not None
    return facts.dcgm_diag


def test_a_4x_long_run_has_nvbandwidth_in_hardware_and_the_stress_plugins_in_run_order() -> None:
    d = diag_of(GB10_R3)
    assert d.version == "4.4.2"
    assert [(t.category, t.name) for t in d.tests] == [
        ("Deployment", "software"),
        ("Hardware", "memory"),
        ("Hardware", "diagnostic"),
        ("Hardware", "nvbandwidth"),
        ("Integration", "pcie"),
        ("Stress", "memory_bandwidth"),
        ("Stress", "targeted_stress"),
        ("Stress", "targeted_power"),
    ]
    assert [t.result for t in d.tests] == ["Pass"] + ["Skip"] * 7
    assert d.tests[1].details == ["GPU0: Skip"]


def test_four_gpus_give_one_row_each_and_the_ids_joined_by_comma_space() -> None:
    d = diag_of(GUIDE_R3)
    assert d.metadata["GPU Device IDs Detected"] == "25b6, 25b6, 25b6, 25b6"
    assert all(t.result == "Pass" for t in d.tests)
    assert all(t.details == [f"GPU{i}: Pass" for i in range(4)] for t in d.tests)


def test_level_4_rows_of_the_older_layout_are_pulse_test_in_hardware_and_memtest_in_stress() -> None:
    d = diag_of(GCM_R4)
    cats = {t.name: t.category for t in d.tests}
    assert cats["Pulse Test"] == "Hardware" and cats["Memtest"] == "Stress"
    assert cats["Diagnostic"] == "Hardware"  # a test row named like the table's header row is still a test
    assert [t.name for t in d.tests if t.category == "Stress"][-2:] == ["Memory Bandwidth", "Memtest"]
    assert d.tests[0].name == "Blacklist" and all(t.result == "Pass" for t in d.tests)


@pytest.mark.parametrize(
    ("rel", "level"),
    [(ONE_GPU_R2, 2), (GB10_R3, 3), (GUIDE_R3, 3), (GCM_R4, 4), (PAGE_R4, 4)],
)
def test_the_run_level_is_read_from_the_tests_present(rel: str, level: int) -> None:
    assert run_level(diag_of(rel)) == level


def test_a_level_4_run_with_everything_skipped_but_memtest_is_no_pass() -> None:
    d = diag_of(PAGE_R4)
    results = {t.name: t.result for t in d.tests}
    assert results["Persistence Mode"] == "Fail" and results["Memtest"] == "Pass"
    assert results["PCIe"] == results["Pulse Test"] == "Skip"
    # the wrapped Error is one detail again, its mid-word cuts joined
    assert d.tests[4].details == [
        "Error: Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires peristence mode "
        'to be enabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.'
    ]
    r = run("dcgm.diag", NodeFacts(dcgm_diag=d), min_level=4)
    assert r.status == "fail" and "Persistence Mode" in r.message


def test_min_level_turns_a_passing_level_3_run_into_a_warning_and_lets_level_4_pass() -> None:
    long_run = NodeFacts(dcgm_diag=diag_of(GUIDE_R3))
    assert run("dcgm.diag", long_run).status == "pass"
    short_of = run("dcgm.diag", long_run, min_level=4)
    assert short_of.status == "warn"
    assert "a level-3 run: level 4 was asked for" in short_of.message
    xlong = run("dcgm.diag", NodeFacts(dcgm_diag=diag_of(GCM_R4)), min_level=4)
    assert xlong.status == "pass" and xlong.message.endswith("(a level-4 run)")


def test_a_dcgm_4_warning_under_a_gpu_row_keeps_the_gpu_it_names() -> None:
    text = "\n".join(
        [
            "Successfully ran diagnostic for group.",
            "+---------------------------+------------------------------------------------+",
            "| Diagnostic                | Result                                         |",
            "+===========================+================================================+",
            "+-----  Stress  ------------+------------------------------------------------+",
            "| memtest                   | Fail                                           |",
            "|                           | GPU0: Pass                                     |",
            "|                           | GPU1: Fail                                     |",
            "| Warning: GPU1             | A memory mismatch was detected on GPU 1, but   |",
            "|                           | no error was reported by CUDA or NVML. Run a   |",
            "|                           | field diagnostic on the GPU.                   |",
            "+---------------------------+------------------------------------------------+",
        ]
    )
    facts = parse("dcgmi-diag", text)
    assert facts.dcgm_diag is not None
    [memtest] = facts.dcgm_diag.tests
    assert memtest.result == "Fail"
    assert memtest.details == [
        "GPU0: Pass",
        "GPU1: Fail",
        "Warning: GPU1: A memory mismatch was detected on GPU 1, but no error was reported by CUDA or NVML. "
        "Run a field diagnostic on the GPU.",
    ]
    r = run("dcgm.diag", facts)
    assert r.status == "fail" and "Stress/memtest (GPU1: Fail; Warning: GPU1: A memory mismatch" in r.message
