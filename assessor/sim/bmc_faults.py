"""The BMC's faults: a node whose BMC is still as it left the factory (:mod:`assessor.sim.tools.ipmitool`)."""

from __future__ import annotations

import hashlib
from typing import Any

from assessor.sim.state import NodeState


def _mac(host: str) -> str:
    """A stable Supermicro-range MAC for the node's BMC (3c:ec:ef is Super Micro Computer's OUI)."""
    digest = hashlib.sha256(host.encode()).hexdigest()
    return "3c:ec:ef:" + ":".join(digest[i : i + 2] for i in (0, 2, 4))


def factory_default(state: NodeState, lease: str = "192.168.1.57") -> None:
    """The BMC on DHCP with the address the lab network's DHCP server leased, the vendor's ADMIN account enabled."""
    from assessor.sim.tools.ipmitool import factory_bmc

    state.bmc = factory_bmc(_mac(state.host), lease)


def no_bmc(state: NodeState, lease: str = "192.168.1.57") -> None:
    """Revert: the node as its fixture has it (no BMC in the simulator)."""
    del lease
    state.bmc = None


FAULTS: tuple[tuple[Any, ...], ...] = (
    (
        "bmc-factory-default",
        "the node's BMC as it left the factory: LAN channel 1 on DHCP (option lease: the leased address), "
        "the vendor's ADMIN account enabled with its factory password",
        "bmc.network",
        factory_default,
        no_bmc,
    ),
)
