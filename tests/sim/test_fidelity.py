"""The simulator's outputs have the structure of real captures for the same driver or tool version.

Compared: line widths, the fixed lines (rules, headers, section titles), field names and their order,
and the shape of the data rows (digits, names and ids masked), never the numbers themselves. Every
capture is in tests/data/corpus with its source in SOURCES.md.
"""

from __future__ import annotations

import re

import pytest

from assessor.sim import mig
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import read_corpus


def run(state: NodeState, *argv: str) -> str:
    result = run_tool(list(argv), Session(state=state))
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.stdout


def on_driver(fixture: str, version: str, cuda: str) -> NodeState:
    """A fixture node whose driver is the capture's, so the table takes that branch's layout."""
    state = load_fixture(fixture)
    state.driver.version = state.driver.kernel_module_version = version
    state.driver.cuda_version = cuda
    return state


def shape(line: str) -> str:
    """A line with what varies between nodes masked: GPU names, bus ids, numbers, units' values."""
    line = re.sub(r"NVIDIA [A-Z0-9][\w -]*?(?=\s{2,}|\s*\||\s*$)|Tesla \w+", "NAME", line)
    line = re.sub(r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d", "BUSID", line)
    line = re.sub(r"\d+(\.\d+)?", "9", line)
    return re.sub(r" +", " ", line)  # column padding moves with the widths of the values


def body(text: str) -> list[str]:
    """The table's lines without the timestamp line (some captures were pasted without it)."""
    lines = text.splitlines()
    return lines[1:] if lines and not lines[0].startswith(("+", "|")) else lines


def fixed_lines(text: str) -> list[str]:
    """Rules, header rows and box titles of a default table (no timestamp, version or GPU rows)."""
    keep = ("Name", "Memory-Usage", "MIG M.", "Processes:", " ID   ID ", "GPU   GI   CI", "MIG devices:")
    return [
        line
        for line in body(text)
        if line.startswith(("+", "|=", "|-")) or any(k in line for k in keep)
        if "NVIDIA-SMI" not in line
    ]


# ---------------------------------------------------------------- the default table


DEFAULT_TABLES = [
    # (capture, fixture, driver, CUDA)
    ("nvml/nvidia_smi_default_A100_40GB_mig_535.txt", "dgx-a100", "535.104.12", "12.2"),
    ("nvml/nvidia_smi_default_8xH100_SXM.txt", "hgx-h100", "565.57.01", "12.7"),
    ("nvml/nvidia_smi_default_T4_570.txt", "hgx-h200", "570.158.01", "12.8"),
    ("nvml/nvidia_smi_default_GB10_580_processes.txt", "hgx-h200", "580.159.03", "13.0"),
]


@pytest.mark.parametrize(("rel", "fixture", "driver", "cuda"), DEFAULT_TABLES, ids=lambda v: str(v)[:24])
def test_default_table_has_the_widths_and_fixed_lines_of_the_same_driver(
    rel: str, fixture: str, driver: str, cuda: str
) -> None:
    real = read_corpus(rel)
    state = on_driver(fixture, driver, cuda)
    out = run(state, "nvidia-smi", "-i", "0")
    boxed = {len(line) for line in body(out) if line.startswith(("|", "+"))}
    assert boxed == {len(line) for line in body(real) if line.startswith(("|", "+"))}
    ours, theirs = fixed_lines(out), fixed_lines(real)
    assert ours[:7] == theirs[:7]  # the GPU box: rules and the three header rows
    at_ours = next(i for i, line in enumerate(ours) if "Processes:" in line)
    at_theirs = next(i for i, line in enumerate(theirs) if "Processes:" in line)
    assert ours[at_ours - 1 : at_ours + 4] == theirs[at_theirs - 1 : at_theirs + 4]  # the process box head
    assert body(out)[1].startswith("| NVIDIA-SMI " + driver)
    assert shape(body(out)[1]) == shape(body(real)[1])


@pytest.mark.parametrize(("rel", "fixture", "driver", "cuda"), DEFAULT_TABLES[1:2], ids=["565"])
def test_default_table_gpu_rows_have_the_shape_of_the_capture(rel: str, fixture: str, driver: str, cuda: str) -> None:
    real = body(read_corpus(rel))
    out = body(run(on_driver(fixture, driver, cuda), "nvidia-smi"))
    at = next(i for i, line in enumerate(real) if line.startswith("|   0  "))
    assert [shape(line) for line in out[at : at + 3]] == [shape(line) for line in real[at : at + 3]]


def test_default_table_mig_box_matches_the_535_capture_line_for_line() -> None:
    real = read_corpus("nvml/nvidia_smi_default_A100_40GB_mig_535.txt").splitlines()
    session = Session(state=on_driver("dgx-a100", "535.104.12", "12.2"))
    run_tool(["nvidia-smi", "-i", "0", "-mig", "1"], session)
    run_tool(["nvidia-smi", "mig", "-i", "0", "-cgi", "9", "-C"], session)
    out = run_tool(["nvidia-smi", "-i", "0"], session).stdout.splitlines()
    box = out.index(real[14])  # "| MIG devices: ... |"
    # the idle device's 37 MiB in use too (assessor.sim.gpu_memory)
    assert out[box - 1 : box + 9] == real[13:23]


# ---------------------------------------------------------------- -q


def _keys(lines: list[str]) -> list[str]:
    return [line.split(" : ")[0].rstrip() if " : " in line else line.rstrip() for line in lines if line.strip()]


def test_query_text_field_names_are_the_565_captures_in_its_order_and_its_column() -> None:
    real = read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt").splitlines()
    out = run(on_driver("hgx-h100", "565.57.01", "12.7"), "nvidia-smi", "-q", "-i", "0").splitlines()
    real_keys = _keys(real[1:])
    position = 0
    for key in _keys(out[1:]):
        assert key in real_keys[position:], f"{key!r} is not in the capture after {real_keys[position - 1]!r}"
        position = real_keys.index(key, position) + 1
    assert len(_keys(out)) > 0.7 * len(real_keys)  # most of the capture's fields are there
    colons = {line.index(" : ") for line in out if " : " in line}
    assert colons == {line.index(" : ") for line in real if " : " in line} == {41}


# ---------------------------------------------------------------- mig -lgip


def test_lgip_of_an_h100_nvl_is_the_capture() -> None:
    real = read_corpus("nvml/mig_lgip_H100_NVL_94GB.txt").split("\n", 1)[1]
    ours = mig.render_lgip([mig.MigGpu(0, "NVIDIA H100 NVL", [])])
    assert "".join(line.rstrip() + "\n" for line in ours.splitlines()) == real


def test_lgip_rows_of_an_h200_are_the_rows_of_the_hgx_h200_capture() -> None:
    real = [line for line in read_corpus("nvml/lgip_H200_excerpt_cut_mid_row.txt").splitlines() if line.strip()]
    ours = mig.render_lgip([mig.MigGpu(2, "NVIDIA H200", []), mig.MigGpu(3, "NVIDIA H200", [])]).splitlines()
    for line in real:
        assert line in ours, line


# ---------------------------------------------------------------- dcgmi diag


def _diag_structure(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if "-----  " in line:
            out.append("== " + line.split("-----  ")[1].split("  ")[0])
        elif line.startswith("| ") and line[2:27].strip() not in ("", "Info", "Warning", "Error"):
            out.append(line[2:27].strip())
    return out


@pytest.mark.parametrize(
    ("level", "rel", "version"),
    [
        ("2", "dcgmi_diag/04_dcgm3.3.9_r2_v_empty_stress_header.txt", "3.3.9"),
        ("3", "dcgmi_diag/05_dcgm3.3.9_r3_hardware_diagnostic_eud_skip.txt", "3.3.9"),
        ("2", "dcgmi_diag/01_dcgm3.3.1_r2_metadata_deployment_denylist.txt", "3.3.1"),
    ],
)
def test_dcgmi_diag_has_the_sections_rows_and_widths_of_dcgm_3_3(level: str, rel: str, version: str) -> None:
    state = load_fixture("dgx-a100")
    state.perf.dcgm_version = version
    out = run(state, "dcgmi", "diag", "-r", level)
    real = read_corpus(rel).split("\n", 1)[1]
    theirs = _diag_structure(real)
    assert _diag_structure(out)[: len(theirs)] == theirs  # capture 01 is cut short by the index
    assert {len(line) for line in out.splitlines()[1:]} == {78}
    assert all(len(line) == 78 for line in real.splitlines()[1:] if line.endswith(("|", "+")))
