"""East-west between two simulated nodes on one fabric (:mod:`assessor.sim.peers`): ``ib_write_bw HOST`` as the
client against a peer's state, the real tool's failures when nothing answers, and peers files that are not what
they should be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.parsers import parse
from assessor.sim.node_init import init_node
from assessor.sim.peers import join, peers_file, read_peers
from assessor.sim.state import updating
from assessor.sim.tools import Session, ToolResult, run_tool


def run(path: Path, *argv: str) -> ToolResult:
    return run_tool(list(argv), Session(path=path))


def gbits(result: ToolResult) -> float:
    assert result.exit_code == 0, result.stderr
    bw = parse("ib-write-bw", result.stdout).ib_write_bw
    assert bw is not None
    return bw.average_gbits() or 0.0


BIG = ("-R", "-s", "8388608")


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    init_node("hgx-h100", a, host="node-a")
    init_node("hgx-h100", b, host="node-b")
    assert join(a, b) == ("node-a", "node-b")
    return a, b


def test_join_makes_each_node_the_others_peer(pair: tuple[Path, Path]) -> None:
    a, b = pair
    assert read_peers(a) == {"node-b": b}
    assert read_peers(b) == {"node-a": a}


def test_the_client_runs_at_the_pace_of_the_slower_end(pair: tuple[Path, Path]) -> None:
    a, b = pair
    healthy = gbits(run(a, "ib_write_bw", "-d", "mlx5_0", *BIG, "node-b"))
    assert healthy > 380
    with updating(b) as peer:
        peer.hca("mlx5_0").ports[0].rate_gbps = 200  # the far end trained at half width
        peer.hca("mlx5_0").ports[0].width = "2X"
    slow = gbits(run(a, "ib_write_bw", "-d", "mlx5_0", *BIG, "node-b"))
    assert 150 < slow < 200
    # Another rail of the same peer is not slowed, and the local node alone never saw a thing.
    assert gbits(run(a, "ib_write_bw", "-d", "mlx5_1", *BIG, "node-b")) > 380
    assert run(a, "ibstat", "mlx5_0", "1").stdout.count("Rate: 400") == 1


def test_the_remote_address_is_the_peers_port(pair: tuple[Path, Path]) -> None:
    a, b = pair
    with updating(b) as peer:
        peer.hca("mlx5_0").ports[0].base_lid = 0x99
    out = run(a, "ib_write_bw", "-d", "mlx5_0", "node-b").stdout
    assert "remote address: LID 0x99 " in out


def test_a_peer_port_down_means_no_server_to_connect_to(pair: tuple[Path, Path]) -> None:
    a, b = pair
    with updating(b) as peer:
        peer.hca("mlx5_2").ports[0].state = "Down"
        peer.hca("mlx5_2").ports[0].physical_state = "Polling"
    result = run(a, "ib_write_bw", "-d", "mlx5_2", "node-b")
    assert result.exit_code == 1
    assert result.stderr.startswith("Couldn't connect to node-b:18515\n")
    assert "Unable to init the socket connection" in result.stderr
    assert run(a, "ib_write_bw", "-d", "mlx5_3", "node-b").exit_code == 0


def test_an_unknown_host_on_a_fabric_does_not_resolve(pair: tuple[Path, Path]) -> None:
    a, _ = pair
    result = run(a, "ib_write_bw", "-d", "mlx5_0", "node-c")
    assert result.exit_code == 1
    assert result.stderr.startswith("Name or service not known for node-c:18515\n")


def test_a_node_alone_still_imagines_its_far_end(tmp_path: Path) -> None:
    alone = tmp_path / "alone.json"
    init_node("hgx-h100", alone, host="alone")
    assert read_peers(alone) is None
    assert gbits(run(alone, "ib_write_bw", "-d", "mlx5_0", *BIG, "peer01")) > 380


def test_gpudirect_needs_peermem_on_both_ends(pair: tuple[Path, Path]) -> None:
    a, b = pair
    assert gbits(run(a, "ib_write_bw", "-d", "mlx5_0", "--use_cuda", "0", *BIG, "node-b")) > 380
    with updating(b) as peer:
        peer.modules = [m for m in peer.modules if m.name != "nvidia_peermem"]
    result = run(a, "ib_write_bw", "-d", "mlx5_0", "--use_cuda", "0", "node-b")
    assert result.exit_code == 1
    assert "Failed to exchange data between server and clients" in result.stderr
    # Host memory on both ends needs no GPUDirect.
    assert gbits(run(a, "ib_write_bw", "-d", "mlx5_0", *BIG, "node-b")) > 370


def test_the_peer_is_only_read(pair: tuple[Path, Path]) -> None:
    a, b = pair
    before = b.read_bytes()
    run(a, "ib_write_bw", "-d", "mlx5_0", "--use_cuda", "0", "node-b")
    assert b.read_bytes() == before


@pytest.mark.parametrize(
    "content",
    [
        "not json {",
        "[1, 2, 3]",
        '{"node-b": 42}',
        '{"bad host!": "b.json", "../x": "b.json"}',
        '{"node-b": ""}',
        '"' + "x" * 70_000 + '"',
    ],
)
def test_a_hostile_peers_file_reaches_no_one_and_never_crashes(pair: tuple[Path, Path], content: str) -> None:
    a, _ = pair
    peers_file(a).write_text(content, encoding="utf-8")
    assert read_peers(a) == {}
    result = run(a, "ib_write_bw", "-d", "mlx5_0", "node-b")
    assert result.exit_code == 1
    assert "node-b:18515" in result.stderr


def test_a_peer_that_is_no_state_or_another_node_does_not_answer(pair: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = pair
    junk = tmp_path / "junk.txt"
    junk.write_text("root:x:0:0\n", encoding="utf-8")
    other = tmp_path / "other.json"
    init_node("hgx-h100", other, host="node-z")
    peers_file(a).write_text(json.dumps({"node-b": str(junk), "node-y": "other.json", "node-x": str(tmp_path)}))
    for host in ("node-b", "node-y", "node-x"):
        result = run(a, "ib_write_bw", "-d", "mlx5_0", host)
        assert result.exit_code == 1 and result.stderr.startswith(f"Couldn't connect to {host}:18515"), host


def test_sim_init_with_a_peer_joins_the_two_nodes(tmp_path: Path) -> None:
    from assessor.cli.sim import sim

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    runner = CliRunner()
    assert runner.invoke(sim, ["init", "--state", str(a), "--host", "node-a"]).exit_code == 0
    same = runner.invoke(sim, ["init", "--state", str(b), "--host", "node-a", "--peer", str(a)])
    assert same.exit_code != 0 and not b.exists()
    nameless = runner.invoke(sim, ["init", "--state", str(b), "--peer", str(a)])
    assert nameless.exit_code != 0 and "--host" in str(nameless.exception) and not b.exists()
    done = runner.invoke(sim, ["init", "--state", str(b), "--host", "node-b", "--peer", str(a)])
    assert done.exit_code == 0, done.output
    assert read_peers(a) == {"node-b": b} and read_peers(b) == {"node-a": a}
    assert gbits(run(b, "ib_write_bw", "-d", "mlx5_7", *BIG, "node-a")) > 380


# ---- nccl-tests over two nodes ------------------------------------------------------------------------------

MPI = ("mpirun", "--allow-run-as-root", "-np", "16", "-H", "node-a:8,node-b:8")
ALL_REDUCE_8G = ("all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "1")


def busbw(result: ToolResult) -> float:
    assert result.exit_code == 0, result.stderr
    facts = parse("nccl-tests", result.stdout).nccl
    assert facts is not None and facts.rows
    return max(row.oop_busbw or 0.0 for row in facts.rows)


def debug_of(result: ToolResult):  # type: ignore[no-untyped-def]
    facts = parse("nccl-debug", result.stdout).nccl
    assert facts is not None and facts.debug is not None
    return facts.debug


def set_nccl_conf(state: Path, text: str) -> None:
    from assessor.sim.config_root import root_for_state

    (root_for_state(state) / "etc" / "nccl.conf").write_text(text, encoding="utf-8")


def test_all_reduce_over_two_healthy_nodes_runs_at_the_rails_pace(pair: tuple[Path, Path]) -> None:
    a, _ = pair
    result = run(a, *MPI, "-x", "NCCL_DEBUG=INFO", *ALL_REDUCE_8G)
    assert 340 < busbw(result) < 372  # 8 x 400 Gb/s rails, under the 8x H100 node's own ~480 with NVLS
    facts = parse("nccl-tests", result.stdout).nccl
    assert facts is not None and len(facts.devices) == 16
    debug = debug_of(result)
    assert debug.hosts == ["node-a", "node-b"] and debug.nranks == 16
    assert debug.network == "IB" and debug.gdrdma
    assert "[send] via NET/IB/0/GDRDMA" in result.stdout


def test_a_peer_whose_nccl_conf_leaves_out_two_rails_slows_the_ring(pair: tuple[Path, Path]) -> None:
    a, b = pair
    healthy = busbw(run(a, *MPI, *ALL_REDUCE_8G))
    set_nccl_conf(b, "NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5\n")
    result = run(a, *MPI, "-x", "NCCL_DEBUG=INFO", *ALL_REDUCE_8G)
    assert 0.7 * healthy < busbw(result) < 0.8 * healthy  # 6 of 8 rails
    peer_line = next(
        line for line in result.stdout.splitlines() if line.startswith("node-b") and "NET/IB : Using" in line
    )
    assert "mlx5_5:1/IB" in peer_line and "mlx5_6" not in peer_line
    # The same node run alone never notices: a single-node all_reduce uses no rail.
    alone = run(b, "all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8")
    assert busbw(alone) > 400


def test_the_environment_mpirun_exports_reaches_both_nodes(pair: tuple[Path, Path]) -> None:
    a, _ = pair
    result = run(a, *MPI, "-x", "NCCL_IB_HCA=mlx5_0,mlx5_1", "-x", "NCCL_DEBUG=INFO", *ALL_REDUCE_8G)
    assert busbw(result) < 100
    assert result.stdout.count("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]") == 2


def test_without_gpudirect_on_the_peer_the_ring_stages_through_host_memory(pair: tuple[Path, Path]) -> None:
    a, b = pair
    healthy = busbw(run(a, *MPI, *ALL_REDUCE_8G))
    with updating(b) as peer:
        peer.modules = [m for m in peer.modules if m.name != "nvidia_peermem"]
    result = run(a, *MPI, "-x", "NCCL_DEBUG=INFO", *ALL_REDUCE_8G)
    assert busbw(result) < 0.7 * healthy
    assert "GDRDMA" not in result.stdout and "[send] via NET/IB/0\n" in result.stdout
    node_a_gdr = [line for line in result.stdout.splitlines() if "GPU Direct RDMA" in line]
    assert node_a_gdr and all(line.startswith("node-a") for line in node_a_gdr)


def test_without_ib_the_ring_falls_back_to_sockets(pair: tuple[Path, Path]) -> None:
    a, _ = pair
    result = run(a, *MPI, "-x", "NCCL_IB_DISABLE=1", "-x", "NCCL_DEBUG=INFO", *ALL_REDUCE_8G)
    assert busbw(result) < 5
    assert debug_of(result).network == "Socket"


def test_a_peer_without_its_fabric_manager_fails_on_that_node(pair: tuple[Path, Path]) -> None:
    a, b = pair
    with updating(b) as peer:
        for g in peer.gpus:
            g.fabric_state = "In Progress"
    result = run(a, *MPI, *ALL_REDUCE_8G)
    assert result.exit_code == 2
    assert "node-b: Test CUDA failure" in result.stdout and "system not yet initialized" in result.stdout


def test_mpirun_to_a_host_that_is_no_peer_cannot_start_its_daemon(pair: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = pair
    result = run(a, "mpirun", "--allow-run-as-root", "-np", "16", "-H", "node-a:8,node-c:8", *ALL_REDUCE_8G)
    assert result.exit_code == 1 and "Could not resolve hostname node-c" in result.stderr
    alone = tmp_path / "alone.json"
    init_node("hgx-h100", alone, host="alone")
    lone = run(alone, "mpirun", "--allow-run-as-root", "-np", "16", "-H", "alone:8,node-b:8", *ALL_REDUCE_8G)
    assert "Could not resolve hostname node-b" in lone.stderr
    too_many = run(a, "mpirun", "--allow-run-as-root", "-np", "17", "-H", "node-a:8,node-b:8", *ALL_REDUCE_8G)
    assert too_many.exit_code == 1 and "not enough slots" in too_many.stderr


def test_mpirun_on_this_node_alone_is_the_one_node_run(pair: tuple[Path, Path]) -> None:
    a, _ = pair
    one = run(
        a,
        "mpirun",
        "--allow-run-as-root",
        "-np",
        "1",
        "-H",
        "node-a:1",
        "all_reduce_perf",
        "-b",
        "8G",
        "-e",
        "8G",
        "-g",
        "8",
    )
    assert one.stdout == run(a, "all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8").stdout


# ---- the peer-node condition and re-imaging -----------------------------------------------------------------


def test_the_peer_node_condition_makes_a_healthy_twin_and_repair_takes_it_away(tmp_path: Path) -> None:
    from assessor.sim import faults

    node = tmp_path / "node.json"
    init_node("hgx-h100", node, host="lab-node")
    faults.inject(node, "peer-node")
    peers = read_peers(node)
    assert peers is not None and set(peers) == {"node02"}
    assert read_peers(peers["node02"]) == {"lab-node": node}
    assert gbits(run(node, "ib_write_bw", "-d", "mlx5_4", *BIG, "node02")) > 380
    faults.repair(node, "peer-node")
    assert read_peers(node) is None and not peers["node02"].exists()


def test_a_node_named_like_the_peer_gets_another(tmp_path: Path) -> None:
    from assessor.sim import faults

    node = tmp_path / "node.json"
    init_node("hgx-h100", node, host="node02")
    faults.inject(node, "peer-node")
    assert set(read_peers(node) or {}) == {"node03"}


def test_re_imaging_a_node_for_a_lab_takes_it_off_its_fabric(pair: tuple[Path, Path]) -> None:
    from assessor.labs.drivers.sim import reset_file
    from assessor.labs.loader import find_lab

    a, b = pair
    reset_file(find_lab("nccl-302"), a)
    assert read_peers(a) is None and b.exists()  # the user's other node stays
    assert gbits(run(a, "ib_write_bw", "-d", "mlx5_0", *BIG, "node-b")) > 380  # alone: the far end imagined


def test_the_twin_a_lab_makes_has_lids_of_its_own(tmp_path: Path) -> None:
    # one subnet manager numbers every port of the fabric: the twin's LIDs follow the node's, none shared
    from assessor.sim.peers import make_peer
    from assessor.sim.state import load_state

    node = tmp_path / "node.json"
    init_node("hgx-h100", node, host="node01")
    twin = load_state(make_peer(load_state(node), node, "node02"))
    mine = {p.base_lid for h in load_state(node).ib_hcas for p in h.ports if p.base_lid}
    theirs = [p.base_lid for h in twin.ib_hcas for p in h.ports if p.base_lid]
    assert theirs and len(set(theirs)) == len(theirs) and not mine & set(theirs)
    lines = run(node, "ib_write_bw", "-d", "mlx5_0", "--report_gbits", "node02").stdout.splitlines()
    local, remote = (line.split("LID ")[1].split()[0] for line in lines if " address: LID" in line)
    assert local != remote
