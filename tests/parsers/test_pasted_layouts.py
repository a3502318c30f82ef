"""Layouts real terminals and pastes produce, each on a real sample (tests/data/corpus/SOURCES.md).

Glued ``topo -m`` cells, prompts of other shells, trace and debug lines before a tool's output,
header-less excerpts recognised by their column shape, ``-q``/XML outputs cut or filtered below their
``Attached GPUs`` count, and NCCL logs without a results table.
"""

from __future__ import annotations

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.parsers._text import clean_lines
from assessor.parsers.detect import detect, snapshot_file
from tests.support.corpus import CORPUS, read_corpus

# The corpus folder without a mapping in tests/support/corpus_kinds.py: header-less lsmod excerpts.
LSMOD_EXCERPTS = sorted(p.relative_to(CORPUS).as_posix() for p in (CORPUS / "lsmod").glob("*.txt"))


# ---- topo -m: cells run together --------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "last_nic"),
    [
        ("nvidia_smi_topo/05_b200_glued_nic11_cpu_affinity_excerpt.txt", "NIC11"),
        ("nvidia_smi_topo/06_b200_glued_nic11nic12_excerpt.txt", "NIC12"),
    ],
)
def test_glued_topo_header_cells_are_split_into_their_devices(rel: str, last_nic: str) -> None:
    topo = parsers.parse("nvidia-smi-topo", read_corpus(rel)).topology
    assert topo is not None
    assert topo.devices[:8] == [f"GPU{i}" for i in range(8)] and topo.devices[-1] == last_nic
    assert topo.matrix["GPU0"]["GPU1"] == "NV18" and topo.matrix["GPU1"][last_nic] in ("NODE", "SYS", "PIX")
    # The affinity after the glued cell is still its own column.
    assert topo.cpu_affinity["GPU0"] in ("0-27,112-139", "0-15")


def test_a_word_that_is_one_device_or_one_code_is_never_split() -> None:
    text = read_corpus("nvidia_smi_topo/06_b200_glued_nic11nic12_excerpt.txt")
    topo = parsers.parse("nvidia-smi-topo", text).topology
    assert topo is not None and "NIC10" in topo.devices and "NV18" in topo.matrix["GPU3"].values()
    # Glued in a row too: the codes are split, the affinity after them kept whole.
    glued = text.replace("NODE    PIX  NODE     0-15", "NODE    PIXNODE0-15", 1)
    assert parsers.parse("nvidia-smi-topo", glued).topology == topo


def test_headerless_topo_rows_name_only_the_gpus_they_show() -> None:
    topo = parsers.parse(
        "nvidia-smi-topo", read_corpus("nvidia_smi_topo/07_b200_gpu2_without_nvlink_headerless_excerpt.txt")
    ).topology
    assert topo is not None
    # GPU rows only: the GPUs reach as far as an NV# cell does; the NIC columns cannot be named.
    assert [d for d in topo.devices if d.startswith("GPU")] == [f"GPU{i}" for i in range(8)]
    assert topo.devices[8] == "COL8" and topo.matrix["GPU2"]["GPU0"] == "NODE"


# ---- prompts of any shell, trace and debug lines ------------------------------------------------


def test_esxi_prompt_before_a_mig_table_is_not_output() -> None:
    text = read_corpus("nvml/mig_lgi_A100_PCIE_40GB_esxi_prompt.txt")
    assert text.startswith("[root@localhost:~] nvidia-smi mig -lgi")
    instances = parsers.parse("nvidia-smi-mig-lgi", text).mig_instances or []
    assert sorted((gi.gi_id, gi.name) for gi in instances) == [
        (1, "3g.20gb"),
        (6, "2g.10gb"),
        (11, "1g.5gb"),
        (12, "1g.5gb"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "[root@localhost:~] nvidia-smi mig -lgi",  # ESXi
        "[gpu6000 ~]# nvidia-smi -q -d MEMORY,PERFORMANCE",  # no user@ in the brackets
        "gpu6000% nvidia-smi topo -m",  # zsh
        "lsmod|sort | grep mlx5",  # echoed with its filters
        "+ ibstat",  # bash set -x
        "ibwarn: [168988] umad_get_ca: opened mlx4_0",  # libibumad's debug line
    ],
)
def test_prompt_and_trace_lines_of_any_style_are_cleaned(line: str) -> None:
    assert clean_lines(line + "\n") == [""]


@pytest.mark.parametrize(
    "line",
    [
        "nvidia-smi invoked oom-killer: gfp_mask=0x1100cca",  # a kernel line about the tool
        "Jan 05 14:44:41 TENCENT64 systemd[1]: Starting nvidia-fabricmanager.service",
        "|   0  MIG 1g.5gb          19       11          0:1     |",
        "+-------------------------------------------------------+",
        "Linux gpu01 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023 x86_64 GNU/Linux",
        "This is a sentence that mentions a prompt > and then nvidia-smi -q in prose",
    ],
)
def test_output_lines_that_name_a_tool_are_kept(line: str) -> None:
    assert clean_lines(line + "\n") == [line]


def test_ibstat_after_set_x_trace_and_ibwarn_lines_is_read_from_its_first_ca() -> None:
    rel = "ibstat/06_mlx4_fdr_set_x_trace_and_ibwarn_before_output.txt"
    ports = parsers.parse("ibstat", read_corpus(rel)).ib_ports or []
    assert [(p.ca, p.port, p.state, p.rate_gbps) for p in ports] == [
        ("mlx4_0", 1, "Down", 10.0),
        ("mlx4_0", 2, "Active", 56.0),
    ]
    assert ports[0].ca_type == "MT4099"


def test_ibstat_with_no_ca_line_at_all_is_still_an_error_naming_the_line() -> None:
    with pytest.raises(ParseError) as info:
        parsers.parse("ibstat", "+ ibstat\nibwarn: [1] umad_init: umad_init\nsomething else\n")
    assert info.value.line == 3


# ---- header-less excerpts: recognised by their column shape -------------------------------------


@pytest.mark.parametrize("rel", LSMOD_EXCERPTS)
def test_headerless_lsmod_excerpts_are_recognised_and_marked_partial(rel: str) -> None:
    text = read_corpus(rel)
    assert detect(text).kind == "lsmod"
    assert snapshot_file(text) == "lsmod.txt"
    facts = parsers.parse("lsmod", text)
    assert facts.modules and "lsmod | grep" in facts.partial["modules"]


def test_lsmod_shape_needs_a_gpu_or_ib_module_and_every_line_in_shape() -> None:
    assert detect("foo 123 0\nbar 456 1 foo\n").kind is None  # a table of something else
    text = read_corpus("lsmod/01_headerless_nvidia_peermem_ib_core_excerpt.txt")
    assert detect(text + "and then a sentence\n").kind is None


def test_headerless_mig_lgi_rows_cut_mid_row_are_recognised_and_read() -> None:
    text = read_corpus("nvml/mig_lgi_sudo_echo_two_gpus_mixed_excerpt.txt")
    assert detect(text).kind == "nvidia-smi-mig-lgi"
    rows_only = "\n".join(line for line in text.splitlines()[6:-1] if line.startswith("|")) + "\n"
    assert detect(rows_only).kind == "nvidia-smi-mig-lgi"  # no "GPU instances:" title: the row shape
    instances = parsers.parse("nvidia-smi-mig-lgi", text).mig_instances or []
    assert len(instances) == 8 and {gi.gpu for gi in instances} == {0, 1}  # GPU 2's cut row left out


# ---- -q / XML cut or filtered below their Attached GPUs ------------------------------------------


@pytest.mark.parametrize(
    ("rel", "attached"),
    [
        ("nvidia_smi_q/04_550.127.05_a40_p8_gen1_idle_reason_off_gpu0_of_10.txt", 10),
        ("nvidia_smi_q/05_580.105.06_rtx_pro_6000_d_memory_performance_cut.txt", 4),
        ("nvml/nvidia_smi_q_H100_SXM_gpu0.txt", 8),
    ],
)
def test_q_text_keeps_the_attached_count_of_a_cut_output(rel: str, attached: int) -> None:
    facts = parsers.parse("nvidia-smi-q", read_corpus(rel))
    assert len(facts.gpus or []) == 1 and facts.gpus_attached == attached
    assert f"Attached GPUs : {attached}" in facts.partial["gpus"]


def test_filtered_xml_keeps_attached_gpus_and_a_whole_one_is_not_partial() -> None:
    filtered = parsers.parse("nvidia-smi-xml", read_corpus("nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml"))
    assert (len(filtered.gpus or []), filtered.gpus_attached) == (1, 4) and "gpus" in filtered.partial
    whole = parsers.parse("nvidia-smi-xml", read_corpus("nvidia_smi_xml/v100s-pcie-32gb-x8-460-v11.xml"))
    assert (len(whole.gpus or []), whole.gpus_attached, whole.partial) == (8, 8, {})


def test_q_text_reads_performance_state_and_utilisation() -> None:
    gpu = (
        parsers.parse(
            "nvidia-smi-q", read_corpus("nvidia_smi_q/04_550.127.05_a40_p8_gen1_idle_reason_off_gpu0_of_10.txt")
        ).gpus
        or []
    )[0]
    assert (gpu.performance_state, gpu.utilization_gpu_pct, gpu.throttle_reasons) == ("P8", 0.0, ["sw_power_cap"])


# ---- NCCL logs without a results table ---------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "hosts", "network"),
    [
        ("nccl_debug/07_aws_two_nodes_ofi_not_efa_ib_absent_socket_excerpt.txt", 2, "Socket"),
        ("nccl_debug/09_forced_socket_two_nodes_ifname_en_excerpt.txt", 2, "Socket"),
        ("nccl_debug/10_rank_tagged_two_nodes_bootstrap_no_plugin_excerpt.txt", 2, None),
        ("nccl_warn/04_net_ib_completion_status12_hca_mlx5_10_log_only.txt", 1, None),
    ],
)
def test_nccl_log_without_a_table_is_read_by_the_nccl_tests_file_too(rel: str, hosts: int, network: str) -> None:
    text = read_corpus(rel)
    assert snapshot_file(text) == "nccl-tests.txt"
    run = parsers.parse("nccl-tests", text).nccl
    assert run is not None and not run.tests_output and not run.rows
    assert len(run.debug.hosts) == hosts and run.debug.network == network
    assert run == parsers.parse("nccl-debug", text).nccl


def test_nranks_of_a_log_come_from_its_comm_lines() -> None:
    text = read_corpus("nccl_debug/01_h800_single_node_ib_not_found_socket_fallback_nvls.txt")
    run = parsers.parse("nccl-tests", text).nccl
    assert run is not None and run.debug.nranks == 8 and run.debug.hosts == ["nf5688m7-1"]


def test_text_with_neither_a_table_nor_nccl_lines_is_still_an_error() -> None:
    with pytest.raises(ParseError, match="no nccl-tests results"):
        parsers.parse("nccl-tests", "hello\nworld\n")


def test_a_gpu_lost_from_the_bus_is_not_taken_for_a_cut() -> None:
    # NVML counts a lost GPU in the header, and nvidia-smi prints its error instead of its block.
    text = read_corpus("nvidia_smi_q/04_550.127.05_a40_p8_gen1_idle_reason_off_gpu0_of_10.txt")
    lost = text + "Unable to determine the device handle for gpu 0000:52:00.0: Unknown Error\n"
    facts = parsers.parse("nvidia-smi-q", lost)
    assert (len(facts.gpus or []), facts.gpus_attached, facts.partial) == (1, None, {})
