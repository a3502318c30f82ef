"""``bmc.network`` and ``bmc.credentials``: pass, fail naming what differs, skip without a capture, never a pass
without evidence."""

from __future__ import annotations

from typing import Any

from assessor.checks import REGISTRY, run_check
from assessor.checks.result import Result
from assessor.facts import BmcLan, BmcUser, NodeFacts
from assessor.parsers.ipmitool import parse_users
from tests.support.corpus import read_corpus

PLAN = {"ip": "10.40.8.21", "netmask": "255.255.252.0", "gateway": "10.40.8.1", "vlan": 40}
AS_PLANNED = BmcLan("static", "10.40.8.21", "255.255.252.0", "10.40.8.1", "3c:ec:ef:00:00:01", 40, True)


def net(lan: BmcLan | None, **params: Any) -> Result:
    return run_check(REGISTRY["bmc.network"], NodeFacts(bmc_lan=lan), {**PLAN, **params})


def creds(users: list[BmcUser] | None, **params: Any) -> Result:
    return run_check(REGISTRY["bmc.credentials"], NodeFacts(bmc_users=users), params)


def test_the_plan_passes() -> None:
    r = net(AS_PLANNED)
    assert r.status == "pass", r.message


def test_dhcp_and_a_wrong_gateway_are_both_named() -> None:
    lan = BmcLan("dhcp", "10.40.8.21", "255.255.252.0", "10.40.8.11", None, 40, True)
    r = net(lan)
    assert r.status == "fail" and r.hint
    assert "address source dhcp, not static" in r.message and "default gateway 10.40.8.11" in r.message
    assert "10.40.8.1" in r.message and "netmask" not in r.message


def test_an_untagged_bmc_fails_a_plan_with_a_vlan_and_passes_one_without() -> None:
    untagged = BmcLan("static", "10.40.8.21", "255.255.252.0", "10.40.8.1", None, None, True)
    assert "VLAN off, the plan says 40" in net(untagged).message
    assert net(untagged, vlan="off").status == "pass"


def test_no_capture_skips_and_a_capture_without_the_vlan_line_is_an_error() -> None:
    assert net(None).status == "skip"
    no_vlan = BmcLan("static", "10.40.8.21", "255.255.252.0", "10.40.8.1", None, None, False)
    r = net(no_vlan)
    assert r.status == "error" and "VLAN" in r.message


def test_a_malformed_plan_is_an_error_not_a_crash() -> None:
    r = net(AS_PLANNED, gateway="10.40.8")
    assert r.status == "error" and "gateway" in r.message and "internal" not in r.message


def test_the_supermicro_factory_state_fails_naming_admin() -> None:
    users = parse_users(read_corpus("ipmitool/05_supermicro_channel_getaccess_factory_admin.txt")).bmc_users
    r = creds(users)
    assert r.status == "fail" and r.hint
    assert "the factory account ADMIN (user 2) is enabled with ADMINISTRATOR" in r.message
    assert "no enabled account other than ADMIN" in r.message


def test_an_own_admin_and_admin_disabled_pass() -> None:
    users = [BmcUser(2, "ADMIN", "ADMINISTRATOR", False), BmcUser(3, "opsadmin", "ADMINISTRATOR", True)]
    r = creds(users)
    assert r.status == "pass" and "opsadmin" in r.message


def test_admin_without_privilege_counts_as_out_of_use() -> None:
    users = [BmcUser(2, "ADMIN", "NO ACCESS", True), BmcUser(4, "siteadm", "ADMINISTRATOR", True)]
    assert creds(users).status == "pass"


def test_locked_out_fails_even_with_admin_disabled() -> None:
    users = [BmcUser(2, "ADMIN", "ADMINISTRATOR", False), BmcUser(3, "opsadmin", "Unknown (0x00)", True)]
    r = creds(users)
    assert r.status == "fail" and "no enabled account other than ADMIN" in r.message


def test_user_list_alone_never_passes() -> None:
    # a user list: root has ADMINISTRATOR, xx (taken as the factory account) OPERATOR; nobody's enable status shown
    users = parse_users(read_corpus("ipmitool/03_dell_idrac_user_list_tabs.txt")).bmc_users
    r = creds(users, default_user="xx")
    assert r.status == "error" and "Enable Status" in r.message
    # root is the factory account and nobody else is an administrator: that fails whatever is enabled
    assert creds(users, default_user="root").status == "fail"
    assert creds(None).status == "skip"
