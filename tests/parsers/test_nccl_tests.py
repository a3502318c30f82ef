from __future__ import annotations

import pytest

from assessor.errors import ParseError
from assessor.facts import NcclRun
from assessor.parsers import parse
from tests.support.corpus import read_corpus

H100_2NODE = "nccl_tests/01_all_reduce_2node_16xH100_a3mega_tcpxo.txt"
A100_G8 = "nccl_tests/02_all_reduce_1node_8xA100_sxm4_80gb_g8.txt"
ALLTOALL_1GPU = "nccl_tests/05_alltoall_1gpu_inplace_NA_avg0.txt"
H800_DEBUG = "nccl_debug/01_h800_single_node_ib_not_found_socket_fallback_nvls.txt"

# Real lines from the corpus, reused to build the edge cases below.
ROW_8 = (
    "           8             2     float     sum      -1    40.12    0.00    0.00      0"
    "    38.85    0.00    0.00      0"
)
ROW_16 = (
    "          16             4     float     sum      -1    39.64    0.00    0.00      0"
    "    39.19    0.00    0.00      0"
)
HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong"
)


def _run(text: str) -> NcclRun:
    facts = parse("nccl-tests", text)
    assert facts.nccl is not None
    return facts.nccl


def test_two_node_h100_run_behind_a_markdown_preamble(corpus):
    run = _run(read_corpus(H100_2NODE))
    assert run.test == "all_reduce_perf"  # from the quoted mpirun command line
    assert (run.nthreads, run.ngpus) == (1, 1)
    assert run.nranks == 16
    assert {d.host for d in run.devices} == {"ztan-mig-235z", "ztan-mig-gq73"}
    assert run.devices[8].rank == 8 and run.devices[8].device == 0 and run.devices[8].pid == 6733
    assert run.devices[0].bus == "0000:04:00"
    assert run.devices[0].name == "NVIDIA H100 80GB HBM3"
    assert len(run.rows) == 31
    assert run.rows[-1].size_bytes == 8589934592
    assert run.peak_busbw() == pytest.approx(338.82)
    assert run.avg_busbw == pytest.approx(70.742)
    assert run.out_of_bounds == 0


def test_single_node_a100_g8_shares_one_pid_and_peaks_at_4g(corpus):
    run = _run(read_corpus(A100_G8))
    assert run.ngpus == 8 and run.nranks == 8
    assert {d.pid for d in run.devices} == {54740}
    assert [d.bus for d in run.devices[:2]] == ["0x07", "0x0a"]
    last = max(run.rows, key=lambda r: r.size_bytes)
    assert last.size_bytes == 4294967296
    assert (last.oop_busbw, last.ip_busbw) == (232.44, 231.59)
    assert run.peak_busbw() == pytest.approx(232.44)
    assert run.avg_busbw == pytest.approx(66.2058)
    first = run.rows[0]
    assert (first.size_bytes, first.count, first.type, first.redop, first.root) == (8, 2, "float", "sum", -1)
    assert (first.oop_time_us, first.ip_time_us, first.oop_wrong, first.ip_wrong) == (40.12, 38.85, 0, 0)
    assert run.test is None  # neither a command line nor a "Collective test starting" header


def test_single_gpu_alltoall_with_na_wrong_and_zero_average(corpus):
    run = _run(read_corpus(ALLTOALL_1GPU))
    assert run.test == "alltoall_perf"  # "sudo ./build/./alltoall_perf"
    assert run.nranks == 1
    (row,) = run.rows
    assert row.redop == "none"
    assert row.oop_wrong == 0
    assert row.ip_wrong is None  # "N/A"
    assert row.ip_algbw == pytest.approx(43046.10)
    assert run.avg_busbw == 0.0
    assert run.peak_busbw() == 0.0


def test_full_run_with_interleaved_nccl_info_lines(corpus):
    run = _run(read_corpus(H800_DEBUG))
    assert len(run.rows) == 30
    assert all(r.redop == "none" and r.root == 0 for r in run.rows)
    assert all(r.oop_wrong is None and r.ip_wrong is None for r in run.rows)  # validation: 0
    assert run.peak_busbw() == pytest.approx(165.02)
    assert run.debug.network == "Socket"
    assert run.debug.ib_no_device is True
    assert run.debug.nccl_version == "2.18.3+cuda12.2"
    assert "NVLS" in run.debug.transports


def test_parser_sets_only_the_nccl_field(corpus):
    facts = parse("nccl-tests", read_corpus(A100_G8))
    assert facts.gpus is None and facts.dcgm_diag is None and facts.ib_write_bw is None


def test_new_version_header_gives_tests_version_and_test_name(corpus):
    text = (
        "# nccl-tests version 2.13.11 nccl-headers=22602 nccl-library=22602\n"
        "# Collective test starting: all_gather_perf\n" + read_corpus(A100_G8)
    )
    run = _run(text)
    assert run.tests_version == "2.13.11"
    assert run.test == "all_gather_perf"
    assert len(run.rows) == 30


def test_collective_header_wins_over_a_command_line(corpus):
    text = "$ ./build/all_reduce_perf -b 8 -e 4G -f 2 -g 8\n# Collective test starting: all_reduce_perf\n"
    run = _run(text + read_corpus(A100_G8))
    assert run.test == "all_reduce_perf"
    assert _run("$ ./build/broadcast_perf -b 8 -e 4G\n" + read_corpus(A100_G8)).test == "broadcast_perf"


def test_mpirun_noise_and_nccl_lines_inside_the_table_are_skipped(corpus):
    lines = read_corpus(A100_G8).splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("1048576 "))
    lines[at:at] = [
        "[thanos:54740] 8 more processes have sent help message help-mtl-ofi.txt / OFI call fail",
        '[thanos:54740] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / error messages',
        "8 more processes have sent help message help-mtl-ofi.txt / OFI call fail",
        "thanos:54740:54790 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/IPC/read",
        "thanos:54740:54791 [4] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer with error 4",
        "",
    ]
    run = _run("\n".join(lines))
    assert len(run.rows) == 30
    assert run.peak_busbw() == pytest.approx(232.44)
    assert run.debug.transports == ["P2P/IPC"]
    assert run.debug.warnings == ["NET/IB : Got completion from peer with error 4"]


def test_mpirun_tag_output_prefixes_are_stripped(corpus):
    tagged = "\n".join(f"[1,0]<stdout>:{line}" for line in read_corpus(A100_G8).splitlines())
    run = _run(tagged)
    assert run.nranks == 8
    assert len(run.rows) == 30
    assert run.avg_busbw == pytest.approx(66.2058)


def test_truncated_last_row_is_ignored(corpus):
    text = read_corpus(A100_G8)
    cut = text.index("  4294967296  ") + 40  # mid-way through the 4G row
    run = _run(text[:cut])
    assert len(run.rows) == 29
    assert run.rows[-1].size_bytes == 2147483648
    assert run.avg_busbw is None


def test_truncated_row_in_the_middle_is_an_error_with_its_line():
    text = "\n".join([HEADER, ROW_8[:60], ROW_16])
    with pytest.raises(ParseError) as err:
        parse("nccl-tests", text)
    assert err.value.line == 2
    assert "does not fit" in str(err.value)


def test_row_with_a_non_number_value_in_the_middle_is_an_error():
    bad = ROW_8.replace("40.12", "40.x2")
    with pytest.raises(ParseError) as err:
        parse("nccl-tests", "\n".join([HEADER, bad, ROW_16]))
    assert err.value.line == 2


def test_old_error_column_without_root():
    # nccl-tests before the root column: "error" where newer ones print "#wrong".
    text = "\n".join(
        [
            "# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1",
            "#   Rank  0 Pid  12345 on     node01 device  0 [0x1a] Tesla V100-SXM2-16GB",
            "#",
            "#                                                     out-of-place                       in-place",
            "#       size         count    type   redop     time   algbw   busbw  error"
            "     time   algbw   busbw  error",
            "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
            "           8             2   float     sum    25.16    0.00    0.00  0e+00"
            "    25.09    0.00    0.00  0e+00",
            "   134217728      33554432   float     sum   1508.3   88.99  133.48  2e+00"
            "   1507.9   89.01  133.52  0e+00",
        ]
    )
    run = _run(text)
    assert run.devices[0].host == "node01" and run.devices[0].name == "Tesla V100-SXM2-16GB"
    assert [r.root for r in run.rows] == [None, None]
    assert run.rows[1].oop_wrong == 2
    assert run.rows[1].ip_busbw == pytest.approx(133.52)


def test_in_place_only_row_leaves_out_of_place_unknown():
    # nccl-tests prints 32 blanks instead of the out-of-place block when it runs in-place only.
    row = "     1048576        262144     float     sum      -1" + " " * 32 + "    53.03   19.77   34.60      0"
    run = _run("\n".join([HEADER, row, ROW_16]))
    first = run.rows[0]
    assert first.oop_time_us is None and first.oop_busbw is None and first.oop_wrong is None
    assert (first.ip_time_us, first.ip_busbw, first.ip_wrong) == (53.03, 34.60, 0)
    assert run.peak_busbw() == pytest.approx(34.60)


def test_cputime_and_timestamp_columns():
    header = (
        "#       size         count      type   redop    root  cputime   algbw   busbw #wrong  cputime   algbw"
        "   busbw #wrong           timestamp"
    )
    row = (
        "    33554432       8388608     float     sum      -1  1.2e+04    2.79    4.88      0    439.2   76.41"
        "  133.71      0 2025-03-01 12:00:01"
    )
    (parsed,) = _run("\n".join([header, row])).rows
    assert parsed.oop_time_us == pytest.approx(12000.0)
    assert parsed.ip_busbw == pytest.approx(133.71)


def test_header_without_table_is_a_run_with_no_rows():
    # A run that died during init still says who took part: useful for nccl.errors.
    text = "\n".join(
        [
            "# nThread 1 nGpus 8 minBytes 8 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1",
            "#  Rank  0 Group  0 Pid  54740 on     thanos device  0 [0x07] NVIDIA A100-SXM4-80GB",
            "thanos:54740:54790 [0] misc/ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp failed with error Timed out",
        ]
    )
    run = _run(text)
    assert run.rows == []
    assert run.nranks == 1
    assert run.debug.warnings == ["Call to ibv_modify_qp failed with error Timed out"]


def test_text_without_any_nccl_tests_output_is_a_parse_error():
    with pytest.raises(ParseError, match="no nccl-tests results found"):
        parse("nccl-tests", "bash: ./build/all_reduce_perf: No such file or directory\n")


@pytest.mark.parametrize("garbage", ["", "\n\n", "8 more processes have sent help message\n", "## NCCL TEST RESULT\n"])
def test_garbage_is_a_parse_error(garbage):
    with pytest.raises(ParseError):
        parse("nccl-tests", garbage)
