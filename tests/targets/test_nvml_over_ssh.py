"""NVML over SSH: the collector runs on the node in the same round trip, or capture says it fell back."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assessor.capture.nvml import collect_json
from assessor.cli import main
from assessor.sim.mock_nvml import MockNvml
from assessor.sim.state import load_state
from tests.support.sshbed import SshBed, node, sshd_available, write_inventory


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshBed]:
    """``withnvml``: python3 with nvidia-ml-py answering from the node's state; ``node01``: python3 without it."""
    if not sshd_available():
        pytest.fail("sshd is not installed: run scripts/setup.sh (it installs openssh-server)")
    bed = SshBed(tmp_path_factory.mktemp("nvmlbed")).setup(1)
    # the venv's python3 has nvidia-ml-py, and its pynvml answers from GPULAB_SIM_STATE (the mock hook)
    bed.add_node("withnvml", "dgx-a100", extra_bin={"python3": f'exec {sys.executable} "$@"'})
    bed.add_node("nopython", "hgx-h100", extra_bin={"python3": "exit 127"})
    bed.write_known_hosts()
    bed.start()
    yield bed
    bed.stop()


def capture(bed: SshBed, tmp_path: Path, names: list[str]) -> Path:
    inv = write_inventory(bed, tmp_path, names)
    out = tmp_path / "caps"
    result = CliRunner().invoke(
        main, ["capture", "-i", str(inv), "--out", str(out), "--known-hosts", str(bed.known_hosts)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_nvml_json_from_the_node_matches_the_direct_collector(bed: SshBed, tmp_path: Path) -> None:
    out = capture(bed, tmp_path, ["withnvml"])  # one host: the snapshot is the --out directory itself
    remote = json.loads((out / "nvml.json").read_text())
    direct = collect_json(MockNvml(load_state(node(bed, "withnvml").state)))
    assert remote == json.loads(json.dumps(direct))
    assert len(remote["gpus"]) == 8 and remote["gpus"][0]["name"] == "NVIDIA A100-SXM4-40GB"
    meta = json.loads((out / "meta.json").read_text())
    assert meta["files"]["nvml.json"]["status"] == "ok"
    assert "python3 on the node" in meta["files"]["nvml.json"]["command"]


def test_without_nvidia_ml_py_capture_falls_back_to_nvidia_smi_and_says_so(bed: SshBed, tmp_path: Path) -> None:
    out = capture(bed, tmp_path, ["node01", "nopython"])
    for host in ("node01", "nopython"):
        assert not (out / host / "nvml.json").exists()
        info = json.loads((out / host / "meta.json").read_text())["files"]["nvml.json"]
        assert info["status"] == "missing"
        assert "nvidia-smi's output is graded instead" in info["message"]
        assert (out / host / "nvidia-smi-q.xml").is_file()
    node01 = json.loads((out / "node01" / "meta.json").read_text())["files"]["nvml.json"]["message"]
    assert "no nvidia-ml-py" in node01


def test_a_node_with_nvml_grades_the_same_as_through_nvidia_smi(bed: SshBed, tmp_path: Path) -> None:
    inv = write_inventory(bed, tmp_path, ["withnvml"])
    args = ["assess", "-i", str(inv), "-p", "dgx-a100", "-f", "json", "--known-hosts", str(bed.known_hosts)]
    result = CliRunner().invoke(main, args)
    doc = json.loads(result.stdout)
    statuses = {r["check"]: r["status"] for r in doc["targets"][0]["results"]}
    assert "error" not in doc["targets"][0]
    assert [c for c, s in statuses.items() if s in ("fail", "error")] == []
    assert result.exit_code == 0
