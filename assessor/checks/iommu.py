"""The IOMMU mode the kernel runs in, and the one its next boot gets: GPU peer-to-peer over PCIe."""

from __future__ import annotations

from typing import Any

from assessor.checks.base import Param, check, need, result
from assessor.checks.result import Result
from assessor.facts import NodeFacts
from assessor.parsers.kernel_cmdline import MODES, PASSTHROUGH, TRANSLATED, iommu_mode

_IOMMU_WORDS = ("iommu=", "intel_iommu=", "amd_iommu=", "iommu.passthrough=")
_HINT = (
    "add iommu=pt to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub (or turn the IOMMU off where nothing "
    "needs it), run update-grub and reboot; cat /proc/cmdline and dmesg | grep -i iommu then show it"
)


def _iommu_words(cmdline: str) -> str:
    """The IOMMU parameters of ``cmdline`` as written, or ``no IOMMU parameter``."""
    words = [w for w in cmdline.split() if w.startswith(_IOMMU_WORDS)]
    return " ".join(words) if words else "no IOMMU parameter"


def _mode_text(mode: str | None) -> str:
    return mode if mode is not None else "the kernel's default"


@check(
    "node.iommu",
    title="IOMMU in passthrough or off (GPU peer-to-peer over PCIe)",
    facts=("kernel_cmdline", "grub_cmdline"),
    params=(Param("modes", "list", [PASSTHROUGH, "off"], "IOMMU modes accepted: passthrough, off, translated"),),
    doc=(
        "Reads the IOMMU mode the running kernel was booted with (/proc/cmdline: iommu=pt is passthrough; "
        "intel_iommu=off, amd_iommu=off or iommu=off is off; intel_iommu=on or amd_iommu=on without iommu=pt "
        "is translated) and, when /etc/default/grub is in the snapshot, the mode its next boot gets after "
        "update-grub. NCCL's troubleshooting guide warns that IO virtualization (VT-d, IOMMU) can redirect PCI "
        "peer-to-peer traffic to the CPU root complex, slowing GPU-to-GPU copies over PCIe or hanging them. "
        "A command line that names no IOMMU parameter leaves the mode to the kernel's build default: skip, "
        "never pass. A mode set only in grub.cfg, which the next update-grub writes over, fails on the "
        "/etc/default/grub it does not match."
    ),
    remedy=_HINT,
)
def node_iommu(facts: NodeFacts, params: dict[str, Any]) -> Result:
    wanted = [str(m) for m in params.get("modes") or (PASSTHROUGH, "off")]
    unknown = [m for m in wanted if m not in MODES]
    if unknown:
        return result(
            "node.iommu",
            "error",
            f"unknown IOMMU mode(s) {', '.join(unknown)} (modes: {', '.join(MODES)})",
            expected={"modes": wanted},
            hint="give modes from passthrough, off, translated",
        )
    next_line = facts.grub_cmdline
    if next_line is None and "grub_cmdline" in facts.problems:
        need(facts, "grub_cmdline")  # a /etc/default/grub that could not be read: error, not a pass on half
    if facts.kernel_cmdline is None and next_line is not None and "kernel_cmdline" not in facts.problems:
        return _next_boot_only(next_line, wanted)
    booted: str = need(facts, "kernel_cmdline")
    mode = iommu_mode(booted)
    next_mode = iommu_mode(next_line) if next_line is not None else None
    observed = {
        "booted": _iommu_words(booted),
        "mode": mode,
        "next_boot": _iommu_words(next_line) if next_line is not None else None,
        "next_mode": next_mode,
    }
    expected = {"modes": wanted}
    if mode is not None and mode not in wanted:
        slowed = " (GPU peer-to-peer DMA over PCIe goes through IOMMU translation)" if mode == TRANSLATED else ""
        pending = (
            f"; /etc/default/grub would boot {_mode_text(next_mode)} next: update-grub and reboot"
            if next_line is not None and next_mode in wanted
            else ""
        )
        return result(
            "node.iommu",
            "fail",
            f"the kernel runs with IOMMU {mode}{slowed}: {_iommu_words(booted)}{pending}",
            observed=observed,
            expected=expected,
            hint=_HINT,
        )
    if next_line is not None and next_mode is not None and next_mode not in wanted:
        return result(
            "node.iommu",
            "fail",
            f"the kernel runs with IOMMU {_mode_text(mode)}, but /etc/default/grub gives the next boot "
            f"{_mode_text(next_mode)} ({_iommu_words(next_line)}): the next update-grub and reboot bring it back",
            observed=observed,
            expected=expected,
            hint="make the change in /etc/default/grub itself (grub.cfg is rewritten by every update-grub)",
        )
    if mode is None:
        return result(
            "node.iommu",
            "skip",
            "the kernel command line names no IOMMU parameter: the mode is the kernel's build default",
            observed=observed,
            expected=expected,
            hint="state it on the kernel command line (iommu=pt, or intel_iommu=off/amd_iommu=off), or read "
            "dmesg's 'iommu: Default domain type' line",
        )
    unsaid = (
        " (/etc/default/grub names no IOMMU parameter: the next boot takes the kernel's default)"
        if next_line is not None and next_mode is None
        else ""
    )
    return result(
        "node.iommu", "pass", f"IOMMU {mode}: {_iommu_words(booted)}{unsaid}", observed=observed, expected=expected
    )


def _next_boot_only(next_line: str, wanted: list[str]) -> Result:
    """Only /etc/default/grub: what the next boot gets can fail; the running kernel stays unknown."""
    next_mode = iommu_mode(next_line)
    observed = {"booted": None, "mode": None, "next_boot": _iommu_words(next_line), "next_mode": next_mode}
    expected = {"modes": wanted}
    if next_mode is not None and next_mode not in wanted:
        return result(
            "node.iommu",
            "fail",
            f"/etc/default/grub gives the next boot IOMMU {next_mode}: {_iommu_words(next_line)}",
            observed=observed,
            expected=expected,
            hint=_HINT,
        )
    return result(
        "node.iommu",
        "skip",
        f"/etc/default/grub gives the next boot IOMMU {_mode_text(next_mode)}; what the running kernel "
        "booted with is unknown (no /proc/cmdline)",
        observed=observed,
        expected=expected,
        hint="capture cat /proc/cmdline (cmdline.txt)",
    )
