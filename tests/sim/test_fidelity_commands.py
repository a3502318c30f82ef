"""Commands candidates type that the simulator lacked (issue #23 item 3): each answers in the layout of a real
capture in ``tests/data/corpus/`` (structure only: headers, cell shapes, legends, column counts; never values)."""

from __future__ import annotations

import re

import pytest

from assessor.parsers import parse
from assessor.parsers.perftest import parse as parse_perftest
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult, run_tool
from assessor.sim.tools.nccl import COLLECTIVES
from tests.support.corpus import read_corpus


def run(state: NodeState, *argv: str) -> ToolResult:
    return run_tool(list(argv), Session(state=state))


def _legend(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("Legend:")
    return [line for line in lines[start:] if line.strip()]


# ---------------------------------------------------------------- nvidia-smi topo -p2p / -mp


def _p2p_matrix(text: str) -> tuple[list[str], list[list[str]]]:
    """The header labels and the rows' cells of a ``topo -p2p`` matrix (tabs or spaces)."""
    lines = text.splitlines()
    end = lines.index("")
    header = lines[0].split()
    rows = [line.split() for line in lines[1:end]]
    return header, rows


@pytest.mark.parametrize("capability", list("rwnap"))
def test_topo_p2p_has_the_raw_tab_layout_and_legend_of_the_capture(capability: str) -> None:
    capture = read_corpus("nvidia_smi_topo/11_p2p_rw_2x5090_r610_gns_raw_tabs_dr_legend.txt")
    result = run(load_fixture("hgx-h100"), "nvidia-smi", "topo", "-p2p", capability)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    # A leading space then a tab before the first label, a tab after every cell, a blank line, the legend.
    assert lines[0].startswith(" \tGPU0\t") and lines[0].endswith("\t")
    assert all(re.fullmatch(r" GPU\d+\t(?:(?:X|OK|CNS|GNS|TNS|NS|U)\t)+", line) for line in lines[1:9])
    assert capture.splitlines()[0].startswith(" \tGPU0\t") and capture.splitlines()[1].startswith(" GPU0\tX\t")
    old = read_corpus("nvidia_smi_topo/10_p2p_r_8xh100_all_ok_tabs_expanded.txt")
    assert _legend(result.stdout) == _legend(old)  # the fixture's driver is before R610: no DR line
    header, rows = _p2p_matrix(result.stdout)
    cap_header, cap_rows = _p2p_matrix(old.split("\n", 1)[1])
    assert header == cap_header and [r[0] for r in rows] == [r[0] for r in cap_rows]
    assert all(row[1 + i] == "X" for i, row in enumerate(rows))
    if capability != "p":  # PCIe alone: cross-socket pairs are CNS (see the pcie-l40s test)
        assert {cell for row in rows for cell in row[1:]} == {"X", "OK"}  # NVSwitch node, as the 8x H100 capture


def test_topo_p2p_from_r610_lists_dr_before_unknown_as_the_capture() -> None:
    state = load_fixture("hgx-h100")
    state.driver.version = state.driver.kernel_module_version = "610.43.02"
    capture = read_corpus("nvidia_smi_topo/11_p2p_rw_2x5090_r610_gns_raw_tabs_dr_legend.txt")
    assert _legend(run(state, "nvidia-smi", "topo", "-p2p", "rw").stdout) == _legend(capture)


def test_topo_p2p_on_pcie_gpus_says_cns_across_sockets_and_ns_for_nvlink() -> None:
    state = load_fixture("pcie-l40s")
    _, read = _p2p_matrix(run(state, "nvidia-smi", "topo", "-p2p", "r").stdout)
    _, nvlink = _p2p_matrix(run(state, "nvidia-smi", "topo", "-p2p", "n").stdout)
    assert {c for row in read for c in row[1:]} == {"X", "OK", "CNS"}
    assert {c for row in nvlink for c in row[1:]} == {"X", "NS"}


def test_topo_p2p_without_a_value_says_so_as_the_capture() -> None:
    capture = read_corpus("nvidia_smi_topo/12_p2p_p_5gpus_raw_tabs_missing_value_excerpt.txt")
    result = run(load_fixture("hgx-h100"), "nvidia-smi", "topo", "-p2p", "-p")
    assert result.exit_code != 0
    assert result.stdout.strip() in capture.splitlines()


def test_nvml_p2p_status_agrees_with_topo_p2p() -> None:
    import pynvml

    from assessor.sim.mock_nvml import MockNvml

    state = load_fixture("pcie-l40s")
    nvml = MockNvml(state)
    nvml.nvmlInit()
    _, rows = _p2p_matrix(run(state, "nvidia-smi", "topo", "-p2p", "r").stdout)
    h = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(len(rows))]
    names = {pynvml.NVML_P2P_STATUS_OK: "OK", pynvml.NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED: "CNS"}
    for i, row in enumerate(rows):
        for j, cell in enumerate(row[1:]):
            if i != j:
                got = nvml.nvmlDeviceGetP2PStatus(h[i], h[j], 0)  # READ (pynvml spells it (0,))
                assert names[got] == cell


def test_topo_mp_is_the_matrix_with_pcie_codes_and_no_nv_legend_line() -> None:
    capture = read_corpus("nvidia_smi_topo/13_topo_mp_3xp100_pcie_only_legend_without_nv.txt")
    state = load_fixture("hgx-h100")
    result = run(state, "nvidia-smi", "topo", "-mp")
    assert result.exit_code == 0
    assert _legend(result.stdout)[: len(_legend(capture))] == _legend(capture)
    assert "NV#" not in result.stdout and not re.search(r"\tNV\d+", result.stdout)
    full = run(state, "nvidia-smi", "topo", "-m").stdout
    # Same header, same NIC legend; only the GPU pairs change from NV# to a PCIe code.
    assert result.stdout.splitlines()[0] == full.splitlines()[0]
    assert result.stdout.split("NIC Legend:")[1] == full.split("NIC Legend:")[1]
    assert parse("nvidia-smi-topo", result.stdout) is not None


# ---------------------------------------------------------------- nccl-tests


@pytest.mark.parametrize("program", sorted(COLLECTIVES))
def test_every_nccl_test_has_the_format_and_its_bus_factor_and_parses(program: str) -> None:
    result = run(load_fixture("hgx-h100"), program, "-b", "1M", "-e", "1G", "-f", "4", "-g", "8")
    assert result.exit_code == 0, result.stderr
    capture = read_corpus("nccl_tests/09_all_reduce_2.17.6_1node_8xA100_new_header_domain_bus.txt")
    table_header = next(line for line in capture.splitlines() if "redop" in line)
    assert table_header.split() == next(line for line in result.stdout.splitlines() if "redop" in line).split()
    assert f"# Collective test starting: {program}" in result.stdout
    facts = parse("nccl-tests", result.stdout)
    assert facts.nccl is not None
    run_ = facts.nccl
    assert run_.test == program and len(run_.rows) == 6
    factor = COLLECTIVES[program].factor(8)
    expected = {"all_reduce_perf": 2 * 7 / 8, "broadcast_perf": 1, "reduce_perf": 1, "sendrecv_perf": 1}
    assert factor == pytest.approx(expected.get(program, 7 / 8))  # nccl-tests PERFORMANCE.md
    for row in run_.rows:
        assert row.oop_algbw is not None and row.oop_busbw is not None
        assert row.oop_busbw == pytest.approx(row.oop_algbw * factor, abs=0.02)
    coll = COLLECTIVES[program]
    assert {r.redop for r in run_.rows} == ({"sum"} if coll.reduces else {"none"})
    assert {r.root for r in run_.rows} == ({0} if coll.rooted else {-1})
    assert run_.avg_busbw is not None and run_.avg_busbw > 0


def test_broadcast_prints_the_root_it_was_given() -> None:
    result = run(load_fixture("hgx-h100"), "broadcast_perf", "-b", "1M", "-e", "1M", "-g", "8", "-r", "3")
    facts = parse("nccl-tests", result.stdout)
    assert facts.nccl is not None and {r.root for r in facts.nccl.rows} == {3}


# ---------------------------------------------------------------- perftest


def _header_keys(text: str) -> list[str]:
    keys = []
    for line in text.splitlines():
        for part in re.split(r" {3,}(?=[A-Z])", line.expandtabs(8)):
            if ":" in part and not part.strip().startswith(("local", "remote", "#")):
                keys.append(part.split(":", 1)[0].strip())
    return keys


@pytest.mark.parametrize(
    ("program", "title"),
    [("ib_read_bw", "RDMA_Read BW Test"), ("ib_send_bw", "Send BW Test"), ("ib_write_bw", "RDMA_Write BW Test")],
)
def test_perftest_bw_tools_have_the_header_of_their_test_and_parse(program: str, title: str) -> None:
    state = load_fixture("hgx-h100")
    hca = state.ib_hcas[0].name
    result = run(state, program, "-d", hca, "-a", "-F", "peer")
    assert result.exit_code == 0, result.stderr
    facts = parse_perftest(result.stdout).ib_write_bw
    assert facts is not None and facts.test == title and len(facts.rows) == 23
    if program == "ib_read_bw":
        capture = read_corpus("perftest/03_ib_read_bw_mbsec_outstand_reads.txt")
        assert _header_keys(result.stdout) == _header_keys(capture.split("\n", 1)[1])
        assert re.search(r"PSN 0x[0-9a-f]{6} OUT 0x10 RKey", result.stdout)
    else:
        assert "Max inline data : 0[B]" in result.stdout and " OUT " not in result.stdout


@pytest.mark.parametrize(
    ("program", "title", "line"),
    [
        ("ib_write_lat", "RDMA_Write Latency Test", " Max inline data : 220[B]"),
        ("ib_send_lat", "Send Latency Test", " Max inline data : 236[B]"),
        ("ib_read_lat", "RDMA_Read Latency Test", " Outstand reads  : 16"),
    ],
)
def test_perftest_latency_tools_have_the_layout_of_the_capture(program: str, title: str, line: str) -> None:
    capture = read_corpus("perftest_latency/01_ib_write_lat_ib_client_sweep_excerpt.txt")
    state = load_fixture("hgx-h100")
    result = run(state, program, "-d", state.ib_hcas[0].name, "-a", "peer")
    assert result.exit_code == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[1].strip() == title and line in out
    assert " TX depth        : 1" in out and not any("CQ Moderation" in x for x in out)
    cap_header = next(x for x in capture.splitlines() if x.startswith(" #bytes"))
    assert cap_header in out
    rows = [x for x in out if re.match(r" \d+ ", x)]
    cap_rows = [x for x in capture.splitlines() if re.match(r" \d+ ", x)]
    assert len(rows) == 23 and {len(r.split()) for r in rows} == {len(r.split()) for r in cap_rows} == {9}
    # The same run of spaces and tabs between the columns as REPORT_FMT_LAT.
    shape = re.compile(r" \d+ +\d+ +[\d.]+ +[\d.]+ +[\d.]+ +\t +[\d.]+ +\t[\d.]+ *\t\t[\d.]+ +\t[\d.]+ *")
    assert all(shape.fullmatch(r) for r in cap_rows) and all(shape.fullmatch(r) for r in rows)
    typical = [float(r.split()[4]) for r in rows]
    assert typical == sorted(typical)  # latency grows with the message size
    if program == "ib_read_lat":
        assert typical[0] > float(run(state, "ib_write_lat", "peer").stdout.split("\n")[-3].split()[4])


# ---------------------------------------------------------------- nv-fabricmanager -v


def test_nv_fabricmanager_v_prints_the_version_line_of_the_capture() -> None:
    (line,) = [x.strip() for x in read_corpus("fabricmanager/04_nv_fabricmanager_version_450.txt").splitlines()[1:]]
    assert re.fullmatch(r"Fabric Manager version is : \d+\.\d+\.\d+", line)
    state = load_fixture("dgx-a100")
    for flag in ("-v", "--version"):
        out = run(state, "nv-fabricmanager", flag)
        assert (out.exit_code, out.stdout) == (0, f"Fabric Manager version is : {state.driver.version}\n")
    assert run(state, "nv-fabricmanager", "-c", "/usr/share/nvidia/nvswitch/fabricmanager.cfg").exit_code == 1
    # a PCIe node has no fabric manager package, so no binary
    assert run(load_fixture("pcie-l40s"), "nv-fabricmanager", "-v").exit_code == 127


# ---------------------------------------------------------------- perfquery


def _counter_keys(text: str) -> list[str]:
    return [line.split(":", 1)[0] for line in text.splitlines() if re.match(r"^[A-Za-z0-9]+:\.+", line)]


def _header_shape(line: str) -> str:
    return re.sub(r"0x[0-9A-Fa-f]+", "0xH", re.sub(r"\d+", "N", line))


@pytest.mark.parametrize(
    ("capture", "flags"),
    [
        ("perfquery/01_perfquery_x_lid10_port1_rhel75.txt", ["-x"]),
        ("perfquery/02_perfquery_C_mlx5_0_hdr_a100_node.txt", []),
    ],
    ids=["extended", "basic"],
)
def test_perfquery_has_the_fields_of_the_capture_in_order(capture: str, flags: list[str]) -> None:
    real = read_corpus(capture).splitlines()[1:]
    out = run(load_fixture("dgx-a100"), "perfquery", *flags)
    assert out.exit_code == 0, out.stdout
    ours = out.stdout.splitlines()
    assert _header_shape(ours[0]) == _header_shape(real[0])
    assert ours[0].endswith(real[0][real[0].index("(CapMask") :])  # the same capability masks
    assert _counter_keys(out.stdout) == _counter_keys("\n".join(real))
    # every value starts at column 33, as libibmad pads the names with dots
    assert {
        line.index(":") + len(line.split(":", 1)[1]) - len(line.split(":", 1)[1].lstrip(".")) for line in ours[1:]
    } == {32}


def test_perfquery_picks_a_port_and_refuses_one_without_a_lid() -> None:
    state = load_fixture("dgx-a100")
    hca = next(h for h in state.ib_hcas if any(p.state == "Active" and p.link_layer == "InfiniBand" for p in h.ports))
    out = run(state, "perfquery", "-C", hca.name, "-P", "1")
    assert out.stdout.startswith(f"# Port counters: Lid {hca.ports[0].base_lid} port 1 (CapMask: 0x5300)\n")
    assert run(state, "perfquery").stdout == run(state, "perfquery").stdout  # stable counters
    hca.ports[0].state, hca.ports[0].physical_state = "Down", "Polling"
    down = run(state, "perfquery", "-C", hca.name, "-P", "1")
    assert (down.exit_code, down.stdout) == (255, "perfquery: iberror: failed: classportinfo query\n")
    assert run(state, "perfquery", "-C", "mlx5_99").exit_code == 255


# ---------------------------------------------------------------- dcgmi nvlink, dcgmi topo


def test_dcgmi_nvlink_s_on_an_hgx_h100_is_the_capture() -> None:
    real = read_corpus("dcgmi_nvlink/01_link_status_8xH100_no_nvswitches.txt").splitlines(keepends=True)[1:]
    out = run(load_fixture("hgx-h100"), "dcgmi", "nvlink", "-s")
    assert out.exit_code == 0
    assert out.stdout == "".join(real)


def test_dcgmi_nvlink_link_status_with_every_link_down_is_the_capture() -> None:
    real = read_corpus("dcgmi_nvlink/02_link_status_2gpus_all_down.txt").splitlines(keepends=True)[1:]
    state = load_fixture("hgx-h100")
    state.gpus = state.gpus[:2]
    for gpu in state.gpus:
        for link in gpu.nvlinks:
            link.active = False
    assert run(state, "dcgmi", "nvlink", "--link-status").stdout == "".join(real)


def test_dcgmi_nvlink_s_marks_links_an_a100_does_not_have() -> None:
    out = run(load_fixture("dgx-a100"), "dcgmi", "nvlink", "-s").stdout.splitlines()
    assert out[5] == "        " + " ".join(["U"] * 12 + ["_"] * 6)  # 12 NVLink 3 links of 18


def test_dcgmi_nvlink_e_prints_the_four_counters_of_every_link_in_dcgm_s_tree_box() -> None:
    # DCGM 4.x dcgmi/Nvlink.cpp (DisplayNvLinkErrorCountsForGpu) and dcgmi/DcgmiOutput.cpp (DcgmiOutputTree 30+50)
    state = load_fixture("hgx-h100")
    state.gpu(0).nvlinks[3].errors["replay"] = 7
    out = run(state, "dcgmi", "nvlink", "-e", "-g", "0").stdout.splitlines()
    assert out[:4] == [
        "+" + "-" * 29 + "+" + "-" * 48 + "+",
        "| NVLINK Error Counts".ljust(79) + "|",
        "| GPU 0".ljust(79) + "|",
        "+" + "=" * 29 + "+" + "=" * 48 + "+",
    ]
    assert out[4:9] == [
        f"| {'Link 0':<27} | {'':<46} |",
        f"| {'-> CRC FLIT Error':<27} | {'0':<46} |",
        f"| {'-> CRC Data Error':<27} | {'0':<46} |",
        f"| {'-> Replay Error':<27} | {'0':<46} |",
        f"| {'-> Recovery Error':<27} | {'0':<46} |",
    ]
    assert f"| {'-> Replay Error':<27} | {'7':<46} |" in out[4 + 3 * 5 : 4 + 4 * 5]
    assert len(out) == 4 + 18 * 5 + 1 and all(len(line) == 80 for line in out)
    missing = run(state, "dcgmi", "nvlink", "-e", "-g", "9")
    assert (missing.exit_code, missing.stdout) == (255, "GPU ID 9 is not valid, return: Invalid GPU ID\n")


def test_dcgmi_topo_gpuid_gives_affinity_pcie_path_and_nvlinks_as_dcgm_prints_them() -> None:
    # DCGM 4.x dcgmi/Topo.cpp: HelperGetAffinity ("48 - 63, 176 - 191"), HelperGetPciPath, HelperGetNvLinkPath
    state = load_fixture("dgx-a100")
    out = run(state, "dcgmi", "topo", "--gpuid", "0").stdout.splitlines()
    assert out[1] == "| Topology Information".ljust(99) + "|" and out[2] == "| GPU ID: 0".ljust(99) + "|"
    cores = state.gpu(0).cpu_affinity or ""
    assert out[4].startswith("| CPU Core Affinity | " + cores.replace("-", " - ").replace(",", ", "))
    links = ", ".join(str(i) for i in range(12))
    assert out[5].startswith("| To GPU 1          | Connected via ")
    assert out[6] == f"| {'':<17} | {'Connected via twelve NVLINKs (Links: ' + links + ')':<76} |"
    assert len([line for line in out if line.startswith("| To GPU ")]) == 7
    group = run(state, "dcgmi", "topo").stdout.splitlines()
    assert [line.split("|")[1].strip() for line in group[4:7]] == ["CPU Core Affinity", "NUMA Optimal", "Worst Path"]
    assert group[2].startswith("| DCGM_ALL_SUPPORTED_GPUS")
