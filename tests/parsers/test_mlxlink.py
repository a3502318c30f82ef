"""mlxlink parser, against the real outputs in corpus/mlxlink and the simulator's own."""

from __future__ import annotations

import doctest

import pytest

from assessor.errors import ParseError
from assessor.facts import LinkPhy
from assessor.parsers import mlxlink
from assessor.parsers.detect import detect_kind, snapshot_file
from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import read_corpus


def links(text: str) -> list[LinkPhy]:
    found = mlxlink.parse(text).link_phy
    assert found is not None
    return found


def test_two_prompted_runs_are_two_ports_named_by_their_command() -> None:
    first, second = links(read_corpus("mlxlink/01_bluefield3_100g_dac_m_c_prompted.txt"))
    assert (first.device, first.port, second.device) == (
        "/dev/mst/mt41692_pciconf0",
        1,
        "/dev/mst/mt41692_pciconf0.1",
    )
    assert (first.state, first.physical_state, first.speed, first.width) == ("Active", "LinkUp", "100G", "4x")
    assert (first.fec, first.status_opcode, first.recommendation) == (
        "Standard RS-FEC - RS(528,514)",
        0,
        "No issue was observed",
    )
    assert first.firmware == "32.43.2402"
    # a passive DAC: a serial number, no firmware of its own
    assert (first.module_identifier, first.module_vendor, first.module_part_number) == ("QSFP28", "FS", "Q28-PC03")
    assert (first.module_serial, second.module_serial, first.module_firmware) == (
        "S2202655321-1",
        "S2202655321-2",
        None,
    )
    # 15E-255 is mlxlink's way of printing no error at all
    assert first.effective_ber is not None and first.effective_ber < 1e-250
    assert (first.effective_errors, first.raw_errors_per_lane, first.link_down, first.link_recovery) == (
        0,
        [0] * 4,
        0,
        0,
    )
    assert first.time_since_clear_min == 25074.8 and second.time_since_clear_min == 25075.2


def test_the_counters_alone_with_terminal_colours() -> None:
    (link,) = links(read_corpus("mlxlink/02_400g_counters_only_ansi_coloured.txt"))
    assert (link.device, link.state) == (None, None)  # the paste names neither the device nor the link
    assert link.raw_ber == pytest.approx(2e-9) and link.effective_errors == 0
    assert link.raw_errors_per_lane == [3946476397, 5120336064, 7692183445, 3026261414]


def test_a_paste_cut_mid_line_keeps_what_is_whole_and_says_so() -> None:
    text = read_corpus("mlxlink/03_bluefield3_cut_in_operational_info.txt")
    facts = mlxlink.parse(text)
    (link,) = facts.link_phy or []
    assert link.state == "Active" and link.effective_ber is None
    assert "cut" in facts.partial["link_phy"]


def test_every_corpus_file_is_recognised_as_mlxlink() -> None:
    for name in (
        "01_bluefield3_100g_dac_m_c_prompted",
        "02_400g_counters_only_ansi_coloured",
        "03_bluefield3_cut_in_operational_info",
    ):
        text = read_corpus(f"mlxlink/{name}.txt")
        assert (detect_kind(text), snapshot_file(text)) == ("mlxlink", "mlxlink.txt"), name


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", 1),
        ("hello world\n", 1),
        ("\nPhysical Counters and BER Info\n------------------------------\nEffective Physical BER  : lots\n", 4),
        ("\nPhysical Counters and BER Info\n------------------------------\nLink Down Counter       : -3\n", 4),
        ("\nOperational Info\n----------------\nthis is not a key value line\n", 4),
    ],
)
def test_what_is_not_mlxlink_is_an_error_with_its_line(text: str, line: int) -> None:
    with pytest.raises(ParseError) as err:
        mlxlink.parse(text)
    assert err.value.line == line


def test_the_simulator_prints_what_the_parser_reads_healthy_and_marginal() -> None:
    state = load_fixture("hgx-h100")
    faults.get("ib-ber-high").apply(state, ca="mlx5_4")
    session = Session(state=state)
    text = ""
    for ca in ("mlx5_3", "mlx5_4"):
        out = run_tool(["mlxlink", "-d", ca, "-m", "-c"], session)
        assert out.exit_code == 0
        text += f"root@hgx:~# mlxlink -d {ca} -m -c\n{out.stdout}"
    healthy, marginal = links(text)
    assert (healthy.device, healthy.speed, healthy.status_opcode, healthy.effective_errors) == (
        "mlx5_3",
        "IB-NDR",
        0,
        0,
    )
    assert healthy.module_firmware == "47.171.0001" and healthy.module_part_number == "MMA4Z00-NS400"
    assert (marginal.device, marginal.state, marginal.speed) == ("mlx5_4", "Active", "IB-NDR")  # up at full rate
    assert marginal.effective_ber == pytest.approx(3e-11) and marginal.raw_ber == pytest.approx(4e-5)
    assert marginal.recommendation == "Bad signal integrity" and marginal.link_recovery == 37
    assert healthy.module_serial != marginal.module_serial


def test_doctest() -> None:
    assert doctest.testmod(mlxlink).failed == 0
