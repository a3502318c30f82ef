"""Simulated ``ipmitool``, in-band (``-I open``, the node's ``/dev/ipmi0``): the BMC's LAN channel 1 and its users.

What it answers: ``lan print [1]``, ``lan set 1 ipsrc|ipaddr|netmask|defgw ipaddr|vlan id``, ``user list [1]``,
``user summary``, ``user set name|password``, ``user enable|disable``, ``user priv``, ``channel getaccess``,
``channel setaccess``, ``mc info``, ``mc reset cold|warm``. A node without a BMC in its state answers as a node
whose IPMI driver found no device. Out-of-band use (``-H``) is refused: the simulator has no network.

Layouts follow the real tool (ipmitool 1.8.18, Ubuntu 22.04), from the samples in ``tests/data/corpus/ipmitool``:
``lan print``'s keys padded to column 24, ``user list``'s fixed columns, ``channel getaccess``'s blocks.

A password given to ``user set password`` is kept only as a salted hash (:func:`password_hash`) and never
printed, echoed or logged.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets

from assessor.sim.state import BmcState, BmcUserState
from assessor.sim.tools import Session, ToolResult

PRIVILEGES = {1: "CALLBACK", 2: "USER", 3: "OPERATOR", 4: "ADMINISTRATOR", 5: "OEM", 15: "NO ACCESS"}
MAX_USERS = 10
_GRANTED = (1, 2, 3, 4, 5)
_NO_DEVICE = (
    "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory\n"
    "Get Channel Info command failed\n"
)
_CIPHER_LEGEND = "".join(
    f"                        :     {x}\n"
    for x in ("X=Cipher Suite Unused", "c=CALLBACK", "u=USER", "o=OPERATOR", "a=ADMIN", "O=OEM")
)


def password_hash(password: str, salt: str | None = None) -> str:
    """``salt$sha256(salt+password)``: what the simulated BMC keeps of a password."""
    salt = salt or secrets.token_hex(8)
    return salt + "$" + hashlib.sha256((salt + password).encode()).hexdigest()


def factory_bmc(mac: str, lease: str = "192.168.1.57") -> BmcState:
    """A BMC as it leaves the factory: DHCP on channel 1, the vendor's ADMIN account enabled with its password."""
    users = [BmcUserState(1, "", True, 0)]  # the anonymous slot: enabled, no privilege (Supermicro ships so)
    users.append(BmcUserState(2, "ADMIN", True, 4, password_hash("ADMIN", "factory0"), factory_password=True))
    users += [BmcUserState(i) for i in range(3, MAX_USERS + 1)]
    net = ipaddress.ip_interface(f"{lease}/24")
    gateway = str(next(net.network.hosts()))
    return BmcState("dhcp", lease, str(net.netmask), gateway, mac, None, users)


def _err(text: str, code: int = 1) -> ToolResult:
    return ToolResult(code, "", text)


def _lan_print(bmc: BmcState) -> str:
    source = "Static Address" if bmc.ip_source == "static" else "DHCP Address"
    auth = "MD2 MD5 PASSWORD"
    rows = [
        ("Set in Progress", "Set Complete"),
        ("Auth Type Support", "NONE MD2 MD5 PASSWORD"),
        ("Auth Type Enable", f"Callback : {auth}"),
        ("", f"User     : {auth}"),
        ("", f"Operator : {auth}"),
        ("", f"Admin    : {auth}"),
        ("", f"OEM      : {auth}"),
        ("IP Address Source", source),
        ("IP Address", bmc.ip),
        ("Subnet Mask", bmc.netmask),
        ("MAC Address", bmc.mac),
        ("SNMP Community String", "public"),
        ("IP Header", "TTL=0x40 Flags=0x40 Precedence=0x00 TOS=0x10"),
        ("BMC ARP Control", "ARP Responses Enabled, Gratuitous ARP Disabled"),
        ("Default Gateway IP", bmc.gateway),
        ("Default Gateway MAC", "00:00:00:00:00:00"),
        ("Backup Gateway IP", "0.0.0.0"),
        ("Backup Gateway MAC", "00:00:00:00:00:00"),
        ("802.1q VLAN ID", "Disabled" if bmc.vlan is None else str(bmc.vlan)),
        ("802.1q VLAN Priority", "0"),
        ("RMCP+ Cipher Suites", "1,2,3,6,7,8,11,12"),
        ("Cipher Suite Priv Max", "XaaaXXaaaXXaaXX"),
    ]
    out = "".join(f"{key:<24}: {value}\n" for key, value in rows)
    return out + _CIPHER_LEGEND + f"{'Bad Password Threshold':<24}: Not Available\n"


def _user_list(bmc: BmcState) -> str:
    out = f"{'ID':<4}{'Name':<17}{'Callin':<8}{'Link Auth':<11}{'IPMI Msg':<11}Channel Priv Limit\n"
    for u in bmc.users:
        on = u.privilege in _GRANTED
        flags = f"{'true':<8}{str(on).lower():<11}{str(on).lower():<11}"
        out += f"{u.id:<4}{u.name:<17}{flags}{PRIVILEGES.get(u.privilege, 'Unknown (0x00)')}\n"
    return out


def _getaccess(bmc: BmcState, only: int | None) -> str:
    enabled = sum(1 for u in bmc.users if u.enabled)
    out = f"Maximum User IDs     : {MAX_USERS}\nEnabled User IDs     : {enabled}\n"
    for u in bmc.users:
        if only is not None and u.id != only:
            continue
        on = "enabled" if u.privilege in _GRANTED else "disabled"
        out += (
            f"\nUser ID              : {u.id}\n"
            f"User Name            : {u.name}\n"
            f"Fixed Name           : {'Yes' if u.id <= 2 else 'No'}\n"
            f"Access Available     : {'callback' if u.id == 2 else 'call-in / callback'}\n"
            f"Link Authentication  : {on}\n"
            f"IPMI Messaging       : {on}\n"
            f"Privilege Level      : {PRIVILEGES.get(u.privilege, 'Unknown (0x00)')}\n"
            f"Enable Status        : {'enabled' if u.enabled else 'disabled'}\n"
        )
    return out


def _mc_info(bmc: BmcState) -> str:
    rows = [
        ("Device ID", "32"),
        ("Device Revision", "1"),
        ("Firmware Revision", bmc.firmware),
        ("IPMI Version", "2.0"),
        ("Manufacturer ID", "10876"),
        ("Manufacturer Name", "Supermicro"),
        ("Product ID", "6929 (0x1b11)"),
        ("Product Name", "Unknown (0x1B11)"),
        ("Device Available", "yes"),
        ("Provides Device SDRs", "no"),
    ]
    out = "".join(f"{k:<26}: {v}\n" for k, v in rows)
    out += "Additional Device Support :\n"
    out += "".join(
        f"    {d}\n"
        for d in ("Sensor Device", "SDR Repository Device", "SEL Device", "FRU Inventory Device", "Chassis Device")
    )
    return out + "Aux Firmware Rev Info     : \n" + "    0x00\n" * 4


def _ip(value: str) -> str | None:
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        return None


def _user(bmc: BmcState, text: str) -> BmcUserState | None:
    if not text.isdigit():
        return None
    return next((u for u in bmc.users if u.id == int(text)), None)


def _lan_set(bmc: BmcState, args: list[str]) -> ToolResult:
    """``lan set <channel> <parameter> <value>``."""
    if len(args) < 3 or args[0] != "1":
        if args and args[0] != "1":
            return _err(f"Invalid channel: {args[0]}\n")
        return _err("usage: lan set <channel> <command> <parameter>\n")
    what, rest = args[1], args[2:]
    if what == "ipsrc":
        if rest[0] not in ("static", "dhcp", "none", "bios"):
            return _err(f"Invalid IP address source: {rest[0]}\n")
        bmc.ip_source = "static" if rest[0] in ("static", "none") else "dhcp"
        return ToolResult(0)
    if what in ("ipaddr", "netmask"):
        ip = _ip(rest[0])
        if ip is None:
            return _err(f"Invalid IP address: {rest[0]}\n")
        if what == "ipaddr":
            bmc.ip = ip
            return ToolResult(0, f"Setting LAN IP Address to {ip}\n")
        bmc.netmask = ip
        return ToolResult(0, f"Setting LAN Subnet Mask to {ip}\n")
    if what == "defgw":
        if len(rest) < 2 or rest[0] != "ipaddr":
            return _err("usage: lan set <channel> defgw ipaddr <x.x.x.x>\n")
        ip = _ip(rest[1])
        if ip is None:
            return _err(f"Invalid IP address: {rest[1]}\n")
        bmc.gateway = ip
        return ToolResult(0, f"Setting LAN Default Gateway IP to {ip}\n")
    if what == "vlan":
        if len(rest) < 2 or rest[0] != "id":
            return _err("usage: lan set <channel> vlan id <off|<id>>\n")
        if rest[1] == "off":
            bmc.vlan = None
            return ToolResult(0)
        if not rest[1].isdigit() or not 1 <= int(rest[1]) <= 4094:
            return _err("VLAN ID must be between 1 and 4094.\n")
        bmc.vlan = int(rest[1])
        return ToolResult(0)
    if what in ("access", "arp", "auth", "user"):
        return ToolResult(0)
    return _err(f"Invalid LAN parameter: {what}\n")


def _user_cmd(bmc: BmcState, args: list[str]) -> ToolResult:
    verb, rest = (args[0] if args else "list"), args[1:]
    if verb == "list":
        return ToolResult(0, _user_list(bmc))
    if verb == "summary":
        enabled = sum(1 for u in bmc.users if u.enabled)
        return ToolResult(
            0, f"Maximum IDs\t    : {MAX_USERS}\nEnabled User Count  : {enabled}\nFixed Name Count    : 2\n"
        )
    if verb == "set" and len(rest) >= 2 and rest[0] in ("name", "password"):
        user = _user(bmc, rest[1])
        if user is None:
            return _err(f"Invalid user ID: {rest[1]}\n")
        if rest[0] == "name":
            if len(rest) < 3:
                return _err("usage: user set name <user id> <username>\n")
            if user.id == 1:
                return _err(f"Set User Name command failed (user {user.id}, name {rest[2]}): Invalid data field\n")
            if len(rest[2]) > 16:
                return _err("Username is too long (> 16 bytes)\n")
            user.name = rest[2]
            return ToolResult(0)
        if len(rest) < 3:
            # the real tool asks twice on the terminal; the simulator reads no terminal
            return _err("ipmitool: give the password on the command line in the simulator: user set password ID PASS\n")
        user.password_hash = password_hash(rest[2])
        user.factory_password = False
        return ToolResult(0, f"Set User Password command successful (user {user.id})\n")
    if verb in ("enable", "disable") and rest:
        user = _user(bmc, rest[0])
        if user is None:
            return _err(f"Invalid user ID: {rest[0]}\n")
        user.enabled = verb == "enable"
        return ToolResult(0)
    if verb == "priv" and len(rest) >= 2:
        user = _user(bmc, rest[0])
        level = int(rest[1], 0) if _int(rest[1]) else None
        if user is None or level not in PRIVILEGES:
            return _err("Invalid user ID or privilege level\n")
        user.privilege = level
        return ToolResult(0, f"Set Privilege Level command successful (user {user.id})\n")
    return _err(f"Invalid user command: '{' '.join(args)}'\n")


def _int(text: str) -> bool:
    try:
        int(text, 0)
    except ValueError:
        return False
    return True


def _channel(bmc: BmcState, args: list[str]) -> ToolResult:
    if len(args) >= 2 and args[0] == "getaccess":
        if args[1] != "1":
            return _err(f"Invalid channel: {args[1]}\n")
        only = int(args[2]) if len(args) > 2 and args[2].isdigit() else None
        if only is not None and _user(bmc, str(only)) is None:
            return _err(f"Invalid user ID: {only}\n")
        return ToolResult(0, _getaccess(bmc, only))
    if len(args) >= 3 and args[0] == "setaccess":
        user = _user(bmc, args[2])
        if args[1] != "1" or user is None:
            return _err("Invalid channel or user ID\n")
        for opt in args[3:]:
            key, _, value = opt.partition("=")
            if key == "privilege":
                if not _int(value) or int(value, 0) not in PRIVILEGES:
                    return _err(f"Invalid privilege level: {value}\n")
                user.privilege = int(value, 0)
        return ToolResult(0, f"Set User Access (channel 1 id {user.id}) successful.\n")
    return _err("Channel Commands: authcap <channel number> <max privilege>\n  getaccess <channel number> [user id]\n")


def ipmitool(args: list[str], session: Session) -> ToolResult:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt in ("-H", "-U", "-P", "-E", "-f"):
            return _err("ipmitool: the simulated node's BMC is reached in-band only (-I open), not over the LAN\n")
        if opt == "-I" and rest:
            interface = rest.pop(0)
            if interface != "open":
                return _err(f"ipmitool: interface {interface} is not simulated; use -I open\n")
    if not rest:
        return _err("No command provided!\n")
    if session.read().bmc is None:
        return _err(_NO_DEVICE)
    command, sub = rest[0], rest[1:]
    if command == "lan" and sub and sub[0] == "print":
        if len(sub) > 1 and sub[1] != "1":
            return _err(f"Invalid channel: {sub[1]}\n")
        bmc = session.read().bmc
        assert bmc is not None
        return ToolResult(0, _lan_print(bmc))
    if command == "mc" and sub[:1] == ["info"]:
        bmc = session.read().bmc
        assert bmc is not None
        return ToolResult(0, _mc_info(bmc))
    if command not in ("lan", "user", "channel", "mc"):
        return _err(f"Invalid command: {command}\n")
    with session.update() as state:
        bmc = state.bmc
        assert bmc is not None
        if command == "lan":
            return _lan_set(bmc, sub[1:]) if sub[:1] == ["set"] else _err("usage: lan print|set <channel> ...\n")
        if command == "user":
            if sub[:1] == ["list"] and len(sub) > 1 and sub[1] != "1":
                return _err(f"Invalid channel: {sub[1]}\n")
            return _user_cmd(bmc, sub)
        if command == "channel":
            return _channel(bmc, sub)
        if sub[:1] == ["reset"] and sub[1:2] in (["cold"], ["warm"]):
            bmc.resets += 1
            return ToolResult(0, f"Sent {sub[1]} reset command to MC\n")
        return _err("MC Commands:\n  reset <warm|cold>\n  info\n")
