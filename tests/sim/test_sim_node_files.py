"""A simulated node's files: its state file (sim init, identities, safe reading, errors through the shims)
and its configuration root (nccl.conf, modprobe.d, the fabric manager's config)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.sim import config_root
from assessor.sim.fixtures import load_fixture
from assessor.sim.node_init import init_node
from assessor.sim.shims import shims_report, write_shims
from assessor.sim.state import MAX_STATE_BYTES, load_state, save_state
from assessor.sim.tools import Session, ToolResult, run_tool


def run(path: Path, *argv: str, env: dict[str, str] | None = None) -> ToolResult:
    return run_tool(list(argv), Session(path=path, env=env or {}))


@pytest.fixture
def shim_env(tmp_path: Path) -> dict[str, str]:
    write_shims(tmp_path / "bin")
    return {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}


# ---- sim init --------------------------------------------------------------------------------


def test_init_writes_an_in_use_node_its_config_root_and_the_absolute_enter_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    lines = init_node("dgx-a100", "node.json", host="dgx-7")
    path = tmp_path / "node.json"
    assert lines[-1] == f"enter it: gpulab sim shell {path}"
    assert load_state(path).daemons_hold_gpus is True
    root = tmp_path / "node.json.d"
    assert str(root) in lines[1]
    assert (root / "etc" / "modprobe.d" / "blacklist-nouveau.conf").read_text().startswith("blacklist nouveau")
    assert "FABRIC_MODE=0" in (root / "usr/share/nvidia/nvswitch/fabricmanager.cfg").read_text()
    with pytest.raises(InputError, match="already exists"):
        init_node("dgx-a100", "node.json")


def test_each_host_gets_its_own_gpu_and_hca_identities() -> None:
    a, b = load_fixture("hgx-h100", host="node-a"), load_fixture("hgx-h100", host="node-b")
    assert {g.uuid for g in a.gpus}.isdisjoint(g.uuid for g in b.gpus)
    assert {g.serial for g in a.gpus}.isdisjoint(g.serial for g in b.gpus)
    assert {h.node_guid for h in a.ib_hcas}.isdisjoint(h.node_guid for h in b.ib_hcas)
    assert [g.uuid for g in load_fixture("hgx-h100", host="node-a").gpus] == [g.uuid for g in a.gpus]
    # the fixture's own host keeps the fixture's identities
    assert [g.uuid for g in load_fixture("hgx-h100", host="hgx-h100-01").gpus] == [
        g.uuid for g in load_fixture("hgx-h100").gpus
    ]


def test_shims_report_names_the_config_root_and_an_absolute_state(tmp_path: Path) -> None:
    written = write_shims(tmp_path / "bin")
    lines = shims_report(tmp_path / "bin", written, "rel/node.json")
    assert {"reboot", "shutdown", "kill", "journalctl", "rmmod", "uptime"} <= {p.name for p in written}
    assert any(line.endswith(str(Path("rel/node.json.d").absolute())) for line in lines)
    assert any(f"GPULAB_SIM_STATE={Path('rel/node.json').absolute()}" in line for line in lines)


# ---- the shims never reach the host --------------------------------------------------------------


def test_the_reboot_shim_never_runs_the_hosts_reboot(tmp_path: Path, shim_env: dict[str, str]) -> None:
    state = tmp_path / "node.json"
    init_node("hgx-h100", state)
    fake = tmp_path / "host-bin"
    fake.mkdir()
    record = tmp_path / "host-reboot-called"
    for name in ("reboot", "shutdown", "kill"):
        (fake / name).write_text(f'#!/bin/sh\necho {name} "$@" >> {record}\n')
        (fake / name).chmod(0o755)
    env = {**shim_env, "PATH": f"{shim_env['PATH']}:{fake}", "GPULAB_SIM_STATE": str(state), "GPULAB_SIM_EUID": "0"}
    boot = load_state(state).clock.boot_time
    for argv in (["reboot"], ["shutdown", "-r", "now"], ["kill", "999999"]):
        subprocess.run(argv, env=env, capture_output=True, text=True)
    assert not record.exists()
    assert load_state(state).clock.boot_time != boot  # the simulated node did reboot
    # and with no state at all, the shim still refuses instead of falling through
    bare = {k: v for k, v in env.items() if k != "GPULAB_SIM_STATE"}
    assert subprocess.run(["reboot"], env=bare, capture_output=True).returncode == 1
    assert not record.exists()


# ---- a broken state file: one line, the tool's own failure code ----------------------------------


@pytest.mark.parametrize(("tool", "code"), [("nvidia-smi", 9), ("ibstat", 255), ("systemctl", 1), ("dcgmi", 255)])
@pytest.mark.parametrize("damage", ["malformed", "missing", "not-a-state"])
def test_a_broken_state_gives_one_line_and_the_tools_failure_code(
    tmp_path: Path, shim_env: dict[str, str], tool: str, code: int, damage: str
) -> None:
    state = tmp_path / "node.json"
    if damage == "malformed":
        state.write_text('{"schema": "gpulab.simstate/1", "host": \n')
    elif damage == "not-a-state":
        state.write_text('{"schema": "gpulab.simstate/1", "fixture": "x", "host": "h", "driver": 5, "gpus": 3}\n')
    proc = subprocess.run(
        [tool, "status"] if tool in ("systemctl",) else [tool],
        env={**shim_env, "GPULAB_SIM_STATE": str(state)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == code
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and str(state) in proc.stderr and proc.stderr.startswith(f"{tool}: ")


# ---- reading a state safely ----------------------------------------------------------------------


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "node.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        load_state(fifo)


def test_a_symlink_out_of_the_directory_is_refused_and_one_inside_is_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    save_state(load_fixture("hgx-h100"), outside / "real.json")
    (tmp_path / "states").mkdir()
    (tmp_path / "states" / "node.json").symlink_to(outside / "real.json")
    with pytest.raises(InputError, match="symbolic link out of its directory"):
        load_state(tmp_path / "states" / "node.json")
    (outside / "alias.json").symlink_to("real.json")
    assert load_state(outside / "alias.json").host == "hgx-h100-01"


def test_an_oversized_state_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "node.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_STATE_BYTES + 1)
    with pytest.raises(InputError, match="larger than"):
        load_state(big)


def test_a_directory_is_not_a_state(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="a directory"):
        load_state(tmp_path)


# ---- the configuration root ----------------------------------------------------------------------


def test_nccl_settings_follow_nccls_precedence(tmp_path: Path) -> None:
    state = load_fixture("dgx-a100")
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "root").mkdir()
    (root / "etc" / "nccl.conf").write_text("NCCL_IB_HCA=mlx5_0\nNCCL_DEBUG=WARN\n# NCCL_ALGO=Ring\nbad line\n")
    (root / "root" / ".nccl.conf").write_text("NCCL_DEBUG=INFO\n")
    settings = config_root.nccl_settings(state, {"HOME": "/root"}, root)
    assert settings["NCCL_IB_HCA"] == "mlx5_0"  # the file beats the node's launcher environment
    assert settings["NCCL_DEBUG"] == "INFO"  # ~/.nccl.conf beats /etc/nccl.conf
    # without HOME NCCL reads no user file (the lab grader's job is a user's, not root's)
    assert config_root.nccl_settings(state, {}, root)["NCCL_DEBUG"] == "WARN"
    assert config_root.nccl_settings(state, {"HOME": "/home/ana"}, root)["NCCL_DEBUG"] == "WARN"
    assert "NCCL_ALGO" not in settings
    env = {"NCCL_DEBUG": "TRACE", "NCCL_IB_HCA": "mlx5_1"}
    assert config_root.nccl_settings(state, env, root)["NCCL_DEBUG"] == "TRACE"  # the environment wins
    (root / "etc" / "other.conf").write_text("NCCL_SOCKET_IFNAME=eth9\n")
    only = config_root.nccl_settings(state, {"NCCL_CONF_FILE": "/etc/other.conf"}, root)
    assert only["NCCL_SOCKET_IFNAME"] == "eth9" and only.get("NCCL_DEBUG") is None
    via_env = config_root.nccl_settings(state, {config_root.ROOT_ENV: str(root)})
    assert via_env["NCCL_IB_HCA"] == "mlx5_0"


def test_config_reads_stay_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (tmp_path / "secret").write_text("s3cret\n")
    (root / "etc" / "nccl.conf").symlink_to(tmp_path / "secret")
    os.mkfifo(root / "etc" / "fifo.conf")
    assert config_root.read_config(root, "/etc/nccl.conf") is None
    assert config_root.read_config(root, "/../secret") is None
    assert config_root.read_config(root, "/etc/fifo.conf") is None
    assert config_root.read_config(None, "/etc/nccl.conf") is None


def test_cat_shows_the_nodes_config_files(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    init_node("hgx-h100", state)
    (tmp_path / "node.json.d" / "etc" / "nccl.conf").write_text("NCCL_DEBUG=INFO\n")
    assert run(state, "cat", "/etc/nccl.conf").stdout == "NCCL_DEBUG=INFO\n"
    assert run(state, "cat", "/etc/modprobe.d/blacklist-nouveau.conf").stdout.startswith("blacklist nouveau")


def test_a_blacklisted_module_stays_unloaded_after_reboot(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    init_node("hgx-h100", state)
    (tmp_path / "node.json.d" / "etc" / "modprobe.d" / "no-drm.conf").write_text("blacklist nvidia_drm\n")
    assert run(state, "reboot").exit_code == 0
    after = load_state(state)
    assert not after.module_loaded("nvidia_drm") and after.module_loaded("nvidia")
    # with nvidia_drm gone and the daemons stopped, the GPUs reset
    run(state, "systemctl", "stop", "nvidia-dcgm", "nvidia-persistenced")
    assert run(state, "nvidia-smi", "-i", "0", "-r").exit_code == 0


def test_without_the_nouveau_blacklist_the_nvidia_driver_does_not_load_after_reboot(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    init_node("dgx-a100", state)
    (tmp_path / "node.json.d" / "etc" / "modprobe.d" / "blacklist-nouveau.conf").unlink()
    run(state, "reboot")
    after = load_state(state)
    assert after.module_loaded("nouveau") and not after.module_loaded("nvidia")
    assert run(state, "nvidia-smi").exit_code == 9
    assert "NVRM: The NVIDIA probe routine was not called for 8 device(s)." in run(state, "dmesg").stdout
    assert run(state, "systemctl", "is-active", "nvidia-fabricmanager").stdout == "failed\n"


def test_the_fabric_manager_needs_its_config_file(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    init_node("hgx-h100", state)
    (tmp_path / "node.json.d" / "usr/share/nvidia/nvswitch/fabricmanager.cfg").unlink()
    assert run(state, "systemctl", "restart", "nvidia-fabricmanager").exit_code == 1


def test_a_persistenced_drop_in_without_persistence_mode(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    init_node("hgx-h100", state)
    drop_in = tmp_path / "node.json.d" / "etc/systemd/system/nvidia-persistenced.service.d"
    drop_in.mkdir(parents=True)
    (drop_in / "override.conf").write_text(
        "[Service]\nExecStart=\nExecStart=/usr/bin/nvidia-persistenced --no-persistence-mode\n"
    )
    run(state, "systemctl", "restart", "nvidia-persistenced")
    assert not any(g.persistence_mode for g in load_state(state).gpus)


def test_all_reduce_perf_reads_the_nodes_nccl_conf_and_logs_the_hcas_it_uses(tmp_path: Path) -> None:
    state = tmp_path / "node.json"
    init_node("dgx-a100", state)
    conf = tmp_path / "node.json.d" / "etc" / "nccl.conf"
    # the site's own settings sit in the file too (sim init writes them there): NCCL reads nothing else
    assert "NCCL_SOCKET_IFNAME=enp226s0" in conf.read_text()
    conf.write_text("NCCL_DEBUG=INFO\nNCCL_SOCKET_IFNAME=enp226s0\nNCCL_IB_HCA==mlx5_0,mlx5_1\n")
    out = run(state, "all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "8").stdout
    info = [line.split("NCCL INFO ", 1)[1] for line in out.splitlines() if "NCCL INFO " in line]
    assert "NCCL_IB_HCA set to =mlx5_0,mlx5_1" in info
    assert "NCCL_SOCKET_IFNAME set by environment to enp226s0" in info
    assert any(i.startswith("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB enp226s0:") for i in info)
    # the environment beats the file
    env = {"NCCL_IB_HCA": "=mlx5_9"}
    out = run(state, "all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "8", env=env).stdout
    assert "NET/IB : Using [0]mlx5_9:1/IB [RO]" in out
    conf.write_text("NCCL_IB_HCA=mlx5_0\n")
    assert "NCCL INFO" not in run(state, "all_reduce_perf", "-b", "8", "-e", "128M", "-g", "8").stdout


def test_a_mock_target_on_a_fifo_is_an_input_error_not_a_hang(tmp_path: Path) -> None:
    from assessor.targets.mock import MockTarget

    fifo = tmp_path / "node.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        MockTarget.open(f"mock:{fifo}").snapshot(timeout=5)


def test_an_older_state_without_the_new_fields_loads_with_their_defaults(tmp_path: Path) -> None:
    import json

    path = tmp_path / "node.json"
    save_state(load_fixture("hgx-h100"), path)
    data = json.loads(path.read_text())
    for key in ("clock", "daemons_hold_gpus"):
        del data[key]
    for service in data["services"].values():
        del service["since_s"]
    path.write_text(json.dumps(data))
    old = load_state(path)
    assert old.clock.boot_time.startswith("2025-01-15T08:00:00") and old.daemons_hold_gpus is False
    assert run(path, "systemctl", "status", "nvidia-dcgm").exit_code == 0
