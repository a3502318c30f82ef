"""The simulated ``dcgmi diag``: DCGM's table, parsed by the dcgmi-diag parser, with results from the state."""

from __future__ import annotations

import pytest

from assessor.facts import DcgmDiag, DcgmTest
from assessor.parsers import parse
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, run_tool

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
    assert result.exit_code == 0, result.stdout
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


def test_long_run_passes_everything_on_a_healthy_node(h100: NodeState) -> None:
    assert {t.result for t in diag(h100, "long").tests} == {"Pass"}


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


def test_bad_run_level_is_a_usage_error(h100: NodeState) -> None:
    result = run_tool(["dcgmi", "diag", "-r", "9"], Session(state=h100))
    assert result.exit_code != 0 and "run level" in result.stderr


def test_device_ids_of_eight_gpus_fit_one_row_comma_joined_like_dcgm_3_3(h100: NodeState) -> None:
    # Published `dcgmi diag` runs of DCGM 3.3.x on 8x H100 print the ids joined by a bare comma, on one row:
    # "| GPU Device IDs Detected   | 2330,2330,2330,2330,2330,2330,2330,2330        |"
    out = run_tool(["dcgmi", "diag", "-r", "1"], Session(state=h100)).stdout
    rows = [line for line in out.splitlines() if "Device IDs" in line]
    assert rows == ["| GPU Device IDs Detected   | 2330,2330,2330,2330,2330,2330,2330,2330        |"]
    following = out.splitlines()[out.splitlines().index(rows[0]) + 1]
    assert following.startswith("|-----  Deployment")
