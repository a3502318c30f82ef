"""Files are written only where the user asked: no symbolic link beside or inside a node's files is followed.

Inside a node the candidate is root of its files: `ln -s /home/me/.bashrc /etc/nccl.conf` typed there leaves,
in STATE.d/etc, a link whose target is a path of THIS machine. gpulab writes those files from outside the node
(a lab's start and reset, a fault, the node's agent), so each write must replace such a link, never follow it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assessor.errors import InputError
from assessor.labs.drivers.sim import write_files
from assessor.sim.config_root import populate, root_for_state, set_nccl_conf, write_node_file
from assessor.sim.machine.agent import publish
from assessor.sim.machine.layout import NodePaths
from assessor.sim.node_init import init_node
from assessor.sim.state import load_state, lock_path, locked


@pytest.fixture
def node(tmp_path: Path) -> Path:
    state = tmp_path / "node" / "node.json"
    state.parent.mkdir()
    init_node("hgx-h100", state, host="links")
    return state


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "bashrc"
    victim.parent.mkdir()
    victim.write_text("the host's own file\n")
    return victim


def test_a_link_the_candidate_put_at_a_config_file_is_replaced_not_followed(node: Path, host_file: Path) -> None:
    conf = root_for_state(node) / "etc" / "nccl.conf"
    conf.unlink()
    conf.symlink_to(host_file)
    set_nccl_conf(root_for_state(node), {"NCCL_IB_HCA": "mlx5_0"})  # what a fault does to the node's file
    assert host_file.read_text() == "the host's own file\n"
    assert not conf.is_symlink() and "NCCL_IB_HCA=mlx5_0" in conf.read_text()


def test_a_lab_s_files_and_reset_replace_links_and_linked_folders(node: Path, host_file: Path) -> None:
    root = root_for_state(node)
    modprobe = root / "etc" / "modprobe.d"
    for child in modprobe.iterdir():
        child.unlink()
    modprobe.rmdir()
    modprobe.symlink_to(host_file.parent)  # a whole folder pointed at this machine
    write_files({"/etc/modprobe.d/nvidia.conf": "options nvidia NVreg_X=1\n"}, node)
    populate(root, load_state(node), overwrite=True)
    assert sorted(p.name for p in host_file.parent.iterdir()) == ["bashrc"]
    assert host_file.read_text() == "the host's own file\n"
    assert modprobe.is_dir() and not modprobe.is_symlink()
    assert (modprobe / "nvidia.conf").is_file()


def test_the_agent_writes_the_fabric_manager_log_without_following_a_link(node: Path, host_file: Path) -> None:
    paths = NodePaths(node)
    log = paths.root / "var" / "log" / "fabricmanager.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists():
        log.unlink()
    log.symlink_to(host_file)
    publish(paths, load_state(node))
    assert host_file.read_text() == "the host's own file\n"
    assert not log.is_symlink() and "Fabric" in log.read_text()


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_is_not_created(node: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "outside" / "created-by-gpulab"
    elsewhere.parent.mkdir(exist_ok=True)
    lp = lock_path(node)
    if lp.exists():
        lp.unlink()
    lp.symlink_to(elsewhere)
    with pytest.raises(InputError, match="lock file is a symbolic link"), locked(node):
        pass
    assert not elsewhere.exists()


def test_a_node_folder_that_is_a_link_is_refused(tmp_path: Path, host_file: Path) -> None:
    root = tmp_path / "planted.json.d"
    root.symlink_to(host_file.parent)
    with pytest.raises(InputError, match="symbolic link"):
        write_node_file(root, "/etc/nccl.conf", "x=1\n")
    assert sorted(os.listdir(host_file.parent)) == ["bashrc"]


@pytest.mark.parametrize("bad", ["", "/", "/etc/../../x", "../x"])
def test_a_path_that_is_not_a_node_file_is_refused(bad: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a file path on the node"):
        write_node_file(tmp_path / "root", bad, "x")
