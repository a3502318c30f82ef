"""The node's BMC: its out-of-band network as the site plan has it, and no factory account left open.

``bmc.network`` compares ``ipmitool lan print 1`` with the plan: a static address (a DHCP lease changes under the
monitoring and the console server), the plan's address, netmask, gateway and VLAN. Every field that differs is
named.

``bmc.credentials`` reads the users of LAN channel 1 (``ipmitool channel getaccess 1``): the vendor's factory
account (``ADMIN`` on a Supermicro board) must not be usable (disabled, or no privilege on the channel), and
an enabled account with ADMINISTRATOR privilege must remain, or nobody can manage the BMC. No tool prints a
BMC password, so this check never sees one, never asks for one and never shows one: what it grades is which
accounts are open.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from assessor.checks.base import BrokenFacts, MissingFacts, Param, check, need, result
from assessor.checks.common import join_limited
from assessor.checks.result import Result
from assessor.facts import BmcLan, BmcUser, NodeFacts

_ADMIN = "ADMINISTRATOR"
_NO_PRIVILEGE = ("NO ACCESS", "Unknown (0x00)", None, "")


def _plan(params: dict[str, Any]) -> dict[str, str | int | None]:
    plan: dict[str, str | int | None] = {}
    for key in ("ip", "netmask", "gateway"):
        value = params.get(key)
        if value in (None, ""):
            continue
        try:
            plan[key] = str(ipaddress.IPv4Address(str(value)))
        except ValueError:
            raise BrokenFacts(f"the site plan's {key} {value!r} is not an IPv4 address") from None
    vlan = params.get("vlan")
    if vlan not in (None, "", "off"):
        plan["vlan"] = int(vlan)
    elif vlan == "off":
        plan["vlan"] = None
    return plan


@check(
    "bmc.network",
    title="BMC on the management network as planned",
    facts=("bmc_lan",),
    params=(
        Param("ip", "str", None, "the BMC's address in the site plan (10.40.8.21); None: not compared"),
        Param("netmask", "str", None, "the plan's netmask (255.255.252.0); None: not compared"),
        Param("gateway", "str", None, "the plan's default gateway; None: not compared"),
        Param("vlan", "int|str", None, "the plan's 802.1q VLAN id, or 'off' for untagged; None: not compared"),
        Param("static", "bool", True, "the address must be static (IP Address Source: Static Address)"),
    ),
    doc=(
        "Verifies the BMC's LAN channel (ipmitool lan print 1) against the site plan: a static address source, "
        "and the plan's IP address, subnet mask, default gateway and VLAN. Each field that differs is named with "
        "what the BMC has and what the plan says. No capture of the BMC is a skip, never a pass."
    ),
    remedy=(
        "From the node: `ipmitool lan set 1 ipsrc static`, `ipmitool lan set 1 ipaddr IP`, "
        "`ipmitool lan set 1 netmask MASK`, `ipmitool lan set 1 defgw ipaddr GW`, `ipmitool lan set 1 vlan id N` "
        "(or `off`), then `ipmitool lan print 1` to confirm."
    ),
)
def bmc_network(facts: NodeFacts, params: dict[str, Any]) -> Result:
    lan: BmcLan = need(facts, "bmc_lan")
    plan = _plan(params)
    if not plan and not params.get("static"):
        raise MissingFacts("no site plan given: ip, netmask, gateway or vlan")
    observed = {"ip_source": lan.ip_source, "ip": lan.ip, "netmask": lan.netmask, "gateway": lan.gateway}
    if lan.vlan_shown:
        observed["vlan"] = "off" if lan.vlan is None else str(lan.vlan)
    expected: dict[str, Any] = {k: ("off" if k == "vlan" and v is None else v) for k, v in plan.items()}
    differs: list[str] = []
    unknown: list[str] = []
    if params.get("static"):
        expected["ip_source"] = "static"
        if lan.ip_source != "static":
            differs.append(f"address source {lan.ip_source or 'unknown'}, not static")
    names = {"ip": "IP address", "netmask": "netmask", "gateway": "default gateway"}
    for key, name in names.items():
        if key not in plan:
            continue
        have = getattr(lan, key)
        if have is None:
            unknown.append(name)
        elif have != plan[key]:
            differs.append(f"{name} {have}, the plan says {plan[key]}")
    if "vlan" in plan:
        if not lan.vlan_shown:
            unknown.append("VLAN (no 802.1q VLAN ID line)")
        elif lan.vlan != plan["vlan"]:
            have_vlan = "off" if lan.vlan is None else lan.vlan
            want_vlan = "off" if plan["vlan"] is None else plan["vlan"]
            differs.append(f"VLAN {have_vlan}, the plan says {want_vlan}")
    if differs:
        return result(
            "bmc.network",
            "fail",
            f"the BMC's LAN channel differs from the plan: {join_limited(differs)}",
            observed=observed,
            expected=expected,
            hint="ipmitool lan set 1 ipsrc static / ipaddr / netmask / defgw ipaddr / vlan id, then lan print 1",
        )
    if unknown:
        return result(
            "bmc.network",
            "error",
            f"cannot confirm the BMC's {join_limited(unknown)}: not in the capture",
            observed=observed,
            expected=expected,
            hint="capture the whole of ipmitool lan print 1",
        )
    return result("bmc.network", "pass", "the BMC's LAN channel is as planned", observed=observed, expected=expected)


def _usable(user: BmcUser) -> bool | None:
    """Whether an account can log in on the channel; None when the capture does not say (user list)."""
    if user.privilege in _NO_PRIVILEGE:
        return False
    return user.enabled


@check(
    "bmc.credentials",
    title="No factory BMC account left open",
    facts=("bmc_users",),
    params=(
        Param("default_user", "str", "ADMIN", "the vendor's factory account name (ADMIN: Supermicro; root: Dell)"),
    ),
    doc=(
        "Verifies the BMC's accounts on LAN channel 1 (ipmitool channel getaccess 1): the vendor's factory "
        "account is disabled or has no privilege on the channel, and another enabled account with "
        "ADMINISTRATOR privilege remains. A password is never read or shown: no tool prints one. From "
        "`ipmitool user list`, which does not say which accounts are enabled, an account with privilege is "
        "taken as unknown, never as a pass."
    ),
    remedy=(
        "Create the site's admin account (`ipmitool user set name ID NAME`, `ipmitool user set password ID`, "
        "`ipmitool channel setaccess 1 ID privilege=4`, `ipmitool user enable ID`), then take the factory one out "
        "of use (`ipmitool user disable 2`, or `ipmitool channel setaccess 1 2 privilege=15`)."
    ),
)
def bmc_credentials(facts: NodeFacts, params: dict[str, Any]) -> Result:
    users: list[BmcUser] = need(facts, "bmc_users")
    default = str(params.get("default_user") or "ADMIN")
    observed = {
        f"user {u.id} {u.name}": f"{u.privilege or 'no privilege'}, "
        + {True: "enabled", False: "disabled", None: "enable status unknown"}[u.enabled]
        for u in users
        if u.name
    }
    expected = f"{default} not usable; another enabled account with ADMINISTRATOR privilege"
    factory = [u for u in users if u.name == default]
    admins = [u for u in users if u.name and u.name != default and u.privilege == _ADMIN]
    open_factory = [u for u in factory if _usable(u) is True]
    problems: list[str] = []
    if open_factory:
        ids = ", ".join(str(u.id) for u in open_factory)
        problems.append(f"the factory account {default} (user {ids}) is enabled with {open_factory[0].privilege}")
    if not any(_usable(u) is True for u in admins) and not any(_usable(u) is None for u in admins):
        problems.append(f"no enabled account other than {default} has ADMINISTRATOR privilege")
    if problems:
        return result(
            "bmc.credentials",
            "fail",
            "; ".join(problems),
            observed=observed,
            expected=expected,
            hint="an admin account of the site's own (name, password, privilege=4, enabled), then disable "
            f"{default}: ipmitool user disable ID",
        )
    if any(_usable(u) is None for u in factory + admins):
        return result(
            "bmc.credentials",
            "error",
            "the capture does not say which accounts are enabled (user list has no Enable Status)",
            observed=observed,
            expected=expected,
            hint="capture ipmitool channel getaccess 1",
        )
    names = ", ".join(u.name for u in admins if _usable(u))
    return result(
        "bmc.credentials",
        "pass",
        f"{default} is not usable; enabled administrators: {names}",
        observed=observed,
        expected=expected,
    )
