"""The text-cleanup layer: launcher and log prefixes, prompts, fences and excerpt marks, on real outputs."""

from __future__ import annotations

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.parsers._text import check_input, clean_lines, decode, echoed_commands
from tests.support.corpus import read_corpus

IBSTAT = "ibstat/02_h100_cx7_roce400_one_down_polling.txt"
NCCL = "nccl_tests/02_all_reduce_1node_8xA100_sxm4_80gb_g8.txt"
LIST = "nvml/nvidia_smi_L_mig_A100_40GB_guide.txt"
TOPO = "nvml/topo_m_legend_and_2gpu_nvlink.txt"
DEVINFO = "ibv_devinfo/02_ib_cx7_mt4126_fw28.37_port_active_infiniband.txt"


def _prefixed(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _ports(text: str) -> list[tuple[str, int, str | None, float | None]]:
    facts = parsers.parse("ibstat", text)
    return [(p.ca, p.port, p.state, p.rate_gbps) for p in facts.ib_ports or []]


@pytest.mark.parametrize(
    "prefix",
    [
        "[1,0]<stdout>:",
        "[0] ",
        "0: ",
        "  12: ",
        "[  123.456789] ",
        "2024-11-14T10:00:00+0000 ",
        "gpu3: kern: warning: ",
    ],
    ids=["ompi-tag-output", "bare-rank", "srun-label", "srun-label-padded", "kernel", "iso", "dmesg-x-host"],
)
def test_launcher_and_log_prefixes_on_every_line_give_the_same_ibstat_facts(prefix):
    text = read_corpus(IBSTAT)
    assert _ports(_prefixed(text, prefix)) == _ports(text)


def test_nccl_tests_rows_under_ompi_and_srun_prefixes_keep_the_peak_busbw():
    text = read_corpus(NCCL)
    plain = parsers.parse("nccl-tests", text).nccl
    tagged = parsers.parse("nccl-tests", _prefixed(_prefixed(text, "[1,0]<stdout>:"), "3: ")).nccl
    assert tagged is not None and plain is not None
    assert tagged.peak_busbw() == plain.peak_busbw() == pytest.approx(232.51, abs=0.5)
    assert tagged.nranks == plain.nranks == 8


def test_srun_label_is_kept_when_only_a_few_lines_carry_it():
    lines = clean_lines("0: one\nplain line\nanother\nmore text")
    assert lines[0] == "0: one"  # not a launcher: most lines do not carry it


def test_nccl_host_pid_tid_prefix_is_removed():
    lines = clean_lines("gpu-node-3:4187:4187 [0] NCCL INFO Using network IB\n")
    assert lines == ["NCCL INFO Using network IB"]


def test_pasted_transcript_with_prompts_fences_and_excerpt_marks_parses_as_nvidia_smi_list():
    body = read_corpus(LIST)
    text = f"```console\nroot@host:/# nvidia-smi -L\n{body}\n...\n<snip>\n[...]\n(env) [root@gpu3 ~]# ibstat\n```\n"
    gpus = parsers.parse("nvidia-smi-list", text).gpus or []
    assert [g.index for g in gpus] == [g.index for g in parsers.parse("nvidia-smi-list", body).gpus or []]
    assert gpus and gpus[0].uuid and gpus[0].uuid.startswith("GPU-")


def test_cleanup_keeps_one_line_per_input_line_so_errors_name_the_file_line():
    text = "$ ibstat\n```\nCA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Active\n\t\tBase lid: x\n```"
    assert len(clean_lines(text)) == len(text.splitlines())
    with pytest.raises(ParseError) as info:
        parsers.parse("ibstat", text)
    assert info.value.line == 7  # "Base lid: x", counted in the file as pasted


def test_prompt_echoes_are_removed_but_remembered():
    text = "user@gpu1:~/nccl-tests$ ./build/all_reduce_perf -b 8 -e 8G -g 8\n#  nThread 1 nGpus 8\n"
    assert clean_lines(text)[0] == ""
    assert echoed_commands(text) == ["./build/all_reduce_perf -b 8 -e 8G -g 8"]


def test_nccl_tests_header_comment_lines_are_not_prompts():
    assert clean_lines("# nThread 1 nGpus 8 minBytes 8\n")[0] == "# nThread 1 nGpus 8 minBytes 8"


def test_topology_pasted_with_a_dollar_prompt_and_fences_parses_the_same():
    text = read_corpus(TOPO)
    fenced = f"$ nvidia-smi topo -m\n```\n{text}\n```"
    assert parsers.parse("nvidia-smi-topo", fenced).topology == parsers.parse("nvidia-smi-topo", text).topology


def test_ibv_devinfo_with_slurm_labels_reads_every_device():
    text = read_corpus(DEVINFO)
    plain = parsers.parse("ibv-devinfo", text).ib_devices or []
    labelled = parsers.parse("ibv-devinfo", _prefixed(text, "0: ")).ib_devices or []
    assert [d.hca_id for d in labelled] == [d.hca_id for d in plain] and plain


def test_a_number_of_five_thousand_digits_is_a_parse_error_naming_its_line():
    with pytest.raises(ParseError) as info:
        check_input("ok\nport_lid: " + "9" * 5000 + "\n")
    assert info.value.line == 2


@pytest.mark.parametrize("junk", ["\x00", "\x07", "\ufffd\ufffd\ufffd"])
def test_binary_data_is_a_parse_error_naming_its_line(junk):
    with pytest.raises(ParseError) as info:
        parsers.parse("ibstat", f"CA 'mlx5_0'\n\tPort 1:\n\t\tState: {junk}Active\n")
    assert info.value.line == 3


def test_invalid_utf8_is_a_parse_error_naming_its_line():
    with pytest.raises(ParseError) as info:
        decode(b"CA 'mlx5_0'\n\tPort 1:\n\t\tState: \xff\xfeActive\n")
    assert info.value.line == 3
    assert decode(b"GPU 0: A100 (UUID: GPU-1)\n") == "GPU 0: A100 (UUID: GPU-1)\n"


@pytest.mark.parametrize(
    ("kind", "rel"),
    [
        ("ibstat", IBSTAT),
        ("nvidia-smi-list", LIST),
        ("nvidia-smi", "nvml/nvidia_smi_default_8xH100_SXM.txt"),
        ("nvidia-smi-q", "nvml/nvidia_smi_q_H100_SXM_gpu0.txt"),
        ("nccl-tests", NCCL),
    ],
)
def test_a_last_line_cut_in_half_still_parses(kind, rel):
    lines = read_corpus(rel).rstrip("\n").splitlines()
    for cut in range(len(lines) - 1, max(len(lines) - 12, 1), -1):
        text = "\n".join([*lines[:cut], lines[cut][: len(lines[cut]) // 2]])
        facts = parsers.parse(kind, text)
        spec = parsers.kind(kind)
        assert any(getattr(facts, f) for f in spec.fields), f"cut at line {cut + 1}"
