"""The simulated hpl.sh (under mpirun) and nvbandwidth: real output shapes, figures that follow the node's state."""

from __future__ import annotations

from pathlib import Path

import pytest

from assessor.facts import HplResult, NvbandwidthTest
from assessor.parsers import parse
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, run_tool
from assessor.sim.tools.boot import reboot

DAT8 = "/workspace/hpl-linux-x86_64/sample-dat/HPL-8GPUs.dat"
HPL8 = ["mpirun", "--allow-run-as-root", "--bind-to", "none", "-np", "8", "hpl.sh", "--dat", DAT8]


def node(fixture: str = "hgx-h100") -> NodeState:
    return load_fixture(fixture)


def hpl_row(state: NodeState, argv: list[str] = HPL8, env: dict[str, str] | None = None) -> HplResult:
    out = run_tool(argv, Session(state=state, env=env or {}))
    assert out.exit_code == 0, out.stdout + out.stderr
    facts = parse("auto", out.stdout)  # recognised as HPL from its own lines
    assert facts.hpl is not None and len(facts.hpl.results) == 1
    return facts.hpl.results[0]


def per_gpu(row: HplResult) -> float:
    assert row.gflops_per_gpu is not None
    return row.gflops_per_gpu / 1000


@pytest.mark.parametrize(
    ("fixture", "low", "high"), [("hgx-h100", 40, 43), ("hgx-h200", 40, 43), ("dgx-a100", 16, 17.5)]
)
def test_a_healthy_node_meets_its_reference_and_passes_the_residual(fixture: str, low: float, high: float) -> None:
    row = hpl_row(node(fixture))
    assert low <= per_gpu(row) <= high
    assert (row.p, row.q, row.residual_check) == (4, 2, "PASSED")


def test_one_capped_gpu_sets_the_pace_of_the_whole_run() -> None:
    state = node()
    healthy = per_gpu(hpl_row(state))
    run_tool(["nvidia-smi", "-i", "5", "-pl", "350"], Session(state=state))
    capped = per_gpu(hpl_row(state))
    assert capped == pytest.approx(healthy * (350 / 700) ** 0.5, rel=1e-3)


def test_locked_clocks_and_thermal_slowdown_lower_the_figure_and_a_reboot_lifts_the_settings() -> None:
    state = node()
    healthy = per_gpu(hpl_row(state))
    run_tool(["nvidia-smi", "-lgc", "990,990"], Session(state=state))
    assert per_gpu(hpl_row(state)) == pytest.approx(healthy / 2, rel=1e-3)
    run_tool(["nvidia-smi", "-pl", "300"], Session(state=state))
    reboot(state)  # -pl and -lgc last until the driver unloads
    assert per_gpu(hpl_row(state)) == pytest.approx(healthy, rel=1e-3)
    faults.get("thermal-throttle").apply(state, gpu=2)
    assert per_gpu(hpl_row(state)) == pytest.approx(healthy * 0.55, rel=0.01)


def test_one_gpu_alone_through_cuda_visible_devices_shows_which_gpu_is_slow() -> None:
    state = node()
    faults.get("thermal-throttle").apply(state, gpu=6)
    one = ["hpl.sh", "--dat", "/workspace/hpl-linux-x86_64/sample-dat/HPL-1GPU.dat"]
    assert per_gpu(hpl_row(state, one, {"CUDA_VISIBLE_DEVICES": "0"})) > 40
    assert per_gpu(hpl_row(state, one, {"CUDA_VISIBLE_DEVICES": "6"})) < 25


def test_uncorrectable_errors_fail_the_residual() -> None:
    state = node()
    faults.get("ecc-uncorrectable").apply(state, gpu=1)
    assert hpl_row(state).residual_check == "FAILED"


def test_too_few_ranks_a_lost_gpu_and_no_fabric_stop_the_run() -> None:
    state = node()
    few = run_tool(["hpl.sh", "--dat", DAT8], Session(state=state))
    assert few.exit_code == 1 and ">>> Need at least 8 processes for these tests <<<" in few.stdout
    assert parse("hpl", few.stdout).hpl.error == "Need at least 8 processes for these tests"  # type: ignore[union-attr]
    faults.get("xid-79").apply(state, gpu=3)
    lost = run_tool(HPL8, Session(state=state))
    assert lost.exit_code == 1 and "Per user-direction, the job has been aborted." in lost.stdout
    state = node()
    faults.get("fabric-manager-stopped").apply(state)
    assert "system not yet initialized" in run_tool(HPL8, Session(state=state)).stdout
    assert run_tool(["hpl.sh"], Session(state=state)).exit_code == 1  # no --dat


def nvb_tests(state: NodeState, *args: str) -> list[NvbandwidthTest]:
    out = run_tool(["nvbandwidth", *args], Session(state=state))
    assert out.exit_code == 0, out.stderr
    facts = parse("auto", out.stdout)
    assert facts.nvbandwidth is not None
    return facts.nvbandwidth.tests


def test_nvbandwidth_host_copies_follow_each_gpus_pcie_link() -> None:
    state = node()
    faults.get("pcie-degraded").apply(state, gpu=4, width=8)
    h2d, d2h = nvb_tests(state, "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce")
    assert (h2d.name, d2h.name) == ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce")
    figures = h2d.per_column()
    assert figures[0] == pytest.approx(52.6, abs=0.5) and figures[4] == pytest.approx(figures[0] / 2, rel=0.01)
    assert d2h.sum_gbps == pytest.approx(sum(d2h.per_column().values()), abs=0.05)


def test_nvbandwidth_peer_copies_use_nvlink_until_links_go_down() -> None:
    state = node()
    (d2d,) = nvb_tests(state, "-t", "device_to_device_memcpy_read_ce")
    assert d2d.rows[0].values[0] is None and d2d.rows[0].values[1] == pytest.approx(376.0)
    faults.get("nvlink-down").apply(state, gpu=2)
    (d2d,) = nvb_tests(state, "-t", "4")  # by index, as nvbandwidth takes it
    assert d2d.rows[0].values[2] is not None and d2d.rows[0].values[2] < 60


def test_nvbandwidth_refuses_an_unknown_test_and_lists_its_own() -> None:
    state = node()
    assert run_tool(["nvbandwidth", "-t", "no_such_test"], Session(state=state)).exit_code == 1
    assert "0, host_to_device_memcpy_ce:" in run_tool(["nvbandwidth", "-l"], Session(state=state)).stdout


def test_an_hpl_dat_of_the_nodes_own_sets_n_nb_and_the_grid(tmp_path: Path) -> None:
    dat = (
        "HPLinpack benchmark input file\nInnovative Computing Laboratory, University of Tennessee\n"
        "HPL.out      output file name (if any)\n6            device out (6=stdout,7=stderr,file)\n"
        "1            # of problems sizes (N)\n92160        Ns\n1            # of NBs\n512          NBs\n"
        "0            PMAP process mapping (0=Row-,1=Column-major)\n1            # of process grids (P x Q)\n"
        "2            Ps\n2            Qs\n"
    )
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "HPL.dat").write_text(dat)
    argv = ["mpirun", "-np", "4", "hpl.sh", "--dat", "/root/HPL.dat"]
    # as root: Open MPI 4's two variables stand for --allow-run-as-root
    allowed = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    row = hpl_row(node(), argv, {"GPULAB_SIM_ROOT": str(tmp_path), **allowed})
    assert (row.n, row.nb, row.p, row.q) == (92160, 512, 2, 2)
    missing = run_tool(
        ["hpl.sh", "--dat", "/root/nope.dat"], Session(state=node(), env={"GPULAB_SIM_ROOT": str(tmp_path)})
    )
    assert missing.exit_code == 1 and "could not open HPL input file /root/nope.dat" in missing.stderr


def test_the_capture_runs_hpl_and_nvbandwidth_on_request() -> None:
    from assessor.capture.run import active_command

    hpl_cmd = active_command("hpl:4")
    assert hpl_cmd.file == "hpl.txt" and hpl_cmd.argvs[0][-3:] == ("hpl.sh", "--dat", DAT8.replace("8GPUs", "4GPUs"))
    assert "-np" in hpl_cmd.argvs[0] and hpl_cmd.argvs[0][hpl_cmd.argvs[0].index("-np") + 1] == "4"
    assert active_command("hpl:1").argvs[0][-1].endswith("HPL-1GPU.dat")
    nvb = active_command("nvbandwidth")
    assert nvb.file == "nvbandwidth.txt" and nvb.argvs[0][0] == "nvbandwidth"


def test_mpirun_as_root_starts_nothing_until_told_twice() -> None:
    # Open MPI refuses root: --allow-run-as-root, or both variables; -x exports reach the ranks, not mpirun
    argv = ["mpirun", "-np", "8", "hpl.sh", "--dat", DAT8]
    refused = run_tool(argv, Session(state=node()))
    assert refused.exit_code == 1 and "mpirun has detected an attempt to run as root" in refused.stderr
    assert refused.stdout == ""
    half = run_tool(argv, Session(state=node(), env={"OMPI_ALLOW_RUN_AS_ROOT": "1"}))
    assert half.exit_code == 1
    exported = ["mpirun", "-x", "OMPI_ALLOW_RUN_AS_ROOT=1", "-x", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", *argv[1:]]
    assert run_tool(exported, Session(state=node())).exit_code == 1
    both = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    assert run_tool(argv, Session(state=node(), env=both)).exit_code == 0
    assert run_tool(["mpirun", "--allow-run-as-root", *argv[1:]], Session(state=node())).exit_code == 0
    assert run_tool(argv, Session(state=node(), euid=1000)).exit_code == 0  # an ordinary user
