"""``ipmitool lan print`` and the BMC's users (``channel getaccess``, ``user list``), from real samples."""

from __future__ import annotations

import pytest

from assessor import parsers
from assessor.errors import ParseError
from assessor.parsers.ipmitool import parse_lan, parse_users
from tests.support.corpus import read_corpus


def test_hp_ilo_lan_print_on_dhcp_without_a_final_newline() -> None:
    lan = parse_lan(read_corpus("ipmitool/01_hp_ilo_lan_print_dhcp.txt")).bmc_lan
    assert lan is not None
    assert (lan.ip_source, lan.ip, lan.netmask, lan.gateway) == (
        "dhcp",
        "123.123.123.123",
        "255.255.255.0",
        "123.123.123.1",
    )
    assert lan.mac == "de:ad:be:ef:ca:fe" and lan.vlan_shown and lan.vlan is None


def test_ibm_lan_print_padded_to_another_column_and_bios_assigned() -> None:
    lan = parse_lan(read_corpus("ipmitool/02_ibm_imm_lan_print_bios_assigned.txt")).bmc_lan
    assert lan is not None
    assert lan.ip_source == "bios assigned address" and lan.ip == "192.168.0.3" and lan.gateway == "192.168.0.1"


def test_a_tagged_vlan_and_a_static_address_are_read() -> None:
    text = (
        "IP Address Source       : Static Address\nIP Address              : 10.40.8.21\n"
        "Subnet Mask             : 255.255.252.0\nDefault Gateway IP      : 10.40.8.1\n802.1q VLAN ID          : 40\n"
    )
    lan = parse_lan(text).bmc_lan
    assert lan is not None and (lan.ip_source, lan.vlan, lan.netmask) == ("static", 40, "255.255.252.0")


def test_a_prompted_paste_is_read_and_an_anonymised_address_is_an_error_naming_its_line() -> None:
    prompted = (
        "[root@gpu01 ~]# ipmitool lan print 1\nIP Address Source       : DHCP Address\n"
        "IP Address              : 10.0.0.5\n"
    )
    lan = parse_lan(prompted).bmc_lan
    assert lan is not None and lan.ip == "10.0.0.5"
    with pytest.raises(ParseError) as exc:
        parse_lan(
            "Set in Progress         : Set Complete\nIP Address Source       : DHCP Address\n"
            "IP Address              : 10.10.10.10.\n"
        )
    assert exc.value.line == 3 and "IP Address" in str(exc.value)


def test_a_cut_lan_print_keeps_what_it_had_and_prose_is_not_lan_print() -> None:
    lan = parse_lan("IP Address Source       : Static Address\nIP Address              : 10.40.8.21\nSubnet Ma").bmc_lan
    assert lan is not None and lan.ip == "10.40.8.21" and lan.netmask is None
    with pytest.raises(ParseError):
        parse_lan("the BMC is at 10.0.0.5\n")


def test_dell_user_list_with_tabs_and_a_name_with_a_space() -> None:
    users = parse_users(read_corpus("ipmitool/03_dell_idrac_user_list_tabs.txt")).bmc_users or []
    assert [(u.id, u.name, u.privilege) for u in users] == [
        (2, "root", "ADMINISTRATOR"),
        (3, "xx xxd", "USER"),
        (4, "xx", "OPERATOR"),
        (5, "emil", "NO ACCESS"),
        (6, "name", "CALLBACK"),
        (63, "last", "NO ACCESS"),
    ]
    assert all(u.enabled is None for u in users)  # user list does not say


def test_supermicro_getaccess_says_which_accounts_are_enabled() -> None:
    users = parse_users(read_corpus("ipmitool/05_supermicro_channel_getaccess_factory_admin.txt")).bmc_users or []
    assert len(users) == 10
    assert (users[1].name, users[1].privilege, users[1].enabled) == ("ADMIN", "ADMINISTRATOR", True)
    assert (users[0].name, users[0].privilege, users[0].enabled) == ("", "Unknown (0x00)", True)
    assert users[2].enabled is False


def test_one_users_getaccess_block() -> None:
    (user,) = parse_users(read_corpus("ipmitool/04_dell_idrac_channel_getaccess_one_user.txt")).bmc_users or []
    assert (user.id, user.name, user.enabled) == (2, "root", True)


def test_a_mangled_users_table_is_an_error_naming_its_line() -> None:
    text = "ID  Name             Callin  Link Auth  IPMI Msg   Channel Priv Limit\n2   root    ADMINISTRATOR\n"
    with pytest.raises(ParseError) as exc:
        parse_users(text)
    assert exc.value.line == 2
    with pytest.raises(ParseError):
        parse_users("User ID              : two\n")


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("ipmitool/02_ibm_imm_lan_print_bios_assigned.txt", "ipmitool-lan"),
        ("ipmitool/03_dell_idrac_user_list_tabs.txt", "ipmitool-users"),
        ("ipmitool/05_supermicro_channel_getaccess_factory_admin.txt", "ipmitool-users"),
    ],
)
def test_parse_auto_recognises_each_form(rel: str, kind: str) -> None:
    assert parsers.parse_auto(read_corpus(rel))[0] == kind


def test_a_users_table_cut_mid_row_drops_only_that_row() -> None:
    text = read_corpus("ipmitool/03_dell_idrac_user_list_tabs.txt")[:-6]  # "...NO ACC"
    users = parse_users(text).bmc_users or []
    assert [u.id for u in users] == [2, 3, 4, 5, 6]
