"""The simulated kernel command line: /etc/default/grub, update-grub, a reboot, and the IOMMU's cost."""

from __future__ import annotations

from pathlib import Path

from assessor.sim.config_root import populate, root_for_state, write_node_file
from assessor.sim.faults import FAULTS
from assessor.sim.fixtures import load_fixture
from assessor.sim.grub import GRUB_CFG, GRUB_DEFAULT, default_grub
from assessor.sim.state import load_state, save_state
from assessor.sim.tools import Session, ToolResult, run_tool


def node(tmp_path: Path, fixture: str = "pcie-l40s") -> Session:
    state = load_fixture(fixture)
    path = tmp_path / "node.json"
    save_state(state, path)
    root = root_for_state(path)
    populate(root, state)
    fault = FAULTS["iommu-translated"]
    fault.apply(state)
    fault.write_cause(state, root)
    save_state(state, path)
    return Session(path=path, env={})


def run(session: Session, *argv: str) -> ToolResult:
    return run_tool(list(argv), session)


def cmdline(session: Session) -> str:
    return run(session, "cat", "/proc/cmdline").stdout.strip()


def busbw(session: Session) -> float:
    out = run(session, "all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "4").stdout
    return float(next(line for line in out.splitlines() if "Avg bus bandwidth" in line).split(":")[1])


def test_the_fault_shows_in_cmdline_dmesg_and_grub_files(tmp_path: Path) -> None:
    s = node(tmp_path)
    assert cmdline(s).endswith("ro quiet intel_iommu=on")
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="quiet intel_iommu=on"' in run(s, "cat", GRUB_DEFAULT).stdout
    assert "iommu: Default domain type: Translated" in run(s, "dmesg").stdout


def test_only_update_grub_and_a_reboot_apply_an_edit(tmp_path: Path) -> None:
    s = node(tmp_path)
    assert s.path is not None
    root = root_for_state(s.path)
    slow = busbw(s)
    write_node_file(root, GRUB_DEFAULT, default_grub("quiet intel_iommu=on iommu=pt"))
    assert run(s, "reboot").exit_code == 0
    assert cmdline(s).endswith("intel_iommu=on")  # grub.cfg was not regenerated: the same line boots
    done = run(s, "update-grub")
    assert done.exit_code == 0 and "Found linux image: /boot/vmlinuz-5.15.0-91-generic" in done.stderr
    assert "intel_iommu=on iommu=pt" in run(s, "cat", GRUB_CFG).stdout
    assert cmdline(s).endswith("intel_iommu=on")  # not before the reboot
    run(s, "reboot")
    assert cmdline(s).endswith("ro quiet intel_iommu=on iommu=pt")
    log = run(s, "dmesg").stdout
    assert "Passthrough (set via kernel command line)" in log and "Translated" not in log
    assert busbw(s) > 1.9 * slow  # the simulator's translated share is one half


def test_update_grub_refuses_without_root_or_file(tmp_path: Path) -> None:
    s = node(tmp_path)
    assert s.path is not None
    user = Session(path=s.path, env={}, euid=1000)
    assert run(user, "update-grub").exit_code == 1
    (root_for_state(s.path) / GRUB_DEFAULT.lstrip("/")).unlink()
    missing = run(s, "update-grub")
    assert missing.exit_code == 1 and "/etc/default/grub: not found" in missing.stderr


def test_nvlink_traffic_is_not_slowed(tmp_path: Path) -> None:
    s = node(tmp_path, "hgx-h100")
    assert s.path is not None
    sick = busbw(s)
    state = load_state(s.path)
    FAULTS["iommu-translated"].revert(state)
    save_state(state, s.path)
    assert busbw(s) == sick
