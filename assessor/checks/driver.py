"""Driver checks: the NVIDIA kernel module is loaded and matches the user-space library."""

from __future__ import annotations

import re
from typing import Any

from assessor.checks.base import BrokenFacts, MissingFacts, Param, check, need, result
from assessor.checks.result import Result
from assessor.facts import NodeFacts

RELOAD_HINT = (
    "reboot, or unload and reload the nvidia modules (stop nvidia-persistenced, fabric manager and DCGM; "
    "rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia_peermem nvidia; modprobe nvidia) so the kernel module "
    "and the user-space library are the same version"
)


def _module_names(facts: NodeFacts) -> set[str] | None:
    return None if facts.modules is None else {m.name for m in facts.modules}


@check(
    "driver.loaded",
    title="NVIDIA driver loaded",
    facts=("driver", "modules", "gpus"),
    params=(
        Param(
            "modules",
            "list",
            None,
            "other kernel modules of the driver that must be loaded too (lsmod), e.g. [nvidia_modeset, nvidia_drm] "
            "that a drain for a GPU reset unloads",
        ),
    ),
    doc=(
        "Verifies that the nvidia kernel module is loaded and that NVML can talk to it: no NVML error such as "
        "'Driver/library version mismatch', and the kernel module version (/proc/driver/nvidia/version) equals "
        "the user-space driver version nvidia-smi reports. Nothing on the GPUs works until this passes. With "
        "modules, those modules must be in lsmod as well: a drain before a GPU reset unloads nvidia_drm (and "
        "nvidia_modeset with it), and the node goes back into service with them loaded again."
    ),
    remedy=(
        "On a version mismatch, reboot or reload the nvidia modules (a driver upgrade replaced the library "
        "while the old module stayed loaded). If the module is absent, `modprobe nvidia` and read dmesg for "
        "why it did not load (DKMS build for this kernel, Secure Boot signing, nouveau still bound)."
    ),
)
def driver_loaded(facts: NodeFacts, params: dict[str, Any]) -> Result:
    driver = facts.driver
    modules = _module_names(facts)
    if driver is not None and driver.nvml_error:
        hint = (
            RELOAD_HINT
            if "mismatch" in driver.nvml_error.lower()
            else ("read dmesg for NVRM errors; reload the nvidia modules or reinstall the driver")
        )
        return result(
            "driver.loaded",
            "fail",
            f"NVML cannot reach the driver: {driver.nvml_error}",
            observed=driver.nvml_error,
            expected="NVML initialises",
            hint=hint,
        )
    if (
        driver is not None
        and driver.kernel_module_version
        and driver.version
        and not _same_version(driver.kernel_module_version, driver.version)
    ):
        return result(
            "driver.loaded",
            "fail",
            f"kernel module {driver.kernel_module_version} does not match the user-space driver {driver.version}",
            observed={"kernel_module": driver.kernel_module_version, "library": driver.version},
            expected="the same version",
            hint=RELOAD_HINT,
        )
    filtered = facts.partial.get("modules")
    if modules is not None and "nvidia" not in modules and filtered:
        modules = None  # an excerpt (lsmod | grep mlx5) that does not list nvidia says nothing about it
    if modules is not None and "nvidia" not in modules:
        return result(
            "driver.loaded",
            "fail",
            "the nvidia kernel module is not loaded (lsmod)",
            observed=sorted(m for m in modules if m.startswith("nv")),
            expected="nvidia",
            hint="modprobe nvidia, then read dmesg for why it did not load (DKMS build, Secure Boot, nouveau)",
        )
    others = [str(m).replace("-", "_") for m in params.get("modules") or ()]
    if others:
        if modules is None:
            if "modules" in facts.problems:
                raise BrokenFacts(f"modules: {facts.problems['modules']}")
            raise MissingFacts(f"cannot tell whether {', '.join(others)} are loaded: the snapshot lacks lsmod.txt")
        absent = [m for m in others if m not in modules]
        if absent:
            return result(
                "driver.loaded",
                "fail",
                f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not loaded (lsmod): the driver stack is "
                "not back in service",
                observed=sorted(m for m in modules if m.startswith("nv")),
                expected=["nvidia", *others],
                hint="modprobe " + " ".join(absent) + " (modprobe nvidia_drm loads nvidia_modeset with it); a drain "
                "before a GPU reset is undone in reverse: modules first, then the daemons",
            )
    evidence = []
    if modules is not None:
        evidence.append("nvidia module in lsmod" if not others else f"nvidia, {', '.join(others)} in lsmod")
    if driver is not None and driver.kernel_module_version:
        evidence.append(f"kernel module {driver.kernel_module_version}")
    if facts.gpus:
        evidence.append(f"{len(facts.gpus)} GPU(s) read")
    if driver is not None and driver.version and not evidence:
        evidence.append(f"driver {driver.version} reported")
    if evidence:
        version = (driver.version or driver.kernel_module_version) if driver else None
        return result("driver.loaded", "pass", "driver loaded: " + ", ".join(evidence), observed=version)
    broken = [f"{name}: {facts.problems[name]}" for name in ("driver", "modules", "gpus") if name in facts.problems]
    if broken:
        raise BrokenFacts("; ".join(broken))
    if filtered:
        raise MissingFacts(f"the nvidia module is not in the lsmod excerpt, which proves nothing: {filtered}")
    raise MissingFacts("no driver, lsmod or GPU facts: the snapshot lacks driver-version.txt, lsmod.txt and nvml.json")


def _same_version(a: str, b: str) -> bool:
    try:
        return _version_tuple(a) == _version_tuple(b)
    except ValueError:  # an odd version string: compare it as printed
        return a.strip() == b.strip()


def _version_tuple(text: str) -> tuple[int, ...]:
    """``535.129.03`` -> (535, 129, 3). Raises ValueError on a non-numeric version."""
    parts = text.strip().split(".")
    if not parts or not all(re.fullmatch(r"\d+", p) for p in parts):
        raise ValueError(f"{text!r} is not a dotted numeric version")
    return tuple(int(p) for p in parts)


@check(
    "driver.version",
    title="NVIDIA driver version",
    facts=("driver",),
    params=(
        Param("expected", "str", None, "exact driver version required, e.g. 535.129.03 (None: any)"),
        Param("min", "str", None, "lowest acceptable driver version, compared numerically (None: any)"),
    ),
    doc=(
        "Reports the installed driver version and compares it with the version a profile pins or the lowest it "
        "accepts. Versions are compared numerically field by field (535.129.03 > 535.54.03). With neither "
        "parameter the check passes when the version is readable, and reports it."
    ),
    remedy=(
        "Install the required driver branch (the CUDA, fabric manager and DCGM packages must match it), then "
        "reboot or reload the modules."
    ),
)
def driver_version(facts: NodeFacts, params: dict[str, Any]) -> Result:
    driver = need(facts, "driver")
    version = driver.version or driver.kernel_module_version
    if not version:
        raise MissingFacts("the driver version is unknown: the snapshot lacks nvidia-smi output or driver-version.txt")
    expected, minimum = params.get("expected"), params.get("min")
    try:
        have = _version_tuple(version)
        want = _version_tuple(str(expected)) if expected else None
        low = _version_tuple(str(minimum)) if minimum else None
    except ValueError as exc:
        return result(
            "driver.version",
            "error",
            f"cannot compare versions: {exc}",
            hint="give versions as dotted numbers, e.g. 535.129.03",
        )
    install = "install the required driver branch (with matching fabric manager and DCGM), then reboot"
    if want is not None and have != want:
        return result(
            "driver.version",
            "fail",
            f"driver {version}, expected {expected}",
            observed=version,
            expected=str(expected),
            hint=install,
        )
    if low is not None and have < low:
        return result(
            "driver.version",
            "fail",
            f"driver {version} is older than {minimum}",
            observed=version,
            expected=f">= {minimum}",
            hint=install,
        )
    shown = str(expected) if want else (f">= {minimum}" if low else None)
    return result("driver.version", "pass", f"driver {version}", observed=version, expected=shown)
