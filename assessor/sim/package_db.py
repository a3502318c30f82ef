"""The package database of a simulated node, as data: what dpkg knows, what apt can install, what DKMS built.

``NodeState.packages`` holds one :class:`PackageDb`, or None for a node whose packages were never changed:
then :func:`assessor.sim.packages.package_db` derives the database from the node's driver, kernel and units
(one driver branch, its DKMS module built for the running kernel), so every node answers ``dpkg -l`` and
``dkms status`` without its fixture saying anything about packages. The first package command that changes
something stores the database in the state.

Only the data lives here (the state imports it); what the package tools do with it is in
:mod:`assessor.sim.packages`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Package:
    """One package: a row of ``dpkg -l`` when installed, an entry of apt's lists when in the repository."""

    name: str  # nvidia-dkms-535-server, linux-headers-5.15.0-94-generic
    version: str  # the Debian version: 535.129.03-0ubuntu0.22.04.1
    arch: str = "amd64"  # amd64, arm64, all
    description: str = ""
    status: str = "ii"  # dpkg -l's first two letters: ii installed, rc removed with its configuration files left
    auto: bool = False  # installed as a dependency (apt-mark showauto): apt autoremove takes it once unneeded
    depends: list[str] = field(default_factory=list)  # the packages it needs, by name


@dataclass
class DkmsModule:
    """One line of ``dkms status``: a module version added to the DKMS tree, and the kernel it was built for."""

    module: str  # nvidia
    version: str  # 535.129.03
    kernel: str | None = None  # 5.15.0-91-generic; None: added only (its source registered, built for no kernel)
    arch: str = "x86_64"
    state: str = "installed"  # added, built, installed


@dataclass
class PackageDb:
    installed: list[Package] = field(default_factory=list)  # dpkg's database: ii and rc rows
    repository: list[Package] = field(default_factory=list)  # what apt can install (its lists, already updated)
    dkms: list[DkmsModule] = field(default_factory=list)
