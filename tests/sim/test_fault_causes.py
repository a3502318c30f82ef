"""A fault whose cause lives on the node's disk, and what a reboot keeps (issue #19, items 2 and 3).

The fabric manager fault of a node with files of its own writes its cause there: a drop-in that starts the
daemon with a test copy of its config whose ``TOPOLOGY_FILE_PATH`` holds no topology file. The daemon then
fails at every start and at every boot, logging the fabric manager's own ``failed to open fabric topology file
PATH`` (journal, ``systemctl status``, /var/log/fabricmanager.log), until the cause is fixed. A unit started by
hand but left disabled is down again after a reboot.
"""

from __future__ import annotations

from pathlib import Path

from assessor.sim import faults
from assessor.sim.config_root import FABRIC_MANAGER_CFG, populate, read_config, root_for_state
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState, load_state, save_state
from assessor.sim.tools import Session, ToolResult, run_tool

CAUSE = "failed to open fabric topology file /opt/nvidia/nvswitch/dgxh100_hgxh100_topology"
DROP_IN = "/etc/systemd/system/nvidia-fabricmanager.service.d/override.conf"


def node(tmp_path: Path, fixture: str = "hgx-h100") -> Path:
    """``gpulab sim init --fixture FIXTURE``: a node with its files."""
    path = tmp_path / "node.json"
    state = load_fixture(fixture, host="lab-node", in_use=True)
    save_state(state, path)
    populate(root_for_state(path), state)
    return path


def run(path: Path, line: str) -> ToolResult:
    return run_tool(line.split(), Session(path=path))


def fabric(path: Path) -> set[str | None]:
    state: NodeState = load_state(path)
    return {g.fabric_state for g in state.gpus}


def test_the_fabric_manager_fault_writes_its_cause_and_the_daemon_logs_it(tmp_path: Path) -> None:
    path = node(tmp_path)
    faults.inject(path, "fabric-manager-stopped")
    root = root_for_state(path)
    assert "-c /etc/nvidia-fabricmanager/fabricmanager.cfg" in (read_config(root, DROP_IN) or "")
    assert "TOPOLOGY_FILE_PATH=/opt/nvidia/nvswitch\n" in (
        read_config(root, "/etc/nvidia-fabricmanager/fabricmanager.cfg") or ""
    )
    assert "TOPOLOGY_FILE_PATH=/usr/share/nvidia/nvswitch\n" in (read_config(root, FABRIC_MANAGER_CFG) or "")
    journal = run(path, "journalctl -u nvidia-fabricmanager").stdout
    assert "nv-fabricmanager[" in journal and CAUSE in journal
    assert "Failed to start NVIDIA fabric manager service." in journal
    status = run(path, "systemctl status nvidia-fabricmanager")
    assert status.exit_code == 3
    assert "    Drop-In: /etc/systemd/system/nvidia-fabricmanager.service.d\n             └─override.conf\n" in (
        status.stdout
    )
    assert "ExecStart=/usr/bin/nv-fabricmanager -c /etc/nvidia-fabricmanager/fabricmanager.cfg" in status.stdout
    assert CAUSE in status.stdout
    assert "[ERROR] [tid " in run(path, "cat /var/log/fabricmanager.log").stdout


def test_neither_a_restart_nor_a_reboot_clears_it_while_the_cause_stays(tmp_path: Path) -> None:
    path = node(tmp_path)
    faults.inject(path, "fabric-manager-stopped")
    restarted = run(path, "systemctl restart nvidia-fabricmanager")
    assert restarted.exit_code == 1 and "failed because the control process exited" in restarted.stderr
    assert fabric(path) == {"In Progress"}
    assert run(path, "reboot").exit_code == 0
    assert run(path, "systemctl is-active nvidia-fabricmanager").stdout == "failed\n"
    assert fabric(path) == {"In Progress"}
    assert CAUSE in run(path, "journalctl -u nvidia-fabricmanager").stdout  # logged again at boot
    cuda = run(path, "all_reduce_perf -b 8 -e 8M -f 2 -g 8")
    assert cuda.exit_code != 0 and "system not yet initialized" in cuda.stdout


def test_the_cause_fixed_the_daemon_starts_now_and_at_every_boot(tmp_path: Path) -> None:
    path = node(tmp_path)
    faults.inject(path, "fabric-manager-stopped")
    reverted = run(path, "systemctl revert nvidia-fabricmanager")
    assert reverted.exit_code == 0
    assert reverted.stderr == (f'Removed "{DROP_IN}".\nRemoved "/etc/systemd/system/nvidia-fabricmanager.service.d".\n')
    assert run(path, "systemctl restart nvidia-fabricmanager").exit_code == 0
    assert fabric(path) == {"Completed"}
    assert run(path, "reboot").exit_code == 0
    assert run(path, "systemctl is-active nvidia-fabricmanager").stdout == "active\n"
    assert fabric(path) == {"Completed"}
    assert CAUSE not in run(path, "journalctl -u nvidia-fabricmanager").stdout


def test_the_test_config_put_right_is_enough(tmp_path: Path) -> None:
    path = node(tmp_path, "dgx-a100")
    faults.inject(path, "fabric-manager-stopped")
    root = root_for_state(path)
    assert "dgxa100_hgxa100_topology" in run(path, "journalctl -u nvidia-fabricmanager").stdout  # the A100 board's
    copy = root / "etc/nvidia-fabricmanager/fabricmanager.cfg"
    copy.write_text(copy.read_text().replace("/opt/nvidia/nvswitch", "/usr/share/nvidia/nvswitch"))
    assert run(path, "systemctl restart nvidia-fabricmanager").exit_code == 0
    assert "-c /etc/nvidia-fabricmanager/fabricmanager.cfg" in run(path, "systemctl status nvidia-fabricmanager").stdout


def test_repair_takes_the_cause_away(tmp_path: Path) -> None:
    path = node(tmp_path)
    faults.inject(path, "fabric-manager-stopped")
    faults.repair(path, "fabric-manager-stopped")
    root = root_for_state(path)
    assert read_config(root, DROP_IN) is None
    assert run(path, "systemctl is-active nvidia-fabricmanager").stdout == "active\n"
    assert run(path, "systemctl restart nvidia-fabricmanager").exit_code == 0


def test_a_unit_started_but_left_disabled_is_down_after_a_reboot(tmp_path: Path) -> None:
    path = node(tmp_path, "pcie-l40s")
    faults.inject(path, "persistence-off")
    assert run(path, "systemctl disable nvidia-persistenced").exit_code == 0
    assert run(path, "systemctl start nvidia-persistenced").exit_code == 0
    assert all(g.persistence_mode for g in load_state(path).gpus)
    run(path, "reboot")
    assert run(path, "systemctl is-active nvidia-persistenced").stdout == "inactive\n"
    assert not any(g.persistence_mode for g in load_state(path).gpus)
    assert run(path, "systemctl enable --now nvidia-persistenced").exit_code == 0
    run(path, "reboot")
    assert run(path, "systemctl is-active nvidia-persistenced").stdout == "active\n"
    assert all(g.persistence_mode for g in load_state(path).gpus)


def test_revert_and_daemon_reload_need_root(tmp_path: Path) -> None:
    path = node(tmp_path)
    as_user = run_tool(["systemctl", "revert", "nvidia-fabricmanager"], Session(path=path, euid=1000))
    assert (as_user.exit_code, as_user.stderr) == (1, "Failed to revert unit: Access denied\n")
    assert run(path, "systemctl daemon-reload").exit_code == 0
    assert run(path, "systemctl revert nosuch").exit_code == 1


# ---- the IMEX daemon of a GB200 tray, on a node list that names none of its addresses -------------------

IMEX_CAUSE = (
    "No matching network interface found for any IP addresses in the node configuration file "
    "/etc/nvidia-imex/nodes_config.cfg."
)


def test_the_imex_fault_writes_its_cause_and_only_the_right_node_list_brings_it_back(tmp_path: Path) -> None:
    from assessor.sim.config_root import write_node_file

    path = node(tmp_path, "gb200-tray")
    faults.inject(path, "imex-stopped")
    root = root_for_state(path)
    assert "- 10.114.2.11/24" in (read_config(root, "/etc/netplan/50-cloud-init.yaml") or "")
    assert (read_config(root, "/etc/nvidia-imex/nodes_config.cfg") or "").startswith("10.114.1.11\n10.114.1.12\n")
    assert "IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\n" in (
        read_config(root, "/etc/nvidia-imex/config.cfg") or ""
    )
    journal = run(path, "journalctl -u nvidia-imex").stdout
    assert "nvidia-imex[" in journal and "IMEX version 570.172.08 is running" in journal and IMEX_CAUSE in journal
    status = run(path, "systemctl status nvidia-imex")
    assert status.exit_code == 3 and "ExecStart=/usr/bin/nvidia-imex -c /etc/nvidia-imex/config.cfg" in status.stdout
    assert run(path, "systemctl restart nvidia-imex").exit_code == 1  # the cause untouched: it fails again
    assert run(path, "reboot").exit_code == 0
    assert load_state(path).services["nvidia-imex.service"].active_state == "failed"  # and at boot
    # the list another IMEX_NODE_CONFIG_FILE names is the one read
    write_node_file(root, "/etc/nvidia-imex/mine.cfg", "10.114.2.11\n")
    write_node_file(root, "/etc/nvidia-imex/config.cfg", "IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/mine.cfg\n")
    assert run(path, "systemctl restart nvidia-imex").exit_code == 0
    write_node_file(root, "/etc/nvidia-imex/config.cfg", "IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\n")
    assert run(path, "systemctl restart nvidia-imex").exit_code == 1
    faults.repair(path, "imex-stopped")
    assert (read_config(root, "/etc/nvidia-imex/nodes_config.cfg") or "").startswith("10.114.2.11\n")
    assert load_state(path).services["nvidia-imex.service"].active_state == "active"
    assert run(path, "systemctl restart nvidia-imex").exit_code == 0
