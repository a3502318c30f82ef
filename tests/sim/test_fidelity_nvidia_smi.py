"""Golden tests: ``nvidia-smi -q``, ``-q -x``, ``--query-gpu`` and the CLI against real captures (audit, issue #23).

Compared is the structure a script or parser depends on: the keys of ``-q`` in order and nesting, the XML
element paths in order, the XML header line and indentation, the accepted flags and the messages' shape;
never the node's values. Every capture is in tests/data/corpus with its source in SOURCES.md.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from assessor.parsers import nvidia_smi_xml
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState, save_state
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.corpus import read_corpus


def on_driver(fixture: str, version: str | None = None) -> NodeState:
    state = load_fixture(fixture)
    if version is not None:
        state.driver.version = state.driver.kernel_module_version = version
    return state


def smi(state: NodeState, *args: str, euid: int = 0) -> ToolResult:
    return run_tool(["nvidia-smi", *args], Session(state=state, euid=euid))


def keys(text: str) -> list[str]:
    """Each line's key with its indentation (``    PCI``, ``        Bus``): the structure of a -q block."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("[... corpus"):
            continue
        key = line.split(" : ", 1)[0].rstrip() if " : " in line else line.rstrip()
        out.append(re.sub(r"^(Timestamp|Driver Version|CUDA Version|Attached GPUs)\s*$", r"\1", key))
    return [re.sub(r"^GPU [0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d$", "GPU BUSID", k) for k in out]


def first_gpu(text: str) -> str:
    """The header and the first GPU block of a -q text."""
    lines = text.splitlines()
    gpu_lines = [i for i, line in enumerate(lines) if line.startswith("GPU ")]
    end = gpu_lines[1] if len(gpu_lines) > 1 else len(lines)
    return "\n".join(lines[:end])


# ---------------------------------------------------------------- -q (rows 1, 4, 5, 6)

Q_CAPTURES = [
    # (capture, fixture, driver): the simulator on the capture's driver branch
    ("nvml/nvidia_smi_q_H100_SXM_gpu0.txt", "hgx-h100", "565.57.01"),
    ("nvidia_smi_q/06_550.127.05_l40s_q_full.txt", "pcie-l40s", "550.127.05"),
    ("nvidia_smi_q/07_555.42.02_a100_sxm4_80gb_q_gpu0_of_4.txt", "dgx-a100", "555.42.02"),
]


@pytest.mark.parametrize(("rel", "fixture", "driver"), Q_CAPTURES, ids=lambda v: str(v)[:28])
def test_q_has_the_keys_of_the_capture_in_order_and_nesting(rel: str, fixture: str, driver: str) -> None:
    real = read_corpus(rel)
    out = smi(on_driver(fixture, driver), "-q", "-i", "0")
    assert out.exit_code == 0
    assert keys(first_gpu(out.stdout)) == keys(first_gpu(real))
    assert {line.index(" : ") for line in out.stdout.splitlines() if " : " in line} == {41}


def test_q_of_l40s_at_550_has_t_limit_temperatures_module_id_and_no_gsp() -> None:
    out = smi(on_driver("pcie-l40s", "550.127.05"), "-q", "-i", "0").stdout.splitlines()
    real = read_corpus("nvidia_smi_q/06_550.127.05_l40s_q_full.txt").splitlines()
    for line in (
        "    Module ID                             : 1",
        "    GSP Firmware Version                  : N/A",
        "            Max                           : 192 bank(s)",
        "        GPU Shutdown T.Limit Temp         : -5 C",
        "        GPU Slowdown T.Limit Temp         : -2 C",
        "        GPU Max Operating T.Limit Temp    : 0 C",
        "        Memory Max Operating T.Limit Temp : N/A",
    ):
        assert line in real and line in out
    assert not any("GPU Shutdown Temp " in line for line in out)


@pytest.mark.parametrize("fixture", ["dgx-a100", "a30"])
def test_q_of_ampere_at_535_has_the_t_limit_and_target_temperature_lines(fixture: str) -> None:
    out = smi(on_driver(fixture), "-q", "-d", "TEMPERATURE", "-i", "0").stdout.splitlines()
    real = read_corpus("nvidia_smi_q/07_555.42.02_a100_sxm4_80gb_q_gpu0_of_4.txt").splitlines()
    for line in ("        GPU T.Limit Temp                  : N/A", "        GPU Target Temperature            : N/A"):
        assert line in real and line in out


# ---------------------------------------------------------------- -q -d (rows 2, 3)

D_CAPTURES = [
    ("nvidia_smi_q/10_580.65.06_rtx3090ti_d_power_gpu0_of_4.txt", "POWER", "580.65.06"),
    ("nvidia_smi_q/11_580.65.06_rtx3090ti_d_clock_gpu0_of_4.txt", "CLOCK", "580.65.06"),
    ("nvidia_smi_q/08_510.73.08_a100_d_clock.txt", "CLOCK", None),
    ("nvidia_smi_q/09_510.73.08_a100_d_supported_clocks_excerpt.txt", "SUPPORTED_CLOCKS", None),
]


@pytest.mark.parametrize(("rel", "section", "driver"), D_CAPTURES, ids=lambda v: str(v)[:28])
def test_q_d_section_has_the_blocks_of_the_capture(rel: str, section: str, driver: str | None) -> None:
    out = smi(on_driver("hgx-h100", driver), "-q", "-d", section, "-i", "0")
    assert out.exit_code == 0
    ours = [k for k in keys(first_gpu(out.stdout)) if k.strip() != "Graphics" or section != "SUPPORTED_CLOCKS"]
    real = [k for k in keys(first_gpu(read_corpus(rel))) if k.strip() != "Graphics" or section != "SUPPORTED_CLOCKS"]
    if (
        driver is None and section == "CLOCK"
    ):  # R510 had no Deferred Clocks block; the simulator prints the current driver's
        at = ours.index("    Deferred Clocks")
        ours = ours[:at] + ours[at + 2 :]
    assert ours == real
    if section == "SUPPORTED_CLOCKS":
        graphics = [line for line in out.stdout.splitlines() if line.startswith("            Graphics ")]
        assert len(graphics) > 50 and graphics[-1].endswith(": 210 MHz")


def test_q_d_voltage_prints_the_graphics_voltage_in_millivolts() -> None:
    out = smi(on_driver("hgx-h100"), "-q", "-d", "VOLTAGE", "-i", "0").stdout.splitlines()
    real = read_corpus("nvml/nvidia_smi_q_H100_SXM_gpu0.txt").splitlines()
    line = "        Graphics                          : 685.000 mV"
    assert line in out and line in real and "    Voltage" in out


# ---------------------------------------------------------------- -q -x (rows 7, 8, 9, 10)


def paths(xml: str) -> list[str]:
    root = ET.fromstring(xml[xml.index("<nvidia_smi_log") :])
    gpu = root.find("gpu")
    assert gpu is not None
    out: list[str] = []

    def walk(element: ET.Element, prefix: str) -> None:
        path = f"{prefix}/{element.tag}"
        out.append(path)
        if element.tag in ("supported_clocks", "processes", "accounted_processes", "mig_devices"):
            return
        for child in element:
            walk(child, path)

    walk(gpu, "")
    return out


XML_CAPTURES = [
    ("nvidia_smi_xml/qx-a100-sxm4-40gb-570-v12.xml", "dgx-a100", "570.148.08"),
]


@pytest.mark.parametrize(("rel", "fixture", "driver"), XML_CAPTURES, ids=lambda v: str(v)[:28])
def test_xml_has_the_element_paths_of_the_capture_in_order(rel: str, fixture: str, driver: str) -> None:
    real = read_corpus(rel)
    out = smi(on_driver(fixture, driver), "-q", "-x", "-i", "0").stdout
    assert paths(out) == paths(real)


def test_xml_of_535_has_the_elements_of_the_535_capture_in_order() -> None:
    # The 535 capture's GPU is in MIG mode (remapped_rows N/A); the simulator's is not: compare the rest.
    real = paths(read_corpus("nvidia_smi_xml/a100-sxm4-80gb-mig-535-v12.xml"))
    ours = [p for p in paths(smi(on_driver("dgx-a100"), "-q", "-x", "-i", "0").stdout) if "/remapped_rows/" not in p]
    assert ours == real


def test_xml_header_line_and_tab_indentation_are_the_drivers() -> None:
    out = smi(on_driver("hgx-h100"), "-q", "-x").stdout
    real = read_corpus("nvidia_smi_xml/qx-a100-sxm4-40gb-570-v12.xml")
    assert out.splitlines()[0] == real.splitlines()[0] == '<?xml version="1.0" ?>'
    assert out.splitlines()[3].startswith("\t<timestamp>") and real.splitlines()[3].startswith("\t<timestamp>")
    assert not any(line.startswith("    ") for line in out.splitlines())


def test_xml_row_remapper_histogram_uses_the_real_element_names_and_parses() -> None:
    out = smi(on_driver("hgx-h100"), "-q", "-x", "-i", "0").stdout
    real = read_corpus("nvidia_smi_xml/qx-h100-580-v13-gpu0.xml")
    for tag in ("<row_remapper_histogram>", "<row_remapper_histogram_max>2560 bank(s)</row_remapper_histogram_max>"):
        assert tag in out and tag in real
    assert "remapped_row_histogram" not in out and "row_remap_histogram" not in out
    gpus = nvidia_smi_xml.parse(out).gpus
    assert gpus is not None and gpus[0].remap_pending is False


def test_parser_reads_both_histogram_spellings_and_t_limit_thresholds() -> None:
    for rel in ("nvidia_smi_xml/a10g-515-v11.xml", "nvidia_smi_xml/qx-h100-580-v13-gpu0.xml"):
        gpus = nvidia_smi_xml.parse(read_corpus(rel)).gpus
        assert gpus and gpus[0].remap_correctable == 0
    h100 = nvidia_smi_xml.parse(read_corpus("nvidia_smi_xml/qx-h100-580-v13-gpu0.xml")).gpus
    assert h100 is not None
    # gpu_temp 29 C, T.Limit margin 58 C: the T.Limit point is 87 C; shutdown -8 -> 95 C, slowdown -2 -> 89 C
    assert (h100[0].temperature_shutdown_c, h100[0].temperature_slowdown_c) == (95, 89)


@pytest.mark.parametrize("fixture", ["hgx-h100", "pcie-l40s", "dgx-a100", "hgx-b200"])
def test_q_and_xml_report_the_same_part_number_and_thresholds(fixture: str) -> None:
    state = on_driver(fixture)
    text = smi(state, "-q", "-i", "0").stdout
    xml = smi(state, "-q", "-x", "-i", "0").stdout
    part = re.search(r"GPU Part Number\s+: (.*)", text)
    assert part and f"<gpu_part_number>{part.group(1)}</gpu_part_number>" in xml
    for label, tag in (("Shutdown", "max"), ("Slowdown", "slow")):
        value = re.search(rf"GPU {label} (?:T\.Limit )?Temp\s+: (.*)", text)
        assert value and re.search(rf"<gpu_temp_{tag}(_tlimit)?_threshold>{value.group(1)}<", xml)


# ---------------------------------------------------------------- --query-gpu (row 11)

ROW_11_FIELDS = (
    "retired_pages.pending,clocks_event_reasons.hw_thermal_slowdown,reset_status.reset_required,"
    "clocks.applications.graphics,clocks.default_applications.graphics,clocks.default_applications.memory,"
    "clocks.video,power.draw.average,power.management,inforom.img,accounting.mode,display_active,"
    "ecc.errors.corrected.volatile.dram,ecc.errors.uncorrected.aggregate.dram,utilization.encoder,gom.current,"
    "driver_model.current"
)


def test_query_gpu_accepts_the_fields_of_help_query_gpu() -> None:
    out = smi(on_driver("hgx-h100"), f"--query-gpu={ROW_11_FIELDS}", "--format=csv", "-i", "0")
    assert out.exit_code == 0, out.stdout
    header, row = out.stdout.splitlines()
    assert len(header.split(", ")) == len(row.split(", ")) == len(ROW_11_FIELDS.split(","))
    assert "clocks.video [MHz]" in header and "power.draw.average [W]" in header
    bad = smi(on_driver("hgx-h100"), "--query-gpu=bogus.field", "--format=csv")
    real = read_corpus("nvidia_smi_cli/01_595.91.07_rtx_pro_6000_version_pmon_dmon.txt")  # bogus field: rc 2 there
    assert (bad.exit_code, bad.stdout) == (2, 'Field "bogus.field" is not a valid field to query.\n\n')
    assert "--version" in real


# ---------------------------------------------------------------- -pm (row 12)


def test_pm_with_persistenced_stopped_enables_legacy_persistence_mode() -> None:
    state = on_driver("hgx-h100")
    state.gpus[0].persistence_mode = False
    state.services["nvidia-persistenced.service"].active_state = "inactive"
    out = smi(state, "-i", "0", "-pm", "1")
    assert out.stdout == "Enabled Legacy persistence mode for GPU 00000000:18:00.0.\nAll done.\n"


# ---------------------------------------------------------------- CLI (row 16)


def test_version_has_the_lines_of_the_capture() -> None:
    out = smi(on_driver("hgx-h100"), "--version")
    real = read_corpus("nvidia_smi_cli/01_595.91.07_rtx_pro_6000_version_pmon_dmon.txt").splitlines()
    start = real.index("NVIDIA-SMI version  : 595.91.07")
    assert [re.sub(r"[\d.]+$", "V", line) for line in out.stdout.splitlines()] == [
        re.sub(r"[\d.]+$", "V", line) for line in real[start : start + 4]
    ]


def test_dmon_with_a_count_prints_the_header_and_that_many_samples() -> None:
    out = smi(on_driver("hgx-h100"), "dmon", "-c", "2", "-i", "0")
    real = read_corpus("nvidia_smi_cli/02_dmon_default_lgc_pl_rtx3080.txt").splitlines()
    lines = out.stdout.splitlines()
    assert lines[:2] == real[2:4]
    assert len(lines) == 4 and all(re.fullmatch(r"( +[-\d]+){12} ", line) for line in lines[2:])


def test_pmon_with_a_count_has_the_captures_columns() -> None:
    out = smi(on_driver("hgx-h100"), "pmon", "-c", "1", "-i", "0")
    real = read_corpus("nvidia_smi_cli/01_595.91.07_rtx_pro_6000_version_pmon_dmon.txt").splitlines()
    head = next(i for i, line in enumerate(real) if line.startswith("# gpu         pid"))
    drop = re.compile(r" +fb +ccpm| +MB +MB")  # the capture asked for -s um (memory columns too)
    assert out.stdout.splitlines()[:2] == [drop.sub("", real[head]), drop.sub("", real[head + 1])]


def test_power_limit_is_set_within_min_and_max_as_root_only() -> None:
    state = on_driver("hgx-h100")
    out = smi(state, "-i", "0", "-pl", "400")
    real = read_corpus("nvidia_smi_cli/02_dmon_default_lgc_pl_rtx3080.txt")
    assert out.stdout == "Power limit for GPU 00000000:18:00.0 was set to 400.00 W from 700.00 W.\nAll done.\n"
    assert re.search(r"Power limit for GPU \S+ was set to [\d.]+ W from [\d.]+ W\.", real)
    assert state.gpus[0].power_limit_w == 400.0
    assert "400.00 W" in smi(state, "-q", "-d", "POWER", "-i", "0").stdout
    assert smi(state, "-i", "0", "-pl", "900").exit_code != 0
    assert smi(on_driver("hgx-h100"), "-pl", "400", euid=1000).exit_code == 4


@pytest.mark.parametrize(
    ("args", "want"),
    [
        (["-lgc", "1500"], 'GPU clocks set to "(gpuClkMin 1500, gpuClkMax 1500)" for GPU 00000000:18:00.0'),
        (["-rgc"], "All done."),
        (["-ac", "2619,1980"], 'Applications clocks set to "(MEM 2619, SM 1980)" for GPU 00000000:18:00.0'),
        (["-rac"], "All done."),
        (["-am", "1"], "Enabled Accounting Mode for GPU 00000000:18:00.0."),
        (["-c", "3"], "Set compute mode to EXCLUSIVE_PROCESS for GPU 00000000:18:00.0."),
        (["-B"], ""),
        (["--help-query-gpu"], 'List of valid properties to query for the switch "--query-gpu=":'),
        (["--query-supported-clocks=mem,gr", "--format=csv"], "memory [MHz], graphics [MHz]"),
        (["--query-retired-pages=gpu_uuid,retired_pages.address", "--format=csv"], "gpu_uuid, retired_pages.address"),
        (["--query-accounted-apps=gpu_name,pid", "--format=csv"], "gpu_name, pid"),
    ],
)
def test_the_other_commands_of_nvidia_smi_h_are_accepted(args: list[str], want: str) -> None:
    out = smi(on_driver("hgx-h100"), "-i", "0", *args) if args[0] != "-B" else smi(on_driver("hgx-h100"), *args)
    assert out.exit_code == 0, out.stdout
    assert (out.stdout.splitlines() or [""])[0] == want


def test_conf_compute_and_drain_answer() -> None:
    assert smi(on_driver("hgx-h100"), "conf-compute", "-f").stdout == "CC status: OFF\n"
    out = smi(on_driver("hgx-h100"), "drain", "-p", "00000000:18:00.0", "-q")
    assert out.exit_code == 0 and "not draining" in out.stdout


def test_loop_without_a_count_runs_until_sigint_and_exits_0(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    save_state(load_fixture("hgx-h100"), state)
    env = {**os.environ, "GPULAB_SIM_STATE": str(state)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "assessor.sim.shim", "nvidia-smi", "dmon", "-i", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a pytest-xdist worker ignores SIGINT, and an ignored signal stays ignored in a child
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("# gpu")
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
