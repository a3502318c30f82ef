"""node.iommu: the IOMMU mode the kernel runs in and the one /etc/default/grub gives the next boot."""

from __future__ import annotations

from assessor.checks import REGISTRY, run_check
from assessor.facts import NodeFacts
from assessor.parsers import parse
from tests.support.corpus import read_corpus

CHECK = REGISTRY["node.iommu"]
BOOT = "BOOT_IMAGE=/boot/vmlinuz-5.15.0-91-generic root=/dev/md0 ro quiet "


def verdict(booted: str | None, grub: str | None = None, **params: object) -> tuple[str, str]:
    r = run_check(CHECK, NodeFacts(kernel_cmdline=booted, grub_cmdline=grub), params)
    if r.status in ("fail", "error"):
        assert r.hint, r.message
    return r.status, r.message


def test_translated_fails_and_says_why() -> None:
    status, message = verdict(BOOT + "intel_iommu=on", "quiet intel_iommu=on")
    assert status == "fail" and "translated" in message and "intel_iommu=on" in message


def test_real_translated_sample_fails() -> None:
    facts = parse("proc-cmdline", read_corpus("proc_cmdline/02_fdio_csit_tx2_intel_iommu_on.txt"))
    assert run_check(CHECK, facts, {}).status == "fail"


def test_passthrough_and_off_pass_when_the_next_boot_agrees() -> None:
    assert verdict(BOOT + "intel_iommu=on iommu=pt", "quiet intel_iommu=on iommu=pt")[0] == "pass"
    assert verdict(BOOT + "intel_iommu=off", "quiet intel_iommu=off")[0] == "pass"
    assert verdict(BOOT + "iommu=pt")[0] == "pass"  # no /etc/default/grub captured: the running kernel decides
    status, message = verdict(BOOT + "iommu=pt", "quiet")  # set on the running kernel, unsaid in the file
    assert status == "pass" and "the next boot takes the kernel's default" in message


def test_grub_edited_but_not_applied_fails_with_the_step_left() -> None:
    status, message = verdict(BOOT + "intel_iommu=on", "quiet intel_iommu=on iommu=pt")
    assert status == "fail" and "update-grub and reboot" in message


def test_hand_edited_grub_cfg_fails_on_the_next_boot() -> None:
    status, message = verdict(BOOT + "intel_iommu=on iommu=pt", "quiet intel_iommu=on")
    assert status == "fail" and "next boot translated" in message


def test_no_iommu_word_is_no_evidence() -> None:
    assert verdict(BOOT.strip(), "quiet")[0] == "skip"
    assert verdict(None)[0] == "skip"
    status, message = verdict(None, "quiet intel_iommu=on")  # only the next boot known: it alone can fail
    assert status == "fail" and "next boot" in message
    assert verdict(None, "quiet iommu=pt")[0] == "skip"


def test_modes_param() -> None:
    assert verdict(BOOT + "intel_iommu=off", modes=["passthrough"])[0] == "fail"
    assert verdict(BOOT + "intel_iommu=on", modes=["translated"])[0] == "pass"
    assert verdict(BOOT + "iommu=pt", modes=["bogus"])[0] == "error"


def test_broken_sources_are_errors() -> None:
    broken = NodeFacts(problems={"kernel_cmdline": "cmdline.txt: not /proc/cmdline"})
    assert run_check(CHECK, broken, {}).status == "error"
    half = NodeFacts(kernel_cmdline=BOOT + "iommu=pt", problems={"grub_cmdline": "grub-default.txt: unclosed"})
    assert run_check(CHECK, half, {}).status == "error"
