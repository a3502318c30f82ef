from __future__ import annotations

import pytest

from assessor.errors import ParseError
from assessor.parsers import parse
from assessor.parsers.nccl_debug import parse_debug_lines
from tests.support.corpus import read_corpus

H800 = "nccl_debug/01_h800_single_node_ib_not_found_socket_fallback_nvls.txt"
L40_IBEXT = "nccl_debug/03_l40_roce_irdma_hpcx_plugin_IBext_v8.txt"
H20_GDRDMA = "nccl_debug/04_h20_2node_channels_p2p_cumem_net_ib_gdrdma.txt"
OLD_25 = "nccl_debug/06_old_nccl_2.5_ring_via_p2p_ipc_mixed_ib_roce.txt"


def _debug(rel: str):
    facts = parse("nccl-debug", read_corpus(rel))
    assert facts.nccl is not None
    return facts.nccl.debug


def test_ib_not_found_falls_back_to_socket_with_nvls_and_p2p_direct(corpus):
    debug = _debug(H800)
    assert debug.nccl_version == "2.18.3+cuda12.2"
    assert debug.ib_no_device is True
    assert debug.network == "Socket"
    assert debug.ib_devices == []
    # "via P2P/direct pointer" first, then "Connected NVLS tree"; single node: no NET channel.
    assert debug.transports == ["P2P/direct", "NVLS"]
    assert debug.gdrdma is None
    assert debug.warnings == []


def test_parser_sets_only_the_nccl_field(corpus):
    facts = parse("nccl-debug", read_corpus(H800))
    assert facts.nccl is not None
    assert facts.nccl.rows == []  # the table is nccl_tests' business
    assert facts.gpus is None and facts.dcgm_diag is None and facts.ib_ports is None


def test_hpcx_plugin_network_is_ibext_v8_with_roce_devices_listed_once(corpus):
    debug = _debug(L40_IBEXT)
    assert debug.nccl_version == "2.21.5+cuda12.4"
    assert debug.network == "IBext_v8"
    assert debug.ib_no_device is False
    # Both ranks print the same list: kept once, without the [RO] flag or the OOB interface.
    assert debug.ib_devices == ["irdma0:1/RoCE", "irdma3:1/RoCE"]


def test_two_node_channels_give_net_ib_gdrdma_and_p2p_cumem(corpus):
    debug = _debug(H20_GDRDMA)
    assert debug.transports == ["NET/IB/GDRDMA", "P2P/CUMEM"]
    assert debug.gdrdma is True
    assert debug.nccl_version is None  # the excerpt does not say


def test_old_nccl_ring_lines_behind_mpirun_rank_tag(corpus):
    debug = _debug(OLD_25)
    assert debug.transports == ["P2P/IPC"]
    assert debug.ib_devices == ["mlx5_1:1/IB", "mlx5_3:1/IB", "mlx5_0:1/IB", "mlx5_2:1/RoCE", "mlx5_4:1/IB"]
    assert debug.gdrdma is None


@pytest.mark.parametrize(
    ("rel", "needle"),
    [
        (
            "nccl_warn/01_ib_completion_err12_vendor129_roce_ipv4gid.txt",
            "status=12 opcode=129 len=65536 vendor err 129",
        ),
        ("nccl_warn/03_ib_completion_error4_vendor81_h100_old_format.txt", "with error 4, opcode 32564"),
    ],
)
def test_warn_lines_are_kept_verbatim_without_prefix(corpus, rel, needle):
    debug = _debug(rel)
    assert len(debug.warnings) == 2  # the "-> 6" INFO trace lines are not warnings
    assert all(w.startswith("NET/IB : Got completion from peer ") for w in debug.warnings)
    assert needle in debug.warnings[0]
    # host:pid:tid [dev] and the source location (ib_plugin.c:1615, transport/net_ib.cc:1295) are gone.
    assert not any("NCCL WARN" in w or "ib_plugin.c" in w or "net_ib.cc" in w for w in debug.warnings)


def test_net_ib_without_gdrdma_says_false():
    debug = parse_debug_lines(
        [
            "gpu1:100:200 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0",
            "gpu1:100:200 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/IB/1",
        ]
    )
    assert debug.transports == ["NET/IB"]
    assert debug.gdrdma is False


def test_any_gdrdma_channel_makes_gdrdma_true_and_nic_indices_are_dropped():
    debug = parse_debug_lines(
        [
            "gpu1:100:200 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0",
            "gpu1:100:200 [0] NCCL INFO Channel 00/1 : 0[0] -> 8[0] [send] via NET/IB/2(4)/GDRDMA",
            "gpu1:100:200 [0] NCCL INFO Channel 02/0 : 0[0] -> 8[0] [send] via NET/IB/3/GDRDMA/Shared",
        ]
    )
    assert debug.transports == ["NET/IB", "NET/IB/GDRDMA"]
    assert debug.gdrdma is True


def test_socket_and_shm_and_p2p_variants_are_normalised():
    debug = parse_debug_lines(
        [
            "h:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC/read",
            "h:1:2 [0] NCCL INFO Channel 01 : 0[0] -> 1[1] via P2P/IPC",
            "h:1:2 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via SHM/direct/direct",
            "h:1:2 [0] NCCL INFO Channel 00/0 : 3[3] -> 4[0] [send] via NET/Socket/0",
        ]
    )
    assert debug.transports == ["P2P/IPC", "SHM", "NET/Socket"]
    assert debug.gdrdma is False  # a NET channel without GPUDirect RDMA


def test_ibext_plugin_channels_count_as_net_ib():
    debug = parse_debug_lines(
        ["w1:5771:5783 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IBext_v8/1/GDRDMA"]
    )
    assert debug.transports == ["NET/IB/GDRDMA"]
    assert debug.gdrdma is True


def test_nvls_support_alone_is_not_nvls_use():
    line = "nf5688m7-1:422771:422790 [4] NCCL INFO NVLS multicast support is available on dev 4"
    assert parse_debug_lines([line]).transports == []
    channels = "nf5688m7-1:422771:422789 [3] NCCL INFO 16 coll channels, 16 nvls channels, 16 p2p channels"
    assert parse_debug_lines([line, channels]).transports == ["NVLS"]
    no_nvls = "h:1:2 [3] NCCL INFO 16 coll channels, 0 nvls channels, 16 p2p channels, 16 p2p channels per peer"
    assert parse_debug_lines([no_nvls]).transports == []


def test_channel_ring_listing_is_not_a_transport():
    debug = parse_debug_lines(
        ["nf5688m7-1:422771:422786 [0] NCCL INFO Channel 00/16 :    0   3   1   2   4   7   5   6"]
    )
    assert debug.transports == []


def test_mpirun_tag_output_prefix_does_not_hide_lines():
    lines = [
        "[1,0]<stdout>:nf5688m7-1:422771:422791 [5] NCCL INFO NET/IB : No device found.",
        "[1,0]<stdout>:nf5688m7-1:422771:422791 [5] NCCL INFO Using network Socket",
        "[1,0]<stdout>:nf5688m7-1:422771:422787 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via P2P/direct pointer",
    ]
    debug = parse_debug_lines(lines)
    assert debug.ib_no_device is True
    assert debug.network == "Socket"
    assert debug.transports == ["P2P/direct"]


def test_first_network_wins_and_version_line_may_be_bare():
    debug = parse_debug_lines(
        [
            "NCCL version 2.18.3+cuda12.2",
            "h:1:2 [0] NCCL INFO Using network IB",
            "h:1:2 [0] NCCL INFO Using network Socket",
        ]
    )
    assert debug.nccl_version == "2.18.3+cuda12.2"
    assert debug.network == "IB"


def test_text_without_nccl_lines_is_a_parse_error():
    with pytest.raises(ParseError, match="no NCCL INFO/WARN lines"):
        parse("nccl-debug", "Segmentation fault (core dumped)\n\x1b[0m garbage ###\n")


def test_empty_input_is_a_parse_error():
    with pytest.raises(ParseError):
        parse("nccl-debug", "")
