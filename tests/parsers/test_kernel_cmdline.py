"""/proc/cmdline and /etc/default/grub parsers, and the IOMMU mode a command line asks for."""

from __future__ import annotations

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.parsers.kernel_cmdline import grub_cmdline, iommu_mode, parse_cmdline, parse_grub_default
from tests.support.corpus import read_corpus


@pytest.mark.parametrize(
    ("sample", "mode", "ends"),
    [
        ("proc_cmdline/01_fdio_csit_haswell_intel_iommu_pt.txt", "passthrough", "console=ttyS0,115200n8"),
        ("proc_cmdline/02_fdio_csit_tx2_intel_iommu_on.txt", "translated", "vt.handoff=1"),
        ("proc_cmdline/03_fdio_csit_altra_iommu_passthrough.txt", "passthrough", "quiet"),
    ],
)
def test_proc_cmdline_corpus(sample: str, mode: str, ends: str) -> None:
    text = read_corpus(sample)
    kind, facts = parsers.parse_auto(text)
    assert kind == "proc-cmdline"
    line = facts.kernel_cmdline
    assert line is not None and line.startswith("BOOT_IMAGE=") and line.endswith(ends)
    assert "$" not in line  # the prompt line is not the command line
    assert iommu_mode(line) == mode


def test_grub_default_corpus() -> None:
    shipped = parsers.parse_auto(read_corpus("grub_default/01_ubuntu_default_quiet_splash.txt"))
    assert shipped[0] == "grub-default" and shipped[1].grub_cmdline == "quiet splash"
    assert iommu_mode("quiet splash") is None  # left to the kernel's build default
    kind, facts = parsers.parse_auto(read_corpus("grub_default/02_proxmox_intel_iommu_pt_acs_override.txt"))
    assert kind == "grub-default"
    assert facts.grub_cmdline is not None and "pcie_acs_override=downstream" in facts.grub_cmdline
    assert iommu_mode(facts.grub_cmdline) == "passthrough"


@pytest.mark.parametrize(
    ("line", "mode"),
    [
        ("ro quiet intel_iommu=on", "translated"),
        ("ro quiet amd_iommu=on", "translated"),
        ("ro intel_iommu=on iommu=pt", "passthrough"),
        ("ro iommu=pt", "passthrough"),
        ("ro intel_iommu=on,sm_on iommu=pt", "passthrough"),
        ("ro intel_iommu=off", "off"),
        ("ro amd_iommu=off iommu=pt", "off"),
        ("ro iommu=off", "off"),
        ("ro iommu=pt iommu=nopt intel_iommu=on", "translated"),  # the last word for a parameter wins
        ("ro iommu.passthrough=0", "translated"),
        ("ro quiet splash", None),
        ("ro my_intel_iommu=on", None),
    ],
)
def test_iommu_mode(line: str, mode: str | None) -> None:
    assert iommu_mode(line) == mode


def test_grub_settings_read_as_the_shell_would() -> None:
    text = (
        'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n'
        "GRUB_CMDLINE_LINUX='console=ttyS0'\n"
        '# GRUB_CMDLINE_LINUX_DEFAULT="intel_iommu=off"\n'
        'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT intel_iommu=on"\n'
    )
    # LINUX first, then LINUX_DEFAULT (the default entry), the comment ignored, the variable expanded
    assert grub_cmdline(text) == "console=ttyS0 quiet splash intel_iommu=on"
    assert grub_cmdline("GRUB_DEFAULT=0\n") is None


def test_broken_input_names_the_line() -> None:
    with pytest.raises(ParseError) as err:
        parse_grub_default('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet intel_iommu=on\n')
    assert err.value.line == 2 and "quote" in str(err.value)
    with pytest.raises(ParseError):
        parse_grub_default("GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\n")
    with pytest.raises(ParseError):
        parse_cmdline("\n\n")
    with pytest.raises(ParseError) as err:
        parse_cmdline("\nhello world\n")
    assert err.value.line == 2


def test_truncated_paste_keeps_what_it_has() -> None:
    # a paste cut mid-line: the words that are there are the command line (its IOMMU words included)
    text = read_corpus("proc_cmdline/01_fdio_csit_haswell_intel_iommu_pt.txt")[:260]
    line = parse_cmdline(text).kernel_cmdline
    assert line is not None and "intel_iommu=on" in line and iommu_mode(line) == "passthrough"
