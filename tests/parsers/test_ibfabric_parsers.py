"""ibnetdiscover and iblinkinfo to ib_links, on real samples, cut and prompted pastes, and the simulator's output."""

from __future__ import annotations

import pytest

from assessor.errors import ParseError
from assessor.parsers import iblinkinfo, ibnetdiscover, parse_auto
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import CORPUS


def _read(name: str) -> str:
    return (CORPUS / name).read_text(encoding="utf-8")


def test_ibnetdiscover_man_page_topology_links_every_ca_port_to_its_switch_port() -> None:
    facts = ibnetdiscover.parse(_read("ibnetdiscover/01_rdma_core_man_sdr_two_switches.txt"))
    links = {(link.guid, link.port): link for link in facts.ib_links or []}
    # the CA's own block: port 2 of H-0008f10403960558 on port 8 of the ISR9024, lid 14, 4xSDR
    two = links[("0x0008f10403960558", 2)]
    assert (two.peer, two.peer_port, two.peer_lid, two.lid, two.width, two.speed) == (
        "ISR9024 Voltaire",
        8,
        6,
        14,
        "4X",
        "SDR",
    )
    # the 1x link the man page shows, and a CA seen only from its switch's block
    assert links[("0x0008f10403960558", 1)].width == "1X"
    assert links[("0x0008f10403961354", 1)].peer_port == 22
    assert len(links) == 5 and not facts.partial


def test_ibnetdiscover_prompted_and_cut_mid_line_keeps_what_it_has_and_says_it_is_cut() -> None:
    text = _read("ibnetdiscover/02_prompted_cut_mid_line.txt")
    kind, facts = parse_auto(text)
    assert kind == "ibnetdiscover"
    assert facts.ib_links and "cut at line" in facts.partial["ib_links"]


def test_ibnetdiscover_garbage_inside_a_node_block_names_its_line() -> None:
    text = _read("ibnetdiscover/01_rdma_core_man_sdr_two_switches.txt").replace(
        '[10]    "S-0008f10400410015"[1]', "[10]    garbage", 1
    )
    with pytest.raises(ParseError) as exc:
        ibnetdiscover.parse(text)
    assert exc.value.line is not None and exc.value.line > 1


def test_ibnetdiscover_refuses_text_that_is_no_topology() -> None:
    with pytest.raises(ParseError):
        ibnetdiscover.parse("hello\nworld\n")


def test_iblinkinfo_real_sample_reads_both_ca_and_switch_sections() -> None:
    facts = iblinkinfo.parse(_read("iblinkinfo/01_roce_v100_mqm8700_degraded_speed_25g_lanes.txt"))
    links = {(link.ca, link.port): link for link in facts.ib_links or []}
    three = links[("gpu-v100-3 HCA-1", 1)]
    assert (three.peer, three.peer_port, three.speed, three.state) == ("MF0;ibswitch254:MQM8700/U1", 3, "EDR", "Active")
    # gpu-v100-2 is only in the switch's section (the paste is cut with "...")
    assert links[("gpu-v100-2 HCA-1", 1)].peer_port == 4


@pytest.mark.parametrize("args", [[], ["-l"], ["--switches-only"]])
def test_the_simulated_tools_round_trip_through_the_parsers(args: list[str]) -> None:
    state = load_fixture("hgx-h100")
    faults.get("ib-rails-crossed").apply(state, a="mlx5_1", b="mlx5_2")
    text = "root@hgx-h100-01:~# iblinkinfo\n" + run_tool(["iblinkinfo", *args], Session(state=state)).stdout
    kind, facts = parse_auto(text)
    assert kind == "iblinkinfo"
    links = {(link.ca, link.port): link for link in facts.ib_links or []}
    assert links[("hgx-h100-01 mlx5_1", 1)].peer == "MF0;ib-leaf-03:MQM9700/U1"
    assert links[("hgx-h100-01 mlx5_0", 1)].peer == "MF0;ib-leaf-01:MQM9700/U1"
    topo = run_tool(["ibnetdiscover"], Session(state=state)).stdout
    assert parse_auto(topo)[0] == "ibnetdiscover"
    by_ca = {(link.ca, link.port): link for link in ibnetdiscover.parse(topo).ib_links or []}
    assert by_ca[("hgx-h100-01 mlx5_2", 1)].peer == "MF0;ib-leaf-02:MQM9700/U1"
