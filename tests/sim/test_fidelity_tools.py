"""Golden tests: the simulator's tools give the structure of real captures (issue #23, audit rows 13-29).

Each test compares the simulator's output with a real capture in tests/data/corpus (its source in SOURCES.md):
lines, their order and format, never the node-specific values (bus ids, UUIDs, ports, numbers).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import ROOT, read_corpus


def run(state: NodeState, *argv: str, code: int = 0) -> str:
    result = run_tool(list(argv), Session(state=state))
    assert result.exit_code == code, result.stdout + result.stderr
    return result.stdout


def on_driver(fixture: str, version: str) -> NodeState:
    state = load_fixture(fixture)
    state.driver.version = state.driver.kernel_module_version = version
    return state


def mask(line: str) -> str:
    """A line with the node-specific values masked: GPU names, UUIDs, bus ids, numbers."""
    line = re.sub(r"GPU-[0-9a-f-]{36}", "UUID", line)
    line = re.sub(r"(?<=GPU \d: )NVIDIA [^(]+(?= \()", "NAME ", line)
    line = re.sub(r"[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d", "BUSID", line)
    return re.sub(r"\d+", "9", line)


# ---------------------------------------------------------------- rows 17, 18: NVML through real pynvml


@pytest.fixture(scope="module")
def nvml_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("nvmllib")
    done = subprocess.run(
        [sys.executable, "-m", "assessor.cli", "sim", "nvml-lib", str(folder)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return folder


PROBE = """
import json, pynvml as n
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
ids = [n.NVML_FI_DEV_ECC_DBE_VOL_TOTAL, n.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, n.NVML_FI_DEV_NVLINK_LINK_COUNT]
out = {"fields": [[v.fieldId, v.nvmlReturn] for v in n.nvmlDeviceGetFieldValues(h, ids)]}
calls = {
    "energy": lambda: n.nvmlDeviceGetTotalEnergyConsumption(h),
    "app_clock": lambda: n.nvmlDeviceGetApplicationsClock(h, n.NVML_CLOCK_SM),
    "mem_errors": lambda: n.nvmlDeviceGetMemoryErrorCounter(h, 1, 1, n.NVML_MEMORY_LOCATION_DEVICE_MEMORY),
    "module_id": lambda: n.nvmlDeviceGetModuleId(h),
    "inforom": lambda: n.nvmlDeviceGetInforomImageVersion(h),
    "cores": lambda: n.nvmlDeviceGetNumGpuCores(h),
    "bus_width": lambda: n.nvmlDeviceGetMemoryBusWidth(h),
    "gsp_mode": lambda: n.nvmlDeviceGetGspFirmwareMode(h),
    "gsp_version": lambda: n.nvmlDeviceGetGspFirmwareVersion(h),
}
for key, call in calls.items():
    try:
        value = call()
        out[key] = value.decode() if isinstance(value, bytes) else value
    except n.NVMLError as exc:
        out[key] = "error " + str(exc)
print(json.dumps(out))
"""


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("hgx-h100", {"cores": 16896, "bus_width": 5120, "gsp_mode": [1, 1], "gsp_version": "565.57.01"}),
        ("a30", {"cores": 3584, "bus_width": 3072, "gsp_mode": [0, 0], "gsp_version": "error Not Supported"}),
    ],
)
def test_nvml_functions_of_550_drivers_answer_through_real_pynvml(
    fixture: str, expected: dict[str, object], nvml_library: Path, tmp_path: Path
) -> None:
    import json

    from assessor.sim.node_init import init_node

    venv = ROOT / ".tools" / "nvml13"
    if not (venv / ".complete").exists():
        pytest.fail(f"{venv} is missing: run scripts/setup.sh (it installs the third-party NVML programs)")
    state = tmp_path / "node.json"
    init_node(fixture, state, host="nvml-node")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULAB_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(LD_LIBRARY_PATH=str(nvml_library), GPULAB_SIM_STATE=str(state), PYTHONWARNINGS="ignore")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", PROBE], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    # no function is missing (FunctionNotFound reads as "driver too old" to every NVML program)
    assert not [k for k, v in seen.items() if "Function Not Found" in str(v)]
    ok, not_supported = 0, 3
    fields = dict(seen["fields"])
    assert fields[4] == ok  # NVML_FI_DEV_ECC_DBE_VOL_TOTAL: ECC is on
    assert fields[83] == ok  # NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION
    assert fields[91] == (ok if fixture == "hgx-h100" else not_supported)  # NVLink link count: HGX only
    assert isinstance(seen["energy"], int) and seen["energy"] > 0
    assert isinstance(seen["app_clock"], int) and seen["app_clock"] > 0
    assert seen["mem_errors"] == 0 and seen["module_id"] == 1
    assert re.fullmatch(r"G\d{3}\.\d{4}\.\d{2}\.\d{2}", seen["inforom"])
    for key, value in expected.items():
        assert seen[key] == value, key


# ---------------------------------------------------------------- rows 19, 20: nvidia-smi nvlink


def test_nvlink_R_names_the_remote_device_and_its_port_as_on_an_hgx_h100() -> None:
    real = read_corpus("nvidia_smi_nvlink/03_h100_sxm_nvlink_R_remote_nvswitch_port_excerpt.txt").splitlines()
    ours = run(load_fixture("hgx-h100"), "nvidia-smi", "nvlink", "-R", "-i", "0").splitlines()
    assert [mask(line) for line in ours] == [mask(line) for line in real]
    # the ports: 4 or 5 links per NVSwitch, no port used twice by GPU 0
    switches = [line.split("Remote Device ")[1].split(": Link")[0] for line in ours[1:]]
    assert sorted(switches.count(s) for s in set(switches)) == [4, 4, 5, 5]
    assert len({line.split("Remote Device ")[1] for line in ours[1:]}) == 18
    # -p: the far end's bus id only
    assert run(load_fixture("hgx-h100"), "nvidia-smi", "nvlink", "-p", "-i", "0").splitlines()[1].endswith(":00.0")


def test_nvlink_s_on_a_board_with_no_link_up_says_so_under_each_gpu() -> None:
    real = read_corpus("nvidia_smi_nvlink/04_a100_pcie_555_nvlink_s_all_links_inactive.txt").splitlines()
    ours = run(on_driver("h100-nvl", "555.42.02"), "nvidia-smi", "nvlink", "-s").splitlines()
    assert [mask(line) for line in ours[:2]] == [mask(line) for line in real[:2]]
    assert len(ours) == 8  # four GPUs, two lines each
    # a GPU without NVLink at all prints nothing before R595, a line of its own from R595 on
    assert run(load_fixture("pcie-l40s"), "nvidia-smi", "nvlink", "-s") == ""
    late = run(on_driver("pcie-l40s", "595.58.03"), "nvidia-smi", "nvlink", "-s").splitlines()
    assert late[1] == "Device does not have or support Nvlink"


# ---------------------------------------------------------------- rows 21-23: dcgmi


def test_dcgmi_4x_diag_has_the_4x_category_order_and_joins_device_ids_with_comma_space() -> None:
    real = read_corpus("dcgmi_diag/06_dcgm4.4.2_r2_single_gpu_4x_plugins.txt").splitlines()
    ours = run(load_fixture("hgx-h200"), "dcgmi", "diag", "-r", "2", "-i", "0").splitlines()
    assert [mask(line) for line in ours] == [mask(line) for line in real]
    rows = run(load_fixture("hgx-h200"), "dcgmi", "diag", "-r", "1").splitlines()
    ids = next(line for line in rows if "Device IDs" in line)
    assert ids == "| GPU Device IDs Detected   | 2335, 2335, 2335, 2335, 2335, 2335, 2335, 2335 |"
    assert len(ids) == len(real[1])
    old = next(line for line in run(load_fixture("hgx-h100"), "dcgmi", "diag", "-r", "1").splitlines() if "IDs" in line)
    assert "2330,2330," in old and len(old) == len(real[1])  # DCGM 3.3: a bare comma


def test_dcgmi_discovery_at_4_2_has_a_connectx_box_between_switches_and_cpus() -> None:
    ours = run(load_fixture("hgx-h200"), "dcgmi", "discovery", "-l").splitlines()
    at = ours.index("0 ConnectX found.")  # Hopper: the NSCQ switch module enumerates no ConnectX
    assert ours[at - 1] == "+-----------+" and ours[at + 1 : at + 5] == [
        "+----------+",
        "| ConnectX |",
        "+----------+",
        "+----------+",
    ]
    assert ours[at + 5] == "0 CPUs found."
    assert "ConnectX" not in run(load_fixture("hgx-h100"), "dcgmi", "discovery", "-l")  # DCGM 3.3.8


def test_dcgmi_group_l_lists_the_default_groups_as_a_real_host_engine() -> None:
    real = read_corpus("dcgmi_group/01_dcgmi_group_l_two_default_groups_8_gpus.txt")
    assert run(load_fixture("hgx-h100"), "dcgmi", "group", "-l") == real


def test_dcgmi_dmon_prints_the_header_then_one_row_per_gpu_per_sample() -> None:
    out = run(load_fixture("hgx-h100"), "dcgmi", "dmon", "-e", "150,155,203,1002", "-c", "3", "-i", "0,1")
    lines = out.splitlines()
    assert lines[0].split() == ["#Entity", "TMPTR", "POWER", "GPUTL", "SMACT"]
    assert lines[1].split() == ["ID", "C", "W"]
    assert lines[0].index("TMPTR") == 10 and lines[0].index("POWER") == 10 + 13  # 3.x: width + 6 + 2
    rows = lines[2:]
    assert len(rows) == 6 and [r.split()[:2] for r in rows[:2]] == [["GPU", "0"], ["GPU", "1"]]
    assert re.fullmatch(r"\d+\.\d{3}", rows[0].split()[3]) and re.fullmatch(r"\d\.\d{3}", rows[0].split()[5])
    state = load_fixture("hgx-h100")
    assert run(state, "dcgmi", "dmon", code=255).startswith("Either field group ID or a list of field IDs")
    assert run(state, "dcgmi", "stats", "-e") == "Successfully started process watches.\n"


# ---------------------------------------------------------------- row 24: nccl-tests 2.17+


def test_nccl_tests_print_the_2_17_header_and_domain_bus_ids_that_the_parser_reads() -> None:
    from assessor.parsers.nccl_tests import parse

    real = read_corpus("nccl_tests/09_all_reduce_2.17.6_1node_8xA100_new_header_domain_bus.txt").splitlines()
    ours = run(load_fixture("dgx-a100"), "all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "8").splitlines()

    def kind(line: str) -> str:
        return (
            re.sub(r"\d+", "9", re.sub(r" on +\S+ ", " on HOST ", line)).split("[")[0] if line.startswith("#") else ""
        )

    fixed = [kind(line) for line in real if line.startswith("#") and "nThread" not in line and "Rank" not in line]
    assert [
        kind(line) for line in ours if line.startswith("#") and "nThread" not in line and "Rank" not in line
    ] == fixed
    ranks = [line for line in ours if "Rank" in line]
    assert all(re.search(r" device +\d+ \[[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\] NVIDIA", r) for r in ranks)
    facts = parse("\n".join(ours)).nccl
    assert facts is not None and facts.tests_version == "2.17.6" and facts.test == "all_reduce_perf"
    assert [d.bus for d in facts.devices][:1] == ["0000:07:00"] and facts.rows
