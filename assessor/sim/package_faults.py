"""Faults of a node's packages (:mod:`assessor.sim.packages`), registered in :mod:`assessor.sim.faults`.

``kernel-update-no-dkms``: unattended-upgrades installed a new kernel (image and modules, not its headers: the
node has ``linux-image-generic`` without ``linux-headers-generic``), the node rebooted into it, and DKMS, which
needs the headers, never built the driver for it: no ``nvidia`` module for the running kernel, so nothing
loads at boot, ``nvidia-smi`` cannot reach the driver and the GPU daemons fail. An older driver branch,
half-removed long ago, is still in the package database: its packages ``rc`` (configuration files left) and two of
them still installed (pulled in automatically, never autoremoved). The apt history of the upgrade is in the
node's log (``/var/log/unattended-upgrades/unattended-upgrades-dpkg.log``), where the refusal of dkms shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assessor.errors import InputError
from assessor.sim import packages as pk
from assessor.sim.package_db import Package
from assessor.sim.state import NodeState

UPGRADE_LOG = "/var/log/unattended-upgrades/unattended-upgrades-dpkg.log"
LEFTOVER = "525.147.05"  # the 525 branch's last release in Ubuntu's archive (docker/docs#19366's dpkg -l)
_LEFT_INSTALLED = ("nvidia-kernel-source", "nvidia-firmware")  # still ii, automatically installed


def next_kernel(release: str) -> str:
    """The kernel an update brings: ``5.15.0-91-generic`` -> ``5.15.0-94-generic`` (three ABIs on)."""
    base, _, flavour = release.rpartition("-")
    version, _, abi = base.rpartition("-")
    if not abi.isdigit():
        raise InputError(f"cannot tell the next kernel after {release}: give option kernel")
    return f"{version}-{int(abi) + 3}-{flavour}"


def _kernel_version(release: str) -> str:
    build = pk._BUILDS.get(release, "")
    return pk.kernel_package_version(release, build) if build else release.rsplit("-", 1)[0] + ".1"


def _apply(state: NodeState, kernel: Any = None, leftover: Any = None) -> None:
    from assessor.sim.tools.boot import reboot

    old = pk.running_kernel(state)
    new = str(kernel) if kernel is not None else next_kernel(old)
    left = str(leftover) if leftover is not None else LEFTOVER
    if new == old:
        raise InputError(f"kernel {new} is the one the node runs already")
    if left.split(".")[0] == state.driver.version.split(".")[0]:
        raise InputError(f"leftover {left} is of the branch the node runs ({state.driver.version})")
    db = pk.stored_db(state)
    version = _kernel_version(new)
    db.installed += pk.kernel_packages(new, version, headers=False)
    db.repository += pk.kernel_packages(new, version, headers=True)
    short = new.rsplit("-", 1)[0].replace("-", ".")
    meta = f"{short}.{version.rsplit('.', 1)[-1]}"
    db.repository.append(
        Package(
            "linux-headers-generic",
            meta,
            description="Generic Linux kernel headers",
            depends=[f"linux-headers-{new}"],
        )
    )
    for p in pk.branch_packages(state, left, fabric_manager=False):
        role = pk.role_of(p.name) or ""
        p.status = "ii" if role in _LEFT_INSTALLED else "rc"
        p.auto = True
        db.installed.append(p)
    reboot(state)  # the update's reboot: the new kernel runs, without an nvidia module


def _revert(state: NodeState, kernel: Any = None, leftover: Any = None) -> None:
    from assessor.sim.fixtures import fixture_names, load_fixture
    from assessor.sim.tools.boot import reboot

    state.packages = None
    state.uname = load_fixture(state.fixture).uname if state.fixture in fixture_names() else None
    reboot(state)


def _cause(state: NodeState, root: Path) -> None:
    """The upgrade's dpkg log: the new kernel set up, and dkms unable to build for it."""
    from assessor.sim.config_root import write_node_file

    new = pk.running_kernel(state)
    version = _kernel_version(new)
    text = (
        f"Log started: 2025-01-15  06:24:11\n"
        f"Selecting previously unselected package linux-modules-{new}.\n"
        f"Preparing to unpack .../linux-modules-{new}_{version}_amd64.deb ...\n"
        f"Unpacking linux-modules-{new} ({version}) ...\n"
        f"Selecting previously unselected package linux-image-{new}.\n"
        f"Preparing to unpack .../linux-image-{new}_{version}_amd64.deb ...\n"
        f"Unpacking linux-image-{new} ({version}) ...\n"
        f"Setting up linux-modules-{new} ({version}) ...\n"
        f"Setting up linux-image-{new} ({version}) ...\n"
        f"Processing triggers for linux-image-{new} ({version}) ...\n"
        "/etc/kernel/postinst.d/dkms:\n"
        f" * dkms: running auto installation service for kernel {new}\n"
        f"{pk.headers_missing(new)}"
        "   ...done.\n"
        "/etc/kernel/postinst.d/initramfs-tools:\n"
        f"update-initramfs: Generating /boot/initrd.img-{new}\n"
        "Log ended: 2025-01-15  06:25:02\n\n"
    )
    write_node_file(root, UPGRADE_LOG, text)


def _cure(state: NodeState, root: Path) -> None:
    target = root / UPGRADE_LOG.lstrip("/")
    if target.is_file():
        target.unlink()


KERNEL_UPDATE_NO_DKMS = (
    "kernel-update-no-dkms",
    "a kernel update without its headers and a reboot into it: DKMS built no nvidia module for the running kernel "
    "(nothing loads, nvidia-smi fails, the GPU daemons fail), and an older branch half-removed (options kernel, "
    "leftover: its release)",
    "driver.packages",
    _apply,
    _revert,
    _cause,
    _cure,
)
