"""The simulated container stack: nvidia-ctk's files, docker's daemon and how a container gets its GPUs.

Each case runs the simulated tools on a node with files of its own (as `gpulab sim init` makes it) and holds
what they print and write to the real outputs in the corpus (tests/data/corpus/{nvidia_ctk,docker_run,
cdi_spec}).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assessor.parsers import parse
from assessor.sim import containers as ctr
from assessor.sim import faults
from assessor.sim.config_root import populate, read_config, root_for_state, write_node_file
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import load_state, save_state
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.corpus import read_corpus


def node(tmp_path: Path, fixture: str, fault: str) -> Session:
    path = tmp_path / "node.json"
    state = load_fixture(fixture, host="ctr-node", in_use=True)
    save_state(state, path)
    populate(root_for_state(path), state)
    faults.inject(path, fault)
    return Session(path=path)


def sh(session: Session, line: str) -> ToolResult:
    return run_tool(line.split(), session)


def first_line(rel: str) -> str:
    return read_corpus(rel).splitlines()[0]


@pytest.fixture
def a100(tmp_path: Path) -> Session:
    return node(tmp_path, "dgx-a100", "docker-runtime-missing")


@pytest.fixture
def h100_stale(tmp_path: Path) -> Session:
    return node(tmp_path, "hgx-h100", "cdi-spec-stale")


def test_runtime_configure_writes_what_the_toolkit_writes() -> None:
    # from no file: the corpus's daemon.json byte for byte (Go's MarshalIndent: no newline at the end)
    assert ctr.configure_docker(None) == read_corpus("nvidia_ctk/02_runtime_configure_docker_daemon_json.txt").rstrip(
        "\n"
    )
    # other keys kept, keys sorted, the default runtime only when asked
    merged = json.loads(ctr.configure_docker('{"log-driver": "json-file", "data-root": "/data"}', default=True))
    assert merged == {
        "data-root": "/data",
        "default-runtime": "nvidia",
        "log-driver": "json-file",
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}},
    }
    with pytest.raises(ctr.ConfigError):
        ctr.configure_docker('{"log-driver": "json-file",}')


def test_gpus_need_the_toolkit_registered_at_the_daemons_start(a100: Session) -> None:
    before = sh(a100, "docker run --rm --gpus all ubuntu nvidia-smi -L")
    assert before.exit_code == 125
    assert before.stderr.splitlines()[0] == first_line("docker_run/01_gpus_without_toolkit_driver.txt")
    runtime = sh(a100, "docker run --rm --runtime=nvidia ubuntu nvidia-smi -L")
    assert runtime.stderr.splitlines()[0] == first_line("docker_run/02_unknown_runtime_nvidia.txt")

    configured = sh(a100, "nvidia-ctk runtime configure --runtime=docker")
    assert configured.exit_code == 0
    assert re.match(r"INFO\[0000\] Wrote updated config to /etc/docker/daemon\.json +\n", configured.stderr)
    site = json.loads(read_config(a100.root(), ctr.DAEMON_JSON) or "")
    assert site["log-opts"] == {"max-size": "100m"} and "nvidia" in site["runtimes"]
    # the file says nvidia; the running daemon does not know it yet
    assert sh(a100, "docker run --rm --runtime=nvidia --gpus all ubuntu nvidia-smi -L").exit_code == 125

    assert sh(a100, "systemctl restart docker").exit_code == 0
    listed = sh(a100, "docker run --rm --runtime=nvidia --gpus all ubuntu nvidia-smi -L")
    assert listed.exit_code == 0 and len(listed.stdout.splitlines()) == 8
    assert "Runtimes: io.containerd.runc.v2 nvidia runc" in sh(a100, "docker info").stdout
    # the NVIDIA runtime's own path: NVIDIA_VISIBLE_DEVICES, no --gpus
    legacy = sh(a100, "docker run --rm --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=2 ubuntu nvidia-smi -L")
    uuid = load_state(a100.path or Path()).gpu(2).uuid
    assert legacy.stdout.splitlines() == [f"GPU 0: NVIDIA A100-SXM4-40GB (UUID: {uuid})"]


def test_gpus_device_list_shows_those_gpus_numbered_from_zero(a100: Session) -> None:
    sh(a100, "systemctl restart docker")
    state = load_state(a100.path or Path())
    out = sh(a100, "docker run --rm --gpus device=1,3 ubuntu nvidia-smi -L").stdout.splitlines()
    assert [line.split(" (UUID")[0] for line in out] == ["GPU 0: NVIDIA A100-SXM4-40GB", "GPU 1: NVIDIA A100-SXM4-40GB"]
    assert [line.split("UUID: ")[1].rstrip(")") for line in out] == [state.gpu(1).uuid, state.gpu(3).uuid]
    assert sh(a100, "docker run --rm --gpus 2 ubuntu nvidia-smi -L").stdout.count("GPU ") == 2
    # a container without GPUs has no nvidia-smi: the image does not ship it
    assert "executable file not found" in sh(a100, "docker run --rm ubuntu nvidia-smi").stderr


def test_a_daemon_json_docker_cannot_read_keeps_it_down(a100: Session) -> None:
    root = a100.root()
    assert root is not None
    write_node_file(root, ctr.DAEMON_JSON, '{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}},}')
    restarted = sh(a100, "systemctl restart docker")
    assert restarted.exit_code == 1 and "Job for docker.service failed" in restarted.stderr
    info = sh(a100, "docker info")
    assert info.exit_code == 1 and "Cannot connect to the Docker daemon" in info.stderr
    assert "Is the docker daemon running?" in sh(a100, "docker run --gpus all ubuntu").stderr
    # the journal says why, in Go's words
    journal = sh(a100, "journalctl -u docker").stdout
    assert (
        "unable to configure the Docker daemon with file /etc/docker/daemon.json: "
        "invalid character '}' looking for beginning of object key string" in journal
    )


def test_configure_needs_root_and_a_known_runtime(a100: Session) -> None:
    user = Session(path=a100.path, euid=1000)
    refused = sh(user, "nvidia-ctk runtime configure --runtime=docker")
    assert refused.exit_code == 1 and "permission denied" in refused.stderr
    assert "unrecognized runtime 'podman'" in sh(a100, "nvidia-ctk runtime configure --runtime=podman").stderr
    containerd = sh(a100, "nvidia-ctk runtime configure --runtime=containerd")
    assert "Wrote updated config to /etc/containerd/config.toml" in containerd.stderr
    toml = read_config(a100.root(), ctr.CONTAINERD_TOML) or ""
    assert 'disabled_plugins = ["cri"]' in toml and 'BinaryName = "/usr/bin/nvidia-container-runtime"' in toml
    assert "nvidia" not in (read_config(a100.root(), ctr.DAEMON_JSON) or "")


def test_generated_spec_has_the_real_layout(tmp_path: Path) -> None:
    session = node(tmp_path, "hgx-h100", "cdi-spec-stale")
    out = sh(session, "nvidia-ctk cdi generate")
    assert out.exit_code == 0
    version = load_state(session.path or Path()).driver.version
    # the corpus spec (575.57.08) and ours agree line for line up to where the paste was cut
    real = read_corpus("cdi_spec/02_ctk1.17_575_common_edits_cut_before_devices.txt").splitlines()
    ours = out.stdout.replace(version, "575.57.08").splitlines()
    assert ours[: len(real)] == real
    # the log as the real one prints it: padded messages, the NVML library and the driver version
    log = out.stderr.splitlines()
    assert log[0] == f"INFO[0000] Using /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{version} "
    assert all(re.fullmatch(r"(?:INFO|WARN)\[0000\] .{44,} ", line) for line in log)
    assert f"INFO[0000] {'Using driver version ' + version:<44} " in log
    real_log = read_corpus("nvidia_ctk/01_cdi_generate_log_560.txt").splitlines()[1:]
    assert all(re.fullmatch(r"(?:INFO|WARN)\[0000\] .{44,} ", line) for line in real_log)


def test_stale_spec_fails_as_docker_fails_and_a_new_one_resolves(h100_stale: Session) -> None:
    unknown = sh(h100_stale, "docker run --rm --device nvidia.com/gpu=0:1 ubuntu nvidia-smi -L")
    assert unknown.exit_code == 125
    assert unknown.stderr.splitlines()[0] == first_line("docker_run/03_cdi_unresolvable_device.txt").replace(
        "spidernet.io/test=demo1", "nvidia.com/gpu=0:1"
    )
    gone = sh(h100_stale, "docker run --rm --device nvidia.com/gpu=0:0 ubuntu nvidia-smi -L")
    assert 'failed to stat CDI host device "/dev/nvidia-caps/nvidia-cap3"' in gone.stderr  # GPU instance 0's
    whole = sh(h100_stale, "docker run --rm --device nvidia.com/gpu=3 ubuntu nvidia-smi -L")
    assert whole.exit_code == 0 and whole.stdout.startswith("GPU 0: NVIDIA H100 80GB HBM3")

    listed = sh(h100_stale, "nvidia-ctk cdi list")
    assert "nvidia.com/gpu=0:0\n" in listed.stdout and "nvidia.com/gpu=0:1\n" not in listed.stdout
    assert re.search(r"INFO\[0000\] Found 19 CDI devices +\n", listed.stderr)

    assert sh(h100_stale, "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml").exit_code == 0
    for n in (0, 1):
        out = sh(h100_stale, f"docker run --rm --device nvidia.com/gpu=0:{n} ubuntu nvidia-smi -L").stdout
        assert out.count("MIG 3g.40gb") == 1 and out.startswith("GPU 0: NVIDIA H100 80GB HBM3"), out
    both = sh(
        h100_stale, "docker run --rm --device nvidia.com/gpu=0:0 --device nvidia.com/gpu=0:1 ubuntu nvidia-smi -L"
    )
    assert both.stdout.count("MIG 3g.40gb") == 2
    spec = parse("cdi-spec", read_config(h100_stale.root(), "/etc/cdi/nvidia.yaml") or "").cdi_spec
    assert spec is not None
    assert {"nvidia.com/gpu=0:0", "nvidia.com/gpu=0:1", "nvidia.com/gpu=all"} <= {d.name for d in spec.devices}


def test_spec_of_the_previous_driver_fails_at_its_mounts(tmp_path: Path) -> None:
    session = node(tmp_path, "dgx-a100", "cdi-spec-old-driver")
    out = sh(session, "docker run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi -L")
    assert out.exit_code == 125 and 'error mounting "/usr/lib/x86_64-linux-gnu/libcuda.so.535.97.03"' in out.stderr
    sh(session, "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml")
    assert sh(session, "docker run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi -L").stdout.count("GPU ") == 8


def test_index_only_names(h100_stale: Session) -> None:
    sh(h100_stale, "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml --device-name-strategy=index")
    names = sh(h100_stale, "nvidia-ctk cdi list").stdout.split()
    assert names[:3] == ["nvidia.com/gpu=0", "nvidia.com/gpu=0:0", "nvidia.com/gpu=0:1"]
    assert not [n for n in names if "GPU-" in n or "MIG-" in n]
    assert "invalid device name strategy" in sh(h100_stale, "nvidia-ctk cdi generate --device-name-strategy=pci").stderr


def test_no_docker_engine_on_a_node_without_it() -> None:
    state = load_fixture("dgx-a100")
    info = run_tool(["docker", "info"], Session(state=state))
    assert info.exit_code == 1 and "Cannot connect to the Docker daemon" in info.stderr
    assert run_tool(["nvidia-ctk", "--version"], Session(state=state)).stdout.startswith(
        f"NVIDIA Container Toolkit CLI version {ctr.TOOLKIT_VERSION}\ncommit: "
    )
