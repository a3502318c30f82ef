"""The simulated ``ipmitool``: what it prints, what it refuses, and that a password is kept only as a hash."""

from __future__ import annotations

import json

import pytest

from assessor.parsers.ipmitool import parse_lan, parse_users
from assessor.sim.faults import FAULTS
from assessor.sim.fixtures import load_fixture
from assessor.sim.state import NodeState, dumps
from assessor.sim.tools import Session, ToolResult, run_tool


@pytest.fixture
def node() -> NodeState:
    state = load_fixture("pcie-l40s")
    FAULTS["bmc-factory-default"].apply(state, lease="192.168.1.57")
    return state


def ipmi(state: NodeState, line: str) -> ToolResult:
    return run_tool(["ipmitool", *line.split()], Session(state))


def test_a_node_without_a_bmc_answers_as_ipmitool_does_without_dev_ipmi0() -> None:
    r = ipmi(load_fixture("pcie-l40s"), "lan print 1")
    assert r.exit_code == 1 and "Could not open device at /dev/ipmi0" in r.stderr


def test_lan_set_changes_what_lan_print_shows(node: NodeState) -> None:
    assert ipmi(node, "lan set 1 ipsrc static").exit_code == 0
    assert ipmi(node, "lan set 1 ipaddr 10.40.8.21").stdout == "Setting LAN IP Address to 10.40.8.21\n"
    assert ipmi(node, "lan set 1 defgw ipaddr 10.40.8.1").stdout == "Setting LAN Default Gateway IP to 10.40.8.1\n"
    assert ipmi(node, "lan set 1 vlan id 40").exit_code == 0
    text = ipmi(node, "lan print 1").stdout
    assert "IP Address Source       : Static Address\n" in text and "802.1q VLAN ID          : 40\n" in text
    lan = parse_lan(text).bmc_lan
    assert lan is not None and (lan.ip, lan.gateway, lan.vlan, lan.netmask) == (
        "10.40.8.21",
        "10.40.8.1",
        40,
        "255.255.255.0",
    )


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("lan set 1 ipaddr 10.40.8", "Invalid IP address"),
        ("lan set 1 vlan id 5000", "between 1 and 4094"),
        ("lan set 2 ipsrc static", "Invalid channel"),
        ("user set name 11 x", "Invalid user ID"),
        ("user set name 1 x", "Set User Name command failed"),
        ("-H 10.0.0.5 -U ADMIN lan print", "in-band only"),
    ],
)
def test_refusals_change_nothing(node: NodeState, line: str, words: str) -> None:
    before = dumps(node)
    r = ipmi(node, line)
    assert r.exit_code != 0 and words in r.stderr
    assert dumps(node) == before


def test_users_accounts_and_the_password_never_printed_nor_kept(node: NodeState) -> None:
    secret = "Walk-only-pw9"
    assert ipmi(node, "user set name 3 opsadmin").exit_code == 0
    r = ipmi(node, f"user set password 3 {secret}")
    assert r.stdout == "Set User Password command successful (user 3)\n" and secret not in r.stdout + r.stderr
    assert ipmi(node, "channel setaccess 1 3 privilege=4").exit_code == 0
    assert ipmi(node, "user enable 3").exit_code == 0 and ipmi(node, "user disable 2").exit_code == 0
    users = {u.name: u for u in parse_users(ipmi(node, "channel getaccess 1").stdout).bmc_users or []}
    assert (users["opsadmin"].privilege, users["opsadmin"].enabled) == ("ADMINISTRATOR", True)
    assert users["ADMIN"].enabled is False
    document = json.dumps(json.loads(dumps(node)))
    assert secret not in document  # only a salted hash
    slot = node.bmc.users[2] if node.bmc else None
    assert slot is not None and "$" in slot.password_hash and not slot.factory_password


def test_mc_info_and_cold_reset_keep_the_settings(node: NodeState) -> None:
    ipmi(node, "lan set 1 ipaddr 10.40.8.21")
    assert "Manufacturer Name         : Supermicro" in ipmi(node, "mc info").stdout
    assert ipmi(node, "mc reset cold").stdout == "Sent cold reset command to MC\n"
    assert "IP Address              : 10.40.8.21" in ipmi(node, "lan print").stdout
