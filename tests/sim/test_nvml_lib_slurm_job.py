"""gpulab's libnvidia-ml.so.1 inside a Slurm job sees only the job's GPUs, numbered from 0, as nvidia-smi does.

The library sends the job variables of its process (``gpulabJob``, before each ``nvmlInit``) and the server
answers through the job's view of the node. Tested in-process on the server (the view, a change made inside a
job, hostile job requests), with the real library outside a node (its server started by the library, the
process's job changing between two ``nvmlInit``), and once inside a running Slurm node: ``srun --gres=gpu:2``
of a program on the library sees the two GPUs the simulated ``nvidia-smi`` of the same step lists.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assessor.sim import faults
from assessor.sim.mock_nvml import MockNvml
from assessor.sim.node_init import init_node
from assessor.sim.nvml_lib.build import ensure_library
from assessor.sim.nvml_lib.serve import answer, node_nvml
from assessor.sim.slurm_node import missing_binaries
from assessor.sim.state import load_state
from assessor.sim.tools import Session, run_tool
from tests.support.nodeshell import NodeShell, node_shell

INVALID_ARGUMENT = b"2\n"
JOB = {"SLURM_JOB_ID": "7", "SLURM_STEP_GPUS": "2,5"}

# A program on the library through ctypes, as pynvml loads it: for each argument, the SLURM_STEP_GPUS of an
# nvmlInit ("-": no job at all), or with no argument the environment as it is. Prints "index minor uuid" per GPU
# and a line "--" after each nvmlInit's list.
PROGRAM = """\
import ctypes, os, sys

lib = ctypes.CDLL(os.environ.get("NVML_LIBRARY", "libnvidia-ml.so.1"))


def check(rc):
    if rc:
        sys.exit(f"NVML error {rc}")


for step in sys.argv[1:] or [None]:
    if step == "-":
        for name in ("SLURM_JOB_ID", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS"):
            os.environ.pop(name, None)
    elif step is not None:
        os.environ.update(SLURM_JOB_ID="7", SLURM_STEP_GPUS=step)
    check(lib.nvmlInit_v2())
    count = ctypes.c_uint()
    check(lib.nvmlDeviceGetCount_v2(ctypes.byref(count)))
    for i in range(count.value):
        handle = ctypes.c_void_p()
        check(lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)))
        uuid = ctypes.create_string_buffer(96)
        check(lib.nvmlDeviceGetUUID(handle, uuid, 96))
        minor = ctypes.c_uint()
        check(lib.nvmlDeviceGetMinorNumber(handle, ctypes.byref(minor)))
        print(i, minor.value, uuid.value.decode())
    print("--")
    check(lib.nvmlShutdown())
"""


def _hex(text: str) -> str:
    return text.encode().hex()


def job_request(env: dict[str, str]) -> bytes:
    return " ".join(["gpulabJob", *(_hex(f"{k}={v}") for k, v in env.items())]).encode() + b"\n"


def _value(reply: bytes) -> int:
    code, token = reply.split()
    assert code == b"0", reply
    return int.from_bytes(bytes.fromhex(token.decode()), "little")


def handle(nvml: MockNvml, index: int) -> int:
    return _value(answer(nvml, f"nvmlDeviceGetHandleByIndex_v2 {index} 1\n".encode()))


def uuid(nvml: MockNvml, device: int) -> str:
    code, token = answer(nvml, f"nvmlDeviceGetUUID {device} 1 96\n".encode()).split()
    assert code == b"0"
    return bytes.fromhex(token.decode()).rstrip(b"\0").decode()


def smi_uuids(state: Path, env: dict[str, str]) -> list[str]:
    done = run_tool(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"], Session(path=state, env=env))
    assert done.exit_code == 0, done.stderr
    return done.stdout.split()


@pytest.fixture
def node(tmp_path: Path) -> Path:
    state = tmp_path / "node.json"
    init_node("hgx-h100", state, host="job-node")
    return state


def test_the_server_answers_through_the_jobs_view_as_nvidia_smi_does(node: Path) -> None:
    nvml = node_nvml(str(node), 0)
    assert answer(nvml, job_request(JOB)) == b"0\n"
    assert answer(nvml, b"nvmlInit_v2\n") == b"0\n"
    assert _value(answer(nvml, b"nvmlDeviceGetCount_v2 1\n")) == 2
    devices = [handle(nvml, 0), handle(nvml, 1)]
    assert [_value(answer(nvml, f"nvmlDeviceGetMinorNumber {d} 1\n".encode())) for d in devices] == [2, 5]
    assert [_value(answer(nvml, f"nvmlDeviceGetIndex {d} 1\n".encode())) for d in devices] == [0, 1]
    physical = load_state(node).gpus
    assert [uuid(nvml, d) for d in devices] == [physical[2].uuid, physical[5].uuid] == smi_uuids(node, JOB)
    assert answer(nvml, b"nvmlDeviceGetHandleByIndex_v2 2 1\n").split()[0] == b"2"  # no third GPU in the job
    # the program's next nvmlInit outside the job sees the whole node again
    assert answer(nvml, b"nvmlShutdown\n") == b"0\n"
    assert answer(nvml, job_request({})) == b"0\n"
    assert answer(nvml, b"nvmlInit_v2\n") == b"0\n"
    assert _value(answer(nvml, b"nvmlDeviceGetCount_v2 1\n")) == 8


def smi(state: Path, *argv: str) -> None:
    done = run_tool(["nvidia-smi", *argv], Session(path=state, env={}))
    assert done.exit_code == 0, done.stderr


def test_a_change_made_inside_the_job_lands_on_the_physical_gpu(node: Path) -> None:
    smi(node, "-i", "5", "-mig", "1")  # GPU 5 split by the admin: its instances are no device of the job
    smi(node, "mig", "-i", "5", "-cgi", "9,19", "-C")
    nvml = node_nvml(str(node), 0)
    answer(nvml, job_request({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "2,5"}))  # a batch script's variable
    answer(nvml, b"nvmlInit_v2\n")
    second = handle(nvml, 1)
    assert answer(nvml, f"nvmlDeviceSetPersistenceMode {second} 0\n".encode()) == b"0\n"
    assert [g.persistence_mode for g in load_state(node).gpus] == [True] * 5 + [False] + [True] * 2
    assert len(load_state(node).gpus[5].mig_instances) == 2  # the rest of the GPU is as it was
    assert _value(answer(nvml, f"nvmlDeviceGetPersistenceMode {second} 1\n".encode())) == 0
    assert _value(answer(nvml, b"nvmlDeviceGetCount_v2 1\n")) == 2  # still the job's view after the write
    assert [g.index for g in load_state(node).gpus] == list(range(8))  # the node's own numbering is kept


@pytest.mark.parametrize(
    "line",
    [
        job_request({"LD_PRELOAD": "/tmp/x.so"}),  # not a job variable
        job_request({"SLURM_STEP_GPUS": "²"}),  # a digit to str.isdigit, not to int(): not ASCII
        job_request({"SLURM_STEP_GPUS": "1\t2"}),  # not printable
        job_request({"SLURM_STEP_GPUS": "0," * 3000}),  # past the size limit
        b"gpulabJob " + _hex("SLURM_JOB_ID=1").encode() + b" " + _hex("SLURM_JOB_ID=2").encode() + b"\n",
        b"gpulabJob " + b" ".join([_hex("SLURM_JOB_ID=1").encode()] * 4) + b"\n",  # more than there are
        b"gpulabJob zz\n",
        b"gpulabJob x\n",
        b"gpulabJob " + _hex("SLURM_JOB_ID").encode() + b"\n",  # no '='
        b"gpulabJob \xff\xfe\n",
    ],
)
def test_a_malformed_job_request_is_an_error_and_the_job_stays_as_it_was(line: bytes, node: Path) -> None:
    nvml = node_nvml(str(node), 0)
    answer(nvml, job_request(JOB))
    answer(nvml, b"nvmlInit_v2\n")
    assert answer(nvml, line) == INVALID_ARGUMENT
    assert _value(answer(nvml, b"nvmlDeviceGetCount_v2 1\n")) == 2


def test_a_server_without_jobs_refuses_the_job_request(node: Path) -> None:
    assert answer(MockNvml(path=node), job_request(JOB)) == INVALID_ARGUMENT


def _blocks(out: str) -> list[list[tuple[int, int, str]]]:
    blocks: list[list[tuple[int, int, str]]] = [[]]
    for line in out.splitlines():
        if line == "--":
            blocks.append([])
        else:
            index, minor, gpu = line.split()
            blocks[-1].append((int(index), int(minor), gpu))
    return blocks[:-1]


def test_the_library_sends_the_job_of_its_process_at_each_nvml_init(node: Path, tmp_path: Path) -> None:
    """Outside a node (the server the library starts): the job is read from the environment at each nvmlInit."""
    program = tmp_path / "job_gpus.py"
    program.write_text(PROGRAM, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULAB_", "SLURM_"))}
    env.update(GPULAB_SIM_STATE=str(node), NVML_LIBRARY=str(ensure_library()))
    done = subprocess.run(
        [sys.executable, str(program), "3,1", "-", "6"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    uuids = [g.uuid for g in load_state(node).gpus]
    in_job, whole, other_job = _blocks(done.stdout)
    assert in_job == [(0, 1, uuids[1]), (1, 3, uuids[3])]  # numbered from 0 in the node's order, as nvidia-smi
    assert [gpu for _, _, gpu in whole] == uuids
    assert other_job == [(0, 6, uuids[6])]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeShell]:
    missing = missing_binaries()
    if missing:
        pytest.skip(f"Slurm is not installed here (missing: {', '.join(missing)})")
    with node_shell(tmp_path_factory.mktemp("slurm-nvml")) as shell:
        faults.inject(shell.state, "slurm")
        program = shell.state.with_name(shell.state.name + ".d") / "opt" / "h1" / "job_gpus.py"
        program.parent.mkdir(parents=True)
        program.write_text(PROGRAM, encoding="utf-8")
        shell.out("sleep 2")  # boots the node; its slurmd registers
        yield shell


def test_a_program_on_the_library_inside_srun_sees_the_jobs_two_gpus(cluster: NodeShell) -> None:
    step = cluster.out(
        "srun --gres=gpu:2 bash -c 'nvidia-smi --query-gpu=uuid --format=csv,noheader; python3 /opt/h1/job_gpus.py'"
    ).splitlines()
    smi, nvml = step[:2], _blocks("\n".join(step[2:]))
    assert len(nvml) == 1 and [index for index, _, _ in nvml[0]] == [0, 1], step
    assert [gpu for _, _, gpu in nvml[0]] == smi
    whole = _blocks(cluster.out("python3 /opt/h1/job_gpus.py"))  # the login, outside any job: the whole node
    assert len(whole[0]) == 8
