"""A simulated node's packages: the NVIDIA driver branch, kernels and headers, and the modules DKMS built.

Names and versions are Ubuntu's (the ``-server`` driver branches of its restricted archive, the names a
data-centre node installs: ``nvidia-driver-535-server``, ``nvidia-dkms-535-server``,
``libnvidia-compute-535-server``; ``-server-open`` for the open kernel modules; the fabric manager as
``nvidia-fabricmanager-535``), as ``dpkg -l | grep nvidia`` prints them on real nodes
(``tests/data/corpus/dpkg``). A node's database is derived from its driver and kernel until something
changes it (:func:`package_db`), then kept in ``NodeState.packages``.

What the package manager does here is what the maintainer scripts do on Ubuntu, and nothing is
downloaded: apt installs from the node's repository list only.

- ``nvidia-dkms-B`` installed: its source is added to DKMS and built for every installed kernel whose headers
  are installed; a kernel without headers is skipped with dkms' own message. Removed: its DKMS module goes.
- ``linux-headers-R`` installed: DKMS builds every added module for kernel R
  (``/etc/kernel/header_postinst.d/dkms``). ``linux-image-R`` installed without its headers: the build for R
  fails with dkms' "kernel headers ... cannot be found" (``/etc/kernel/postinst.d/dkms``).
- The ``nvidia`` module loads (``modprobe``, at boot) only for a kernel DKMS installed it for, at the version
  DKMS built; a reboot boots the newest installed kernel, as GRUB's default entry does.
- ``libnvidia-compute-B`` sets the user-space driver version (NVML, nvidia-smi); a loaded module of another
  version is then a driver/library mismatch.
- ``nvidia-compute-utils-B`` carries ``nvidia-persistenced``'s unit, ``nvidia-fabricmanager-B`` the fabric
  manager's: removed, the unit is gone; installed, it is enabled (started where the driver allows).
- Installing a package of one driver branch removes every installed package of another (they conflict):
  removed packages keep their configuration files (``rc``) until purged.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from assessor.sim.package_db import DkmsModule, Package, PackageDb
from assessor.sim.state import NodeState

DEFAULT_RELEASE = "5.15.0-91-generic"
DEFAULT_KERNEL_BUILD = "#101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023"
# Other branches an Ubuntu 22.04/24.04 archive carries, at releases NVIDIA published (a different-branch install
# is a wrong fix in the labs, so it must be possible).
OTHER_RELEASES = ("535.230.02", "550.144.03", "570.133.20")
# The roles of a driver branch's packages: (name template, description, depends on roles, shown with :arch).
_ROLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("nvidia-driver-{b}", "NVIDIA Server Driver metapackage", ("utils", "dkms", "compute", "cfg1", "compute-utils")),
    ("nvidia-dkms-{b}", "NVIDIA DKMS package", ("kernel-common", "kernel-source")),
    ("nvidia-kernel-common-{b}", "Shared files used with the kernel module", ("firmware",)),
    ("nvidia-kernel-source-{b}", "NVIDIA kernel source package", ()),
    ("nvidia-firmware-{b}-{v}", "Firmware files used by the kernel module", ()),
    ("libnvidia-compute-{b}", "NVIDIA libcompute package", ()),
    ("libnvidia-cfg1-{b}", "NVIDIA binary OpenGL/GLX configuration library", ()),
    ("nvidia-utils-{b}", "NVIDIA driver support binaries", ("compute",)),
    ("nvidia-compute-utils-{b}", "NVIDIA compute utilities", ("compute",)),
)
_ROLE_OF = {
    "driver": "nvidia-driver-{b}",
    "dkms": "nvidia-dkms-{b}",
    "kernel-common": "nvidia-kernel-common-{b}",
    "kernel-source": "nvidia-kernel-source-{b}",
    "firmware": "nvidia-firmware-{b}-{v}",
    "compute": "libnvidia-compute-{b}",
    "cfg1": "libnvidia-cfg1-{b}",
    "utils": "nvidia-utils-{b}",
    "compute-utils": "nvidia-compute-utils-{b}",
}
FABRIC_MANAGER = "nvidia-fabricmanager-{branch}"
# A driver package's branch: the three digits after the role (nvidia-dkms-535-server, cuda-drivers-550,
# nvidia-fabricmanager-535, libnvidia-compute-535:amd64).
_BRANCH = re.compile(r"^(?:lib)?(?:nvidia|cuda-drivers)[a-z0-9-]*?-(\d{3})(?:-|:|$)")
_KERNEL_PACKAGE = re.compile(r"^linux-(image|headers|modules)-(\d+\.\d+\.\d+-\d+-[a-z0-9]+)$")
UNIT_OF_PACKAGE = {
    "nvidia-compute-utils": "nvidia-persistenced.service",
    "nvidia-fabricmanager": "nvidia-fabricmanager.service",
}
MODULE_FILES = ("nvidia", "nvidia-modeset", "nvidia-drm", "nvidia-uvm", "nvidia-peermem")


# ---- names and versions ----------------------------------------------------------------------


def branch_of(name: str) -> str | None:
    """The driver branch a package belongs to (``nvidia-dkms-535-server`` -> ``535``); None for other packages."""
    m = _BRANCH.match(name)
    return m.group(1) if m else None


def upstream(version: str) -> str:
    """``535.129.03-0ubuntu0.22.04.1`` -> ``535.129.03``."""
    return version.split("-", 1)[0].split(":")[-1]


def role_of(name: str) -> str | None:
    """A driver package's role, its branch and flavour taken out: ``nvidia-dkms-535-server`` -> ``nvidia-dkms``."""
    b = branch_of(name)
    if b is None:
        return None
    return name.split(f"-{b}", 1)[0]


def _version_key(version: str) -> tuple[tuple[int, str], ...]:
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"[.\-+~]", version))


def flavour(state: NodeState) -> str:
    """``-server`` (the data-centre branches of Ubuntu's archive), ``-server-open`` with the open kernel modules."""
    return "-server-open" if state.driver.open_kernel_module else "-server"


def distro_suffix(state: NodeState) -> str:
    """The Ubuntu release part of an archive version: ``-0ubuntu0.22.04.1``."""
    return f"-0ubuntu0.{state.os_release.get('VERSION_ID', '22.04')}.1"


def arch(state: NodeState) -> str:
    """dpkg's architecture of the node: ``arm64`` on Grace (``uname -m`` aarch64), else ``amd64``."""
    parts = (state.uname or "").split()
    machine = parts[-4] if len(parts) >= 8 and parts[-1] == "GNU/Linux" else "x86_64"
    return "arm64" if machine == "aarch64" else "amd64"


def running_kernel(state: NodeState) -> str:
    parts = (state.uname or "").split()
    return parts[2] if len(parts) > 2 else DEFAULT_RELEASE


def _kernel_build(state: NodeState) -> str:
    parts = (state.uname or "").split()
    return " ".join(parts[3:-4]) if len(parts) > 7 else DEFAULT_KERNEL_BUILD


def kernel_package_version(release: str, build: str) -> str:
    """``5.15.0-91-generic`` built ``#101-Ubuntu ...`` -> ``5.15.0-91.101`` (the linux-image package's version)."""
    base = release.rsplit("-", 1)[0]
    m = re.match(r"#(\d+)", build)
    return f"{base}.{m.group(1) if m else '1'}"


def branch_packages(state: NodeState, version: str, *, fabric_manager: bool) -> list[Package]:
    """The packages of the driver branch of ``version`` (every one, as ``nvidia-driver-B`` pulls them in)."""
    b = version.split(".")[0]
    fl = flavour(state)
    full = version + distro_suffix(state)
    a = arch(state)

    def name(template: str) -> str:
        return template.format(b=b + fl, v=version)

    out = []
    for template, description, needs in _ROLES:
        pkg_arch = "all" if "firmware" in template or "kernel-source" in template else a
        out.append(
            Package(
                name=name(template),
                version=full,
                arch=pkg_arch,
                description=description,
                auto=not template.startswith("nvidia-driver-"),
                depends=[name(_ROLE_OF[r]) for r in needs] + (["dkms"] if "dkms" in template else []),
            )
        )
    if fabric_manager:
        out.append(
            Package(
                name=FABRIC_MANAGER.format(branch=b),
                version=full,
                arch=a,
                description="Fabric Manager for NVSwitch based systems.",
            )
        )
    return out


def kernel_packages(release: str, version: str, *, headers: bool) -> list[Package]:
    """``linux-image-R``, ``linux-modules-R`` and, with ``headers``, ``linux-headers-R``."""
    short = release.rsplit("-", 1)[0]
    out = [
        Package(
            f"linux-image-{release}",
            version,
            description=f"Signed kernel image {release.rsplit('-', 1)[1]}",
            depends=[f"linux-modules-{release}"],
        ),
        Package(
            f"linux-modules-{release}",
            version,
            description=f"Linux kernel extra modules for version {short.split('-')[0]} on 64 bit x86 SMP",
            auto=True,
        ),
    ]
    if headers:
        out.append(
            Package(
                f"linux-headers-{release}",
                version,
                description=f"Linux kernel headers for version {short.split('-')[0]} on 64 bit x86 SMP",
            )
        )
    return out


def _dkms_package(state: NodeState) -> Package:
    newer = state.os_release.get("VERSION_ID", "22.04") >= "24.04"
    version = "3.0.11-1ubuntu13" if newer else "2.8.7-2ubuntu2.2"
    return Package("dkms", version, "all", "Dynamic Kernel Module System (DKMS)", auto=True)


def has_fabric_manager(state: NodeState) -> bool:
    unit = state.services.get("nvidia-fabricmanager.service")
    return unit is not None and unit.load_state != "not-found"


def default_db(state: NodeState) -> PackageDb:
    """The database of a node nobody changed: its driver's branch installed, its DKMS module built for the running
    kernel (whose headers are installed), and a repository holding that branch, three others and the headers."""
    release = running_kernel(state)
    kversion = kernel_package_version(release, _kernel_build(state))
    fm = has_fabric_manager(state)
    installed = [
        *branch_packages(state, state.driver.version, fabric_manager=fm),
        *kernel_packages(release, kversion, headers=True),
        _dkms_package(state),
    ]
    repository = copy.deepcopy(installed)
    mine = state.driver.version.split(".")[0]
    for other in OTHER_RELEASES:
        if other.split(".")[0] != mine:
            repository += branch_packages(state, other, fabric_manager=fm)
    machine = "aarch64" if arch(state) == "arm64" else "x86_64"
    dkms = [DkmsModule("nvidia", state.driver.version, release, machine, "installed")]
    return PackageDb(installed=installed, repository=repository, dkms=dkms)


def package_db(state: NodeState) -> PackageDb:
    """The node's database: stored, or derived (not stored: read-only commands leave the state as it was)."""
    return state.packages if state.packages is not None else default_db(state)


def stored_db(state: NodeState) -> PackageDb:
    """The node's database, stored in the state so that a change sticks."""
    if state.packages is None:
        state.packages = default_db(state)
    return state.packages


# ---- what is installed ---------------------------------------------------------------------


def installed(db: PackageDb, name: str) -> Package | None:
    """The ``ii`` row of ``name`` (``name:amd64`` too)."""
    bare = name.split(":", 1)[0]
    return next((p for p in db.installed if p.name == bare and p.status == "ii"), None)


def row(db: PackageDb, name: str) -> Package | None:
    """The row of ``name`` in dpkg's database, installed or ``rc``."""
    bare = name.split(":", 1)[0]
    return next((p for p in db.installed if p.name == bare), None)


def installed_kernels(db: PackageDb) -> list[str]:
    """Releases with a ``linux-image`` installed, oldest first."""
    found = [(p.version, m.group(2)) for p in db.installed if (m := _KERNEL_PACKAGE.match(p.name))]
    found = [(v, r) for v, r in found if installed(db, f"linux-image-{r}")]
    return [r for _, r in sorted(set(found), key=lambda vr: _version_key(vr[0]))]


def has_headers(db: PackageDb, release: str) -> bool:
    return installed(db, f"linux-headers-{release}") is not None


def driver_branches(db: PackageDb) -> list[str]:
    """The branches with an installed (``ii``) driver package."""
    return sorted({b for p in db.installed if p.status == "ii" and (b := branch_of(p.name))})


def module_build(state: NodeState, release: str | None = None) -> DkmsModule | None:
    """The DKMS ``nvidia`` build installed for ``release`` (the running kernel by default)."""
    release = release or running_kernel(state)
    db = package_db(state)
    return next((d for d in db.dkms if d.module == "nvidia" and d.kernel == release and d.state == "installed"), None)


def module_version(state: NodeState) -> str | None:
    """The version of the nvidia module the running kernel would load; None when there is none for it."""
    if state.packages is None:
        return state.driver.version
    build = module_build(state)
    return build.version if build else None


def library_version(db: PackageDb) -> str | None:
    """The user-space driver's version: the installed ``libnvidia-compute``'s."""
    lib = next((p for p in db.installed if p.status == "ii" and role_of(p.name) == "libnvidia-compute"), None)
    return upstream(lib.version) if lib else None


# ---- apt: resolving and acting ----------------------------------------------------------------


@dataclass
class Plan:
    """What one apt command does: each list in the order apt acts."""

    install: list[Package] = field(default_factory=list)  # new, or --reinstall of an installed one
    remove: list[Package] = field(default_factory=list)  # ii -> rc (or gone, when purging)
    purge: bool = False
    not_installed: list[str] = field(default_factory=list)  # named for removal, not installed
    notes: list[str] = field(default_factory=list)  # "Note, selecting ..." lines


class AptError(Exception):
    """What apt refuses (``E: ...``), exit 100."""


def select(db: PackageDb, pattern: str, *, for_removal: bool) -> list[str]:
    """Package names a command-line word names: itself, or the names its glob matches (apt 2's wildcards)."""
    bare = pattern.split(":", 1)[0]
    if not any(c in bare for c in "*?["):
        known = {p.name for p in db.repository} | {p.name for p in db.installed}
        if bare not in known:
            raise AptError(f"Unable to locate package {pattern}")
        return [bare]
    pool = db.installed if for_removal else db.repository
    names = sorted({p.name for p in pool if fnmatch.fnmatchcase(p.name, bare)})
    if not names:
        raise AptError(f"Unable to locate package {pattern}")
    return names


def plan_install(db: PackageDb, words: Iterable[str], *, reinstall: bool = False) -> Plan:
    plan = Plan()
    wanted: list[Package] = []
    for word in words:
        names = select(db, word, for_removal=False)
        if len(names) > 1 or names[0] != word.split(":", 1)[0]:
            plan.notes += [f"Note, selecting '{n}' for glob '{word}'" for n in names]
        for n in names:
            pkg = _candidate(db, n)
            if pkg is None:
                raise AptError(f"Package '{n}' has no installation candidate")
            wanted.append(pkg)
    seen: set[str] = set()
    todo = list(wanted)
    while todo:
        pkg = todo.pop(0)
        if pkg.name in seen:
            continue
        seen.add(pkg.name)
        have = installed(db, pkg.name)
        explicit = any(pkg.name == w.name for w in wanted)
        if have is None or have.version != pkg.version or (reinstall and explicit):
            plan.install.append(copy.deepcopy(pkg))
            plan.install[-1].auto = not explicit and (have.auto if have else True)
        for dep in pkg.depends:
            candidate = _candidate(db, dep)
            if candidate is not None and installed(db, dep) is None:
                todo.append(candidate)
    # A branch not installed yet replaces the installed ones: their packages conflict with its own.
    switching = {b for p in plan.install if (b := branch_of(p.name))} - set(driver_branches(db))
    for p in db.installed:
        b = branch_of(p.name)
        if switching and p.status == "ii" and b is not None and b not in switching:
            plan.remove.append(p)
    return plan


def _candidate(db: PackageDb, name: str) -> Package | None:
    found = [p for p in db.repository if p.name == name]
    return max(found, key=lambda p: _version_key(p.version)) if found else None


def plan_remove(db: PackageDb, words: Iterable[str], *, purge: bool) -> Plan:
    plan = Plan(purge=purge)
    for word in words:
        names = select(db, word, for_removal=True)
        if len(names) > 1 or names[0] != word.split(":", 1)[0]:
            plan.notes += [f"Note, selecting '{n}' for glob '{word}'" for n in names]
        for n in names:
            r = row(db, n)
            if r is None or (r.status == "rc" and not purge):
                plan.not_installed.append(n)
            elif r not in plan.remove:
                plan.remove.append(r)
    # What depends on a removed package goes with it (the driver metapackage with its dkms package).
    changed = True
    while changed:
        changed = False
        gone = {p.name for p in plan.remove}
        for p in db.installed:
            if p.status == "ii" and p not in plan.remove and any(d in gone for d in p.depends):
                plan.remove.append(p)
                changed = True
    return plan


def plan_autoremove(db: PackageDb, *, purge: bool) -> Plan:
    """Automatically installed packages nothing installed needs any more."""
    plan = Plan(purge=purge)
    keep = {p.name for p in db.installed if p.status == "ii" and not p.auto}
    todo = list(keep)
    while todo:
        name = todo.pop()
        pkg = installed(db, name)
        for dep in pkg.depends if pkg else ():
            if dep not in keep:
                keep.add(dep)
                todo.append(dep)
    plan.remove = [p for p in db.installed if p.status == "ii" and p.auto and p.name not in keep]
    return plan


# ---- the maintainer scripts: what installing and removing does to the node ----------------------


def dkms_arch(state: NodeState) -> str:
    return "aarch64" if arch(state) == "arm64" else "x86_64"


def headers_missing(release: str) -> str:
    """dkms 2.8's refusal to build for a kernel without headers (Ubuntu 22.04's dkms)."""
    return (
        f"Error! Your kernel headers for kernel {release} cannot be found.\n"
        f"Please install the linux-headers-{release} package,\n"
        "or use the --kernelsourcedir option to tell DKMS where it's located\n"
    )


def dkms_build(state: NodeState, module: str, version: str, release: str) -> tuple[bool, str]:
    """Build and install ``module/version`` for ``release``: (done, what dkms prints)."""
    db = stored_db(state)
    if not has_headers(db, release):
        return False, headers_missing(release)
    a = dkms_arch(state)
    db.dkms = [d for d in db.dkms if not (d.module == module and d.version == version and d.kernel in (None, release))]
    db.dkms.append(DkmsModule(module, version, release, a, "installed"))
    lines = [f"Building for {release}", f"Building initial module for {release}", "Done.", ""]
    for ko in MODULE_FILES:
        lines += [
            f"{ko}.ko:",
            "Running module version sanity check.",
            " - Original module",
            "   - No original module exists within this kernel",
            " - Installation",
            f"   - Installing to /lib/modules/{release}/updates/dkms/",
            "",
        ]
    lines.append("depmod...")
    return True, "\n".join(lines) + "\n"


def dkms_added(db: PackageDb) -> list[tuple[str, str]]:
    """(module, version) pairs in the DKMS tree."""
    return sorted({(d.module, d.version) for d in db.dkms})


def autoinstall(state: NodeState, release: str) -> tuple[bool, str]:
    """``dkms autoinstall`` for ``release``: every added module not yet installed for it."""
    db = stored_db(state)
    out = []
    ok = True
    for module, version in dkms_added(db):
        if any(
            d.module == module and d.version == version and d.kernel == release and d.state == "installed"
            for d in db.dkms
        ):
            continue
        done, text = dkms_build(state, module, version, release)
        out.append(text)
        ok = ok and done
    return ok, "".join(out)


def after_install(state: NodeState, pkg: Package) -> str:
    """What the package's maintainer scripts do and print once it is unpacked."""
    db = stored_db(state)
    role = role_of(pkg.name)
    m = _KERNEL_PACKAGE.match(pkg.name)
    out = ""
    if m and m.group(1) == "headers":
        release = m.group(2)
        _, built = autoinstall(state, release)
        out = (
            "/etc/kernel/header_postinst.d/dkms:\n"
            f" * dkms: running auto installation service for kernel {release}\n{built}   ...done.\n"
        )
    elif m and m.group(1) == "image":
        release = m.group(2)
        _, built = autoinstall(state, release)
        out = (
            f"Processing triggers for linux-image-{release} ({pkg.version}) ...\n/etc/kernel/postinst.d/dkms:\n"
            f" * dkms: running auto installation service for kernel {release}\n{built}   ...done.\n"
        )
    elif role == "nvidia-dkms":
        version = upstream(pkg.version)
        db.dkms = [d for d in db.dkms if not (d.module == "nvidia" and d.version == version)]
        db.dkms.append(DkmsModule("nvidia", version, None, dkms_arch(state), "added"))
        lines = [f"Loading new nvidia-{version} DKMS files..."]
        for release in installed_kernels(db):
            if not has_headers(db, release):
                lines.append(
                    f"Module build for kernel {release} was skipped since the kernel headers for this kernel "
                    "does not seem to be installed."
                )
                continue
            _, text = dkms_build(state, "nvidia", version, release)
            lines.append(text.rstrip("\n"))
        out = "\n".join(lines) + "\n"
    elif role == "libnvidia-compute":
        state.driver.version = upstream(pkg.version)
    return out


def after_remove(state: NodeState, pkg: Package) -> str:
    """What the package's removal scripts do and print."""
    db = stored_db(state)
    role = role_of(pkg.name)
    m = _KERNEL_PACKAGE.match(pkg.name)
    if m and m.group(1) == "image":
        release = m.group(2)
        gone = [d for d in db.dkms if d.kernel == release]
        db.dkms = [d for d in db.dkms if d.kernel != release]
        lines = [f"dkms: removing: {d.module} {d.version} ({release}) ({d.arch})" for d in gone]
        if release == running_kernel(state):
            lines.insert(0, f"W: Removing the running kernel {release}: it runs until the next reboot")
        return "".join(f"{line}\n" for line in lines)
    if role == "nvidia-dkms":
        version = upstream(pkg.version)
        had = [d for d in db.dkms if d.module == "nvidia" and d.version == version]
        db.dkms = [d for d in db.dkms if d not in had]
        lines = [f"Module nvidia-{version} for kernel {d.kernel} ({d.arch})." for d in had if d.kernel]
        return "".join(f"{line}\n" for line in lines) + "Removing all DKMS Modules\nDone.\n"
    return ""


def unit_of(pkg: Package) -> str | None:
    """The systemd unit a package ships (``nvidia-compute-utils-B``: nvidia-persistenced), None for most."""
    return UNIT_OF_PACKAGE.get(role_of(pkg.name) or "")


# ---- boot --------------------------------------------------------------------------------------


def boot_kernel(state: NodeState) -> None:
    """At boot: the newest installed kernel runs (GRUB's default entry), and uname and the log say so."""
    if state.packages is None:
        return
    kernels = installed_kernels(state.packages)
    if not kernels:
        return
    new = kernels[-1]
    old = running_kernel(state)
    if new == old:
        return
    version = next(p.version for p in state.packages.installed if p.name == f"linux-image-{new}")
    state.uname = kernel_uname(state, new, version)


def booted_log(state: NodeState, log: list[str]) -> list[str]:
    """A fresh boot's kernel log, its ``Linux version`` banner naming the kernel that runs."""
    if state.packages is None or not log:
        return log
    release = running_kernel(state)
    out = []
    for line in log:
        m = re.search(r"Linux version (\S+) ", line)
        if m and m.group(1) != release:
            line = line.replace(m.group(1), release)
        out.append(line)
    return out


# Build stamps of the kernels the labs run (Ubuntu's changelogs: the uname -v of each ABI).
_BUILDS = {
    "5.15.0-91-generic": "#101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023",
    "5.15.0-94-generic": "#104-Ubuntu SMP Tue Jan 9 15:25:40 UTC 2024",
}


def kernel_uname(state: NodeState, release: str, package_version: str) -> str:
    """``uname -a`` of the node running ``release``."""
    build = _BUILDS.get(release) or f"#{package_version.rsplit('.', 1)[-1]}-Ubuntu SMP"
    m = "aarch64" if arch(state) == "arm64" else "x86_64"
    return f"Linux {state.host} {release} {build} {m} {m} {m} GNU/Linux"


def nvidia_module_missing(state: NodeState, name: str) -> str | None:
    """modprobe's refusal of an nvidia module the running kernel has no build of; None when it has one."""
    if state.packages is None or not name.startswith("nvidia") or module_build(state) is not None:
        return None
    return f"modprobe: FATAL: Module {name} not found in directory /lib/modules/{running_kernel(state)}\n"
