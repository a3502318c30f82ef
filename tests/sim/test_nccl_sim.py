"""The simulated nccl-tests: the real table, NCCL_DEBUG=INFO lines, and a bandwidth model calibrated to
the reference numbers (docs/REFERENCES.md)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest

from assessor.facts import NcclRun
from assessor.parsers import parse
from assessor.pci import bus_key
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult, run_tool
from assessor.sim.tools.nccl import efficiency, parse_size

CAPTURE = ["-b", "1G", "-e", "8G", "-f", "2", "-g", "8"]  # what `gpulab capture --with nccl` runs


def raw(
    state: NodeState, *args: str, env: Mapping[str, str] | None = None, program: str = "all_reduce_perf"
) -> ToolResult:
    return run_tool([program, *args], Session(state=state, env=dict(env or {})))


def nccl(
    state: NodeState, *args: str, env: Mapping[str, str] | None = None, program: str = "all_reduce_perf"
) -> NcclRun:
    result = raw(state, *args, env=env, program=program)
    assert result.exit_code == 0, result.stdout + result.stderr
    facts = parse("nccl-tests", result.stdout)
    assert facts.nccl is not None
    return facts.nccl


def peak(run: NcclRun) -> float:
    value = run.peak_busbw()
    assert value is not None
    return value


@pytest.mark.parametrize(
    ("fixture", "low", "high"),
    [("hgx-h100", 460, 490), ("dgx-a100", 228, 240), ("hgx-h200", 431, 490)],  # docs/REFERENCES.md / profiles
)
def test_all_reduce_peak_meets_the_profile_threshold(fixture: str, low: float, high: float) -> None:
    run = nccl(load_fixture(fixture), *CAPTURE)
    assert low <= peak(run) <= high
    assert [r.size_bytes for r in run.rows] == [1 << 30, 2 << 30, 4 << 30, 8 << 30]


def test_header_ranks_and_footer_describe_the_run() -> None:
    state = load_fixture("dgx-a100")
    run = nccl(state, "-b", "8", "-e", "128M", "-f", "2", "-g", "8")
    assert (run.nthreads, run.ngpus, run.nranks, run.out_of_bounds) == (1, 8, 8, 0)
    # nccl-tests 2.17+ prints domain:bus:device, [0000:07:00] for 00000000:07:00.0 (older: [0x07]).
    assert [(d.bus or "")[-5:] for d in run.devices] == [bus_key(g.bus_id) for g in state.gpus]
    assert {d.host for d in run.devices} == {state.host}
    assert {d.name for d in run.devices} == {state.gpus[0].name}
    assert run.rows[0].size_bytes == 8 and run.rows[-1].size_bytes == 128 << 20
    # The average covers every size, tiny ones included, so it is far below the peak.
    assert run.avg_busbw is not None and run.avg_busbw < peak(run) / 2


def test_busbw_rises_with_message_size_to_its_peak() -> None:
    run = nccl(load_fixture("hgx-h100"), "-b", "1K", "-e", "8G", "-f", "4", "-g", "8")
    busbw = [r.oop_busbw or 0 for r in run.rows]
    assert all(b2 >= b1 * 0.99 for b1, b2 in itertools.pairwise(busbw))
    assert busbw[0] < 1 < 460 <= busbw[-1]
    assert efficiency(1 << 20) < efficiency(1 << 30) < efficiency(1 << 33) == 1.0


@pytest.mark.parametrize(("program", "factor"), [("all_reduce_perf", 2 * 7 / 8), ("all_gather_perf", 7 / 8)])
def test_busbw_is_algbw_times_the_collective_factor(program: str, factor: float) -> None:
    run = nccl(load_fixture("hgx-h100"), *CAPTURE, program=program)
    for row in run.rows:
        assert row.oop_algbw is not None and row.oop_busbw is not None
        assert row.oop_busbw == pytest.approx(row.oop_algbw * factor, abs=0.02)
        assert row.oop_time_us == pytest.approx(row.size_bytes / 1e3 / row.oop_algbw, rel=0.01)
    assert {r.redop for r in run.rows} == ({"sum"} if program == "all_reduce_perf" else {"none"})


def test_runs_are_deterministic() -> None:
    assert raw(load_fixture("hgx-h100"), *CAPTURE).stdout == raw(load_fixture("hgx-h100"), *CAPTURE).stdout


def test_without_nvls_an_h100_node_runs_rings_at_about_370() -> None:
    assert 350 <= peak(nccl(load_fixture("hgx-h100"), *CAPTURE, env={"NCCL_NVLS_ENABLE": "0"})) <= 390


def test_p2p_disabled_or_pcie_gpus_are_pcie_bound() -> None:
    assert peak(nccl(load_fixture("hgx-h100"), *CAPTURE, env={"NCCL_P2P_DISABLE": "1"})) <= 25
    assert peak(nccl(load_fixture("pcie-l40s"), "-b", "1G", "-e", "8G", "-f", "2", "-g", "4")) <= 25


def test_inactive_nvlinks_scale_the_bandwidth_down() -> None:
    state = load_fixture("dgx-a100")
    for link in state.gpu(5).nvlinks[:6]:
        link.active = False
    assert 100 <= peak(nccl(state, *CAPTURE)) <= 125  # half the links on the slowest GPU: half the ring


def test_validation_off_prints_n_a() -> None:
    run = nccl(load_fixture("dgx-a100"), "-b", "1M", "-e", "4M", "-f", "2", "-g", "8", "-c", "0")
    assert {(r.oop_wrong, r.ip_wrong) for r in run.rows} == {(None, None)}


def test_debug_info_names_version_network_and_transports() -> None:
    state = load_fixture("hgx-h100")
    debug = nccl(state, *CAPTURE, env={"NCCL_DEBUG": "INFO"}).debug
    assert debug.nccl_version == state.perf.nccl_version
    assert debug.network == "IB" and not debug.ib_no_device
    assert debug.ib_devices == [f"mlx5_{i}:1/IB" for i in range(8)]
    assert debug.transports == ["P2P/CUMEM", "NVLS"]  # NCCL 2.21 maps peers through cuMem; Hopper uses NVLS


def test_without_nccl_debug_there_are_no_info_lines() -> None:
    result = raw(load_fixture("hgx-h100"), *CAPTURE)
    assert "NCCL INFO" not in result.stdout
    assert parse("nccl-tests", result.stdout).nccl.debug.network is None  # type: ignore[union-attr]


def test_old_nccl_on_a100_uses_direct_pointers_and_no_nvls() -> None:
    debug = nccl(load_fixture("dgx-a100"), *CAPTURE, env={"NCCL_DEBUG": "INFO"}).debug
    assert debug.nccl_version == "2.18.3+cuda12.2"
    assert debug.transports == ["P2P/direct"]


def test_socket_fallback_when_nccl_ib_hca_names_no_hca() -> None:
    debug = nccl(load_fixture("hgx-h100"), *CAPTURE, env={"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_99"}).debug
    assert (debug.network, debug.ib_no_device, debug.ib_devices) == ("Socket", True, [])


def test_node_nccl_env_is_read_like_etc_nccl_conf() -> None:
    state = load_fixture("hgx-h100")
    state.nccl_env.update({"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "^mlx5_0,mlx5_1"})
    debug = nccl(state, *CAPTURE).debug
    assert debug.ib_devices == [f"mlx5_{i}:1/IB" for i in range(2, 8)]


def test_down_ports_are_not_offered_to_nccl() -> None:
    state = load_fixture("hgx-h100")
    for hca in state.ib_hcas:
        hca.ports[0].state = "Down"
    debug = nccl(state, *CAPTURE, env={"NCCL_DEBUG": "INFO"}).debug
    assert debug.network == "Socket"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: setattr(s.gpu(0), "fabric_state", "In Progress"), "'system not yet initialized'"),
        (lambda s: setattr(s.gpu(3), "lost", True), "'invalid device ordinal'"),
        (lambda s: setattr(s.driver, "version", "565.77.01"), "unsupported display driver / cuda driver"),
    ],
)
def test_cuda_failures_end_the_run(change, message: str) -> None:
    state = load_fixture("hgx-h100")
    change(state)
    result = raw(state, *CAPTURE)
    assert result.exit_code != 0
    assert "Test CUDA failure common.cu" in result.stdout and message in result.stdout


def test_sizes_that_do_not_fit_run_out_of_memory() -> None:
    result = raw(load_fixture("hgx-h100"), "-b", "64G", "-e", "64G", "-g", "8")
    assert result.exit_code != 0 and "'out of memory'" in result.stdout


def test_sizes_take_binary_suffixes() -> None:
    assert [parse_size(s) for s in ("8", "1K", "128M", "8G", "2g", "x1")] == [
        8,
        1024,
        128 << 20,
        8 << 30,
        2 << 30,
        None,
    ]
