"""What the labs' playbooks do to a simulated node with real commands: /etc/nccl.conf under the node's
root (``GPULAB_SIM_ROOT``), and a GPU reset while the fabric manager is down."""

from __future__ import annotations

from pathlib import Path

from assessor.facts import NcclRun
from assessor.parsers import parse
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, run_tool
from assessor.sim.tools.nccl import merged_env, parse_nccl_conf

CAPTURE = ["-b", "1G", "-e", "8G", "-f", "2", "-g", "8"]


def all_reduce(state: NodeState, env: dict[str, str]) -> NcclRun:
    result = run_tool(["all_reduce_perf", *CAPTURE], Session(state=state, env=env))
    assert result.exit_code == 0, result.stderr
    facts = parse("nccl-tests", result.stdout)
    assert facts.nccl is not None
    return facts.nccl


def node_root(tmp_path: Path, conf: str | None) -> dict[str, str]:
    if conf is not None:
        (tmp_path / "etc").mkdir(parents=True)
        (tmp_path / "etc" / "nccl.conf").write_text(conf)
    return {"GPULAB_SIM_ROOT": str(tmp_path)}


def test_nccl_conf_lines_parse_like_nccls_reader() -> None:
    text = (
        "# site settings\nNCCL_IB_HCA = mlx5_0,mlx5_1\n\nNCCL_DEBUG=WARN\ngarbage line\n=novalue\nNCCL_IB_GID_INDEX=\n"
    )
    assert parse_nccl_conf(text) == {"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_DEBUG": "WARN", "NCCL_IB_GID_INDEX": ""}


def test_nccl_conf_under_the_node_root_overrides_the_state_and_loses_to_the_environment(tmp_path: Path) -> None:
    state = load_fixture("hgx-h100")
    env = node_root(tmp_path, "NCCL_NVLS_ENABLE=0\nNCCL_IB_HCA=mlx5_0\n")
    merged = merged_env(state, {**env, "NCCL_IB_HCA": "mlx5_1"})
    assert merged["NCCL_NVLS_ENABLE"] == "0"  # the file beats the state's baseline ("1")
    assert merged["NCCL_IB_HCA"] == "mlx5_1"  # the process environment beats the file
    assert merged["NCCL_SOCKET_IFNAME"] == state.nccl_env["NCCL_SOCKET_IFNAME"]  # untouched baseline stays


def test_nvls_off_in_nccl_conf_costs_bandwidth_on_hopper(tmp_path: Path) -> None:
    state = load_fixture("hgx-h100")
    healthy = all_reduce(state, node_root(tmp_path / "a", None))
    ring = all_reduce(state, node_root(tmp_path / "b", "NCCL_NVLS_ENABLE=0\n"))
    assert (healthy.peak_busbw() or 0) >= 460
    assert (ring.peak_busbw() or 0) < 400


def test_without_a_node_root_no_file_is_read(tmp_path: Path) -> None:
    # the controller's own /etc/nccl.conf never leaks into a simulated node
    state = load_fixture("hgx-h100")
    assert merged_env(state, {}) == state.nccl_env
    assert merged_env(state, node_root(tmp_path, None)) == state.nccl_env


def test_gpu_reset_without_the_fabric_manager_leaves_gpus_waiting_for_the_fabric() -> None:
    session = Session(state=load_fixture("hgx-h100"))
    assert run_tool(["systemctl", "stop", "nvidia-fabricmanager"], session).exit_code == 0
    assert {g.fabric_state for g in session.read().gpus} == {"Completed"}  # a stop alone keeps the registration
    assert run_tool(["nvidia-smi", "-r"], session).exit_code == 0
    assert {(g.fabric_state, g.fabric_status) for g in session.read().gpus} == {("In Progress", None)}
    refused = run_tool(["all_reduce_perf", *CAPTURE], session)
    assert refused.exit_code != 0 and "system not yet initialized" in refused.stdout + refused.stderr
    assert run_tool(["systemctl", "start", "nvidia-fabricmanager"], session).exit_code == 0
    assert {(g.fabric_state, g.fabric_status) for g in session.read().gpus} == {("Completed", "Success")}


def test_gpu_reset_with_the_fabric_manager_running_keeps_the_fabric() -> None:
    session = Session(state=load_fixture("hgx-h100"))
    assert run_tool(["nvidia-smi", "-i", "2", "-r"], session).exit_code == 0
    assert {g.fabric_state for g in session.read().gpus} == {"Completed"}
