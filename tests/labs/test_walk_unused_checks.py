"""The node.os guard of drv-302 (issue #24): a driver "fix" that boots the node back into the kernel the update
replaced does not pass, and the grade names the guard with its reason. The lab's other walks (reference,
alternatives, wrong fixes) are in tests/labs/walks_driver_packages.py and run by tests/labs/test_walk.py."""

from __future__ import annotations

from pathlib import Path

from assessor.labs.gradebook import verdict
from assessor.labs.loader import default_root, load_catalogue
from tests.labs.test_walk import act, explain, grade, passes, started_node
from tests.labs.walks_driver_packages import HEADERS, NEW_KERNEL, PURGE_OLD

DRV_302 = load_catalogue(default_root()).get("drv-302")


def test_booting_the_replaced_kernel_breaks_the_node_os_guard(tmp_path: Path) -> None:
    spec = started_node(DRV_302, tmp_path)
    # the new kernel removed so that the old one, for which DKMS built the driver, boots again
    act(
        [f"apt-get purge -y linux-image-{NEW_KERNEL} linux-modules-{NEW_KERNEL}", PURGE_OLD, "reboot"],
        spec,
        must_work=True,
    )
    g = grade(DRV_302, spec)
    assert not passes(DRV_302, g), explain(g)
    node_os = next(s for s in g.scores if s.check == "node.os")
    assert node_os.credit < 1
    assert node_os.message == "kernel 5.15.0-91-generic is older than 5.15.0-94"
    assert f"guard broken: node.os: {node_os.message}" in verdict(g)


def test_the_reference_fix_keeps_the_node_os_guard(tmp_path: Path) -> None:
    spec = started_node(DRV_302, tmp_path)
    act([HEADERS, PURGE_OLD, "reboot"], spec, must_work=True)
    g = grade(DRV_302, spec)
    assert passes(DRV_302, g), explain(g)
    node_os = next(s for s in g.scores if s.check == "node.os")
    assert node_os.message == f"Ubuntu 22.04.3 LTS, kernel {NEW_KERNEL}, x86_64"
