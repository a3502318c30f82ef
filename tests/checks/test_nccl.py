from assessor.facts import NcclDebug, NcclDevice, NcclRow, NcclRun
from tests.support.builders import A100, H100, gpus, ndr_ports, node, run

# Sizes and busbw of corpus/nccl_tests/02 (8x A100-SXM4-80GB, one node): peak 232 GB/s at 4 GiB,
# "# Avg bus bandwidth" 66.2.
A100_ROWS = [(8, 0.0), (1048576, 40.1), (268435456, 210.5), (4294967296, 232.1)]


def nccl_run(rows=A100_ROWS, name="NVIDIA A100-SXM4-80GB", hosts=("thanos",), per_host=8, wrong=0, **fields):
    devices = [
        NcclDevice(rank=h * per_host + d, host=host, device=d, name=name)
        for h, host in enumerate(hosts)
        for d in range(per_host)
    ]
    table = [
        NcclRow(
            size_bytes=size,
            count=size // 4,
            type="float",
            redop="sum",
            root=-1,
            oop_busbw=bw,
            oop_wrong=wrong,
            ip_busbw=bw * 0.99,
            ip_wrong=wrong,
        )
        for size, bw in rows
    ]
    return NcclRun(test="all_reduce_perf", devices=devices, rows=table, avg_busbw=66.2, **fields)


def test_a100_busbw_uses_largest_size_not_the_average():
    r = run("nccl.busbw", node(nccl=nccl_run()))
    assert r.status == "pass"
    assert r.observed["busbw"] == 232.1
    assert r.observed["size"] == "4 GiB"
    assert r.expected == ">= 228 GB/s"


def test_busbw_below_reference_fails():
    rows = [(8, 0.0), (8589934592, 370.0)]
    r = run("nccl.busbw", node(nccl=nccl_run(rows, name=H100)))
    assert r.status == "fail"
    assert "370" in r.message and "460" in r.message
    assert "gpu.nvlink" in str(r.hint)


def test_tolerance_allows_a_margin_but_80_percent_still_fails():
    rows = [(8589934592, 440.0)]
    assert run("nccl.busbw", node(nccl=nccl_run(rows, name=H100)), tolerance_pct=5).status == "pass"
    rows = [(8589934592, 0.8 * 460)]
    assert run("nccl.busbw", node(nccl=nccl_run(rows, name=H100))).status == "fail"


def test_model_from_gpu_facts_when_device_lines_have_no_name():
    r = run("nccl.busbw", node(nccl=nccl_run(name=None), gpus=gpus(8, A100)))
    assert r.status == "pass"


def test_single_rank_is_not_a_bandwidth_test():
    # corpus/nccl_tests/05: one GPU, busbw 0.00, Avg 0
    r = run("nccl.busbw", node(nccl=nccl_run([(1048576, 0.0)], per_host=1)), min_gbps=100)
    assert r.status == "error"
    assert "1 rank" in r.message


def test_all_zero_busbw_errors():
    r = run("nccl.busbw", node(nccl=nccl_run([(8, 0.0), (16, 0.0)])), min_gbps=100)
    assert r.status == "error"


def test_multi_node_run_has_no_auto_reference():
    r = run("nccl.busbw", node(nccl=nccl_run(hosts=("ztan-mig-235z", "ztan-mig-gq73"), name=H100)))
    assert r.status == "skip"
    assert "min_gbps" in r.message
    assert run("nccl.busbw", node(nccl=nccl_run(hosts=("a", "b"), name=H100)), min_gbps=200).status == "pass"


def test_broadcast_type_run_has_no_auto_reference():
    # corpus/nccl_debug/01: redop none, root 0, no test name
    run_ = nccl_run(name=H100)
    run_.test = None
    for row in run_.rows:
        row.redop, row.root = "none", 0
    assert run("nccl.busbw", node(nccl=run_)).status == "skip"


def test_unknown_gpu_model_skips_with_min_gbps_hint():
    r = run("nccl.busbw", node(nccl=nccl_run(name="NVIDIA H800")))
    assert r.status == "skip"
    assert "NVIDIA H800" in r.message


def test_busbw_missing_and_broken():
    assert run("nccl.busbw", node()).status == "skip"
    assert run("nccl.busbw", node(problems={"nccl": "nccl-tests.txt: no table"})).status == "error"


def test_clean_run_has_no_errors():
    r = run("nccl.errors", node(nccl=nccl_run()))
    assert r.status == "pass"


def test_wrong_results_fail():
    r = run("nccl.errors", node(nccl=nccl_run(wrong=3)))
    assert r.status == "fail"
    assert "wrong results" in r.message


def test_out_of_bounds_fail():
    assert run("nccl.errors", node(nccl=nccl_run(out_of_bounds=12))).status == "fail"


def test_nccl_warn_line_fails_naming_the_first():
    warn = (
        "node01:1234:1290 [2] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<52944> with error 12, "
        "opcode 0, len 0, vendor err 129 (Recv)"
    )
    debug = NcclDebug(warnings=[warn, "second"])
    r = run("nccl.errors", node(nccl=nccl_run(debug=debug)))
    assert r.status == "fail"
    assert "vendor err 129" in r.message and "1 more" in r.message


def test_validation_off_warns():
    r = run("nccl.errors", node(nccl=nccl_run(wrong=None)))
    assert r.status == "warn"
    assert "-c 1" in str(r.hint)


def test_run_without_rows_fails():
    r = run("nccl.errors", node(nccl=nccl_run(rows=[])))
    assert r.status == "fail"


def test_errors_missing_and_broken():
    assert run("nccl.errors", node()).status == "skip"
    assert run("nccl.errors", node(problems={"nccl": "truncated"})).status == "error"


def test_socket_fallback_on_single_node_passes_with_note():
    # corpus/nccl_debug/01: 8x H800 on one node, "NET/IB : No device found." then Socket
    debug = NcclDebug(network="Socket", ib_no_device=True, transports=["P2P/direct pointer", "NVLS"])
    r = run("nccl.transport", node(nccl=nccl_run(name="NVIDIA H800", hosts=("nf5688m7-1",), debug=debug)))
    assert r.status == "pass"
    assert "single node" in r.message


def test_socket_fallback_on_single_node_with_active_hcas_fails():
    # same run, but ibstat shows 8 Active NDR ports: NCCL could not see them
    debug = NcclDebug(network="Socket", ib_no_device=True, transports=["P2P/direct pointer", "NVLS"])
    facts = node(nccl=nccl_run(name="NVIDIA H800", hosts=("nf5688m7-1",), debug=debug), ib_ports=ndr_ports())
    r = run("nccl.transport", facts)
    assert r.status == "fail"
    assert "fell back to sockets" in r.message and "8 HCAs are Active" in r.message
    assert r.hint and "NCCL_IB_HCA" in r.hint


def test_socket_fallback_on_two_nodes_fails():
    debug = NcclDebug(network="Socket", ib_no_device=True, transports=["P2P/IPC", "NET/Socket"])
    r = run("nccl.transport", node(nccl=nccl_run(hosts=("a", "b"), debug=debug)))
    assert r.status == "fail"
    assert r.message == "NCCL fell back to sockets: NET/IB : No device found (2 nodes, 16 ranks)"


def test_ib_with_gdrdma_across_nodes_passes():
    # corpus/nccl_debug/04: 2 nodes, NET/IB/3/GDRDMA channels
    debug = NcclDebug(network="IB", transports=["P2P/CUMEM", "NET/IB/GDRDMA"], gdrdma=True)
    assert run("nccl.transport", node(nccl=nccl_run(hosts=("a", "b"), debug=debug))).status == "pass"


def test_net_channels_imply_multi_node_even_without_hosts():
    debug = NcclDebug(network="IB", transports=["P2P/CUMEM", "NET/IB"], gdrdma=False)
    r = run("nccl.transport", node(nccl=nccl_run(hosts=("a",), debug=debug)))
    assert r.status == "fail"
    assert "nvidia_peermem" in str(r.hint)


def test_ibext_plugin_counts_as_ib():
    # corpus/nccl_debug/03: "Using network IBext_v8"
    debug = NcclDebug(network="IBext_v8", transports=["NET/IBext_v8/GDRDMA"], gdrdma=True)
    assert run("nccl.transport", node(nccl=nccl_run(hosts=("a", "b"), debug=debug))).status == "pass"


def test_gdrdma_not_required_when_told_so():
    debug = NcclDebug(network="IB", transports=["NET/IB"], gdrdma=False)
    facts = node(nccl=nccl_run(hosts=("a", "b"), debug=debug))
    assert run("nccl.transport", facts, require_gdrdma=False).status == "pass"


def test_gdrdma_unknown_warns():
    debug = NcclDebug(network="IB")
    assert run("nccl.transport", node(nccl=nccl_run(hosts=("a", "b"), debug=debug))).status == "warn"


def test_transport_without_debug_lines_skips():
    r = run("nccl.transport", node(nccl=nccl_run()))
    assert r.status == "skip"
    assert "NCCL_DEBUG=INFO" in str(r.hint)


def test_transport_missing_and_broken():
    assert run("nccl.transport", node()).status == "skip"
    assert run("nccl.transport", node(problems={"nccl": "bad"})).status == "error"


def _corpus_06_debug() -> NcclDebug:
    # corpus/nccl_debug/06: "NET/IB : Using [0]mlx5_1:1/IB [1]mlx5_3:1/IB [2]mlx5_0:1/IB [3]mlx5_2:1/RoCE
    # [4]mlx5_4:1/IB": five HCAs, one of them RoCE
    from assessor.parsers.nccl_debug import parse_debug_lines
    from tests.support.corpus import read_corpus

    text = read_corpus("nccl_debug/06_old_nccl_2.5_ring_via_p2p_ipc_mixed_ib_roce.txt")
    return parse_debug_lines(text.splitlines())


def test_hcas_used_exactly_the_rails_passes():
    debug = _corpus_06_debug()
    facts = node(nccl=nccl_run(hosts=("a",), debug=debug))
    r = run("nccl.transport", facts, hcas=["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4"])
    assert r.status == "pass", r.message


def test_hcas_a_storage_hca_in_use_fails_naming_it():
    debug = _corpus_06_debug()
    facts = node(nccl=nccl_run(hosts=("a",), debug=debug))
    r = run("nccl.transport", facts, hcas=["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"])
    assert r.status == "fail"
    assert r.message == "HCAs that are not rails used (mlx5_4)"
    assert r.observed["hcas"] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4"]


def test_hcas_missing_rails_fail_with_the_count():
    debug = _corpus_06_debug()
    facts = node(nccl=nccl_run(hosts=("a",), debug=debug))
    rails = [f"mlx5_{i}" for i in range(8)]
    r = run("nccl.transport", facts, hcas=rails)
    assert r.status == "fail"
    assert r.message.startswith("3 of 8 rails unused (mlx5_5, mlx5_6, mlx5_7)")


def test_hcas_required_but_nccl_used_sockets_is_not_a_pass():
    debug = NcclDebug(network="Socket", ib_no_device=True, transports=["P2P/direct pointer"])
    r = run("nccl.transport", node(nccl=nccl_run(hosts=("a",), debug=debug)), hcas=["mlx5_0"])
    assert r.status == "fail"
    assert "no IB HCA" in r.message
