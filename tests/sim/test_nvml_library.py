"""gpulab's libnvidia-ml.so.1 under programs nobody here wrote: gpustat, nvitop, py3nvml, pynvml_utils, C.

The Python tools run from virtual environments where gpulab is NOT installed (``.tools/nvml12`` and
``.tools/nvml13``, made by ``scripts/setup.sh``: nvidia-ml-py 12.535 and 13.x), so only the library answers
them. Every figure they print is compared with the simulated ``nvidia-smi`` on the same node. The C program is
compiled against ``nvml.h`` of NVIDIA's ``nvidia-nvml-dev`` package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assessor.sim.faults import CONDITIONS, FAULTS
from assessor.sim.node_init import init_node
from assessor.sim.nvml_lib.build import LIBRARY, BuildError, _compiler, write_library
from assessor.sim.nvml_lib.exports import EXPORTS
from assessor.sim.nvml_lib.serve import answer, node_nvml
from assessor.sim.state import load_state, save_state
from assessor.sim.tools import Session, run_tool
from tests.support.corpus import ROOT
from tests.support.nodeshell import NodeShell

TOOLS = ROOT / ".tools"
PROGRAM = Path(__file__).parent / "nvml_programs" / "mig_lifecycle.c"
VENVS = ["nvml12", "nvml13"]


def _venv(name: str) -> Path:
    venv = TOOLS / name
    if not (venv / ".complete").exists():
        pytest.fail(f"{venv} is missing: run scripts/setup.sh (it installs the third-party NVML programs)")
    return venv


def _site(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def smi(state: Path, *argv: str) -> str:
    done = run_tool(["nvidia-smi", *argv], Session(path=state, env={}))
    assert done.exit_code == 0, done.stderr
    return done.stdout


def smi_rows(state: Path, query: str) -> list[list[str]]:
    text = smi(state, f"--query-gpu={query}", "--format=csv,noheader,nounits")
    return [[cell.strip() for cell in line.split(",")] for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("nvmllib")
    done = subprocess.run(
        [sys.executable, "-m", "assessor.cli", "sim", "nvml-lib", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"LD_LIBRARY_PATH={folder}" in done.stdout
    return folder


@pytest.fixture(scope="module")
def busy_node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An 8-GPU H100 node: MIG on GPU 0 with two GPU instances, a 30 GiB job on GPU 1, ECC errors on GPU 3."""
    state = tmp_path_factory.mktemp("busy") / "node.json"
    init_node("hgx-h100", state, host="nvml-node")
    node = load_state(state)
    CONDITIONS["gpu-job"].apply(node, gpu=1)
    FAULTS["ecc-uncorrectable"].apply(node, gpu=3, count=4)
    save_state(node, state)
    smi(state, "-i", "0", "-mig", "1")  # Hopper switches at once
    smi(state, "mig", "-i", "0", "-cgi", "9,19", "-C")
    return state


def tool_env(library: Path, state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULAB_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(LD_LIBRARY_PATH=str(library), GPULAB_SIM_STATE=str(state), PYTHONWARNINGS="ignore")
    return env


def run(argv: list[str], env: dict[str, str], timeout: float = 60) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    assert done.returncode == 0, f"{argv}: {done.stderr[-3000:]}"
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    return done.stdout


def test_the_library_exports_every_function_of_its_table_and_nothing_calls_the_host(library: Path) -> None:
    nm = shutil.which("nm")
    if nm is None:
        pytest.fail("nm (binutils) is missing: scripts/setup.sh installs gcc, which brings it")
    out = subprocess.run([nm, "-D", "--defined-only", str(library / LIBRARY)], capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if " T " in line}
    assert set(EXPORTS) | {"nvmlErrorString"} == exported
    assert (library / "libnvidia-ml.so").resolve() == (library / LIBRARY).resolve()


@pytest.mark.parametrize("venv_name", VENVS)
def test_gpustat_json_agrees_with_nvidia_smi(venv_name: str, library: Path, busy_node: Path) -> None:
    venv = _venv(venv_name)
    assert not list(_site(venv).glob("assessor*")), "gpulab must not be installed where the tools run"
    report = json.loads(run([str(venv / "bin" / "gpustat"), "--json"], tool_env(library, busy_node)))
    rows = smi_rows(busy_node, "index,name,memory.total,memory.used,temperature.gpu,utilization.gpu,uuid")
    assert len(report["gpus"]) == len(rows) == 8
    for gpu, row in zip(report["gpus"], rows, strict=True):
        index, name, total, used, temperature, util, uuid = row
        assert (gpu["index"], gpu["name"], gpu["uuid"]) == (int(index), name, uuid)
        assert (gpu["memory.total"], gpu["memory.used"]) == (int(total), int(used))
        assert gpu["temperature.gpu"] == int(temperature)
        assert gpu["utilization.gpu"] == (None if util == "[N/A]" else int(util))
    # the job keeps GPU 1 busy, as nvidia-smi says; its PID is the node's, not a process of this host
    assert report["gpus"][1]["utilization.gpu"] == 100 and report["gpus"][2]["utilization.gpu"] == 0


def test_nvitop_shows_memory_temperature_and_the_job_without_a_traceback(library: Path, busy_node: Path) -> None:
    out = run([str(_venv("nvml12") / "bin" / "nvitop"), "-1"], tool_env(library, busy_node))
    apps = smi(busy_node, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
    pid, used = (cell.strip() for cell in apps.splitlines()[0].split(","))
    assert f"{int(used) // 1024}.00GiB" in out and pid in out
    assert "N/A / N/A" not in out and "ERROR" not in out
    assert "H100 80GB HBM3" in out and "MIG" in out


def test_nvitop_device_api_agrees_with_nvidia_smi(library: Path, busy_node: Path) -> None:
    code = (
        "import json\n"
        "from nvitop import Device\n"
        "out = []\n"
        "for d in Device.all():\n"
        "    procs = {p: q.gpu_memory() for p, q in d.processes().items()}\n"
        "    out.append([d.index, d.name(), d.memory_total() // 2**20, d.temperature(), d.is_mig_mode_enabled(),\n"
        "                {str(k): v // 2**20 for k, v in procs.items()}, len(d.mig_devices())])\n"
        "print(json.dumps(out))\n"
    )
    seen = json.loads(run([str(_venv("nvml13") / "bin" / "python"), "-c", code], tool_env(library, busy_node)))
    rows = smi_rows(busy_node, "index,name,memory.total,temperature.gpu,mig.mode.current")
    apps = smi(busy_node, "--query-compute-apps=pid,used_memory,gpu_bus_id", "--format=csv,noheader,nounits")
    pid, used, _ = (cell.strip() for cell in apps.splitlines()[0].split(","))
    gis = [line for line in smi(busy_node, "mig", "-lgi").splitlines() if "MIG " in line]
    for (index, name, total, temp, mig_on, procs, mig_devices), row in zip(seen, rows, strict=True):
        assert [str(index), name, str(total), str(temp)] == row[:4]
        assert mig_on == (row[4] == "Enabled")
        assert mig_devices == (len(gis) if index == 0 else 0)
        assert procs == ({pid: int(used)} if index == 1 else {})


@pytest.mark.parametrize("venv_name", VENVS)
def test_py3nvml_loads_the_library_itself_and_agrees(venv_name: str, library: Path, busy_node: Path) -> None:
    code = (
        "from py3nvml import py3nvml as n\n"
        "n.nvmlInit()\n"
        "for i in range(n.nvmlDeviceGetCount()):\n"
        "    h = n.nvmlDeviceGetHandleByIndex(i)\n"
        "    m = n.nvmlDeviceGetMemoryInfo(h)\n"
        "    print(i, n.nvmlDeviceGetName(h), m.total // 2**20, n.nvmlDeviceGetTemperature(h, 0),\n"
        "          n.nvmlDeviceGetTotalEccErrors(h, 1, 0), len(n.nvmlDeviceGetComputeRunningProcesses(h)))\n"
        "n.nvmlShutdown()\n"
    )
    lines = run([str(_venv(venv_name) / "bin" / "python"), "-c", code], tool_env(library, busy_node)).splitlines()
    rows = smi_rows(busy_node, "index,name,memory.total,temperature.gpu,ecc.errors.uncorrected.volatile.total")
    assert len(lines) == 8
    for line, (index, name, total, temp, ecc) in zip(lines, rows, strict=True):
        assert line.startswith(f"{index} {name} {total} {temp} ")
        expected_ecc = "0" if ecc in ("[N/A]", "N/A") else ecc  # GPU 0 is in MIG mode: counts are per instance
        assert line.split()[-2:] == [expected_ecc, "1" if index == "1" else "0"]


def test_pynvml_utils_device_query_agrees(library: Path, busy_node: Path) -> None:
    # DeviceQuery() with no filter raises KeyError on any current data-centre GPU, real ones included: its brand
    # table stops before NVML_BRAND_NVIDIA (14), what an A100 or H100 reports. Query the fields by name instead.
    code = (
        "import json\n"
        "from pynvml_utils import nvidia_smi\n"
        "q = nvidia_smi.getInstance().DeviceQuery('memory.total,temperature.gpu,uuid,pci.bus_id,count')\n"
        "print(json.dumps(q))\n"
    )
    query = json.loads(run([str(_venv("nvml13") / "bin" / "python"), "-c", code], tool_env(library, busy_node)))
    rows = smi_rows(busy_node, "uuid,memory.total,temperature.gpu,pci.bus_id")
    assert query["count"] == 8
    for gpu, (uuid, total, temp, bus) in zip(query["gpu"], rows, strict=True):
        assert gpu["uuid"] == uuid and gpu["id"] == bus
        assert gpu["fb_memory_usage"]["total"] == float(total)
        assert gpu["temperature"]["gpu_temp"] == int(temp)


def _gi_ids(table: str) -> set[str]:
    """The GPU instance ids of a ``mig -lgi`` or ``-lci`` table (its GPU, name, profile id, instance id...)."""
    ids = set()
    for line in table.splitlines():
        cells = line.strip("| ").split()
        if len(cells) >= 6 and cells[0].isdigit() and cells[1] == "MIG":  # -lgi: GPU, MIG, name, profile, id
            ids.add(cells[4])
        elif len(cells) >= 6 and cells[0].isdigit() and cells[2] == "MIG":  # -lci: GPU, GI id, MIG, name...
            ids.add(cells[1])
    return ids


def _compile(tmp: Path, library: Path) -> Path:
    import nvidia

    headers = [Path(p) for base in nvidia.__path__ for p in Path(base).glob("*/include/nvml.h")]
    assert headers, "nvml.h is missing: scripts/setup.sh installs nvidia-nvml-dev"
    binary = tmp / "mig_lifecycle"
    cc = _compiler()
    argv = [cc, "-Wno-deprecated-declarations", f"-I{headers[0].parent}", "-o", str(binary), str(PROGRAM)]
    done = subprocess.run([*argv, f"-L{library}", "-lnvidia-ml"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return binary


@pytest.fixture(scope="module")
def c_program(tmp_path_factory: pytest.TempPathFactory, library: Path) -> Path:
    return _compile(tmp_path_factory.mktemp("cprog"), library)


def test_a_c_program_creates_mig_instances_that_nvidia_smi_shows_and_reads_back_those_it_made(
    c_program: Path, library: Path, tmp_path: Path
) -> None:
    state = tmp_path / "node.json"
    init_node("hgx-h100", state, host="c-node")
    env = tool_env(library, state)
    out = run([str(c_program), "create"], env)
    assert "count 8" in out and "mig current=1 pending=1" in out
    created = next(line for line in out.splitlines() if line.startswith("created gi"))
    gi_id = created.split("id=")[1].split()[0]
    assert gi_id in _gi_ids(smi(state, "mig", "-lgi"))
    assert gi_id in _gi_ids(smi(state, "mig", "-lci"))
    # one made by nvidia-smi shows through the library
    before = _gi_ids(smi(state, "mig", "-lgi"))
    smi(state, "mig", "-i", "0", "-cgi", "19")
    made = _gi_ids(smi(state, "mig", "-lgi")) - before
    readback = run([str(c_program)], env)
    found = {line.split("id=")[1].split()[0] for line in readback.splitlines() if line.startswith("gi id=")}
    assert len(made) == 1 and found == before | made
    for line in out.splitlines():
        if line.startswith("gpu "):
            index = int(line.split()[1])
            name = line.split("name=")[1].split(" uuid=")[0]
            assert name == smi_rows(state, "name")[index][0]


def test_a_c_program_inside_the_node_loads_the_library_at_its_real_path(c_program: Path, tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    init_node("dgx-a100", state, host="c-inside")
    node = load_state(state)
    CONDITIONS["gpu-job"].apply(node, gpu=2)
    save_state(node, state)
    shell = NodeShell(state)
    try:
        with c_program.open("rb") as binary:
            done = subprocess.run(
                [*shell_argv(state), "cat > /tmp/p && chmod +x /tmp/p && /tmp/p && pgrep -f gpulab/jobs"],
                stdin=binary,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        assert done.returncode == 0, done.stderr
        procs = [line for line in done.stdout.splitlines() if line.startswith("process ")]
        running = done.stdout.strip().splitlines()[-1]  # the job, a real process of the node
        assert procs == [f"process gpu=2 pid={running} mib=30720 name=python3"]
    finally:
        shell.stop()


def shell_argv(state: Path) -> list[str]:
    return [sys.executable, "-m", "assessor.cli", "sim", "shell", str(state), "--", "bash", "-c"]


def test_nvml_answers_from_the_node_s_own_processes_inside_it(tmp_path: Path) -> None:
    """gpustat inside the node names the job, a real process there (PID, command, memory as nvidia-smi)."""
    state = tmp_path / "node.json"
    init_node("hgx-h100", state, host="gpustat-node")
    node = load_state(state)
    CONDITIONS["gpu-job"].apply(node, gpu=5)
    save_state(node, state)
    tools = state.with_name(state.name + ".d") / "opt" / "tools"
    shutil.copytree(_site(_venv("nvml13")), tools, symlinks=True)
    shell = NodeShell(state)
    try:
        out = shell.out("PYTHONPATH=/opt/tools PYTHONWARNINGS=ignore python3 -m gpustat --json")
        table = shell.out("nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits")
    finally:
        shell.stop()
    pid, used = (int(cell) for cell in table.strip().split(","))
    procs = json.loads(out)["gpus"][5]["processes"]
    assert [(p["pid"], p["gpu_memory_usage"]) for p in procs] == [(pid, used)]


def test_gpu_instances_and_processes_follow_nvidia_smi_within_one_nvml_session(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    init_node("hgx-h100", state, host="live")
    nvml = node_nvml(str(state), 0)
    assert answer(nvml, b"nvmlInit_v2\n") == b"0\n"
    assert answer(nvml, b"nvmlDeviceGetHandleByIndex_v2 0 1\n").startswith(b"0 ")
    reply = answer(nvml, b"nvmlDeviceGetHandleByIndex_v2 0 1\n").split()
    handle = int.from_bytes(bytes.fromhex(reply[1].decode()), "little")
    mode = answer(nvml, f"nvmlDeviceGetMigMode {handle} 1 1\n".encode()).split()
    assert mode == [b"0", b"00000000", b"00000000"]
    smi(state, "-i", "0", "-mig", "1")
    mode = answer(nvml, f"nvmlDeviceGetMigMode {handle} 1 1\n".encode()).split()
    assert mode == [b"0", b"01000000", b"01000000"]


@pytest.mark.parametrize(
    "line",
    [
        b"\n",
        b"nvmlNoSuchFunction 1 2\n",
        b"nvmlDeviceGetName\n",
        b"nvmlDeviceGetName zz 1 64\n",
        b"nvmlDeviceGetName 1 1 -5\n",
        b"nvmlDeviceGetHandleByUUID 4g 1\n",
        b"nvmlDeviceGetFieldValues 1 3 00\n",
        b"\xff\xfe garbage \x00\n",
    ],
)
def test_a_malformed_request_is_an_nvml_error_and_the_server_goes_on(line: bytes, tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    init_node("hgx-h100", state, host="hostile")
    nvml = node_nvml(str(state), 0)
    answer(nvml, b"nvmlInit_v2\n")
    code = int(answer(nvml, line).split()[0])
    assert code in (1, 2, 13, 999) and code != 0
    assert answer(nvml, b"nvmlDeviceGetCount_v2 1\n") == b"0 08000000\n"


def test_a_missing_node_is_driver_not_loaded(tmp_path: Path) -> None:
    nvml = node_nvml(str(tmp_path / "absent.json"), 0)
    assert answer(nvml, b"nvmlInit_v2\n") == b"9\n"  # NVML_ERROR_DRIVER_NOT_LOADED


def test_no_compiler_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(BuildError, match="no C compiler was found: install one"):
        _compiler()


def test_write_library_replaces_an_older_copy(tmp_path: Path) -> None:
    (tmp_path / LIBRARY).write_text("old")
    copy = write_library(tmp_path)
    assert copy.read_bytes()[:4] == b"\x7fELF"


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    init_node("hgx-h100", a, host="a")
    init_node("pcie-l40s" if "pcie-l40s" in _fixtures() else "dgx-a100", b, host="b")
    yield a, b


def _fixtures() -> list[str]:
    from assessor.sim.fixtures import fixture_names

    return list(fixture_names())


def test_one_process_follows_gpulab_sim_state_to_another_node_at_nvml_init(
    library: Path, two_nodes: tuple[Path, Path]
) -> None:
    a, b = two_nodes
    code = (
        "import os, pynvml\n"
        f"for path in ({str(a)!r}, {str(b)!r}):\n"
        "    os.environ['GPULAB_SIM_STATE'] = path\n"
        "    pynvml.nvmlInit()\n"
        "    print(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0)))\n"
        "    pynvml.nvmlShutdown()\n"
    )
    names = run([str(_venv("nvml13") / "bin" / "python"), "-c", code], tool_env(library, a)).splitlines()
    assert names == [smi_rows(a, "name")[0][0], smi_rows(b, "name")[0][0]]
    assert names[0] != names[1]
