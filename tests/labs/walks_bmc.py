"""Walks of the BMC lab: drv-204 (a new node's BMC on DHCP with the factory ADMIN account open).

Merged into the shared tables by :mod:`tests.labs.walks` and :mod:`tests.labs.walks_left_broken`. The plan:
10.40.8.21/255.255.252.0, gateway 10.40.8.1, VLAN 40; the factory account is ADMIN, user 2.
"""

from __future__ import annotations

from tests.labs.walks import Walk

NETWORK: Walk = [
    "ipmitool lan set 1 ipsrc static",
    "ipmitool lan set 1 ipaddr 10.40.8.21",
    "ipmitool lan set 1 netmask 255.255.252.0",
    "ipmitool lan set 1 defgw ipaddr 10.40.8.1",
    "ipmitool lan set 1 vlan id 40",
]
OWN_ADMIN: Walk = [
    "ipmitool user set name 3 opsadmin",
    "ipmitool user set password 3 Walk-only-pw1",
    "ipmitool channel setaccess 1 3 link=on ipmi=on callin=on privilege=4",
    "ipmitool user enable 3",
]
FACTORY_OFF: Walk = ["ipmitool user disable 2"]

WALKS: dict[str, dict[str, list[Walk]]] = {
    "drv-204": {
        "alternatives": [
            # read first; the address before the source, the VLAN first; privilege with user priv; the factory
            # account kept enabled but without any privilege on the channel
            [
                "ipmitool lan print 1",
                "ipmitool -I open user list 1",
                "ipmitool lan set 1 vlan id 40",
                "ipmitool lan set 1 ipaddr 10.40.8.21",
                "ipmitool lan set 1 netmask 255.255.252.0",
                "ipmitool lan set 1 defgw ipaddr 10.40.8.1",
                "ipmitool lan set 1 ipsrc static",
                "ipmitool user set name 4 siteadm",
                "ipmitool user set password 4 Walk-only-pw2",
                "ipmitool user priv 4 4 1",
                "ipmitool user enable 4",
                "ipmitool channel setaccess 1 2 privilege=15",
                "ipmitool mc reset cold",
            ],
            # the factory account renamed to the site's name and given a new password
            [*NETWORK, "ipmitool user set name 2 opsadmin", "ipmitool user set password 2 Walk-only-pw3"],
        ],
        "wrong": [
            # the host's own network configured with the plan's address, the BMC left on DHCP
            [
                {
                    "/etc/netplan/60-bmc.yaml": "network:\n  version: 2\n  vlans:\n    vlan40:\n      id: 40\n"
                    "      link: eno1\n      addresses: [10.40.8.21/22]\n      routes:\n"
                    "        - to: default\n          via: 10.40.8.1\n"
                },
                *OWN_ADMIN,
                *FACTORY_OFF,
            ],
            # static, but no address given: the BMC keeps the lease it had
            ["ipmitool lan set 1 ipsrc static", *OWN_ADMIN, *FACTORY_OFF],
            # a typo in the gateway
            [*NETWORK[:3], "ipmitool lan set 1 defgw ipaddr 10.40.8.11", NETWORK[4], *OWN_ADMIN, *FACTORY_OFF],
            # the VLAN forgotten
            [*NETWORK[:4], *OWN_ADMIN, *FACTORY_OFF],
            # the network right, the factory account left open beside the new one
            [*NETWORK, *OWN_ADMIN],
        ],
    },
}

PARTIAL: dict[str, tuple[Walk, float]] = {
    "drv-204": (NETWORK, 60.0),  # the network as planned, the accounts untouched
}

LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # the factory account disabled before the new one was given any privilege: nobody can manage the BMC now
    "drv-204": [
        (
            [
                *NETWORK,
                "ipmitool user set name 3 opsadmin",
                "ipmitool user set password 3 Walk-only-pw4",
                "ipmitool user enable 3",
                *FACTORY_OFF,
            ],
            "bmc.credentials",
        )
    ],
}

__all__ = ["LEFT_BROKEN", "PARTIAL", "WALKS"]
