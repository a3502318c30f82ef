"""ib.cabling: crossed rails and a cable in the wrong leaf named with both ends; never a pass on missing data."""

from __future__ import annotations

from assessor.checks import REGISTRY, run_check
from assessor.facts import IbLink, NodeFacts, Topology
from assessor.parsers import ibnetdiscover, nvidia_smi_topo
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.tools import Session, run_tool

PLAN = [{"hca": f"mlx5_{i}", "switch": f"ib-leaf-{i + 1:02d}", "port": 1, "gpu": i} for i in range(8)]


def _facts(fault: str | None = None, *, topology: bool = True, **options: str) -> NodeFacts:
    state = load_fixture("hgx-h100")
    if fault:
        faults.get(fault).apply(state, **options)
    facts = ibnetdiscover.parse(run_tool(["ibnetdiscover"], Session(state=state)).stdout)
    facts.host = state.host
    if topology:
        facts.topology = nvidia_smi_topo.parse(
            run_tool(["nvidia-smi", "topo", "-m"], Session(state=state)).stdout
        ).topology
    return facts


def _run(facts: NodeFacts, plan: object = PLAN, **params: object) -> tuple[str, str]:
    r = run_check(REGISTRY["ib.cabling"], facts, {"plan": plan, **params})
    return r.status, r.message


def test_a_node_cabled_as_planned_passes() -> None:
    assert _run(_facts()) == ("pass", "8 HCAs cabled as the plan says (hgx-h100-01)")


def test_crossed_rails_fail_naming_both_cables_and_both_ports() -> None:
    status, message = _run(_facts("ib-rails-crossed", a="mlx5_1", b="mlx5_2"))
    assert status == "fail"
    assert "mlx5_1 and mlx5_2 are crossed" in message
    assert "mlx5_1 is on ib-leaf-03 port 1 (plan: ib-leaf-02 port 1)" in message


def test_a_cable_in_the_wrong_leaf_says_where_it_is_and_what_its_own_port_holds() -> None:
    status, message = _run(_facts("ib-cable-wrong-leaf"))
    assert status == "fail"
    assert message == "mlx5_2 is on ib-leaf-04 port 20, the plan puts it on ib-leaf-03 port 1 (nothing is cabled there)"


def test_a_plan_whose_gpu_is_not_nearest_its_hca_fails() -> None:
    plan = [dict(row) for row in PLAN]
    plan[0]["gpu"], plan[1]["gpu"] = 1, 0
    status, message = _run(_facts(), plan)
    assert status == "fail" and "nearest NIC is mlx5_1" in message


def test_missing_data_is_never_a_pass() -> None:
    assert _run(NodeFacts())[0] == "skip"
    # cabling as planned, but no topo -m to say which GPU each rail serves
    assert _run(_facts(topology=False))[0] == "warn"
    # an HCA the output does not show
    facts = _facts()
    facts.ib_links = [link for link in facts.ib_links or [] if not link.ca.endswith("mlx5_7")]
    assert _run(facts)[0] == "warn"
    # another node's topology only
    assert _run(_facts(), host="other-node")[0] == "skip"


def test_a_host_is_found_when_the_snapshot_has_none_and_one_host_has_the_hcas() -> None:
    facts = NodeFacts(
        ib_links=[IbLink("gpu7 mlx5_0", 1, peer="MF0;ib-leaf-01:MQM9700/U1", peer_port=7)],
        topology=Topology(devices=["GPU0", "NIC0"], matrix={"GPU0": {"NIC0": "PIX"}}, nic_names={"NIC0": "mlx5_0"}),
    )
    plan = [{"hca": "mlx5_0", "switch": "ib-leaf-01", "port": 7, "gpu": 0}]
    assert _run(facts, plan) == ("pass", "1 HCAs cabled as the plan says (gpu7)")


def test_a_malformed_plan_is_an_error_naming_the_row_and_key() -> None:
    status, message = _run(_facts(), [{"hca": "mlx5_0", "switch": "ib-leaf-01", "port": "one"}])
    assert status == "error" and "plan[0].port" in message


def test_without_a_plan_the_rails_are_read_from_the_fabric_itself() -> None:
    # every other node has its mlx5_2 on ib-leaf-03: this node's mlx5_1 there is in the wrong leaf
    status, message = _run(_facts("ib-rails-crossed", a="mlx5_1", b="mlx5_2"), plan=None)
    assert status == "fail"
    assert message.startswith(
        "mlx5_1 is on ib-leaf-03 port 1, a leaf whose other nodes have their mlx5_2 there; "
        "the other nodes' mlx5_1 are on ib-leaf-02"
    )
    assert _run(_facts(), plan=None)[0] == "pass"
    # one switch with every HCA of every host on it (corpus iblinkinfo/01): no rails to read, no plan: skip
    one_switch = NodeFacts(
        host="gpu-v100-0",
        ib_links=[
            IbLink(f"gpu-v100-{n} HCA-1", 1, peer="MF0;ibswitch254:MQM8700/U1", peer_port=n + 1) for n in range(2)
        ],
    )
    assert _run(one_switch, plan=None)[0] == "skip"
