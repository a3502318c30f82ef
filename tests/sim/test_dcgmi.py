"""The simulated ``dcgmi diag``: DCGM's table, parsed by the dcgmi-diag parser, with results from the state."""

from __future__ import annotations

import pytest

from assessor.facts import DcgmDiag, DcgmTest
from assessor.parsers import parse
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import read_corpus
from tests.support.dcgmi_status import assert_tool_status

SOFTWARE = [
    "Denylist",
    "NVML Library",
    "CUDA Main Library",
    "Permissions and OS Blocks",
    "Persistence Mode",
    "Environment Variables",
    "Page Retirement/Row Remap",
    "Graphics Processes",
    "Inforom",
]


def diag(state: NodeState, level: str) -> DcgmDiag:
    result = run_tool(["dcgmi", "diag", "-r", level], Session(state=state))
    assert_tool_status(["dcgmi", "diag"], result)
    facts = parse("dcgmi-diag", result.stdout)
    assert facts.dcgm_diag is not None
    return facts.dcgm_diag


def by_name(d: DcgmDiag) -> dict[str, DcgmTest]:
    return {t.name: t for t in d.tests}


@pytest.fixture
def h100() -> NodeState:
    return load_fixture("hgx-h100")


def test_short_run_is_the_software_tests_all_passing(h100: NodeState) -> None:
    d = diag(h100, "1")
    assert (d.version, d.metadata["Driver Version Detected"]) == ("3.3.8", "565.57.01")
    assert d.metadata["GPU Device IDs Detected"] == ",".join(["2330"] * 8)
    assert [t.name for t in d.tests] == SOFTWARE
    assert {(t.category, t.result) for t in d.tests} == {("Deployment", "Pass")}


def test_medium_run_leaves_the_long_tests_out() -> None:
    d = diag(load_fixture("dgx-a100"), "2")
    results = {t.name: (t.category, t.result) for t in d.tests}
    assert results["PCIe"] == ("Integration", "Pass")
    assert results["GPU Memory"] == ("Hardware", "Pass")
    assert not {"Targeted Stress", "Targeted Power", "Memory Bandwidth"} & set(results)


def test_long_run_passes_everything_on_a_healthy_node_and_skips_the_uninstalled_eud(h100: NodeState) -> None:
    results = {t.name: t.result for t in diag(h100, "long").tests}
    assert results.pop("EUD Test") == "Skip"  # the EUD package is not on the node (corpus dcgmi_diag/05)
    assert set(results.values()) == {"Pass"}


def _sections_and_tests(text: str) -> list[str]:
    """Section headers and test names of a DCGM 3.x table, in order (no values, no wrapped rows)."""
    out = []
    for line in text.splitlines():
        if "-----  " in line:
            out.append("== " + line.split("-----  ")[1].split("  ")[0])
        elif line.startswith("| ") and not line.startswith("|  ") and line[2:27].strip() not in ("Info", "Warning"):
            out.append(line[2:27].strip())
    return out


@pytest.mark.parametrize(
    ("level", "rel"),
    [
        ("2", "dcgmi_diag/04_dcgm3.3.9_r2_v_empty_stress_header.txt"),
        ("3", "dcgmi_diag/05_dcgm3.3.9_r3_hardware_diagnostic_eud_skip.txt"),
    ],
)
def test_medium_and_long_runs_have_the_sections_and_rows_of_dcgm_3_3(level: str, rel: str) -> None:
    out = run_tool(["dcgmi", "diag", "-r", level], Session(state=load_fixture("dgx-a100"))).stdout
    real = read_corpus(rel).split("\n", 1)[1]  # without the "$ command" line
    assert _sections_and_tests(out) == _sections_and_tests(real)
    assert {len(line) for line in out.splitlines()[1:]} == {len(line) for line in real.splitlines()[1:]} == {78}
    if level == "2":  # the empty Stress header right before the closing rule
        assert out.splitlines()[-2].startswith("+-----  Stress  ") and out.splitlines()[-1].startswith("+----")


def test_pending_row_remap_fails_the_deployment_check_naming_the_gpu(h100: NodeState) -> None:
    rows = h100.gpu(3).remapped_rows
    assert rows is not None
    rows.pending = True
    test = by_name(diag(h100, "1"))["Page Retirement/Row Remap"]
    assert test.result == "Fail"
    assert test.details == [
        "Error: GPU 3 has uncorrectable memory errors and row remappings are pending. Drain the "
        "GPU and reset it or reboot the node."
    ]


def test_uncorrectable_ecc_fails_gpu_memory_on_that_gpu_only(h100: NodeState) -> None:
    h100.gpu(6).ecc.volatile_uncorrected = 4
    test = by_name(diag(h100, "2"))["GPU Memory"]
    assert test.result == "Fail"
    assert test.details[:2] == ["Pass - GPUs: 0, 1, 2, 3, 4, 5, 7", "Fail - GPU: 6"]
    assert "GPU 6 had 4 uncorrectable ECC errors" in test.details[2]


def test_inactive_nvlinks_fail_pcie_at_level_2_but_not_the_short_run(h100: NodeState) -> None:
    for link in h100.gpu(1).nvlinks[:3]:
        link.active = False
    assert all(t.result == "Pass" for t in diag(h100, "1").tests)
    pcie = by_name(diag(h100, "2"))["PCIe"]
    assert pcie.result == "Fail"
    assert "GPU 1's NvLink link 0, 1, 2 is currently down" in pcie.details[-1]


@pytest.mark.parametrize(
    ("change", "test_name", "needle"),
    [
        (lambda s: setattr(s.gpu(0), "lost", True), "NVML Library", "GPU 0 is lost"),
        (
            lambda s: setattr(s.gpu(2), "persistence_mode", False),
            "Persistence Mode",
            "Persistence mode for GPU 2 is currently disabled",
        ),
        (lambda s: setattr(s.driver, "version", "565.77.01"), "NVML Library", "Driver/library version mismatch"),
        (lambda s: setattr(s.gpu(5), "fabric_state", "In Progress"), "CUDA Main Library", "system not yet initialized"),
    ],
)
def test_software_failures_come_from_the_state(h100: NodeState, change, test_name: str, needle: str) -> None:
    change(h100)
    results = by_name(diag(h100, "1"))
    assert results[test_name].result == "Fail"
    assert needle in " ".join(results[test_name].details)
    assert [n for n, t in results.items() if t.result == "Fail"] == [test_name]


def _status(state: NodeState, *args: str) -> int:
    return run_tool(["dcgmi", "diag", *args], Session(state=state)).exit_code


def _ecc(s: NodeState) -> None:
    s.gpu(6).ecc.volatile_uncorrected = 4


def _pending(s: NodeState) -> None:
    rows = s.gpu(3).remapped_rows
    assert rows is not None
    rows.pending = True


def _links_down(s: NodeState) -> None:
    for link in s.gpu(1).nvlinks[:3]:
        link.active = False


@pytest.mark.parametrize(
    ("change", "level", "status"),
    [
        # DCGM_ST_NVVS_ISOLATE_ERROR (-51): a failure whose priority is ISOLATE (dcgmlib/src/dcgm_errors.c)
        (lambda s: setattr(s.gpu(0), "lost", True), "1", 205),  # DCGM_FR_FALLEN_OFF_BUS
        (_ecc, "2", 205),  # DCGM_FR_VOLATILE_DBE_DETECTED
        # DCGM_ST_NVVS_ERROR (-30): any other failure (RESET, TRIAGE, CONFIG, MONITOR)
        (_pending, "1", 226),  # DCGM_FR_PENDING_ROW_REMAP: RESET
        (_links_down, "2", 226),  # DCGM_FR_NVLINK_DOWN: TRIAGE
        (lambda s: setattr(s.gpu(2), "persistence_mode", False), "1", 226),  # DCGM_FR_PERSISTENCE_MODE: CONFIG
        (lambda s: setattr(s.gpu(4), "throttle_reasons", ["hw_thermal_slowdown"]), "3", 226),
    ],
)
def test_the_exit_status_is_dcgmis_for_the_worst_failure(h100: NodeState, change, level: str, status: int) -> None:
    assert _status(h100, "-r", level) == 0
    change(h100)
    assert _status(h100, "-r", level) == status


def test_a_failure_outside_what_ran_leaves_the_status_0(h100: NodeState) -> None:
    _links_down(h100)  # caught by the PCIe test, which level 1 does not run
    assert _status(h100, "-r", "1") == 0
    _ecc(h100)  # GPU 6's DBE: a run on the other GPUs passes
    assert _status(h100, "-r", "2", "-i", "0,1,2") == 226  # GPU 1's links still fail PCIe
    assert _status(h100, "-r", "2", "-i", "0,2") == 0
    assert _status(h100, "-r", "2", "-i", "6") == 205


def test_hot_gpu_fails_targeted_power_in_the_long_run(h100: NodeState) -> None:
    h100.gpu(4).throttle_reasons = ["hw_thermal_slowdown"]
    assert "Targeted Power" not in by_name(diag(h100, "2"))
    power = by_name(diag(h100, "3"))["Targeted Power"]
    assert power.result == "Fail" and power.details[1] == "Fail - GPU: 4"


def test_no_host_engine_means_no_connection(h100: NodeState) -> None:
    h100.services["nvidia-dcgm.service"].active_state = "inactive"
    result = run_tool(["dcgmi", "diag", "-r", "1"], Session(state=h100))
    assert result.exit_code != 0
    assert result.stdout == (
        "Error: unable to establish a connection to the specified host: localhost\n"
        "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"
    )


def test_dcgm_4_nodes_print_the_4x_layout() -> None:
    h200 = load_fixture("hgx-h200")
    h200.gpu(7).ecc.volatile_uncorrected = 1
    d = diag(h200, "2")
    assert d.version == "4.2.3"
    results = {t.name: t for t in d.tests}
    assert results["software"].result == "Pass"
    assert results["software"].details[:2] == ["GPU0: Pass", "GPU1: Pass"]
    assert results["memory"].result == "Fail" and "GPU7: Fail" in results["memory"].details
    assert "targeted_power" not in results  # a level-3 test


def test_bad_run_level_is_refused_with_dcgms_message(h100: NodeState) -> None:
    # modules/diag/DcgmDiagCommon.cpp, then dcgmi's TCLAP handler (which adds a period of its own)
    result = run_tool(["dcgmi", "diag", "-r", "9"], Session(state=h100))
    assert result.exit_code != 0 and result.stdout == ""
    assert result.stderr.startswith("Error: Invalid value '9' specified for -r..\n")


def test_device_ids_of_eight_gpus_fit_one_row_comma_joined_like_dcgm_3_3(h100: NodeState) -> None:
    # Published `dcgmi diag` runs of DCGM 3.3.x on 8x H100 print the ids joined by a bare comma, on one row:
    # "| GPU Device IDs Detected   | 2330,2330,2330,2330,2330,2330,2330,2330        |"
    out = run_tool(["dcgmi", "diag", "-r", "1"], Session(state=h100)).stdout
    rows = [line for line in out.splitlines() if "Device IDs" in line]
    assert rows == ["| GPU Device IDs Detected   | 2330,2330,2330,2330,2330,2330,2330,2330        |"]
    following = out.splitlines()[out.splitlines().index(rows[0]) + 1]
    assert following.startswith("|-----  Deployment")


# ---------------------------------------------------------------- discovery, health, -v


def dcgmi(state: NodeState, *args: str) -> str:
    result = run_tool(["dcgmi", *args], Session(state=state))
    assert result.exit_code == 0, result.stdout
    return result.stdout


def test_discovery_lists_gpus_nvswitches_and_cpus_in_dcgm_3_3_boxes(h100: NodeState) -> None:
    out = dcgmi(h100, "discovery", "-l").splitlines()
    real = read_corpus("dcgmi_discovery/01_dcgm3.3.9_one_gpu_no_nvswitch_no_cpu.txt").splitlines()
    assert out[0] == "8 GPUs found."
    widths = {len(line) for line in real if line.startswith(("|", "+"))}
    assert {len(line) for line in out if line.startswith(("|", "+"))} == widths == {81, 13}  # 13: Switch ID box
    assert out[1:4] == real[1:4]
    at = out.index("4 NvSwitches found.")
    assert out[at + 1 : at + 4] == real[real.index("0 NvSwitches found.") + 1 :][:3]
    assert out[at + 4 : at + 8] == ["| 0         |", "| 1         |", "| 2         |", "| 3         |"]
    assert out[-5:] == real[-5:]  # "0 CPUs found." and its empty box


def test_discovery_on_a_pcie_node_finds_no_nvswitch() -> None:
    assert "0 NvSwitches found." in dcgmi(load_fixture("pcie-l40s"), "discovery", "-l")


def test_health_check_reports_healthy_then_the_incidents_the_state_holds(h100: NodeState) -> None:
    healthy = dcgmi(h100, "health", "-c").splitlines()
    assert healthy[1] == "| Health Monitor Report".ljust(87) + "|"
    assert healthy[3] == "| Overall Health            | Healthy".ljust(87) + "|"
    assert {len(line) for line in healthy} == {88}  # DcgmiOutputTree(28, 60)
    h100.gpus[2].ecc.volatile_uncorrected = 2
    h100.gpus[2].nvlinks[3].active = False
    sick = dcgmi(h100, "health", "-g", "0", "-c").splitlines()
    assert sick[3].startswith("| Overall Health            | Failure")
    assert sick[5].startswith("| -> 2                      | Failure")
    assert sick[6].startswith("|    -> Errors              |")
    assert any("-> NVLINK system" in line for line in sick)
    assert any("GPU 2's NvLink link 3 is currently down" in line for line in sick)


def test_health_set_accepts_dcgm_system_letters_and_refuses_others(h100: NodeState) -> None:
    assert dcgmi(h100, "health", "-s", "mpi") == "Health monitor systems set successfully.\n"
    assert run_tool(["dcgmi", "health", "-s", "xyz"], Session(state=h100)).exit_code != 0
    assert "| NVLINK          | On" in dcgmi(h100, "health", "-f")


def test_version_shows_the_host_engine_only_while_it_runs(h100: NodeState) -> None:
    assert "Hostengine build info:" in dcgmi(h100, "-v")
    h100.services["nvidia-dcgm.service"].active_state = "inactive"
    out = dcgmi(h100, "-v")
    assert out.startswith("Version : 3.3.8\n") and "Hostengine build info:" not in out
