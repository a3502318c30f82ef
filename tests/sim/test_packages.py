"""The simulated package tools (dpkg, apt, dkms, modinfo) and what they change on the node."""

from __future__ import annotations

from assessor.sim import faults
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult, run_tool

NEW = "5.15.0-94-generic"


def updated_node() -> tuple[NodeState, Session]:
    state = load_fixture("dgx-a100", in_use=True)
    faults.get("kernel-update-no-dkms").apply(state)
    return state, Session(state=state)


def sh(session: Session, line: str) -> ToolResult:
    return run_tool(line.split(), session)


def test_an_untouched_node_derives_one_branch_built_for_its_kernel_and_stores_nothing() -> None:
    state = load_fixture("hgx-h100")
    session = Session(state=state)
    listing = sh(session, "dpkg -l").stdout
    assert "ii  nvidia-dkms-565-server " in listing and "565.57.01-0ubuntu0.22.04.1" in listing
    assert sh(session, "dkms status").stdout == "nvidia/565.57.01, 5.15.0-91-generic, x86_64: installed\n"
    assert sh(session, "modinfo -F vermagic nvidia").stdout.startswith("5.15.0-91-generic SMP")
    listed = sh(session, "apt list --installed nvidia-dkms*").stdout.splitlines()
    assert listed == [
        "Listing... Done",
        "nvidia-dkms-565-server/jammy-updates,now 565.57.01-0ubuntu0.22.04.1 amd64 [installed,automatic]",
    ]
    assert state.packages is None  # reading commands change nothing


def test_the_fault_boots_a_kernel_dkms_never_built_for() -> None:
    state, session = updated_node()
    assert sh(session, "uname -r").stdout == f"{NEW}\n"
    assert not state.driver.loaded and not state.module_loaded("nvidia")
    refused = sh(session, "modprobe nvidia")
    assert refused.exit_code == 1
    assert refused.stderr == f"modprobe: FATAL: Module nvidia not found in directory /lib/modules/{NEW}\n"
    assert sh(session, "modinfo nvidia").stderr == "modinfo: ERROR: Module nvidia not found.\n"
    assert sh(session, "systemctl is-active nvidia-persistenced").stdout == "failed\n"
    assert "rc  nvidia-dkms-525-server " in sh(session, "dpkg -l").stdout
    assert sh(session, "dpkg -s nvidia-dkms-525-server").stdout.splitlines()[1] == "Status: deinstall ok config-files"


def test_dkms_refuses_without_headers_with_its_own_message() -> None:
    _, session = updated_node()
    r = sh(session, f"dkms install nvidia/535.129.03 -k {NEW}")
    assert r.exit_code != 0
    assert r.stderr.startswith(f"Error! Your kernel headers for kernel {NEW} cannot be found.\n")
    assert f"Please install the linux-headers-{NEW} package" in r.stderr


def test_installing_the_headers_builds_the_driver_and_modprobe_loads_that_build() -> None:
    state, session = updated_node()
    r = sh(session, f"apt-get install -y linux-headers-{NEW}")
    assert r.exit_code == 0
    assert f" * dkms: running auto installation service for kernel {NEW}" in r.stdout
    assert f"nvidia/535.129.03, {NEW}, x86_64: installed" in sh(session, "dkms status").stdout
    assert sh(session, "modprobe nvidia").exit_code == 0
    assert state.driver.loaded and state.driver.kernel_module_version == "535.129.03"
    assert sh(session, "dkms install nvidia/535.129.03 -k " + NEW).stdout.startswith("Module nvidia/535.129.03 already")


def test_apt_refuses_what_the_repository_lacks_and_non_root() -> None:
    _, session = updated_node()
    r = sh(session, "apt-get install -y nvidia-driver-999-server")
    assert (r.exit_code, r.stderr) == (100, "E: Unable to locate package nvidia-driver-999-server\n")
    user = Session(state=session.state, euid=1000)
    assert "are you root?" in run_tool(["apt", "purge", "nvidia-dkms-525-server"], user).stderr


def test_purge_takes_rc_rows_autoremove_the_unneeded_ones() -> None:
    _, session = updated_node()
    sh(session, "apt autoremove --purge -y")
    listing = sh(session, "dpkg -l").stdout
    assert "nvidia-kernel-source-525-server" not in listing  # installed automatically, needed by nothing
    assert "rc  nvidia-utils-525-server" in listing  # autoremove leaves configuration files of removed ones
    assert f"linux-modules-{NEW}" in listing  # the kernel needs its modules
    sh(session, "apt purge -y nvidia-utils-525-server")
    assert "nvidia-utils-525-server" not in sh(session, "dpkg -l").stdout


def test_a_reboot_boots_the_newest_kernel_left_installed() -> None:
    state, session = updated_node()
    sh(session, f"apt-get purge -y linux-image-{NEW}")
    sh(session, "reboot")
    assert sh(session, "uname -r").stdout == "5.15.0-91-generic\n"
    assert state.driver.loaded  # DKMS built the driver for the old kernel long ago


def test_another_branch_replaces_this_one_and_purging_all_leaves_no_driver() -> None:
    state, session = updated_node()
    r = sh(session, "apt-get install -y nvidia-driver-550-server")
    assert "The following packages will be REMOVED:" in r.stdout and "nvidia-dkms-535-server" in r.stdout
    assert f"Module build for kernel {NEW} was skipped" in r.stdout
    assert state.driver.version == "550.144.03"  # the new library
    run_tool(["apt", "purge", "-y", "*nvidia*"], session)
    assert "nvidia" not in sh(session, "dpkg -l").stdout
    assert state.services["nvidia-persistenced.service"].load_state == "not-found"
    sh(session, "reboot")
    assert not state.driver.loaded
