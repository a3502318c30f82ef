"""The driver as installed: one branch in the package database, its module built for the running kernel, and loaded."""

from __future__ import annotations

import re
from typing import Any

from assessor.checks.base import MissingFacts, Param, check, need, result
from assessor.checks.result import Result
from assessor.facts import DebPackage, DkmsBuild, NodeFacts

# A driver package's branch: the three digits after its role (nvidia-dkms-535-server, libnvidia-compute-550,
# cuda-drivers-550, nvidia-fabricmanager-535, nvidia-firmware-550-server-550.127.08).
_BRANCH = re.compile(r"^(?:lib)?(?:nvidia|cuda-drivers)[a-z0-9-]*?-(\d{3})(?:-|$)")
# Ubuntu's prebuilt, signed modules for one kernel: linux-modules-nvidia-550-server-6.8.0-51-generic.
_PREBUILT = re.compile(r"^linux-modules-nvidia-(\d{3})[a-z-]*?-(\d+\.\d+\.\d+-\d+-[a-z0-9]+)$")
# The packages whose version is the driver's (the kernel module's source and the user-space library).
_VERSIONED_ROLES = ("nvidia-dkms", "libnvidia-compute", "nvidia-kernel-source", "nvidia-utils")
PURGE_HINT = "apt purge the other branch's packages (an rc row keeps its configuration files until purged)"


def branch_of(name: str) -> str | None:
    m = _BRANCH.match(name)
    return m.group(1) if m else None


def _upstream(version: str) -> str:
    return version.split("-", 1)[0].split(":")[-1]


def _kernel(facts: NodeFacts) -> str | None:
    parts = (facts.uname or "").split()
    return parts[2] if len(parts) > 2 else None


def _dkms_alone(builds: list[DkmsBuild]) -> Result:
    """dkms status without dpkg -l: a driver DKMS built for no kernel fails; else what it built, and a skip."""
    nvidia = [d for d in builds if d.module == "nvidia"]
    shown = [f"{d.module}/{d.version}, {d.kernel or '-'}: {d.state}" for d in nvidia]
    if nvidia and not any(d.state == "installed" and d.kernel for d in nvidia):
        return result(
            "driver.packages",
            "fail",
            "DKMS holds the nvidia driver's source but built it for no kernel: nothing can load it",
            observed=shown,
            expected="nvidia/VERSION, RUNNING-KERNEL: installed",
            hint="install the running kernel's headers (apt install linux-headers-$(uname -r)), then dkms autoinstall",
        )
    seen = "; ".join(shown) or "no nvidia module"
    raise MissingFacts(f"dkms status shows {seen}, but without dpkg.txt (dpkg -l) the installed branch is unknown")


def _branch_version(rows: list[DebPackage], branch: str) -> str | None:
    """The driver version of the installed branch: its DKMS source's, else its library's."""
    for role in _VERSIONED_ROLES:
        for p in rows:
            if p.status == "ii" and p.version and p.name.startswith(f"{role}-{branch}"):
                return _upstream(p.version)
    return None


@check(
    "driver.packages",
    title="NVIDIA driver packages installed cleanly, built for the running kernel",
    facts=("packages", "dkms", "uname", "driver", "modules"),
    params=(
        Param("branch", "str", None, "the driver branch that must be installed, e.g. 535 (None: any one branch)"),
        Param("kernel", "str", None, "the kernel that must be running, e.g. 5.15.0-94-generic (None: any)"),
    ),
    doc=(
        "Reads the package database (dpkg -l) and DKMS (dkms status) against the running kernel (uname -a) and the "
        "loaded module (/proc/driver/nvidia/version). Passes when exactly one driver branch is installed and no "
        "package of another branch is left (rows in rc state still hold that branch's configuration files), "
        "when the nvidia module of that branch's version is built and installed for the running kernel (by "
        "DKMS, or Ubuntu's prebuilt linux-modules-nvidia package for that kernel), and when the module loaded "
        "is that version. With branch, the branch must be that one; with kernel, that kernel must be running."
    ),
    remedy=(
        "After a kernel update: install the running kernel's headers (apt install linux-headers-$(uname -r)); "
        "DKMS builds the driver for it (or dkms autoinstall; apt install --reinstall nvidia-dkms-BRANCH), then "
        "load it (modprobe nvidia, or reboot) and start the GPU daemons. Purge the packages of any other branch."
    ),
)
def driver_packages(facts: NodeFacts, params: dict[str, Any]) -> Result:
    if facts.packages is None and facts.dkms is not None:
        return _dkms_alone(facts.dkms)
    rows: list[DebPackage] = need(facts, "packages")
    excerpt = facts.partial.get("packages")
    drivers = [p for p in rows if branch_of(p.name)]
    installed = sorted({b for p in drivers if p.status == "ii" and (b := branch_of(p.name))})
    if not installed:
        if excerpt:
            raise MissingFacts(f"no NVIDIA driver package in the dpkg -l excerpt, which proves nothing: {excerpt}")
        return result(
            "driver.packages",
            "fail",
            "no NVIDIA driver branch is installed (dpkg -l lists no nvidia package in state ii)",
            observed=sorted({f"{p.status} {p.name}" for p in drivers}),
            expected="one driver branch installed",
            hint="install the driver branch the node runs (apt install nvidia-driver-BRANCH-server)",
        )
    if len(installed) > 1:
        return result(
            "driver.packages",
            "fail",
            f"{len(installed)} driver branches are installed at once: {', '.join(installed)}",
            observed={
                b: sorted(p.name for p in drivers if branch_of(p.name) == b and p.status == "ii") for b in installed
            },
            expected="one branch",
            hint=PURGE_HINT,
        )
    branch = installed[0]
    wanted = params.get("branch")
    if wanted is not None and str(wanted) != branch:
        return result(
            "driver.packages",
            "fail",
            f"driver branch {branch} is installed, branch {wanted} is required",
            observed=branch,
            expected=str(wanted),
            hint=f"install branch {wanted} (its packages replace the others), then reboot",
        )
    leftovers = sorted(f"{p.status} {p.name}" for p in drivers if p.status != "ii")
    if leftovers:
        return result(
            "driver.packages",
            "fail",
            f"{len(leftovers)} driver package(s) left half-removed beside branch {branch}: {', '.join(leftovers[:6])}"
            + (" ..." if len(leftovers) > 6 else ""),
            observed=leftovers,
            expected="no package of the driver left in rc or another non-installed state",
            hint=PURGE_HINT,
        )
    version = _branch_version(rows, branch)
    release = _kernel(facts)
    if release is None:
        raise MissingFacts("the running kernel is unknown: the snapshot lacks uname.txt (uname -a)")
    wanted_kernel = params.get("kernel")
    if wanted_kernel is not None and str(wanted_kernel) != release:
        return result(
            "driver.packages",
            "fail",
            f"kernel {release} is running, {wanted_kernel} is required",
            observed=release,
            expected=str(wanted_kernel),
            hint="the kernel the node was updated to must stay: build the driver for it rather than boot another",
        )
    prebuilt = [
        p
        for p in rows
        if p.status == "ii" and (m := _PREBUILT.match(p.name)) and m.group(1) == branch and m.group(2) == release
    ]
    if not prebuilt:
        builds: list[DkmsBuild] = need(facts, "dkms")
        mine = [d for d in builds if d.module == "nvidia" and d.kernel == release and d.state == "installed"]
        shown = [f"{d.module}/{d.version}, {d.kernel or '-'}: {d.state}" for d in builds if d.module == "nvidia"]
        if not mine:
            return result(
                "driver.packages",
                "fail",
                f"DKMS has not built the nvidia module{f' {version}' if version else ''} for the running kernel "
                f"{release}: nothing can load it",
                observed=shown or "no nvidia module in dkms status",
                expected=f"nvidia/{version or '<branch version>'}, {release}: installed",
                hint=f"apt install linux-headers-{release} (DKMS builds for a kernel once its headers are there), "
                f"or dkms install nvidia/{version or 'VERSION'} -k {release} once they are",
            )
        if version and all(d.version != version for d in mine):
            return result(
                "driver.packages",
                "fail",
                f"the nvidia module built for {release} is {mine[0].version}, the packages are {version}",
                observed=shown,
                expected=f"nvidia/{version}, {release}: installed",
                hint=f"rebuild it: apt install --reinstall nvidia-dkms-{branch}-server (or the branch's dkms package)",
            )
    driver = facts.driver
    loaded = driver.kernel_module_version if driver else None
    modules = {m.name for m in facts.modules} if facts.modules is not None else None
    if modules is not None and "nvidia" not in modules and not facts.partial.get("modules"):
        return result(
            "driver.packages",
            "fail",
            f"branch {branch} is built for {release} but the nvidia module is not loaded",
            observed=sorted(m for m in modules if m.startswith("nv")),
            expected="nvidia loaded",
            hint="modprobe nvidia (and the driver's other modules), or reboot; then start the GPU daemons",
        )
    if loaded and version and _upstream(loaded) != version:
        return result(
            "driver.packages",
            "fail",
            f"the loaded nvidia module is {loaded}, the installed packages are {version}",
            observed={"loaded": loaded, "packages": version},
            expected=version,
            hint="reload the driver (stop the GPU daemons, unload the nvidia modules, modprobe nvidia) or reboot",
        )
    evidence = f"branch {branch}" + (f" ({version})" if version else "") + f" built for {release}"
    if loaded:
        evidence += f", module {loaded} loaded"
    return result("driver.packages", "pass", evidence, observed=version or branch)
