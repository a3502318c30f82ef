"""ibstat / ibstatus parser, against real outputs in corpus/ibstat and corpus/ibstatus."""

from __future__ import annotations

import doctest

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.facts import IbPort
from assessor.parsers import ibstat
from tests.support.corpus import read_corpus


def ports_by_ca(rel: str) -> dict[str, IbPort]:
    facts = ibstat.parse(read_corpus(rel))
    assert facts.ib_ports is not None
    return {p.ca: p for p in facts.ib_ports}


def test_ibstat_h100_ndr_has_eight_active_400g_infiniband_cx7_ports() -> None:
    ports = ports_by_ca("ibstat/01_h100_cx7_ndr400_ib_all_active.txt")
    cx7 = [p for p in ports.values() if p.ca_type == "MT4129"]
    assert len(cx7) == 8
    assert {(p.state, p.physical_state, p.rate_gbps, p.link_layer) for p in cx7} == {
        ("Active", "LinkUp", 400.0, "InfiniBand")
    }
    # The BlueField bond is the ninth CA: an Ethernet port a rate check must not count as IB.
    bond = ports["mlx5_bond_0"]
    assert (bond.ca_type, bond.rate_gbps, bond.link_layer) == ("MT41692", 200.0, "Ethernet")


def test_ibstat_port_carries_its_ca_and_port_identity() -> None:
    p = ports_by_ca("ibstat/01_h100_cx7_ndr400_ib_all_active.txt")["mlx5_5"]
    assert (p.port, p.firmware, p.node_guid, p.port_guid) == (
        1,
        "28.41.1000",
        "0xa088c20300da62aa",
        "0xa088c20300da62aa",
    )
    assert (p.base_lid, p.sm_lid) == (1775, 1)


def test_ibstat_port_polling_is_down() -> None:
    ports = ports_by_ca("ibstat/02_h100_cx7_roce400_one_down_polling.txt")
    assert (ports["mlx5_11"].state, ports["mlx5_11"].physical_state, ports["mlx5_11"].rate_gbps) == (
        "Down",
        "Polling",
        40.0,
    )
    assert ports["mlx5_0"].state == "Active"
    assert ports["mlx5_1"].ca_type == "MT4125"
    assert len(ports) == 12


def test_ibstat_mixed_link_layers_and_disabled_ports() -> None:
    ports = ports_by_ca("ibstat/03_h100_mixed_ib_eth_some_disabled.txt")
    assert (ports["mlx5_2"].state, ports["mlx5_2"].physical_state) == ("Down", "Disabled")
    layers = {p.link_layer for p in ports.values()}
    assert layers == {"InfiniBand", "Ethernet"}
    assert ports["mlx5_0"].sm_lid == 334


def test_ibstat_tab_indented_mt4126_at_200() -> None:
    ports = ports_by_ca("ibstat/04_a100_cx6dx_mt4126_200.txt")
    assert len(ports) == 9
    assert {p.ca_type for p in ports.values()} == {"MT4126"}
    assert {p.rate_gbps for p in ports.values()} == {200.0}
    assert ports["mlx5_0"].link_layer == "Ethernet"
    assert ports["mlx5_1"].link_layer == "InfiniBand"


def test_ibstat_ibpanic_keeps_ports_printed_before_it() -> None:
    ports = ports_by_ca("ibstat/05_a100_cx6_hdr_ibpanic_exit255.txt")
    assert sorted(ports) == [f"mlx5_{i}" for i in range(8)]  # mlx5_8 is the device that failed
    assert ports["mlx5_7"].link_layer == "InfiniBand"
    assert ports["mlx5_7"].base_lid == 13305


def test_ibstatus_format_is_detected_and_normalised_to_ibstat_words() -> None:
    facts = ibstat.parse(read_corpus("ibstatus/01_a100_hdr_all_active.txt"))
    assert facts.ib_ports is not None
    ports = {p.ca: p for p in facts.ib_ports}
    assert len(ports) == 9
    p0 = ports["mlx5_0"]
    assert (p0.port, p0.state, p0.physical_state, p0.rate_gbps, p0.link_layer) == (
        1,
        "Active",
        "LinkUp",
        200.0,
        "InfiniBand",
    )
    assert (ports["mlx5_8"].rate_gbps, ports["mlx5_8"].link_layer) == (40.0, "Ethernet")


def test_ibstatus_hex_lids_match_ibstat_of_the_same_node() -> None:
    # Both captures come from the same Azure A100 node: the LIDs must agree port by port.
    status = {p.ca: p.base_lid for p in ibstat.parse(read_corpus("ibstatus/01_a100_hdr_all_active.txt")).ib_ports or []}
    stat = ports_by_ca("ibstat/05_a100_cx6_hdr_ibpanic_exit255.txt")
    assert status["mlx5_0"] == 0x33BF == stat["mlx5_0"].base_lid
    assert all(status[ca] == p.base_lid for ca, p in stat.items())


def test_ibstatus_other_states_map_by_number() -> None:
    text = (
        "Infiniband device 'mlx5_3' port 1 status:\n"
        "\tbase lid:\t 0x0\n\tsm lid:\t 0x0\n"
        "\tstate:\t 2: INIT\n\tphys state:\t 3: Disabled\n"
        "\trate:\t 10 Gb/sec (4X SDR)\n\tlink_layer:\t InfiniBand\n"
    )
    (p,) = ibstat.parse(text).ib_ports or []
    assert (p.state, p.physical_state, p.rate_gbps) == ("Initializing", "Disabled", 10.0)


def test_ibstat_spaces_and_tabs_read_the_same() -> None:
    tabbed = "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Initializing\n\t\tPhysical state: LinkUp\n"
    spaced = tabbed.replace("\t", "    ")
    assert ibstat.parse(tabbed) == ibstat.parse(spaced)
    assert (ibstat.parse(tabbed).ib_ports or [])[0].state == "Initializing"


def test_ibstat_unknown_key_value_lines_are_ignored() -> None:
    text = "CA 'mlx5_0'\n\tSome future key: 7\n\tPort 1:\n\t\tState: Active\n\t\tNew port key: x\n"
    (p,) = ibstat.parse(text).ib_ports or []
    assert (p.ca, p.state) == ("mlx5_0", "Active")


def test_ibstat_truncated_mid_port_keeps_what_was_printed() -> None:
    # A paste cut halfway through its last line (no final newline): the half line is dropped.
    text = "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Active\n\t\tPhys"
    (p,) = ibstat.parse(text).ib_ports or []
    assert (p.state, p.physical_state) == ("Active", None)
    with pytest.raises(ParseError) as err:
        ibstat.parse(text + "\n")  # a whole line that is not Key: value
    assert err.value.line == 5

    cut_on_line_end = "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Active\n"
    (p,) = ibstat.parse(cut_on_line_end).ib_ports or []
    assert (p.state, p.physical_state, p.rate_gbps) == ("Active", None, None)


def test_ibstat_garbage_line_names_its_line_number() -> None:
    text = "CA 'mlx5_0'\n\tCA type: MT4129\nthis is not ibstat\n"
    with pytest.raises(ParseError) as err:
        ibstat.parse(text)
    assert err.value.line == 3


def test_ibstat_text_before_the_first_ca_is_an_error() -> None:
    with pytest.raises(ParseError) as err:
        ibstat.parse("State: Active\n")
    assert err.value.line == 1


def test_ibstat_empty_output_is_an_error() -> None:
    with pytest.raises(ParseError):
        ibstat.parse("\n  \n")


def test_ibstat_is_registered_under_its_kind() -> None:
    facts = parsers.parse("ibstat", read_corpus("ibstat/02_h100_cx7_roce400_one_down_polling.txt"))
    assert facts.ib_ports is not None and facts.ib_devices is None and facts.kernel_events is None


def test_ibstat_doctests() -> None:
    result = doctest.testmod(ibstat)
    assert result.attempted > 0 and result.failed == 0
