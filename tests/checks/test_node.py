"""node.os: the operating system and kernel, from /etc/os-release and uname -a."""

from __future__ import annotations

from assessor import parsers
from assessor.checks.node import kernel_of
from tests.support.builders import node, run

UBUNTU = parsers.parse("os-release", 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\n')
ROCKY = parsers.parse("os-release", 'NAME="Rocky Linux"\nVERSION_ID="9.3"\nID="rocky"\nID_LIKE="rhel centos fedora"\n')
GRACE = (
    "Linux gb200-01 6.8.0-1013-nvidia-64k #14-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug  9 2024 aarch64 aarch64 aarch64 "
    "GNU/Linux"
)


def test_with_no_parameter_it_reports_what_it_read() -> None:
    r = run("node.os", node(os_release=UBUNTU.os_release, uname=GRACE))
    assert (r.status, r.message) == ("pass", "Ubuntu 22.04.4 LTS, kernel 6.8.0-1013-nvidia-64k, aarch64")


def test_a_distribution_outside_the_list_fails_and_id_like_counts() -> None:
    r = run("node.os", node(os_release=UBUNTU.os_release), distros=["ubuntu 24.04", "rhel 9"])
    assert r.status == "fail" and "Ubuntu 22.04.4 LTS is not one of ubuntu 24.04, rhel 9" in r.message
    assert run("node.os", node(os_release=ROCKY.os_release), distros=["rhel 9"]).status == "pass"
    assert run("node.os", node(os_release=UBUNTU.os_release), distros=["ubuntu 22"]).status == "pass"


def test_an_old_kernel_or_the_wrong_machine_fails() -> None:
    old = "Linux n1 5.4.0-150-generic #167-Ubuntu SMP Mon May 15 17:35:05 UTC 2023 x86_64 x86_64 x86_64 GNU/Linux"
    r = run("node.os", node(uname=old), min_kernel="5.15", arch="aarch64")
    assert r.status == "fail"
    assert "kernel 5.4.0-150-generic is older than 5.15" in r.message
    assert "machine x86_64, expected aarch64" in r.message
    assert run("node.os", node(uname=GRACE), min_kernel="6.8", arch="arm64").status == "pass"


def test_the_kernel_abi_counts_so_a_kernel_update_can_be_required() -> None:
    # Ubuntu's kernel updates keep 5.15.0 and change the ABI number: booting the one the update replaced fails
    before = "Linux n1 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023 x86_64 x86_64 x86_64 GNU/Linux"
    r = run("node.os", node(uname=before), min_kernel="5.15.0-94")
    assert (r.status, r.message) == ("fail", "kernel 5.15.0-91-generic is older than 5.15.0-94")
    assert run("node.os", node(uname=before.replace("-91-", "-94-")), min_kernel="5.15.0-94").status == "pass"
    assert run("node.os", node(uname=before), min_kernel="5.15").status == "pass"  # a version alone: any ABI


def test_what_is_not_captured_is_never_judged() -> None:
    assert run("node.os", node()).status == "skip"
    r = run("node.os", node(uname=GRACE), distros=["ubuntu 22.04"])  # uname alone says nothing of the OS
    assert r.status == "skip" and "the OS (no /etc/os-release)" in r.message
    assert run("node.os", node(problems={"os_release": "os-release.txt: empty"})).status == "error"


def test_kernel_of_reads_uname_a_and_a_bare_release() -> None:
    assert kernel_of(GRACE) == ("6.8.0-1013-nvidia-64k", "aarch64")
    assert kernel_of("5.15.0-91-generic") == ("5.15.0-91-generic", None)
    assert kernel_of(None) == (None, None)
