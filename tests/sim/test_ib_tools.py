"""The simulated ibstat, ibstatus, ibv_devinfo and ib_write_bw: their output parses with the foundation
parsers and says what the node state says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assessor.facts import NodeFacts
from assessor.parsers import parse
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.corpus import read_corpus


def run(state: NodeState, *argv: str, **session: object) -> ToolResult:
    return run_tool(list(argv), Session(state=state, **session))  # type: ignore[arg-type]


def parsed(kind: str, result: ToolResult) -> NodeFacts:
    assert result.exit_code == 0, result.stderr
    return parse(kind, result.stdout)


@pytest.fixture
def h100() -> NodeState:
    return load_fixture("hgx-h100")


def test_ibstat_lists_every_hca_port_as_the_state_has_it(h100: NodeState) -> None:
    ports = parsed("ibstat", run(h100, "ibstat")).ib_ports
    assert ports is not None
    assert [p.ca for p in ports] == [h.name for h in h100.ib_hcas]
    for port, hca in zip(ports, h100.ib_hcas, strict=True):
        want = hca.ports[0]
        assert (port.state, port.physical_state, port.rate_gbps, port.link_layer) == (
            "Active",
            "LinkUp",
            400.0,
            "InfiniBand",
        )
        assert (port.ca_type, port.firmware, port.node_guid) == (hca.ca_type, hca.firmware, hca.node_guid)
        assert (port.base_lid, port.sm_lid) == (want.base_lid, want.sm_lid)


def test_ibstat_port_polling_is_down(h100: NodeState) -> None:
    port = h100.hca("mlx5_5").ports[0]
    port.state, port.physical_state, port.rate_gbps = "Down", "Polling", 10
    ports = {p.ca: p for p in parsed("ibstat", run(h100, "ibstat")).ib_ports or []}
    assert (ports["mlx5_5"].state, ports["mlx5_5"].physical_state, ports["mlx5_5"].rate_gbps) == ("Down", "Polling", 10)
    assert ports["mlx5_4"].state == "Active"


def test_ibstat_names_one_ca_and_lists_names(h100: NodeState) -> None:
    ports = parsed("ibstat", run(h100, "ibstat", "mlx5_3")).ib_ports
    assert [p.ca for p in ports or []] == ["mlx5_3"]
    assert run(h100, "ibstat", "-l").stdout.split() == [h.name for h in h100.ib_hcas]


def test_ibstat_unknown_ca_panics_with_exit_255(h100: NodeState) -> None:
    result = run(h100, "ibstat", "mlx5_42")
    assert result.exit_code == 255
    assert result.stdout == ""
    assert "ibpanic:" in result.stderr and "'mlx5_42'" in result.stderr


def test_ibstatus_reads_the_same_ports_as_ibstat(h100: NodeState) -> None:
    h100.hca("mlx5_2").ports[0].state = "Initializing"
    from_ibstatus = parsed("ibstat", run(h100, "ibstatus")).ib_ports or []
    from_ibstat = parsed("ibstat", run(h100, "ibstat")).ib_ports or []
    assert [
        (p.ca, p.state, p.physical_state, p.rate_gbps, p.base_lid, p.sm_lid, p.link_layer) for p in from_ibstatus
    ] == [(p.ca, p.state, p.physical_state, p.rate_gbps, p.base_lid, p.sm_lid, p.link_layer) for p in from_ibstat]
    assert "rate:\t\t 400 Gb/sec (4X NDR)" in run(h100, "ibstatus", "mlx5_0").stdout


def test_ibv_devinfo_devices_match_the_hcas(h100: NodeState) -> None:
    devices = parsed("ibv-devinfo", run(h100, "ibv_devinfo")).ib_devices or []
    assert [d.hca_id for d in devices] == [h.name for h in h100.ib_hcas]
    first, hca = devices[0], h100.ib_hcas[0]
    assert (first.fw_ver, first.vendor_part_id, first.board_id, first.phys_port_cnt) == (
        hca.firmware,
        4129,
        hca.board_id,
        1,
    )
    assert first.node_guid == ":".join(hca.node_guid[2:][i : i + 4] for i in range(0, 16, 4))
    assert (first.ports[0].state, first.ports[0].base_lid, first.ports[0].link_layer) == (
        "Active",
        hca.ports[0].base_lid,
        "InfiniBand",
    )
    assert first.ports[0].rate_gbps is None  # only -v prints width and speed


def test_ibv_devinfo_verbose_rate_follows_a_degraded_port(h100: NodeState) -> None:
    port = h100.hca("mlx5_1").ports[0]
    port.rate_gbps, port.speed = 200, "HDR"
    devices = {d.hca_id: d for d in parsed("ibv-devinfo", run(h100, "ibv_devinfo", "-v")).ib_devices or []}
    assert devices["mlx5_0"].ports[0].rate_gbps == 400.0
    assert devices["mlx5_1"].ports[0].rate_gbps == 200.0
    assert devices["mlx5_1"].ports[0].physical_state == "LinkUp"


def test_ibv_devinfo_unknown_device_is_refused(h100: NodeState) -> None:
    result = run(h100, "ibv_devinfo", "-d", "mlx5_99")
    assert (result.exit_code, result.stderr) == (255, "IB device 'mlx5_99' wasn't found\n")


@pytest.mark.parametrize(("fixture", "threshold"), [("hgx-h100", 380), ("dgx-a100", 180), ("hgx-h200", 360)])
def test_ib_write_bw_gpudirect_meets_the_profile_threshold(fixture: str, threshold: float) -> None:
    state = load_fixture(fixture)
    ca = state.ib_hcas[0].name
    result = run(state, "ib_write_bw", "-d", ca, "--report_gbits", "-s", "8388608", "--use_cuda=0", "peer01")
    bw = parsed("ib-write-bw", result).ib_write_bw
    assert bw is not None and bw.device == ca and bw.link_type == "IB" and bw.unit == "Gb/sec"
    average = bw.average_gbits()
    assert average is not None and threshold <= average <= state.ib_hcas[0].ports[0].rate_gbps


def test_ib_write_bw_sweep_rises_with_size_and_reports_mb_without_gbits(h100: NodeState) -> None:
    bw = parsed("ib-write-bw", run(h100, "ib_write_bw", "-a", "-d", "mlx5_0", "peer01")).ib_write_bw
    assert bw is not None and bw.unit == "MB/sec"
    averages = [r.bw_average or 0 for r in bw.rows]
    assert [r.size_bytes for r in bw.rows][:3] == [2, 4, 8]
    assert averages == sorted(averages)
    assert 380 <= (bw.average_gbits() or 0) <= 400  # MB/s converted back to Gb/s


def test_ib_write_bw_is_bound_by_a_degraded_rate(h100: NodeState) -> None:
    h100.hca("mlx5_0").ports[0].rate_gbps = 200
    bw = parsed("ib-write-bw", run(h100, "ib_write_bw", "-d", "mlx5_0", "-R", "-s", "8388608", "peer01")).ib_write_bw
    assert bw is not None and (bw.average_gbits() or 0) < 200


def test_ib_write_bw_refuses_a_port_that_is_not_active(h100: NodeState) -> None:
    h100.hca("mlx5_0").ports[0].state = "Down"
    result = run(h100, "ib_write_bw", "-d", "mlx5_0", "peer01")
    assert result.exit_code == 1 and result.stdout == ""
    assert "Port number 1 state is Down" in result.stderr


def test_ib_write_bw_gpudirect_needs_nvidia_peermem(h100: NodeState) -> None:
    h100.modules = [m for m in h100.modules if m.name != "nvidia_peermem"]
    result = run(h100, "ib_write_bw", "-d", "mlx5_0", "--use_cuda=0", "peer01")
    assert result.exit_code == 1
    assert "Couldn't allocate MR" in result.stderr
    # Host memory still works without it.
    assert run(h100, "ib_write_bw", "-d", "mlx5_0", "peer01").exit_code == 0


def _shape(line: str) -> str:
    """A row with every digit blanked: the layout a parser or an eye compares, not the figures."""
    return re.sub(r"[0-9a-f]", "9", line.removeprefix("> "))


def test_ib_write_bw_rows_have_the_layout_of_the_real_report_gbits_sweep(h100: NodeState, corpus: Path) -> None:
    # corpus/perftest/01: tiny bandwidths print with six decimals and spaces, the rest with two and tabs
    real = (corpus / "perftest/01_ib_write_bw_edr_ib_gbits_small_sizes.txt").read_text().splitlines()
    real_rows = {line.split()[1]: line for line in real if re.match(r">\s+\d+\s+5000\s", line)}
    out = run(h100, "ib_write_bw", "-a", "-d", "mlx5_0", "--report_gbits", "peer01").stdout.splitlines()
    sim_rows = {line.split()[0]: line for line in out if re.match(r"\s+\d+\s+5000\s", line)}
    for size in ("2", "4", "8"):
        assert _shape(sim_rows[size]) == _shape(real_rows[size])
    header = next(line for line in real if "#bytes" in line)
    assert header.removeprefix("> ") in out


def test_ib_write_bw_prints_lids_like_perftest_does(h100: NodeState, corpus: Path) -> None:
    # perftest prints the LID with C's %#04x: "LID 0x02" in corpus/perftest/01, "0x80" for 128, "0000" for 0 (RoCE)
    real = (corpus / "perftest/01_ib_write_bw_edr_ib_gbits_small_sizes.txt").read_text()
    assert " local address: LID 0x02 QPN " in real
    out = run(h100, "ib_write_bw", "-d", "mlx5_0", "peer01").stdout
    assert f" local address: LID {h100.hca('mlx5_0').ports[0].base_lid:#04x} QPN " in out
    port = h100.hca("mlx5_0").ports[0]
    port.link_layer, port.base_lid = "Ethernet", 0
    roce = run(h100, "ib_write_bw", "-d", "mlx5_0", "peer01").stdout
    assert " local address: LID 0000 QPN " in roce and " remote address: LID 0000 QPN " in roce


def test_ib_write_bw_mb_per_sec_is_mib_like_perftest(h100: NodeState, corpus: Path) -> None:
    # corpus/perftest/03: "8  1000  19.51  19.50  2.556366" -> 8 B x 2.556366e6 /s = 19.50 x 2**20 B/s
    real = (corpus / "perftest/03_ib_read_bw_mbsec_outstand_reads.txt").read_text().splitlines()
    size, _, _, average, rate = next(line.split() for line in real if line.startswith(" 8 "))
    assert abs(int(size) * float(rate) * 1e6 / 2**20 - float(average)) < 0.01
    out = run(h100, "ib_write_bw", "-a", "-d", "mlx5_0", "peer01").stdout.splitlines()
    for line in (row for row in out if re.match(r"\s+\d+\s+5000\s", row)):
        size, _, _, average, rate = line.split()
        assert abs(int(size) * float(rate) * 1e6 / 2**20 - float(average)) <= 0.01 * float(average) + 0.01


# ---- ibstat CA PORT, ibv_devinfo -v, ibdev2netdev --------------------------------------------------


def test_ibstat_with_a_port_prints_the_ca_line_and_only_that_port_unindented(h100: NodeState) -> None:
    # infiniband-diags ibstat.c: ca_stat() prints "CA: 'name'" then port_dump(port, alone=1), no tabs.
    out = run(h100, "ibstat", "mlx5_3", "1")
    assert out.exit_code == 0
    lines = out.stdout.splitlines()
    assert lines[:3] == ["CA: 'mlx5_3'", "Port 1:", "State: Active"]
    assert "Link layer: InfiniBand" in lines and not any(line.startswith("\t") for line in lines)
    assert "CA type" not in out.stdout and "mlx5_4" not in out.stdout


def test_ibstat_with_a_port_the_ca_lacks_warns_and_panics(h100: NodeState) -> None:
    out = run(h100, "ibstat", "mlx5_0", "2")
    assert out.exit_code == 255 and out.stdout == ""
    assert "has no port number 2 - max (1)" in out.stderr and "ibpanic:" in out.stderr


def test_ibstat_short_prints_the_ca_headers_without_ports(h100: NodeState) -> None:
    out = run(h100, "ibstat", "-s", "mlx5_1")
    assert out.stdout.startswith("CA 'mlx5_1'\n\tCA type: MT4129\n")
    assert "Port 1:" not in out.stdout


def _keys(text: str) -> list[str]:
    return [line.split(":")[0] for line in text.splitlines() if ":" in line]


def test_ibv_devinfo_verbose_prints_device_limits_and_port_details_as_libibverbs_does(h100: NodeState) -> None:
    out = run(h100, "ibv_devinfo", "-v", "-d", "mlx5_0")
    real = read_corpus("ibv_devinfo/03_cx6_hdr_mt4123_fw20.37_vv_device_limits_and_caps.txt")
    assert _keys(out.stdout) == _keys(real)  # same attributes, same order, same tab indents
    for line in ("\tmax_qp:\t\t\t\t131072", "\tmax_mr_size:\t\t\t0xffffffffffffffff", "\t\t\t\t\tMEM_WINDOW"):
        assert line in real.splitlines() and line in out.stdout.splitlines()
    assert "\t\t\tport_cap_flags:\t\t0xa751e848" in out.stdout.splitlines()  # the port's capability mask
    assert "max_qp" not in run(h100, "ibv_devinfo", "-d", "mlx5_0").stdout


def test_ibdev2netdev_maps_each_hca_port_to_its_netdev_and_link(h100: NodeState) -> None:
    h100.ib_hcas[2].ports[0].state = "Down"
    lines = run(h100, "ibdev2netdev").stdout.splitlines()
    shape = re.compile(r"^mlx5_\d+ port \d+ ==> \S+ \((Up|Down)\)$")
    assert all(shape.match(line) for line in read_corpus("ibdev2netdev/01_four_hcas_ipoib_up.txt").splitlines())
    assert all(shape.match(line) for line in lines) and len(lines) == 8
    assert lines[0] == f"mlx5_0 port 1 ==> {h100.ib_hcas[0].ports[0].netdev} (Up)"
    assert lines[2].endswith("(Down)")
