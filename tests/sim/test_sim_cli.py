"""`gpulab sim init / shims / fault / repair`, and the shims on a real PATH."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from click.testing import CliRunner

from assessor.cli import main
from assessor.parsers import ibstat


def gpulab(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_init_fault_repair_round_trip(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    assert gpulab("sim", "init", "--fixture", "dgx-a100", "--state", str(state))[0] == 0
    assert json.loads(state.read_text())["fixture"] == "dgx-a100"
    code, out, _ = gpulab("sim", "fault", str(state), "ib-port-down", "-o", "ca=mlx5_3")
    assert code == 0 and "ib-port-down" in out
    code, out, _ = gpulab("assess", "-t", f"mock:{state}", "-c", "ib.ports_active", "-f", "json")
    assert code == 1 and "mlx5_3" in json.loads(out)["targets"][0]["results"][0]["message"]
    assert gpulab("sim", "repair", str(state), "ib-port-down", "-o", "ca=mlx5_3")[0] == 0
    assert gpulab("assess", "-t", f"mock:{state}", "-c", "ib.ports_active")[0] == 0


def test_init_refuses_to_overwrite_and_unknown_fixture(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    gpulab("sim", "init", "--state", str(state))
    code, _, err = gpulab("sim", "init", "--state", str(state))
    assert code == 2 and "already exists" in err
    code, _, err = gpulab("sim", "init", "--fixture", "dgx-z900", "--state", str(tmp_path / "x.json"))
    assert code == 2 and "unknown fixture" in err and "hgx-h100" in err


def test_fault_list_names_every_fault() -> None:
    code, out, _ = gpulab("sim", "fault", "unused.json", "--list")
    assert code == 0
    for name in ("ib-port-down", "xid-79", "driver-mismatch", "nccl-socket-fallback"):
        assert name in out


def test_shims_on_path_answer_from_the_state_file(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    gpulab("sim", "init", "--fixture", "hgx-h100", "--state", str(state))
    gpulab("sim", "fault", str(state), "ib-port-down", "-o", "ca=mlx5_0")
    code, out, _ = gpulab("sim", "shims", str(tmp_path / "bin"))
    assert code == 0 and "nvidia-smi" in out
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "GPULAB_SIM_STATE": str(state)}
    text = subprocess.run(["ibstat"], env=env, capture_output=True, text=True, check=True).stdout
    ports = {p.ca: p for p in ibstat.parse(text).ib_ports or []}
    assert ports["mlx5_0"].state == "Down"
    # a state change through one shim is seen by the next
    subprocess.run(["nvidia-smi", "-pm", "0"], env=env, capture_output=True, check=True)
    query = ["nvidia-smi", "--query-gpu=persistence_mode", "--format=csv,noheader"]
    out = subprocess.run(query, env=env, capture_output=True, text=True, check=True).stdout
    assert set(out.split()) == {"Disabled"}
    # `cat` of anything but the simulated files is the real cat
    (tmp_path / "hello.txt").write_text("hi\n")
    cat = subprocess.run(["cat", str(tmp_path / "hello.txt")], env=env, capture_output=True, text=True)
    assert cat.stdout == "hi\n"


def test_shim_without_state_says_what_to_do(tmp_path: Path) -> None:
    gpulab("sim", "shims", str(tmp_path / "bin"))
    env = {k: v for k, v in os.environ.items() if k != "GPULAB_SIM_STATE"}
    proc = subprocess.run([str(tmp_path / "bin" / "nvidia-smi")], env=env, capture_output=True, text=True)
    assert proc.returncode == 1 and "GPULAB_SIM_STATE" in proc.stderr


def test_record_builds_a_node_that_assesses_like_the_snapshot(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    assert gpulab("capture", "-t", "mock:dgx-a100", "-o", str(snap))[0] == 0
    state = tmp_path / "copy.json"
    code, out, _ = gpulab("sim", "record", "--from", f"snapshot:{snap}", "--out", str(state))
    assert code == 0 and "8 GPUs" in out and "filled from the fixture" in out
    direct = json.loads(gpulab("assess", "-t", f"snapshot:{snap}", "-c", "gpu.count", "-f", "json")[1])
    copied = json.loads(gpulab("assess", "-t", f"mock:{state}", "-c", "gpu.count", "-f", "json")[1])
    assert direct["targets"][0]["results"][0]["observed"] == copied["targets"][0]["results"][0]["observed"] == 8
    # an existing file is kept unless --force; a target that is not a snapshot is refused
    assert gpulab("sim", "record", "--from", f"snapshot:{snap}", "--out", str(state))[0] == 2
    assert gpulab("sim", "record", "--from", "mock:hgx-h100", "--out", str(tmp_path / "x.json"))[0] == 2


def test_fixtures_lists_every_shipped_node() -> None:
    code, out, _ = gpulab("sim", "fixtures")
    assert code == 0
    assert {line.split()[0] for line in out.splitlines()} >= {"a30", "dgx-a100", "h100-nvl", "hgx-h100", "pcie-l40s"}
