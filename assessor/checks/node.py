"""Node checks: the operating system and kernel the GPU stack runs on."""

from __future__ import annotations

import re
from typing import Any

from assessor.checks.base import Param, check, need, result
from assessor.checks.result import Result
from assessor.facts import NodeFacts

_RELEASE = re.compile(r"^\d+\.\d+(?:\.\d+)?\S*$")
_ARCHES = ("x86_64", "aarch64", "arm64", "ppc64le", "s390x")


def kernel_of(uname: str | None) -> tuple[str | None, str | None]:
    """(kernel release, machine) from ``uname -a`` (or a bare ``uname -r``); None for what it lacks.

    >>> kernel_of("Linux gpu01 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 UTC 2023 x86_64 x86_64 GNU/Linux")
    ('5.15.0-91-generic', 'x86_64')
    """
    words = (uname or "").split()
    release = words[2] if len(words) > 2 and words[0] == "Linux" and _RELEASE.match(words[2]) else None
    if release is None and len(words) == 1 and _RELEASE.match(words[0]):
        release = words[0]
    machine = next((w for w in reversed(words) if w in _ARCHES), None)
    return release, machine


def _numbers(release: str) -> tuple[int, ...]:
    """``5.15.0-91-generic`` -> (5, 15, 0, 91): the dotted numbers the release starts with, then the ABI number
    after its dash (a distribution's kernel update, the security fix, changes only that: 5.15.0-94)."""
    head = re.match(r"\d+(?:\.\d+)*(?:-\d+(?:\.\d+)*)?", release)
    return tuple(int(x) for x in re.split(r"[.-]", head.group())) if head else ()


def _os_name(os_release: dict[str, str]) -> str:
    return (
        os_release.get("PRETTY_NAME")
        or " ".join(x for x in (os_release.get("ID"), os_release.get("VERSION_ID")) if x)
        or "unknown OS"
    )


def _matches(os_release: dict[str, str], wanted: str) -> bool:
    """``ubuntu 22.04`` (ID and the start of VERSION_ID), or ``rhel`` (ID alone), case-insensitive."""
    parts = wanted.lower().split()
    if not parts:
        return False
    ids = {os_release.get("ID", "").lower(), *os_release.get("ID_LIKE", "").lower().split()}
    if parts[0] not in ids:
        return False
    if len(parts) == 1:
        return True
    version = os_release.get("VERSION_ID", "").lower()
    return version == parts[1] or version.startswith(parts[1] + ".")


@check(
    "node.os",
    title="Operating system and kernel",
    facts=("os_release", "uname"),
    params=(
        Param("distros", "list", None, "operating systems allowed, as 'ID VERSION_ID' (e.g. [ubuntu 22.04, rhel 9])"),
        Param(
            "min_kernel",
            "str",
            None,
            "lowest acceptable kernel release, compared numerically, ABI included (e.g. 5.15, 5.15.0-94)",
        ),
        Param("arch", "str", None, "the machine the node must be (x86_64, aarch64 for Grace GH200/GB200)"),
    ),
    doc=(
        "Reports the node's operating system (/etc/os-release) and kernel (uname -a) and compares them with "
        "what a profile supports: the driver, the fabric manager, DOCA/OFED and GPUDirect are built and "
        "validated per distribution and kernel, and a kernel updated under a DKMS driver is the usual reason "
        "the nvidia module is missing after a reboot. With no parameter the check passes when either is "
        "readable and reports it."
    ),
    remedy=(
        "Install a supported distribution and kernel (see the driver's and DOCA's release notes); after a kernel "
        "update rebuild the driver for it (dkms autoinstall) before rebooting into it."
    ),
)
def node_os(facts: NodeFacts, params: dict[str, Any]) -> Result:
    os_release = facts.os_release
    uname = facts.uname
    # a source that could not be read as its kind (uname.txt holding "hello world") is an error wherever the
    # verdict would need it: never a skip, and never a pass on the other source alone
    if (
        uname is None
        and "uname" in facts.problems
        and (os_release is None or params.get("min_kernel") or params.get("arch"))
    ):
        need(facts, "uname")
    if os_release is None and "os_release" in facts.problems and (uname is None or params.get("distros")):
        need(facts, "os_release")
    if os_release is None and uname is None:
        need(facts, "os_release")  # skip or error, saying why
        need(facts, "uname")
    release, machine = kernel_of(uname)
    name = _os_name(os_release) if os_release is not None else None
    observed = {"os": name, "kernel": release, "arch": machine}
    shown = ", ".join(
        x
        for x in (name or "OS unknown", f"kernel {release}" if release else "kernel unknown", machine)
        if x is not None
    )
    fails: list[str] = []
    unknown: list[str] = []
    distros = [str(d) for d in params.get("distros") or ()]
    if distros:
        if os_release is None:
            unknown.append("the OS (no /etc/os-release)")
        elif not any(_matches(os_release, d) for d in distros):
            fails.append(f"{name} is not one of {', '.join(distros)}")
    minimum = params.get("min_kernel")
    if minimum:
        if release is None:
            unknown.append("the kernel (no uname -a)")
        elif _numbers(release) < _numbers(str(minimum)):
            fails.append(f"kernel {release} is older than {minimum}")
    arch = params.get("arch")
    if arch:
        if machine is None:
            unknown.append("the machine (no uname -a)")
        elif machine != str(arch) and {machine, str(arch)} != {"aarch64", "arm64"}:
            fails.append(f"machine {machine}, expected {arch}")
    expected = {k: v for k, v in (("distros", distros or None), ("min_kernel", minimum), ("arch", arch)) if v}
    if fails:
        return result(
            "node.os",
            "fail",
            "; ".join(fails),
            observed=observed,
            expected=expected,
            hint="install a supported distribution and kernel; after a kernel update rebuild the driver (dkms)",
        )
    if unknown:
        return result(
            "node.os",
            "skip",
            f"cannot judge {', '.join(unknown)}: {shown}",
            observed=observed,
            expected=expected,
            hint="capture /etc/os-release and uname -a (os-release.txt, uname.txt)",
        )
    return result("node.os", "pass", shown, observed=observed, expected=expected or None)
