"""driver.packages: one clean branch, built for the running kernel, loaded at the packages' version."""

from __future__ import annotations

from assessor.facts import DebPackage, DkmsBuild, DriverInfo, KernelModule
from assessor.parsers import dpkg
from tests.support.builders import node, run
from tests.support.corpus import CORPUS

V = "535.129.03-0ubuntu0.22.04.1"
KERNEL = "5.15.0-94-generic"
UNAME = f"Linux dgx01 {KERNEL} #104-Ubuntu SMP Tue Jan 9 15:25:40 UTC 2024 x86_64 x86_64 x86_64 GNU/Linux"
BRANCH = [
    DebPackage("nvidia-driver-535-server", "ii", V, "amd64"),
    DebPackage("nvidia-dkms-535-server", "ii", V, "amd64"),
    DebPackage("libnvidia-compute-535-server", "ii", V, "amd64"),
    DebPackage("nvidia-fabricmanager-535", "ii", V, "amd64"),
    DebPackage(f"linux-image-{KERNEL}", "ii", "5.15.0-94.104", "amd64"),
    DebPackage("nvidia-container-toolkit", "ii", "1.17.3-1", "amd64"),  # no branch: not the driver's
]
BUILT = [DkmsBuild("nvidia", "535.129.03", "installed", KERNEL, "x86_64")]
LOADED = DriverInfo(version="535.129.03", kernel_module_version="535.129.03")
MODULES = [KernelModule("nvidia"), KernelModule("nvidia_uvm")]


def facts(**over: object):  # type: ignore[no-untyped-def]
    fields = {"packages": BRANCH, "dkms": BUILT, "uname": UNAME, "driver": LOADED, "modules": MODULES}
    fields.update(over)
    return node(**fields)


def test_one_branch_built_for_the_running_kernel_and_loaded_passes() -> None:
    r = run("driver.packages", facts(), branch="535", kernel=KERNEL)
    assert r.status == "pass", r.message
    assert r.observed == "535.129.03"
    assert KERNEL in r.message


def test_not_built_for_the_running_kernel_fails_naming_the_headers() -> None:
    old = [DkmsBuild("nvidia", "535.129.03", "installed", "5.15.0-91-generic", "x86_64")]
    r = run("driver.packages", facts(dkms=old, driver=DriverInfo(version="535.129.03"), modules=[]))
    assert r.status == "fail"
    assert KERNEL in r.message and f"linux-headers-{KERNEL}" in str(r.hint)


def test_added_but_not_built_is_not_built() -> None:
    r = run("driver.packages", facts(dkms=[DkmsBuild("nvidia", "535.129.03", "added")]))
    assert r.status == "fail" and "not built" in r.message


def test_rc_rows_of_an_old_branch_fail_as_leftovers() -> None:
    left = [*BRANCH, DebPackage("nvidia-dkms-525-server", "rc", "525.147.05-0ubuntu0.22.04.1", "amd64")]
    r = run("driver.packages", facts(packages=left))
    assert r.status == "fail"
    assert "rc nvidia-dkms-525-server" in r.observed and "purge" in str(r.hint)


def test_two_installed_branches_fail() -> None:
    two = [*BRANCH, DebPackage("nvidia-kernel-source-525-server", "ii", "525.147.05-0ubuntu0.22.04.1", "all")]
    r = run("driver.packages", facts(packages=two))
    assert r.status == "fail" and "525" in r.message and "535" in r.message


def test_the_required_branch_and_kernel() -> None:
    assert run("driver.packages", facts(), branch="550").status == "fail"
    r = run("driver.packages", facts(), kernel="5.15.0-91-generic")
    assert r.status == "fail" and r.observed == KERNEL


def test_module_built_at_another_version_or_loaded_at_another_fails() -> None:
    stale = [DkmsBuild("nvidia", "535.104.05", "installed", KERNEL, "x86_64")]
    assert run("driver.packages", facts(dkms=stale)).status == "fail"
    old = DriverInfo(version="535.129.03", kernel_module_version="535.104.05")
    r = run("driver.packages", facts(driver=old))
    assert r.status == "fail" and "535.104.05" in r.message


def test_built_but_not_loaded_fails() -> None:
    r = run(
        "driver.packages",
        facts(driver=DriverInfo(nvml_error="couldn't communicate"), modules=[KernelModule("mlx5_core")]),
    )
    assert r.status == "fail" and "not loaded" in r.message


def test_no_driver_at_all_fails_but_an_excerpt_without_one_skips() -> None:
    bare = [DebPackage(f"linux-image-{KERNEL}", "ii", "5.15.0-94.104", "amd64")]
    assert run("driver.packages", facts(packages=bare)).status == "fail"
    excerpt = facts(packages=bare)
    excerpt.partial["packages"] = "an excerpt"
    assert run("driver.packages", excerpt).status == "skip"


def test_missing_sources_skip() -> None:
    assert run("driver.packages", facts(packages=None)).status == "skip"
    assert run("driver.packages", facts(uname=None)).status == "skip"
    assert run("driver.packages", facts(dkms=None)).status == "skip"


def test_ubuntus_prebuilt_modules_for_the_running_kernel_need_no_dkms() -> None:
    text = (CORPUS / "dpkg" / "02_dpkg_l_grep_550_server_cut.txt").read_text(encoding="utf-8")
    pasted = dpkg.parse(text).packages
    uname = "Linux n1 6.8.0-51-generic #52-Ubuntu SMP x86_64 x86_64 x86_64 GNU/Linux"
    loaded = DriverInfo(version="550.127.08", kernel_module_version="550.127.08")
    r = run("driver.packages", facts(packages=pasted, dkms=None, uname=uname, driver=loaded))
    assert r.status == "pass", r.message
    assert run("driver.packages", facts(packages=pasted, dkms=None, uname=UNAME, driver=loaded)).status == "skip"


def test_dkms_alone_fails_a_driver_built_for_no_kernel_and_otherwise_says_what_it_saw() -> None:
    added = run("driver.packages", node(dkms=[DkmsBuild("nvidia", "535.129.03", "added")]))
    assert added.status == "fail" and "no kernel" in added.message
    built = run("driver.packages", node(dkms=BUILT))
    assert built.status == "skip" and KERNEL in built.message
