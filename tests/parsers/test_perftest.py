"""perftest (ib_write_bw and friends) parser, against real outputs in corpus/perftest."""

from __future__ import annotations

import doctest

import pytest

from assessor.errors import ParseError
from assessor.facts import PerftestRun
from assessor.parsers import perftest
from tests.support.corpus import read_corpus


def run_of(text: str) -> PerftestRun:
    run = perftest.parse(text).ib_write_bw
    assert run is not None
    return run


def test_perftest_quoted_write_bw_in_gbits() -> None:
    run = run_of(read_corpus("perftest/01_ib_write_bw_edr_ib_gbits_small_sizes.txt"))
    assert (run.test, run.device, run.link_type, run.unit) == ("RDMA_Write BW Test", "mlx5_0", "IB", "Gb/sec")
    assert [r.size_bytes for r in run.rows] == [2, 4, 8]
    first = run.rows[0]
    assert (first.iterations, first.bw_peak, first.bw_average, first.msg_rate_mpps) == (
        5000,
        0.042350,
        0.042185,
        2.636533,
    )


def test_perftest_tab_before_msgrate_and_short_number_format() -> None:
    last = run_of(read_corpus("perftest/01_ib_write_bw_edr_ib_gbits_small_sizes.txt")).rows[-1]
    assert (last.bw_peak, last.bw_average, last.msg_rate_mpps) == (0.17, 0.17, 2.641399)


def test_perftest_average_gbits_is_the_largest_size_average() -> None:
    run = run_of(read_corpus("perftest/01_ib_write_bw_edr_ib_gbits_small_sizes.txt"))
    assert run.average_gbits() == 0.17


def test_perftest_read_bw_in_megabytes_converts_to_gbits() -> None:
    run = run_of(read_corpus("perftest/03_ib_read_bw_mbsec_outstand_reads.txt"))
    assert (run.test, run.device, run.unit) == ("RDMA_Read BW Test", "mlx5_1", "MB/sec")
    assert run.rows[-1].bw_average == 19.50
    assert run.average_gbits() == pytest.approx(19.50 * 1048576 * 8 / 1e9)  # perftest's MB is MiB


def test_perftest_quote_prefix_removed_only_when_the_paste_is_quoted() -> None:
    plain = read_corpus("perftest/03_ib_read_bw_mbsec_outstand_reads.txt")
    quoted = "\n".join(f"> {line}" if line else ">" for line in plain.splitlines())
    assert run_of(quoted) == run_of(plain)


def test_perftest_send_bw_title() -> None:
    text = (
        "                    Send BW Test\n"
        " Device         : mlx5_4\n"
        " Link type       : Ethernet\n"
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
        " 65536      1000             11590.13            11588.40		   0.185414\n"
        "---------------------------------------------------------------------------------------\n"
    )
    run = run_of(text)
    assert (run.test, run.device, run.link_type, run.unit) == ("Send BW Test", "mlx5_4", "Ethernet", "MB/sec")
    assert run.average_gbits() == pytest.approx(11588.40 * 1048576 * 8 / 1e9)  # 97.2 Gb/s


def test_perftest_run_that_never_printed_results_has_no_rows() -> None:
    # The client could not reach the server: a real failed run, which a check must fail.
    text = (
        "---------------------------------------------------------------------------------------\n"
        "                    RDMA_Write BW Test\n"
        " Dual-port       : OFF\t\tDevice         : mlx5_0\n"
        "Couldn't connect to node1:18515\n"
        "Unable to open file descriptor for socket connection Unable to init the socket connection\n"
    )
    run = run_of(text)
    assert run.test == "RDMA_Write BW Test" and run.rows == []
    assert run.average_gbits() is None


def test_perftest_truncated_row_names_its_line() -> None:
    text = read_corpus("perftest/03_ib_read_bw_mbsec_outstand_reads.txt").rstrip("\n") + "\n 16         1000   \n"
    with pytest.raises(ParseError) as err:
        perftest.parse(text)
    assert err.value.line == len(text.splitlines())


def test_perftest_unrelated_text_is_an_error() -> None:
    with pytest.raises(ParseError):
        perftest.parse("Linux node01 5.15.0-112-generic #122-Ubuntu SMP x86_64 GNU/Linux\n")


def test_perftest_empty_output_is_an_error() -> None:
    with pytest.raises(ParseError):
        perftest.parse("   \n")


def test_perftest_doctests() -> None:
    result = doctest.testmod(perftest)
    assert result.attempted > 0 and result.failed == 0
