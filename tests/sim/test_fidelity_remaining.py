"""Golden and behaviour tests for the audit rows 13, 15, 27, 29 and 30 (issue #23; docs/FIDELITY.md).

Each golden test compares the simulator with a real capture in tests/data/corpus (its source in SOURCES.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from assessor.sim.faults import FAULTS
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState, save_state
from assessor.sim.tools import Session, ToolResult, run_tool
from tests.support.corpus import read_corpus


def run(state: NodeState, *argv: str, code: int = 0) -> str:
    result = run_tool(list(argv), Session(state=state))
    assert result.exit_code == code, result.stdout + result.stderr
    return result.stdout


def on_file(tmp_path: Path, fixture: str) -> Session:
    path = tmp_path / "node.json"
    save_state(load_fixture(fixture, in_use=True), path)
    return Session(path=path)


def run_on(session: Session, *argv: str) -> ToolResult:
    return run_tool(list(argv), session)


# ---------------------------------------------------------------- row 13: reset on an Ampere NVSwitch system


def test_the_fabric_manager_running_does_not_keep_an_a100_from_a_single_gpu_reset(tmp_path: Path) -> None:
    # nvidia-smi(1), -r: "On Ampere NVSwitch systems, Fabric Manager is required to facilitate reset" and, with
    # it running, "Each GPU can be reset individually". Only what holds the GPU is drained here.
    session = on_file(tmp_path, "dgx-a100")
    assert run_on(session, "systemctl", "stop", "nvidia-persistenced", "nvidia-dcgm").exit_code == 0
    assert run_on(session, "modprobe", "-r", "nvidia_drm").exit_code == 0
    assert session.read().services["nvidia-fabricmanager.service"].active_state == "active"
    out = run_on(session, "nvidia-smi", "-i", "3", "-r")
    assert (out.exit_code, out.stdout.splitlines()[-1]) == (0, "All done.")
    # the fabric manager re-registers the reset GPU: nothing waits In Progress
    assert {g.fabric_state for g in session.read().gpus} <= {"Completed", None}


def test_an_a100_mig_mode_change_applies_with_the_fabric_manager_running(tmp_path: Path) -> None:
    # MIG User Guide / DGX A100 User Guide: stop the daemons that hold the GPU (nvsm, DCGM), not the fabric manager
    session = on_file(tmp_path, "dgx-a100")
    run_on(session, "systemctl", "stop", "nvidia-persistenced", "nvidia-dcgm")
    run_on(session, "modprobe", "-r", "nvidia_drm")
    out = run_on(session, "nvidia-smi", "-i", "0", "-mig", "1")
    assert out.stdout.startswith("Enabled MIG Mode for GPU"), out.stdout
    assert session.read().gpu(0).mig_mode_current is True


# ---------------------------------------------------------------- row 15: A30 2g.12gb+me from R525


def test_a30_lgip_and_lgipp_at_535_are_the_captures(tmp_path: Path) -> None:
    state = load_fixture("a30")
    assert int(state.driver.version.split(".")[0]) >= 525
    run(state, "nvidia-smi", "-i", "0", "-mig", "1")
    lgip = run(state, "nvidia-smi", "mig", "-i", "0", "-lgip")
    assert lgip == read_corpus("nvml/mig_lgip_A30_535_with_2g12gb_me.txt")
    lgipp = run(state, "nvidia-smi", "mig", "-i", "0", "-lgipp")
    assert lgipp == read_corpus("nvml/mig_lgipp_A30_535_with_2g12gb_me.txt")


def test_a30_has_one_media_extension_for_its_two_me_profiles() -> None:
    state = load_fixture("a30")
    run(state, "nvidia-smi", "-i", "0", "-mig", "1")
    out = run(state, "nvidia-smi", "mig", "-i", "0", "-cgi", "2g.12gb+me", "-C")
    assert "using profile MIG 2g.12gb+me (ID  6)" in out
    refused = run_tool(["nvidia-smi", "mig", "-i", "0", "-cgi", "1g.6gb+me"], Session(state=state))
    assert refused.exit_code != 0 and "Insufficient Resources" in refused.stdout + refused.stderr
    # the other half of the GPU still takes a plain 2g
    assert "using profile MIG 2g.12gb (ID  5)" in run(state, "nvidia-smi", "mig", "-i", "0", "-cgi", "5")


# ---------------------------------------------------------------- row 27: xid-48 marks a row for remapping


def test_xid_48_on_an_a100_marks_a_row_for_remapping_until_the_gpu_is_reset(tmp_path: Path) -> None:
    session = on_file(tmp_path, "dgx-a100")
    with session.update() as state:
        FAULTS["xid-48"].apply(state, gpu=2)
    dmesg = run_on(session, "dmesg").stdout
    # the Xid catalogue's Xid 63 text (corpus xid_catalog), right after the Xid 48
    xids = re.findall(r"NVRM: Xid \(PCI:[^)]+\): (\d+), .*", dmesg)
    assert xids[-2:] == ["48", "63"]
    assert "Row Remapper: New row (0x" in dmesg and "marked for remapping, reset gpu to activate." in dmesg
    q = run_on(session, "nvidia-smi", "-i", "2", "-q", "-d", "ROW_REMAPPER").stdout
    assert re.search(r"Uncorrectable Error\s+: 1", q) and re.search(r"Pending\s+: Yes", q), q
    for step in (["systemctl", "stop", "nvidia-persistenced", "nvidia-dcgm"], ["modprobe", "-r", "nvidia_drm"]):
        run_on(session, *step)
    assert run_on(session, "nvidia-smi", "-i", "2", "-r").exit_code == 0
    q = run_on(session, "nvidia-smi", "-i", "2", "-q", "-d", "ROW_REMAPPER").stdout
    assert re.search(r"Pending\s+: No", q), q


# ---------------------------------------------------------------- row 29: systemctl status of a forking unit


def test_systemctl_status_nvidia_persistenced_has_the_lines_of_a_real_forking_unit() -> None:
    from assessor.parsers.services import parse

    real = read_corpus("systemctl_status/06_persistenced_active_running_forking_process_line.txt").splitlines()
    ours = run(load_fixture("hgx-h100"), "systemctl", "status", "nvidia-persistenced").splitlines()

    def shape(line: str) -> str:
        # the field names and what systemd writes around the values, without the node's values
        line = re.sub(r"since .*", "since TIME", line)
        line = re.sub(r"^\S+ \d+ [\d:]+ \S+ ", "DATE HOST ", line)
        line = re.sub(r"ExecStart=.* \(code", "ExecStart=CMD (code", line)  # the unit's command line
        line = re.sub(r"└─(\d+) .*", r"└─\1 CMD", line)
        return re.sub(r"\d+", "9", line).rstrip()

    assert [shape(line) for line in ours] == [shape(line) for line in real]
    process = next(line for line in ours if "Process:" in line)
    main = next(line for line in ours if "Main PID:" in line)
    assert int(process.split()[1]) < int(main.split()[2])  # the launcher exited; its child is the daemon
    # gpulab's own parser still reads it (and the capture)
    for text in (ours, real):
        services = parse("\n".join(text)).services or []
        assert [(s.name, s.active_state) for s in services][:1] == [("nvidia-persistenced.service", "active")]


# ---------------------------------------------------------------- row 30: idle memory


def test_an_idle_l40s_at_550_uses_1_mib_as_the_capture() -> None:
    state = load_fixture("pcie-l40s")
    out = run(state, "nvidia-smi")
    assert re.search(r"\|\s+1MiB /\s+46068MiB \|", out), out
    assert run(state, "nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader").splitlines()[0] == "1 MiB"


def test_a30_mig_devices_have_the_memory_a_real_a30_shows() -> None:
    """The MIG devices box of a real A30 at 535.183.01 (2g.12gb 11968 MiB, 1g.6gb 5952 MiB), same layout."""
    real = read_corpus("nvml/nvidia_smi_default_A30_535_mig_idle.txt")
    state = load_fixture("a30")
    run(state, "nvidia-smi", "-i", "0", "-mig", "1")
    run(state, "nvidia-smi", "mig", "-i", "0", "-cgi", "2g.12gb,1g.6gb,1g.6gb", "-C")
    box = run(state, "nvidia-smi")
    row = r"^\| +\d+ +\d+ +\d+ +\d+ +\| +\d+MiB / +(\d+)MiB +\|"  # a MIG device's first line

    def sizes(text: str) -> list[str]:
        return sorted(re.findall(row, text, flags=re.M))

    assert sizes(box) == sizes(real) == ["11968", "5952", "5952"]
