"""The simulated fabric tools (iblinkinfo, ibnetdiscover, sminfo, ibswitches, ibhosts): the layouts of
infiniband-diags, the fabric around the node, and what a fault changes there."""

from __future__ import annotations

import re

import pytest

from assessor.sim import faults
from assessor.sim.fabric import planned_peer
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import IbPeerState, NodeState, from_dict, to_dict
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.corpus import read_corpus


def run(state: NodeState, *argv: str) -> ToolResult:
    return run_tool(list(argv), Session(state=state))


# iblinkinfo.c's port line: "%6d %4d[%2s] ==(%3s %18s %6s/%8s)==>  %6d %4d[%2s] \"%s\" (%s %s)", a CA's with its
# port GUID first; a port without a cable: "(              %6s/%8s)==>             [  ] \"\" ( )".
CA_LINE = re.compile(
    r'^ {6}0x[0-9a-f]{16} [ \d]{6} [ \d]{4}\[  \] ==\(.{3} .{18} .{6}/.{8}\)==>  [ \d]{6} [ \d]{4}\[  \] "[^"]+" \( \)$'
)
SWITCH_LINE = re.compile(
    r'^ {6}[ \d]{6} [ \d]{4}\[  \] ==\(.{3} .{18} .{6}/.{8}\)==>  [ \d]{6} [ \d]{4}\[  \] "[^"]+" \( \)$'
)


@pytest.fixture
def h100() -> NodeState:
    return load_fixture("hgx-h100")


def test_iblinkinfo_ca_and_switch_lines_have_the_columns_of_a_real_output() -> None:
    # corpus/iblinkinfo/01: an MQM8700 (HDR) switch; the DGX A100 fixture is cabled to HDR leaves too
    real = read_corpus("iblinkinfo/01_roce_v100_mqm8700_degraded_speed_25g_lanes.txt").splitlines()
    assert CA_LINE.match(real[1]) and SWITCH_LINE.match(real[9])  # the pattern reads the real lines
    out = run(load_fixture("dgx-a100"), "iblinkinfo").stdout.splitlines()
    assert CA_LINE.match(out[1]), out[1]
    assert out[1].endswith(
        '==( 4X        53.125 Gbps Active/  LinkUp)==>       3    1[  ] "MF0;ib-leaf-01:MQM8700/U1" ( )'
    )
    switch_lines = [line for line in out if SWITCH_LINE.match(line)]
    assert len(switch_lines) > 40 and any(
        line.startswith("Switch: 0x") and line.endswith(":MQM8700/U1:") for line in out
    )
    assert any(
        line == '           3    5[  ] ==(                Down/ Polling)==>             [  ] "" ( )' for line in out
    )


def test_ibnetdiscover_prints_the_topology_file_of_infiniband_diags(h100: NodeState) -> None:
    out = run(h100, "ibnetdiscover").stdout
    assert out.startswith(
        "#\n# Topology file: generated on Wed Jan 15 10:03:00 2025\n#\n# Initiated from node a088c203009b306a"
    )
    # the printf formats of ibnetdiscover.c: out_switch_detail, out_switch_port, out_ca_detail, out_ca_port
    assert re.search(
        r'^Switch\t65 "S-[0-9a-f]{16}"\t\t# "MF0;ib-leaf-01:MQM9700/U1" enhanced port 0 lid 3 lmc 0$', out, re.M
    )
    assert re.search(
        r'^\[1\]\t"H-a088c203009b306a"\[1\]\(a088c203009b306a\) \t\t# "hgx-h100-01 mlx5_0" lid 128 4xNDR$', out, re.M
    )
    assert re.search(r'^Ca\t1 "H-a088c203009b306a"\t\t# "hgx-h100-01 mlx5_0"$', out, re.M)
    assert re.search(
        r'^\[1\]\(a088c203009b306a\) \t"S-[0-9a-f]{16}"\[1\]\t\t'
        r'# lid 128 lmc 0 "MF0;ib-leaf-01:MQM9700/U1" lid 3 4xNDR$',
        out,
        re.M,
    )
    assert "switchguid=0x" in out and "caguid=0xa088c203009b306a\n" in out


def test_the_node_lists_and_the_subnet_manager(h100: NodeState) -> None:
    switches = run(h100, "ibswitches").stdout.splitlines()
    assert len(switches) == 10  # two spines, eight rail leaves
    assert re.match(
        r'^Switch\t: 0x[0-9a-f]{16} ports 65 "MF0;ib-spine-01:MQM9700/U1" enhanced port 0 lid 1 lmc 0$', switches[0]
    )
    hosts = run(h100, "ibhosts").stdout
    assert 'Ca\t: 0xa088c203009b306a ports 1 "hgx-h100-01 mlx5_0"\n' in hosts
    assert hosts.count('"hgx-h100-02 mlx5_') == 8
    sm = run(h100, "sminfo")
    assert re.match(
        r"^sminfo: sm lid 1 sm guid 0x[0-9a-f]+, activity count \d+ priority 15 state 3 SMINFO_MASTER\n$", sm.stdout
    )
    listed = run(h100, "ibnetdiscover", "-S").stdout
    assert listed.count("Switch\t : 0x") == 10 and "devid 0xd2f0 vendid 0x2c9" in listed


def test_without_a_subnet_manager_sminfo_fails_and_discovery_still_answers(h100: NodeState) -> None:
    faults.get("no-subnet-manager").apply(h100)
    sm = run(h100, "sminfo")
    assert (sm.exit_code, sm.stdout) == (255, "sminfo: iberror: failed: can't resolve sm port (null)\n")
    out = run(h100, "ibnetdiscover")
    assert out.exit_code == 0 and "lid 0 4xNDR" in out.stdout


def test_a_roce_node_has_no_fabric_to_discover() -> None:
    result = run(load_fixture("pcie-l40s"), "iblinkinfo")
    assert result.exit_code == 255
    assert result.stdout == "iblinkinfo: iberror: failed: discover failed\n"
    assert "can't open UMAD port" in result.stderr


def test_storage_hcas_are_on_a_fabric_of_their_own() -> None:
    a100 = load_fixture("dgx-a100")
    compute = run(a100, "ibnetdiscover").stdout
    storage = run(a100, "ibnetdiscover", "-C", "mlx5_4").stdout
    assert "st-leaf-01" in storage and "ib-leaf-01" not in storage
    assert "st-leaf-01" not in compute and '"dgx-a100-01 mlx5_6"' in compute
    assert "MQM8700" in compute  # an HDR fabric: Quantum leaves


def test_a_port_down_leaves_its_leaf_port_polling_and_the_ca_undiscovered(h100: NodeState) -> None:
    faults.get("ib-port-down").apply(h100, ca="mlx5_3")
    out = run(h100, "iblinkinfo", "--switches-only").stdout
    leaf = out.split("MF0;ib-leaf-04:MQM9700/U1:\n", 1)[1]
    assert leaf.splitlines()[0] == '           6    1[  ] ==(                Down/ Polling)==>             [  ] "" ( )'
    assert '"hgx-h100-01 mlx5_3"' not in run(h100, "ibnetdiscover").stdout


def test_a_port_a_speed_grade_down_shows_hdr_and_what_it_could_be(h100: NodeState) -> None:
    faults.get("ib-degraded-rate").apply(h100, ca="mlx5_3")
    links = run(h100, "iblinkinfo", "--cas-only").stdout
    slow = next(line for line in links.splitlines() if line.startswith("      0xa088c2030067eeda"))
    assert "==( 4X        53.125 Gbps Active/  LinkUp)==>" in slow and slow.endswith("( Could be 106.25 Gbps)")
    assert '# "hgx-h100-01 mlx5_3" lid 239 4xHDR' in run(h100, "ibnetdiscover").stdout


def test_crossed_rails_move_only_the_far_ends(h100: NodeState) -> None:
    before = run(h100, "ibstat").stdout
    faults.get("ib-rails-crossed").apply(h100, a="mlx5_1", b="mlx5_2")
    assert run(h100, "ibstat").stdout == before  # every port Active at 400, as before
    line = run(h100, "iblinkinfo", "-l").stdout
    assert re.search(
        r'"\s*hgx-h100-01 mlx5_1"\s+165\s+1\[  \] ==\( 4X\s+106.25 Gbps Active/  LinkUp\)==>  '
        r'0x[0-9a-f]{16}\s+5\s+1\[  \] "MF0;ib-leaf-03',
        line,
    )
    faults.get("ib-rails-crossed").revert(h100)
    assert all(p.peer is None for h in h100.ib_hcas for p in h.ports)


def test_a_cable_in_the_wrong_leaf_takes_a_free_port_and_leaves_its_own_empty(h100: NodeState) -> None:
    faults.get("ib-cable-wrong-leaf").apply(h100, ca="mlx5_2", leaf="ib-leaf-05", port=7)
    out = run(h100, "iblinkinfo", "--switches-only").stdout
    own = out.split("MF0;ib-leaf-03:MQM9700/U1:\n", 1)[1].splitlines()[0]
    assert own.endswith('==(                Down/ Polling)==>             [  ] "" ( )')
    other = out.split("MF0;ib-leaf-05:MQM9700/U1:\n", 1)[1].splitlines()[6]
    assert other.endswith('"hgx-h100-01 mlx5_2" ( )') and "    7[  ]" in other


def test_the_plan_port_is_the_node_number_and_old_states_load_without_peers() -> None:
    state = load_fixture("hgx-h100", host="gpu-node-07")
    hca = state.hca("mlx5_5")
    peer = planned_peer(state, hca, hca.ports[0])
    assert peer is not None and (peer.switch, peer.port) == ("ib-leaf-06", 7)
    document = to_dict(state)
    for h in document["ib_hcas"]:
        h.pop("rail")
        for p in h["ports"]:
            p.pop("peer")
    old = from_dict(document)
    assert old.hca("mlx5_5").ports[0].peer is None and old.hca("mlx5_5").rail is None
    hca.ports[0].peer = IbPeerState("ib-leaf-02", 30)
    assert from_dict(to_dict(state)).hca("mlx5_5").ports[0].peer == IbPeerState("ib-leaf-02", 30)


def test_unknown_options_and_hcas_are_refused(h100: NodeState) -> None:
    assert run(h100, "iblinkinfo", "--bogus").stderr == "iblinkinfo: unrecognized option '--bogus'\n"
    missing = run(h100, "ibnetdiscover", "-C", "mlx5_42")
    assert missing.exit_code == 255 and "mlx5_42" in missing.stderr
