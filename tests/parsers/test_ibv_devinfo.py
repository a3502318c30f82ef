"""ibv_devinfo parser, against real excerpts in corpus/ibv_devinfo."""

from __future__ import annotations

import doctest

import pytest

from assessor.errors import ParseError
from assessor.facts import IbDevice
from assessor.parsers import ibv_devinfo
from tests.support.corpus import read_corpus

# ibv_devinfo -v of one HDR port (shape of rdma-core's output: flag lists on lines of
# their own, blank lines inside the device, GID lines).
VERBOSE = """\
hca_id:\tmlx5_0
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t20.31.1014
\tnode_guid:\t\t\tb859:9f03:00c8:95f4
\tvendor_id:\t\t\t0x02c9
\tvendor_part_id:\t\t\t4123
\tphys_port_cnt:\t\t\t1
\tdevice_cap_flags:\t\t0xed721c36
\t\t\t\t\tBAD_PKEY_CNTR
\t\t\t\t\tBAD_QKEY_CNTR
\ttag matching not supported

\tcq moderation caps:
\t\tmax_cq_count:\t65535
\tnum_comp_vectors:\t\t63
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_INIT (2)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tsm_lid:\t\t\t0
\t\t\tport_lid:\t\t65535
\t\t\tlink_layer:\t\tInfiniBand
\t\t\tactive_width:\t\t4X (2)
\t\t\tactive_speed:\t\t50.0 Gbps (64)
\t\t\tphys_state:\t\tLINK_UP (5)
\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:b859:9f03:00c8:95f4
"""


def devices(rel: str) -> dict[str, IbDevice]:
    facts = ibv_devinfo.parse(read_corpus(rel))
    assert facts.ib_devices is not None
    return {d.hca_id: d for d in facts.ib_devices}


def test_ibv_devinfo_roce_port_is_active_ethernet_without_sm() -> None:
    dev = devices("ibv_devinfo/01_h100_roce_cx7_fw28.42_port_active_ethernet.txt")["mlx5_2"]
    assert (dev.fw_ver, dev.vendor_part_id, dev.board_id, dev.phys_port_cnt) == ("28.42.1000", 4129, "MT_0000000838", 1)
    assert dev.transport == "InfiniBand (0)"
    (port,) = dev.ports
    assert (port.ca, port.port, port.state, port.link_layer) == ("mlx5_2", 1, "Active", "Ethernet")
    assert (port.base_lid, port.sm_lid) == (0, 0)
    # Without -v there is no width/speed: the rate is unknown, not zero.
    assert port.rate_gbps is None and port.physical_state is None


def test_ibv_devinfo_leading_lines_before_first_hca_id_are_skipped() -> None:
    devs = devices("ibv_devinfo/01_h100_roce_cx7_fw28.42_port_active_ethernet.txt")
    assert list(devs) == ["mlx5_2", "mlx5_3"]


def test_ibv_devinfo_truncated_last_device_keeps_what_was_printed() -> None:
    last = devices("ibv_devinfo/01_h100_roce_cx7_fw28.42_port_active_ethernet.txt")["mlx5_3"]
    # The excerpt ends on "node_guid:" with no value: a ConnectX-5 (16.x firmware) with no ports read.
    assert (last.fw_ver, last.node_guid, last.ports) == ("16.35.4030", None, [])


def test_ibv_devinfo_native_ib_port_has_lid_and_sm() -> None:
    dev = devices("ibv_devinfo/02_ib_cx7_mt4126_fw28.37_port_active_infiniband.txt")["mlx5_3"]
    assert (dev.node_guid, dev.sys_image_guid) == ("2dc3:190f:3d85:1cb6", "946d:ae03:00f0:0b6a")
    (port,) = dev.ports
    assert (port.state, port.link_layer, port.base_lid, port.sm_lid) == ("Active", "InfiniBand", 1690, 1)
    assert port.firmware == "28.37.1700"


def test_ibv_devinfo_verbose_gives_rate_and_physical_state() -> None:
    (dev,) = ibv_devinfo.parse(VERBOSE).ib_devices or []
    (port,) = dev.ports
    assert (port.state, port.physical_state, port.rate_gbps) == ("Initializing", "LinkUp", 200.0)
    assert port.base_lid == 65535
    assert dev.vendor_part_id == 4123


@pytest.mark.parametrize(
    ("printed", "state"),
    [
        ("PORT_ACTIVE (4)", "Active"),
        ("PORT_DOWN (1)", "Down"),
        ("PORT_INIT (2)", "Initializing"),
        ("PORT_ARMED (3)", "Armed"),
    ],
)
def test_ibv_devinfo_port_states_use_ibstat_words(printed: str, state: str) -> None:
    text = f"hca_id: mlx5_0\n\tport: 1\n\t\tstate: {printed}\n"
    (dev,) = ibv_devinfo.parse(text).ib_devices or []
    assert dev.ports[0].state == state


@pytest.mark.parametrize(
    ("width", "speed", "rate"),
    [("4X (2)", "100.0 Gbps (128)", 400.0), ("4X (2)", "25.0 Gbps (32)", 100.0), ("1X (1)", "2.5 Gbps (1)", 2.5)],
)
def test_ibv_devinfo_rate_is_lanes_times_lane_speed(width: str, speed: str, rate: float) -> None:
    text = f"hca_id: mlx5_0\n\tport: 1\n\t\tactive_width: {width}\n\t\tactive_speed: {speed}\n"
    (dev,) = ibv_devinfo.parse(text).ib_devices or []
    assert dev.ports[0].rate_gbps == rate


def test_ibv_devinfo_two_port_device() -> None:
    text = "hca_id: mlx5_0\n\tport: 1\n\t\tstate: PORT_ACTIVE (4)\n\tport: 2\n\t\tstate: PORT_DOWN (1)\n"
    (dev,) = ibv_devinfo.parse(text).ib_devices or []
    assert [(p.port, p.state) for p in dev.ports] == [(1, "Active"), (2, "Down")]


def test_ibv_devinfo_no_devices_message_is_an_empty_list() -> None:
    assert ibv_devinfo.parse("No IB devices found\n").ib_devices == []


def test_ibv_devinfo_text_without_any_device_is_an_error() -> None:
    with pytest.raises(ParseError):
        ibv_devinfo.parse("bash: ibv_devinfo: command not found\n")


def test_ibv_devinfo_non_numeric_lid_names_its_line() -> None:
    with pytest.raises(ParseError) as err:
        ibv_devinfo.parse("hca_id: mlx5_0\n\tport: 1\n\t\tport_lid: banana\n")
    assert err.value.line == 3


def test_ibv_devinfo_empty_output_is_an_error() -> None:
    with pytest.raises(ParseError):
        ibv_devinfo.parse("")


def test_ibv_devinfo_doctests() -> None:
    result = doctest.testmod(ibv_devinfo)
    assert result.attempted > 0 and result.failed == 0
