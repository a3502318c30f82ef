"""The simulated ``dcgmi diag -r 4`` (xlong): memtest and the pulse test in both layouts, nvbandwidth in DCGM 4,
tests run by name, DCGM's refusals, and the weak-hbm-row fault that only memtest finds."""

from __future__ import annotations

import pytest

from assessor.facts import DcgmDiag, DcgmTest
from assessor.parsers import parse
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.corpus import read_corpus
from tests.support.dcgmi_status import assert_tool_status


def dcgmi(state: NodeState, *args: str) -> ToolResult:
    return run_tool(["dcgmi", *args], Session(state=state))


def diag(state: NodeState, *args: str) -> DcgmDiag:
    result = dcgmi(state, "diag", *args)
    assert_tool_status(["dcgmi", "diag"], result)
    facts = parse("dcgmi-diag", result.stdout)
    assert facts.dcgm_diag is not None
    return facts.dcgm_diag


def layout(d: DcgmDiag) -> list[tuple[str, str]]:
    return [(t.category, t.name) for t in d.tests]


def by_name(d: DcgmDiag) -> dict[str, DcgmTest]:
    return {t.name: t for t in d.tests}


@pytest.fixture
def h200() -> NodeState:
    return load_fixture("hgx-h200")  # DCGM 4.2.3


@pytest.fixture
def h100() -> NodeState:
    return load_fixture("hgx-h100")  # DCGM 3.3.8


# ---- which tests each level runs, in each layout ------------------------------------------------------------


def test_a_dcgm_4_long_run_has_the_plugins_of_a_real_4x_long_run_in_its_order(h200: NodeState) -> None:
    real = parse("dcgmi-diag", read_corpus("dcgmi_diag/07_dcgm4.4.2_r3_gb10_nvbandwidth_all_skip.txt")).dcgm_diag
    assert real is not None
    assert layout(diag(h200, "-r", "3")) == layout(real)
    assert "nvbandwidth" not in by_name(diag(h200, "-r", "2"))  # a level-3 plugin


def test_a_dcgm_4_xlong_run_adds_pulse_test_to_hardware_and_memtest_to_stress_in_run_order(h200: NodeState) -> None:
    d = diag(h200, "-r", "4")
    assert layout(d) == [
        ("Deployment", "software"),
        ("Hardware", "memory"),
        ("Hardware", "diagnostic"),
        ("Hardware", "nvbandwidth"),
        ("Hardware", "pulse_test"),
        ("Integration", "pcie"),
        # memtest runs with the hardware plugins, before the performance ones, but is a Stress plugin
        ("Stress", "memtest"),
        ("Stress", "memory_bandwidth"),
        ("Stress", "targeted_stress"),
        ("Stress", "targeted_power"),
    ]
    assert {t.result for t in d.tests} == {"Pass"}
    assert layout(diag(h200, "-r", "xlong")) == layout(d)


def test_a_dcgm_3_xlong_run_has_the_rows_of_real_level_4_runs(h100: NodeState) -> None:
    out = dcgmi(h100, "diag", "-r", "4").stdout
    d = parse("dcgmi-diag", out).dcgm_diag
    assert d is not None
    rows = layout(d)
    assert rows[9:] == [
        ("Integration", "PCIe"),
        ("Hardware", "GPU Memory"),
        ("Hardware", "Diagnostic"),
        ("Hardware", "Pulse Test"),
        ("Stress", "Targeted Stress"),
        ("Stress", "Targeted Power"),
        ("Stress", "Memory Bandwidth"),
        ("Stress", "Memtest"),
        ("Stress", "EUD Test"),
    ]
    # the rows two real level-4 runs share with it come in the same order and sections
    for rel in (
        "dcgmi_diag/09_dcgm2.x_r4_blacklist_pulse_test_memtest.txt",
        "dcgmi_diag/10_dcgm3.x_r4_one_gpu_persistence_fail_memtest.txt",
    ):
        real = parse("dcgmi-diag", read_corpus(rel)).dcgm_diag
        assert real is not None
        ours = [row for row in rows if row in set(layout(real))]
        assert ours == [row for row in layout(real) if row in set(rows)], rel
    assert {len(line) for line in out.splitlines()[1:]} == {78}
    assert by_name(d)["Memtest"].result == "Pass" and by_name(d)["EUD Test"].result == "Skip"


@pytest.mark.parametrize(("alias", "level"), [("quick", "1"), ("short", "1"), ("medium", "2"), ("long", "3")])
def test_suite_names_are_the_levels(h200: NodeState, alias: str, level: str) -> None:
    assert dcgmi(h200, "diag", "-r", alias).stdout == dcgmi(h200, "diag", "-r", level).stdout


def test_a_test_run_by_name_runs_the_software_checks_and_that_test_on_the_gpus_asked(h200: NodeState) -> None:
    d = diag(h200, "-r", "memtest", "-i", "2,5")
    assert layout(d) == [("Deployment", "software"), ("Stress", "memtest")]
    assert by_name(d)["memtest"].details == ["GPU2: Pass", "GPU5: Pass"]
    assert layout(diag(h200, "-r", "pulse_test,memtest")) == [
        ("Deployment", "software"),
        ("Hardware", "pulse_test"),
        ("Stress", "memtest"),
    ]


# ---- what dcgmi refuses ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["5", "0", "x"])
def test_a_one_character_value_that_is_no_level_is_dcgms_parse_error(h200: NodeState, value: str) -> None:
    result = dcgmi(h200, "diag", "-r", value)
    assert result.exit_code == 254 and result.stdout == ""
    assert result.stderr == (
        f"Error: Invalid value '{value}' specified for -r..\nAn error occurred trying to parse the command line.\n"
    )


def test_an_unknown_test_name_is_refused_in_each_versions_words(h200: NodeState, h100: NodeState) -> None:
    four = dcgmi(h200, "diag", "-r", "memtests")
    assert four.exit_code != 0
    assert four.stdout == "Error: requested test(s): [memtests] were not found among possible test choices.\n"
    three = dcgmi(h100, "diag", "-r", "memory bandwidth")  # NVIDIA/DCGM#67: the display name is no test name
    assert three.stdout == 'Error: requested test "memory bandwidth" was not found among possible test choices.\n'
    assert dcgmi(h100, "diag", "-r", "nvbandwidth").exit_code != 0  # no nvbandwidth plugin before DCGM 4
    assert dcgmi(h200, "diag", "-r", "eud").stdout == "Error: requested test(s): [eud] cannot find dependent package.\n"


# ---- the weak GPU only memtest finds --------------------------------------------------------------------------


def test_weak_hbm_passes_every_counter_and_the_long_run_and_fails_memtest_alone(h200: NodeState) -> None:
    faults.get("weak-hbm-row").apply(h200, gpu=5)
    for level in ("1", "2", "3"):
        assert {t.result for t in diag(h200, "-r", level).tests} == {"Pass"}, level
    rows = h200.gpu(5).remapped_rows
    assert rows is not None and not rows.failure and h200.gpu(5).ecc.volatile_uncorrected == 0

    out = dcgmi(h200, "diag", "-r", "4").stdout
    d = parse("dcgmi-diag", out).dcgm_diag
    assert d is not None
    assert [t.name for t in d.tests if t.result != "Pass"] == ["memtest"]
    memtest = by_name(d)["memtest"]
    assert [x for x in memtest.details if x.startswith("GPU") and x.endswith("Fail")] == ["GPU5: Fail"]
    assert memtest.details[6] == (
        "Warning: GPU5: A memory mismatch was detected on GPU 5, but no error was reported by CUDA or NVML. "
        "Run a field diagnostic on the GPU."
    )
    lines = out.splitlines()
    at = lines.index("|                           | GPU5: Fail                                     |")
    assert lines[at + 1].startswith("| Warning: GPU5             | A memory mismatch was detected on GPU 5")


def test_memtest_leaves_the_uncorrectable_error_and_the_failed_remap_behind(h200: NodeState) -> None:
    faults.get("weak-hbm-row").apply(h200, gpu=2)
    assert by_name(diag(h200, "-r", "4", "-i", "0,1"))["memtest"].result == "Pass"  # not run on GPU 2
    assert not h200.kernel_log or "48," not in h200.kernel_log[-1]
    diag(h200, "-r", "xlong")
    g = h200.gpu(2)
    assert g.remapped_rows is not None and g.remapped_rows.failure and g.remapped_rows.uncorrectable == 1
    assert (g.ecc.volatile_uncorrected, g.ecc.aggregate_uncorrected) == (1, 1)
    assert "NVRM: Xid (PCI:" in h200.kernel_log[-1] and "): 48, " in h200.kernel_log[-1]
    # from now on the quick run sees it too, and a second xlong run adds nothing to the counters
    software = by_name(diag(h200, "-r", "1"))["software"]
    assert software.result == "Fail"
    assert "Warning: GPU2: GPU 2 had uncorrectable memory errors and row remapping failed." in software.details[3]
    diag(h200, "-r", "4")
    assert g.ecc.aggregate_uncorrected == 1


def test_the_3x_layout_names_the_weak_gpu_in_the_memtest_row(h100: NodeState) -> None:
    faults.get("weak-hbm-row").apply(h100, gpu=3)
    memtest = by_name(diag(h100, "-r", "4"))["Memtest"]
    assert memtest.result == "Fail"
    assert memtest.details[:2] == ["Pass - GPUs: 0, 1, 2, 4, 5, 6, 7", "Fail - GPU: 3"]
    assert memtest.details[2].startswith("Warning: A memory mismatch was detected on GPU 3")


def test_the_fault_is_repaired_by_a_replacement_gpu(h200: NodeState) -> None:
    fault = faults.get("weak-hbm-row")
    fault.apply(h200, gpu=4)
    diag(h200, "-r", "4")
    fault.revert(h200, gpu=4)
    g = h200.gpu(4)
    assert g.latent_faults == [] and g.remapped_rows is not None and not g.remapped_rows.failure
    assert g.ecc.volatile_uncorrected == 0
    assert {t.result for t in diag(h200, "-r", "4").tests} == {"Pass"}


def test_the_fault_refuses_a_gpu_the_node_does_not_have(h200: NodeState) -> None:
    from assessor.errors import InputError

    with pytest.raises(InputError, match="no GPU 9"):
        faults.get("weak-hbm-row").apply(h200, gpu=9)


def test_a_3x_short_run_for_listed_gpus_prints_their_empty_sections(h100: NodeState) -> None:
    # Diag::PopulateGpuList (3.3): the GPU sections follow the GPUs of -i, or else those a GPU test ran on
    def headers(out: str) -> list[str]:
        return [line.split("-----  ")[1].split("  ")[0] for line in out.splitlines() if "-----  " in line]

    assert headers(dcgmi(h100, "diag", "-r", "1").stdout) == ["Metadata", "Deployment"]
    listed = dcgmi(h100, "diag", "-r", "1", "-i", "0").stdout
    assert headers(listed) == ["Metadata", "Deployment", "Integration", "Hardware", "Stress"]
    read = parse("dcgmi-diag", listed).dcgm_diag
    assert read is not None and [t.category for t in read.tests] == ["Deployment"] * 9


def test_dcgmi_refuses_a_bad_level_before_it_looks_for_the_host_engine(h200: NodeState) -> None:
    h200.services["nvidia-dcgm.service"].active_state = "inactive"
    assert dcgmi(h200, "diag", "-r", "7").stderr.startswith("Error: Invalid value '7' specified for -r..")
    stopped = dcgmi(h200, "diag", "-r", "4")
    assert stopped.exit_code == 235 and stopped.stdout.startswith("Error: unable to establish a connection")
