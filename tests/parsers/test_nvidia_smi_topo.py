"""nvidia-smi topo -m. Fixtures: corpus/nvidia_smi_topo/* and corpus/nvml/topo_m_*.txt (see SOURCES.md)."""

from __future__ import annotations

import pytest

from assessor.errors import ParseError
from assessor.facts import Topology
from assessor.parsers import nvidia_smi_topo
from tests.support.corpus import read_corpus

DGX_A100 = "nvidia_smi_topo/01_dgx_a100_40gb_nv12_12nics_pxb.txt"
DGX_A100_NVML = "nvml/topo_m_DGX_A100_40GB_excerpt.txt"
H100_PCIE = "nvidia_smi_topo/03_h100_pcie_no_nvlink_all_sys_one_pix_nic_per_gpu.txt"
HGX_H100_NO_HEADER = "nvml/topo_m_HGX_H100_excerpt.txt"
TWO_GPU_LEGEND = "nvml/topo_m_legend_and_2gpu_nvlink.txt"

GPUS8 = [f"GPU{i}" for i in range(8)]

# A complete capture in the newer format (NIC columns, NIC legend), shortened by hand to
# 2 GPUs and 2 NICs; tab-separated as nvidia-smi writes it.
WITH_NIC_LEGEND = (
    "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV18\tPIX\tSYS\t0-47\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tSYS\tPIX\t48-95\t1\t\tN/A\n"
    "NIC0\tPIX\tSYS\t X \tSYS\t\t\t\t\n"
    "NIC1\tSYS\tPIX\tSYS\t X \t\t\t\t\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "\n"
    "NIC Legend:\n"
    "\n"
    "  NIC0: mlx5_0\n"
    "  NIC1: mlx5_bond_0\n"
)


def topology(text: str) -> Topology:
    facts = nvidia_smi_topo.parse(text)
    assert facts.topology is not None
    return facts.topology


@pytest.mark.parametrize("rel", [DGX_A100, DGX_A100_NVML])
def test_dgx_a100_all_gpu_pairs_are_nv12_and_two_pxb_nics_per_gpu_pair(rel: str) -> None:
    topo = topology(read_corpus(rel))
    assert topo.devices == GPUS8 + [f"NIC{i}" for i in range(12)]
    # excerpt: rows GPU0..GPU3 only
    assert list(topo.matrix) == ["GPU0", "GPU1", "GPU2", "GPU3"]
    for row in topo.matrix:
        for gpu in GPUS8:
            assert topo.matrix[row][gpu] == ("X" if gpu == row else "NV12")
    assert [n for n, v in topo.matrix["GPU0"].items() if v == "PXB"] == ["NIC0", "NIC1"]
    assert [n for n, v in topo.matrix["GPU2"].items() if v == "PXB"] == ["NIC2", "NIC3"]
    assert topo.cpu_affinity == {
        "GPU0": "48-63,176-191",
        "GPU1": "48-63,176-191",
        "GPU2": "16-31,144-159",
        "GPU3": "16-31,144-159",
    }
    assert topo.numa_affinity == {"GPU0": "3", "GPU1": "3", "GPU2": "1", "GPU3": "1"}
    assert topo.nic_names == {}  # the excerpt stops before the NIC legend


def test_h100_pcie_gpus_see_each_other_only_through_sys_and_each_has_one_pix_nic() -> None:
    topo = topology(read_corpus(H100_PCIE))
    assert topo.devices == GPUS8 + [f"NIC{i}" for i in range(10)]
    assert list(topo.matrix) == [f"GPU{i}" for i in range(6)]  # truncated after GPU5
    for row, cells in topo.matrix.items():
        assert {cells[g] for g in GPUS8 if g != row} == {"SYS"}
        pix = [n for n, v in cells.items() if v == "PIX"]
        assert pix == [f"NIC{row[3:]}"]
    assert topo.cpu_affinity["GPU4"] == "56-111,168-223"
    assert topo.numa_affinity["GPU0"] == "0"


def test_hgx_h100_excerpt_without_header_infers_gpu_and_nic_columns() -> None:
    topo = topology(read_corpus(HGX_H100_NO_HEADER))
    # rows GPU4..7 put GPU0 at column 0; NIC0's X in column 8 puts the NICs after 8 GPUs
    assert topo.devices == GPUS8 + [f"NIC{i}" for i in range(12)]
    assert list(topo.matrix) == [f"GPU{i}" for i in range(4, 8)] + [f"NIC{i}" for i in range(8)]
    assert all(topo.matrix["GPU4"][g] == "NV18" for g in GPUS8 if g != "GPU4")
    assert topo.matrix["GPU4"]["NIC6"] == "PXB"
    assert topo.matrix["NIC0"]["GPU0"] == "PXB"
    assert topo.matrix["NIC1"]["NIC2"] == "PIX"
    assert topo.cpu_affinity["GPU7"] == "56-111,168-223"
    assert topo.numa_affinity["GPU7"] == "1"
    assert "NIC0" not in topo.cpu_affinity  # NIC rows have no affinity cells


def test_older_format_names_nics_in_the_header_and_skips_the_legend() -> None:
    topo = topology(read_corpus(TWO_GPU_LEGEND))
    assert topo.devices == ["GPU0", "GPU1"] + [f"mlx5_{i}" for i in range(8)]
    assert topo.matrix["GPU0"]["GPU1"] == "NV12"
    assert topo.matrix["GPU1"]["GPU0"] == "NV12"
    assert [n for n, v in topo.matrix["GPU0"].items() if v == "PXB"] == ["mlx5_6", "mlx5_7"]
    assert topo.matrix["mlx5_7"]["mlx5_6"] == "PIX"
    assert topo.cpu_affinity == {"GPU0": "48-95,144-191", "GPU1": "48-95,144-191"}
    assert topo.numa_affinity == {"GPU0": "1", "GPU1": "1"}
    assert topo.nic_names == {}


def test_nic_legend_maps_nic_columns_to_device_names() -> None:
    topo = topology(WITH_NIC_LEGEND)
    assert topo.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_bond_0"}
    assert topo.devices == ["GPU0", "GPU1", "NIC0", "NIC1"]
    assert topo.matrix["GPU1"]["NIC1"] == "PIX"
    assert topo.matrix["NIC0"]["NIC1"] == "SYS"
    assert topo.numa_affinity == {"GPU0": "0", "GPU1": "1"}


@pytest.mark.parametrize("rel", [DGX_A100, TWO_GPU_LEGEND, HGX_H100_NO_HEADER])
def test_tabs_and_spaces_give_the_same_topology(rel: str) -> None:
    text = read_corpus(rel)
    assert topology(text.expandtabs(8)) == topology(text.replace(" ", "\t")) == topology(text)


def test_ansi_underlined_header_is_read() -> None:
    text = WITH_NIC_LEGEND.replace("\tGPU0", "\x1b[4m\tGPU0", 1).replace("GPU NUMA ID\n", "GPU NUMA ID\x1b[0m\n", 1)
    assert topology(text) == topology(WITH_NIC_LEGEND)


def test_last_row_cut_short_at_end_of_file_is_dropped() -> None:
    lines = read_corpus(DGX_A100).splitlines()
    cut = "\n".join([*lines[:-1], lines[-1][:40]])
    topo = topology(cut)
    assert list(topo.matrix) == ["GPU0", "GPU1", "GPU2"]


def test_short_row_inside_the_matrix_is_a_parse_error_with_line() -> None:
    lines = read_corpus(DGX_A100).splitlines()
    lines[3] = lines[3][:40]  # GPU1's row, file line 4
    with pytest.raises(ParseError) as caught:
        nvidia_smi_topo.parse("\n".join(lines))
    assert caught.value.line == 4
    assert "GPU1" in caught.value.reason


def test_short_last_row_followed_by_the_legend_is_a_parse_error() -> None:
    text = WITH_NIC_LEGEND.replace("NIC1\tSYS\tPIX\tSYS\t X ", "NIC1\tSYS\tPIX")
    with pytest.raises(ParseError) as caught:
        nvidia_smi_topo.parse(text)
    assert caught.value.line == 5


def test_row_with_an_extra_connection_cell_is_a_parse_error() -> None:
    text = WITH_NIC_LEGEND.replace("GPU1\tNV18\t X \tSYS\tPIX", "GPU1\tNV18\t X \tSYS\tPIX\tSYS")
    with pytest.raises(ParseError) as caught:
        nvidia_smi_topo.parse(text)
    assert caught.value.line == 3


def test_row_for_a_device_missing_from_the_header_is_a_parse_error() -> None:
    text = WITH_NIC_LEGEND.replace("NIC1\tSYS", "NIC7\tSYS")
    with pytest.raises(ParseError) as caught:
        nvidia_smi_topo.parse(text)
    assert caught.value.line == 5


def test_garbage_inside_the_matrix_is_a_parse_error_with_line() -> None:
    lines = WITH_NIC_LEGEND.splitlines()
    lines.insert(2, "kernel: nvidia-nvswitch0: probe failed")
    with pytest.raises(ParseError) as caught:
        nvidia_smi_topo.parse("\n".join(lines))
    assert caught.value.line == 3


def test_bad_nic_legend_entry_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as caught:
        nvidia_smi_topo.parse(WITH_NIC_LEGEND + "  something odd\n")
    assert caught.value.line == 17


@pytest.mark.parametrize("text", ["", "hello world\nthis is not a matrix\n", "Legend:\n  X = Self\n"])
def test_output_without_a_matrix_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as caught:
        nvidia_smi_topo.parse(text)
    assert caught.value.line == 1


def test_driver_failure_text_is_carried_verbatim() -> None:
    message = "Failed to initialize NVML: Driver/library version mismatch"
    with pytest.raises(ParseError) as caught:
        nvidia_smi_topo.parse(message + "\n")
    assert caught.value.reason == message


def test_binary_data_is_a_parse_error_with_line() -> None:
    with pytest.raises(ParseError) as caught:
        nvidia_smi_topo.parse(read_corpus(DGX_A100) + "\x00\x13\x37")
    assert caught.value.line == 7  # the six lines of the file, then the binary


def test_older_driver_names_nic_columns_mlx5_and_has_no_legend():
    from assessor import parsers

    text = read_corpus("nvidia_smi_topo/04_dgx2_16xv100_nv6_mlx5_columns_no_legend_cut.txt")
    topo = parsers.parse("nvidia-smi-topo", text).topology
    assert topo is not None
    assert topo.devices[16:] == [f"mlx5_{i}" for i in range(10)]
    assert topo.nic_names == {}
    assert topo.matrix["GPU0"]["mlx5_0"] == "PIX" and topo.matrix["GPU2"]["mlx5_1"] == "PIX"
    assert topo.matrix["GPU4"]["mlx5_2"] == "PIX"  # the cut row keeps its whole matrix cells
    assert topo.cpu_affinity["GPU0"] == "0-23,48-71"


def test_topo_nic_affinity_judges_mlx5_named_columns():
    from assessor import parsers
    from assessor.checks import REGISTRY, run_check

    text = read_corpus("nvidia_smi_topo/04_dgx2_16xv100_nv6_mlx5_columns_no_legend_cut.txt")
    facts = parsers.parse("nvidia-smi-topo", text)
    r = run_check(REGISTRY["topo.nic_affinity"], facts, {})
    # GPU0-4 have a PIX NIC among the mlx5 columns; the rows the excerpt lacks are named, not passed.
    assert r.status == "warn", r.message
    assert "no GPU-NIC paths for GPU 5" in r.message and "GPU 4," not in r.message
